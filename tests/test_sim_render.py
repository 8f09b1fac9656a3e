"""Rendering: head depth geometry and size, third-person RGB with marks, GL backend fallback errors."""

from __future__ import annotations

import numpy as np
import pytest

from rearrange import render
from rearrange.layout import generate_layout
from rearrange.sim import RearrangeSim
from tests.sim_poses import face_south_wall


@pytest.fixture(scope="module")
def layout():
    return generate_layout(101)


def test_head_depth_matches_geometry(layout):
    sim = RearrangeSim(layout, [])
    assert sim.views.renderer is None  # GL context is created lazily, in the process that renders
    wall_y = face_south_wall(sim, 1.0)
    depth = sim.render_head_depth()
    assert depth.shape == (128, 128, 1) and depth.dtype == np.float32
    assert depth.min() >= 0.0 and depth.max() <= sim.cfg["camera"]["head"]["max_depth"]
    cam = sim.model.camera("head_depth").id
    pos = sim.data.cam_xpos[cam]
    axis = -sim.data.cam_xmat[cam].reshape(3, 3)[:, 2]  # optical axis
    t_wall = (wall_y - pos[1]) / axis[1]
    t_floor = -pos[2] / axis[2]
    expected = min(t_wall, t_floor)
    centre = depth[63:65, 63:65, 0].mean()
    assert centre == pytest.approx(expected, abs=0.03)
    # the top of the image looks further away than the bottom (camera tilted down towards the floor)
    sim.set_base_pose(sim.base_xy + np.array([0.0, 1.5]), -np.pi / 2)
    far = sim.render_head_depth()
    assert far[64, 64, 0] > centre + 0.5
    sim.close()


def test_head_depth_size_is_configurable(layout):
    sim = RearrangeSim(layout, [], {"camera": {"head": {"width": 64, "height": 48, "fovy_deg": 70.0}}})
    assert sim.render_head_depth().shape == (48, 64, 1)
    sim.close()


def test_third_person_rgb_with_marks(layout):
    sim = RearrangeSim(layout, ["apple"])
    rec = layout.receptacles["table_0"]
    apple = (rec.center[0], rec.center[1], rec.center[2] + 0.04)
    sim.reset_state({"obj_0": (apple, (1, 0, 0, 0))}, {}, (rec.center[0], rec.center[1] - 1.2), np.pi / 2)
    plain = sim.render_third_rgb(320, 240)
    marked = sim.render_third_rgb(320, 240, marks=[(apple, (0.0, 1.0, 0.0, 0.6))])
    assert plain.shape == (240, 320, 3) and plain.dtype == np.uint8
    assert plain.std() > 5  # not a blank frame
    changed = np.abs(marked.astype(int) - plain.astype(int)).sum(axis=2) > 30
    assert changed.sum() > 40
    greener = marked[changed][:, 1].astype(int) - plain[changed][:, 1].astype(int)
    assert greener.mean() > 0
    overview = sim.render_overview_rgb(200, 100)
    assert overview.shape == (100, 200, 3) and overview.std() > 5
    with pytest.raises(ValueError, match="frame size"):
        sim.render_third_rgb(5000, 10)
    sim.close()


def test_no_gl_backend_gives_one_line_error(monkeypatch):
    def broken(backend):
        raise ImportError(f"lib for {backend} missing\nsecond line")

    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.setattr(render, "_import_context_class", broken)
    with pytest.raises(RuntimeError) as err:
        render.create_gl_context(64, 64)
    msg = str(err.value)
    assert "\n" not in msg
    assert "egl" in msg and "osmesa" in msg and "libegl1" in msg and "libosmesa6" in msg
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    with pytest.raises(RuntimeError, match="tried osmesa"):
        render.create_gl_context(64, 64)


def test_colorize_depth():
    img = render.colorize_depth(np.linspace(0, 10, 64, dtype=np.float32).reshape(8, 8, 1), 10.0)
    assert img.shape == (8, 8, 3) and img.dtype == np.uint8
    assert not np.array_equal(img[0, 0], img[-1, -1])


def test_bench_sim_cli(tmp_path, capsys):
    from rearrange import bench

    bench.main(["--steps", "5", "--width", "32", "--height", "32", "--objects", "2"])
    out = capsys.readouterr().out
    assert "head depth render" in out and "steps/s" in out
    bench.main(["--steps", "3", "--width", "16", "--height", "16", "--objects", "2", "--depth-backend", "raycast",
                "--repeats", "2"])
    assert "head depth raycast" in capsys.readouterr().out
    bench.main(["--steps", "2", "--depth-sweep"])
    out = capsys.readouterr().out
    assert "raycast       8x8" in out and "render    128x128" in out
    bench.main(["--steps", "3", "--env-step", "--depth-backend", "none"])
    assert "steps/s per core" in capsys.readouterr().out
    png = tmp_path / "docs" / "apartment.png"
    bench.main(["--snapshot", str(png), "--layout-seed", "101"])
    import imageio.v3 as iio

    image = iio.imread(png)
    assert image.ndim == 3 and image.shape[0] == 540 and image.shape[1] > 960
    assert [p.name for p in png.parent.iterdir()] == ["apartment.png"]  # no temp files left
    with pytest.raises(SystemExit) as exc:
        bench.main(["--steps", "0"])
    assert exc.value.code == 2
