"""The training loop: collect a rollout, update PPO, log, checkpoint; repeat until `total_steps`.

    summary = train(cfg, env_fn)                       # cfg: trainer.*, policy.*, output_dir
    summary = train(cfg, env_fn, resume="runs/x")      # continue from the newest checkpoint there

`env_fn(index) -> gymnasium.Env` must be picklable (a top-level function or a functools.partial);
it is called once in the main process (index 0) to read the observation and action spaces, then
inside every env worker. Run under torchrun for several ranks: every rank runs this same loop
with its own workers; gradients are all-reduced; rank 0 logs and writes checkpoints.

Ctrl-C: the first press stops at the next safe point (between rollouts with one rank, after the
current update with several), writes a checkpoint and returns with `summary["interrupted"] = True`
(the CLI then exits with code 130); a second press aborts at once.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from trainer.checkpoint import (
    CheckpointError,
    build_checkpoint_state,
    capture_rng_state,
    checkpoint_path,
    keep_last_checkpoints,
    latest_checkpoint,
    load_checkpoint,
    restore_rng_state,
    restore_training_state,
    save_checkpoint,
)
from trainer.collector import Collector, fill_from_previous
from trainer.config import ConfigError, to_plain
from trainer.distributed import (
    RolloutDoneCounter,
    all_gather_objects,
    all_reduce_max,
    all_reduce_sum,
    broadcast_module,
    init_distributed,
    make_grad_sync,
    parameter_checksum,
    rank_seed,
    seed_everything,
    setup_logging,
)
from trainer.env_worker import EnvFn
from trainer.files import write_text_atomic
from trainer.logger import MetricsLogger
from trainer.networks import ActorCritic
from trainer.ppo import PPO
from trainer.preemption import ddppo_should_stop, optimal_rollout_time

log = logging.getLogger(__name__)


def resolve_checkpoint(resume: str | os.PathLike) -> Path:
    """A checkpoint file, or the newest checkpoint of a run directory; CheckpointError otherwise."""
    path = Path(resume)
    if path.is_dir():
        found = latest_checkpoint(path / "checkpoints") or latest_checkpoint(path)
        if found is None:
            raise CheckpointError(f"no checkpoint (ckpt_*.pt) found in {path}")
        return found
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path}")
    return path


class _InterruptFlag:
    """First SIGINT sets the flag; the second raises KeyboardInterrupt at once."""

    def __init__(self) -> None:
        self.requested = False
        self._previous = None

    def __enter__(self) -> _InterruptFlag:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        log.warning("interrupt: stopping at the next safe point (press Ctrl-C again to abort)")

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


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


def _episode_metrics(episodes: list[dict]) -> dict[str, float]:
    """Means over finished episodes: metrics/episode_return, metrics/episode_length, metrics/<info key>."""
    if not episodes:
        return {}
    out = {"metrics/episode_return": float(np.mean([ep["return"] for ep in episodes])),
           "metrics/episode_length": float(np.mean([ep["length"] for ep in episodes]))}
    keys = sorted({k for ep in episodes for k in ep} - {"return", "length", "env", "episode"})
    for key in keys:
        values = [ep[key] for ep in episodes if key in ep]
        out[f"metrics/{key}"] = float(np.mean(values))
    return out


def train(cfg: DictConfig, env_fn: EnvFn, resume: str | os.PathLike | None = None,
          output_dir: str | os.PathLike | None = None) -> dict:
    """Train `cfg.policy` on `env_fn` with `cfg.trainer`; returns a summary dict (see the end)."""
    tcfg = cfg.trainer
    mode = str(tcfg.mode)
    deterministic = bool(tcfg.deterministic)
    if deterministic and mode != "sync":
        raise ConfigError(f"trainer.deterministic=true needs trainer.mode=sync (got '{mode}'); valid choices: sync")
    info = init_distributed(str(tcfg.device))
    setup_logging(info.rank)
    out = Path(output_dir if output_dir is not None else cfg.output_dir)
    ckpt_dir = out / "checkpoints"

    state = None
    if resume is not None:
        state = load_checkpoint(resolve_checkpoint(resume))
    elif info.is_main and latest_checkpoint(ckpt_dir) is not None:
        raise ConfigError(f"{out} already holds a run; continue it with --resume {out} or choose another output_dir")

    if int(tcfg.torch_threads) > 0:
        torch.set_num_threads(int(tcfg.torch_threads))
    seed = int(tcfg.seed)
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    if deterministic:
        torch.use_deterministic_algorithms(True)
    seed_everything(seed)  # same initial weights on every rank (and broadcast below)
    probe = env_fn(0)
    obs_space, action_space = probe.observation_space, probe.action_space
    probe.close()

    actor_critic = ActorCritic(obs_space, action_space, cfg.policy).to(info.device)
    broadcast_module(actor_critic)
    num_envs, num_steps = int(tcfg.num_envs), int(tcfg.num_steps)
    rows_per_rank = num_envs * num_steps
    total_steps = int(tcfg.total_steps)
    total_updates = math.ceil(total_steps / (rows_per_rank * info.world_size))
    ppo = PPO(
        actor_critic, tcfg.ppo, total_updates=total_updates,
        grad_sync=make_grad_sync(info.world_size) if info.is_distributed else None,
        seed=rank_seed(seed, info.rank), max_seq_len=int(tcfg.num_steps),
    )
    seed_everything(rank_seed(seed, info.rank))
    collector = Collector(env_fn, obs_space, action_space, actor_critic, tcfg, seed=seed, rank=info.rank,
                          device=info.device)

    counters = {"env_steps": 0, "updates": 0, "episodes": 0, "worker_restarts": 0}
    if state is not None:
        counters.update(restore_training_state(state, actor_critic, ppo))
        ranks = state.get("ranks") or []
        if info.rank < len(ranks):
            restore_rng_state(ranks[info.rank]["rng"])
            ppo.generator.set_state(ranks[info.rank]["ppo_generator"])
            collector.load_state_dict(ranks[info.rank]["collector"])
        broadcast_module(actor_critic)

    if info.is_main:
        write_text_atomic(out / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    logger = MetricsLogger(out, total_steps, counters["env_steps"], enabled=info.is_main,
                           progress=bool(tcfg.progress_bar))

    pcfg = tcfg.preemption
    done_counter = RolloutDoneCounter()
    checkpoint_interval = int(tcfg.checkpoint_interval)
    log_interval = max(int(tcfg.log_interval), 1)
    recent_returns: deque[float] = deque(maxlen=int(tcfg.return_window))
    pending_episodes: list[dict] = []
    last_saved: Path | None = None

    def save(gather: bool = True) -> Path | None:
        per_rank = {"rng": capture_rng_state(), "ppo_generator": ppo.generator.get_state(),
                    "collector": collector.state_dict()}
        ranks = all_gather_objects(per_rank) if gather else [per_rank]
        if not info.is_main:
            return None
        ckpt = build_checkpoint_state(actor_critic, ppo, to_plain(cfg), obs_space, action_space, counters,
                                      extra={"ranks": ranks})
        path = checkpoint_path(ckpt_dir, counters["env_steps"])
        save_checkpoint(path, ckpt)
        keep_last_checkpoints(ckpt_dir, int(tcfg.checkpoint_keep))
        return path

    interrupted = False
    plan = None
    previous_rollout = None
    start_time = time.monotonic()
    start_steps = counters["env_steps"]
    try:
        with _InterruptFlag() as interrupt:
            if not info.is_distributed:
                collector.interrupt_requested = lambda: interrupt.requested
            while counters["env_steps"] < total_steps:
                k = counters["updates"]
                t_iter = time.monotonic()
                stop_early = None
                if mode != "ver" and info.is_distributed and bool(pcfg.enabled):
                    stop_early = _ddppo_stop_check(done_counter, k, info.world_size, num_steps, pcfg)
                deadline = plan.rollout_time if plan is not None else None
                rollout = collector.collect(ppo.policy_version, deadline_s=deadline, stop_early=stop_early)
                cstats = collector.last_stats
                done_counter.mark_done(k)
                collect_time = time.monotonic() - t_iter

                learn_rollout = rollout
                if mode == "ver" and cstats.preempted and bool(pcfg.fill_from_previous):
                    learn_rollout = fill_from_previous(rollout, previous_rollout, rows_per_rank)
                previous_rollout = rollout
                t_learn = time.monotonic()
                learner_stats = ppo.update(learn_rollout)
                learn_time = time.monotonic() - t_learn

                totals = all_reduce_sum([len(rollout), len(cstats.episodes), cstats.restarts,
                                         float(cstats.preempted), float(interrupt.requested)], info.device)
                counters["env_steps"] += int(totals[0])
                counters["updates"] += 1
                counters["episodes"] += int(totals[1])
                counters["worker_restarts"] += int(totals[2])

                if mode == "ver" and bool(pcfg.enabled) and (info.is_distributed or bool(pcfg.ver_single_rank)):
                    intervals = all_gather_objects(collector.step_intervals.means())
                    plan = optimal_rollout_time(intervals, all_reduce_max(learn_time, info.device), rows_per_rank)
                episodes = [ep for rank_eps in all_gather_objects(cstats.episodes) for ep in rank_eps]
                pending_episodes.extend(episodes)
                recent_returns.extend(ep["return"] for ep in episodes)

                iter_time = time.monotonic() - t_iter
                sps = (counters["env_steps"] - start_steps) / max(time.monotonic() - start_time, 1e-9)
                if counters["updates"] % log_interval == 0 or counters["env_steps"] >= total_steps:
                    metrics = {
                        "perf/sps": totals[0] / max(iter_time, 1e-9),
                        "perf/sps_average": sps,
                        "perf/collect_time": collect_time,
                        "perf/learn_time": learn_time,
                        "perf/inference_time": cstats.inference_time,
                        "perf/env_wait_time": cstats.wait_time,
                        "perf/rollout_rows": len(rollout),
                        "perf/learn_rows": len(learn_rollout),
                        "perf/steps_per_env_min": float(cstats.steps_per_env.min()),
                        "perf/steps_per_env_max": float(cstats.steps_per_env.max()),
                        "perf/carried_in": cstats.carried_in,
                        "perf/carried_out": cstats.carried_out,
                        "perf/batch_size_mean": cstats.batch_size_sum / max(cstats.num_batches, 1),
                        "perf/batch_size_min": cstats.batch_size_min,
                        "perf/batch_size_max": cstats.batch_size_max,
                        "perf/preempted_ranks": totals[3],
                        "perf/worker_restarts": counters["worker_restarts"],
                        "perf/world_size": info.world_size,
                        "metrics/episodes": len(pending_episodes),
                        **learner_stats,
                        **_episode_metrics(pending_episodes),
                    }
                    if plan is not None:
                        metrics["perf/preemption_deadline"] = plan.rollout_time
                    logger.log(counters["updates"], counters["env_steps"], metrics)
                    pending_episodes = []
                logger.progress(counters["env_steps"], sps, float(np.mean(recent_returns)) if recent_returns else None)

                finished = counters["env_steps"] >= total_steps
                if checkpoint_interval > 0 and (counters["updates"] % checkpoint_interval == 0 or finished):
                    last_saved = save() or last_saved
                    if deterministic and not finished:
                        collector.reset_episodes()  # the resumed run starts from exactly these envs
                if totals[4] > 0:  # some rank was interrupted: every rank stops here together
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        interrupted = True
        log.warning("interrupted: writing a checkpoint of the last completed update")
        last_saved = save(gather=False) or last_saved
    finally:
        collector.close()
        logger.close()
        torch.use_deterministic_algorithms(was_deterministic)

    checksums = all_gather_objects(parameter_checksum(actor_critic)) if not interrupted else [
        parameter_checksum(actor_critic)]
    summary = {
        "env_steps": counters["env_steps"],
        "updates": counters["updates"],
        "episodes": counters["episodes"],
        "worker_restarts": counters["worker_restarts"],
        "mean_return": float(np.mean(recent_returns)) if recent_returns else None,
        "wall_time_s": time.monotonic() - start_time,
        "sps": (counters["env_steps"] - start_steps) / max(time.monotonic() - start_time, 1e-9),
        "interrupted": interrupted,
        "world_size": info.world_size,
        "param_checksums": checksums,
        "checkpoint": str(last_saved) if last_saved else None,
        "output_dir": str(out),
    }
    if info.is_main:
        write_text_atomic(out / "summary.json", json.dumps(summary, indent=2))
    return summary
