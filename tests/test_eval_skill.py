"""eval-skill: a well-formed results file, a readable MP4, one-line errors with exit code 2."""

from __future__ import annotations

import copy
import dataclasses
import json

import imageio.v2 as iio
import pytest

from eval.skill_eval import FAILURE_FLAGS, end_reason, main, receptacle_group
from rearrange.env import RearrangeEnv
from rearrange.generate import generate_episodes, load_generator_config
from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task


def test_results_file_is_well_formed(tmp_path):
    out = tmp_path / "res.json"
    main(["--skill", "open_cab", "--oracle", "--episodes", "2", "--out", str(out), "--no-progress",
          "eval.bootstrap_samples=200"])
    res = json.loads(out.read_text())
    assert res["skill"] == "open_cab" and res["agent"] == "oracle" and res["split"] == "val"
    s = res["success"]
    assert set(s) >= {"mean", "ci_low", "ci_high", "n"}
    assert s["n"] == 2 and res["num_episodes"] == 2
    assert s["ci_low"] <= s["mean"] <= s["ci_high"]
    assert s["ci_low"] >= 0.0 and s["ci_high"] <= 1.0
    assert len(res["episodes"]) == 2
    for row in res["episodes"]:
        assert set(row) >= {"episode_id", "success", "measures"}
        assert row["measures"]["steps"] >= 1
    for name in ("return", "steps", "art_q", "ee_to_rest_dist"):
        m = res["measures"][name]
        assert m["ci_low"] <= m["mean"] <= m["ci_high"]
    # the rate is the mean of the per-episode successes
    assert s["mean"] == pytest.approx(sum(r["success"] for r in res["episodes"]) / 2)
    # every episode says how it ended and where its target is (open_cab: the object in the drawer)
    assert all(r["end"] in ("success", "timeout", "ended", *FAILURE_FLAGS) for r in res["episodes"])
    assert sum(res["ends"].values()) == 2 and list(res["by_receptacle"]) == ["drawer"]
    assert res["by_receptacle"]["drawer"]["episodes"] == 2


def test_timeouts_split_by_what_was_held():
    """eval-skill's timeout breakdown: only timed-out episodes count, split by the object held at the end, with
    the skill's distance (pick: to the resting pose when held, to the object when not), the episodes whose base
    ended blocked, and one console line; no timeouts, no entry."""
    from eval.skill_eval import breakdown, timeout_breakdown, timeout_line

    def row(end: str, holding: float, blocked: float, rest: float, obj: float) -> dict:
        return {"end": end, "success": end == "success", "receptacle": "surface", "measures": {
            "is_holding": holding, "base_collided": blocked, "ee_to_rest_dist": rest, "ee_to_object_dist": obj}}

    rows = [row("timeout", 0.0, 1.0, 0.5, 0.9), row("timeout", 0.0, 0.0, 0.5, 0.3), row("timeout", 1.0, 1.0, 0.33, 0.05),
            row("success", 1.0, 0.0, 0.1, 0.0), row("force_terminate", 0.0, 1.0, 0.5, 2.0)]
    t = timeout_breakdown(rows, "pick")
    assert t["not holding"] == {"episodes": 2, "base_blocked_at_end": 1, "measure": "ee_to_object_dist",
                                "median": 0.6, "min": 0.3, "max": 0.9}
    assert t["holding"]["episodes"] == 1 and t["holding"]["measure"] == "ee_to_rest_dist"
    assert t["holding"]["median"] == 0.33
    assert timeout_line(t).startswith("timeouts: holding 1 (ee_to_rest_dist median 0.33 m")
    assert "not holding 2 (ee_to_object_dist median 0.60 m, 0.30-0.90; base blocked at the end in 1)" in timeout_line(t)
    assert "measure" not in timeout_breakdown(rows, "nav")["holding"]  # no distance for a skill without one
    assert breakdown(rows[3:], "pick")["timeouts"] == {}


