"""The training loop: collect a rollout, update PPO, log, checkpoint; repeat until `total_steps`.

    summary = train(cfg, env_fn)                       # cfg: trainer.*, policy.*, output_dir
    summary = train(cfg, env_fn, resume="runs/x")      # continue from the newest checkpoint there
    summary = train(cfg, env_fn, on_episodes=f)        # f(episodes, env_steps) after every update (rank 0)

`env_fn(index) -> gymnasium.Env` must be picklable (a top-level function or a functools.partial);
it is called once in the main process (index 0) to read the observation and action spaces, then
inside every env worker. With `policy.prev_action: true` every env is wrapped by
`trainer.wrappers.with_previous_action`. Run under torchrun for several ranks: every rank runs this
same loop with its own workers; gradients and learner statistics are all-reduced; rank 0 logs and
writes checkpoints.

Layout: `_build` sets everything up once (`_Run`), `_restore` puts a checkpoint back, `_iterate`
is one collect-and-learn step, `_iteration_metrics` names what it measured, `_save` writes a
checkpoint; `train` strings them together.

Ctrl-C or SIGTERM (a scheduler's time limit): the first stops at the next safe point (between rollouts with
one rank, after the current update with several), writes a checkpoint and returns with
`summary["interrupted"] = True` and `summary["interrupt_signal"]` naming the signal (the CLI then exits with
130 after SIGINT, 143 after SIGTERM); a second one aborts at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from configs.compose import ConfigError, to_plain
from configs.files import write_text_atomic
from trainer.checkpoint import (
    build_checkpoint_state,
    capture_rng_state,
    checkpoint_path,
    keep_last_checkpoints,
    latest_checkpoint,
    load_checkpoint,
    resolve_checkpoint,
    restore_policy_state,
    restore_rng_state,
    restore_training_state,
    save_checkpoint,
)
from trainer.collector import Collector, CollectStats, fill_from_previous
from trainer.config_check import check_config
from trainer.distributed import (
    DistInfo,
    RolloutDoneCounter,
    all_gather_objects,
    all_reduce_max,
    all_reduce_sum_fields,
    broadcast_module,
    init_distributed,
    make_grad_sync,
    make_stats_sync,
    parameter_checksum,
    rank_seed,
    seed_everything,
    setup_logging,
)
from trainer.env_worker import EnvFn
from trainer.interrupt import InterruptFlag
from trainer.learner import Learner
from trainer.logger import MetricsLogger
from trainer.networks import ActorCritic
from trainer.ppo import PPO
from trainer.preemption import PreemptionPlan, ddppo_should_stop, optimal_rollout_time
from trainer.rollout import Rollout

log = logging.getLogger(__name__)


@dataclass
class Counters:
    """Run totals over all ranks; saved in checkpoints as a plain dict."""

    env_steps: int = 0
    updates: int = 0
    episodes: int = 0
    worker_restarts: int = 0

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Counters:
        return cls(**{f.name: int(values.get(f.name, 0)) for f in fields(cls)})


@dataclass
class RankTotals:
    """One iteration's numbers of a rank; after `all_reduce_sum_fields`, their sums over all ranks."""

    rows: float  # env steps collected
    episodes: float  # episodes finished
    worker_restarts: float
    preempted: float  # 1 if this rank's rollout was cut short by preemption
    interrupted: float  # 1 if Ctrl-C or SIGTERM reached this rank


@dataclass
class _Run:
    """Everything `train` sets up once."""

    cfg: DictConfig
    info: DistInfo
    out: Path
    obs_space: Any
    action_space: Any
    actor_critic: ActorCritic
    ppo: PPO
    learner: Learner  # runs the PPO updates; its `acting` network is the one the collector acts with
    collector: Collector
    rows_per_rank: int  # T x N
    total_steps: int

    @property
    def ckpt_dir(self) -> Path:
        return self.out / "checkpoints"


@dataclass
class _Iteration:
    """What one collect-and-learn step produced and measured."""

    rollout: Rollout  # as collected (the next preempted VER rollout may borrow its newest rows)
    learn_rows: int  # rows PPO learned from (more than collected after fill_from_previous)
    stats: CollectStats
    learner_stats: dict[str, float]  # of the update finished in this iteration ({} if none)
    collect_time: float
    learn_time: float  # seconds collection stood still for learning (waiting for an overlapped update)
    update_time: float  # seconds the reported update itself took
    totals: RankTotals  # summed over ranks
    plan: PreemptionPlan | None  # VER's Eq. 1 deadline for the next rollout
    episodes: list[dict]  # finished episodes of every rank


