"""The actor-critic: visual encoder + vector observations -> 2-layer LSTM (or separate MLPs) -> heads.

Observations arrive as `dict[str, Tensor]` with a leading batch dimension (a plain Box observation
space uses the single key `"obs"`, see `observation_spaces`). Every 3-D Box (H, W, C) is an image:
all images are concatenated along channels (they must share H and W) and go through the visual
encoder (`policy.visual.encoder`); uint8 images are scaled to [0, 1], float images are used as they
are. Every other Box is flattened and all are concatenated in sorted key order (the *vector*).
With `policy.obs_norm: true` the vector is normalised by running statistics kept in buffers
(`obs_norm.mean/var/count`, saved in the state dict; see trainer/normalization.py) that the learner
updates with `update_obs_normalization`; images are never normalised.

Two architectures (`policy.architecture`):
- `recurrent` (default): vector -> `vector_mlp`; both embeddings concatenated -> LSTM -> action
  head and value head (shared trunk).
- `feedforward`: no LSTM; the visual embedding (shared, if there are images) and the normalised
  vector go into two separate MLPs (`policy.feedforward.actor` / `.critic`, `activation` tanh or
  relu, orthogonal init with gain sqrt(2); action head gain 0.01, value head gain 1, like CleanRL's
  ppo_continuous_action). `policy.critic_only_keys` (feed-forward only) names vector observations
  that only the critic reads (an asymmetric actor-critic, Pinto et al. 2018): the actor's MLP never
  sees those columns, so a deployed policy acts the same whatever they hold.

Recurrent state layout (CONTRACTS.md): `hidden` is `[B, 2 * num_layers, hidden_size]`, rows
`[0:num_layers]` are the LSTM's h per layer and rows `[num_layers:]` its c per layer. A
feed-forward policy uses a dummy zero state `[B, 1, 1]` so that collectors and storage work
unchanged; `is_recurrent` tells the learner whether mini-batches need whole sequences.

`act` runs one step for a batch of envs (the collector). `evaluate` runs whole sequences as a
`PackedSequence` (the learner): rows are given sequence after sequence, with one initial state per
sequence (a feed-forward policy only checks that `seq_lengths` sum to the number of rows).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_sequence, unpack_sequence

from trainer.distributions import CategoricalDist, DiagGaussian, GaussianBinary, make_action_head
from trainer.encoders import make_visual_encoder
from trainer.normalization import RunningMeanStd, StatsSync

BOX_OBS_KEY = "obs"  # key used for a plain (non-Dict) Box observation space
ARCHITECTURES = ("recurrent", "feedforward")
FF_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}
ActionDist = DiagGaussian | GaussianBinary | CategoricalDist


@dataclass
class ActOutput:
    action: torch.Tensor  # [B, A] float (Box) or [B] long (Discrete); Box samples are NOT clipped
    log_prob: torch.Tensor  # [B]
    value: torch.Tensor  # [B]
    hidden: torch.Tensor  # [B, 2 * num_layers, hidden_size] ([B, 1, 1] feed-forward), the state after this step


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


def _ff_mlp(in_dim: int, hidden_sizes: Sequence[int], activation: str) -> tuple[nn.Module, int]:
    """CleanRL-style MLP: orthogonal weights with gain sqrt(2), zero biases."""
    if activation not in FF_ACTIVATIONS:
        raise ValueError(
            f"unknown policy.feedforward.activation '{activation}'; valid choices: {', '.join(FF_ACTIVATIONS)}"
        )
    layers: list[nn.Module] = []
    prev = in_dim
    for size in hidden_sizes:
        linear = nn.Linear(prev, int(size))
        nn.init.orthogonal_(linear.weight, gain=math.sqrt(2))
        nn.init.zeros_(linear.bias)
        layers += [linear, FF_ACTIVATIONS[activation]()]
        prev = int(size)
    return nn.Sequential(*layers), prev


class ActorCritic(nn.Module):
    """Recurrent or feed-forward actor-critic for Box/Dict observations and Box/Discrete actions."""

    def __init__(self, obs_space: gym.Space, action_space: gym.Space, policy_cfg: Mapping):
        super().__init__()
        spaces = observation_spaces(obs_space)
        self.image_keys = sorted(k for k, s in spaces.items() if len(s.shape) == 3)
        self.vector_keys = sorted(k for k, s in spaces.items() if len(s.shape) != 3)
        self.vector_sizes = {k: int(np.prod(spaces[k].shape)) for k in self.vector_keys}  # columns of `vector`
        self.image_uint8 = {k: spaces[k].dtype == np.uint8 for k in self.image_keys}
        self.action_space = action_space
        self.is_discrete = isinstance(action_space, gym.spaces.Discrete)
        self.architecture = str(policy_cfg.get("architecture", "recurrent"))
        if self.architecture not in ARCHITECTURES:
            raise ValueError(
                f"unknown policy.architecture '{self.architecture}'; valid choices: {', '.join(ARCHITECTURES)}"
            )
        self.is_recurrent = self.architecture == "recurrent"

        visual_dim = 0
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
            visual_dim = self.visual_encoder.out_dim
        vec_dim = sum(int(np.prod(spaces[k].shape)) for k in self.vector_keys)
        if visual_dim + vec_dim == 0:
            raise ValueError("the observation space has no entries")
        self.critic_only_keys = tuple(sorted(str(k) for k in (policy_cfg.get("critic_only_keys") or ())))
        actor_columns = self._actor_columns(visual_dim)
        actor_in = visual_dim + vec_dim if actor_columns is None else int(actor_columns.numel())
        # Feature columns of the actor's input (None: all); not saved, rebuilt from the config.
        self.register_buffer("actor_columns", actor_columns, persistent=False)

        self.obs_norm: RunningMeanStd | None = None
        if bool(policy_cfg.get("obs_norm", False)) and vec_dim > 0:
            self.obs_norm = RunningMeanStd(vec_dim, clip=float(policy_cfg.get("obs_norm_clip", 5.0)))

        self.vector_mlp: nn.Module | None = None
        if self.is_recurrent:
            embed_dim = visual_dim
            if vec_dim > 0:
                self.vector_mlp, vec_out = _mlp(vec_dim, policy_cfg["vector_mlp"])
                embed_dim += vec_out
            rnn_cfg = policy_cfg["rnn"]
            self.hidden_size = int(rnn_cfg["hidden_size"])
            self.num_layers = int(rnn_cfg["num_layers"])
            self.rnn = nn.LSTM(embed_dim, self.hidden_size, num_layers=self.num_layers)
            for name, param in self.rnn.named_parameters():
                if "weight" in name:
                    nn.init.orthogonal_(param)
                else:
                    nn.init.zeros_(param)
            actor_dim = critic_dim = self.hidden_size
        else:
            ff_cfg = policy_cfg["feedforward"]
            activation = str(ff_cfg["activation"])
            self.actor, actor_dim = _ff_mlp(actor_in, ff_cfg["actor"], activation)
            self.critic, critic_dim = _ff_mlp(visual_dim + vec_dim, ff_cfg["critic"], activation)

        self.action_head = make_action_head(actor_dim, action_space, policy_cfg["action"])
        self.value_head = nn.Linear(critic_dim, 1)
        nn.init.orthogonal_(self.value_head.weight, gain=1.0)
        nn.init.zeros_(self.value_head.bias)
        # PopArt-style value normalisation statistics (identity unless the learner enables it):
        # value = value_head(out) * value_std + value_mean. Saved with the weights.
        self.register_buffer("value_mean", torch.zeros(()))
        self.register_buffer("value_std", torch.ones(()))

    def _actor_columns(self, visual_dim: int) -> torch.Tensor | None:
        """Indices of the feature columns the actor reads (the visual embedding, then every vector column
        of a key not in `critic_only_keys`); None without critic-only keys. ValueError for a bad key."""
        if not self.critic_only_keys:
            return None
        if self.is_recurrent:
            raise ValueError("policy.critic_only_keys needs policy.architecture=feedforward (the recurrent "
                             "policy shares one trunk between actor and critic)")
        unknown = [k for k in self.critic_only_keys if k not in self.vector_keys]
        if unknown:
            raise ValueError(f"policy.critic_only_keys names {', '.join(unknown)}, not a vector observation; "
                             f"valid choices: {', '.join(self.vector_keys)}")
        columns = list(range(visual_dim))
        start = visual_dim
        for key in self.vector_keys:
            if key not in self.critic_only_keys:
                columns.extend(range(start, start + self.vector_sizes[key]))
            start += self.vector_sizes[key]
        return torch.tensor(columns, dtype=torch.long)

    # ------------------------------------------------------------------ state helpers
    def initial_hidden(self, batch: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Zero recurrent state, `[batch, 2 * num_layers, hidden_size]` (`[batch, 1, 1]` feed-forward)."""
        device = device if device is not None else self.value_head.weight.device
        if not self.is_recurrent:
            return torch.zeros(batch, 1, 1, device=device)
        return torch.zeros(batch, 2 * self.num_layers, self.hidden_size, device=device)

    def _to_lstm_state(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        state = hidden.transpose(0, 1)  # [2L, B, H]
        return state[: self.num_layers].contiguous(), state[self.num_layers :].contiguous()

    @staticmethod
    def _from_lstm_state(h: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return torch.cat([h, c], dim=0).transpose(0, 1).contiguous()

    # ------------------------------------------------------------------ forward pieces
    def _raw_vector(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        batch = obs[self.vector_keys[0]].shape[0]
        return torch.cat([obs[k].reshape(batch, -1).float() for k in self.vector_keys], dim=1)

    def vector(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor | None:
        """The vector observations flattened, concatenated in key order and normalised, `[B, vec_dim]`."""
        if not self.vector_keys:
            return None
        vec = self._raw_vector(obs)
        return self.obs_norm.normalize(vec) if self.obs_norm is not None else vec

    def encode(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Per-row embedding (the LSTM input, or the input of both feed-forward MLPs), `[B, embed_dim]`."""
        parts = []
        if self.visual_encoder is not None:
            images = []
            for key in self.image_keys:
                img = obs[key]
                img = img.float() / 255.0 if self.image_uint8[key] else img.float()
                images.append(img.permute(0, 3, 1, 2))  # (B, H, W, C) -> (B, C, H, W)
            parts.append(self.visual_encoder(torch.cat(images, dim=1)))
        vec = self.vector(obs)
        if vec is not None:
            parts.append(self.vector_mlp(vec) if self.vector_mlp is not None else vec)
        return torch.cat(parts, dim=1)

    @torch.no_grad()
    def update_obs_normalization(
        self, obs: Mapping[str, torch.Tensor], stats_sync: StatsSync | None = None
    ) -> None:
        """Merge the vector observations of `obs` (e.g. a whole rollout) into the running statistics;
        `stats_sync` averages a float64 CPU tensor across ranks in place. No-op without obs_norm."""
        if self.obs_norm is not None:
            self.obs_norm.update(self._raw_vector(obs), stats_sync)

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
        """Value in reward units from the LSTM output (feed-forward: the critic MLP's output), `[B]`; in fp32, also
        where the trunk ran under the learner's bf16 autocast (PPO `learner_bf16`, as `_dist`)."""
        with torch.autocast(rnn_out.device.type, enabled=False):
            return self.value_head(rnn_out.float()).squeeze(-1) * self.value_std + self.value_mean

    def _actor_features(self, features: torch.Tensor) -> torch.Tensor:
        """The actor's input from the full embedding (without the critic-only columns)."""
        return features if self.actor_columns is None else features.index_select(1, self.actor_columns)

    def _feedforward(self, obs: Mapping[str, torch.Tensor]) -> tuple[ActionDist, torch.Tensor]:
        """Action distribution and value of a feed-forward policy."""
        features = self.encode(obs)
        return self._dist(self.actor(self._actor_features(features))), self.value(self.critic(features))

    def _dist(self, actor_out: torch.Tensor) -> ActionDist:
        """The action head in fp32, also where the trunk ran under the learner's bf16 autocast (PPO
        `learner_bf16`): log-probs and the PPO ratio need more than bf16's ~3 significant digits."""
        with torch.autocast(actor_out.device.type, enabled=False):
            return self.action_head(actor_out.float())

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
        if self.is_recurrent:
            out, new_hidden = self._step(obs, hidden, episode_start)
            dist, value = self._dist(out), self.value(out)
        else:
            (dist, value), new_hidden = self._feedforward(obs), torch.zeros_like(hidden)
        action = dist.mode() if deterministic else dist.sample()
        return ActOutput(action, dist.log_prob(action), value, new_hidden)

    def get_value(
        self, obs: Mapping[str, torch.Tensor], hidden: torch.Tensor, episode_start: torch.Tensor
    ) -> torch.Tensor:
        """Value of the observations (e.g. the bootstrap value after an env's last rollout row), `[B]`."""
        if not self.is_recurrent:
            return self.value(self.critic(self.encode(obs)))
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
        state fed to the first row of sequence i; the LSTM runs on a PackedSequence. A feed-forward
        policy evaluates the rows independently (only the sum of `seq_lengths` is checked).
        """
        if not self.is_recurrent:
            dist, value = self._feedforward(obs)
            total = int(torch.as_tensor(seq_lengths).sum())
            if total != value.shape[0]:
                raise ValueError(f"seq_lengths sum to {total} but {value.shape[0]} rows were given")
            return EvalOutput(dist.log_prob(actions), dist.entropy(), value)
        out = self._sequence_outputs(obs, initial_hidden, seq_lengths)
        dist = self._dist(out)
        return EvalOutput(dist.log_prob(actions), dist.entropy(), self.value(out))

    def action_dist(
        self, obs: Mapping[str, torch.Tensor], initial_hidden: torch.Tensor, seq_lengths: Sequence[int] | torch.Tensor
    ) -> ActionDist:
        """The action distribution of every row, rows laid out as in `evaluate` (behaviour cloning)."""
        if not self.is_recurrent:
            return self._dist(self.actor(self._actor_features(self.encode(obs))))
        return self._dist(self._sequence_outputs(obs, initial_hidden, seq_lengths))

    def _sequence_outputs(
        self, obs: Mapping[str, torch.Tensor], initial_hidden: torch.Tensor, seq_lengths: Sequence[int] | torch.Tensor
    ) -> torch.Tensor:
        """LSTM outputs of rows given sequence after sequence (a PackedSequence), in the input row order."""
        lengths = [int(n) for n in seq_lengths]
        features = self.encode(obs)
        if sum(lengths) != features.shape[0]:
            raise ValueError(f"seq_lengths sum to {sum(lengths)} but {features.shape[0]} rows were given")
        packed = pack_sequence(list(torch.split(features, lengths)), enforce_sorted=False)
        h0, c0 = self._to_lstm_state(initial_hidden)
        packed_out, _ = self.rnn(packed, (h0, c0))
        return torch.cat(unpack_sequence(packed_out), dim=0)  # back to the input row order
