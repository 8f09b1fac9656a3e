"""This machine's CPU, read from Linux's /proc/cpuinfo: its model name (for benchmark reports) and whether it
multiplies in bf16 in hardware (for `trainer.ppo.learner_bf16: auto`). Elsewhere (no /proc) both fall back."""

from __future__ import annotations

import platform
import re
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
_BF16_FLAGS = re.compile(r"\b(avx512_bf16|amx_bf16|bf16)\b")   # x86 AVX-512 / AMX, Arm's bf16 feature


def read_cpuinfo(path: Path = CPUINFO) -> str:
    """The text of /proc/cpuinfo, or "" where there is none (macOS, Windows, a locked-down container)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cpu_model(cpuinfo: str | None = None) -> str:
    """The first "model name" of `cpuinfo` (default: this machine's), else what `platform` knows."""
    text = read_cpuinfo() if cpuinfo is None else cpuinfo
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def cpu_has_bf16(cpuinfo: str | None = None) -> bool:
    """Whether `cpuinfo`'s flags (default: this machine's) list avx512_bf16, amx_bf16 (x86) or bf16 (Arm)."""
    text = read_cpuinfo() if cpuinfo is None else cpuinfo
    return _BF16_FLAGS.search(text) is not None