def _resume_state(resume: str | os.PathLike | None, out: Path, is_main: bool) -> dict | None:
    """The checkpoint to resume from; ConfigError when starting afresh in a directory that holds a run."""
    if resume is not None:
        return load_checkpoint(resolve_checkpoint(resume))
    if is_main and latest_checkpoint(out / "checkpoints") is not None:
        raise ConfigError(f"{out} already holds a run; continue it with --resume {out} or choose another output_dir")
    return None


def _policy_env_fn(env_fn: EnvFn, policy_cfg: Any) -> EnvFn:
    """`env_fn`, wrapped to add the `prev_action` observation when `policy.prev_action` is true."""
    if not bool(policy_cfg.get("prev_action", False)):
        return env_fn
    from trainer.wrappers import with_previous_action

    return with_previous_action(env_fn)


def _build(cfg: DictConfig, env_fn: EnvFn, info: DistInfo, out: Path) -> _Run:
    """Network, learner and collector, identical initial weights on every rank."""
    tcfg = cfg.trainer
    if int(tcfg.torch_threads) > 0:
        torch.set_num_threads(int(tcfg.torch_threads))
    if bool(tcfg.deterministic):
        torch.use_deterministic_algorithms(True)
    seed = int(tcfg.seed)
    env_fn = _policy_env_fn(env_fn, cfg.policy)
    seed_everything(seed)  # same initial weights on every rank (and broadcast below)
    probe = env_fn(0)
    obs_space, action_space = probe.observation_space, probe.action_space
    probe.close()

    actor_critic = ActorCritic(obs_space, action_space, cfg.policy).to(info.device)
    broadcast_module(actor_critic)
    num_envs, num_steps = int(tcfg.num_envs), int(tcfg.num_steps)
    rows_per_rank = num_envs * num_steps
    total_steps = int(tcfg.total_steps)
    max_seq_len = tcfg.get("max_seq_len")
    ppo = PPO(
        actor_critic, tcfg.ppo, total_updates=math.ceil(total_steps / (rows_per_rank * info.world_size)),
        grad_sync=make_grad_sync(info.world_size) if info.is_distributed else None,
        stats_sync=make_stats_sync(info.world_size) if info.is_distributed else None,
        seed=rank_seed(seed, info.rank), max_seq_len=num_steps if max_seq_len is None else int(max_seq_len),
    )
    seed_everything(rank_seed(seed, info.rank))
    learner = Learner(ppo, actor_critic, overlap=bool(tcfg.get("overlap_learning", False)))
    collector = Collector(env_fn, obs_space, action_space, learner.acting, tcfg, seed=seed, rank=info.rank,
                          device=info.device, reward_scaler=ppo.reward_scaler)
    return _Run(cfg=cfg, info=info, out=out, obs_space=obs_space, action_space=action_space,
                actor_critic=actor_critic, ppo=ppo, learner=learner, collector=collector,
                rows_per_rank=rows_per_rank, total_steps=total_steps)


def _restore(run: _Run, state: dict) -> Counters:
    """Weights, learner, this rank's RNGs and collector state from a checkpoint; returns its counters.

    The learning-rate schedule follows this run's `trainer.total_steps`, not the checkpoint's: a run
    resumed with a larger total (`--resume DIR trainer.total_steps=...`) stretches its cosine over the
    new length instead of training on at the old schedule's end, a learning rate of 0."""
    counters = Counters.from_dict(restore_training_state(state, run.actor_critic, run.ppo))
    saved_updates = int(state["ppo"]["total_updates"])
    if run.ppo.total_updates != saved_updates and run.info.is_main:
        log.warning("the learning-rate schedule now spans %d updates (trainer.total_steps / rows per update) "
                    "instead of the checkpoint's %d: lr %.3g at update %d", run.ppo.total_updates, saved_updates,
                    run.ppo.lr_at(run.ppo.num_updates), run.ppo.num_updates)
    ranks = state.get("ranks") or []
    if run.info.rank < len(ranks):
        restore_rng_state(ranks[run.info.rank]["rng"])
        run.ppo.generator.set_state(ranks[run.info.rank]["ppo_generator"])
        run.collector.load_state_dict(ranks[run.info.rank]["collector"])
    broadcast_module(run.actor_critic)
    return counters


