"""The Fetch-like robot as MJCF: kinematic round base, fixed torso, 7-DOF arm, suction cup, head camera.

Link offsets, axes and joint limits follow the public fetch_description URDF (torso_lift_link ->
shoulder_pan -> ... -> gripper_axis); masses are Fetch's link masses. The base's x/y/yaw joints are driven
kinematically by `RearrangeSim`; the arm hangs from it with gravity-compensated position servos,
torque-limited to Fetch's joint efforts.
Collision bits are defined in `rearrange.scene` (robot geoms: contype ROBOT, collide with static
geometry, articulated parts and objects).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

ARM_JOINTS: tuple[str, ...] = (
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "upperarm_roll_joint",
    "elbow_flex_joint",
    "forearm_roll_joint",
    "wrist_flex_joint",
    "wrist_roll_joint",
)
# (child link name, offset from the parent joint frame, joint axis, (lo, hi), mass, link capsule radius)
_ARM_CHAIN = (
    ("shoulder_pan_link", (0.119525, 0.0, 0.34858), "0 0 1", (-1.6056, 1.6056), 2.5587, 0.06),
    ("shoulder_lift_link", (0.117, 0.0, 0.06), "0 1 0", (-1.221, 1.518), 2.6615, 0.06),
    ("upperarm_roll_link", (0.219, 0.0, 0.0), "1 0 0", (-np.pi, np.pi), 2.3311, 0.055),
    ("elbow_flex_link", (0.133, 0.0, 0.0), "0 1 0", (-2.251, 2.251), 2.1299, 0.055),
    ("forearm_roll_link", (0.197, 0.0, 0.0), "1 0 0", (-np.pi, np.pi), 1.6563, 0.05),
    ("wrist_flex_link", (0.1245, 0.0, 0.0), "0 1 0", (-2.16, 2.16), 1.725, 0.05),
    ("wrist_roll_link", (0.1385, 0.0, 0.0), "1 0 0", (-np.pi, np.pi), 0.1354, 0.045),
)
GRIPPER_OFFSET = 0.16645  # wrist_roll_link -> gripper_axis (the end effector point)
ARM_LIMITS: np.ndarray = np.array([c[3] for c in _ARM_CHAIN], dtype=np.float64)
TORSO_FROM_BASE = (-0.086875, 0.0, 0.37743)  # torso_lift_link origin at zero lift
HEAD_PAN_FROM_TORSO = (0.053125, 0.0, 0.603001)
HEAD_TILT_FROM_PAN = (0.14253, 0.0, 0.057999)
CAMERA_FROM_TILT = (0.055, 0.0, 0.0225)

# Rest pose: the end effector at habitat's resting position [0.5, 0, 1.0] in the base frame (default
# torso lift 0.3), suction cup pointing down, elbow out to the right so the head camera sees past the arm;
# computed once with damped least-squares IK (position + downward gripper + low elbow), within limits.
REST_ARM_QPOS: np.ndarray = np.array(
    [-0.6579, -0.2822, 2.0099, 1.6993, -1.1848, 1.9494, 0.2681], dtype=np.float64
)

GRIPPER_BODY = "gripper"
EE_SITE = "ee"
SUCTION_GEOM = "suction_cup"
HEAD_CAMERA = "head_depth"


def _f(v: tuple[float, ...] | np.ndarray) -> str:
    return " ".join(f"{float(x):.6g}" for x in v)


def robot_body_xml(cfg: Mapping, contype: int, conaffinity: int) -> str:
    """The robot's <body> tree, to be placed in <worldbody>.

    The base has x, y, yaw joints that the simulator drives kinematically (it writes their position and
    velocity every physics step, so constraints and contacts see the true base velocity).
    """
    base, arm, suction, cam = cfg["base"], cfg["arm"], cfg["suction"], cfg["camera"]["head"]
    col = f'contype="{contype}" conaffinity="{conaffinity}"'
    r = float(base["radius"])
    tilt = np.deg2rad(float(cam["tilt_deg"]))
    torso = (TORSO_FROM_BASE[0], 0.0, TORSO_FROM_BASE[2] + float(base["torso_lift"]))
    grey, dark, light = 'rgba="0.55 0.56 0.58 1"', 'rgba="0.25 0.26 0.28 1"', 'rgba="0.85 0.85 0.87 1"'
    lines = [
        '<body name="robot_base" pos="0 0 0">',
        '  <joint name="base_x" type="slide" axis="1 0 0" limited="false"/>',
        '  <joint name="base_y" type="slide" axis="0 1 0" limited="false"/>',
        '  <joint name="base_yaw" type="hinge" axis="0 0 1" limited="false"/>',
        f'  <geom name="robot_base_disc" type="cylinder" size="{r:.4g} 0.18" pos="0 0 0.2" mass="{float(base["mass"]):.6g}" {col} {grey}/>',
        f'  <geom name="robot_torso_column" type="box" size="0.12 0.16 0.45" pos="-0.09 0 0.83" mass="10" {col} {light}/>',
        f'  <body name="torso" pos="{_f(torso)}">',
        f'    <body name="head_pan" pos="{_f(HEAD_PAN_FROM_TORSO)}">',
        f'      <geom name="robot_head" type="box" size="0.11 0.14 0.07" pos="0.08 0 0.06" {col} {dark}/>',
        f'      <body name="head_tilt" pos="{_f(HEAD_TILT_FROM_PAN)}">',
        f'        <camera name="{HEAD_CAMERA}" pos="{_f(CAMERA_FROM_TILT)}" fovy="{float(cam["fovy_deg"]):.6g}" '
        f'xyaxes="0 -1 0 {np.sin(tilt):.6f} 0 {np.cos(tilt):.6f}"/>',
        "      </body>",
        "    </body>",
    ]
    indent = "    "
    damping = float(arm["joint_damping"])
    armature = float(arm["armature"])
    for i, (link, off, axis, (lo, hi), mass, rad) in enumerate(_ARM_CHAIN):
        nxt = _ARM_CHAIN[i + 1][1] if i + 1 < len(_ARM_CHAIN) else (0.06, 0.0, 0.0)
        lines.append(f'{indent}<body name="{link}" pos="{_f(off)}" gravcomp="1">')
        lines.append(
            f'{indent}  <joint name="{ARM_JOINTS[i]}" type="hinge" axis="{axis}" range="{lo:.6g} {hi:.6g}" '
            f'limited="true" damping="{damping:.6g}" armature="{armature:.6g}"/>'
        )
        length = float(np.linalg.norm(nxt))
        if length > 1e-6:
            lines.append(
                f'{indent}  <geom name="{link}_geom" type="capsule" fromto="0 0 0 {_f(nxt)}" size="{rad:.4g}" '
                f'mass="{mass:.6g}" {col} {grey if i % 2 else light}/>'
            )
        else:
            lines.append(
                f'{indent}  <geom name="{link}_geom" type="sphere" size="{rad:.4g}" mass="{mass:.6g}" {col} {light}/>'
            )
        indent += "  "
    sr = float(suction["radius"])
    lines += [
        f'{indent}<body name="{GRIPPER_BODY}" pos="{GRIPPER_OFFSET - sr:.6g} 0 0" gravcomp="1">',
        f'{indent}  <geom name="gripper_housing" type="box" size="0.03 0.05 0.035" pos="{-0.06 + sr:.4g} 0 0" mass="1.5175" {col} {dark}/>',
        f'{indent}  <geom name="{SUCTION_GEOM}" type="sphere" size="{sr:.4g}" mass="0.05" {col} rgba="0.1 0.6 0.9 1"/>',
        f'{indent}  <site name="{EE_SITE}" pos="{sr:.4g} 0 0" size="0.01"/>',
        f"{indent}</body>",
    ]
    for _ in _ARM_CHAIN:
        indent = indent[:-2]
        lines.append(f"{indent}</body>")
    lines += ["  </body>", "</body>"]
    return "\n".join(lines)


def robot_actuator_xml(cfg: Mapping) -> str:
    """Position servos on the seven arm joints, their torque limited to Fetch's joint effort limits."""
    arm = cfg["arm"]
    efforts = [float(e) for e in arm["effort_limits"]]
    if len(efforts) != len(ARM_JOINTS):
        raise ValueError(f"arm.effort_limits needs {len(ARM_JOINTS)} values ({', '.join(ARM_JOINTS)}), got {len(efforts)}")
    out = []
    for name, c, effort in zip(ARM_JOINTS, _ARM_CHAIN, efforts, strict=True):
        lo, hi = c[3]
        out.append(
            f'<position name="{name}_servo" joint="{name}" kp="{float(arm["kp"]):.6g}" '
            f'dampratio="{float(arm["dampratio"]):.6g}" ctrlrange="{lo:.6g} {hi:.6g}" ctrllimited="true" '
            f'forcerange="{-effort:.6g} {effort:.6g}" forcelimited="true"/>'
        )
    return "\n".join(out)
