"""The HAB agent's scripted motions between and inside skill calls (eval/agent.py): habitat-lab's reset_arm
(joint-space P control to the resting joints), a straight drive of the base (the retry back-off, and the
drive that frees a wedged nav), a turn in place toward a bearing (a freed nav facing its path), and
`WedgeWatch`, which tells when a nav has pinned its base.

Each motion takes the sim and a `step(action) -> episode ended` callable that the agent supplies with its
bookkeeping, so the motions only decide the actions and when to stop.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from rearrange.actions import ACTION_DIM, ACTION_SLICES
from rearrange.arm_rest import RESET_ARM_TOLERANCE, arm_rest_command
from rearrange.sensors import wrap_angle

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

RESET_ARM_STALL_PROGRESS = 0.01  # rad: less progress than this over `reset_arm_stall_steps` steps ends a reset
WEDGE_MOVED = 0.02  # m: a blocked nav base that moved less than this over `nav_unstick_steps` steps is wedged
DRIVE_STALLED = 0.005  # m: a sliding drive ends on a step that moves the base less than this
LINEAR = ACTION_SLICES["base"].start  # the base's linear velocity entry of the full action
ANGULAR = LINEAR + 1  # the base's angular velocity entry
TURN_TOLERANCE = 0.3  # rad: a turn toward a bearing ends once the bearing is within this

# one env step of a scripted motion with the agent's bookkeeping: True if the episode ended
StepFn = Callable[[np.ndarray], bool]


def arm_toward_rest(sim: RearrangeSim, step: StepFn, joints: np.ndarray, max_steps: int,
                    stall_steps: int = 0) -> tuple[bool, str, int]:
    """Drive the arm `joints` (mask) toward rest, the others still, until within RESET_ARM_TOLERANCE;
    `stall_steps` > 0 ends it when the arm came less than RESET_ARM_STALL_PROGRESS closer over that many
    steps. (episode ended, "done" | "stalled" | "timeout" | "episode_end", steps left of `max_steps`)."""
    rest = np.asarray(sim.REST_ARM_QPOS, dtype=np.float64)

    def error() -> float:
        return float(np.max(np.abs(rest - sim.arm_qpos)[joints]))

    errors = [error()]
    while max_steps > 0 and errors[-1] >= RESET_ARM_TOLERANCE:
        if stall_steps > 0 and len(errors) > stall_steps and \
                errors[-1 - stall_steps] - errors[-1] < RESET_ARM_STALL_PROGRESS:
            return False, "stalled", max_steps
        action = np.zeros(ACTION_DIM)
        action[ACTION_SLICES["arm"]] = arm_rest_command(sim, joints)
        ended = step(action)
        max_steps -= 1
        if ended:
            return True, "episode_end", max_steps
        errors.append(error())
    return False, ("done" if errors[-1] < RESET_ARM_TOLERANCE else "timeout"), max_steps


def drive_straight(sim: RearrangeSim, step: StepFn, direction: float, distance: float,
                   turn_when_wedged: bool = False, slide: bool = False, step_limit: int | None = None) -> bool:
    """Drive straight (`direction` +1 forward, -1 back; full command, arm still) until `distance` metres
    from the start or blocked; `turn_when_wedged`: blocked at the first step, drive the other way instead
    (`agent.retry_backoff_forward`: a nav reversed into furniture); `slide`: go on while the base slides
    along what it touches, stop only on a step that moves it less than DRIVE_STALLED; `step_limit`: at most
    that many steps (the time a skill call has left). True if the episode ended."""
    start = np.asarray(sim.base_xy, dtype=np.float64).copy()
    action = np.zeros(ACTION_DIM)
    action[LINEAR] = direction
    max_steps = int(np.ceil(distance / float(sim.cfg["base"]["max_lin_per_step"]))) + 2
    if step_limit is not None:
        max_steps = min(max_steps, int(step_limit))
    turned = False
    for _ in range(max_steps):
        before = np.asarray(sim.base_xy, dtype=np.float64).copy()
        if step(action):
            return True
        moved = float(np.linalg.norm(np.asarray(sim.base_xy) - start))
        if moved >= distance:
            break
        if slide and float(np.linalg.norm(np.asarray(sim.base_xy) - before)) >= DRIVE_STALLED:
            continue
        if sim.base_collided:
            if not (turn_when_wedged and not turned and moved < 0.01):
                break
            action[LINEAR], turned = -direction, True
    return False


def turn_toward(sim: RearrangeSim, step: StepFn, bearing: Callable[[], float], step_limit: int) -> bool:
    """Turn the base in place (arm still) until `bearing()` (rad, in the base frame, > 0: to the left) is
    within TURN_TOLERANCE; it ends early when a step does not turn the base (the arm or a held object
    against furniture stalls the turn), and after at most a half turn's steps or `step_limit`. The last
    step's command is scaled so the turn does not overshoot. True if the episode ended."""
    max_ang = float(sim.cfg["base"]["max_ang_per_step"])
    half_turn = int(np.ceil(np.pi / max_ang)) + 2
    action = np.zeros(ACTION_DIM)
    for _ in range(max(0, min(int(step_limit), half_turn))):
        b = float(bearing())
        if abs(b) < TURN_TOLERANCE:
            break
        action[ANGULAR] = float(np.clip(b / max_ang, -1.0, 1.0))
        yaw = float(sim.base_yaw)
        if step(action):
            return True
        if abs(wrap_angle(float(sim.base_yaw) - yaw)) < 1e-6:
            break  # stalled: turning on would spend the call's steps standing still
    return False


class WedgeWatch:
    """Tells when a nav has pinned its base against furniture (`agent.nav_unstick_steps`, ours): the base
    blocked on the last step and less than WEDGE_MOVED metres from where it stood `steps` steps ago.
    `step` returns the direction to drive out (+1 forward, -1 back: against the window's mean linear
    command, forward when it had none), or 0.0 while the base is not wedged."""

    def __init__(self, steps: int) -> None:
        self.positions: deque[np.ndarray] = deque(maxlen=int(steps) + 1)
        self.commands: deque[float] = deque(maxlen=int(steps))

    def step(self, sim: RearrangeSim, action: np.ndarray) -> float:
        self.positions.append(np.asarray(sim.base_xy, dtype=np.float64))
        self.commands.append(float(action[LINEAR]))
        if len(self.positions) < self.positions.maxlen or not sim.base_collided:
            return 0.0
        if float(np.linalg.norm(self.positions[-1] - self.positions[0])) >= WEDGE_MOVED:
            return 0.0
        return -1.0 if float(np.mean(self.commands)) > 0.0 else 1.0

    def clear(self) -> None:
        self.positions.clear()
        self.commands.clear()
