"""Fine-tuning with added observations (trainer/widen.py, `trainer.init_from`): a checkpoint's weights
widened to a network with a new vector input act exactly as before whatever the new input reads, for the
feed-forward and the recurrent policy; the normalisation statistics keep the old columns; a network that
is not "the old one plus vector inputs" is refused; and a train run that adds an observation starts from
the checkpoint's policy."""

from __future__ import annotations

import pytest
import torch
from gymnasium import spaces
from omegaconf import OmegaConf

from trainer.networks import ActorCritic
from trainer.widen import added_inputs, widen_state

ACTIONS = spaces.Box(-1.0, 1.0, shape=(4,))


def obs_space(**extra: int) -> spaces.Dict:
    entries = {"head_depth": spaces.Box(0.0, 10.0, shape=(16, 16, 1)), "joint": spaces.Box(-5, 5, shape=(7,)),
               "obj_start_sensor": spaces.Box(-5, 5, shape=(3,)), "prev_action": spaces.Box(-1, 1, shape=(4,))}
    entries.update({k: spaces.Box(-5, 5, shape=(n,)) for k, n in extra.items()})
    return spaces.Dict(entries)


def policy_cfg(name: str) -> dict:
    cfg = OmegaConf.to_container(OmegaConf.load(f"configs/policy/{name}.yaml"))
    if name == "mlp":  # the small recurrent policy; give it the depth encoder of the skill policy
        cfg["visual"] = OmegaConf.to_container(OmegaConf.load("configs/policy/skill_cpu.yaml"))["visual"]
    cfg["obs_norm"] = True
    return cfg