def _save(run: _Run, counters: Counters, gather: bool = True) -> Path | None:
    """Write a checkpoint (rank 0) with every rank's RNG and collector state; returns its path there."""
    per_rank = {"rng": capture_rng_state(), "ppo_generator": run.ppo.generator.get_state(),
                "collector": run.collector.state_dict()}
    ranks = all_gather_objects(per_rank) if gather else [per_rank]
    if not run.info.is_main:
        return None
    ckpt = build_checkpoint_state(run.actor_critic, run.ppo, to_plain(run.cfg), run.obs_space, run.action_space,
                                  asdict(counters), extra={"ranks": ranks})
    path = checkpoint_path(run.ckpt_dir, counters.env_steps)
    save_checkpoint(path, ckpt)
    keep_last_checkpoints(run.ckpt_dir, int(run.cfg.trainer.checkpoint_keep))
    return path


def _ddppo_stop_check(counter: RolloutDoneCounter, rollout_index: int, world_size: int, num_steps: int, pcfg):
    """DD-PPO's preemption test for the collector, asking the shared counter at most every 5 ms."""
    state = {"next_query": 0.0, "ranks_done": 0}

    def stop_early(min_rows_per_env: int) -> bool:
        now = time.monotonic()
        if now >= state["next_query"]:
            state["ranks_done"] = counter.count(rollout_index)
            state["next_query"] = now + 0.005
        return ddppo_should_stop(state["ranks_done"], world_size, min_rows_per_env, num_steps,
                                 float(pcfg.ddppo_threshold), float(pcfg.ddppo_min_fraction))

    return stop_early


@contextlib.contextmanager
def _torch_threads(threads: int) -> Iterator[None]:
    """torch's intra-op threads set to `threads` inside the block (unchanged when `threads` <= 0)."""
    if threads <= 0:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _checkpoint_due(updates: int, interval: int) -> bool:
    """A checkpoint is written after update number `updates` (1-based) every `interval` updates (0: never)."""
    return interval > 0 and updates % interval == 0


def _iterate(run: _Run, counters: Counters, plan: PreemptionPlan | None, previous: Rollout | None,
             done_counter: RolloutDoneCounter, interrupt: InterruptFlag) -> _Iteration:
    """Collect the next rollout, learn from it, and agree with the other ranks on totals, plan, episodes.

    With `trainer.overlap_learning` the update of this rollout starts on the learner's thread after
    the agreement (so that no two collectives of a rank overlap) and is finished in the next
    iteration; an iteration that ends in a checkpoint, the run's end or an interrupt finishes it at
    once, so that nothing is in flight when a checkpoint is written."""
    index = counters.updates
    tcfg, info = run.cfg.trainer, run.info
    mode, pcfg = str(tcfg.mode), tcfg.preemption
    # collect: VER with the Eq. 1 deadline, or DD-PPO's straggler test between ranks
    t_iter = time.monotonic()
    stop_early = None
    if mode != "ver" and info.is_distributed and bool(pcfg.enabled):
        stop_early = _ddppo_stop_check(done_counter, index, info.world_size, int(tcfg.num_steps), pcfg)
    rollout = run.collector.collect(run.learner.acting_version, deadline_s=plan.rollout_time if plan is not None else None,
                                    stop_early=stop_early)
    stats = run.collector.last_stats
    done_counter.mark_done(index)
    collect_time = time.monotonic() - t_iter

    # learn: a preempted VER rollout is topped up with the previous rollout's newest rows
    learn_rollout = rollout
    if mode == "ver" and stats.preempted and bool(pcfg.fill_from_previous):
        learn_rollout = fill_from_previous(rollout, previous, run.rows_per_rank)
    learner = run.learner
    t_learn = time.monotonic()
    done = learner.finish()  # overlap: the previous rollout's update; the acting network gets its weights
    if not learner.overlap:
        with _torch_threads(int(tcfg.get("learner_threads") or 0)):  # the env workers wait meanwhile: their cores are free
            learner.start(learn_rollout)
            done = learner.finish()
    learn_time = time.monotonic() - t_learn

    # agree: totals, the next rollout's deadline and the finished episodes of all ranks
    totals = all_reduce_sum_fields(RankTotals(
        rows=len(rollout), episodes=len(stats.episodes), worker_restarts=stats.restarts,
        preempted=float(stats.preempted), interrupted=float(interrupt.requested)), info.device)
    new_plan = plan
    if mode == "ver" and bool(pcfg.enabled) and (info.is_distributed or bool(pcfg.ver_single_rank)):
        intervals = all_gather_objects(run.collector.step_intervals.means())
        new_plan = optimal_rollout_time(intervals, all_reduce_max(learn_time, info.device), run.rows_per_rank)
    episodes = [ep for rank_eps in all_gather_objects(stats.episodes) for ep in rank_eps]
    if learner.overlap:  # every rank decides alike: the totals are agreed
        drain = (totals.interrupted > 0 or counters.env_steps + int(totals.rows) >= run.total_steps
                 or _checkpoint_due(index + 1, int(tcfg.checkpoint_interval)))
        t_drain = time.monotonic()
        learner.start(learn_rollout, background=not drain)
        if drain:
            done = learner.finish()
            learn_time += time.monotonic() - t_drain
    learner_stats, update_time = done if done is not None else ({}, 0.0)
    return _Iteration(rollout=rollout, learn_rows=len(learn_rollout), stats=stats, learner_stats=learner_stats,
                      collect_time=collect_time, learn_time=learn_time, update_time=update_time, totals=totals,
                      plan=new_plan, episodes=episodes)


