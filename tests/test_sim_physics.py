"""Physics of RearrangeSim: resting objects, base blocking, suction grasping, opening containers, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from rearrange.layout import generate_layout
from rearrange.objects import OBJECT_KINDS
from rearrange.robot import ARM_JOINTS
from rearrange.sim import RearrangeSim

SEED = 100


@pytest.fixture(scope="module")
def layout():
    return generate_layout(SEED)


def _reach(sim: RearrangeSim, target, steps: int = 120, tol: float = 0.005) -> float:
    """Move the end effector to `target` with arm actions from the Jacobian (no base motion)."""
    for _ in range(steps):
        err = np.asarray(target) - sim.ee_pos
        if np.linalg.norm(err) < tol:
            break
        jac = sim.ee_jacobian()
        dq = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(3), err)
        sim.step(np.clip(dq / sim.cfg["arm"]["delta_per_step"], -1, 1), None, np.zeros(2))
    return float(np.linalg.norm(np.asarray(target) - sim.ee_pos))


def _park_robot(layout) -> np.ndarray:
    (x0, y0), (x1, y1) = layout.rooms[1].bounds
    return np.array([(x0 + x1) / 2, y0 + 1.0])


def test_objects_rest_on_table_and_fridge_shelf(layout):
    kinds = ["cracker_box", "tomato_soup_can", "apple", "bowl", "mug", "banana"]
    sim = RearrangeSim(layout, kinds)
    recs = ["table_0", "fridge_shelf_0", "fridge_shelf_1", "table_0", "fridge_shelf_1", "counter_0"]
    objects = {}
    for i, (kind, rec) in enumerate(zip(kinds, recs, strict=True)):
        r = layout.receptacles[rec]
        dx = -0.1 if i < 3 else 0.1
        objects[f"obj_{i}"] = (
            (r.center[0] + dx, r.center[1], r.center[2] + OBJECT_KINDS[kind].rest_height + 0.001),
            (1, 0, 0, 0),
        )
    sim.reset_state(objects, {}, _park_robot(layout), 0.0)
    start = {n: sim.object_pos(n) for n in objects}
    for _ in range(150):  # 5 simulated seconds
        sim.step(np.zeros(7), None, np.zeros(2))
    for n in objects:
        assert np.linalg.norm(sim.object_pos(n) - start[n]) < 0.01, (n, sim.object_kind(n))


def _south_wall_start(sim: RearrangeSim, layout) -> tuple[np.ndarray, float]:
    """A base point 1.5 m from the kitchen's south wall whose straight path to it is free of furniture (with room
    to slide 1 m in +x), and the wall's inner face y."""
    (x0, y0), (x1, _) = layout.rooms[0].bounds
    radius = sim.cfg["base"]["radius"]
    start = next(
        np.array([x, y0 + 1.5])
        for x in np.arange(x0 + 0.5, x1 - 1.5, 0.05)
        if all(
            sim.base_is_free((xx, y))
            for y in np.arange(y0 + radius + 1e-6, y0 + 1.6, 0.05)
            for xx in (x, x + 1.0)
        )
    )
    return start, y0


def test_base_stops_at_wall(layout):
    sim = RearrangeSim(layout, [])
    radius = sim.cfg["base"]["radius"]
    start, y0 = _south_wall_start(sim, layout)
    sim.reset_state({}, {}, start, np.pi / 2)  # backing into the south wall (inner face at y0)
    collided = []
    for _ in range(60):
        sim.step(np.zeros(7), None, np.array([-1.0, 0.0]))
        assert sim.base_xy[1] - y0 >= radius - 1e-9
        collided.append(sim.base_collided)
    assert not collided[0] and collided[-1]
    assert sim.base_xy[1] - y0 < radius + sim.cfg["base"]["max_lin_per_step"]
    # sliding: a diagonal approach keeps moving along the wall
    sim.reset_state({}, {}, start, np.pi / 2 + 0.5)
    for _ in range(40):
        sim.step(np.zeros(7), None, np.array([-1.0, 0.0]))
    assert sim.base_collided and sim.base_xy[0] > start[0] + 0.5
    assert sim.base_is_free(sim.base_xy)

    # driving forward, the arm (0.5 m ahead of the disc's 0.3 m) does not touch the wall (as habitat's arm):
    # the base goes on until its disc meets the wall's box, the arm in the wall, unbent
    sim.reset_state({}, {}, start, -np.pi / 2)
    for _ in range(60):
        sim.step(np.zeros(7), None, np.array([1.0, 0.0]))
        assert sim.robot_contact_force == 0.0
    assert sim.base_collided and sim.base_xy[1] - y0 < radius + sim.cfg["base"]["max_lin_per_step"]
    assert np.max(np.abs(sim.arm_qpos - sim.REST_ARM_QPOS)) < 0.01

    # with physics.robot_wall_contacts the arm reaches the wall first: the base stalls there instead of
    # ramming the arm through it
    touching = RearrangeSim(layout, [], {"physics": {"robot_wall_contacts": True}})
    touching.reset_state({}, {}, start, -np.pi / 2)
    forces, collided = [], []
    for _ in range(60):
        touching.step(np.zeros(7), None, np.array([1.0, 0.0]))
        forces.append(touching.robot_contact_force)
        collided.append(touching.base_collided)
    assert collided[-1]
    assert touching.base_xy[1] - y0 > radius + 0.05
    assert max(forces) < touching.cfg["base"]["stall_force"]
    assert np.max(np.abs(touching.arm_qpos - touching.REST_ARM_QPOS)) < 0.2  # arm not bent back by the wall


