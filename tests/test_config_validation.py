"""Bad trainer / PPO / policy values stop both CLIs with one line naming the key, exit code 2, before
any dataset is generated or env worker started; every shipped config passes."""

from __future__ import annotations

import pytest

from configs.compose import ConfigError, compose
from skills import train_cli as skill_cli
from trainer import cli as rl_cli
from trainer.config_check import check_config

# (overrides separated by spaces, the key the message must name, part of the valid range or choices)
BAD_VALUES = [
    ("trainer.mode=foo", "trainer.mode", "ver, nover, sync"),
    ("trainer.num_envs=-3", "trainer.num_envs", ">= 1"),
    ("trainer.num_envs=2.5", "trainer.num_envs", "integer"),
    ("trainer.num_steps=0", "trainer.num_steps", ">= 1"),
    ("trainer.total_steps=0", "trainer.total_steps", ">= 1"),
    ("trainer.max_seq_len=0", "trainer.max_seq_len", ">= 1"),
    ("++trainer.envs_per_worker=0", "trainer.envs_per_worker", ">= 1"),
    ("trainer.min_batch_factor=0", "trainer.min_batch_factor", "> 0"),
    ("trainer.max_batch_factor=-1", "trainer.max_batch_factor", "> 0"),
    ("trainer.max_batch_wait_s=-0.1", "trainer.max_batch_wait_s", "'auto'"),
    ("trainer.max_batch_wait_s=soon", "trainer.max_batch_wait_s", "'auto'"),
    ("trainer.seed=abc", "trainer.seed", "integer"),
    ("trainer.deterministic=yes", "trainer.deterministic", "true or false"),
    ("trainer.deterministic=true", "trainer.deterministic", "sync"),  # needs trainer.mode=sync
    ("trainer.torch_threads=-1", "trainer.torch_threads", ">= 0"),
    ("trainer.learner_threads=-1", "trainer.learner_threads", ">= 0"),
    ("trainer.overlap_learning=1", "trainer.overlap_learning", "true or false"),
    ("trainer.ppo.proximal_policy=newest", "trainer.ppo.proximal_policy", "behaviour, learner"),
    ("trainer.ppo.learner_bf16=3", "trainer.ppo.learner_bf16", "true, false or auto"),
    ("trainer.overlap_learning=true trainer.learner_threads=2", "trainer.learner_threads", "must be 0"),
    ("trainer.device=tpu", "trainer.device", "auto, cpu, cuda"),
    ("trainer.start_method=fork", "trainer.start_method", "forkserver, spawn"),
    ("trainer.worker_timeout_s=0", "trainer.worker_timeout_s", "> 0"),
    ("trainer.worker_start_timeout_s=-5", "trainer.worker_start_timeout_s", "> 0"),
    ("trainer.max_worker_failures_in_row=-1", "trainer.max_worker_failures_in_row", ">= 0"),
    ("trainer.checkpoint_interval=-1", "trainer.checkpoint_interval", ">= 0"),
    ("trainer.checkpoint_keep=-2", "trainer.checkpoint_keep", ">= 0"),
    ("trainer.log_interval=0", "trainer.log_interval", ">= 1"),
    ("trainer.return_window=0", "trainer.return_window", ">= 1"),
    ("trainer.progress_bar=2", "trainer.progress_bar", "true or false"),
    ("trainer.preemption.enabled=maybe", "trainer.preemption.enabled", "true or false"),
    ("trainer.preemption.ddppo_threshold=1.5", "trainer.preemption.ddppo_threshold", "[0, 1]"),
    ("trainer.preemption.ddppo_min_fraction=-0.1", "trainer.preemption.ddppo_min_fraction", "[0, 1]"),
    ("trainer.ppo.gamma=0", "trainer.ppo.gamma", "(0, 1]"),
    ("trainer.ppo.gamma=1.01", "trainer.ppo.gamma", "(0, 1]"),
    ("trainer.ppo.gae_lambda=2", "trainer.ppo.gae_lambda", "[0, 1]"),
    ("trainer.ppo.clip_param=0", "trainer.ppo.clip_param", "> 0"),
    ("trainer.ppo.ppo_epoch=0", "trainer.ppo.ppo_epoch", ">= 1"),
    ("trainer.ppo.num_mini_batch=0", "trainer.ppo.num_mini_batch", ">= 1"),
    ("trainer.ppo.num_mini_batch=100000000", "trainer.ppo.num_mini_batch", "rows"),
    ("trainer.ppo.value_loss_coef=-1", "trainer.ppo.value_loss_coef", ">= 0"),
    ("trainer.ppo.value_norm_beta=1.5", "trainer.ppo.value_norm_beta", "[0, 1]"),
    ("trainer.ppo.normalize_value=on", "trainer.ppo.normalize_value", "true or false"),
    ("trainer.ppo.max_grad_norm=0", "trainer.ppo.max_grad_norm", "> 0"),
    ("trainer.ppo.lr=0", "trainer.ppo.lr", "> 0"),
    ("trainer.ppo.lr=fast", "trainer.ppo.lr", "> 0"),
    ("trainer.ppo.eps=-1e-5", "trainer.ppo.eps", "> 0"),
    ("trainer.ppo.lr_schedule=linear", "trainer.ppo.lr_schedule", "cosine, constant"),
    ("trainer.ppo.entropy.coef=-1", "trainer.ppo.entropy.coef", "0"),  # >= 0 fixed, > 0 learned (log)
    ("trainer.ppo.entropy.min_coef=0", "trainer.ppo.entropy.min_coef", "> 0"),
    ("trainer.ppo.entropy.max_coef=1e-5", "trainer.ppo.entropy.max_coef", "min_coef"),
    ("trainer.ppo.entropy.target=high", "trainer.ppo.entropy.target", "number"),
    ("policy.rnn.hidden_size=0", "policy.rnn.hidden_size", ">= 1"),
    ("policy.rnn.num_layers=-1", "policy.rnn.num_layers", ">= 1"),
    ("policy.vector_mlp=[64,0]", "policy.vector_mlp", "integers >= 1"),
    ("policy.visual.encoder=vit", "policy.visual.encoder", "cnn_small, resnet18_half"),
    ("policy.visual.channels=[16]", "policy.visual.channels", "as many entries"),
    ("policy.action.mean_activation=relu", "policy.action.mean_activation", "tanh, none"),
    ("policy.action.max_log_std=-6", "policy.action.max_log_std", "min_log_std"),
    ("policy.architecture=transformer", "policy.architecture", "recurrent, feedforward"),
    ("policy=mlp_ff policy.feedforward.actor=[0]", "policy.feedforward.actor", "integers >= 1"),
    ("policy=mlp_ff policy.feedforward.activation=gelu", "policy.feedforward.activation", "tanh, relu"),
    ("policy.prev_action=1", "policy.prev_action", "true or false"),
    ("policy.obs_norm=yes", "policy.obs_norm", "true or false"),
    ("policy.obs_norm_clip=0", "policy.obs_norm_clip", "> 0"),
]

