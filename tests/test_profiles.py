"""Training profiles (configs/profile/): one switch picks cpu or paper settings, `auto` resolves by
CUDA, the resolved name reaches the saved config, and the paper profile's network builds and acts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from configs.compose import ConfigError, compose, to_plain
from skills import train_cli


def test_auto_resolves_by_cuda_and_explicit_profiles_stay():
    assert train_cli.resolve_profile(["a=1"], cuda_available=True) == ["a=1", "profile=paper"]
    assert train_cli.resolve_profile([], cuda_available=False) == ["profile=cpu"]
    assert train_cli.resolve_profile(["profile=auto", "b=2"], cuda_available=False) == ["b=2", "profile=cpu"]
    assert train_cli.resolve_profile(["profile=paper"], cuda_available=False) == ["profile=paper"]
    with pytest.raises(ConfigError, match=r"unknown profile 'gpu'; valid choices: auto, cpu, paper"):
        train_cli.resolve_profile(["profile=gpu"])


def test_profiles_set_their_values_and_overrides_win():
    paper = compose("train_skill", ["profile=paper"])
    assert paper.profile == "paper" and paper.policy.visual.encoder == "resnet18_half"
    assert (paper.trainer.num_envs, paper.trainer.num_steps) == (16, 128)
    assert (paper.sim.camera.head.width, paper.sim.camera.head.height) == (128, 128)
    cpu = compose("train_skill", ["profile=cpu"])
    assert cpu.profile == "cpu" and cpu.policy.architecture == "feedforward" and cpu.policy.prev_action
    assert (cpu.trainer.num_envs, cpu.trainer.envs_per_worker) == (32, 16)
    assert cpu.trainer.overlap_learning and not paper.trainer.overlap_learning  # habitat's default in the paper's
    assert (cpu.trainer.ppo.proximal_policy, paper.trainer.ppo.proximal_policy) == ("learner", "behaviour")
    assert cpu.sim.camera.head.backend == "raycast"
    assert (cpu.sim.camera.head.width, cpu.sim.camera.head.height) == (16, 16)
    mixed = compose("train_skill", ["profile=paper", "policy=mlp", "trainer.num_envs=2"])
    assert mixed.policy.rnn.hidden_size == 64 and mixed.trainer.num_envs == 2 and mixed.trainer.num_steps == 128


@pytest.mark.parametrize(("cuda", "expected"), [(True, "paper"), (False, "cpu")])
def test_train_skill_records_the_resolved_profile(cuda, expected, monkeypatch, tmp_path):
    import trainer.cli

    seen = {}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(train_cli, "prepare_dataset", lambda cfg, out: str(tmp_path / "eps.json.gz"))
    monkeypatch.setattr(trainer.cli, "run_training", lambda cfg, *args, **kwargs: seen.setdefault("cfg", cfg))
    # trainer.device=cpu: the faked CUDA is not there to be used
    train_cli.main(["--skill", "pick", "--out", str(tmp_path / "run"), "trainer.device=cpu"])
    saved = to_plain(seen["cfg"])  # what config.yaml and every checkpoint hold
    assert saved["profile"] == expected
    assert saved["trainer"]["envs_per_worker"] == (1 if cuda else 16)


def test_resume_cannot_switch_profile(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        train_cli.main(["--resume", str(tmp_path), "profile=paper"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "profile cannot change" in err[0]


def test_unknown_profile_exits_2_with_choices(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        train_cli.main(["--skill", "pick", "--out", str(tmp_path / "r"), "profile=fast"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and err == ["error: unknown profile 'fast'; valid choices: auto, cpu, paper"]


def test_help_documents_the_profile_switch(capsys):
    with pytest.raises(SystemExit):
        train_cli.main(["--help"])
    out = capsys.readouterr().out
    for line in ("profile=cpu|paper|auto", "profile=auto", "profile=paper", "profile=cpu"):
        assert line in out


@pytest.mark.parametrize("profile", ["paper", "cpu"])
def test_profile_policy_builds_and_acts(profile):
    from rearrange.actions import action_space
    from rearrange.sensors import camera_settings, observation_space
    from skills.definitions import skill_def_from_config
    from trainer.config_check import check_config
    from trainer.networks import ActorCritic

    cfg = to_plain(compose("train_skill", ["skill=pick", f"profile={profile}"]))
    check_config(cfg)
    skill = skill_def_from_config(cfg["skill"])
    depth_shape, max_depth = camera_settings(cfg["sim"])
    assert depth_shape == ((128, 128) if profile == "paper" else (16, 16))
    obs_space = observation_space(skill.obs_keys, depth_shape, max_depth)
    model = ActorCritic(obs_space, action_space(skill.action_subsets), cfg["policy"])
    rng = np.random.default_rng(0)
    obs = {k: torch.as_tensor(rng.uniform(0.0, 1.0, (1, *s.shape)), dtype=torch.float32)
           for k, s in obs_space.spaces.items()}
    with torch.no_grad():
        out = model.act(obs, model.initial_hidden(1), torch.ones(1, dtype=torch.bool))
    assert out.action.shape == (1, skill.action_dim) and torch.isfinite(out.value).all()


@pytest.mark.parametrize(("skill", "profile", "overrides", "expected", "binary"), [
    ("nav", "cpu", [], [0.0, 0.0, -0.986], [2]),  # base 2 + stop: a binary stop, rarely fired at first
    ("open_fridge", "cpu", [], [0.0] * 10 + [-0.986], [10]),
    ("nav", "cpu", ["skill_binary_actions=[]", "skill_initial_action.stop=-0.9"], [0.0, 0.0, -0.9], None),
    ("pick", "cpu", [], None, None),              # no stop subset: the head keeps its zero bias
    ("nav", "paper", [], None, None),             # habitat's initialisation, every entry Gaussian
])
def test_skill_initial_action_reaches_the_policy(skill, profile, overrides, expected, binary, monkeypatch, tmp_path):
    import trainer.cli
    from trainer.distributions import GaussianBinary, GaussianHead

    seen = {}
    monkeypatch.setattr(train_cli, "prepare_dataset", lambda cfg, out: str(tmp_path / "eps.json.gz"))
    monkeypatch.setattr(trainer.cli, "run_training", lambda cfg, *args, **kwargs: seen.setdefault("cfg", cfg))
    train_cli.main(["--skill", skill, "--out", str(tmp_path / "run"), f"profile={profile}", "trainer.device=cpu",
                    *overrides])
    action_cfg = to_plain(seen["cfg"])["policy"]["action"]
    assert action_cfg.get("initial_mean") == expected
    assert action_cfg.get("binary_dims") == binary
    if expected is not None:  # the untrained head's expected action on zero features is the configured one
        head = GaussianHead(8, len(expected), action_cfg)
        with torch.no_grad():
            dist = head(torch.zeros(1, 8))
        assert torch.allclose(dist.mean[0], torch.tensor(expected), atol=1e-5)
        if binary:
            assert isinstance(dist, GaussianBinary)
            stop_probability = float(torch.sigmoid(dist.logits[0, -1]))
        else:
            normal = torch.distributions.Normal(dist.mean[0, -1], head.log_std.detach()[-1].exp())
            stop_probability = 1.0 - float(normal.cdf(torch.tensor(0.0)))
        assert 0.001 < stop_probability < 0.01  # stop (> 0) on under 1% of the first steps


def test_bad_skill_initial_action_is_one_line(capsys, tmp_path, monkeypatch):
    from skills.definitions import get_skill

    with pytest.raises(ValueError, match=r"unknown action subset\(s\) jump; valid choices: arm, arm_ee, grip, base, stop"):
        get_skill("nav").initial_action_mean({"jump": 0.5})
    monkeypatch.setattr(train_cli, "prepare_dataset", lambda *a: pytest.fail("no dataset for a bad config"))
    with pytest.raises(SystemExit) as exc:
        train_cli.main(["--skill", "nav", "--out", str(tmp_path / "r"), "profile=cpu", "skill_initial_action.stop=1.5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert err[0].startswith("error: policy.action.initial_mean must be a non-empty list of numbers in (-1, 1)")


def test_place_under_the_cpu_profile_trains_with_run_4s_settings():
    """configs/skill_profile/cpu_place.yaml: place (and only place, and only under the cpu profile) trains without
    the overlap, with habitat's clip and a Gaussian stop; a command-line override still wins."""
    place = compose("train_skill", ["skill=place", "profile=cpu"])
    assert not place.trainer.overlap_learning and place.trainer.ppo.proximal_policy == "behaviour"
    assert list(place.skill_binary_actions) == [] and place.skill_initial_action.stop == -0.9
    assert place.trainer.num_envs == 32 and place.policy.architecture == "feedforward"  # the rest is the profile's
    pick = compose("train_skill", ["skill=pick", "profile=cpu"])
    assert pick.trainer.overlap_learning and pick.trainer.ppo.proximal_policy == "learner"
    assert list(pick.skill_binary_actions) == ["stop"] and pick.skill_initial_action.stop == -0.986
    paper = {skill: compose("train_skill", [f"skill={skill}", "profile=paper"]) for skill in ("place", "pick")}
    assert paper["place"].trainer == paper["pick"].trainer  # no paper_place.yaml: the paper profile as it is
    assert paper["place"].get("skill_binary_actions") == paper["pick"].get("skill_binary_actions")
    again = compose("train_skill", ["skill=place", "profile=cpu", "trainer.overlap_learning=true",
                                    "skill_binary_actions=[stop]"])
    assert again.trainer.overlap_learning and list(again.skill_binary_actions) == ["stop"]


def test_train_skill_place_records_the_skill_profile(monkeypatch, tmp_path):
    """What `train-skill --skill place` composes (the cpu profile resolved on a machine without CUDA)."""
    import argparse

    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    args = argparse.Namespace(skill="place", resume=None, out=str(tmp_path / "run"), overrides=[])
    cfg, _, _ = train_cli.load_config(args)
    assert cfg.profile == "cpu" and not cfg.trainer.overlap_learning and list(cfg.skill_binary_actions) == []