def test_a_held_object_still_stops_the_base_at_a_wall(layout):
    """Without robot-wall contacts the object in the gripper still meets the wall: the base stalls before
    the disc gets there, and the object stays out of the wall and in the gripper."""
    sim = RearrangeSim(layout, ["cracker_box"])
    assert not sim.cfg["physics"]["robot_wall_contacts"]
    radius = sim.cfg["base"]["radius"]
    start, y0 = _south_wall_start(sim, layout)
    sim.reset_state({}, {}, start, -np.pi / 2, grasped="obj_0")
    for _ in range(60):
        sim.step(np.zeros(7), None, np.array([1.0, 0.0]))
    assert sim.base_collided and sim.grasped == "obj_0"
    assert sim.base_xy[1] - y0 > radius + 0.2  # stopped by the object, not by the disc
    assert sim.object_pos("obj_0")[1] > y0 - 0.01


def test_suction_attaches_carries_and_releases(layout):
    sim = RearrangeSim(layout, ["tomato_soup_can", "apple"])
    base = _park_robot(layout)
    sim.reset_state({}, {}, base, 0.0)
    kind = OBJECT_KINDS["tomato_soup_can"]
    below_cup = sim.ee_pos - np.array([0.0, 0.0, kind.rest_height + 0.005])
    sim.set_object_pose("obj_0", below_cup, (1, 0, 0, 0))
    sim.step(np.zeros(7), -1.0, np.zeros(2))  # release does nothing, object starts falling
    assert sim.grasped is None
    sim.set_object_pose("obj_0", below_cup, (1, 0, 0, 0))
    sim.step(np.zeros(7), 1.0, np.zeros(2))
    assert sim.grasped == "obj_0"
    offset = sim.object_pos("obj_0") - sim.ee_pos
    for _ in range(15):  # drive forward and turn, move the arm a little
        sim.step(np.full(7, 0.3), None, np.array([1.0, 0.5]))
    for _ in range(10):
        sim.step(np.zeros(7), 1.0, np.zeros(2))
    assert sim.grasped == "obj_0"
    assert np.linalg.norm(sim.base_xy - base) > 0.5
    assert abs(np.linalg.norm(sim.object_pos("obj_0") - sim.ee_pos) - np.linalg.norm(offset)) < 0.01
    held_z = sim.object_pos("obj_0")[2]
    sim.step(np.zeros(7), -1.0, np.zeros(2))
    assert sim.grasped is None
    for _ in range(30):
        sim.step(np.zeros(7), None, np.zeros(2))
    assert sim.object_pos("obj_0")[2] < held_z - 0.3
    assert abs(sim.object_pos("obj_0")[2] - kind.rest_height) < 0.02  # on the floor
    # far from anything: grasp does nothing
    sim.step(np.zeros(7), 1.0, np.zeros(2))
    assert sim.grasped is None


def test_start_holding_object(layout):
    sim = RearrangeSim(layout, ["sugar_box"])
    sim.reset_state({}, {}, _park_robot(layout), 0.3, grasped="obj_0")
    assert sim.grasped == "obj_0"
    start = sim.object_pos("obj_0") - sim.ee_pos
    for _ in range(20):
        sim.step(np.zeros(7), None, np.array([0.5, 0.5]))
    assert np.linalg.norm(sim.object_pos("obj_0") - sim.ee_pos) == pytest.approx(
        np.linalg.norm(start), abs=0.01
    )


