"""Fine-tuning with added observations: a checkpoint's weights widened to a policy with more vector inputs.

`trainer.init_from` normally needs the new run's network to match the checkpoint's exactly. When the new
run only ADDS vector observations (say a path sensor for pick), `widen_state` maps the checkpoint onto the
wider network: every layer that reads the normalised vector (the first layer of the feed-forward actor and
critic, whose input is [image features, vector], or the recurrent policy's vector MLP) gets zero weights
for the new columns, and the observation normalisation statistics get mean 0 and variance 1 there, replaced
by the first batch's moments when the run updates them (`RunningMeanStd.restart_columns`, marked by
`restore_policy_state` with `added_columns`). So the widened policy acts exactly as the checkpoint did until
learning gives the new inputs weight. Columns are matched by observation key (`ActorCritic.vector_keys` is
sorted, so a new key can land between old ones).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from gymnasium import spaces as gym_spaces

from trainer.networks import observation_spaces


def _vector_sizes(obs_space: gym_spaces.Space) -> tuple[dict[str, int], list[str]]:
    """(sizes of the vector entries in sorted key order, sorted image keys) of an observation space."""
    entries = observation_spaces(obs_space)  # the network's own reading of the space
    vector = {k: int(np.prod(s.shape)) for k, s in sorted(entries.items()) if len(s.shape) != 3}
    images = sorted(k for k, s in entries.items() if len(s.shape) == 3)
    return vector, images


def added_inputs(old_obs_space: gym_spaces.Space, actor_critic: torch.nn.Module) -> list[str] | None:
    """The vector keys `actor_critic` reads beyond the checkpoint's, or None when the new network is not
    the old one plus vector inputs (an image key differs, or an old key is gone or changed size)."""
    old_sizes, old_images = _vector_sizes(old_obs_space)
    new_sizes = dict(actor_critic.vector_sizes)
    if old_images != list(actor_critic.image_keys):
        return None
    if any(new_sizes.get(k) != n for k, n in old_sizes.items()):
        return None
    added = [k for k in new_sizes if k not in old_sizes]
    return added or None


def _column_starts(actor_critic: torch.nn.Module) -> dict[str, int]:
    """Where each vector key's columns begin in `actor_critic`'s vector input (keys in the network's order)."""
    starts, pos = {}, 0
    for key, n in actor_critic.vector_sizes.items():
        starts[key] = pos
        pos += n
    return starts


def added_columns(old_obs_space: gym_spaces.Space, actor_critic: torch.nn.Module) -> torch.Tensor:
    """Positions in `actor_critic`'s vector input of the keys the checkpoint's observation space lacks."""
    old_sizes, _ = _vector_sizes(old_obs_space)
    starts = _column_starts(actor_critic)
    columns = [starts[k] + i for k, n in actor_critic.vector_sizes.items() if k not in old_sizes for i in range(n)]
    return torch.tensor(columns, dtype=torch.long)


def widen_state(old_model: Mapping[str, torch.Tensor], old_obs_space: gym_spaces.Space,
                actor_critic: torch.nn.Module) -> dict[str, torch.Tensor]:
    """`old_model` (a checkpoint's `model` state) widened to `actor_critic`'s added vector inputs.

    Parameters of the same shape are copied; a 1-D one of the old vector's length (the normalisation mean
    and variance) and a 2-D one whose last `old vector length` input columns are the vector get the old
    values at the old keys' columns, zeros (variance: ones) at the new. ValueError for any other mismatch."""
    old_sizes, _ = _vector_sizes(old_obs_space)
    new_sizes = dict(actor_critic.vector_sizes)
    old_dim, new_dim = sum(old_sizes.values()), sum(new_sizes.values())
    # where each old vector column goes in the new vector
    starts = _column_starts(actor_critic)
    columns = torch.tensor([starts[k] + i for k, n in old_sizes.items() for i in range(n)], dtype=torch.long)
    target = actor_critic.state_dict()
    widened: dict[str, torch.Tensor] = {}
    for name, new in target.items():
        old = old_model[name]
        if old.shape == new.shape:
            widened[name] = old.clone()
        elif old.dim() == 1 and old.shape[0] == old_dim and new.shape[0] == new_dim:
            value = torch.ones_like(new) if name.endswith("var") else torch.zeros_like(new)
            value[columns] = old.to(new.dtype)
            widened[name] = value
        elif old.dim() == 2 and old.shape[0] == new.shape[0] and new.shape[1] - old.shape[1] == new_dim - old_dim \
                and old.shape[1] >= old_dim:
            prefix = old.shape[1] - old_dim  # the image features before the vector (feed-forward first layers)
            value = torch.zeros_like(new)
            value[:, :prefix] = old[:, :prefix]
            value[:, prefix + columns] = old[:, prefix:].to(new.dtype)
            widened[name] = value
        else:
            raise ValueError(f"parameter {name}: checkpoint shape {tuple(old.shape)} cannot be widened to "
                             f"{tuple(new.shape)}")
    return widened
