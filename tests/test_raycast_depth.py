"""Ray-cast head depth (camera.head.backend: raycast): agrees with the rendered depth, with wall geometry,
returns max_depth where nothing is hit, and builds observations that match the env's spaces."""

from __future__ import annotations

import numpy as np
import pytest

from rearrange.layout import generate_layout
from rearrange.raycast import pixel_rays
from rearrange.sensors import camera_settings
from rearrange.sim import RearrangeSim
from tests.sim_poses import face_south_wall


def _raycast_cfg(width: int, height: int, **head: float) -> dict:
    return {"camera": {"head": {"backend": "raycast", "width": width, "height": height, **head}}}


@pytest.fixture(scope="module")
def layout():
    return generate_layout(101)


def test_pixel_rays_are_a_pinhole_grid():
    rays, z_per_dist = pixel_rays(4, 2, 90.0)
    assert rays.shape == (8, 3) and np.allclose(np.linalg.norm(rays, axis=1), 1.0)
    assert np.allclose(-rays[:, 2], z_per_dist)  # the camera looks along -z
    # pixel centres: the top-left ray points left (-x) and up (+y); fovy spans the height, aspect the width
    x, y = rays[0, :2] / z_per_dist[0]
    assert x == pytest.approx(-0.75 * 2.0) and y == pytest.approx(0.5)


def test_raycast_matches_render_in_pick_scene():
    from rearrange.bench import _pick_sim, pick_like_state

    for width, height in ((16, 16), (24, 18)):
        sim = _pick_sim(100, 5, "raycast", width, height)
        rng = np.random.default_rng(0)
        for k in range(4):
            pick_like_state(sim, rng)
            for _ in range(5 * k):  # move arm and base: the arm is in view, like in the rendered image
                a = rng.uniform(-1.0, 1.0, 11)
                sim.step(a[0:7], None, a[8:10])
            ray, ren = sim.head_depth(), sim.render_head_depth()
            assert ray.shape == ren.shape == (height, width, 1) and ray.dtype == np.float32
            err = np.abs(ray - ren)
            assert np.median(err) < 0.005
            assert np.mean(err < 0.05) > 0.95  # object and arm edges may land on either side
            assert ray.std() > 0.1  # a real scene, not a blank image
        sim.close()


def test_wall_in_front_gives_its_depth(layout):
    sim = RearrangeSim(layout, [], _raycast_cfg(24, 16))
    wall_y = face_south_wall(sim, 1.0)
    depth = sim.head_depth()[..., 0]
    assert sim.views.renderer is None  # no GL context was needed
    cam = sim.model.camera("head_depth").id
    pos, rot = sim.data.cam_xpos[cam], sim.data.cam_xmat[cam].reshape(3, 3)
    # pinhole rays through the pixel centres (fovy 90 spans the height), hitting the wall plane or the floor
    half = np.tan(np.deg2rad(45.0))
    u = (np.arange(24) + 0.5) / 24 * 2 - 1
    v = 1 - (np.arange(16) + 0.5) / 16 * 2
    uu, vv = np.meshgrid(u * half * 24 / 16, v * half)
    dirs = np.stack([uu, vv, -np.ones_like(uu)], axis=-1) @ rot.T  # one unit along the optical axis
    t_wall = (wall_y - pos[1]) / dirs[..., 1]
    t_floor = np.where(dirs[..., 2] < 0, -pos[2] / np.minimum(dirs[..., 2], -1e-9), np.inf)
    expected = np.minimum(t_wall, t_floor)  # in units of the ray's optical-axis component: z-depth
    assert np.mean(np.abs(depth - expected) < 0.01) > 0.95
    assert depth[7:9, 11:13].mean() == pytest.approx(expected[7:9, 11:13].mean(), abs=0.01)
    sim.close()


def test_nothing_hit_or_too_far_gives_max_depth(layout):
    # looking straight up (no ceiling): no ray hits anything
    sim = RearrangeSim(layout, [], _raycast_cfg(16, 16, tilt_deg=-90.0, fovy_deg=60.0))
    face_south_wall(sim, 1.0)
    assert np.all(sim.head_depth() == 10.0)
    assert np.all(sim.render_head_depth() == 10.0)
    sim.close()
    # a wall 2 m away seen with max_depth 1: everything clips to 1
    sim = RearrangeSim(layout, [], _raycast_cfg(16, 16, max_depth=1.0))
    face_south_wall(sim, 2.0)
    depth = sim.head_depth()
    assert depth.max() == 1.0 and depth.min() >= 0.0
    assert np.all(depth[6:10, 6:10] == 1.0)
    sim.close()


def test_shape_follows_config_and_bad_backend_is_one_line(layout):
    assert camera_settings(_raycast_cfg(20, 12)) == ((12, 20), 10.0)
    sim = RearrangeSim(layout, [], _raycast_cfg(20, 12))
    assert sim.head_depth().shape == (12, 20, 1)
    sim.close()
    for make in (lambda c: camera_settings(c), lambda c: RearrangeSim(layout, [], c)):
        with pytest.raises(ValueError, match="valid choices: render, raycast"):
            make({"camera": {"head": {"backend": "lidar"}}})


def test_env_observations_match_space_with_raycast():
    from rearrange.env import RearrangeEnv
    from rearrange.generate import generate_episodes
    from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task

    env = RearrangeEnv(make_skill_task(load_skill_config("pick")), generate_episodes("pick", "val", 1, seed=3),
                       sim_cfg=_raycast_cfg(16, 12))
    assert env.observation_space["head_depth"].shape == (12, 16, 1)
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(5):
        assert env.observation_space.contains(obs)
        obs, *_ = env.step(env.action_space.sample())
    assert env.sim.views.renderer is None  # observations never touched GL
    err = np.abs(obs["head_depth"] - env.sim.render_head_depth())
    assert np.median(err) < 0.005 and np.mean(err < 0.05) > 0.95
    env.close()


def test_cpu_sim_config_composes():
    from configs.compose import compose

    cfg = compose("train_skill", ["sim=cpu"])
    head = cfg.sim.camera.head
    assert head.backend == "raycast" and head.width == head.height < 128
    assert cfg.sim.physics.substeps == 4  # the rest comes from sim/default.yaml
    assert "defaults" not in cfg.sim