def test_pulling_fridge_handle_opens_door_past_90_degrees(layout):
    sim = RearrangeSim(layout, [])
    hinge = np.array(layout.articulated["fridge"].joint_pos[:2])
    handle = sim.handle_pos("fridge_handle")
    b0 = hinge + np.array([0.5, -0.85])
    b1 = hinge + np.array([-0.4, -1.3])
    sim.reset_state({}, {}, b0, float(np.arctan2(handle[1] - b0[1], handle[0] - b0[0])))
    cup = sim.cfg["suction"]["radius"]
    grip_point = handle - np.array(
        [0.0, 0.025 + cup + 0.003, 0.0]
    )  # cup (pointing down) just off the handle's face
    _reach(sim, grip_point)
    sim.step(np.zeros(7), 1.0, np.zeros(2))
    assert sim.grasped == "fridge_handle"
    rel = grip_point - np.array([*hinge, 0.0])
    n, final = 150, 1.85
    for k in range(1, n + 1):  # walk around the door while the arm follows the handle's arc
        th = final * k / n
        c, s = np.cos(-th), np.sin(-th)
        target = np.array([hinge[0] + c * rel[0] - s * rel[1], hinge[1] + s * rel[0] + c * rel[1], rel[2]])
        b = b0 + (k / n) * (b1 - b0)
        assert sim.base_is_free(b)
        sim.set_base_pose(b, float(np.arctan2(target[1] - b[1], target[0] - b[0])))
        jac = sim.ee_jacobian()
        dq = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(3), target - sim.ee_pos)
        sim.step(np.clip(dq / sim.cfg["arm"]["delta_per_step"], -1, 1), None, np.zeros(2))
    assert sim.art_q("fridge") > np.pi / 2
    sim.step(np.zeros(7), -1.0, np.zeros(2))
    assert sim.grasped is None
    for _ in range(10):  # let the arm settle on its targets
        sim.step(np.zeros(7), None, np.zeros(2))
    q = sim.art_q("fridge")
    for _ in range(30):
        sim.step(np.zeros(7), None, np.zeros(2))
    assert abs(sim.art_q("fridge") - q) < 0.01  # damping and friction keep it where it was left


@pytest.mark.parametrize("drawer", ["drawer_0", "drawer_1"])
def test_pulling_drawer_handle_opens_drawer(layout, drawer):
    sim = RearrangeSim(layout, ["apple"])
    art = layout.articulated[drawer]
    rec = layout.receptacles[drawer]
    apple = (rec.center[0], rec.center[1], rec.center[2] + OBJECT_KINDS["apple"].rest_height + 0.001)
    front = np.array(art.front_center) + np.array([0.0, 0.15])
    sim.reset_state({"obj_0": (apple, (1, 0, 0, 0))}, {}, front, art.facing_yaw)
    handle = sim.handle_pos(art.handle)
    cup = sim.cfg["suction"]["radius"]
    assert _reach(sim, handle - np.array([0.0, 0.15, 0.0])) < 0.01  # below the counter top first
    assert _reach(sim, handle - np.array([0.0, 0.02 + cup + 0.003, 0.0])) < 0.01
    sim.step(np.zeros(7), 1.0, np.zeros(2))
    assert sim.grasped == art.handle
    for _ in range(8):
        sim.step(np.zeros(7), None, np.array([-0.8, 0.0]))
    for _ in range(10):
        sim.step(np.zeros(7), None, np.zeros(2))
    assert sim.art_q(drawer) > 0.35
    # the apple inside rode along with the drawer
    assert sim.object_pos("obj_0")[1] < apple[1] - 0.3
    sim.step(np.zeros(7), -1.0, np.zeros(2))
    assert sim.grasped is None


def test_same_seed_same_actions_same_state():
    rng = np.random.default_rng(0)
    actions = [(rng.uniform(-1, 1, 7), float(rng.uniform(-1, 1)), rng.uniform(-1, 1, 2)) for _ in range(100)]
    states, depths = [], []
    for _ in range(2):
        layout = generate_layout(SEED + 3)
        sim = RearrangeSim(layout, ["mug", "apple"])
        r = layout.receptacles["table_0"]
        objs = {"obj_0": ((r.center[0], r.center[1], r.center[2] + 0.05), (1, 0, 0, 0))}
        sim.reset_state(objs, {"fridge": 0.3}, np.array(layout.articulated["fridge"].front_center), np.pi / 2)
        for arm, grip, base in actions:
            sim.step(arm, grip, base)
        states.append(np.concatenate([sim.data.qpos, sim.data.qvel, sim.base_xy, [sim.base_yaw]]))
        depths.append(sim.render_head_depth())
        sim.close()
    np.testing.assert_array_equal(states[0], states[1])
    np.testing.assert_array_equal(depths[0], depths[1])


