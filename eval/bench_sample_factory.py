"""Sample Factory (APPO, the AsyncOnRL peer) on our env, for `bench-ver`'s `sample_factory` row.

Sample Factory 2.1.1 needs numpy < 2 and gymnasium < 1.0, so it runs in its own virtual environment,
created on first use (`sample_factory.venv` in configs/bench_ver.yaml, default `.bench/sf-venv`):
torch first (the CPU wheel), then sample-factory with numpy<2 and gymnasium<1.0, then the few packages
our env needs (mujoco, hydra-core, omegaconf, scipy). The project itself is not installed there: the
run puts the repository root on PYTHONPATH, and our env (Gymnasium 1.x API, which 0.29 shares for
reset/step) is built by train-skill's own factory inside SF's rollout workers.

Two halves, one file:
* host side (our venv): `run_sample_factory(...)` makes sure the venv exists, writes a spec, runs
  `<venv>/bin/python -m eval.bench_sample_factory --run SPEC` and turns its result into a table row
  (or `{"status": "not run: <reason>"}` when the venv cannot be built or SF fails);
* SF side (`--run`): registers the env with SF, sets up the same N envs in the same worker layout
  (N / K processes of K envs), rollout T, PPO batch T x N in the same number of mini-batches and
  epochs, a network built from our policy config (`sf_model_arguments`), runs SF for the step (and
  time) budget and records the learner's env-step counter after every training iteration (its
  per-iteration steps/s, like our per-rollout steps/s).

The env is the one our modes step: the workload's skill and sim config as composed for the profile
(the cpu profile's 16x16 ray-cast head depth included), timed by `TimedEnv`, with the
`prev_action` observation when the policy has it, images moved to channels-first for SF.
"""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from eval.metrics import write_json_atomic
from trainer import bench_venv
from trainer.bench_venv import last_line as _last_line
from trainer.bench_venv import repo_root as _repo_root

SampleFactoryUnavailable = bench_venv.VenvUnavailable  # the SF venv could not be built or checked
SF_IMPORT_CHECK = ("import sample_factory, faster_fifo, mujoco, hydra, scipy, numpy, gymnasium, torch; "
                   "assert int(numpy.__version__.split('.')[0]) < 2, numpy.__version__")


# ----------------------------------------------------------------------------- host side


def ensure_venv(sf_cfg: Mapping[str, Any], root: Path | None = None) -> Path:
    """The SF venv's python, building the venv on first use; SampleFactoryUnavailable(reason) if impossible."""
    venv = (root or _repo_root()) / str(sf_cfg["venv"])
    return bench_venv.ensure_venv(venv, sf_cfg["requirements"], check=SF_IMPORT_CHECK, label="sample_factory",
                                  python=sf_cfg.get("python"), install_timeout_s=float(sf_cfg["install_timeout_s"]))


def sf_model_arguments(sf_cfg: Mapping[str, Any], policy: Mapping[str, Any]) -> tuple[list[str], dict | None, str]:
    """SF flags for a network like `policy`, the conv spec of SF's image encoder (None: SF's own), a description.

    Feed-forward policies: no RNN core; the vector observations go unchanged next to the image
    features into separate actor and critic MLPs (`policy.feedforward`). Recurrent ones: the vector
    MLP and an LSTM of `policy.rnn`, shared by actor and critic. Images: our `cnn_small` layers
    (ReLU) when that is the policy's encoder, else SF's `conv_architecture`.
    """
    visual = policy.get("visual", {})
    conv = None
    if visual.get("encoder") == "cnn_small":
        conv = {k: [int(v) for v in visual[k]] for k in ("channels", "kernels", "strides")}
        conv["out_dim"] = int(visual["out_dim"])
        image = f"conv {'-'.join(map(str, conv['channels']))} (ours: cnn_small) -> {conv['out_dim']}"
        image_flags = []
    else:
        image = f"SF {sf_cfg['conv_architecture']} (ours: {visual.get('encoder')})"
        image_flags = [f"--encoder_conv_architecture={sf_cfg['conv_architecture']}",
                       "--encoder_conv_mlp_layers", str(int(visual.get("out_dim", 512)))]
    action = policy.get("action", {})
    flags = [*image_flags, f"--normalize_input={bool(policy.get('obs_norm', False))}",
             "--adaptive_stddev=False", f"--initial_stddev={math.exp(float(action.get('log_std_init', 0.0))):.6g}"]
    if str(policy.get("architecture", "recurrent")) == "feedforward":
        ff = policy["feedforward"]
        layers = [str(int(v)) for v in ff["actor"]]
        flags += ["--use_rnn=False", "--actor_critic_share_weights=False", f"--nonlinearity={ff['activation']}",
                  "--encoder_mlp_layers", "--decoder_mlp_layers", *layers]
        core = f"no RNN, separate actor and critic MLPs {'x'.join(layers)} ({ff['activation']})"
    else:
        rnn = policy["rnn"]
        flags += ["--use_rnn=True", f"--rnn_type={sf_cfg['rnn_type']}", f"--rnn_num_layers={int(rnn['num_layers'])}",
                  f"--rnn_size={int(rnn['hidden_size'])}", "--nonlinearity=relu",
                  "--encoder_mlp_layers", *[str(int(v)) for v in policy["vector_mlp"]], "--decoder_mlp_layers"]
        core = f"{int(rnn['num_layers'])}-layer {sf_cfg['rnn_type'].upper()}({int(rnn['hidden_size'])}), shared"
    return flags, conv, f"images: {image}; {core}"


