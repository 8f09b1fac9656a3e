"""The policies shipped in checkpoints/: each loads, is the skill its file name says, and acts in its
own skill env (built from the checkpoint's config, as eval-skill does) for a few steps with finite
actions in range. Guards the shipped files against simulator, sensor and network changes."""

from __future__ import annotations

import numpy as np
import pytest

from eval.skill_library import SHIPPED_CHECKPOINTS
from rearrange.env import RearrangeEnv
from rearrange.generate import generate_episodes
from rearrange.tasks.skill_tasks import make_skill_task
from skills.policy import SkillPolicy

SHIPPED = sorted(SHIPPED_CHECKPOINTS.glob("*.pt"))
NO_BASE = sorted((SHIPPED_CHECKPOINTS / "no_base").glob("*.pt"))  # the ablation without base movement
NONAV = sorted((SHIPPED_CHECKPOINTS / "nonav").glob("*.pt"))  # tp-srl-nonav's own skills (eval/skill_library.py)


def test_some_policy_is_shipped():
    assert SHIPPED, f"no checkpoints in {SHIPPED_CHECKPOINTS}"


@pytest.mark.parametrize("path", SHIPPED + NO_BASE + NONAV,
                         ids=[p.stem for p in SHIPPED] + [f"{p.parent.name}/{p.stem}" for p in NO_BASE + NONAV])
def test_shipped_checkpoint_loads_and_steps_in_its_skill_env(path):
    policy = SkillPolicy.from_checkpoint(path)
    assert policy.skill.name == path.stem
    # the ablation's policies act without the base; every other skill moves it
    assert policy.skill.base_movement == (path.parent.name != "no_base")
    assert ("base" in policy.skill.action_subsets) == policy.skill.base_movement
    assert path.stat().st_size < 10 * 2**20  # small enough for git
    episodes = generate_episodes(policy.skill.name, "val", 1, 0)
    env = RearrangeEnv(make_skill_task(policy.config["skill"]), episodes, sim_cfg=policy.config.get("sim"))
    try:
        obs, _ = env.reset(seed=0)
        assert set(policy.obs_keys) <= set(obs)
        for _ in range(3):
            action = policy.act(obs)
            assert action.shape == (policy.skill.action_dim,) and np.all(np.isfinite(action))
            obs, reward, terminated, truncated, _ = env.step(action)
            assert np.isfinite(reward)
            if terminated or truncated:
                break
    finally:
        env.close()


# Successes of the shipped policies on the first 10 val episodes (seed 0), deterministic actions, as
# measured when each was shipped (its model card in checkpoints/): pick 9 of 10, nav 8, close_cab 10, close_fridge 10,
# open_cab 10, open_fridge 10, place 10 (run y1, shipped 2026-12-06 on an AMD EPYC; soup s2 before it: 9, run 54: 7,
# run 43: 6 on an Intel Xeon).
# Issue #11 asks pick for >= 7 of 10 from a policy that meets its 0.85 goal (the pick shipped on 2026-11-27 does,
# on val seeds 0 and 1); every guard is the shipped policy's own record minus one episode, so a simulator or
# sensor change that breaks a policy fails here. Place's is its record minus two: its episodes end on one
# release, and single episodes take another turn on another CPU family (docs/RESULTS.md, "One machine per comparison").
FIRST_10_MIN_SUCCESSES = {"pick": 8, "nav": 7, "close_cab": 9, "close_fridge": 9, "open_cab": 9, "open_fridge": 9,
                          "place": 8}


@pytest.mark.slow
@pytest.mark.parametrize("skill", sorted(FIRST_10_MIN_SUCCESSES))
def test_shipped_policy_still_succeeds_on_fixed_val_episodes(skill):
    from eval.skill_eval import PolicyAgent, _make_env, run_episode

    path = SHIPPED_CHECKPOINTS / f"{skill}.pt"
    policy = SkillPolicy.from_checkpoint(path)
    episodes = generate_episodes(skill, "val", 10, 0)
    env = _make_env(PolicyAgent(policy), skill, episodes, str(path))  # as eval-skill: canonical starts
    env.reset(seed=0)
    try:
        results = [run_episode(env, PolicyAgent(policy), i, None, skill, {}) for i in range(10)]
    finally:
        env.close()
    successes = sum(r["success"] for r in results)
    assert successes >= FIRST_10_MIN_SUCCESSES[skill], [r["episode_id"] for r in results if not r["success"]]
