"""Builds the MJCF of one apartment: static boxes, articulated containers, objects, robot, suction constraints.

Collision filtering keeps the number of tested pairs small: static geometry never collides with static
geometry or with the moving parts of containers (joint limits keep those in place); the robot collides
with static geometry, container parts and objects (so contact forces can be measured), objects collide
with everything. A held object stops colliding with the robot (bit cleared at grasp time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rearrange.apartment import ApartmentLayout, Box
from rearrange.objects import object_kind
from rearrange.robot import GRIPPER_BODY, robot_actuator_xml, robot_body_xml

# collision bits (MuJoCo: two geoms collide when either's contype shares a bit with the other's conaffinity).
# Walls have their own bit, so that whether the robot touches them is a setting
# (`physics.robot_wall_contacts`, `wall_col`); objects, held or not, always do.
STATIC, ROBOT, OBJECT, ART, WALL = 1, 2, 4, 8, 16
STATIC_COL = (STATIC, 0)
ROBOT_COL = (ROBOT, STATIC | ART)
OBJECT_COL = (OBJECT, STATIC | ROBOT | OBJECT | ART | WALL)
HELD_OBJECT_COL = (OBJECT, STATIC | OBJECT | ART | WALL)
ART_COL = (ART, 0)

PARK_Z = 0.1  # objects not used by an episode wait on the floor outside the apartment


def wall_col(robot_contacts: bool) -> tuple[int, int]:
    """The walls' (contype, conaffinity): touched by objects always, by the robot only if `robot_contacts`."""
    return (WALL, ROBOT if robot_contacts else 0)


@dataclass(frozen=True)
class SceneNames:
    """Names of the generated bodies and constraints, in the order the simulator indexes them."""

    objects: tuple[str, ...]
    kinds: tuple[str, ...]
    articulated: tuple[str, ...]
    handles: tuple[str, ...]
    object_welds: tuple[str, ...]
    handle_connects: tuple[str, ...]


