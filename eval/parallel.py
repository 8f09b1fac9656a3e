"""Evaluation episodes here or in worker processes, with the same results (`--workers` of eval-skill, eval-hab).

    for index, result in run_indexed(order, work, context, workers, setup, setup_args):
        ...

`work(context, index)` runs one episode. With one worker it runs here on `context` (built by the
caller, who has usually checked its inputs with it); with more, every process builds its own context
once with `setup(*setup_args)` and results come back as they finish. Both functions must be
top-level (picklable). The callers make every episode independent of what ran before it in the same
process (a fresh reset of its start state, actions seeded by its index), which is what makes the
split over processes invisible in the results.

While episodes run, SIGTERM (a scheduler's time limit, `kill`, `timeout`) ends the evaluation as Ctrl-C
does, here and in every worker: the exception unwinds, so a video being written is removed instead of
left as a hidden `.partial.mp4`, and the process exits with 143 (128 + SIGTERM).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from configs.compose import exit_with_error

_CONTEXT: dict[str, Any] = {}  # a worker process's context and work function


def check_workers(value: Any) -> int:
    """`--workers` / `eval.workers` as an int >= 1; a one-line error (exit 2) otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        exit_with_error(f"--workers (eval.workers) must be an int >= 1, got {value!r}")
    return value


_TERMINATED: list[int] = []  # the SIGTERM received, if any


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    _TERMINATED.append(signum)
    raise SystemExit(128 + signum)


def _exit_if_terminated() -> None:
    """Exit now if SIGTERM came while its exception was swallowed (it can land in a callback whose
    exceptions Python ignores, e.g. the at-fork hooks run when ffmpeg is started for a video)."""
    if _TERMINATED:
        raise SystemExit(128 + _TERMINATED[0])


@contextlib.contextmanager
def _sigterm_exits() -> Iterator[None]:
    """SIGTERM raises SystemExit(143) in this (main) thread while the block runs."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers live on the main thread
        yield
        return
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    _TERMINATED.clear()
    try:
        yield
        _exit_if_terminated()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _start(setup: Callable[..., Any], setup_args: tuple, work: Callable[[Any, int], Any]) -> None:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    _CONTEXT.update(context=setup(*setup_args), work=work)


def _run(index: int) -> tuple[int, Any]:
    result = _CONTEXT["work"](_CONTEXT["context"], index)
    _exit_if_terminated()
    return index, result


def run_indexed(order: Sequence[int], work: Callable[[Any, int], Any], context: Any, workers: int,
                setup: Callable[..., Any], setup_args: tuple) -> Iterator[tuple[int, Any]]:
    """(index, work(context, index)) for every index of `order`: in order here with one worker, as they
    finish in `workers` forkserver processes otherwise (the caller should release `context` first)."""
    with _sigterm_exits():
        if workers <= 1:
            for index in order:
                result = work(context, index)
                _exit_if_terminated()
                yield index, result
            return
        import multiprocessing as mp

        with mp.get_context("forkserver").Pool(workers, initializer=_start, initargs=(setup, setup_args, work)) as pool:
            yield from pool.imap_unordered(_run, order)
