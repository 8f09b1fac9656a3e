"""RearrangeEnv: determinism, spaces, action subsets, measures, registration and pickling."""

import pickle

import gymnasium
import numpy as np
import pytest

from rearrange.actions import ACTION_SLICES, action_space, expand_action
from rearrange.env import ENV_SPECS, RearrangeEnv, make_registered_env, register_envs
from rearrange.generate import generate_episodes
from rearrange.layout import generate_layout
from rearrange.navmap import NavMap
from rearrange.sensors import SENSORS
from rearrange.tasks.base import ExploreTask


@pytest.fixture(scope="module")
def episodes():
    return generate_episodes("pick", "val", 2, seed=11)


def _run(episodes, seed: int, steps: int):
    env = RearrangeEnv(ExploreTask(max_steps=1000), episodes)
    obs, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs)
    env.close()
    return obs, info


def test_expand_action_subsets():
    full = expand_action(["arm", "grip", "base"], np.arange(10) / 10.0)
    assert full.shape == (11,) and full[10] == 0.0
    assert np.allclose(full[ACTION_SLICES["base"]], [0.8, 0.9])
    nav = expand_action(["base", "stop"], np.array([2.0, -0.5, 1.0]))
    assert np.allclose(nav, [0] * 8 + [1.0, -0.5, 1.0])  # clipped to [-1, 1]
    assert action_space(["base", "stop"]).shape == (3,)
    with pytest.raises(ValueError, match="valid choices"):
        expand_action(["legs"], np.zeros(2))
    with pytest.raises(ValueError, match="dims"):
        expand_action(["arm"], np.zeros(3))


def test_same_seed_same_observations(episodes):
    obs_a, info_a = _run(episodes, seed=5, steps=100)
    obs_b, info_b = _run(episodes, seed=5, steps=100)
    for k in obs_a:
        np.testing.assert_array_equal(obs_a[k], obs_b[k], err_msg=k)
    assert info_a == info_b
    obs_c, _ = _run(episodes, seed=6, steps=20)  # a different seed gives a different run
    assert any(not np.array_equal(obs_a[k], obs_c[k]) for k in obs_a)


def test_obs_match_space_and_measures(episodes):
    env = RearrangeEnv(ExploreTask(max_steps=3), episodes, episode_order="cycle")
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    ep = env.current_episode
    assert ep is episodes[0]
    # the robot starts where the episode says, objects where they were settled
    assert np.allclose(env.sim.base_xy, ep.robot_start["xy"], atol=1e-6)
    assert np.allclose(env.sim.object_pos(ep.targets[0].object), ep.object_spec(ep.targets[0].object).pos, atol=0.01)
    for key in ("robot_contact_force", "ee_to_object_dist", "object_to_goal_dist", "art_q/fridge", "success"):
        assert key in info and np.isfinite(info[key])
    assert info["object_to_goal_dist"] == pytest.approx(
        np.linalg.norm(np.subtract(ep.object_spec(ep.targets[0].object).pos, ep.targets[0].goal_pos)), abs=0.02)
    # obj_start_sensor points from the ee to the object: its length is the ee->object distance
    assert np.linalg.norm(obs["obj_start_sensor"]) == pytest.approx(info["ee_to_object_dist"], abs=1e-4)
    # driving forward moves the base along its heading; truncation at max_steps
    yaw = env.sim.base_yaw
    start = np.array(env.sim.base_xy)
    a = np.zeros(11)
    a[8] = 1.0
    _, _, term, trunc, _ = env.step(a)
    moved = np.array(env.sim.base_xy) - start
    if not env.sim.base_collided:
        assert moved @ np.array([np.cos(yaw), np.sin(yaw)]) > 0.05
    assert not term and not trunc
    env.step(np.zeros(11))
    _, _, term, trunc, _ = env.step(np.zeros(11))
    assert trunc and not term
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == (256, 256, 3)
    # cycling moves on to the next episode
    env.reset()
    assert env.current_episode is episodes[1]
    env.close()


