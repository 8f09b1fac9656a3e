"""Pick's (and place's) way out of a fridge compartment (rearrange/tasks/approach.py ContainerExit): geometry on a real
layout (inside, in front, past the exit plane), other receptacles and offset 0 (habitat), the pick task's
dense term after the grasp, place's after the release, and a bad value."""

import numpy as np
import pytest
from reward_envs import skill_env_on

from rearrange.tasks.approach import check_offset_cfg
from rearrange.tasks.skill_base import ee_to_rest

OFFSET = 0.1


def pick_env(receptacle_kind: str, offset: float = OFFSET):
    """A pick env on the first train episode (seed 0) whose object is on a `receptacle_kind`."""
    return skill_env_on("pick", receptacle_kind, "exit_offset", offset)


def test_depth_shrinks_on_the_way_out_of_the_fridge():
    env = pick_env("fridge")
    task, sim = env.task, env.sim
    out = sim.layout.articulated["fridge"].opening_outward()
    assert task.exit.out is not None and np.allclose(task.exit.out, out)
    start = sim.object_pos(task.target)
    depth0 = task.exit.depth(start)
    assert 0.1 < depth0 < 1.0  # the object sits inside the compartment, behind the exit plane
    step = np.r_[out[0], out[1], 0.0]
    way = [start + step * d for d in (0.0, 0.1, 0.2, depth0 - 1e-6)]
    depths = [task.exit.depth(p) for p in way]
    assert all(a > b for a, b in zip(depths[:-1], depths[1:], strict=True))
    assert depths[1] == pytest.approx(depth0 - 0.1)
    assert task.exit.depth(start + step * (depth0 + 0.3)) == 0.0  # past the plane: nothing left
    side = np.r_[-out[1], out[0], 0.0]
    assert task.exit.depth(start + side * 0.2 + np.array([0, 0, 0.2])) == pytest.approx(depth0)  # only `out` counts


@pytest.mark.parametrize("kind", ["surface", "drawer"])
def test_other_receptacles_have_no_exit_term(kind):
    env = pick_env(kind)
    assert env.task.exit.out is None
    assert env.task.exit.depth(env.sim.object_pos(env.task.target)) == 0.0


def test_offset_zero_is_habitats_rest_distance():
    env = pick_env("fridge", offset=0.0)
    assert env.task.exit.out is None
    assert env.task.exit.depth(env.sim.object_pos(env.task.target)) == 0.0


def test_pick_dense_term_pays_the_way_out_along_the_oracles_pick():
    """The pick oracle on a fridge-shelf episode: from its grasp on, the dense term pays the decrease of
    |ee - rest| plus the way out, and the way out shrinks to (nearly) nothing as it backs away."""
    from skills.oracles.base import select_subset
    from skills.oracles.factory import make_oracle

    env = skill_env_on("pick", "fridge", "exit_offset", OFFSET, fresh=True)
    sim, task = env.sim, env.task
    oracle = make_oracle("pick")
    oracle.start(sim, task.sensor_target)

    def distance() -> float:
        return ee_to_rest(sim) + task.exit.depth(sim.object_pos(task.target))

    held_steps, depths = 0, []
    for _ in range(task.max_steps):
        was_held = sim.grasped == task.target
        before = distance()
        _, _, terminated, truncated, info = env.step(select_subset(task.action_subsets, oracle.act(sim)))
        if was_held and sim.grasped == task.target:
            held_steps += 1
            depths.append(task.exit.depth(sim.object_pos(task.target)))
            assert info["reward/dist"] == pytest.approx(task.reward_cfg.dist_reward * (before - distance()), abs=1e-9)
        if terminated or truncated:
            break
    assert held_steps > 10, "the oracle never held the object"
    assert depths[0] > 0.15  # grasped deep inside the compartment
    assert min(depths) < 0.1 * depths[0]  # and brought out of it


@pytest.mark.parametrize("value", [-0.1, 2.0, float("nan")])
def test_bad_offset_is_rejected(value):
    with pytest.raises(ValueError, match="skill.reward.exit_offset must be in"):
        check_offset_cfg({"exit_offset": value}, "exit_offset", "pick")


def test_place_dense_term_after_the_release_pays_the_ees_way_out():
    """Place with `exit_offset` on a fridge-shelf goal: the place oracle releases inside the compartment, and
    from then on the dense term pays the decrease of |ee - rest| plus the ee's way out, which shrinks as the arm
    comes back; without the key the way out is 0 (habitat's |ee - rest| alone)."""
    from skills.oracles.base import select_subset
    from skills.oracles.factory import make_oracle

    env = skill_env_on("place", "fridge", "exit_offset", OFFSET, fresh=True)
    sim, task = env.sim, env.task
    assert task.exit.out is not None
    oracle = make_oracle("place")
    oracle.start(sim, task.sensor_target)
    depths = []
    for _ in range(task.max_steps):
        placed = task.placed and task.mode == "rest"
        before = task.rest_distance(sim)
        _, _, terminated, truncated, info = env.step(select_subset(task.action_subsets, oracle.act(sim)))
        if placed and task.mode == "rest":
            depths.append(task.exit.depth(sim.ee_pos))
            assert info["reward/dist"] == pytest.approx(task.reward_cfg.dist_reward * (before - task.rest_distance(sim)),
                                                        abs=1e-9)
        if terminated or truncated:
            break
    assert len(depths) > 5, "the oracle never released at the goal"
    assert depths[0] > 0.1  # released with the gripper inside the compartment
    assert min(depths) < 0.5 * depths[0]  # and drawn back out of it
    assert skill_env_on("place", "fridge", "exit_offset", 0.0).task.exit.depth(sim.ee_pos) == 0.0
