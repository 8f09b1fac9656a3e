"""Validation of the `trainer`, `trainer.ppo` and `policy` config nodes before any work starts.

    check_config(cfg)      # raises ConfigError("<key> must be ...; got <value>"), one line

Both CLIs call it right after composing (or, on resume, merging) the config, before datasets are
generated or env workers start; `trainer.train.train` calls it again for callers that skip the
CLI. Only the first problem is reported. Nodes are read through `configs/node.py: ConfigNode`, which the
evaluators' checks (`eval/eval_config.py`) share. Keys added by newer configs (`trainer.envs_per_worker`,
`policy.prev_action`, `policy.obs_norm`, ...) are checked when present, so configs stored in older
checkpoints still pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from configs.compose import ConfigError
from configs.node import MISSING, ConfigNode
from configs.ranges import as_finite_float

DEVICES = ("auto", "cpu", "cuda")
START_METHODS = ("forkserver", "spawn")
MEAN_ACTIVATIONS = ("tanh", "none")


def check_config(cfg: Mapping) -> None:
    """Raise ConfigError (one line, naming the key and the valid range or choices) for a bad value."""
    trainer = ConfigNode(_required_mapping(cfg, "trainer"), "trainer")
    rows_per_rank = check_trainer(trainer)
    check_ppo(trainer.child("ppo"), rows_per_rank)
    if isinstance(cfg, Mapping) and "policy" in cfg:
        check_policy(ConfigNode(_required_mapping(cfg, "policy"), "policy"))
        init_from = trainer.raw("init_from", optional=True)
        if isinstance(init_from, str) and init_from:
            _check_init_from_network(init_from, cfg["policy"], trainer.raw("init_optimizer", optional=True) is True)


def _check_init_from_network(init_from: str, policy: Mapping, init_optimizer: bool = False) -> None:
    """The checkpoint a fine-tune starts from must have this run's network (its path is checked already),
    and an optimizer state when `trainer.init_optimizer` asks for it."""
    from trainer.checkpoint import CheckpointError, load_checkpoint, network_difference, resolve_checkpoint

    try:
        path = resolve_checkpoint(init_from)
        state = load_checkpoint(path)
    except CheckpointError as exc:
        raise ConfigError(f"trainer.init_from: {exc}") from None
    difference = network_difference((state.get("config") or {}).get("policy") or {}, policy)
    if difference:
        raise ConfigError(f"trainer.init_from: {difference}")
    if init_optimizer and "optimizer" not in (state.get("ppo") or {}):
        raise ConfigError(f"trainer.init_optimizer: {path} holds no optimizer state (an exported policy?); give "
                          f"a training checkpoint or run folder as trainer.init_from, or trainer.init_optimizer=false")


def _required_mapping(cfg: Mapping, name: str) -> Mapping:
    node = cfg.get(name) if isinstance(cfg, Mapping) else None
    if not isinstance(node, Mapping):
        raise ConfigError(f"{name} must be a mapping of settings; got {node!r}")
    return node


def check_trainer(t: ConfigNode) -> int:
    """Collection and run settings (configs/trainer/ver.yaml); returns the rollout size T x N."""
    from trainer.collector import MODES  # the collector owns the list of modes

    mode = t.choice("mode", MODES)
    num_envs = t.integer("num_envs", 1)
    num_steps = t.integer("num_steps", 1)
    t.integer("total_steps", 1)
    # any K >= 1: the collector spreads N envs over ceil(N / K) workers whose sizes differ by at most 1
    t.integer("envs_per_worker", 1, optional=True)
    t.integer("max_seq_len", 1, optional=True, allow_none=True)
    t.number("min_batch_factor", 0, low_open=True)
    t.number("max_batch_factor", 0, low_open=True)
    wait = t.raw("max_batch_wait_s")
    seconds = as_finite_float(wait)
    if wait != "auto" and (seconds is None or seconds < 0):
        raise t.fail("max_batch_wait_s", "a number of seconds >= 0 or 'auto'", wait)
    t.integer("seed")
    init_from = t.raw("init_from", optional=True)
    if init_from not in (None, MISSING):
        if not isinstance(init_from, str) or not init_from:
            raise t.fail("init_from", "a checkpoint file or run folder, or null", init_from)
        from trainer.checkpoint import CheckpointError, resolve_checkpoint

        try:
            resolve_checkpoint(init_from)
        except CheckpointError as exc:
            raise ConfigError(f"trainer.init_from: {exc}") from None
    if t.boolean("init_optimizer", optional=True) and init_from in (None, MISSING):  # absent in older configs
        raise ConfigError("trainer.init_optimizer=true needs trainer.init_from (the checkpoint whose optimizer "
                          "state starts the run); got trainer.init_from null")
    if t.boolean("deterministic") and mode != "sync":
        raise ConfigError(f"trainer.deterministic must be false unless trainer.mode=sync; got true with "
                          f"trainer.mode '{mode}'")
    t.integer("torch_threads", 0)
    learner_threads = t.integer("learner_threads", 0, optional=True)  # absent in checkpoints older than the key
    if t.boolean("overlap_learning", optional=True) and learner_threads:
        raise ConfigError(f"trainer.learner_threads must be 0 with trainer.overlap_learning=true (torch's thread "
                          f"count is one setting for the whole process, and collection goes on during the "
                          f"update); got {learner_threads}")
    device = t.choice("device", DEVICES)
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("trainer.device must be auto or cpu here (no CUDA device is available); got 'cuda'")
    t.choice("start_method", START_METHODS)
    t.number("worker_timeout_s", 0, low_open=True)
    t.number("worker_start_timeout_s", 0, low_open=True)
    t.integer("max_worker_failures_in_row", 0)
    t.integer("checkpoint_interval", 0)
    t.integer("checkpoint_keep", 0)
    t.integer("log_interval", 1)
    t.integer("return_window", 1)
    t.boolean("progress_bar")
    pre = t.child("preemption")
    pre.boolean("enabled")
    pre.number("ddppo_threshold", 0, 1)
    pre.number("ddppo_min_fraction", 0, 1)
    pre.boolean("ver_single_rank")
    pre.boolean("fill_from_previous")
    return int(num_envs) * int(num_steps)  # type: ignore[arg-type]


def check_ppo(p: ConfigNode, rows_per_rank: int) -> None:
    """PPO settings (configs/trainer/ppo.yaml); mini-batches must fit in one rollout of T x N rows."""
    from trainer.ppo import LEARNER_BF16_VALUES, LR_SCHEDULES, PROXIMAL_POLICIES, is_learner_bf16_value

    p.number("gamma", 0, 1, low_open=True)
    p.number("gae_lambda", 0, 1)
    p.number("clip_param", 0, low_open=True)
    p.integer("ppo_epoch", 1)
    num_mini_batch = p.integer("num_mini_batch", 1)
    if num_mini_batch is not None and num_mini_batch > rows_per_rank:
        raise ConfigError(f"trainer.ppo.num_mini_batch must be in [1, {rows_per_rank}] (the rollout's "
                          f"num_envs x num_steps rows); got {num_mini_batch}")
    p.number("value_loss_coef", 0)
    p.boolean("use_clipped_value_loss")
    p.boolean("normalize_advantage")
    p.boolean("normalize_value")
    p.number("value_norm_beta", 0, 1)
    p.boolean("normalize_reward", optional=True)
    p.number("reward_norm_clip", 0, low_open=True, optional=True)
    p.boolean("use_importance_weights")
    bf16 = p.raw("learner_bf16", optional=True)  # absent in configs saved before the key
    if bf16 is not MISSING and not is_learner_bf16_value(bf16):
        raise p.fail("learner_bf16", LEARNER_BF16_VALUES, bf16)
    p.choice("proximal_policy", PROXIMAL_POLICIES, optional=True)  # absent in configs saved before the key
    p.number("max_grad_norm", 0, low_open=True)
    p.number("lr", 0, low_open=True)
    p.number("eps", 0, low_open=True)
    p.choice("lr_schedule", LR_SCHEDULES)
    e = p.child("entropy")
    learned = e.boolean("learned")
    e.number("coef", 0, low_open=bool(learned))
    e.number("target")
    e.boolean("target_per_action_dim")
    min_coef = e.number("min_coef", 0, low_open=True)
    max_coef = e.number("max_coef", 0, low_open=True)
    if min_coef is not None and max_coef is not None and max_coef < min_coef:
        raise ConfigError(f"trainer.ppo.entropy.max_coef must be >= trainer.ppo.entropy.min_coef ({min_coef:g}); "
                          f"got {max_coef:g}")


def check_policy(p: ConfigNode) -> None:
    """Network settings (configs/policy/*.yaml): the recurrent or the feed-forward architecture."""
    from trainer.encoders import VISUAL_ENCODERS
    from trainer.networks import ARCHITECTURES, FF_ACTIVATIONS

    architecture = p.choice("architecture", ARCHITECTURES, optional=True) or "recurrent"
    visual = p.optional_child("visual")
    if visual is not None:
        encoder = visual.choice("encoder", list(VISUAL_ENCODERS))
        visual.integer("out_dim", 1)
        if encoder == "cnn_small":
            _same_length(visual, ("channels", "kernels", "strides"), 1)
        elif encoder == "resnet18_half":
            _check_resnet(visual)
    if architecture == "recurrent":
        p.int_list("vector_mlp", 1)
        rnn = p.child("rnn")
        rnn.integer("hidden_size", 1)
        rnn.integer("num_layers", 1)
    else:
        ff = p.child("feedforward")
        ff.int_list("actor", 1)
        ff.int_list("critic", 1)
        ff.choice("activation", list(FF_ACTIVATIONS))
    action = p.child("action")
    mean_activation = action.choice("mean_activation", MEAN_ACTIVATIONS)
    action.number("log_std_init")
    if action.raw("initial_mean", optional=True) not in (None, MISSING):
        bound = 1.0 if mean_activation == "tanh" else None
        action.number_list("initial_mean", None if bound is None else -bound, bound, open_ends=True)
    if action.raw("binary_dims", optional=True) not in (None, MISSING):
        action.int_list("binary_dims", 0)
    low = action.number("min_log_std")
    high = action.number("max_log_std")
    if low is not None and high is not None and high <= low:
        raise ConfigError(f"policy.action.max_log_std must be > policy.action.min_log_std ({low:g}); got {high:g}")
    p.boolean("prev_action", optional=True)
    p.boolean("obs_norm", optional=True)
    p.number("obs_norm_clip", 0, low_open=True, optional=True)


def _same_length(node: ConfigNode, names: Sequence[str], minimum: int) -> list[list[int]]:
    lists = [node.int_list(name, minimum) or [] for name in names]
    if len({len(v) for v in lists}) != 1:
        others = " and ".join(node.key(n) for n in names[1:])
        raise ConfigError(f"{node.key(names[0])} must have as many entries as {others}; got lengths "
                          f"{', '.join(str(len(v)) for v in lists)}")
    return lists


def _check_resnet(visual: ConfigNode) -> None:
    widths, *_ = _same_length(visual, ("stage_widths", "stage_blocks", "stage_strides", "stage_dilations"), 1)
    groups = visual.integer("groups", 1)
    bad = [w for w in widths if groups and w % groups]
    if bad:
        raise ConfigError(f"policy.visual.groups must divide every policy.visual.stage_widths entry "
                          f"({', '.join(map(str, widths))}); got {groups}")
    visual.integer("stem_patch", 1)
    visual.number("layer_scale_init")
    visual.integer("compression_flat_size", 1)
