"""A skill's `base_reverse_speed`: reverse base commands scaled the same in its env and in the HAB agent."""

from __future__ import annotations

import numpy as np
import pytest

from rearrange.actions import BASE_LINEAR, expand_action


def test_expand_action_scales_reverse_speed_commands_only():
    nav = ("base", "stop")
    assert expand_action(nav, [-1.0, 0.5, -1.0])[BASE_LINEAR] == -1.0  # the default: as forwards
    assert expand_action(nav, [-1.0, 0.5, -1.0], 0.25)[BASE_LINEAR] == -0.25
    assert expand_action(nav, [-0.4, 0.5, -1.0], 0.25)[BASE_LINEAR] == pytest.approx(-0.1)
    full = expand_action(nav, [0.8, -0.5, -1.0], 0.25)
    assert full[BASE_LINEAR] == 0.8 and full[BASE_LINEAR + 1] == -0.5  # forwards and turning unchanged


def _nav_env(**changes):
    from rearrange.env import RearrangeEnv
    from rearrange.generate import generate_episodes
    from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task

    cfg = load_skill_config("nav")
    cfg.update(changes)
    env = RearrangeEnv(make_skill_task(cfg), generate_episodes("nav", "val", 1, 0))
    env.reset(seed=0)
    return env


def _drive(env, lin: float, steps: int = 10) -> float:
    start = np.array(env.sim.base_xy, dtype=np.float64)
    for _ in range(steps):
        env.step(np.array([lin, 0.0, -1.0]))
    return float(np.linalg.norm(np.array(env.sim.base_xy) - start))


def test_skill_env_drives_backwards_at_the_configured_fraction_of_forward_speed():
    env = _nav_env(base_reverse_speed=0.25)
    backwards = _drive(env, -1.0)
    forwards = _drive(env, 1.0)
    env.close()
    assert forwards > 0.3  # unobstructed at the val episode's start
    assert backwards == pytest.approx(0.25 * forwards, rel=0.2)
    env = _nav_env()
    assert _drive(env, -1.0) == pytest.approx(forwards, rel=0.2)  # habitat's default: as fast both ways
    env.close()


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5])
def test_bad_reverse_speed_is_a_one_line_error(bad):
    with pytest.raises(ValueError, match=r"skill.base_reverse_speed must be in \(0, 1\]"):
        _nav_env(base_reverse_speed=bad)


class _ReversingPolicy:
    """A policy double that always asks for full reverse; the skill definition is the checkpoint's."""

    deterministic = True

    def __init__(self, skill) -> None:
        self.skill = skill

    def reset(self) -> None:
        pass

    def act(self, obs) -> np.ndarray:
        return np.array([-1.0, 0.0, -1.0])


def test_hab_agent_scales_a_learned_skill_as_its_training_env_did(tmp_path):
    from skill_checkpoints import untrained_checkpoint

    from eval.skill_library import PolicyController
    from skills.policy import SkillPolicy

    path = tmp_path / "nav.pt"
    untrained_checkpoint(path, "nav", ["profile=cpu", "skill.base_reverse_speed=0.25"])
    policy = SkillPolicy.from_checkpoint(path)
    assert policy.skill.base_reverse_speed == 0.25
    controller = PolicyController(_ReversingPolicy(policy.skill))
    assert controller.act(None, {})[BASE_LINEAR] == -0.25
    untrained_checkpoint(tmp_path / "old.pt", "nav", ["profile=cpu"],
                         edit_config=lambda cfg: cfg["skill"].pop("base_reverse_speed"))  # trained before the key
    assert SkillPolicy.from_checkpoint(tmp_path / "old.pt").skill.base_reverse_speed == 1.0
