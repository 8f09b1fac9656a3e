"""Virtual environments for the peer trainers the benchmarks compare against.

Sample Factory (`eval.bench_sample_factory`, for bench-ver) and Stable-Baselines3
(`trainer.bench_sb3`, for the HalfCheetah bench) each run in a virtual environment of their own,
built on first use under `.bench/` (ignored by git): `python -m venv`, then one `pip install` per
group of requirements, in order (torch first, as `torch==<version>` so that pip takes the local CPU
wheel instead of pulling CUDA), then an import check. A marker file records the requirements it was
built with; a venv whose marker matches is reused as it is, any other is installed into again.

    python = ensure_venv(venv_dir, [["torch==2.13.0"], ["stable-baselines3==2.9.2"]],
                         check="import stable_baselines3", label="stable_baselines3")

Failures (no interpreter, pip error, offline, timeout, failed import) raise `VenvUnavailable` with a
one-line reason, which the benchmarks report as "not run: <reason>".
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from configs.files import write_text_atomic

READY_MARKER = ".bench-ready.json"


class VenvUnavailable(RuntimeError):
    """A peer's venv could not be built or checked; the message is the one-line reason."""


def repo_root() -> Path:
    """The repository root (the peers' runs put it on PYTHONPATH instead of installing the project)."""
    return Path(__file__).resolve().parents[1]


def last_line(text: str, markers: Sequence[str] = ("ERROR", "Error", "error")) -> str:
    """The last line of `text` holding one of `markers` (else its last line), at most 300 characters."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in reversed(lines):
        if any(m in line for m in markers):
            return line[-300:]
    return lines[-1][-300:] if lines else "no output"


def ensure_venv(venv: Path, requirements: Sequence[Sequence[str]], *, check: str, label: str,
                python: str | None = None, install_timeout_s: float = 1800.0) -> Path:
    """The venv's python, building the venv on first use; VenvUnavailable(reason) if impossible.

    `requirements`: groups installed in order, one `pip install` each. `check`: Python code that must
    run in the finished venv (its imports). `python`: the interpreter to create the venv with
    (default: this one). `label` names the peer in messages.
    """
    venv = Path(venv).resolve()
    venv_python = venv / "bin" / "python"
    groups = [[str(r) for r in group] for group in requirements]
    marker = venv / READY_MARKER
    if venv_python.exists() and marker.exists():
        try:
            if json.loads(marker.read_text(encoding="utf-8")).get("requirements") == groups:
                return venv_python
        except (OSError, ValueError):
            pass
    print(f"  {label}: building its venv at {venv} (first use; a few minutes) ...", file=sys.stderr)
    steps = [[str(python or sys.executable), "-m", "venv", str(venv)]]
    steps += [[str(venv_python), "-m", "pip", "install", "--quiet", *group] for group in groups]
    for cmd in steps:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=install_timeout_s)
        except FileNotFoundError as exc:
            raise VenvUnavailable(f"cannot run {cmd[0]}: {exc}") from None
        except subprocess.TimeoutExpired:
            raise VenvUnavailable(f"'{' '.join(cmd[-3:])}' took longer than {install_timeout_s:.0f} s") from None
        if proc.returncode != 0:
            what = " ".join(cmd[4:]) if "pip" in cmd else "python -m venv"
            raise VenvUnavailable(f"installing {what} failed: {last_line(proc.stderr + proc.stdout)}")
    try:
        proc = subprocess.run([str(venv_python), "-c", check], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise VenvUnavailable(f"the {label} venv's import check took longer than 600 s") from None
    if proc.returncode != 0:
        raise VenvUnavailable(f"the {label} venv does not import: {last_line(proc.stderr)}")
    write_text_atomic(marker, json.dumps({"requirements": groups}))
    return venv_python
