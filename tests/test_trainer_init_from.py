"""`trainer.init_from` fine-tunes: a new run starts from a checkpoint's policy (weights, observation
normalisation, value scale) with fresh counters and schedule, and with `trainer.init_optimizer` from its
optimizer state too; a missing checkpoint, or a missing optimizer state, is a one-line error."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import torch

from configs.compose import ConfigError, compose
from trainer.checkpoint import latest_checkpoint, load_checkpoint
from trainer.cli import make_gym_env
from trainer.train import train


def run(out: Path, *extra: str) -> dict:
    cfg = compose("train_rl", [
        "env_id=Pendulum-v1", "trainer=sync", "trainer.deterministic=true", "trainer.num_envs=2",
        "trainer.num_steps=32", "trainer.checkpoint_interval=1", "trainer.progress_bar=false",
        "policy=mlp_ff", "policy.obs_norm=true", "trainer.ppo.normalize_value=true", f"output_dir={out}", *extra,
    ])
    return train(cfg, functools.partial(make_gym_env, env_id="Pendulum-v1"))


def final_state(out: Path) -> dict:
    return load_checkpoint(latest_checkpoint(out / "checkpoints"))


def test_init_from_starts_a_new_run_from_the_trained_policy(tmp_path):
    run(tmp_path / "a", "trainer.total_steps=256")
    a = final_state(tmp_path / "a")
    assert a["counters"]["env_steps"] == 256
    # lr 1e-12: nothing learns, so the fine-tuned run ends with exactly the policy it started from
    run(tmp_path / "b", "trainer.total_steps=64", "trainer.ppo.lr=1e-12", f"trainer.init_from={tmp_path / 'a'}")
    b = final_state(tmp_path / "b")
    assert b["counters"]["env_steps"] == 64 and b["counters"]["updates"] == 1  # its own counters
    assert b["ppo"]["num_updates"] == 1  # its own LR schedule
    # running statistics (observation and value normalisation, with the value head rescaled to keep its
    # outputs) keep tracking the new rollouts; every other parameter stays as trained
    moving = {"obs_norm.mean", "obs_norm.var", "obs_norm.count", "value_mean", "value_std", "value_head.weight",
              "value_head.bias"}
    assert moving <= set(a["model"]) and len(a["model"]) > len(moving)
    for name, value in a["model"].items():
        if name not in moving:
            assert torch.allclose(b["model"][name], value, rtol=0, atol=1e-9), name
    assert float(b["model"]["obs_norm.count"]) > float(a["model"]["obs_norm.count"])  # continued, not restarted
    # the same run without init_from starts from fresh weights
    run(tmp_path / "c", "trainer.total_steps=64", "trainer.ppo.lr=1e-12")
    c = final_state(tmp_path / "c")
    assert not torch.allclose(c["model"]["actor.0.weight"], a["model"]["actor.0.weight"], rtol=0, atol=1e-3)


def test_init_from_a_missing_checkpoint_is_one_line(tmp_path):
    with pytest.raises(ConfigError) as exc:
        run(tmp_path / "b", "trainer.total_steps=64", f"trainer.init_from={tmp_path / 'nowhere.pt'}")
    assert str(exc.value) == f"trainer.init_from: checkpoint not found: {tmp_path / 'nowhere.pt'}"
    assert not (tmp_path / "b").exists()


def test_a_fine_tuned_run_resumes_after_its_start_checkpoint_is_gone(tmp_path):
    import shutil

    from trainer.checkpoint import resume_run

    run(tmp_path / "a", "trainer.total_steps=64")
    run(tmp_path / "b", "trainer.total_steps=128", f"trainer.init_from={tmp_path / 'a'}")
    shutil.rmtree(tmp_path / "a")
    target = resume_run(tmp_path / "b", ["trainer.total_steps=192"])
    assert target.config.trainer.init_from is None  # the run's own checkpoint holds the weights
    summary = train(target.config, functools.partial(make_gym_env, env_id="Pendulum-v1"), resume=target.checkpoint,
                    output_dir=target.run_dir)
    assert summary["env_steps"] == 192


def test_init_from_a_checkpoint_with_another_network_is_one_line_before_any_work(tmp_path):
    run(tmp_path / "a", "trainer.total_steps=64")  # policy=mlp_ff: actor [256, 256]
    with pytest.raises(ConfigError) as exc:
        run(tmp_path / "b", "trainer.total_steps=64", "policy.feedforward.actor=[64,64]",
            f"trainer.init_from={tmp_path / 'a'}")
    assert str(exc.value) == ("trainer.init_from: the checkpoint's policy.feedforward.actor is [256, 256], this "
                              "run's [64, 64]: a fine-tune needs the same network (add "
                              "policy.feedforward.actor=[256,256])")
    assert not (tmp_path / "b").exists()
    # with the override the message names, the fine-tune starts
    run(tmp_path / "c", "trainer.total_steps=64", "policy.feedforward.actor=[256,256]",
        f"trainer.init_from={tmp_path / 'a'}")
    assert final_state(tmp_path / "c")["counters"]["env_steps"] == 64


def adam_steps(state: dict) -> int:
    """Adam's step count of the first parameter in a checkpoint's optimizer state."""
    first = next(iter(state["ppo"]["optimizer"]["state"].values()))
    return int(first["step"])


def test_init_optimizer_continues_adams_moments(tmp_path):
    run(tmp_path / "a", "trainer.total_steps=256")
    a = final_state(tmp_path / "a")
    run(tmp_path / "fresh", "trainer.total_steps=64", f"trainer.init_from={tmp_path / 'a'}")
    run(tmp_path / "warm", "trainer.total_steps=64", f"trainer.init_from={tmp_path / 'a'}", "trainer.init_optimizer=true")
    fresh, warm = final_state(tmp_path / "fresh"), final_state(tmp_path / "warm")
    per_update = adam_steps(fresh)  # one update's optimizer steps, counted from a cold start
    assert adam_steps(a) == 4 * per_update
    assert adam_steps(warm) == adam_steps(a) + per_update  # the checkpoint's moments, continued
    assert warm["counters"]["updates"] == 1 and warm["ppo"]["num_updates"] == 1  # its own counters and schedule
    # --resume continues from the run's own checkpoint, which holds the optimizer now
    from trainer.checkpoint import resume_run

    target = resume_run(tmp_path / "warm", ["trainer.total_steps=128"])
    assert target.config.trainer.init_from is None and target.config.trainer.init_optimizer is False
    summary = train(target.config, functools.partial(make_gym_env, env_id="Pendulum-v1"), resume=target.checkpoint,
                    output_dir=target.run_dir)
    assert summary["env_steps"] == 128


def test_init_optimizer_without_an_optimizer_state_is_one_line(tmp_path):
    run(tmp_path / "a", "trainer.total_steps=64")
    with pytest.raises(ConfigError) as exc:
        run(tmp_path / "b", "trainer.total_steps=64", "trainer.init_optimizer=true")
    assert str(exc.value) == ("trainer.init_optimizer=true needs trainer.init_from (the checkpoint whose optimizer "
                              "state starts the run); got trainer.init_from null")
    policy_only = final_state(tmp_path / "a")
    del policy_only["ppo"]["optimizer"]
    torch.save(policy_only, tmp_path / "policy.pt")
    with pytest.raises(ConfigError) as exc:
        run(tmp_path / "c", "trainer.total_steps=64", f"trainer.init_from={tmp_path / 'policy.pt'}",
            "trainer.init_optimizer=true")
    assert str(exc.value).startswith(f"trainer.init_optimizer: {tmp_path / 'policy.pt'} holds no optimizer state")
    assert "\n" not in str(exc.value)
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()