def park_position(i: int) -> np.ndarray:
    """Where unused object `i` waits (outside the apartment, on the floor plane)."""
    return np.array([-3.0 - 0.4 * (i % 10), -3.0 - 0.4 * (i // 10), PARK_Z])


def _f(v: Sequence[float] | np.ndarray) -> str:
    return " ".join(f"{float(x):.6g}" for x in v)


def _col(c: tuple[int, int]) -> str:
    return f'contype="{c[0]}" conaffinity="{c[1]}"'


def _box_geom(
    box: Box, rgba: str, col: tuple[int, int], offset: Sequence[float] = (0.0, 0.0, 0.0), extra: str = ""
) -> str:
    pos = np.asarray(box.center) - np.asarray(offset)
    return (
        f'<geom name="{box.name}" type="box" pos="{_f(pos)}" size="{_f(box.half_size)}" '
        f'euler="0 0 {box.yaw:.6g}" rgba="{rgba}" {_col(col)} {extra}/>'
    )


_COLOURS = {
    "wall": "0.92 0.9 0.85 1",
    "fridge": "0.9 0.92 0.95 1",
    "counter": "0.55 0.4 0.3 1",
    "table": "0.6 0.45 0.3 1",
    "chair": "0.45 0.32 0.22 1",
    "sofa": "0.3 0.4 0.6 1",
    "coffee": "0.5 0.35 0.25 1",
    "tv": "0.12 0.12 0.14 1",
    "shelves": "0.7 0.6 0.45 1",
    "bed": "0.7 0.75 0.8 1",
    "plant": "0.2 0.55 0.25 1",
    "default": "0.65 0.6 0.55 1",
}


def _colour(name: str) -> str:
    for key, rgba in _COLOURS.items():
        if name.startswith(key):
            return rgba
    return _COLOURS["default"]


def build_scene_xml(
    layout: ApartmentLayout, object_kinds: Sequence[str], cfg: Mapping
) -> tuple[str, SceneNames]:
    """MJCF text for the apartment with the robot and one free body per object kind."""
    phys, art_cfg = cfg["physics"], cfg["articulated"]
    kinds = tuple(object_kind(k).name for k in object_kinds)
    (xmin, ymin), (xmax, ymax) = layout.bounds
    cx, cy = (xmin + xmax) / 2, (ymin + ymax) / 2
    rcfg = cfg["render"]
    offmax = int(rcfg["offscreen_max"])
    body: list[str] = []
    body.append(
        f'<geom name="floor" type="plane" size="{(xmax - xmin) / 2 + 6:.4g} {(ymax - ymin) / 2 + 6:.4g} 0.1" '
        f'pos="{cx:.4g} {cy:.4g} 0" material="floor_mat" {_col(STATIC_COL)}/>'
    )
    body.append(
        f'<light name="sun" directional="true" pos="{cx:.4g} {cy:.4g} 6" dir="0.3 0.2 -1" diffuse="0.6 0.6 0.6" castshadow="true"/>'
    )
    body.append(
        f'<light name="fill" directional="true" pos="{cx:.4g} {cy:.4g} 6" dir="-0.3 -0.4 -1" diffuse="0.3 0.3 0.3" castshadow="false"/>'
    )
    walls = wall_col(bool(phys["robot_wall_contacts"]))
    for w in layout.walls:
        body.append(_box_geom(w, _COLOURS["wall"], walls))
    for f in layout.furniture:
        body.append(_box_geom(f, _colour(f.name), STATIC_COL))

    art_names, handles, connects = [], [], []
    for a in layout.articulated.values():
        jp = np.asarray(a.joint_pos)
        hinge = a.joint_type == "hinge"
        damping = art_cfg["fridge_damping"] if hinge else art_cfg["drawer_damping"]
        friction = art_cfg["fridge_frictionloss"] if hinge else art_cfg["drawer_frictionloss"]
        total_mass = float(art_cfg["door_mass"] if hinge else art_cfg["drawer_mass"])
        body.append(f'<body name="{a.name}_body" pos="{_f(jp)}">')
        body.append(
            f'  <joint name="{a.name}_joint" type="{a.joint_type}" axis="{_f(a.joint_axis)}" range="{_f(a.joint_range)}" '
            f'limited="true" damping="{float(damping):.6g}" frictionloss="{float(friction):.6g}" armature="0.05"/>'
        )
        for p in a.parts:
            m = total_mass / len(a.parts)
            body.append("  " + _box_geom(p, _colour(a.name), ART_COL, jp, f'mass="{m:.6g}"'))
        hb = a.handle_box
        assert hb is not None, f"articulated {a.name} has no handle"
        body.append(f'  <body name="{a.handle}" pos="{_f(np.asarray(hb.center) - jp)}">')
        body.append(
            f'    <geom name="{a.handle}_geom" type="box" size="{_f(hb.half_size)}" rgba="0.8 0.1 0.1 1" mass="0.1" {_col(ART_COL)}/>'
        )
        body.append("  </body>")
        body.append("</body>")
        art_names.append(a.name)
        handles.append(a.handle)
        connects.append(f"grasp_{a.handle}")

    obj_names, welds = [], []
    for i, k in enumerate(kinds):
        kind = object_kind(k)
        name = f"obj_{i}"
        body.append(f'<body name="{name}" pos="{_f(park_position(i))}">')
        body.append(f'  <freejoint name="{name}_joint"/>')
        mass_each = kind.mass / len(kind.geoms)
        rgba = _f(kind.rgba)
        for j, g in enumerate(kind.geoms):
            body.append(
                f'  <geom name="{name}_g{j}" type="{g.type}" size="{_f(g.size)}" pos="{_f(g.pos)}" euler="{_f(g.euler)}" '
                f'mass="{mass_each:.6g}" rgba="{rgba}" condim="{int(phys["object_condim"])}" {_col(OBJECT_COL)}/>'
            )
        body.append("</body>")
        obj_names.append(name)
        welds.append(f"grasp_{name}")

    body.append(robot_body_xml(cfg, *ROBOT_COL))

    sol = f'solref="{_f(cfg["suction"]["solref"])}" solimp="{_f(cfg["suction"]["solimp"])}"'
    eq = [
        f'<weld name="grasp_{n}" body1="{GRIPPER_BODY}" body2="{n}" active="false" {sol}/>' for n in obj_names
    ]
    eq += [
        f'<connect name="grasp_{h}" body1="{GRIPPER_BODY}" body2="{h}" anchor="0 0 0" active="false" {sol}/>'
        for h in handles
    ]

    flags = '<flag energy="disable"/>'
    xml = f"""<mujoco model="apartment_{layout.seed}">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="{float(phys["timestep"]):.10g}" integrator="{phys["integrator"]}" iterations="{int(phys["iterations"])}"
          ls_iterations="{int(phys["ls_iterations"])}" noslip_iterations="{int(phys["noslip_iterations"])}"
          cone="{phys["cone"]}" impratio="{float(phys["impratio"]):.6g}">
    {flags}
  </option>
  <size memory="32M"/>
  <visual>
    <global offwidth="{offmax}" offheight="{offmax}"/>
    <quality shadowsize="2048" offsamples="{int(rcfg["offsamples"])}" numslices="{int(rcfg["numslices"])}"
             numstacks="{int(rcfg["numstacks"])}" numquads="{int(rcfg["numquads"])}"/>
    <headlight ambient="0.35 0.35 0.35" diffuse="0.4 0.4 0.4" specular="0 0 0"/>
  </visual>
  <default>
    <geom condim="{int(phys["condim"])}" friction="{_f(phys["friction"])}" solref="{_f(phys["solref"])}"
          solimp="{_f(phys["solimp"])}" margin="{float(phys["margin"]):.6g}"/>
  </default>
  <asset>
    <texture name="floor_tex" type="2d" builtin="checker" rgb1="0.78 0.74 0.68" rgb2="0.72 0.68 0.62" width="256" height="256"/>
    <material name="floor_mat" texture="floor_tex" texrepeat="8 8" reflectance="0"/>
  </asset>
  <worldbody>
{chr(10).join(body)}
  </worldbody>
  <equality>
{chr(10).join(eq)}
  </equality>
  <actuator>
{robot_actuator_xml(cfg)}
  </actuator>
</mujoco>
"""
    names = SceneNames(
        tuple(obj_names), kinds, tuple(art_names), tuple(handles), tuple(welds), tuple(connects)
    )
    return xml, names