def _episode_metrics(episodes: list[dict]) -> dict[str, float]:
    """Means over finished episodes: metrics/episode_return, metrics/episode_length, and metrics/<info key>
    over the episodes whose last info holds that key (a term reported only on the step it pays, such as
    reward/success, is the mean of those episodes alone: 10.0, not 10 x the success rate)."""
    if not episodes:
        return {}
    out = {"metrics/episode_return": float(np.mean([ep["return"] for ep in episodes])),
           "metrics/episode_length": float(np.mean([ep["length"] for ep in episodes]))}
    keys = sorted({k for ep in episodes for k in ep} - {"return", "length", "env", "episode"})
    for key in keys:
        values = [ep[key] for ep in episodes if key in ep]
        out[f"metrics/{key}"] = float(np.mean(values))
    return out


def _iteration_metrics(it: _Iteration, iter_time: float, sps_average: float, counters: Counters,
                       world_size: int, episodes: list[dict]) -> dict[str, float]:
    """One metrics line: `perf/*` of this iteration, `learner/*`, `metrics/*` over `episodes`."""
    s = it.stats
    metrics = {
        "perf/sps": it.totals.rows / max(iter_time, 1e-9),
        "perf/sps_average": sps_average,
        "perf/collect_time": it.collect_time,
        "perf/learn_time": it.learn_time,
        "perf/update_time": it.update_time,
        "perf/inference_time": s.inference_time,
        "perf/env_wait_time": s.wait_time,
        "perf/env_step_time": s.env_step_time,
        "perf/rollout_rows": len(it.rollout),
        "perf/learn_rows": it.learn_rows,
        "perf/steps_per_env_min": float(s.steps_per_env.min()),
        "perf/steps_per_env_max": float(s.steps_per_env.max()),
        "perf/carried_in": s.carried_in,
        "perf/carried_out": s.carried_out,
        "perf/batch_size_mean": s.batch_size_sum / max(s.num_batches, 1),
        "perf/batch_size_min": s.batch_size_min,
        "perf/batch_size_max": s.batch_size_max,
        "perf/preempted_ranks": it.totals.preempted,
        "perf/worker_restarts": counters.worker_restarts,
        "perf/world_size": world_size,
        "metrics/episodes": len(episodes),
        **it.learner_stats,
        **_episode_metrics(episodes),
    }
    if it.plan is not None:
        metrics["perf/preemption_deadline"] = it.plan.rollout_time
    return metrics