def test_end_reasons_and_receptacle_groups(tmp_path, capsys):
    """Pick with the oracle on 6 val episodes: successes are 'success', a run that reaches the step limit
    is 'timeout', and successes per receptacle group add up to the episodes' successes."""
    out = tmp_path / "res.json"
    main(["--skill", "pick", "--oracle", "--episodes", "6", "--out", str(out), "--no-progress",
          "eval.bootstrap_samples=200"])
    res = json.loads(out.read_text())
    rows = res["episodes"]
    assert all((r["end"] == "success") == r["success"] for r in rows)
    assert {r["receptacle"] for r in rows} <= {"surface", "fridge", "drawer"}
    groups = res["by_receptacle"]
    assert sum(g["episodes"] for g in groups.values()) == 6
    assert sum(g["success"] for g in groups.values()) == sum(r["success"] for r in rows)
    printed = capsys.readouterr().out
    assert "ended: " in printed and "by target receptacle: " in printed


def test_nav_episodes_are_grouped_by_where_the_drive_ends():
    """A nav carrying its object goes to the goal's receptacle, one without it to the object's, one to a
    shut container (as eval.skill_starts saves it: no targets) to that container."""
    cfg = copy.deepcopy(load_generator_config())
    cfg["nav"]["object_in_hand_prob"] = 1.0
    carrying = generate_episodes("nav", "val", 2, seed=0, cfg=cfg)[1]
    assert carrying.info["start_holding"] == carrying.targets[0].object
    assert carrying.targets[0].goal_receptacle.startswith("fridge_shelf")  # the object starts on a table
    assert carrying.object_spec(carrying.targets[0].object).receptacle.startswith("table")
    empty_handed = dataclasses.replace(carrying, info={k: v for k, v in carrying.info.items() if k != "start_holding"})
    to_drawer = dataclasses.replace(empty_handed, targets=[], info={**empty_handed.info, "nav_to_container": "drawer_0"})
    episodes = [carrying, empty_handed, to_drawer]
    env = RearrangeEnv(make_skill_task(load_skill_config("nav")), episodes, episode_order="cycle")
    try:
        groups = []
        for i in range(len(episodes)):
            env.reset(seed=0, options={"episode_index": i})
            groups.append(receptacle_group(env))
    finally:
        env.close()
    assert groups == ["fridge", "surface", "drawer"]
    assert groups[0] == carrying.info["receptacle_kind"]  # the generator's own record of where it drew the drive


@pytest.mark.parametrize("success, terminated, info, expected", [
    (True, True, {"force_terminate": 1.0}, "success"),
    (False, True, {"force_terminate": 1.0, "wrong_pick": 0.0}, "force_terminate"),
    (False, True, {"force_terminate": 0.0, "wrong_pick": 1.0}, "wrong_pick"),
    (False, True, {"force_terminate": 0.0}, "ended"),
    (False, False, {"force_terminate": 0.0}, "timeout"),
])
def test_end_reason(success, terminated, info, expected):
    assert end_reason(success, terminated, info) == expected


def test_video_option_writes_readable_mp4(tmp_path):
    vids = tmp_path / "videos"
    main(["--skill", "close_cab", "--oracle", "--episodes", "1", "--video", str(vids), "--no-progress",
          "--out", str(tmp_path / "r.json"), "video.width=128", "video.height=128", "video.every=5"])
    files = sorted(vids.glob("*.mp4"))
    assert len(files) == 1
    res = json.loads((tmp_path / "r.json").read_text())
    ep = res["episodes"][0]
    assert files[0].name == f"close_cab_ep{ep['episode_id'][len('close_cab_'):]}_success={int(ep['success'])}.mp4"
    frames = iio.mimread(files[0], memtest=False)
    assert len(frames) >= 5
    assert frames[0].ndim == 3 and frames[0].shape[2] == 3
    assert not list(vids.glob("*inprogress*"))


