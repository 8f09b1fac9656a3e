"""What RearrangeSim sees and shows: the head camera's depth (rendered or ray-cast), the base's range finder,
and the RGB renders for videos and documentation.

`SimViews` owns the GL renderer (created lazily, in the process that renders), the ray casters (one per
camera size) and the range finder, and sets the model's clipping planes and field of view once from
`sim.camera`. RearrangeSim builds one and exposes its methods (docs/CONTRACTS.md, section rearrange.sim);
nothing else uses this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mujoco
import numpy as np

from rearrange import robot as robot_mjcf
from rearrange.raycast import BaseRangeFinder, HeadDepthRaycaster, check_depth_backend
from rearrange.render import SceneRenderer, fixed_camera, free_camera


class SimViews:
    """The sim's cameras and range finder over one MuJoCo model and data."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, cfg: dict[str, Any],
                 bounds: tuple[tuple[float, float], tuple[float, float]], wall_names: set[str]) -> None:
        self.model, self.data = model, data
        cam = cfg["camera"]
        self._head_cfg = cam["head"]
        self._third_cfg = cam["third"]
        self._render_cfg = cfg["render"]
        self._base_radius = float(cfg["base"]["radius"])
        self._bounds = bounds
        self._depth_backend = check_depth_backend(str(cam["head"]["backend"]))
        far = float(cam["head"]["max_depth"]) * 4.0  # the far plane: 4 x the clipping depth
        model.vis.map.znear = float(cam["head"]["near"]) / model.stat.extent
        model.vis.map.zfar = far / model.stat.extent
        model.vis.global_.fovy = float(cam["third"]["fovy_deg"])
        self._is_wall_geom = np.array([model.geom(i).name in wall_names for i in range(model.ngeom)])
        self._head_cam = fixed_camera(model, robot_mjcf.HEAD_CAMERA)
        self.renderer: SceneRenderer | None = None
        self._raycasters: dict[tuple[int, int, float], HeadDepthRaycaster] = {}  # (w, h, max_depth)
        self._range_finder: BaseRangeFinder | None = None

    def _get_renderer(self) -> SceneRenderer:
        if self.renderer is None:
            self.renderer = SceneRenderer(self.model)
        return self.renderer

    def _head_size(self, width: int | None, height: int | None, max_depth: float | None) -> tuple[int, int, float]:
        c = self._head_cfg
        return (
            int(c["width"] if width is None else width),
            int(c["height"] if height is None else height),
            float(c["max_depth"] if max_depth is None else max_depth),
        )

    def head_depth(self) -> np.ndarray:
        """The head_depth observation from `camera.head.backend`: rendered (GL) or ray-cast, same semantics."""
        if self._depth_backend == "raycast":
            return self.raycast_head_depth()
        return self.render_head_depth()

    def raycast_head_depth(
        self, width: int | None = None, height: int | None = None, max_depth: float | None = None
    ) -> np.ndarray:
        """Head camera depth by ray casting (`rearrange.raycast`), as `render_head_depth` without GL."""
        key = self._head_size(width, height, max_depth)
        caster = self._raycasters.get(key)
        if caster is None:
            # rays start at the camera, just in front of the head box it is mounted on: never see the head
            head = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, "head_pan")
            caster = HeadDepthRaycaster(self.model, robot_mjcf.HEAD_CAMERA, *key, exclude_body=head)
            self._raycasters[key] = caster
        return caster.depth(self.data)

    def base_ranges(self, base_xy: np.ndarray, base_yaw: float) -> np.ndarray:
        """Clearances round the base's rim along a ring of horizontal rays (`rearrange.raycast.BaseRangeFinder`)."""
        if self._range_finder is None:
            base = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, "robot_base")
            self._range_finder = BaseRangeFinder(self.model, base, self._base_radius)
        return self._range_finder.ranges(self.data, base_xy, base_yaw)

    def render_head_depth(
        self, width: int | None = None, height: int | None = None, max_depth: float | None = None
    ) -> np.ndarray:
        """Head camera depth, (H, W, 1) float32 metres clipped to [0, max_depth]."""
        return self._get_renderer().depth(self.data, self._head_cam, *self._head_size(width, height, max_depth))

    def render_third_rgb(self, base_xy: np.ndarray, base_yaw: float, width: int, height: int,
                         marks: Sequence[tuple[Sequence[float], Sequence[float]]] = ()) -> np.ndarray:
        """Third-person RGB view from behind and above the base at (base_xy, base_yaw), walls see-through."""
        c = self._third_cfg
        cam = free_camera(
            (base_xy[0], base_xy[1], 0.8),
            float(c["distance"]),
            float(np.rad2deg(base_yaw)) + float(c["azimuth_offset_deg"]),
            float(c["elevation_deg"]),
        )
        return self._get_renderer().rgb(
            self.data, cam, width, height, marks,
            mark_radius=float(self._render_cfg["mark_radius"]),
            shadows=bool(self._render_cfg["shadows_in_video"]),
            see_through=self._is_wall_geom,
        )

    def render_overview_rgb(
        self, width: int, height: int, marks: Sequence[tuple[Sequence[float], Sequence[float]]] = ()
    ) -> np.ndarray:
        """A high view of the whole apartment (for documentation and debugging)."""
        (xmin, ymin), (xmax, ymax) = self._bounds
        tan_v = np.tan(np.deg2rad(self.model.vis.global_.fovy) / 2)
        dist = 1.5 * max((ymax - ymin) / 2 / tan_v, (xmax - xmin) / 2 / (tan_v * width / height))
        cam = free_camera(((xmin + xmax) / 2, (ymin + ymax) / 2 - 0.3, 0.0), dist, 90.0, -70.0)
        return self._get_renderer().rgb(
            self.data, cam, width, height, marks, mark_radius=float(self._render_cfg["mark_radius"])
        )

    def close(self) -> None:
        """Free the GL context, if one was made."""
        if self.renderer is not None:
            self.renderer.close()
            self.renderer = None