def test_contact_force_when_arm_hits_furniture(layout):
    sim = RearrangeSim(layout, [])
    r = layout.receptacles["counter_0"]
    art = layout.articulated["drawer_0"]
    sim.reset_state({}, {}, np.array([art.front_center[0], art.front_center[1] + 0.25]), np.pi / 2)
    assert sim.robot_contact_force == 0.0
    target = np.array([sim.ee_pos[0], r.center[1] - 0.1, r.center[2] - 0.05])  # inside the counter top
    forces = []
    for _ in range(60):
        jac = sim.ee_jacobian()
        dq = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(3), target - sim.ee_pos)
        sim.step(np.clip(dq / 0.0125, -1, 1), None, np.zeros(2))
        forces.append(sim.robot_contact_force)
    assert max(forces) > 1.0
    assert sim.ee_pos[2] > r.center[2] - 0.03  # the counter stopped the arm


def test_contact_forces_match_mujoco_over_every_contact(layout):
    """ContactForces computes only the robot's and the held object's contacts; the sums equal those
    of `mj_contactForce` over every contact of the step, while the arm presses a held can into the
    counter among resting objects."""
    import mujoco

    from rearrange.collision import ContactForces

    sim = RearrangeSim(layout, ["tomato_soup_can", "apple", "cracker_box"])
    r = layout.receptacles["counter_0"]
    art = layout.articulated["drawer_0"]
    base = np.array([art.front_center[0], art.front_center[1] + 0.25])
    rest = {f"obj_{k}": ((r.center[0] + dx, r.center[1], r.center[2] + OBJECT_KINDS[kind].rest_height + 0.001),
                         (1, 0, 0, 0))
            for k, (kind, dx) in enumerate([("apple", -0.25), ("cracker_box", 0.25)], start=1)}
    sim.reset_state(rest, {}, base, np.pi / 2, grasped="obj_0")
    m, d = sim.model, sim.data
    robot_geom = sim._contact_forces._is_robot_geom
    can = np.flatnonzero(m.geom_bodyid == m.body("obj_0").id)
    forces = ContactForces(m, d, robot_geom, [can, np.array([], dtype=np.int64)])
    target = np.array([sim.ee_pos[0], r.center[1] - 0.1, r.center[2] - 0.05])
    f6, pressed = np.zeros(6), 0
    for _ in range(40):
        jac = sim.ee_jacobian()
        dq = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(3), target - sim.ee_pos)
        sim.step(np.clip(dq / 0.0125, -1, 1), None, np.zeros(2))
        robot_ref = held_ref = 0.0
        for i in range(d.ncon):
            g = d.contact.geom[i]
            mujoco.mj_contactForce(m, d, i, f6)
            on_robot, on_can = robot_geom[g], np.isin(g, can)
            if on_can.any():
                if on_can.sum() == 1 and not on_robot.any():
                    held_ref += abs(f6[0])
            elif on_robot.sum() == 1:
                robot_ref += abs(f6[0])
        got = forces(0)
        assert got == pytest.approx((robot_ref, held_ref), rel=1e-9, abs=1e-9)
        pressed += got[0] + got[1] > 1.0
    assert pressed > 0  # the step did press on something
    assert d.ncon > 4  # resting objects' contacts were there to be skipped


def test_bad_names_raise(layout):
    sim = RearrangeSim(layout, ["apple"])
    with pytest.raises(ValueError, match="obj_0"):
        sim.reset_state({"obj_9": ((0, 0, 0), (1, 0, 0, 0))}, {}, (1, 1), 0.0)
    with pytest.raises(ValueError, match="fridge"):
        sim.reset_state({}, {"oven": 0.1}, (1, 1), 0.0)
    with pytest.raises(ValueError, match="valid kinds"):
        RearrangeSim(layout, ["spaceship"])


def test_arm_reaches_down_picks_from_table_and_lifts(layout):
    sim = RearrangeSim(layout, ["tomato_soup_can"])
    rec = layout.receptacles["table_0"]
    kind = OBJECT_KINDS["tomato_soup_can"]
    can = np.array(
        [rec.center[0], rec.center[1] - rec.half_extent[1] + 0.1, rec.center[2] + kind.rest_height + 0.001]
    )
    base = (can[0], rec.center[1] - rec.half_extent[1] - 0.08 - 0.6)
    sim.reset_state({"obj_0": (can, (1, 0, 0, 0))}, {}, base, np.pi / 2)
    top = can + np.array([0.0, 0.0, kind.rest_height])
    assert _reach(sim, top + np.array([0.0, 0.0, 0.1])) < 0.01
    _reach(sim, top + np.array([0.0, 0.0, 0.005]))
    assert sim.touching() == "obj_0"
    sim.step(np.zeros(7), 1.0, np.zeros(2))
    assert sim.grasped == "obj_0"
    _reach(sim, top + np.array([0.0, 0.0, 0.25]))
    assert sim.object_pos("obj_0")[2] > can[2] + 0.2