def train(cfg: DictConfig, env_fn: EnvFn, resume: str | os.PathLike | None = None,
          output_dir: str | os.PathLike | None = None,
          on_episodes: Callable[[list[dict], int], None] | None = None) -> dict:
    """Train `cfg.policy` on `env_fn` with `cfg.trainer`; returns a summary dict (see `_summary`).

    `on_episodes(episodes, env_steps)` is called on rank 0 after every update with the episodes that
    finished in it (all ranks; each a dict with `return`, the raw env return, `length`, `env`, ...)
    and the env steps collected so far (benchmarks record learning curves with it).
    """
    check_config(cfg)
    tcfg = cfg.trainer
    info = init_distributed(str(tcfg.device))
    setup_logging(info.rank)
    out = Path(output_dir if output_dir is not None else cfg.output_dir)
    state = _resume_state(resume, out, info.is_main)
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    run = _build(cfg, env_fn, info, out)
    if tcfg.ppo.get("learner_bf16") == "auto":
        log.info("trainer.ppo.learner_bf16=auto: the learner's forward passes run in %s on this %s",
                 "bf16" if run.ppo.learner_bf16 else "fp32 (no bf16 in hardware)", info.device.type)
    if state is not None:
        counters = _restore(run, state)
        if counters.env_steps >= run.total_steps and info.is_main:
            log.warning("nothing to train: the checkpoint already has %d env steps and trainer.total_steps is %d "
                        "(give a larger trainer.total_steps to train on)", counters.env_steps, run.total_steps)
    else:
        counters = Counters()
        if tcfg.get("init_from"):  # fine-tune: a trained policy, everything else fresh
            restore_policy_state(load_checkpoint(resolve_checkpoint(str(tcfg.init_from))), run.actor_critic, run.ppo,
                                 optimizer=bool(tcfg.get("init_optimizer", False)))
            broadcast_module(run.actor_critic)
    run.learner.sync_acting()

    if info.is_main:
        write_text_atomic(out / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    logger = MetricsLogger(out, run.total_steps, counters.env_steps, enabled=info.is_main,
                           progress=bool(tcfg.progress_bar))
    done_counter = RolloutDoneCounter()
    checkpoint_interval = int(tcfg.checkpoint_interval)
    log_interval = max(int(tcfg.log_interval), 1)
    recent_returns: deque[float] = deque(maxlen=int(tcfg.return_window))
    pending_episodes: list[dict] = []  # finished since the last metrics line
    last_saved: Path | None = None
    plan: PreemptionPlan | None = None
    previous: Rollout | None = None
    interrupt = InterruptFlag()
    interrupt_signal: str | None = None  # the signal that stopped the run (None: it finished)
    start_time, start_steps = time.monotonic(), counters.env_steps
    try:
        with interrupt:
            if not info.is_distributed:
                run.collector.interrupt_requested = lambda: interrupt.requested
            while counters.env_steps < run.total_steps:
                t_iter = time.monotonic()
                it = _iterate(run, counters, plan, previous, done_counter, interrupt)
                plan, previous = it.plan, it.rollout
                counters.env_steps += int(it.totals.rows)
                counters.updates += 1
                counters.episodes += int(it.totals.episodes)
                counters.worker_restarts += int(it.totals.worker_restarts)
                pending_episodes.extend(it.episodes)
                recent_returns.extend(ep["return"] for ep in it.episodes)
                if on_episodes is not None and info.is_main:
                    on_episodes(it.episodes, counters.env_steps)

                iter_time = time.monotonic() - t_iter
                sps = (counters.env_steps - start_steps) / max(time.monotonic() - start_time, 1e-9)
                finished = counters.env_steps >= run.total_steps
                if counters.updates % log_interval == 0 or finished:
                    logger.log(counters.updates, counters.env_steps,
                               _iteration_metrics(it, iter_time, sps, counters, info.world_size, pending_episodes))
                    pending_episodes = []
                logger.progress(counters.env_steps, sps, float(np.mean(recent_returns)) if recent_returns else None)

                if checkpoint_interval > 0 and (_checkpoint_due(counters.updates, checkpoint_interval) or finished):
                    last_saved = _save(run, counters) or last_saved
                    if bool(tcfg.deterministic) and not finished:
                        run.collector.reset_episodes()  # the resumed run starts from exactly these envs
                if it.totals.interrupted > 0:  # some rank was interrupted: every rank stops here together
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        interrupt_signal = interrupt.signal_name or "SIGINT"  # a rank stopped by another rank's signal: SIGINT
        log.warning("interrupted: writing a checkpoint of the last completed update")
        run.learner.finish()  # an overlapped update in flight is counted already: let it complete
        last_saved = _save(run, counters, gather=False) or last_saved
    finally:
        run.learner.close()
        run.collector.close()
        logger.close()
        torch.use_deterministic_algorithms(was_deterministic)

    summary = _summary(run, counters, recent_returns, start_time, start_steps, interrupt_signal, last_saved)
    if info.is_main:
        write_text_atomic(out / "summary.json", json.dumps(summary, indent=2))
    return summary


def _summary(run: _Run, counters: Counters, recent_returns: deque[float], start_time: float, start_steps: int,
             interrupt_signal: str | None, last_saved: Path | None) -> dict:
    """The run's summary (also written to summary.json): counters, mean return, throughput, checksums."""
    checksum = parameter_checksum(run.actor_critic)
    # after an interrupt the ranks may not all get here, so no collective call
    interrupted = interrupt_signal is not None
    checksums = [checksum] if interrupted else all_gather_objects(checksum)
    elapsed = time.monotonic() - start_time
    return {
        **asdict(counters),
        "mean_return": float(np.mean(recent_returns)) if recent_returns else None,
        "wall_time_s": elapsed,
        "sps": (counters.env_steps - start_steps) / max(elapsed, 1e-9),
        "interrupted": interrupted,
        "interrupt_signal": interrupt_signal,
        "world_size": run.info.world_size,
        "param_checksums": checksums,
        "checkpoint": str(last_saved) if last_saved else None,
        "output_dir": str(run.out),
    }

