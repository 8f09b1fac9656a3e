"""`bench-ver`: training throughput of VER vs NoVER vs sync (DD-PPO) vs Sample Factory, side by side.

    bench-ver --skill pick --profile cpu --steps 20000
    bench-ver --skill pick --modes raw,sync,ver --slow-envs 2 --slow-factor 4 --ranks 1,2 --out DIR

One invocation measures, on one machine and one workload, the config train-skill would train with:
the same profile resolution (`--profile auto`: paper with CUDA, else cpu; `skills.train_cli.
resolve_profile`), so the same sim (cpu: 16x16 ray-cast head depth), policy (cpu: feed-forward
`skill_cpu`), N envs per rank in worker processes of K envs, T and PPO settings:

* `raw`: the simulator's upper bound for that process layout: the trainer's own worker pool and
  shared-memory transfer buffers, random actions, no policy and no learning;
* `sync`, `nover`, `ver`: end-to-end training (collection + PPO) with `trainer.train.train`; only
  `trainer.mode` differs;
* `sample_factory`: the AsyncOnRL peer on the same env (eval/bench_sample_factory.py);
* optionally the scaling mode (VER) at several torchrun rank counts (gloo on CPU).

Like the VER paper's Table 1, "mean" is steps/s over the run after the warm-up rollouts and "max" the
best single rollout; every mode is also reported as a ratio to raw simulation. Output: a printed
table, `bench_ver.json` and `bench_ver.png` under `--out`.

Layout: this module is the command line (options, config composition, the measuring loop);
`eval.bench_ver_run` measures one mode in its own process tree, `eval.bench_ver_analyse` turns
results into rows and ratios, `eval.bench_ver_report` prints and writes them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from configs.compose import ConfigError, compose, exit_with_error, require_choice, to_plain
from eval.bench_ver_analyse import (
    MODES,
    TRAIN_MODES,
    add_over_raw,
    analyse,
    combine_repeats,
    goals,
    ratios,
    scaling_rows,
)
from eval.bench_ver_report import format_table, machine_description, write_report
from eval.bench_ver_run import launch, slow_env_indices

EPILOG = """\
modes: raw (random actions, no learning: the upper bound for the same envs and worker processes),
       sync (DD-PPO lock-step), nover, ver,
       ver_overlap (VER with trainer.overlap_learning: the update runs during the next collection;
       every other mode runs with it off, whatever the profile says),
       sample_factory (runs in its own venv, created on first use under .bench/sf-venv)

examples:
  bench-ver --skill pick                                 # profile auto: cpu without CUDA, paper with
  bench-ver --skill pick --profile cpu --repeats 1 --steps 20000 --max-seconds 100   # bounded time
  bench-ver --skill open_fridge --profile paper          # the paper's N=16, T=128, 128x128 depth
  bench-ver --skill pick --modes raw,sync,ver --slow-envs 2 --slow-factor 4   # straggler effect
  bench-ver --skill pick --envs-per-worker 1             # one env per worker process
  bench-ver --modes ver --ranks 1,2                      # 1 vs 2 torchrun ranks (gloo on CPU)
  bench-ver --skill pick trainer.ppo.ppo_epoch=2         # Hydra overrides apply to every mode

