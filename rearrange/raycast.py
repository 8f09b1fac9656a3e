"""Ray casting with `mujoco.mj_multiRay`: the head camera's depth image, and the base's range finder.

`HeadDepthRaycaster` computes the rendered head camera's pinhole image.

One ray per pixel centre, from the camera origin, with the rendered camera's pose, fovy and aspect
(MuJoCo cameras look along their frame's -z, x right, y up; `fovy` spans the image height). The result
has the rendered depth's semantics: z-depth along the optical axis (not the ray length), metres,
(H, W, 1) float32 clipped to [0, max_depth], max_depth where no geom is hit. It sees what the renderer
draws (`SceneRenderer`'s geom groups, the robot's arm and a held object included; the head box the
camera is mounted on is excluded, and unlike the renderer nothing is clipped by the near plane). No GL
context is needed, so it runs in any process; 16x16 costs ~0.2 ms on one CPU core (bench-sim
--depth-sweep), a rendered frame of any size 1.5 ms or more.
"""

from __future__ import annotations

import mujoco
import numpy as np

DEPTH_BACKENDS = ("render", "raycast")
# geom groups the sensor renderer draws (a default MjvOption: groups 0-2)
RENDERED_GEOMGROUP = np.array(mujoco.MjvOption().geomgroup, dtype=np.uint8)


def check_depth_backend(name: str) -> str:
    """`name` if it is a valid `camera.head.backend`, else a ValueError naming the valid choices."""
    if name not in DEPTH_BACKENDS:
        raise ValueError(f"unknown camera.head.backend '{name}'; valid choices: {', '.join(DEPTH_BACKENDS)}")
    return name