def sf_arguments(sf_cfg: Mapping[str, Any], trainer: Mapping[str, Any], policy: Mapping[str, Any], *,
                 total_steps: int, train_dir: str, max_seconds: float | None = None) -> list[str]:
    """SF command-line flags for the same process layout, batch geometry, PPO settings and network as ours."""
    num_envs, num_steps, ppo = int(trainer["num_envs"]), int(trainer["num_steps"]), trainer["ppo"]
    per_worker = int(sf_cfg.get("envs_per_worker") or trainer.get("envs_per_worker", 1))
    if num_envs % per_worker:
        raise ValueError(f"N = {num_envs} envs is not a multiple of {per_worker} envs per worker "
                         "(Sample Factory's workers all hold the same number of envs)")
    mini_batches = int(ppo["num_mini_batch"])
    rows = num_envs * num_steps
    # SF's learner cuts mini-batches into sequences of `recurrence` steps; a feed-forward one samples rows
    recurrence = 1 if str(policy.get("architecture", "recurrent")) == "feedforward" else num_steps
    if rows % mini_batches or (rows // mini_batches) % recurrence:
        raise ValueError(f"T x N = {rows} rows do not split into {mini_batches} SF mini-batches of whole "
                         f"rollouts of T = {num_steps} (SF needs batch_size divisible by the recurrence)")
    entropy = ppo["entropy"]
    model_flags, _, _ = sf_model_arguments(sf_cfg, policy)
    budget = [f"--train_for_seconds={max(int(max_seconds), 1)}"] if max_seconds else []
    return [
        "--env=bench_env", "--experiment=bench", f"--train_dir={train_dir}", "--device=cpu",
        "--restart_behavior=overwrite", f"--seed={int(trainer['seed'])}", "--algo=APPO", "--async_rl=True",
        f"--num_workers={num_envs // per_worker}", f"--num_envs_per_worker={per_worker}",
        f"--worker_num_splits={int(sf_cfg['worker_num_splits'])}", "--policy_workers_per_policy=1",
        f"--rollout={num_steps}", f"--recurrence={recurrence}",
        f"--batch_size={rows // mini_batches}", f"--num_batches_per_epoch={mini_batches}",
        f"--num_epochs={int(ppo['ppo_epoch'])}", f"--train_for_env_steps={total_steps}", *budget,
        f"--gamma={ppo['gamma']}", f"--gae_lambda={ppo['gae_lambda']}", f"--ppo_clip_ratio={ppo['clip_param']}",
        f"--value_loss_coeff={ppo['value_loss_coef']}", f"--max_grad_norm={ppo['max_grad_norm']}",
        f"--learning_rate={ppo['lr']}", f"--adam_eps={ppo['eps']}", f"--exploration_loss_coeff={entropy['coef']}",
        f"--normalize_returns={bool(ppo.get('normalize_value', False))}", "--with_vtrace=False",
        "--save_every_sec=1000000", "--save_best_every_sec=1000000", "--keep_checkpoints=1",
        "--experiment_summaries_interval=1000000", "--with_wandb=False", "--decorrelate_envs_on_one_worker=False",
        *model_flags,
    ]


def sf_setup(workload: Mapping[str, Any], sf_cfg: Mapping[str, Any], trainer: Mapping[str, Any],
             policy: Mapping[str, Any]) -> str:
    """One line for the report: the env and network Sample Factory runs with (compared to ours)."""
    env = f"same env as ours ({workload['name']}"
    if workload["kind"] == "skill":
        head = workload["sim_cfg"]["camera"]["head"]
        env += f", head depth {head['width']}x{head['height']} {head.get('backend', 'render')}"
    env += ", prev_action obs)" if policy.get("prev_action", False) else ")"
    k = int(sf_cfg.get("envs_per_worker") or trainer.get("envs_per_worker", 1))
    _, _, net = sf_model_arguments(sf_cfg, policy)
    return f"{env}; {int(trainer['num_envs']) // max(k, 1)} workers x {k} envs, T={trainer['num_steps']}; {net}"


def run_sample_factory(workload: Mapping[str, Any], cfg: Any, steps: int, warmup: int, common: Mapping[str, Any],
                       run_dir: Path) -> dict[str, Any]:
    """Measure Sample Factory on `workload`; a bench-ver row, or {"status": "not run: <reason>"}.

    Either way the row's `setup` says what SF runs on (env, layout, network).
    """
    from omegaconf import OmegaConf

    from eval.bench_ver_analyse import sim_stats

    plain = OmegaConf.to_container(cfg, resolve=True)
    sf_cfg, trainer, policy = plain["sample_factory"], plain["trainer"], plain["policy"]
    num_envs = int(trainer["num_envs"])
    max_seconds = common.get("max_seconds")
    setup = sf_setup(workload, sf_cfg, trainer, policy)
    try:
        args = sf_arguments(sf_cfg, trainer, policy, total_steps=steps, max_seconds=max_seconds,
                            train_dir=str((run_dir / "sf_train").resolve()))
        python = ensure_venv(sf_cfg)
    except (SampleFactoryUnavailable, ValueError) as exc:
        return {"status": f"not run: {exc}", "setup": setup}
    run_dir.mkdir(parents=True, exist_ok=True)
    result_path = run_dir / "result.json"
    if result_path.exists():
        result_path.unlink()
    timeout = float(plain["bench"]["run_timeout_s"])
    if max_seconds:
        timeout = min(timeout, 1.5 * float(max_seconds) + 120.0)
    spec = {"workload": dict(workload), "num_envs": num_envs, "num_steps": int(trainer["num_steps"]),
            "warmup": warmup, "slow": list(common["slow"]), "slow_factor": float(common["slow_factor"]),
            "prev_action": bool(policy.get("prev_action", False)), "obs_norm": bool(policy.get("obs_norm", False)),
            "conv": sf_model_arguments(sf_cfg, policy)[1], "args": args,
            "counters_path": str((run_dir / "sim_counters.f64").resolve()), "result_path": str(result_path.resolve()),
            "timeout_s": timeout}
    spec_path = run_dir / "spec.json"
    write_json_atomic(spec_path, spec)
    env = {**os.environ, "PYTHONPATH": str(_repo_root()), "PYTHONNOUSERSITE": "1"}  # MUJOCO_GL: as bench_ver_run
    log_path = run_dir / "log.txt"
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            proc = subprocess.run([str(python), "-m", "eval.bench_sample_factory", "--run", str(spec_path)],
                                  stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(_repo_root()),
                                  timeout=timeout + 120)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    if code == 130:
        raise KeyboardInterrupt
    if code != 0 or not result_path.exists():
        why = "timed out" if code is None else f"exit code {code}"
        text = log_path.read_text(encoding="utf-8", errors="replace")
        return {"status": f"not run: Sample Factory {why}: {_last_line(text)} (log: {log_path})", "setup": setup}
    result = json.loads(result_path.read_text(encoding="utf-8"))
    if "status" in result:
        return {"status": result["status"], "setup": setup}
    return {
        "status": "ok",
        "mean_sps": result["measured_steps"] / max(result["measured_seconds"], 1e-9),
        "max_sps": max(result["iteration_sps"][warmup:]),
        "rollout_sps": result["iteration_sps"],
        "measured_steps": result["measured_steps"],
        "measured_seconds": result["measured_seconds"],
        "time_s": result["time_s"],
        "sim": sim_stats(result["sim"], result["measured_seconds"], num_envs),
        "ranks": 1,
        "setup": setup,
        "sf_profiles": result["profiles"],
    }


# ----------------------------------------------------------------------------- SF side (runs in the SF venv)


class ChannelsFirst(gym.ObservationWrapper):
    """SF's conv encoder reads (C, H, W) images; ours are (H, W, C). Box actions are clipped to the box."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        spaces = env.observation_space.spaces if isinstance(env.observation_space, gym.spaces.Dict) else {}
        self._images = [k for k, s in spaces.items() if len(s.shape) == 3]
        if self._images:
            self.observation_space = gym.spaces.Dict({
                k: (gym.spaces.Box(np.moveaxis(s.low, -1, 0), np.moveaxis(s.high, -1, 0), dtype=s.dtype)
                    if k in self._images else s) for k, s in spaces.items()})

    def observation(self, obs):
        if not self._images:
            return obs
        return {k: (np.ascontiguousarray(np.moveaxis(v, -1, 0)) if k in self._images else v) for k, v in obs.items()}

    def step(self, action):
        if isinstance(self.action_space, gym.spaces.Box):
            action = np.clip(action, self.action_space.low, self.action_space.high)
        return super().step(action)


def sf_make_env(full_env_name: str, cfg: Any = None, env_config: Any = None, render_mode: str | None = None, *,
                spec: Mapping[str, Any]) -> gym.Env:
    """SF's env factory (picklable through functools.partial): the benchmark's timed (and slowed) env,
    with the previous action observed when our policy observes it (as `trainer.train` wraps it)."""
    from eval.bench_ver_run import NUM_COUNTERS, base_env_fn, make_bench_env

    n = int(spec["num_envs"])
    index = int(env_config["env_id"]) if env_config is not None else 0
    counters = np.memmap(spec["counters_path"], dtype=np.float64, mode="r+", shape=(n, NUM_COUNTERS))
    env = make_bench_env(index % n, base_fn=base_env_fn(spec["workload"]), counters=counters,
                         slow=tuple(spec["slow"]), slow_factor=float(spec["slow_factor"]))
    if spec.get("prev_action"):
        from trainer.wrappers import PreviousAction

        env = PreviousAction(env)
    return ChannelsFirst(env)


def sf_make_encoder(cfg: Any, obs_space: Any, *, conv: Mapping[str, Any]) -> Any:
    """SF's encoder factory (picklable through functools.partial): our `cnn_small` layers for images.

    Like SF's MultiInputEncoder (keys in sorted order, features concatenated), but an image key gets
    SF's ConvEncoderImpl with `conv`'s channels, kernels and strides (ReLU) and a ReLU layer of
    `out_dim`, as `trainer.encoders.SmallCNN`; vector keys get SF's MlpEncoder (`encoder_mlp_layers`).
    """
    from sample_factory.algo.utils.torch_utils import calc_num_elements
    from sample_factory.model.encoder import ConvEncoderImpl, Encoder, MlpEncoder
    from torch import cat, nn

    class ImageEncoder(Encoder):
        def __init__(self, space: Any) -> None:
            super().__init__(cfg)
            layers, prev = [], int(space.shape[0])
            for ch, k, s in zip(conv["channels"], conv["kernels"], conv["strides"], strict=True):
                layers.append([prev, int(ch), int(k), int(s)])
                prev = int(ch)
            self.enc = ConvEncoderImpl(space.shape, layers, [int(conv["out_dim"])], nn.ReLU())
            self.out_size = calc_num_elements(self.enc, space.shape)

        def forward(self, obs):
            return self.enc(obs)

        def get_out_size(self) -> int:
            return self.out_size

    class BenchEncoder(Encoder):
        def __init__(self) -> None:
            super().__init__(cfg)
            self.obs_keys = sorted(obs_space.keys())
            self.encoders = nn.ModuleDict({
                k: ImageEncoder(obs_space[k]) if len(obs_space[k].shape) > 1 else MlpEncoder(cfg, obs_space[k])
                for k in self.obs_keys})
            self.out_size = sum(e.get_out_size() for e in self.encoders.values())

        def forward(self, obs_dict):
            return cat([self.encoders[k](obs_dict[k]) for k in self.obs_keys], 1)

        def get_out_size(self) -> int:
            return self.out_size

    return BenchEncoder()


def sf_main(spec_path: str) -> None:
    """Run SF on the spec's workload and write per-iteration throughput, timings and sim counters."""
    import time

    from sample_factory.algo.utils.context import global_model_factory
    from sample_factory.algo.utils.misc import LEARNER_ENV_STEPS
    from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
    from sample_factory.envs.env_utils import register_env
    from sample_factory.train import make_runner

    from eval.bench_ver_run import NUM_COUNTERS, counter_totals

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    n, warmup = int(spec["num_envs"]), int(spec["warmup"])
    counters = np.memmap(spec["counters_path"], dtype=np.float64, mode="w+", shape=(n, NUM_COUNTERS))
    counters[:] = 0.0
    counters.flush()
    register_env("bench_env", functools.partial(sf_make_env, spec=spec))
    if spec.get("conv"):
        global_model_factory().register_encoder_factory(functools.partial(sf_make_encoder, conv=spec["conv"]))
    args = list(spec["args"])
    if spec.get("obs_norm"):  # ours normalises the vector observations only, never images
        probe = sf_make_env("bench_env", spec=spec)
        args += ["--normalize_input_keys", *sorted(k for k, s in probe.observation_space.spaces.items()
                                                   if len(s.shape) == 1)]
        probe.close()
    parser, _ = parse_sf_args(argv=args)
    cfg = parse_full_cfg(parser, args)
    cfg, runner = make_runner(cfg)

    marks: list[tuple[float, int]] = []  # (time, learner env steps) after every training iteration
    snapshot: dict[str, np.ndarray] = {}

    def on_learner_steps(_runner, msg, _policy_id) -> None:
        marks.append((time.monotonic(), int(msg[LEARNER_ENV_STEPS])))
        if len(marks) == warmup + 1:  # marks[0] is the learner's initial report (0 steps)
            snapshot["counters"] = np.array(counters)

    runner.policy_msg_handlers[LEARNER_ENV_STEPS].append(on_learner_steps)
    status = runner.init()
    if status == 0:
        status = runner.run()
    if len(marks) <= warmup + 1:
        write_json_atomic(Path(spec["result_path"]), {"status": f"not run: Sample Factory finished with status "
                                                       f"{status} after {max(len(marks) - 1, 0)} training iterations"})
        return
    iteration_sps = [(s1 - s0) / max(t1 - t0, 1e-9) for (t0, s0), (t1, s1) in zip(marks[1:], marks[2:], strict=False)]
    # the first iteration's rate counts from the learner's initial report (includes env start-up)
    iteration_sps.insert(0, marks[1][1] / max(marks[1][0] - marks[0][0], 1e-9))
    t_w, s_w = marks[warmup]
    t_end, s_end = marks[-1]
    final = np.array(counters)
    delta = final - snapshot.get("counters", np.zeros_like(final))
    components = runner.component_profiles  # a dict while running, a sorted list of pairs after the run
    components = list(components.items()) if isinstance(components, Mapping) else list(components)
    profiles = {str(name): str(timing) for name, timing in components}

    def seconds(component: str, key: str) -> float:
        """A timer of SF's component profiles, summed over the components whose name contains `component`."""
        total = 0.0
        for name, timing in components:
            label = f"{name} {getattr(timing, 'name', '')}".lower()
            if component in label and key in timing:
                value = timing[key]
                total += float(getattr(value, "value", value))
        return total

    # SF's own profiles cover the whole run (warm-up included): the learner's "train", the inference
    # worker's "handle_policy_step" (batching, forward, sending) and "wait_policy_total" (waiting for
    # requests); scaled to the measured window by its share of SF's main loop time.
    main_loop = float(runner.timing.get("main_loop", 0.0)) or (t_end - marks[0][0])
    share = min((t_end - t_w) / max(main_loop, 1e-9), 1.0)
    whole = {"learning": seconds("learner", "train"), "inference": seconds("inference", "handle_policy_step"),
             "waiting": seconds("inference", "wait_policy_total")}
    time_s = {k: v * share for k, v in whole.items()}
    write_json_atomic(Path(spec["result_path"]), {
        "iteration_sps": iteration_sps,
        "measured_steps": s_end - s_w,
        "measured_seconds": t_end - t_w,
        "time_s": time_s,
        "time_s_whole_run": {**whole, "main_loop": main_loop},
        "profiles": profiles,
        "sim": counter_totals(delta, from_warmup_snapshot="counters" in snapshot),
    })


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--run":
        # run the module's own sf_main (not __main__'s copy), so the env factory SF pickles is importable
        from eval import bench_sample_factory

        bench_sample_factory.sf_main(sys.argv[2])
    else:
        print("usage: python -m eval.bench_sample_factory --run SPEC.json (started by bench-ver)", file=sys.stderr)
        raise SystemExit(2)
