"""Breadth-first planner over the grounded HAB problem, and re-planning from an observed state.

Why our own search instead of a planner package: the maintained candidates on PyPI do not fit.
`pyperplan` (last release 2022) has its own PDDL parser and no control over which of several
equally short plans it returns; `unified-planning` needs a separate engine package for search
(`up-pyperplan` wraps the same pyperplan, plus ConfigSpace), and re-planning many times per
episode through temporary PDDL files is slow and still leaves tie-breaking to the engine. HAB
problems are tiny (at most a few thousand reachable states), so a breadth-first search over the
problem parsed by the `pddl` library is exact, fast and deterministic.

Grounding: every action schema of the parsed domain is instantiated with every typed tuple of
problem objects; preconditions, goals and conditional effects are compiled into closures over a
state (a frozenset of ground atoms such as `("holding", "obj_0")`), with universally quantified
parts expanded over the typed objects and static predicates (never changed by an effect, e.g.
`goal_of`) evaluated once at grounding time. Effects follow PDDL semantics: all conditions are
read in the old state, then `(state - deletes) | adds`.

Determinism: operators are sorted by the highest rank of their arguments (the episode's target
order, given by the caller), then by a fixed action order. Breadth-first search with first-visit
duplicate pruning then returns, among all shortest plans, the one whose operator sequence is
smallest in that order; so when plans tie in length, objects are handled in target order.

Re-planning reuses plans: every state along a plan found is remembered with the rest of that plan.
That rest is exactly what a new search from the state would return: it is a shortest plan from there
(else the whole plan was not shortest), and no shortest plan from there is smaller in operator order
(else the plan's first steps followed by it would have been found instead). An agent whose skill
failed without changing anything re-plans from such a state; a Tidy House search takes 0.1-0.7 s.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pddl.core import Domain, Problem
from pddl.logic.base import And, ExistsCondition, ForallCondition, Imply, Not, Or
from pddl.logic.effects import Forall, When
from pddl.logic.predicates import EqualTo, Predicate
from pddl.logic.terms import Constant, Term, Variable

Atom = tuple[str, ...]
State = frozenset[Atom]
Check = Callable[[State], bool]
Compiled = bool | Check

# Tie-break order of action schemas with equal argument rank: a plain nav to an object in an open
# container is preferred over nav_to_receptacle (habitat's tidy_house solution).
ACTION_ORDER = (
    "nav",
    "nav_to_receptacle",
    "open_cab",
    "open_fridge",
    "pick",
    "place",
    "close_cab",
    "close_fridge",
)


_MAX_REMEMBERED_STATES = 2_000  # states whose rest of plan a Planner keeps (an episode's re-plans need dozens)


class PlanningError(RuntimeError):
    """No plan exists from the given state, or the search limit was reached; one-line message."""


@dataclass(frozen=True)
class GroundAction:
    """One plan step: an action schema name and its object arguments."""

    name: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"({' '.join((self.name, *self.args))})"


@dataclass(frozen=True)
class _CondEffect:
    condition: Check
    add: frozenset[Atom]
    delete: frozenset[Atom]


@dataclass(frozen=True)
class Operator:
    """A ground action with its compiled precondition and effects."""

    action: GroundAction
    precondition: Check
    add: frozenset[Atom]
    delete: frozenset[Atom]
    conditional: tuple[_CondEffect, ...]

    def apply(self, state: State) -> State:
        add, delete = set(self.add), set(self.delete)
        for eff in self.conditional:
            if eff.condition(state):  # conditions are read in the state before the action
                add |= eff.add
                delete |= eff.delete
        return frozenset((state - delete) | add)


def _always(_state: State) -> bool:
    return True


def _as_check(c: Compiled) -> Check:
    if c is True:
        return _always
    if c is False:
        return lambda _state: False
    return c  # type: ignore[return-value]


class _Has:
    """Check that a set of atoms all hold (one atom, or a conjunction of atoms merged into one)."""

    def __init__(self, atoms: frozenset[Atom]):
        self.atoms = atoms

    def __call__(self, state: State) -> bool:
        return self.atoms <= state


def _all(parts: list[Check]) -> Check:
    atoms = frozenset().union(*(p.atoms for p in parts if isinstance(p, _Has)))
    rest = [p for p in parts if not isinstance(p, _Has)]
    if not rest:
        return _Has(atoms)

    def check(state: State) -> bool:
        return atoms <= state and all(p(state) for p in rest)

    return check


def _any(parts: list[Check]) -> Check:
    def check(state: State) -> bool:
        return any(p(state) for p in parts)

    return check


class _Grounder:
    """Compiles formulas and effects of one domain over the objects of one problem."""

    def __init__(self, domain: Domain, problem: Problem, object_order: Sequence[str]):
        self.types = dict(domain.types)
        self.obj_type = {str(c.name): str(c.type_tag) if c.type_tag else "object" for c in problem.objects}
        self.order = list(object_order)
        self.static_predicates = self._static_predicates(domain)
        self.static_facts = frozenset(
            _atom_of(f, {}) for f in problem.init if isinstance(f, Predicate) and str(f.name) in self.static_predicates
        )

    @staticmethod
    def _static_predicates(domain: Domain) -> frozenset[str]:
        changed: set[str] = set()

        def visit(eff) -> None:
            if isinstance(eff, And):
                for op in eff.operands:
                    visit(op)
            elif isinstance(eff, Not):
                visit(eff.argument)
            elif isinstance(eff, Forall | When):
                visit(eff.effect)
            elif isinstance(eff, Predicate):
                changed.add(str(eff.name))

        for action in domain.actions:
            if action.effect is not None:
                visit(action.effect)
        return frozenset(str(p.name) for p in domain.predicates) - changed

    def is_subtype(self, t: str, ancestor: str) -> bool:
        while True:
            if t == ancestor or ancestor == "object":
                return True
            parent = self.types.get(t)
            if parent is None:
                return False
            t = str(parent)

    def objects_of(self, type_tags: Iterable[str]) -> list[str]:
        tags = [str(t) for t in type_tags] or ["object"]
        return [o for o in self.order if any(self.is_subtype(self.obj_type[o], t) for t in tags)]

    def bindings(self, variables: Iterable[Variable], env: Mapping[str, str]) -> Iterable[dict[str, str]]:
        variables = sorted(variables, key=lambda v: str(v.name))
        domains = [self.objects_of(v.type_tags) for v in variables]
        for values in itertools.product(*domains):
            yield {**env, **{str(v.name): val for v, val in zip(variables, values, strict=True)}}

    def formula(self, f, env: Mapping[str, str]) -> Compiled:
        if isinstance(f, Predicate):
            atom = _atom_of(f, env)
            if atom[0] in self.static_predicates:
                return atom in self.static_facts
            return _Has(frozenset([atom]))
        if isinstance(f, EqualTo):
            return _term(f.left, env) == _term(f.right, env)
        if isinstance(f, Not):
            inner = self.formula(f.argument, env)
            if isinstance(inner, bool):
                return not inner
            return lambda state: not inner(state)
        if isinstance(f, And):
            return self._conjunction([self.formula(op, env) for op in f.operands])
        if isinstance(f, Or):
            return self._disjunction([self.formula(op, env) for op in f.operands])
        if isinstance(f, Imply):
            premise, conclusion = f.operands
            premise_c = self.formula(premise, env)
            negated = (not premise_c) if isinstance(premise_c, bool) else (lambda s, p=premise_c: not p(s))
            return self._disjunction([negated, self.formula(conclusion, env)])
        if isinstance(f, ForallCondition):
            return self._conjunction([self.formula(f.condition, b) for b in self.bindings(f.variables, env)])
        if isinstance(f, ExistsCondition):
            return self._disjunction([self.formula(f.condition, b) for b in self.bindings(f.variables, env)])
        raise ValueError(f"unsupported PDDL formula in the HAB planner: {f}")

    @staticmethod
    def _conjunction(parts: list[Compiled]) -> Compiled:
        if any(p is False for p in parts):
            return False
        checks = [p for p in parts if p is not True]
        if not checks:
            return True
        return checks[0] if len(checks) == 1 else _all(checks)  # type: ignore[arg-type]

    @staticmethod
    def _disjunction(parts: list[Compiled]) -> Compiled:
        if any(p is True for p in parts):
            return True
        checks = [p for p in parts if p is not False]
        if not checks:
            return False
        return checks[0] if len(checks) == 1 else _any(checks)  # type: ignore[arg-type]

    def effects(
        self, eff, env: Mapping[str, str], condition: Compiled, out: list[tuple[Compiled, Atom, bool]]
    ) -> None:
        """Flatten an effect into (condition, atom, is_add) triples."""
        if isinstance(eff, And):
            for op in eff.operands:
                self.effects(op, env, condition, out)
        elif isinstance(eff, Predicate):
            out.append((condition, _atom_of(eff, env), True))
        elif isinstance(eff, Not) and isinstance(eff.argument, Predicate):
            out.append((condition, _atom_of(eff.argument, env), False))
        elif isinstance(eff, Forall):
            for b in self.bindings(eff.variables, env):
                self.effects(eff.effect, b, condition, out)
        elif isinstance(eff, When):
            cond = self._conjunction([condition, self.formula(eff.condition, env)])
            if cond is not False:
                self.effects(eff.effect, env, cond, out)
        else:
            raise ValueError(f"unsupported PDDL effect in the HAB planner: {eff}")

    def operator(self, action, env: dict[str, str]) -> Operator | None:
        pre = True if action.precondition is None else self.formula(action.precondition, env)
        if pre is False:
            return None
        flat: list[tuple[Compiled, Atom, bool]] = []
        if action.effect is not None:
            self.effects(action.effect, env, True, flat)
        add = frozenset(a for c, a, is_add in flat if c is True and is_add)
        delete = frozenset(a for c, a, is_add in flat if c is True and not is_add)
        conditional = tuple(
            _CondEffect(_as_check(c), frozenset([a] if is_add else []), frozenset([] if is_add else [a]))
            for c, a, is_add in flat
            if c is not True
        )
        args = tuple(env[str(p.name)] for p in action.parameters)
        return Operator(GroundAction(str(action.name), args), _as_check(pre), add, delete, conditional)


def _term(t: Term, env: Mapping[str, str]) -> str:
    if isinstance(t, Variable):
        return env[str(t.name)]
    if isinstance(t, Constant):
        return str(t.name)
    raise ValueError(f"unsupported PDDL term: {t}")


def _atom_of(p: Predicate, env: Mapping[str, str]) -> Atom:
    return (str(p.name), *(_term(t, env) for t in p.terms))


class Planner:
    """A grounded HAB problem: applicable actions, successor states and shortest plans.

    `entity_rank` orders tied plans: lower-ranked objects are handled first (the problem builder
    gives the episode's target order). `max_expansions` bounds the search (configs/planner.yaml).
    """

    def __init__(
        self,
        domain: Domain,
        problem: Problem,
        entity_rank: Mapping[str, int],
        max_expansions: int,
    ):
        names = sorted(str(c.name) for c in problem.objects)
        unknown = sorted(set(entity_rank) - set(names))
        if unknown:
            raise ValueError(f"entity_rank names objects not in the problem: {', '.join(unknown)}")
        fallback = 1 + max(entity_rank.values(), default=0)
        self.rank = {n: entity_rank.get(n, fallback) for n in names}
        order = sorted(names, key=lambda n: (self.rank[n], n))
        self.objects = tuple(order)
        self.max_expansions = int(max_expansions)
        self.predicates = {str(p.name): p.arity for p in domain.predicates}
        grounder = _Grounder(domain, problem, order)
        self.static_facts = grounder.static_facts
        ops: list[Operator] = []
        for action in domain.actions:
            for env in grounder.bindings(action.parameters, {}):
                op = grounder.operator(action, env)
                if op is not None:
                    ops.append(op)
        self.operators: tuple[Operator, ...] = tuple(sorted(ops, key=self._operator_key))
        self._by_action = {op.action: op for op in self.operators}
        self.init: State = frozenset(_atom_of(f, {}) for f in problem.init if isinstance(f, Predicate))
        self.is_goal: Check = _as_check(grounder.formula(problem.goal, {}))
        self._rest_of_plan: dict[State, tuple[GroundAction, ...]] = {}  # state on a found plan -> the plan from it

    def _operator_key(self, op: Operator) -> tuple:
        a = op.action
        action_idx = ACTION_ORDER.index(a.name) if a.name in ACTION_ORDER else len(ACTION_ORDER)
        ranks = tuple(self.rank[x] for x in a.args)
        # max: a container ranks with its first user, so nav_to_receptacle(c, e) ranks with e
        return (max(ranks, default=0), action_idx, a.name, ranks, a.args)

    def check_state(self, state: Iterable[Atom]) -> State:
        """The state as a frozenset, after checking every atom names a known predicate and objects."""
        state = frozenset(tuple(a) for a in state)
        for atom in state:
            if atom[0] not in self.predicates or len(atom) - 1 != self.predicates[atom[0]]:
                raise ValueError(f"unknown predicate in state atom {atom}; known: {', '.join(sorted(self.predicates))}")
            missing = [x for x in atom[1:] if x not in self.rank]
            if missing:
                raise ValueError(f"state atom {atom} names objects not in the problem: {', '.join(missing)}")
        return state

    def applicable(self, state: State) -> list[GroundAction]:
        return [op.action for op in self.operators if op.precondition(state)]

    def apply(self, state: State, action: GroundAction) -> State:
        """Successor state; ValueError if the action is unknown or its precondition does not hold."""
        op = self._by_action.get(action)
        if op is None:
            raise ValueError(f"unknown ground action {action}")
        if not op.precondition(state):
            raise ValueError(f"precondition of {action} does not hold")
        return op.apply(state)

    def plan(self, state: Iterable[Atom] | None = None) -> list[GroundAction]:
        """Shortest plan from `state` (default: the problem's init) to the goal; [] if it holds already.
        A state on a plan found before gets the rest of that plan (the same answer, module docstring)."""
        start = self.init if state is None else self.check_state(state)
        known = self._rest_of_plan.get(start)
        if known is not None:
            return list(known)
        plan = self.search(start)
        if len(self._rest_of_plan) < _MAX_REMEMBERED_STATES:
            s = start
            for k, action in enumerate(plan):
                self._rest_of_plan[s] = tuple(plan[k:])
                s = self._by_action[action].apply(s)
        return plan

    def search(self, start: State) -> list[GroundAction]:
        """Breadth-first search for the shortest plan from `start` (a checked state), nothing remembered."""
        if self.is_goal(start):
            return []
        parent: dict[State, tuple[State, GroundAction] | None] = {start: None}
        frontier: deque[State] = deque([start])
        expansions = 0
        while frontier:
            s = frontier.popleft()
            expansions += 1
            if expansions > self.max_expansions:
                raise PlanningError(f"no plan found within max_expansions={self.max_expansions}")
            for op in self.operators:
                if not op.precondition(s):
                    continue
                t = op.apply(s)
                if t in parent:
                    continue
                parent[t] = (s, op.action)
                if self.is_goal(t):
                    return _backtrack(parent, t)
                frontier.append(t)
        raise PlanningError(f"goal unreachable from state {sorted(start)}")


def _backtrack(parent: Mapping[State, tuple[State, GroundAction] | None], goal: State) -> list[GroundAction]:
    steps: list[GroundAction] = []
    link = parent[goal]
    while link is not None:
        prev, action = link
        steps.append(action)
        link = parent[prev]
    return steps[::-1]


def replan(planner: Planner, state: Iterable[Atom]) -> list[GroundAction]:
    """Re-plan to the goal from an observed symbolic state (e.g. after a skill failed).

    `state` is what `planner.predicates.evaluate_state` reads off the simulator; static facts of
    the problem (such as `goal_of`) are added if the caller left them out.
    """
    return planner.plan(planner.check_state(state) | planner.static_facts)
