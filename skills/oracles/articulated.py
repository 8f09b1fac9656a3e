"""Open/close oracles for the fridge door (hinge) and the kitchen drawers (slide).

Open: drive to a stance squarely in front of the handle, bring the suction cup above the door
handle's top end (fridge) or in front of the drawer handle, attach, and pull along the direction the
handle moves when the joint opens (the door arc's tangent, recomputed every step, or the slide axis).
For a drawer the base backs straight away and does the pulling; for the door the base backs away as
the handle comes closer and turns to face the door. Past the desired state: release, pull the ee
back, return the arm to rest, call stop.

Close (suction is disabled in the close tasks): stand clear of the part's remaining sweep (the open
door is an extra obstacle for path planning), put the cup against the handle's front (drawer) or the
door's outer face and push it along the closing direction, repositioning the base whenever the push
point leaves the arm's work zone, until the joint is closed; pull the ee back, rest, stop. The door is
pushed by the base with the arm held still, following the door's arc (slower near the frame, backing
off when the base disc meets the door), and a door still swinging after a push is followed, not
re-planned for; a joint at rest needs only a smaller margin inside the task's threshold.

Desired joint states and thresholds are read from the skill's own config (`configs/skill/*.yaml`),
so the oracle aims at exactly what the task measures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rearrange.actions import ACTION_SLICES
from rearrange.sensors import SensorTarget
from rearrange.tasks.articulated import art_for_handle
from rearrange.tasks.skill_tasks import load_skill_config
from skills.oracles.base import GRASP, RELEASE, Oracle, full_action
from skills.oracles.base_follow import base_step_sizes, wrap_angle


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-9 else v


def _segment_distance(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance from each of (N, 2) points to the segment a-b."""
    ab = b - a
    t = np.clip(((points - a) @ ab) / max(float(ab @ ab), 1e-12), 0.0, 1.0)
    return np.linalg.norm(points - (a + t[:, None] * ab), axis=1)


class ArticulatedGeometry:
    """What the oracle knows about one articulated object: joint, handle and the moving part's sweep."""

    def __init__(self, sim, handle: str):
        self.handle = handle
        self.name = art_for_handle(sim.layout, handle)
        art = sim.layout.articulated[self.name]
        self.hinge = art.joint_type == "hinge"
        self.joint_pos = np.asarray(art.joint_pos, dtype=np.float64)
        self.axis = _unit(np.asarray(art.joint_axis, dtype=np.float64))
        self.range = sim.art_range(self.name)
        self.handle_half_height = float(art.handle_box.half_size[2]) if art.handle_box is not None else 0.0
        if self.hinge:
            # door direction (from the hinge, horizontal) and length at q = 0, from the door's box corners
            corners = np.vstack([p_box.corners_2d() for p_box in art.parts])
            rel = corners - self.joint_pos[:2]
            far = rel[int(np.argmax(np.linalg.norm(rel, axis=1)))]
            self.width = float(np.linalg.norm(far))
            centre = np.mean([np.asarray(p.center[:2]) for p in art.parts], axis=0) - self.joint_pos[:2]
            self.angle0 = float(np.arctan2(centre[1], centre[0]))
            self.sign = float(np.sign(self.axis[2]))
            self.parts = art.parts

    def door_dir(self, q: float) -> np.ndarray:
        """Horizontal unit vector from the hinge along the door at joint value q."""
        a = self.angle0 + self.sign * q
        return np.array([np.cos(a), np.sin(a)])

    def open_dir(self, sim) -> np.ndarray:
        """(3,) horizontal unit direction the handle moves when the joint opens."""
        if not self.hinge:
            return self.axis.copy()
        r = np.asarray(sim.handle_pos(self.handle)) - self.joint_pos
        return _unit(np.cross(self.axis, r) * np.array([1.0, 1.0, 0.0]))

    def door_box(self, q: float):
        """The door's footprint at joint value q, as a layout `Box` (for path planning)."""
        from rearrange.apartment import Box

        part = max(self.parts, key=lambda b: b.half_size[0] * b.half_size[1])
        a = self.sign * q
        c, s = np.cos(a), np.sin(a)
        rel = np.asarray(part.center[:2]) - self.joint_pos[:2]
        centre = self.joint_pos[:2] + np.array([c * rel[0] - s * rel[1], s * rel[0] + c * rel[1]])
        return Box(f"{self.name}_door_now", (float(centre[0]), float(centre[1]), float(part.center[2])),
                   tuple(float(v) for v in part.half_size), float(part.yaw + a))

    def door_normal(self, q: float) -> np.ndarray:
        """(2,) outward normal of the door (the side the handle is on) at joint value q."""
        u = self.door_dir(q)
        return self.sign * np.array([-u[1], u[0]])

    def sweep_clearance(self, points: np.ndarray, q_lo: float, q_hi: float) -> np.ndarray:
        """Distance from (N, 2) points to the area the door covers while q moves in [q_lo, q_hi]."""
        h = self.joint_pos[:2]
        rel = points - h
        rho = np.linalg.norm(rel, axis=1)
        ang = np.arctan2(rel[:, 1], rel[:, 0])
        t = ((ang - self.angle0) * self.sign + np.pi) % (2 * np.pi) - np.pi  # joint value pointing here
        inside = (t >= q_lo) & (t <= q_hi)
        d_in = np.maximum(rho - self.width, 0.0)
        d_lo = _segment_distance(points, h, h + self.width * self.door_dir(q_lo))
        d_hi = _segment_distance(points, h, h + self.width * self.door_dir(q_hi))
        return np.where(inside, d_in, np.minimum(d_lo, d_hi))


