"""Reading the HAB PDDL domain and problem texts with the maintained `pddl` library.

The domain lives next to this module (`planner/domain.pddl`); problems are generated as text by
`planner.problem` and parsed here, so every problem the planner solves has gone through a real
PDDL parser and the library's type and name checks against the domain.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pddl
from pddl.core import Domain, Problem
from pddl.parser.problem import ProblemParser

DOMAIN_PATH = Path(__file__).with_name("domain.pddl")


class PddlError(ValueError):
    """A domain or problem text the `pddl` library rejects; the message is one line."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__


@lru_cache(maxsize=4)
def load_domain(path: str | Path = DOMAIN_PATH) -> Domain:
    """Parse a domain file (default: the HAB domain shipped with the planner); cached per path."""
    path = Path(path)
    if not path.is_file():
        raise PddlError(f"PDDL domain file not found: {path}")
    try:
        return pddl.parse_domain(str(path))
    except Exception as exc:  # lark syntax errors, PDDL validation errors: report one line
        raise PddlError(f"cannot parse PDDL domain {path}: {_one_line(exc)}") from None


def parse_problem_text(text: str, domain: Domain | None = None) -> Problem:
    """Parse a problem text and check it against `domain` (default: the HAB domain)."""
    domain = load_domain() if domain is None else domain
    try:
        problem = ProblemParser()(text)
        problem.domain = domain  # checks domain name, object types and predicate names
    except Exception as exc:  # the library raises lark, PDDL and plain errors; report one line
        raise PddlError(f"invalid PDDL problem: {_one_line(exc)}") from None
    return problem
