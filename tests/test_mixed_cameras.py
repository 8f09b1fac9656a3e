"""Skills trained with different head cameras run together, each observing with its checkpoint's camera;
a checkpoint whose observations cannot be served is a one-line error (exit 2) before any episode runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_errors import one_line_exit_2
from gymnasium import spaces
from skill_checkpoints import untrained_checkpoint

from eval.skill_library import LearnedSkills, ObservationMismatch
from rearrange.sensors import HeadCamera, head_depth_as

RAYCAST_16 = ("profile=cpu",)  # ray-cast 16x16 head depth (configs/sim/cpu.yaml), small MLP policy
RENDER_64 = ("sim.camera.head.width=64", "sim.camera.head.height=64")  # rendered (default backend) 64x64
# nav's deterministic stop fires on its first step (mean 0.9 of the tanh-squashed [base, base, stop]
# mean), so an untrained nav ends at once, whatever the global torch seed gave its weights
NAV_STOPS = ("++policy.action.initial_mean=[0.0,0.0,0.9]",)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """nav with rendered 64x64 depth, pick and place with ray-cast 16x16 depth: DIR/<skill>.pt."""
    root = tmp_path_factory.mktemp("mixed")
    untrained_checkpoint(root / "nav.pt", "nav", [*RENDER_64, *NAV_STOPS])
    for skill in ("pick", "place"):
        untrained_checkpoint(root / f"{skill}.pt", skill, list(RAYCAST_16))
    return root


def _learned(paths: dict) -> LearnedSkills:
    skills = LearnedSkills(paths)
    skills.load_all(list(paths))
    return skills


def test_env_gets_the_most_common_camera_and_others_compute_their_own(mixed):
    skills = _learned({s: mixed / f"{s}.pt" for s in ("nav", "pick", "place")})
    env_sim = skills.serve_observations(None)
    head = env_sim["camera"]["head"]
    assert (head["backend"], head["width"], head["height"]) == ("raycast", 16, 16)
    assert set(skills("nav").own_sensors) == {"head_depth"}
    assert skills("pick").own_sensors == {} and skills("place").own_sensors == {}
    # a skill loaded only later (one a re-plan needs) is set up for the same env
    late = LearnedSkills({s: mixed / f"{s}.pt" for s in ("nav", "pick", "place")})
    late.load_all(["pick", "place"])
    assert late.serve_observations(None) == env_sim
    assert set(late("nav").own_sensors) == {"head_depth"}


def test_head_depth_as_matches_a_sim_built_with_that_camera():
    from rearrange.layout import generate_layout
    from rearrange.sim import RearrangeSim, load_sim_config

    layout = generate_layout(3)
    cpu = load_sim_config({"camera": {"head": {"backend": "raycast", "width": 16, "height": 12}}})
    default, small = RearrangeSim(layout, []), RearrangeSim(layout, [], cpu)
    try:
        depth = head_depth_as(default, HeadCamera.from_sim_cfg(cpu))
        assert depth.shape == (12, 16, 1)
        np.testing.assert_allclose(depth, small.head_depth(), atol=1e-5)
        # the sim's own camera is unchanged, and a rendered image of another size works too
        assert default.head_depth().shape == (128, 128, 1)
        other = HeadCamera.from_sim_cfg({"camera": {"head": {"width": 24, "height": 20}}})
        rendered = head_depth_as(default, other)
        assert rendered.shape == (20, 24, 1) and 0.0 < float(rendered.min()) <= float(rendered.max()) <= 10.0
    finally:
        default.close()
        small.close()


def _episode_near_first_object(path) -> None:
    """One prepare_groceries episode whose robot starts within reach of obj_0: the first nav(obj_0) ends
    with robot_at(obj_0) holding, so the agent goes on to pick(obj_0) (and navigates again after the
    untrained pick fails): both cameras are used in one episode."""
    from rearrange.episodes import save_episodes
    from rearrange.generate import generate_episodes
    from rearrange.layout import generate_layout
    from rearrange.navmap import NavMap

    episode = generate_episodes("prepare_groceries", "val", 1, 0)[0]
    target = episode.targets[0].object
    obj = np.asarray(next(o.pos for o in episode.objects if o.name == target), dtype=np.float64)
    xy = NavMap(generate_layout(episode.layout_seed)).nearest_navigable(obj[:2], max_dist=1.2)
    assert xy is not None
    yaw = float(np.arctan2(obj[1] - xy[1], obj[0] - xy[0]))
    episode.robot_start = {"xy": [float(xy[0]), float(xy[1])], "yaw": yaw}
    save_episodes(path, [episode], kind="prepare_groceries", split="val", seed=0)


def test_two_camera_sizes_in_one_eval_hab_episode(mixed, tmp_path, monkeypatch):
    from eval.hab_eval import main
    from skills.policy import SkillPolicy

    seen: dict[str, set] = {}
    act = SkillPolicy.act

    def spy(self, obs):
        seen.setdefault(self.skill.name, set()).add(np.shape(obs["head_depth"]))
        return act(self, obs)

    monkeypatch.setattr(SkillPolicy, "act", spy)
    episodes = tmp_path / "episodes.json"
    _episode_near_first_object(episodes)
    out = tmp_path / "out"
    assert main(["--scenario", "prepare_groceries", "--agent", "tp-srl", "--episodes-file", str(episodes),
                 "--episodes", "1", "--checkpoint-dir", str(mixed), "--out", str(out), "--no-progress",
                 "hab_task.max_steps=16"]) == 0
    calls = json.loads((out / "results.json").read_text())["episodes"][0]["skill_calls"]
    assert any(c.startswith("nav(obj_0)") for c in calls), calls
    assert any(c.startswith("pick(obj_0)") for c in calls), calls
    assert seen["nav"] == {(64, 64, 1)} and seen["pick"] == {(16, 16, 1)}


def _pick_space(width: int, extra: dict | None = None) -> spaces.Dict:
    from rearrange.sensors import observation_space
    from skills.definitions import get_skill

    space = observation_space(get_skill("pick").obs_keys, (width, width), 10.0)
    return spaces.Dict({**space.spaces, **(extra or {})})


def _set_backend(name: str):
    def edit(cfg: dict) -> None:
        cfg["sim"]["camera"]["head"]["backend"] = name
    return edit


UNSERVABLE = {
    # an observation no HAB sensor gives
    "sensor": (dict(obs_space=_pick_space(16, {"magic": spaces.Box(-1, 1, (3,), np.float32)})),
               "reads observation 'magic', which the HAB env has no sensor for"),
    # a camera backend that does not exist
    "backend": (dict(edit_config=_set_backend("lidar")), "unknown camera.head.backend 'lidar'"),
    # the checkpoint's observation space disagrees with its own camera config
    "shape": (dict(obs_space=_pick_space(24)),
              "would have shape (16, 16, 1), but the policy was trained on (24, 24, 1)"),
}


@pytest.mark.parametrize("case", sorted(UNSERVABLE))
def test_unservable_checkpoint_is_one_line(case, mixed, tmp_path):
    kwargs, message = UNSERVABLE[case]
    untrained_checkpoint(tmp_path / "pick.pt", "pick", RAYCAST_16, **kwargs)
    skills = _learned({"pick": tmp_path / "pick.pt", "place": mixed / "place.pt"})
    with pytest.raises(ObservationMismatch) as exc:
        skills.serve_observations(None)
    assert message in str(exc.value) and "\n" not in str(exc.value)
    assert str(tmp_path / "pick.pt") in str(exc.value)


def test_another_field_of_view_cannot_run_beside_the_others(mixed, tmp_path):
    untrained_checkpoint(tmp_path / "nav.pt", "nav", [*RENDER_64, "sim.camera.head.fovy_deg=60"])
    skills = _learned({"nav": tmp_path / "nav.pt", "pick": mixed / "pick.pt", "place": mixed / "place.pt"})
    with pytest.raises(ObservationMismatch, match=r"skill nav .*fovy_deg=60 but the env's head camera has 90"):
        skills.serve_observations(None)


def test_eval_hab_and_eval_skill_exit_2_on_unservable_observations(mixed, tmp_path, capsys):
    from eval.hab_eval import main as eval_hab
    from eval.skill_eval import main as eval_skill

    bad = tmp_path / "ckpts"
    untrained_checkpoint(bad / "pick.pt", "pick", RAYCAST_16,
                         obs_space=_pick_space(16, {"magic": spaces.Box(-1, 1, (3,), np.float32)}))
    (bad / "place.pt").write_bytes((mixed / "place.pt").read_bytes())
    err = one_line_exit_2(capsys, eval_hab, ["--scenario", "prepare_groceries", "--agent", "tp-srl-nonav",
                                             "--episodes", "1", "--checkpoint-dir", str(bad),
                                             "--out", str(tmp_path / "out"), "--no-progress"])
    assert "skill pick" in err and "'magic'" in err
    assert not (tmp_path / "out").exists()
    skill_argv = ["--skill", "pick", "--episodes", "1", "--out", str(tmp_path / "r.json"), "--no-progress"]
    err = one_line_exit_2(capsys, eval_skill, [*skill_argv, "--checkpoint", str(bad / "pick.pt")])
    assert "magic" in err and "does not observe" in err
    untrained_checkpoint(bad / "lidar.pt", "pick", RAYCAST_16, edit_config=_set_backend("lidar"))
    err = one_line_exit_2(capsys, eval_skill, [*skill_argv, "--checkpoint", str(bad / "lidar.pt")])
    assert "lidar" in err and "raycast" in err
    assert not (tmp_path / "r.json").exists()