class ArticulatedOracle(Oracle):
    """Shared phases of the four open/close oracles; `opening` picks pull (True) or push (False)."""

    opening = True
    PHASES = ("clear", "approach", "reach", "contact", "pull", "push", "release", "retreat", "rest")

    def __init__(self, cfg: Mapping[str, Any]):
        super().__init__(cfg)
        skill_cfg = load_skill_config(self.skill)["articulated"]
        self.desired_state = float(skill_cfg["desired_state"])
        self.success_threshold = float(skill_cfg["success_dist_threshold"])
        # closing with the grip allowed (close_fridge): grasp the handle and swing it shut, like opening
        self.grasps = self.opening or not bool(skill_cfg["disable_grip"])

    def _start(self, sim, target: SensorTarget) -> None:
        if target.handle is None:
            raise ValueError(f"{self.skill} oracle needs a handle")
        self.geo = ArticulatedGeometry(sim, target.handle)
        lo, hi = self.geo.range
        self.desired = float(np.clip(self.desired_state, lo, hi))
        self.retreat_from: np.ndarray | None = None
        self._pull_dist: float | None = None
        self._q_last = self.q(sim)
        self.dq = 0.0  # joint change over the last policy step
        self._still_steps = 0  # policy steps the joint has not moved
        if self.geo.hinge and not self.opening:
            # the sim's map does not know the open door: plan around it
            self.follower.extra_obstacles = (self.geo.door_box(self.q(sim)),)
        self.goto("clear" if self.geo.hinge and self.grasps and not self.opening else "approach")

    def act(self, sim) -> np.ndarray:
        q = self.q(sim)
        self.dq, self._q_last = q - self._q_last, q
        self._still_steps = self._still_steps + 1 if abs(self.dq) < self.cfg["articulated"]["still_dq"] else 0
        action = super().act(sim)
        if self.geo.hinge and not self.opening and self.phase != "push":  # pushing moves into the sweep
            base = action[ACTION_SLICES["base"]].copy()
            if np.any(base != 0.0):
                action[ACTION_SLICES["base"]] = self._door_safe_base(sim, base)
        return action

    def arm_safety_applies(self) -> bool:
        return self.phase != "push"

    def _door_clearance(self, sim, xy, yaw) -> float:
        pts = np.asarray(self.cfg["arm_safety"]["arm_points"], dtype=np.float64)
        ee = np.asarray(sim.to_base(np.asarray(sim.ee_pos)))[:2]
        pts = np.vstack([pts, ee])
        c, s = np.cos(yaw), np.sin(yaw)
        world = np.asarray(xy) + np.stack([c * pts[:, 0] - s * pts[:, 1], s * pts[:, 0] + c * pts[:, 1]], 1)
        q = self.q(sim)
        return float(np.min(self.geo.sweep_clearance(world, q, q)))

    def _door_safe_base(self, sim, base: np.ndarray) -> np.ndarray:
        from skills.oracles.base_follow import predict_base_pose
        margin = 0.08
        now = self._door_clearance(sim, sim.base_xy, sim.base_yaw)
        for cand in (base, np.array([base[0], 0.0]), np.array([0.0, base[1]]), np.array([-1.0, 0.0]),
                     np.array([0.0, -base[1]])):
            xy, yaw = predict_base_pose(sim, cand)
            after = self._door_clearance(sim, xy, yaw)
            if after >= margin or after >= now + 1e-4:
                return cand
        return np.zeros(2)

    # ------------------------------------------------------------------ state

    @property
    def c(self) -> Mapping[str, Any]:
        return self.cfg["articulated"]["hinge" if self.geo.hinge else "slide"]

    def q(self, sim) -> float:
        return float(sim.art_q(self.geo.name))

    def finished_joint(self, sim) -> bool:
        """The joint is where the oracle wants it (a margin inside the task's success threshold)."""
        a = self.cfg["articulated"]
        margin = (a["state_margin"] if self.opening else a["close_state_margin"]) * self.success_threshold
        if self.opening:
            return self.desired - self.q(sim) < self.success_threshold - margin
        error = abs(self.q(sim) - self.desired)
        if self._still_steps >= a["still_steps"]:  # at rest: no rebound to allow for
            margin = a["state_margin_at_rest"] * self.success_threshold
        return error < self.success_threshold - margin

    def valid_stand(self, sim):
        """Standing-point filter when closing a door: clear of the door's remaining sweep."""
        if not self.geo.hinge or self.opening:  # opening: the base backs away ahead of the door
            return None
        q = self.q(sim)
        lo, hi = min(self.desired, q), q
        clearance = self.cfg["articulated"]["base_clearance"]
        return lambda pts: self.geo.sweep_clearance(pts, lo, hi) > clearance

    def work_point(self, sim) -> np.ndarray:
        """Where the ee works: the handle front (opening) or the push point (closing)."""
        out = self.geo.open_dir(sim)
        handle = np.asarray(sim.handle_pos(self.geo.handle), dtype=np.float64)
        if self.grasps:
            if self.geo.hinge:  # the door handle is a vertical bar: put the cup on its top end, over
                # its outer edge (the gripper housing, wider than the cup, then clears the door)
                return handle + np.array([0.0, 0.0, self.geo.handle_half_height]) + out * self.c["top_offset"]
            return handle + out * self.c["handle_depth"]
        if self.geo.hinge:
            q = self.q(sim)
            u = self.geo.door_dir(q)
            xy = self.geo.joint_pos[:2] + self.c["push_radius"] * u
            return np.array([xy[0], xy[1], handle[2] + self.c["push_dz"]])
        return handle + out * self.c["handle_depth"] + np.array([0.0, 0.0, self.c["push_dz"]])

    def front_stand(self, sim, point: np.ndarray) -> np.ndarray | None:
        """Standing point squarely in front of the work point (along the opening direction), so the
        base faces the handle head-on; None if it is not navigable there."""
        out = self.geo.open_dir(sim)[:2]
        stand = np.asarray(point, dtype=np.float64)[:2] + out * self.c["stand_dist"]
        if not sim.navmap.is_navigable(stand):
            return None
        valid = self.valid_stand(sim)
        if valid is not None and not bool(valid(stand[None])[0]):
            return None
        return stand

    def approach_dir(self, out: np.ndarray) -> np.ndarray:
        """The side the cup comes from onto the work point: from above onto the door handle's top end
        when opening the fridge, else from the front (the opening direction)."""
        if self.grasps and self.geo.hinge:
            return np.array([0.0, 0.0, 1.0])
        return np.asarray(out, dtype=np.float64)

    def tool_axis(self, out: np.ndarray, pulling: bool = False) -> np.ndarray | None:
        """Where the suction cup points while working on the handle: down, tilted toward the handle
        (the wrist then stays clear of a counter top above it); None: left free."""
        tilt_deg = self.c["pull_tilt_deg"] if pulling else self.c["tilt_deg"]
        if tilt_deg is None:
            return None
        tilt = np.deg2rad(tilt_deg)
        axis = -np.asarray(out, dtype=np.float64) * np.sin(tilt) + np.array([0.0, 0.0, -np.cos(tilt)])
        return axis / np.linalg.norm(axis)

    def pull_base(self, sim, out: np.ndarray) -> np.ndarray:
        """Base action while pulling: drawers, back straight away along the slide (the base does the
        pulling, the arm holds on); doors, back away as the handle comes closer while turning to face
        the door (`face_door_weight` between facing the handle and facing the door squarely)."""
        if self.geo.hinge:
            # face the door squarely (heading between facing the handle and facing the door's outer
            # face), keeping the handle at its distance at grasp time: the arm then never lies
            # along the swinging door
            handle = np.asarray(sim.handle_pos(self.geo.handle))
            p = sim.to_base(handle)
            if self._pull_dist is None:
                self._pull_dist = float(p[0])
            lin_step, ang_step = self.follower_steps(sim)
            g = self.cfg["articulated"]["track_gain"]
            face_door = float(np.arctan2(-out[1], -out[0]))
            face_handle = float(sim.base_yaw) + float(np.arctan2(p[1], p[0]))
            desired = face_handle + self.c["face_door_weight"] * wrap_angle(face_door - face_handle)
            err = wrap_angle(desired - float(sim.base_yaw))
            forward = float(np.clip(g * (p[0] - self._pull_dist) / lin_step, -1.0, self.cfg["articulated"]["max_forward"]))
            return np.array([forward, float(np.clip(g * err / ang_step, -1.0, 1.0))])
        _, ang_step = self.follower_steps(sim)
        facing = float(np.arctan2(-out[1], -out[0]))
        err = wrap_angle(facing - float(sim.base_yaw))
        return np.array([-self.c["pull_speed"], float(np.clip(0.5 * err / ang_step, -1.0, 1.0))])

    def track_base(self, sim, point: np.ndarray, distance: float | None = None) -> np.ndarray:
        """Base action keeping `point` straight ahead at `distance` (default: the preferred working
        distance); it backs away at full speed but closes in only slowly."""
        zone = self.cfg["zone"]
        distance = zone["preferred_dist"] if distance is None else distance
        p = np.asarray(sim.to_base(point))
        dist = float(np.hypot(p[0], p[1]))
        bearing = float(np.arctan2(p[1], p[0]))
        lin_step, ang_step = self.follower_steps(sim)
        g = self.cfg["articulated"]["track_gain"]
        forward = float(np.clip(g * (dist - distance) / lin_step, -1.0, self.cfg["articulated"]["max_forward"]))
        turn = float(np.clip(g * bearing / ang_step, -1.0, 1.0))
        return np.array([forward, turn])

    def door_push_base(self, sim) -> np.ndarray:
        """Base action pushing a door shut with the arm held still: stand square to the door's outer
        face with the cup `push_press` beyond it at `push_radius` from the hinge, so driving there
        moves the door; as the door turns, the stand moves round its arc."""
        q = self.q(sim)
        normal, u = self.geo.door_normal(q), self.geo.door_dir(q)
        ee = np.asarray(sim.ee_pos, dtype=np.float64)
        p = np.asarray(sim.to_base(ee))
        reach = float(np.hypot(p[0], p[1]))  # how far ahead of the base centre the cup is
        # push where the cup is along the door (no sideways correction) unless it slid too far
        radius = float(np.clip((ee[:2] - self.geo.joint_pos[:2]) @ u, *self.c["push_radius_range"]))
        point = self.geo.joint_pos[:2] + radius * u
        stand = point + normal * (reach - self.c["push_press"])
        yaw = float(sim.base_yaw)
        d = stand - np.asarray(sim.base_xy, dtype=np.float64)
        along = float(d @ np.array([np.cos(yaw), np.sin(yaw)]))
        lateral = float(d @ np.array([-np.sin(yaw), np.cos(yaw)]))
        facing = float(np.arctan2(-normal[1], -normal[0]))
        err = wrap_angle(facing + float(np.clip(lateral, -0.3, 0.3)) - yaw)
        lin_step, ang_step = self.follower_steps(sim)
        # slower as the door nears its frame (it rebounds off it)
        limit = self.c["push_max_forward"] * float(np.clip(abs(q - self.desired) / self.c["push_slow_q"],
                                                           self.c["push_slow_min"], 1.0))
        forward = float(np.clip(along / lin_step, -1.0, limit))
        if sim.base_collided:  # the base disc ran into the door: back off (then turn square to it)
            return np.array([-self.c["push_back_off"], 0.0])
        # turn gently (the arm tip sweeps sideways across the door)
        turn = float(np.clip(self.cfg["articulated"]["track_gain"] * err / ang_step, -0.5, 0.5))
        return np.array([forward, turn])

    def _clear_turn(self, sim) -> float:
        """Turn command moving the ee out of the door's remaining sweep (0: already clear)."""
        q = self.q(sim)
        lo, hi = min(self.desired, q), q
        ee = np.asarray(sim.ee_pos, dtype=np.float64)[:2]
        margin = 0.15
        if float(self.geo.sweep_clearance(ee[None], lo, hi)[0]) > margin:
            return 0.0
        # turn the way that moves the ee away from the door's inner face (not through the door)
        base = np.asarray(sim.base_xy, dtype=np.float64)
        rel = ee - base
        inward = -self.geo.door_normal(q)
        ccw = np.array([-rel[1], rel[0]])  # ee velocity direction for a counter-clockwise turn
        return 1.0 if float(ccw @ inward) > 0.0 else -1.0

    @staticmethod
    def follower_steps(sim) -> tuple[float, float]:
        return base_step_sizes(sim)

    # ------------------------------------------------------------------ phases

    def _step(self, sim) -> np.ndarray:
        a = self.cfg["articulated"]
        zone = dict(self.cfg["zone"], max_dist=self.c["max_work_dist"])
        out = self.geo.open_dir(sim)
        push_dir = out if self.opening else -out
        held = sim.grasped == self.geo.handle

        if self.phase == "clear":
            # the arm at rest may reach into the door's closing sweep: turn it out first
            turn = self._clear_turn(sim)
            if turn == 0.0 or self.phase_steps >= 30:
                self.goto("approach")
            else:
                return full_action(arm=self.ik.action_to_rest(sim), grip=RELEASE, base=np.array([0.0, turn]))

        if self.phase == "approach":
            if self.finished_joint(sim):
                self.goto("rest")
            else:
                point = self.work_point(sim)
                base, ready = self.approach(sim, point, zone, self.valid_stand(sim), self.front_stand(sim, point),
                                            force_stand=self.geo.hinge and self.grasps)
                if ready:
                    self.goto("reach")
                return full_action(arm=self.ik.action_to_rest(sim), grip=RELEASE, base=base)

        if self.phase == "reach":
            # ee just outside the work point, on the side it is pulled toward / pushed from
            point = self.work_point(sim)
            goal = point + self.approach_dir(out) * a["pre_distance"]
            if not self.in_work_zone(sim, point, zone):
                self.goto("approach")
            elif self.ik.ee_error(sim, goal) < a["tolerance"] or self.phase_steps >= self.c["reach_steps"]:
                self.goto("contact" if self.grasps else "push")
            return full_action(arm=self.ik.action_towards(sim, goal, axis=self.tool_axis(out)), grip=RELEASE)

        if self.phase == "contact":
            # move onto the handle with suction on until it attaches
            if held:
                self.goto("pull")
            elif sim.grasped is not None or self.phase_steps >= a["contact_steps"]:
                self.goto("reach")
                return full_action(arm=np.zeros(7), grip=RELEASE)
            else:
                goal = self.work_point(sim) - self.approach_dir(out) * a["press"]
                return full_action(arm=self.ik.action_towards(sim, goal, a["contact_speed"], axis=self.tool_axis(out)),
                                   grip=GRASP)

        if self.phase == "pull":
            if not held:
                self.goto("reach")
                return full_action(arm=np.zeros(7), grip=RELEASE)
            if self.finished_joint(sim):
                self.goto("release")
            else:
                goal = np.asarray(sim.ee_pos) + push_dir * a["pull_step"]
                return full_action(arm=self.ik.action_towards(sim, goal, axis=self.tool_axis(out, pulling=True)),
                                   grip=GRASP, base=self.pull_base(sim, out))

        if self.phase == "push":
            if self.finished_joint(sim):
                self.goto("retreat")
            else:
                point = self.work_point(sim)
                # a door swinging on after a push: keep following it rather than re-plan
                coasting = self.geo.hinge and abs(self.dq) >= self.cfg["articulated"]["still_dq"]
                if not self.in_work_zone(sim, point, zone) and self.phase_steps > 0 and not coasting:
                    self.goto("approach")
                    return full_action(arm=self.ik.action_towards(sim, point + out * a["pre_distance"],
                                                                        axis=self.tool_axis(out)))
                if self.geo.hinge:
                    # the arm holds still and the base drives the cup into the door, following its arc
                    return full_action(arm=np.zeros(7), base=self.door_push_base(sim))
                goal = point + push_dir * a["press"]
                return full_action(arm=self.ik.action_towards(sim, goal, a["push_speed"], axis=self.tool_axis(out)),
                                   base=self.track_base(sim, point))

        if self.phase == "release":
            if sim.grasped is None and self.phase_steps >= a["release_steps"]:
                self.goto("retreat")
            return full_action(arm=np.zeros(7), grip=RELEASE)

        if self.phase == "retreat":
            if self.phase_steps <= 1 or self.retreat_from is None:
                self.retreat_from = np.asarray(sim.ee_pos, dtype=np.float64).copy()
            goal = self.retreat_from + out * self.c["retreat"]
            if self.ik.ee_error(sim, goal) < a["tolerance"] or self.phase_steps >= self.c["retreat_steps"]:
                self.goto("rest")
            return full_action(arm=self.ik.action_towards(sim, goal), grip=RELEASE)

        # rest, then stop
        if self.ik.rest_error(sim) < a["rest_tolerance"]:
            self.done = True
            return full_action(grip=RELEASE, stop=True)
        return full_action(arm=self.ik.action_to_rest(sim), grip=RELEASE)


class OpenFridgeOracle(ArticulatedOracle):
    skill = "open_fridge"
    opening = True


class CloseFridgeOracle(ArticulatedOracle):
    skill = "close_fridge"
    opening = False


class OpenCabOracle(ArticulatedOracle):
    skill = "open_cab"
    opening = True


class CloseCabOracle(ArticulatedOracle):
    skill = "close_cab"
    opening = False
