"""Evaluation episodes here or in worker processes, with the same results (`--workers` of eval-skill, eval-hab).

    for index, result in run_indexed(order, work, context, workers, setup, setup_args):
        ...

`work(context, index)` runs one episode. With one worker it runs here on `context` (built by the
caller, who has usually checked its inputs with it); with more, every process builds its own context
once with `setup(*setup_args)` and results come back as they finish. Both functions must be
top-level (picklable). The callers make every episode independent of what ran before it in the same
process (a fresh reset of its start state, actions seeded by its index), which is what makes the
split over processes invisible in the results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from configs.compose import exit_with_error

_CONTEXT: dict[str, Any] = {}  # a worker process's context and work function


def check_workers(value: Any) -> int:
    """`--workers` / `eval.workers` as an int >= 1; a one-line error (exit 2) otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        exit_with_error(f"--workers (eval.workers) must be an int >= 1, got {value!r}")
    return value


def _start(setup: Callable[..., Any], setup_args: tuple, work: Callable[[Any, int], Any]) -> None:
    _CONTEXT.update(context=setup(*setup_args), work=work)


def _run(index: int) -> tuple[int, Any]:
    return index, _CONTEXT["work"](_CONTEXT["context"], index)


def run_indexed(order: Sequence[int], work: Callable[[Any, int], Any], context: Any, workers: int,
                setup: Callable[..., Any], setup_args: tuple) -> Iterator[tuple[int, Any]]:
    """(index, work(context, index)) for every index of `order`: in order here with one worker, as they
    finish in `workers` forkserver processes otherwise (the caller should release `context` first)."""
    if workers <= 1:
        for index in order:
            yield index, work(context, index)
        return
    import multiprocessing as mp

    with mp.get_context("forkserver").Pool(workers, initializer=_start, initargs=(setup, setup_args, work)) as pool:
        yield from pool.imap_unordered(_run, order)