def pixel_rays(width: int, height: int, fovy_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """Unit ray directions through the pixel centres in the camera frame, (H*W, 3) row-major from the
    top-left pixel, and each ray's z-depth per unit of ray length (the cosine to the optical axis)."""
    half_h = np.tan(np.deg2rad(fovy_deg) / 2.0)
    half_w = half_h * width / height
    x = ((np.arange(width) + 0.5) / width * 2.0 - 1.0) * half_w
    y = (1.0 - (np.arange(height) + 0.5) / height * 2.0) * half_h
    xx, yy = np.meshgrid(x, y)
    rays = np.stack([xx.ravel(), yy.ravel(), -np.ones(xx.size)], axis=1)
    norm = np.linalg.norm(rays, axis=1)
    return rays / norm[:, None], 1.0 / norm


class HeadDepthRaycaster:
    """Depth images of one model camera by ray casting; ray directions and buffers are allocated once.

    `exclude_body`: a body whose geoms the rays pass through (-1: none), e.g. the camera's own housing.
    `geomgroup`: the geom groups that are seen (None: all).
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        camera: str,
        width: int,
        height: int,
        max_depth: float,
        exclude_body: int = -1,
        geomgroup: np.ndarray | None = RENDERED_GEOMGROUP,
    ) -> None:
        if width < 1 or height < 1 or max_depth <= 0.0:
            raise ValueError(f"ray-cast depth needs a positive size and max_depth, got {width}x{height}, {max_depth}")
        self.model = model
        self.width, self.height, self.max_depth = int(width), int(height), float(max_depth)
        self._cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
        if self._cam < 0:
            raise ValueError(f"no camera named {camera!r} in the model")
        self._exclude = int(exclude_body)
        self._rays_cam, self._z_per_dist = pixel_rays(self.width, self.height, float(model.cam_fovy[self._cam]))
        self._geomgroup = None if geomgroup is None else np.asarray(geomgroup, dtype=np.uint8)
        n = self._rays_cam.shape[0]
        self._vec = np.empty((n, 3))
        self._dist = np.empty(n)
        self._geomid = np.empty(n, dtype=np.int32)
        # no ray needs to look further than the one whose z-depth reaches max_depth at the image corner
        self._cutoff = self.max_depth / float(self._z_per_dist.min())

    def depth(self, data: mujoco.MjData) -> np.ndarray:
        """Z-depth in metres, (height, width, 1) float32, clipped to [0, max_depth]; needs the camera pose
        (`data.cam_xpos`, `cam_xmat`) and geom poses of the current state (as after mj_kinematics)."""
        rot = data.cam_xmat[self._cam].reshape(3, 3)
        np.matmul(self._rays_cam, rot.T, out=self._vec)
        mujoco.mj_multiRay(
            self.model, data, data.cam_xpos[self._cam], self._vec.reshape(-1), self._geomgroup, 1,
            self._exclude, self._geomid, self._dist, None, self._dist.shape[0], self._cutoff,
        )
        z = self._dist * self._z_per_dist
        z[self._geomid < 0] = self.max_depth
        return np.clip(z, 0.0, self.max_depth).astype(np.float32).reshape(self.height, self.width, 1)


# base_ranges: a horizontal ring of rays round the base at each height (m above the floor, inside the base
# disc's 0.02-0.38 m), ray 0 straight ahead, then counter-clockwise (to the robot's left)
BASE_RANGE_RAYS = 32
BASE_RANGE_HEIGHTS = (0.1, 0.3)
BASE_RANGE_MAX = 2.0  # m of clearance beyond the base's rim; farther obstacles read as this


class BaseRangeFinder:
    """The clearance between the base's rim and the nearest geometry along a ring of horizontal rays (a
    planar range finder round the base, like a mobile base's laser scanner; the head camera looks forwards
    only). Rays start at the base's centre and pass through `base_body`'s geoms (the base disc and torso
    column); they see the scene, the arm and objects. `ranges` returns (len(heights) * rays,) float32 in
    [0, max_range], height-major, max_range where nothing is hit within it."""

    def __init__(
        self,
        model: mujoco.MjModel,
        base_body: int,
        radius: float,
        rays: int = BASE_RANGE_RAYS,
        heights: tuple[float, ...] = BASE_RANGE_HEIGHTS,
        max_range: float = BASE_RANGE_MAX,
        geomgroup: np.ndarray | None = RENDERED_GEOMGROUP,
    ) -> None:
        if rays < 1 or not heights or max_range <= 0.0 or radius < 0.0:
            raise ValueError(f"a base range finder needs rays, heights and a positive range, got {rays}, {heights}, {max_range}")
        self.model = model
        self._exclude = int(base_body)
        self.radius, self.max_range = float(radius), float(max_range)
        self.heights = tuple(float(h) for h in heights)
        self._angles = 2.0 * np.pi * np.arange(rays) / rays
        self._geomgroup = None if geomgroup is None else np.asarray(geomgroup, dtype=np.uint8)
        self._vec = np.zeros((rays, 3))
        self._dist = np.empty(rays)
        self._geomid = np.empty(rays, dtype=np.int32)
        self._out = np.empty((len(self.heights), rays), dtype=np.float32)

    def ranges(self, data: mujoco.MjData, base_xy: np.ndarray, base_yaw: float) -> np.ndarray:
        """Clearances in metres for the base at `base_xy`, heading `base_yaw` (geom poses of the current
        state, as after mj_kinematics)."""
        a = self._angles + float(base_yaw)
        self._vec[:, 0], self._vec[:, 1] = np.cos(a), np.sin(a)
        cutoff = self.radius + self.max_range
        for i, h in enumerate(self.heights):
            origin = np.array([float(base_xy[0]), float(base_xy[1]), h])
            mujoco.mj_multiRay(
                self.model, data, origin, self._vec.reshape(-1), self._geomgroup, 1, self._exclude,
                self._geomid, self._dist, None, self._dist.shape[0], cutoff,
            )
            clear = self._dist - self.radius
            clear[self._geomid < 0] = self.max_range
            self._out[i] = np.clip(clear, 0.0, self.max_range)
        return self._out.reshape(-1).copy()