Steps/s: mean over the run after the warm-up rollouts, max over single rollouts (raw: windows of
T x N steps). Ratios use the means. Exit codes: 0 done, 2 bad input, 1 a mode failed.
"""


# ----------------------------------------------------------------------------- command line


def build_parser(bench: Mapping[str, Any]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench-ver", description="Throughput benchmark: raw simulation vs sync (DD-PPO) vs NoVER vs VER "
        "vs Sample Factory, measured side by side in one run, on train-skill's config.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--skill", default=bench["skill"],
                   help=f"workload: {', '.join(workload_names(bench))} (default: %(default)s)")
    p.add_argument("--profile", default=None,
                   help=f"training profile, as train-skill's profile=: auto, cpu, paper (default: {bench['profile']}; "
                   "auto = paper with CUDA, else cpu)")
    p.add_argument("--num-envs", type=int, default=bench["num_envs"],
                   help="N envs per rank (default: the profile's trainer.num_envs)")
    p.add_argument("--envs-per-worker", type=int, default=bench["envs_per_worker"], metavar="K",
                   help="envs per worker process (default: the profile's trainer.envs_per_worker)")
    p.add_argument("--num-steps", type=int, default=bench["num_steps"],
                   help="T, rollout length per env; a rollout is T x N steps (default: the profile's)")
    p.add_argument("--steps", type=int, default=bench["steps"],
                   help="env steps per mode and rank, warm-up included, rounded down to whole rollouts "
                   "(%(default)s)")
    p.add_argument("--max-seconds", type=float, default=bench["max_seconds"], metavar="S",
                   help="time budget of each mode's run (per repeat and rank count): it stops after S s and "
                   "reports the rollouts it finished (default: "
                   + ("no limit)" if bench["max_seconds"] is None else "%(default)s)"))
    p.add_argument("--warmup-updates", type=int, default=bench["warmup_updates"],
                   help="rollouts left out of the mean (%(default)s)")
    p.add_argument("--modes", default=",".join(bench["modes"]), help=f"comma list of {', '.join(MODES)} "
                   "(default: %(default)s)")
    p.add_argument("--slow-envs", type=int, default=bench["slow_envs"], metavar="K",
                   help="make K of the N envs slower (%(default)s)")
    p.add_argument("--slow-factor", type=float, default=bench["slow_factor"], metavar="F",
                   help="step-time factor of the slow envs (%(default)s)")
    p.add_argument("--ranks", default=",".join(str(r) for r in bench["ranks"]),
                   help=f"comma list of torchrun rank counts for the {bench['scaling_mode']} scaling rows "
                   "(default: %(default)s)")
    p.add_argument("--repeats", type=int, default=bench["repeats"],
                   help="measure every mode this many times, round-robin; the table shows mean +- std "
                   "(%(default)s)")
    p.add_argument("--out", default=bench["out"], metavar="DIR", help="output directory (%(default)s)")
    p.add_argument("overrides", nargs="*", help="Hydra overrides applied to every mode, key=value")
    return p


def workload_names(bench: Mapping[str, Any]) -> tuple[str, ...]:
    from rearrange.tasks.skill_tasks import SKILL_NAMES

    return (*SKILL_NAMES, *bench["cheap_workloads"].keys())


def parse_choices(text: str, choices: Sequence[str], what: str) -> list[str]:
    """A comma list of names, each one of `choices` (exit 2 naming the valid choices otherwise)."""
    items = [s.strip() for s in str(text).split(",") if s.strip()]
    if not items:
        exit_with_error(f"no {what} given; valid choices: {', '.join(choices)}")
    for item in items:
        require_choice(what, item, choices)
    return list(dict.fromkeys(items))


def parse_ranks(text: str) -> list[int]:
    try:
        ranks = sorted({int(s) for s in str(text).split(",") if s.strip()})
    except ValueError:
        exit_with_error(f"--ranks must be a comma list of positive integers, e.g. 1,2 (got '{text}')")
    if not ranks or ranks[0] < 1:
        exit_with_error(f"--ranks must be a comma list of positive integers, e.g. 1,2 (got '{text}')")
    return ranks


# ----------------------------------------------------------------------------- configs


def base_config() -> DictConfig:
    return compose("bench_ver")


def profile_overrides(profile: str | None, overrides: Sequence[str], default: str) -> list[str]:
    """The overrides with one definite `profile=cpu|paper`, resolved as train-skill resolves it.

    `--profile` and a `profile=` override are the same switch; given both, they must agree.
    """
    from skills.train_cli import resolve_profile

    given = [o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0] == "profile"]
    if profile is not None and given and given[-1] != profile:
        raise ConfigError(f"--profile {profile} and the override profile={given[-1]} disagree; give one")
    if not given:
        overrides = [*overrides, f"profile={profile or default}"]
    return resolve_profile(list(overrides))


def mode_config(skill: str, mode: str, overrides: Sequence[str], bench: Mapping[str, Any],
                output_dir: str) -> DictConfig:
    """The full training config of one mode: bench_ver.yaml (= train_skill.yaml) + profile + overrides.

    The benchmark's own settings (bench.workload_overrides, a cheap workload's policy) come first, so
    the command line's overrides win.
    """
    cheap = bench["cheap_workloads"].get(skill)
    if cheap is None:
        group = [f"skill={skill}", *bench["workload_overrides"].get(skill, [])]
    else:
        group = [f"policy={cheap['policy']}"]
    trainer_mode = "ver" if mode == "ver_overlap" else mode
    cfg = compose("bench_ver", [*group, f"trainer={trainer_mode}", *overrides])
    cfg.trainer.mode = trainer_mode
    cfg.trainer.overlap_learning = mode == "ver_overlap"  # the mode says; profiles may default either way
    cfg.trainer.checkpoint_interval = 0  # the benchmark measures training, not checkpoint writing
    cfg.trainer.progress_bar = False
    cfg.trainer.log_interval = 1  # one metrics line per rollout: per-rollout steps/s (the max column)
    cfg.output_dir = output_dir
    return cfg


def set_layout(cfg: DictConfig, num_envs: int | None, envs_per_worker: int | None, num_steps: int | None) -> None:
    """The command line's N, K and T over the profile's (None keeps the profile's value)."""
    for key, value in (("num_envs", num_envs), ("envs_per_worker", envs_per_worker), ("num_steps", num_steps)):
        if value is not None:
            cfg.trainer[key] = int(value)


def prepare_workload(skill: str, cfg: DictConfig, bench: Mapping[str, Any]) -> dict[str, Any]:
    """Plain (JSON) description of the env every mode builds: skill env on a cached dataset, or a gym id."""
    cheap = bench["cheap_workloads"].get(skill)
    if cheap is not None:
        return {"kind": "gym", "name": skill, "env_id": str(cheap["env_id"])}
    from skills.train_cli import prepare_dataset

    episodes = prepare_dataset(cfg, Path(str(bench["cache_dir"])))
    return {"kind": "skill", "name": skill, "skill_cfg": to_plain(cfg.skill), "sim_cfg": to_plain(cfg.sim),
            "episodes_path": str(Path(episodes).resolve())}


def describe_config(cfg: DictConfig, skill_env: bool) -> dict[str, Any]:
    """What the report header says about the composed config (profile, layout, depth, policy)."""
    t, policy = cfg.trainer, cfg.policy
    head = cfg.sim.camera.head if skill_env else None
    visual = policy.visual.encoder if skill_env else None  # gym workloads have no images
    return {
        "profile": str(cfg.get("profile", "none")),
        "num_envs": int(t.num_envs),
        "envs_per_worker": int(t.get("envs_per_worker", 1)),
        "num_workers": -(-int(t.num_envs) // int(t.get("envs_per_worker", 1))),
        "num_steps": int(t.num_steps),
        "head_depth": f"{head.width}x{head.height} {head.get('backend', 'render')}" if head is not None else None,
        "policy_name": f"{policy.architecture}" + (f" + {visual}" if visual else "")
                       + (" + prev_action" if policy.get("prev_action", False) else ""),
    }


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        bench = to_plain(base_config())["bench"]
    except ConfigError as exc:
        exit_with_error(str(exc))
    args = build_parser(bench).parse_args(argv)
    skill = args.skill
    names = workload_names(bench)
    require_choice("skill", skill, names)
    modes = parse_choices(args.modes, MODES, "mode")
    rank_counts = parse_ranks(args.ranks)
    for flag, value in (("--num-envs", args.num_envs), ("--envs-per-worker", args.envs_per_worker),
                        ("--num-steps", args.num_steps)):
        if value is not None and value < 1:
            exit_with_error(f"{flag} must be >= 1 (got {value})")
    warmup = args.warmup_updates
    if warmup < 0:
        exit_with_error(f"--warmup-updates must be >= 0 (got {warmup})")
    if args.repeats < 1:
        exit_with_error(f"--repeats must be >= 1 (got {args.repeats})")
    if args.max_seconds is not None and args.max_seconds <= 0:
        exit_with_error(f"--max-seconds must be > 0 (got {args.max_seconds:g})")
    if args.slow_factor < 1.0:
        exit_with_error(f"--slow-factor must be >= 1 (got {args.slow_factor})")
    out = Path(args.out)
    scaling_mode = str(bench["scaling_mode"])
    try:
        overrides = profile_overrides(args.profile, args.overrides, str(bench["profile"]))
        bench = to_plain(compose("bench_ver", overrides))["bench"]  # with the overrides of bench.* keys
        cfgs = {m: mode_config(skill, m if m in TRAIN_MODES else "ver", overrides, bench,
                               str(out / "runs" / m / "train")) for m in [*modes, scaling_mode]}
    except ConfigError as exc:
        exit_with_error(str(exc))
    for cfg in cfgs.values():
        set_layout(cfg, args.num_envs, args.envs_per_worker, args.num_steps)
    layout = describe_config(cfgs[modes[0]], skill_env=skill not in bench["cheap_workloads"])
    n, t_len = layout["num_envs"], layout["num_steps"]
    if not 0 <= args.slow_envs <= n:
        exit_with_error(f"--slow-envs must be between 0 and --num-envs ({n}), got {args.slow_envs}")
    rollouts = args.steps // (n * t_len)
    if rollouts < warmup + 1:
        exit_with_error(f"--steps {args.steps} gives {rollouts} rollouts of T x N = {t_len * n} steps; need at "
                        f"least {warmup + 1} (warm-up {warmup} + 1): raise --steps to {(warmup + 1) * n * t_len}")
    steps = rollouts * n * t_len  # whole rollouts, the same for every mode
    print(f"bench-ver: {skill}, profile {layout['profile']}, N={n} (K={layout['envs_per_worker']} per worker), "
          f"T={t_len}, {steps} steps per mode ({rollouts} rollouts, {warmup} warm-up)"
          + (f", at most {args.max_seconds:g} s per mode" if args.max_seconds else "")
          + f", modes {','.join(modes)}, ranks {','.join(map(str, rank_counts))}", file=sys.stderr)
    workload = prepare_workload(skill, cfgs[modes[0]], bench)
    spec_common = {"workload": workload, "slow": slow_env_indices(n, args.slow_envs),
                   "slow_factor": args.slow_factor, "warmup_updates": warmup, "max_seconds": args.max_seconds}
    timeout = float(bench["run_timeout_s"])
    if args.max_seconds:  # a graceful stop that fails is killed soon after
        timeout = min(timeout, 1.5 * args.max_seconds + 120.0)

    def measure(mode: str, ranks: int, tag: str) -> dict[str, Any]:
        cfg = cfgs[mode].copy()
        cfg.trainer.total_steps = steps * ranks
        kind = "raw" if mode == "raw" else "train"
        spec = {**spec_common, "kind": kind, "mode": mode, "cfg": to_plain(cfg)}
        t0 = time.monotonic()
        print(f"  {tag} ...", end="", file=sys.stderr, flush=True)
        result = launch(spec, ranks, out / "runs" / tag, timeout)
        try:
            row = analyse(result, warmup, n)
        except (ValueError, KeyError) as exc:
            row = {"status": f"failed: {exc}"}
        msg = f"{row['mean_sps']:.1f} steps/s" if row.get("status") == "ok" else row["status"]
        print(f" {msg} ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
        return row

    def measure_sample_factory(tag: str) -> dict[str, Any]:
        from eval.bench_sample_factory import run_sample_factory

        t0 = time.monotonic()
        row = run_sample_factory(workload, cfgs["sample_factory"], steps, warmup, spec_common, out / "runs" / tag)
        msg = f"{row['mean_sps']:.1f} steps/s" if row.get("status") == "ok" else row["status"]
        print(f"  {tag} ... {msg} ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
        return row

    report: dict[str, Any] = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "command": "bench-ver " + " ".join(argv),
        "machine": machine_description(),
        "config": {"skill": skill, **layout, "steps_per_mode": steps, "max_seconds": args.max_seconds,
                   "warmup_updates": warmup, "repeats": args.repeats, "slow_envs": args.slow_envs,
                   "slow_factor": args.slow_factor, "slow_env_indices": spec_common["slow"], "ranks": rank_counts,
                   "scaling_mode": scaling_mode, "overrides": overrides,
                   "workload_overrides": list(bench["workload_overrides"].get(skill, [])),
                   "sim": to_plain(cfgs[modes[0]].sim) if workload["kind"] == "skill" else None,
                   "policy": to_plain(cfgs[modes[0]].policy), "ppo": to_plain(cfgs[modes[0]].trainer.ppo)},
        "modes": {},
        "ratios": {},
        "scaling": [],
        "goals": [],
    }
    try:
        measured: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        for rep in range(args.repeats):  # round-robin, so a change of machine load hits every mode alike
            for mode in modes:
                tag = mode if args.repeats == 1 else f"{mode}_rep{rep}"
                measured[mode].append(measure_sample_factory(tag) if mode == "sample_factory"
                                      else measure(mode, 1, tag))
        report["modes"] = {m: combine_repeats(rows) for m, rows in measured.items()}
        base = report["modes"].get(scaling_mode) if scaling_mode in modes else None
        for ranks in rank_counts if len(rank_counts) > 1 or rank_counts != [1] else []:
            row = base if ranks == 1 and base is not None else measure(scaling_mode, ranks,
                                                                         f"{scaling_mode}_ranks{ranks}")
            report["scaling"].append({"ranks": ranks, **{k: row[k] for k in ("status", "mean_sps", "max_sps")
                                                        if k in row}})
    except KeyboardInterrupt:
        exit_with_error("interrupted", code=130)
    scaling_rows(report["scaling"])
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    add_over_raw(report["modes"])
    report["ratios"] = ratios(report["modes"])
    report["goals"] = goals(report["ratios"], bench["goals"])
    json_path, png_path = write_report(report, out)
    print(format_table(report))
    print(f"wrote {json_path} and {png_path}", file=sys.stderr)
    failed = [m for m, r in report["modes"].items()
              if str(r.get("status", "")).startswith("failed") and m != "sample_factory"]
    if failed:
        exit_with_error(f"mode(s) failed: {', '.join(failed)} (see the run logs under {out / 'runs'})", code=1)


if __name__ == "__main__":
    main()