def test_subset_env_and_pickling(episodes):
    task = ExploreTask(max_steps=10, obs_keys=("joint", "goal_to_agent_gps_compass", "localization_sensor"),
                       action_subsets=("base", "stop"))
    env = RearrangeEnv(task, episodes)
    clone = pickle.loads(pickle.dumps(env))  # constructible in a worker: no sim, no GL yet
    assert clone.sim is None
    obs, _ = clone.reset(seed=1)
    assert set(obs) == {"joint", "goal_to_agent_gps_compass", "localization_sensor"}
    arm_before = clone.sim.arm_target.copy()
    obs, *_ = clone.step(np.array([0.0, 1.0, 0.0]))  # turn left; arm commands untouched
    np.testing.assert_array_equal(clone.sim.arm_target, arm_before)
    assert clone.sim.grasped is None
    assert obs["localization_sensor"][2] == pytest.approx(clone.sim.base_yaw, abs=1e-6)
    clone.close()


def test_registered_explore_env(episodes, tmp_path):
    register_envs()
    assert "rearrange/Explore-v0" in gymnasium.registry and "rearrange/Explore-v0" in ENV_SPECS
    from rearrange.episodes import save_episodes

    path = tmp_path / "eps.json.gz"
    save_episodes(path, episodes)
    env = gymnasium.make("rearrange/Explore-v0", episodes=str(path))
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    assert env.action_space.shape == (11,)
    env.close()
    generated = gymnasium.make("rearrange/Explore-v0", split="val", episode_seed=1, episode_count=2)
    generated.reset(seed=0)
    assert len(generated.unwrapped.episodes) == 2 and generated.unwrapped.episodes[0].split == "val"
    generated.close()
    with pytest.raises(ValueError, match="valid choices"):
        make_registered_env("rearrange/Nope-v0")


def test_sim_cache_reuses_sims_per_layout(episodes):
    assert episodes[0].layout_seed != episodes[1].layout_seed or episodes[0].object_kinds() != episodes[1].object_kinds()
    env = RearrangeEnv(ExploreTask(), episodes, episode_order="cycle", sim_cache_size=2)
    env.reset(seed=0)
    first = env.sim
    env.reset()
    second = env.sim
    env.reset()
    assert env.sim is first and second is not first
    single = RearrangeEnv(ExploreTask(), episodes, episode_order="cycle")
    single.reset(seed=0)
    sim0 = single.sim
    single.reset()
    single.reset()
    assert single.sim is not sim0  # cache of one: rebuilt when the layout changes
    env.close()
    single.close()


def test_sims_rebuilt_on_one_layout_share_its_maps_and_match_fresh_ones(episodes):
    """A sim rebuilt for a layout seed gets the same layout object and NavMap (built once per process,
    not at every reset), equal to a map built from scratch; the sim config is a fresh copy each time."""
    single = RearrangeEnv(ExploreTask(), episodes, episode_order="cycle")
    single.reset(seed=0)
    sim0, map0 = single.sim, single.sim.navmap
    sim0.cfg["physics"]["substeps"] = -1  # a user's change to one sim's config stays in that sim
    single.reset()
    single.reset()
    assert single.sim is not sim0 and single.sim.layout is sim0.layout and single.sim.navmap is map0
    assert single.sim.cfg["physics"]["substeps"] > 0
    fresh = NavMap(generate_layout(episodes[0].layout_seed), robot_radius=map0.robot_radius)
    assert np.array_equal(fresh.free_mask, map0.free_mask)
    single.close()


def test_merged_sim_config_cache_stays_bounded_and_correct():
    """Many distinct sim configs in one process: the cache keeps at most its bound, and a config whose
    entry was dropped merges again to the same values."""
    from rearrange import sim as sim_module

    first = sim_module.load_sim_config({"physics": {"substeps": 3}})
    for n in range(sim_module._MERGED_CONFIGS_MAX + 8):
        assert sim_module.load_sim_config({"camera": {"head": {"width": 8 + n}}})["camera"]["head"]["width"] == 8 + n
    assert len(sim_module._merged_configs) <= sim_module._MERGED_CONFIGS_MAX
    assert sim_module.load_sim_config({"physics": {"substeps": 3}}) == first


