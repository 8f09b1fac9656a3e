"""Headless OpenGL rendering of a MuJoCo scene: head depth images and third-person RGB frames.

The GL backend is chosen when the first renderer is created (lazily, so a simulator can be built before
worker processes start; each process then makes its own context): MUJOCO_GL if set, else EGL, else
OSMesa. If none works, a RuntimeError with one line says what was tried and how to fix it.
Sensor frames are rendered without shadows, reflections or skybox (they dominate CPU rendering).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import mujoco
import numpy as np

_BACKENDS = ("egl", "osmesa")


def _import_context_class(backend: str) -> type:
    if backend == "egl":
        from mujoco.egl import GLContext
    elif backend == "osmesa":
        if "OpenGL" not in sys.modules and os.environ.get("PYOPENGL_PLATFORM", "osmesa") != "osmesa":
            os.environ["PYOPENGL_PLATFORM"] = "osmesa"
        from mujoco.osmesa import GLContext
    elif backend == "glfw":
        from mujoco.glfw import GLContext
    else:
        raise ImportError(f"unsupported MUJOCO_GL value {backend!r} (use egl, osmesa or glfw)")
    return GLContext


def create_gl_context(width: int, height: int):
    """An OpenGL context from the first backend that works (MUJOCO_GL if set, else egl then osmesa)."""
    requested = os.environ.get("MUJOCO_GL", "").strip().lower()
    tried = (requested,) if requested else _BACKENDS
    errors = []
    for backend in tried:
        try:
            ctx = _import_context_class(backend)(width, height)
            ctx.make_current()
            return ctx
        except Exception as err:  # noqa: BLE001 - any failure means "try the next backend"
            errors.append(f"{backend}: {type(err).__name__}: {err}".replace("\n", " "))
    raise RuntimeError(
        f"no working OpenGL backend for MuJoCo rendering (tried {'; '.join(errors)}); install libegl1 "
        "(EGL) or libosmesa6 (OSMesa) and set MUJOCO_GL=egl or MUJOCO_GL=osmesa"
    )


class SceneRenderer:
    """One GL context and one MuJoCo visual scene for a model; renders depth and RGB from any camera."""

    def __init__(self, model: mujoco.MjModel, max_geoms: int = 2000) -> None:
        self.model = model
        self._w, self._h = int(model.vis.global_.offwidth), int(model.vis.global_.offheight)
        self._ctx = create_gl_context(self._w, self._h)
        self._mjr = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._mjr)
        self._scene = mujoco.MjvScene(model, maxgeom=max_geoms)
        self._opt = mujoco.MjvOption()
        self._opt.sitegroup[:] = 0  # never draw sites (the end-effector marker)
        self._pert = mujoco.MjvPerturb()
        self._depth_buf: np.ndarray | None = None

    def _set_flags(self, shadows: bool) -> None:
        flags = self._scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SHADOW] = int(shadows)
        flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = 0
        flags[mujoco.mjtRndFlag.mjRND_FOG] = 0
        flags[mujoco.mjtRndFlag.mjRND_HAZE] = 0

    def _check_size(self, width: int, height: int) -> None:
        if width > self._w or height > self._h or width < 1 or height < 1:
            raise ValueError(
                f"frame size {width}x{height} outside 1..{self._w}x{self._h} (raise render.offscreen_max)"
            )

    def depth(
        self, data: mujoco.MjData, camera: mujoco.MjvCamera, width: int, height: int, max_depth: float
    ) -> np.ndarray:
        """Linear depth in metres, (height, width, 1) float32, clipped to [0, max_depth]."""
        self._check_size(width, height)
        self._ctx.make_current()
        mujoco.mjv_updateScene(
            self.model, data, self._opt, self._pert, camera, mujoco.mjtCatBit.mjCAT_ALL, self._scene
        )
        self._set_flags(False)
        self._scene.nlight = 0  # lighting does not change depth; skipping it saves fragment work
        viewport = mujoco.MjrRect(0, 0, width, height)
        mujoco.mjr_render(viewport, self._scene, self._mjr)
        if self._depth_buf is None or self._depth_buf.shape != (height, width):
            self._depth_buf = np.empty((height, width), dtype=np.float32)
        mujoco.mjr_readPixels(None, self._depth_buf, viewport, self._mjr)
        extent = self.model.stat.extent
        near = self.model.vis.map.znear * extent
        far = self.model.vis.map.zfar * extent
        lin = near / (1.0 - self._depth_buf * (1.0 - near / far))
        out = np.flipud(lin)
        return np.clip(out, 0.0, max_depth).astype(np.float32)[..., None]

    def rgb(
        self,
        data: mujoco.MjData,
        camera: mujoco.MjvCamera,
        width: int,
        height: int,
        marks: Sequence[tuple[Sequence[float], Sequence[float]]] = (),
        mark_radius: float = 0.08,
        shadows: bool = False,
        see_through: np.ndarray | None = None,
        see_through_alpha: float = 0.2,
    ) -> np.ndarray:
        """RGB frame (height, width, 3) uint8, with `marks` (pos, rgba) drawn as translucent spheres.

        Geoms whose ids are set in the boolean mask `see_through` are drawn translucent (walls in videos).
        """
        self._check_size(width, height)
        self._ctx.make_current()
        mujoco.mjv_updateScene(
            self.model, data, self._opt, self._pert, camera, mujoco.mjtCatBit.mjCAT_ALL, self._scene
        )
        self._set_flags(shadows)
        if see_through is not None:
            for i in range(self._scene.ngeom):
                g = self._scene.geoms[i]
                if g.objtype == mujoco.mjtObj.mjOBJ_GEOM and see_through[g.objid]:
                    g.rgba[3] = see_through_alpha
        for pos, rgba in marks:
            if self._scene.ngeom >= self._scene.maxgeom:
                break
            geom = self._scene.geoms[self._scene.ngeom]
            mujoco.mjv_initGeom(
                geom,
                mujoco.mjtGeom.mjGEOM_SPHERE,
                np.array([mark_radius, 0.0, 0.0]),
                np.asarray(pos, dtype=np.float64),
                np.eye(3).flatten(),
                np.asarray(rgba, dtype=np.float32),
            )
            self._scene.ngeom += 1
        viewport = mujoco.MjrRect(0, 0, width, height)
        mujoco.mjr_render(viewport, self._scene, self._mjr)
        out = np.empty((height, width, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(out, None, viewport, self._mjr)
        return np.flipud(out).copy()

    def close(self) -> None:
        """Free the GL resources (safe to call twice)."""
        if self._ctx is not None:
            self._ctx.make_current()
            self._mjr.free()
            self._ctx.free()
            self._ctx = None


def fixed_camera(model: mujoco.MjModel, name: str) -> mujoco.MjvCamera:
    """An MjvCamera bound to the model camera `name`."""
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
    cam.fixedcamid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name)
    return cam


def free_camera(
    lookat: Sequence[float], distance: float, azimuth_deg: float, elevation_deg: float
) -> mujoco.MjvCamera:
    """A free camera looking at `lookat` from `distance`, azimuth 0 = looking along +x."""
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = lookat
    cam.distance = distance
    cam.azimuth = azimuth_deg
    cam.elevation = elevation_deg
    return cam


def colorize_depth(depth: np.ndarray, max_depth: float) -> np.ndarray:
    """A depth image (H, W[, 1]) as an RGB uint8 image with matplotlib's viridis colour map."""
    from matplotlib import colormaps

    d = np.clip(np.asarray(depth)[..., 0] if depth.ndim == 3 else depth, 0.0, max_depth) / max_depth
    return (colormaps["viridis"](d)[..., :3] * 255).astype(np.uint8)