def test_blocked_arm_servo_torque_stays_within_fetch_effort_limits(layout):
    """Pushing the arm into the counter for 100 steps: servo torques stay within the URDF effort limits,
    the targets do not wind up past `max_target_lead`, so the contact force levels off instead of growing."""
    sim = RearrangeSim(layout, [])
    arm = sim.cfg["arm"]
    effort = np.asarray(arm["effort_limits"], dtype=np.float64)
    r = layout.receptacles["counter_0"]
    art = layout.articulated["drawer_0"]
    sim.reset_state({}, {}, np.array([art.front_center[0], art.front_center[1] + 0.25]), np.pi / 2)
    target = np.array([sim.ee_pos[0], r.center[1] - 0.1, r.center[2] - 0.05])  # inside the counter top
    forces, leads, torques = [], [], []
    for _ in range(100):
        jac = sim.ee_jacobian()
        dq = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(3), target - sim.ee_pos)
        sim.step(np.clip(dq / arm["delta_per_step"], -1, 1), None, np.zeros(2))
        forces.append(sim.robot_contact_force)
        leads.append(np.max(np.abs(sim.arm_target - sim.arm_qpos)))
        torques.append([abs(sim.data.actuator(f"{n}_servo").force[0]) for n in ARM_JOINTS])
    assert np.all(np.asarray(torques) <= effort + 1e-6)
    assert max(leads) < arm["max_target_lead"] + 0.2  # the contact may push a joint back after its target is set; wind-up reaches 1.4 rad
    assert max(forces) > 1.0  # the arm did press on the counter
    assert max(forces[60:]) < 500.0  # unlimited servos with wind-up reach ~1 kN here by step 100


def test_moving_part_boxes_follow_the_open_door(layout):
    sim = RearrangeSim(layout, [])
    assert sim.moving_part_boxes() == []  # everything closed: the static map already covers it
    art = layout.articulated["fridge"]
    sim.set_art_q("fridge", np.pi / 2)
    boxes = [b for b in sim.moving_part_boxes() if b.name.startswith("fridge")]
    door = max(boxes, key=lambda b: b.half_size[0] * b.half_size[1])
    # opened by 90 degrees about the hinge, the door's middle lies half a door width from the hinge,
    # on the room side of the fridge front
    hinge = np.asarray(art.joint_pos[:2])
    width = 2 * max(door.half_size[:2])
    assert np.linalg.norm(np.asarray(door.center[:2]) - hinge) == pytest.approx(width / 2, abs=0.03)
    assert door.center[1] < hinge[1] - 0.3
    assert all(not b.name.startswith("drawer") for b in sim.moving_part_boxes())


def test_pushed_fruit_stops_rolling(layout):
    sim = RearrangeSim(layout, ["apple"])
    r = layout.receptacles["table_0"]
    pos = (r.center[0], r.center[1], r.center[2] + OBJECT_KINDS["apple"].rest_height + 0.001)
    sim.reset_state({"obj_0": (pos, (1, 0, 0, 0))}, {}, _park_robot(layout), 0.0)
    for _ in range(5):
        sim.step(np.zeros(7), None, np.zeros(2))
    dof = sim._obj_dadr["obj_0"]
    sim.data.qvel[dof] = 0.3  # a 0.3 m/s nudge along x (a placement or a brush of the arm)
    start = sim.object_pos("obj_0")
    for _ in range(60):  # 2 s
        sim.step(np.zeros(7), None, np.zeros(2))
    assert np.linalg.norm(sim.data.qvel[dof : dof + 3]) < 0.01  # at rest, not rolling on
    assert np.linalg.norm(sim.object_pos("obj_0")[:2] - start[:2]) < 0.15


def test_base_does_not_shove_an_open_drawer_shut(layout):
    sim = RearrangeSim(layout, [])
    art = layout.articulated["drawer_0"]
    hi = art.joint_range[1]
    start = np.asarray(art.front_center) - np.array([0.0, 0.3])  # 1.1 m in front of the closed drawer
    sim.reset_state({}, {"drawer_0": hi}, start, art.facing_yaw)
    for _ in range(40):
        sim.step(np.zeros(7), None, np.array([0.5, 0.0]))  # drive straight at the drawer
    assert sim.base_collided
    assert sim.art_q("drawer_0") > hi - 0.02  # still open
    assert sim.base_is_free(sim.base_xy)
