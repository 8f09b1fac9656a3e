"""The recurrent actor-critic: visual encoder + vector MLP -> 2-layer LSTM -> action head and value head.

Observations arrive as `dict[str, Tensor]` with a leading batch dimension (a plain Box observation
space uses the single key `"obs"`, see `observation_spaces`). Every 3-D Box (H, W, C) is an image:
all images are concatenated along channels (they must share H and W) and go through the visual
encoder (`policy.visual.encoder`); uint8 images are scaled to [0, 1], float images are used as they
are. Every other Box is flattened, all are concatenated in sorted key order and go through the
vector MLP. The two embeddings are concatenated and fed to the LSTM.

Recurrent state layout (CONTRACTS.md): `hidden` is `[B, 2 * num_layers, hidden_size]`, rows
`[0:num_layers]` are the LSTM's h per layer and rows `[num_layers:]` its c per layer.

`act` runs one step for a batch of envs (the collector). `evaluate` runs whole sequences as a
`PackedSequence` (the learner): rows are given sequence after sequence, with one initial state per
sequence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_sequence, unpack_sequence

from trainer.distributions import make_action_head
from trainer.encoders import make_visual_encoder

BOX_OBS_KEY = "obs"  # key used for a plain (non-Dict) Box observation space


@dataclass
class ActOutput:
    action: torch.Tensor  # [B, A] float (Box) or [B] long (Discrete); Box samples are NOT clipped
    log_prob: torch.Tensor  # [B]
    value: torch.Tensor  # [B]
    hidden: torch.Tensor  # [B, 2 * num_layers, hidden_size], the state after this step


@dataclass
class EvalOutput:
    log_prob: torch.Tensor  # [M]
    entropy: torch.Tensor  # [M]
    value: torch.Tensor  # [M]


def observation_spaces(obs_space: gym.Space) -> dict[str, gym.spaces.Box]:
    """The observation space as `{key: Box}`: a Dict of Boxes as is, a plain Box under `BOX_OBS_KEY`."""
    if isinstance(obs_space, gym.spaces.Box):
        return {BOX_OBS_KEY: obs_space}
    if isinstance(obs_space, gym.spaces.Dict):
        spaces = {}
        for key, space in obs_space.spaces.items():
            if not isinstance(space, gym.spaces.Box):
                raise ValueError(
                    f"observation '{key}' is a {type(space).__name__}; only Box entries are supported"
                )
            spaces[key] = space
        return spaces
    raise ValueError(
        f"unsupported observation space {type(obs_space).__name__}; valid choices: Box, Dict of Box"
    )


def _mlp(in_dim: int, hidden_sizes: Sequence[int]) -> tuple[nn.Module, int]:
    layers: list[nn.Module] = []
    prev = in_dim
    for size in hidden_sizes:
        layers += [nn.Linear(prev, int(size)), nn.ReLU()]
        prev = int(size)
    return nn.Sequential(*layers), prev


class ActorCritic(nn.Module):
    """Recurrent actor-critic for Box/Dict observations and Box/Discrete actions."""

    def __init__(self, obs_space: gym.Space, action_space: gym.Space, policy_cfg: Mapping):
        super().__init__()
        spaces = observation_spaces(obs_space)
        self.image_keys = sorted(k for k, s in spaces.items() if len(s.shape) == 3)
        self.vector_keys = sorted(k for k, s in spaces.items() if len(s.shape) != 3)
        self.image_uint8 = {k: spaces[k].dtype == np.uint8 for k in self.image_keys}
        self.action_space = action_space
        self.is_discrete = isinstance(action_space, gym.spaces.Discrete)

        embed_dim = 0
        self.visual_encoder: nn.Module | None = None
        if self.image_keys:
            sizes = {spaces[k].shape[:2] for k in self.image_keys}
            if len(sizes) != 1:
                raise ValueError(
                    f"image observations {self.image_keys} must share height and width, got {sorted(sizes)}"
                )
            height, width = sizes.pop()
            channels = sum(int(spaces[k].shape[2]) for k in self.image_keys)
            visual_cfg = policy_cfg["visual"]
            self.visual_encoder = make_visual_encoder(
                str(visual_cfg["encoder"]), channels, int(height), int(width), visual_cfg
            )
            embed_dim += self.visual_encoder.out_dim

        self.vector_mlp: nn.Module | None = None
        if self.vector_keys:
            vec_dim = sum(int(np.prod(spaces[k].shape)) for k in self.vector_keys)
            self.vector_mlp, vec_out = _mlp(vec_dim, policy_cfg["vector_mlp"])
            embed_dim += vec_out
        if embed_dim == 0:
            raise ValueError("the observation space has no entries")

        rnn_cfg = policy_cfg["rnn"]
        self.hidden_size = int(rnn_cfg["hidden_size"])
        self.num_layers = int(rnn_cfg["num_layers"])
        self.rnn = nn.LSTM(embed_dim, self.hidden_size, num_layers=self.num_layers)
        for name, param in self.rnn.named_parameters():
            if "weight" in name:
                nn.init.orthogonal_(param)
            else:
                nn.init.zeros_(param)

        self.action_head = make_action_head(self.hidden_size, action_space, policy_cfg["action"])
        self.value_head = nn.Linear(self.hidden_size, 1)
        nn.init.orthogonal_(self.value_head.weight, gain=1.0)
        nn.init.zeros_(self.value_head.bias)
        # PopArt-style value normalisation statistics (identity unless the learner enables it):
        # value = value_head(out) * value_std + value_mean. Saved with the weights.
        self.register_buffer("value_mean", torch.zeros(()))
        self.register_buffer("value_std", torch.ones(()))

    # ------------------------------------------------------------------ state helpers
    def initial_hidden(self, batch: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Zero recurrent state, `[batch, 2 * num_layers, hidden_size]`."""
        device = device if device is not None else self.value_head.weight.device
        return torch.zeros(batch, 2 * self.num_layers, self.hidden_size, device=device)

    def _to_lstm_state(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        state = hidden.transpose(0, 1)  # [2L, B, H]
        return state[: self.num_layers].contiguous(), state[self.num_layers :].contiguous()

    @staticmethod
    def _from_lstm_state(h: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return torch.cat([h, c], dim=0).transpose(0, 1).contiguous()

    # ------------------------------------------------------------------ forward pieces
    def encode(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Per-row embedding (before the LSTM), `[B, embed_dim]`."""
        parts = []
        if self.visual_encoder is not None:
            images = []
            for key in self.image_keys:
                img = obs[key]
                img = img.float() / 255.0 if self.image_uint8[key] else img.float()
                images.append(img.permute(0, 3, 1, 2))  # (B, H, W, C) -> (B, C, H, W)
            parts.append(self.visual_encoder(torch.cat(images, dim=1)))
        if self.vector_mlp is not None:
            batch = obs[self.vector_keys[0]].shape[0]
            vec = torch.cat([obs[k].reshape(batch, -1).float() for k in self.vector_keys], dim=1)
            parts.append(self.vector_mlp(vec))
        return torch.cat(parts, dim=1)

    def _step(
        self, obs: Mapping[str, torch.Tensor], hidden: torch.Tensor, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One recurrent step; the state is zeroed where `episode_start`. Returns (rnn_out [B,H], new hidden)."""
        features = self.encode(obs)
        keep = (~episode_start.bool()).to(hidden.dtype).view(-1, 1, 1)
        h, c = self._to_lstm_state(hidden * keep)
        out, (h, c) = self.rnn(features.unsqueeze(0), (h, c))
        return out.squeeze(0), self._from_lstm_state(h, c)

    def value(self, rnn_out: torch.Tensor) -> torch.Tensor:
        """Value in reward units from the LSTM output, `[B]`."""
        return self.value_head(rnn_out).squeeze(-1) * self.value_std + self.value_mean

    @torch.no_grad()
    def set_value_normalization(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        """Change the value statistics while preserving every value output (PopArt, van Hasselt et al. 2016)."""
        old_mean, old_std = self.value_mean.clone(), self.value_std.clone()
        self.value_head.weight.mul_(old_std / std)
        self.value_head.bias.mul_(old_std).add_(old_mean - mean).div_(std)
        self.value_mean.copy_(mean)
        self.value_std.copy_(std)

    # ------------------------------------------------------------------ public API
    def act(
        self,
        obs: Mapping[str, torch.Tensor],
        hidden: torch.Tensor,
        episode_start: torch.Tensor,
        deterministic: bool = False,
    ) -> ActOutput:
        """Choose actions for a batch of envs for one step (sample, or the mode if `deterministic`)."""
        out, new_hidden = self._step(obs, hidden, episode_start)
        dist = self.action_head(out)
        action = dist.mode() if deterministic else dist.sample()
        return ActOutput(action, dist.log_prob(action), self.value(out), new_hidden)

    def get_value(
        self, obs: Mapping[str, torch.Tensor], hidden: torch.Tensor, episode_start: torch.Tensor
    ) -> torch.Tensor:
        """Value of the observations (e.g. the bootstrap value after an env's last rollout row), `[B]`."""
        out, _ = self._step(obs, hidden, episode_start)
        return self.value(out)

    def evaluate(
        self,
        obs: Mapping[str, torch.Tensor],
        actions: torch.Tensor,
        initial_hidden: torch.Tensor,
        seq_lengths: Sequence[int] | torch.Tensor,
    ) -> EvalOutput:
        """Log-prob, entropy and value of `actions` for rows laid out sequence after sequence.

        `obs`/`actions` hold M rows: the first `seq_lengths[0]` rows are sequence 0 in time order,
        then sequence 1, ... `initial_hidden[i]` (`[num_seqs, 2 * num_layers, hidden_size]`) is the
        state fed to the first row of sequence i; the LSTM runs on a PackedSequence.
        """
        lengths = [int(n) for n in seq_lengths]
        features = self.encode(obs)
        if sum(lengths) != features.shape[0]:
            raise ValueError(f"seq_lengths sum to {sum(lengths)} but {features.shape[0]} rows were given")
        packed = pack_sequence(list(torch.split(features, lengths)), enforce_sorted=False)
        h0, c0 = self._to_lstm_state(initial_hidden)
        packed_out, _ = self.rnn(packed, (h0, c0))
        out = torch.cat(unpack_sequence(packed_out), dim=0)  # back to the input row order
        dist = self.action_head(out)
        return EvalOutput(dist.log_prob(actions), dist.entropy(), self.value(out))
