"""Load a trained skill checkpoint and run it: `SkillPolicy.from_checkpoint(path)`, `.reset()`,
`.act(obs) -> subset action`.

The checkpoint (written by `train-skill` through `trainer.checkpoint`) carries the policy weights, the
resolved training config (with its `skill` node: which skill, with or without base movement) and the
observation/action spaces, which is all that is needed to rebuild the actor-critic here. Observation
normalisation statistics (`policy.obs_norm`) live in the model's state dict and are applied by the
network itself. A policy trained with `policy.prev_action` observes its previous action: the policy
fills `prev_action` itself from its own last action (zeros after `reset`), so envs need no wrapper.
Sensors only the critic read in training (`policy.critic_only_keys`) are not asked of the env.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from configs.compose import exit_with_error
from rearrange.actions import expand_action
from skills.definitions import SkillDef, skill_def_from_config
from trainer.checkpoint import CheckpointError, load_checkpoint
from trainer.networks import ActorCritic, observation_spaces
from trainer.wrappers import PREV_ACTION_KEY, previous_action_obs

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim


def set_inference_threads(threads: Any) -> None:
    """torch's CPU threads for the policies' forward passes (`eval.torch_threads`; 0: torch's default).
    A value that is not an int >= 0 is a one-line error, exit 2."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        exit_with_error(f"eval.torch_threads must be an int >= 0 (0: torch's default), got {threads!r}")
    if threads:
        torch.set_num_threads(threads)


def seed_action_sampling(seed: int, episode_index: int) -> None:
    """Seed the sampled actions of every `SkillPolicy` for one evaluation episode (torch's global
    generator, which `ActorCritic.act` samples from): a sampled evaluation is then reproducible, and
    episode i acts the same whatever ran before it."""
    torch.manual_seed(int(np.random.SeedSequence([seed, episode_index]).generate_state(1)[0]))


class SkillPolicy:
    """A trained skill policy with its recurrent state, for one env at a time."""

    def __init__(self, actor_critic: ActorCritic, skill: SkillDef, config: Mapping[str, Any],
                 obs_space: Any, deterministic: bool = True) -> None:
        self.actor_critic = actor_critic.eval()
        self.skill = skill
        self.config = config
        self.obs_space = obs_space
        self.deterministic = deterministic
        self.spaces = observation_spaces(obs_space)
        self.uses_prev_action = PREV_ACTION_KEY in self.spaces
        # Sensors only the critic read in training (policy.critic_only_keys): the actor never reads them, so
        # the env need not serve them and zeros stand in for them.
        self.critic_only_keys = tuple(k for k in actor_critic.critic_only_keys if k in self.spaces)
        self.obs_keys = tuple(k for k in self.spaces  # keys the env must give
                              if k != PREV_ACTION_KEY and k not in self.critic_only_keys)
        self.reset()

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, deterministic: bool = True) -> SkillPolicy:
        """Rebuild the policy of a `train-skill` checkpoint; `CheckpointError` (one line) if unusable."""
        state = load_checkpoint(path)
        config = state["config"]
        if not isinstance(config, Mapping) or "skill" not in config or "policy" not in config:
            raise CheckpointError(f"checkpoint {path} is not a skill checkpoint (its config has no skill/policy)")
        try:
            skill = skill_def_from_config(config)
        except (KeyError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {path} has an unusable skill config ({exc})") from None
        actor_critic = ActorCritic(state["obs_space"], state["action_space"], config["policy"])
        try:
            actor_critic.load_state_dict(state["model"])
        except RuntimeError as exc:
            first = str(exc).strip().splitlines()[0]
            raise CheckpointError(f"checkpoint {path} does not match its policy config ({first})") from None
        if int(np.prod(state["action_space"].shape)) != skill.action_dim:
            raise CheckpointError(f"checkpoint {path}: action space has {state['action_space'].shape} dims but "
                                  f"skill {skill.name} uses {skill.action_dim}")
        return cls(actor_critic, skill, config, state["obs_space"], deterministic=deterministic)

    @property
    def name(self) -> str:
        return self.skill.name

    def reset(self) -> None:
        """Start a new skill call: zero recurrent state and previous action."""
        self.hidden = self.actor_critic.initial_hidden(1)
        self.episode_start = torch.ones(1, dtype=torch.bool)
        if self.uses_prev_action:
            self.prev_action = np.zeros(self.spaces[PREV_ACTION_KEY].shape, np.float32)

    @torch.no_grad()
    def act(self, obs: Mapping[str, Any]) -> np.ndarray:
        """The skill's action (its subsets, in [-1, 1]) for one observation dict (extra keys ignored)."""
        missing = [k for k in self.obs_keys if k not in obs]
        if missing:
            raise KeyError(f"observation lacks {', '.join(missing)} needed by skill {self.skill.name}")
        for k in self.obs_keys:
            if np.shape(obs[k]) != self.spaces[k].shape:
                raise ValueError(f"observation '{k}' has shape {np.shape(obs[k])}, skill {self.skill.name} was "
                                 f"trained on {self.spaces[k].shape} (check sim.camera.head width/height)")
        batch = {k: torch.as_tensor(np.asarray(obs[k], dtype=np.float32)).unsqueeze(0) for k in self.obs_keys}
        if self.uses_prev_action:
            batch[PREV_ACTION_KEY] = torch.as_tensor(self.prev_action).unsqueeze(0)
        for k in self.critic_only_keys:
            batch[k] = torch.zeros((1, *self.spaces[k].shape))
        out = self.actor_critic.act(batch, self.hidden, self.episode_start, deterministic=self.deterministic)
        self.hidden = out.hidden
        self.episode_start = torch.zeros(1, dtype=torch.bool)
        action = out.action[0].cpu().numpy().astype(np.float64)
        if self.uses_prev_action:  # what the training wrapper records: the action clipped to the Box
            self.prev_action = previous_action_obs(action, self.actor_critic.action_space)
        return np.clip(action, -1.0, 1.0)

    def full_action(self, subset_action: np.ndarray, sim: RearrangeSim | None = None) -> np.ndarray:
        """The skill action written into the 11-dim full action vector (unused entries 0); a skill with
        the `arm_ee` subset needs the simulator it acts in."""
        return expand_action(self.skill.action_subsets, subset_action, self.skill.base_reverse_speed, sim)