def batch(space: spaces.Dict, n: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {k: torch.rand((n, *s.shape), generator=g) * 4 - 2 for k, s in space.spaces.items()}


@pytest.mark.parametrize("name", ["skill_cpu", "mlp"])
def test_widened_policy_acts_as_the_checkpoint_did(name):
    torch.manual_seed(0)
    old_space, new_space = obs_space(), obs_space(obj_path_compass=3)  # sorts between joint and obj_start_sensor
    old = ActorCritic(old_space, ACTIONS, policy_cfg(name))
    old.update_obs_normalization(batch(old_space, 64, 1))  # statistics that are not the identity
    new = ActorCritic(new_space, ACTIONS, policy_cfg(name))
    assert added_inputs(old_space, new) == ["obj_path_compass"]
    new.load_state_dict(widen_state(old.state_dict(), old_space, new))

    obs = batch(new_space, 8, 2)
    hidden = old.initial_hidden(8)
    start = torch.ones(8, dtype=torch.bool)
    a = old.act({k: v for k, v in obs.items() if k in old_space.spaces}, hidden, start, deterministic=True)
    for fill in (0.0, 3.0):  # whatever the new sensor reads
        obs["obj_path_compass"] = torch.full((8, 3), fill)
        b = new.act(obs, hidden, start, deterministic=True)
        torch.testing.assert_close(b.action, a.action)
        torch.testing.assert_close(b.value, a.value)
    # the statistics: old columns kept (the new key's 3 columns sit after joint's 7), identity for the new
    mean, var = new.obs_norm.mean, new.obs_norm.var
    torch.testing.assert_close(mean[:7], old.obs_norm.mean[:7])
    torch.testing.assert_close(mean[10:], old.obs_norm.mean[7:])
    assert mean[7:10].tolist() == [0.0, 0.0, 0.0] and var[7:10].tolist() == [1.0, 1.0, 1.0]


def test_only_added_vector_inputs_are_widened():
    base = obs_space()
    new = ActorCritic(obs_space(obj_path_compass=3), ACTIONS, policy_cfg("skill_cpu"))
    same = ActorCritic(base, ACTIONS, policy_cfg("skill_cpu"))
    assert added_inputs(base, same) is None  # nothing added: load as usual
    assert added_inputs(obs_space(extra_key=2), new) is None  # an old key is gone
    assert added_inputs(spaces.Dict({**base.spaces, "joint": spaces.Box(-5, 5, shape=(6,))}), new) is None  # resized
    other_cfg = policy_cfg("skill_cpu")
    other_cfg["feedforward"] = {**other_cfg["feedforward"], "actor": [128, 128]}
    with pytest.raises(ValueError, match="cannot be widened"):
        widen_state(ActorCritic(base, ACTIONS, other_cfg).state_dict(), base, new)


class _Scales:
    def load_scales(self, state) -> None:
        self.loaded = dict(state)


def test_init_from_restores_a_checkpoint_into_a_network_with_an_added_sensor():
    """`restore_policy_state` (what `trainer.init_from` calls) widens instead of refusing; a network that
    differs otherwise is still the one-line CheckpointError."""
    from trainer.checkpoint import CheckpointError, restore_policy_state

    old_space = obs_space()
    old = ActorCritic(old_space, ACTIONS, policy_cfg("skill_cpu"))
    state = {"model": old.state_dict(), "obs_space": old_space, "ppo": {"return_moments": torch.ones(2)}}
    new = ActorCritic(obs_space(obj_path_compass=3), ACTIONS, policy_cfg("skill_cpu"))
    scales = _Scales()
    restore_policy_state(state, new, scales)
    assert torch.equal(new.state_dict()["actor.2.weight"], old.state_dict()["actor.2.weight"])
    assert new.state_dict()["actor.0.weight"][:, 64 + 7:64 + 10].abs().sum() == 0.0  # the new columns
    assert "return_moments" in scales.loaded
    other_cfg = policy_cfg("skill_cpu")
    other_cfg["feedforward"] = {**other_cfg["feedforward"], "critic": [64]}
    with pytest.raises(CheckpointError, match="cannot be widened to the added observations"):
        restore_policy_state(state, ActorCritic(obs_space(obj_path_compass=3), ACTIONS, other_cfg), scales)


def test_added_columns_take_their_statistics_from_the_first_update():
    """After `restore_policy_state` widens, the next normalisation update sets the added columns to that
    batch's moments (merged under the checkpoint's count they would stay 0 / 1 for the whole fine-tune);
    the old columns merge as usual, and later updates merge the new columns too."""
    from trainer.checkpoint import restore_policy_state

    old_space, new_space = obs_space(), obs_space(obj_path_compass=3)
    old = ActorCritic(old_space, ACTIONS, policy_cfg("skill_cpu"))
    for seed in range(20):  # a trained network's statistics: many rows
        old.update_obs_normalization(batch(old_space, 512, seed))
    new = ActorCritic(new_space, ACTIONS, policy_cfg("skill_cpu"))
    restore_policy_state({"model": old.state_dict(), "obs_space": old_space, "ppo": {}}, new, _Scales())
    rows = batch(new_space, 256, 99)
    rows["obj_path_compass"] = rows["obj_path_compass"] * 0.5 + torch.tensor([6.0, 0.0, -3.0])
    new.update_obs_normalization(rows)
    mean, var = new.obs_norm.mean, new.obs_norm.var
    added = rows["obj_path_compass"].double()
    torch.testing.assert_close(mean[7:10].double(), added.mean(0), atol=1e-5, rtol=0)
    torch.testing.assert_close(var[7:10].double(), added.var(0, unbiased=False), atol=1e-5, rtol=0)
    # an old column (joint's first) merged 256 rows into 10,240: it barely moved
    assert abs(float(mean[0] - old.obs_norm.mean[0])) < 0.05
    before = mean[7:10].clone()
    shifted = batch(new_space, 256, 100)
    shifted["obj_path_compass"] = shifted["obj_path_compass"] + 20.0
    new.update_obs_normalization(shifted)
    moved = new.obs_norm.mean[7:10] - before
    assert torch.all(moved > 0.0) and torch.all(moved < 1.0)  # merged under the count now, not restarted
