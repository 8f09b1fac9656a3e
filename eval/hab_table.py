"""`python -m eval.hab_table`: README's HAB table, every agent in both modes on every scenario, in one command.

Runs `eval-hab` once per scenario x agent x mode (each in its own process, as a user would run it; `--episodes`
val episodes of `--seed`, `--workers` processes each), into `OUT/<scenario>_<agent>_<mode>/`, then writes per
scenario the VER-paper-style chart `OUT/hab50_<scenario>.png` (`eval.compare_agents`) and the whole table as
`OUT/table.md`, rows in README's format. A run whose `results.json` exists is kept, so an interrupted table
continues where it stopped. Extra arguments are eval-hab config overrides passed to every run (e.g.
`agent.checkpoints.pick=PATH`). With the defaults it is README's table (18 runs, ~30 min on 2 cores):

    python -m eval.hab_table --out runs/hab_table
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from configs.compose import exit_with_error, require_choice
from configs.files import write_text_atomic
from eval.agent_config import AGENT_MODES, AGENT_TYPES
from eval.compare_agents import compare, load_result, markdown_table
from eval.metrics import format_interval
from eval.parallel import check_workers
from rearrange.episodes import SCENARIO_KINDS, SPLITS


def _choices(option: str, text: str, valid: Sequence[str]) -> list[str]:
    """The comma list of `--option`, each item one of `valid` (one-line error and exit 2 otherwise)."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        exit_with_error(f"--{option} is empty; valid choices: {', '.join(valid)}")
    for item in items:
        require_choice(option.removesuffix("s"), item, valid)
    return items


def run_dir(out: Path, scenario: str, agent: str, mode: str) -> Path:
    """The folder of one eval-hab run of the table."""
    return out / f"{scenario}_{agent}_{mode}"


def eval_hab_command(scenario: str, agent: str, mode: str, args: argparse.Namespace, folder: Path) -> list[str]:
    """The eval-hab command line of one run (this Python, so the same installation runs it)."""
    return [sys.executable, "-m", "eval.hab_eval", "--scenario", scenario, "--agent", agent, "--mode", mode,
            "--episodes", str(args.episodes), "--split", args.split, "--seed", str(args.seed),
            "--workers", str(args.workers), "--no-progress", "--out", str(folder), *args.overrides]


def main(argv: Sequence[str] | None = None) -> int:
    title, details = __doc__.split("\n\n", 1)
    p = argparse.ArgumentParser(prog="python -m eval.hab_table", description=title.split(": ", 1)[1],
                                epilog=details, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for the runs, the charts and table.md")
    p.add_argument("--scenarios", default=",".join(SCENARIO_KINDS),
                   help=f"comma list of {', '.join(SCENARIO_KINDS)} (default: all)")
    p.add_argument("--agents", default=",".join(AGENT_TYPES), help=f"comma list of {', '.join(AGENT_TYPES)} (default: all)")
    p.add_argument("--modes", default=",".join(AGENT_MODES), help=f"comma list of {', '.join(AGENT_MODES)} (default: both)")
    p.add_argument("--episodes", type=int, default=50, help="episodes per run (default 50)")
    p.add_argument("--split", default="val", help="train or val (default val)")
    p.add_argument("--seed", type=int, default=0, help="episode generation seed (default 0)")
    p.add_argument("--workers", type=int, default=2, help="processes per eval-hab run (default 2)")
    p.add_argument("overrides", nargs="*", help="eval-hab config overrides for every run, key=value")
    args = p.parse_args(argv)
    scenarios = _choices("scenarios", args.scenarios, SCENARIO_KINDS)
    agents = _choices("agents", args.agents, AGENT_TYPES)
    modes = _choices("modes", args.modes, AGENT_MODES)
    require_choice("split", args.split, SPLITS)
    if args.episodes < 1:
        exit_with_error(f"--episodes must be >= 1, got {args.episodes}")
    check_workers(args.workers)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    runs = [(s, a, m) for s in scenarios for a in agents for m in modes]
    for k, (scenario, agent, mode) in enumerate(runs, 1):
        folder = run_dir(out, scenario, agent, mode)
        if not (folder / "results.json").exists():
            log = folder.with_suffix(".log")
            with open(log, "w") as fh:
                code = subprocess.call(eval_hab_command(scenario, agent, mode, args, folder), stdout=fh,
                                       stderr=subprocess.STDOUT)
            if code != 0:
                last = (log.read_text().strip().splitlines() or ["(no output)"])[-1]
                exit_with_error(f"eval-hab {scenario} {agent} {mode} failed (exit {code}): {last}", code=1)
        s = load_result(folder)["success"]
        print(f"[{k}/{len(runs)}] {scenario} {agent} {mode}: {format_interval(s)}", flush=True)
    for scenario in scenarios:
        compare([run_dir(out, scenario, a, m) for a in agents for m in modes], out / f"hab50_{scenario}.png")
    write_text_atomic(out / "table.md", "\n".join(markdown_table([run_dir(out, *r) for r in runs])) + "\n")
    print(f"wrote {out / 'table.md'} and the charts {out}/hab50_<scenario>.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
