"""Compare eval-hab runs of one scenario: a per-stage success chart with the agents side by side (VER
paper Fig. 6 style) beside their failed-skill histogram, and a text table of success, 95% interval and
failed skills.

  python -m eval.compare_agents runs/th_oracle/results.json runs/th_tp_srl/results.json --out docs/th.png

Each argument is an eval-hab `results.json` (or the folder holding it). Labels: `--labels`, else the
agent, its mode and the skills run by oracles (`agent.oracle_skills`). `--markdown` also prints the runs as rows of
README's HAB table (scenario, agent, mode, success with its interval, per-stage success in plan order, failed skills
by count), so a re-measured table is pasted, not retyped. Exit 2 with one line for a
missing or malformed file, runs of different scenarios, or a label count that does not match.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.metrics import format_interval


class CompareError(ValueError):
    """A one-line problem with the inputs."""


def load_result(path: str | Path) -> dict[str, Any]:
    """An eval-hab results.json (`path` or `path`/results.json); CompareError if unreadable."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    try:
        result = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CompareError(f"cannot read eval-hab results {p}: {exc.__class__.__name__}") from None
    missing = [k for k in ("scenario", "agent", "success", "stage_success") if k not in result]
    if missing:
        raise CompareError(f"{p} is not an eval-hab results.json (no {', '.join(missing)})")
    return result


def default_label(result: Mapping[str, Any]) -> str:
    """'tp-srl replan, oracle place' style label."""
    label = f"{result['agent']} {result.get('mode', 'replan')}"
    oracle = result.get("oracle_skills") or []
    return f"{label}, oracle {'+'.join(oracle)}" if oracle else label


def summary_lines(results: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per run: label, episodes, success [95% CI], failed-skill histogram."""
    lines = []
    for label, r in results.items():
        s = r["success"]
        failed = ", ".join(f"{k} {v}" for k, v in sorted(r.get("failed_skill", {}).items())) or "-"
        lines.append(f"{label}: {format_interval(s)} over {s['n']} episodes; "
                     f"failed skills: {failed}")
    return lines


MARKDOWN_HEADER = ("| scenario | agent | mode | success [95% CI] | per-stage success | failed skill (episodes) |\n"
                   "|---|---|---|---|---|---|")


def markdown_row(result: Mapping[str, Any]) -> str:
    """One README table row of an eval-hab run: per-stage means in the plan's order (`stage_order`, else the file's),
    failed skills by count, most first (ties by name)."""
    s = result["success"]
    order = result.get("stage_order") or list(result["stage_success"])
    stages = " / ".join(f"{result['stage_success'][k]['mean']:.2f}" for k in order)
    counts = sorted((result.get("failed_skill") or {}).items(), key=lambda kv: (-kv[1], kv[0]))
    failed = ", ".join(f"{k} {v}" for k, v in counts) or "none"
    mode = result.get("mode", "replan")
    scenario = str(result["scenario"]).replace("_", " ").title()
    oracle = result.get("oracle_skills") or []
    agent = f"{result['agent']}, oracle {'+'.join(oracle)}" if oracle else result["agent"]
    return (f"| {scenario} | {agent} | {'fixed (habitat)' if mode == 'fixed' else mode} | "
            f"{format_interval(s)} | {stages} | {failed} |")


def compare(paths: Sequence[str | Path], out: str | Path, labels: Sequence[str] | None = None) -> list[str]:
    """Write the chart to `out`; returns the summary lines. CompareError on bad inputs."""
    from eval.plots import plot_stage_comparison

    runs = [load_result(p) for p in paths]
    scenarios = sorted({r["scenario"] for r in runs})
    if len(scenarios) != 1:
        raise CompareError(f"the runs are of different scenarios ({', '.join(scenarios)}); compare one at a time")
    if labels is not None and len(labels) != len(runs):
        raise CompareError(f"--labels gives {len(labels)} labels for {len(runs)} runs")
    names = list(labels) if labels is not None else [default_label(r) for r in runs]
    if len(set(names)) != len(names):
        raise CompareError(f"two runs share the label '{next(n for n in names if names.count(n) > 1)}'; "
                           "name them with --labels")
    results = dict(zip(names, runs, strict=True))
    plot_stage_comparison({n: r["stage_success"] for n, r in results.items()}, out,
                          title=f"{scenarios[0]}: per-stage success",
                          failed={n: dict(r.get("failed_skill") or {}) for n, r in results.items()})
    return summary_lines(results)


def markdown_table(paths: Sequence[str | Path]) -> list[str]:
    """README's HAB table (header and one row per run, in the order given) of eval-hab runs of any scenarios."""
    return [MARKDOWN_HEADER, *(markdown_row(load_result(p)) for p in paths)]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.compare_agents", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", help="eval-hab results.json files (or their folders), one scenario")
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument("--labels", nargs="+", default=None, help="one label per run (default: agent, mode, oracle skills)")
    p.add_argument("--markdown", action="store_true", help="also print the runs as rows of README's HAB table")
    args = p.parse_args(argv)
    try:
        lines = compare(args.results, args.out, args.labels)
        if args.markdown:
            lines += ["", *markdown_table(args.results)]
    except CompareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