# train-skill only: the skill's reward options, checked when its task is built (before any episode is made);
# `skill=place` selects place's config group (a later override than the `--skill pick` the test passes)
SKILL_BAD_VALUES = [
    ("skill.reward.approach_reward=-1", "skill.reward.approach_reward", ">= 0"),
    ("skill=place skill.reward.opening_path_offset=-1", "skill.reward.opening_path_offset", "[0, 1] m"),
    ("skill.reward.exit_offset=-1", "skill.reward.exit_offset", "[0, 1] m"),
]


def run_cli(main, argv, capsys) -> tuple[int, list[str]]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize(("override", "key", "valid"), BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_train_rl_rejects_bad_value_with_one_line(override, key, valid, capsys, tmp_path):
    out = tmp_path / "run"
    code, err = run_cli(rl_cli.main, ["--env-id", "CartPole-v1", "--output-dir", str(out), *override.split()],
                        capsys)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {key} ") and valid in err[0], err[0]
    assert not out.exists()


@pytest.mark.parametrize(("override", "key", "valid"), BAD_VALUES + SKILL_BAD_VALUES,
                         ids=[b[0] for b in BAD_VALUES + SKILL_BAD_VALUES])
def test_train_skill_rejects_bad_value_before_the_dataset(override, key, valid, capsys, tmp_path, monkeypatch):
    def no_dataset(*args, **kwargs):
        raise AssertionError("the dataset must not be prepared for a bad config")

    monkeypatch.setattr(skill_cli, "prepare_dataset", no_dataset)
    out = tmp_path / "run"
    # the cpu profile's policy is feed-forward: recurrent-only keys are checked with its recurrent network
    policy = ["policy=cnn_small"] if override.startswith(("policy.rnn", "policy.vector_mlp")) else []
    code, err = run_cli(skill_cli.main, ["--skill", "pick", "--out", str(out), "profile=cpu", *policy,
                                         *override.split()], capsys)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {key} ") and valid in err[0], err[0]
    assert not out.exists()


def test_cuda_device_without_cuda_exits_2(capsys, tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code, err = run_cli(rl_cli.main, ["--env-id", "CartPole-v1", "--output-dir", str(tmp_path / "r"),
                                      "trainer.device=cuda"], capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("error: trainer.device ") and "auto or cpu" in err[0]


def test_unknown_key_still_fails_in_hydra(capsys, tmp_path):
    code, err = run_cli(rl_cli.main, ["--env-id", "CartPole-v1", "--output-dir", str(tmp_path), "trainer.num_env=4"],
                        capsys)
    assert code == 2 and len(err) == 1 and "invalid config override" in err[0]


def test_resume_validates_the_merged_config(capsys, tmp_path):
    from configs.compose import to_plain
    from trainer.checkpoint import checkpoint_path, save_checkpoint

    cfg = to_plain(compose("train_rl", ["env_id=CartPole-v1"]))
    save_checkpoint(checkpoint_path(tmp_path / "checkpoints", 10),
                    {"model": {}, "config": cfg, "obs_space": None, "action_space": None})
    code, err = run_cli(rl_cli.main, ["--resume", str(tmp_path), "trainer.num_steps=0"], capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("error: trainer.num_steps ")
    code, err = run_cli(rl_cli.main, ["--resume", str(tmp_path), "trainer.ppo.lr_schedule=linear"], capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("error: trainer.ppo.lr_schedule ")


@pytest.mark.parametrize(("name", "overrides"), [
    ("train_rl", []), ("train_rl", ["trainer=sync", "trainer.deterministic=true"]), ("train_rl", ["trainer=nover"]),
    ("train_rl", ["policy=cnn_small"]), ("train_rl", ["policy=resnet18_half"]), ("train_rl", ["policy=mlp_ff"]),
    ("train_skill", []), ("train_skill", ["profile=cpu"]), ("train_skill", ["profile=paper"]),
    ("train_rl", ["trainer.max_batch_wait_s=0.02", "trainer.max_seq_len=16", "trainer.total_steps=1e6"]),
    ("train_rl", ["trainer.num_envs=8", "++trainer.envs_per_worker=3"]),  # workers of 3, 3 and 2 envs
    ("bench_ver", []),
])  # fmt: skip
def test_shipped_configs_pass(name, overrides):
    check_config(compose(name, overrides))


def test_configs_of_older_checkpoints_pass():
    # keys added later (max_seq_len, envs_per_worker, prev_action, obs_norm) are optional
    from configs.compose import to_plain

    cfg = to_plain(compose("train_rl"))
    cfg["trainer"].pop("max_seq_len")
    check_config(cfg)
    cfg["trainer"]["ppo"].pop("lr")
    with pytest.raises(ConfigError, match=r"^trainer\.ppo\.lr is missing$"):
        check_config(cfg)


def _built_run(tmp_path, *overrides: str):
    """`trainer.train._build` (network, learner, collector; no worker started) for CartPole."""
    import functools

    from trainer.cli import make_gym_env
    from trainer.distributed import init_distributed
    from trainer.train import _build

    cfg = compose("train_rl", ["env_id=CartPole-v1", "trainer.num_envs=2", "trainer.num_steps=16", *overrides])
    check_config(cfg)
    return _build(cfg, functools.partial(make_gym_env, env_id="CartPole-v1"), init_distributed("cpu"), tmp_path)


@pytest.mark.parametrize(("overrides", "expected"), [([], 16), (["trainer.max_seq_len=4"], 4)])
def test_max_seq_len_reaches_the_learner(overrides, expected, tmp_path):
    run = _built_run(tmp_path, *overrides)
    try:
        assert run.ppo.max_seq_len == expected  # null: T (trainer.num_steps)
    finally:
        run.collector.close()


@pytest.mark.parametrize("prev_action", [False, True])
def test_prev_action_wraps_the_envs(prev_action, tmp_path):
    run = _built_run(tmp_path, f"policy.prev_action={str(prev_action).lower()}")
    try:
        spaces = getattr(run.obs_space, "spaces", {})
        assert ("prev_action" in spaces) == prev_action
        assert ("prev_action" in run.actor_critic.vector_keys) == prev_action
        assert ("prev_action" in run.collector.buffers.obs) == prev_action  # the workers' envs are wrapped too
    finally:
        run.collector.close()