def test_sensor_geometry():
    """Sensors agree with the sim: holding at place start, gps-compass to the nav goal, handle offset."""
    names = ("joint", "ee_pos", "is_holding", "relative_resting_position", "obj_goal_sensor",
             "goal_to_agent_gps_compass", "marker_rel_pos", "localization_sensor")
    place, nav, fridge = (generate_episodes(k, "val", 1, seed=2)[0] for k in ("place", "nav", "open_fridge"))
    env = RearrangeEnv(ExploreTask(obs_keys=names), [place, nav, fridge], episode_order="cycle")
    obs, info = env.reset(seed=0)
    sim = env.sim
    assert obs["is_holding"][0] == 1.0 and info["holding_object"] == 1.0
    assert sim.grasped == place.info["start_holding"]
    np.testing.assert_allclose(obs["ee_pos"], sim.ee_pos_base, atol=1e-6)
    np.testing.assert_allclose(obs["relative_resting_position"], sim.resting_pos_base - sim.ee_pos_base, atol=1e-6)
    np.testing.assert_allclose(obs["joint"], sim.arm_qpos, atol=1e-6)
    assert np.linalg.norm(obs["obj_goal_sensor"]) == pytest.approx(
        np.linalg.norm(np.asarray(place.targets[0].goal_pos) - sim.ee_pos), abs=1e-4)

    obs, info = env.reset()  # nav
    sim = env.sim
    goal = np.asarray(nav.info["nav_goal"])
    rho, phi = obs["goal_to_agent_gps_compass"]
    assert rho == pytest.approx(np.linalg.norm(goal[:2] - sim.base_xy), abs=1e-4)
    assert rho == pytest.approx(info["base_to_nav_goal_dist"], abs=1e-4)
    # turning the base by phi makes the goal straight ahead
    sim.set_base_pose(sim.base_xy, sim.base_yaw + float(phi))
    obs = env._obs()
    assert abs(obs["goal_to_agent_gps_compass"][1]) < 1e-4
    np.testing.assert_allclose(obs["localization_sensor"], [*sim.base_xy, sim.base_yaw], atol=1e-5)
    # the path compass: geodesic distance, and turning by its bearing faces along the shortest path
    distance, cos_b, sin_b = SENSORS["goal_path_compass"](sim, env.task.sensor_target)
    assert distance == pytest.approx(sim.navmap.geodesic_distance(sim.base_xy, goal[:2]), abs=1e-4)
    assert distance > 0.0 and cos_b**2 + sin_b**2 == pytest.approx(1.0, abs=1e-5)
    sim.set_base_pose(sim.base_xy, sim.base_yaw + float(np.arctan2(sin_b, cos_b)))
    distance, cos_b, sin_b = SENSORS["goal_path_compass"](sim, env.task.sensor_target)
    assert cos_b == pytest.approx(1.0, abs=1e-4)

    obs, info = env.reset()  # open_fridge: the marker sensor points at the fridge handle
    assert np.linalg.norm(obs["marker_rel_pos"]) == pytest.approx(info["ee_to_handle_dist"], abs=1e-4)
    assert info["ee_to_handle_dist"] < 2.0 and obs["is_holding"][0] == 0.0
    env.close()


def _observe_in_worker(path: str, queue) -> None:
    env = gymnasium.make("rearrange:rearrange/Explore-v0", episodes=path)
    obs, _ = env.reset(seed=3)
    for _ in range(3):
        obs, *_ = env.step(np.full(11, 0.5))
    queue.put({k: obs[k] for k in ("joint", "localization_sensor", "head_depth")})
    env.close()


def test_env_in_spawned_worker_matches_main_process(episodes, tmp_path):
    """A worker (spawn start method) builds the env from plain arguments and its own GL context."""
    import multiprocessing as mp

    from rearrange.episodes import save_episodes

    path = str(tmp_path / "eps.json.gz")
    save_episodes(path, episodes)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_observe_in_worker, args=(path, queue))
    proc.start()
    remote = queue.get(timeout=120)
    proc.join(timeout=30)
    env = gymnasium.make("rearrange/Explore-v0", episodes=path)
    obs, _ = env.reset(seed=3)
    for _ in range(3):
        obs, *_ = env.step(np.full(11, 0.5))
    env.close()
    for k, v in remote.items():
        np.testing.assert_array_equal(v, obs[k], err_msg=k)