@pytest.mark.parametrize("argv, message", [
    (["--skill", "fly", "--oracle"], "unknown skill 'fly'; valid choices: pick, place, nav, open_fridge"),
    (["--skill", "pick", "--checkpoint", "/nonexistent/ckpt.pt"], "checkpoint not found"),
    (["--skill", "pick", "--oracle", "--split", "test"], "unknown split 'test'; valid choices: train, val"),
    (["--skill", "pick", "--oracle", "eval.nope=1"], "invalid config override"),
    (["--skill", "pick", "--oracle", "eval.torch_threads=many"], "eval.torch_threads must be an int >= 0"),
    (["--skill", "pick", "--oracle", "--workers", "0"], "--workers (eval.workers) must be an int >= 1, got 0"),
    (["--skill", "pick", "--oracle", "eval.workers=two"], "--workers (eval.workers) must be an int >= 1, got 'two'"),
])
def test_bad_inputs_exit_2_with_one_line(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--out", str(tmp_path / "r.json")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
    assert not (tmp_path / "r.json").exists()


def test_corrupt_checkpoint_exits_2(tmp_path, capsys):
    bad = tmp_path / "ckpt.pt"
    bad.write_bytes(b"this is not a checkpoint")
    out = tmp_path / "r.json"
    out.write_text("{\"keep\": true}\n")
    with pytest.raises(SystemExit) as exc:
        main(["--skill", "pick", "--checkpoint", str(bad), "--out", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    assert json.loads(out.read_text()) == {"keep": True}  # nothing already written is damaged


def test_corrupt_episode_file_exits_2(tmp_path, capsys):
    bad = tmp_path / "eps.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit) as exc:
        main(["--skill", "pick", "--oracle", "--episodes-file", str(bad), "--out", str(tmp_path / "r.json")])
    assert exc.value.code == 2
    assert "\n" not in capsys.readouterr().err.strip()


def test_checkpoint_is_evaluated_with_its_own_config(tmp_path, capsys):
    """A tiny train-skill checkpoint (32x32 depth camera) runs through eval-skill; using it for
    another skill is a one-line error with exit code 2."""
    from skills.train_cli import main as train_main
    from trainer.checkpoint import latest_checkpoint

    run = tmp_path / "run"
    train_main(["--skill", "pick", "--out", str(run), "trainer.num_envs=2", "trainer.num_steps=32",
                "trainer.total_steps=64", "trainer.progress_bar=false", "dataset.count=2", "policy=mlp",
                "sim.camera.head.width=32", "sim.camera.head.height=32"])
    ckpt = latest_checkpoint(run / "checkpoints")
    out = tmp_path / "r.json"
    main(["--skill", "pick", "--checkpoint", str(ckpt), "--episodes", "1", "--no-progress", "--out", str(out)])
    res = json.loads(out.read_text())
    assert res["agent"] == "checkpoint" and res["checkpoint"] == str(ckpt)
    assert res["episodes"][0]["measures"]["steps"] >= 1
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["--skill", "place", "--checkpoint", str(ckpt), "--out", str(tmp_path / "p.json")])
    assert exc.value.code == 2
    assert "is a 'pick' skill, not 'place'" in capsys.readouterr().err


def test_sampled_evaluation_is_reproducible_and_seeded_per_episode(tmp_path):
    """eval.deterministic=false: the same seed gives the same episodes, whatever ran in the process
    before; episode i acts the same whether or not the episodes before it ran."""
    import torch

    def run(name, episodes, skip_rng_noise=False):
        if not skip_rng_noise:
            torch.rand(17)  # unrelated use of torch's generator must not change the result
        out = tmp_path / f"{name}.json"
        main(["--skill", "close_cab", "--episodes", str(episodes), "--out", str(out), "--no-progress",
              "eval.deterministic=false", "eval.bootstrap_samples=200"])
        return [(r["episode_id"], r["measures"]["steps"], r["measures"]["return"])
                for r in json.loads(out.read_text())["episodes"]]

    first, again, longer = run("a", 2), run("b", 2, skip_rng_noise=True), run("c", 3)
    assert first == again and longer[:2] == first


@pytest.mark.parametrize(("skill", "agent_args"), [("close_cab", ["--oracle"]), ("pick", [])],
                         ids=["oracle", "shipped_policy"])
def test_worker_processes_give_the_same_rows_as_one_process(skill, agent_args, tmp_path):
    # every episode resets its own start state and seeds its sampled actions by its index, so splitting the
    # episodes over processes (each with its own env, whose simulators then saw other episodes before) must
    # not change any row; sampled actions make the policy case sensitive to the seeding too
    rows = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}.json"
        main(["--skill", skill, *agent_args, "--episodes", "4", "--workers", str(workers), "--out", str(out),
              "--no-progress", "eval.bootstrap_samples=100", "eval.deterministic=false"])
        rows[workers] = json.loads(out.read_text())["episodes"]
    assert [r["episode_id"] for r in rows[2]] == [r["episode_id"] for r in rows[1]]  # in episode order
    assert rows[2] == rows[1]


@pytest.mark.parametrize("skill", ["pick", "place"])
def test_policies_are_judged_by_habitats_episode_ends(skill):
    """A policy trained with a training-only end (pick: knock_should_end, target_push_should_end; place:
    displaced_should_end, shut_should_end) is evaluated with a knocked neighbour, a pushed target, an object that
    leaves the goal or a goal drawer pushed shut running on to the timeout, like every other policy; its costs stay."""
    import copy

    from eval.skill_eval import TRAINING_ONLY_ENDS, PolicyAgent, _make_env
    from rearrange.generate import generate_episodes
    from skills.policy import SkillPolicy

    checkpoint = f"checkpoints/{skill}.pt"
    policy = SkillPolicy.from_checkpoint(checkpoint, deterministic=True)
    policy.config = copy.deepcopy(policy.config)
    for key in TRAINING_ONLY_ENDS[skill]:
        policy.config["skill"]["reward"][key] = True
    pen = "knock_pen" if skill == "pick" else "displaced_pen"
    env = _make_env(PolicyAgent(policy), skill, generate_episodes(skill, "val", 1, 0), checkpoint)
    try:
        assert all(getattr(env.task.reward_cfg, key) is False for key in TRAINING_ONLY_ENDS[skill])
        assert getattr(env.task.reward_cfg, pen) == policy.config["skill"]["reward"].get(pen, 0.0)
    finally:
        env.close()


class _BackAwayAndLetGo:
    """A place agent double: reverses the base 15 steps, holding, then lets go over bare floor."""

    name = "back_away_and_let_go"

    def reset(self, env, obs):
        self.steps = 0

    def act(self, env, obs):
        import numpy as np

        self.steps += 1
        action = np.zeros(10)  # arm 7, grip, base 2
        action[7] = 1.0 if self.steps <= 15 else -1.0
        action[8] = -1.0 if self.steps <= 15 else 0.0
        return action


def test_objects_fallen_to_the_floor_are_counted():
    """eval-skill's floor_drops (eval/floor_watch.py): an object let go over the floor, in an episode that goes on
    after a wrong drop, counts once per episode and in the breakdown."""
    from eval.skill_eval import breakdown, run_episode
    from rearrange.env import RearrangeEnv
    from rearrange.generate import generate_episodes
    from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task

    cfg = load_skill_config("place")
    cfg["reward"]["wrong_drop_should_end"] = False
    cfg["max_steps"] = 45
    env = RearrangeEnv(make_skill_task(cfg), generate_episodes("place", "val", 1, 0),
                       sim_cfg={"camera": {"head": {"width": 32, "height": 32}}})
    env.reset(seed=0)
    try:
        row = run_episode(env, _BackAwayAndLetGo(), 0, None, "place", {})
    finally:
        env.close()
    assert row["floor_drops"] == 1 and row["end"] == "timeout"
    assert breakdown([row, row, {**row, "floor_drops": 0}])["floor_drops"] == {"objects": 2, "episodes": 2}


class _ShutTheDrawerOnce:
    """Holds the object still; on its first step pushes the goal's drawer 0.2 m toward closed."""

    def reset(self, env, obs):
        self.first = True

    def act(self, env, obs):
        import numpy as np

        if self.first:
            drawer = env.task.container
            env.sim.set_art_q(drawer, env.sim.art_q(drawer) - 0.2)
            self.first = False
        action = np.zeros(10)  # arm 7, grip, base 2
        action[7] = 1.0  # keep holding
        return action


def test_a_goal_drawer_pushed_shut_is_counted():
    """eval-skill flags an episode whose held object pushed its goal's drawer toward closed (place's `shut`, raised on
    one step only) and counts those episodes in the breakdown; the episode runs on (habitat's ends)."""
    from reward_envs import episode_on

    from eval.skill_eval import breakdown, run_episode
    from rearrange.env import RearrangeEnv
    from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task

    cfg = load_skill_config("place")
    cfg["max_steps"] = 5
    env = RearrangeEnv(make_skill_task(cfg), [episode_on("place", "drawer")], sim_cfg={"camera": {"head": {"width": 32, "height": 32}}})
    env.reset(seed=0)
    try:
        row = run_episode(env, _ShutTheDrawerOnce(), 0, None, "place", {})
    finally:
        env.close()
    assert row["shut"] is True and row["end"] == "timeout"
    assert breakdown([row, {**row, "shut": False}, row])["goal_container_pushed"] == 2
