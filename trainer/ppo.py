"""PPO for variable-experience rollouts: GAE, VER mini-batches, truncated IS, learned entropy coefficient.

Public API (what the training loop uses):

    ppo = PPO(actor_critic, cfg.ppo, total_updates=N, grad_sync=None, seed=None)
    stats = ppo.update(rollout)        # one learner update on a Rollout; returns dict[str, float]
    ppo.policy_version                 # number of updates done so far (= Rollout.policy_version of
                                       # actions chosen with the current weights)
    ppo.state_dict() / ppo.load_state_dict(d)   # optimizer, entropy coef, update count, LR schedule,
                                                # mini-batch RNG (model weights are saved separately)
    ppo.lr_at(update) -> float         # the LR schedule (cosine decay to 0 over total_updates)
    native_bf16(device) -> bool        # bf16 in hardware: where `learner_bf16: auto` runs the learner in bf16

`update` uses the learning rate of the current update count, then increments the count. Stats
keys (stable names): learner/value_loss, learner/action_loss, learner/entropy,
learner/entropy_coef, learner/entropy_target, learner/approx_kl, learner/clip_fraction,
learner/grad_norm, learner/is_weight_{min,mean,max}, learner/policy_lag_{mean,max},
learner/fraction_stale, learner/proximal_weight_mean, learner/lr, learner/explained_variance.

Loss per mini-batch, with w the truncated VER importance weight of each row
(`rollout.importance_weights()`, min(1, T / n_env)) and mean(w * term) for every term:

    action_loss = mean(w * rho * -min(r A, clip(r, 1 +- clip_param) A))
                  r = pi / pi_old; with proximal_policy=behaviour (default) pi_old is the acting policy and
                  rho = 1; with proximal_policy=learner pi_old is the learner's policy as the update starts
                  and rho = min(1, pi_old / pi_acting) (decoupled PPO, Hilton et al. 2021)
    value_loss  = mean(w * 0.5 * (V - R)^2)       or, with use_clipped_value_loss, the PPO2 max form
                  mean(w * 0.5 * max((V - R)^2, (V_old + clip(V - V_old, +-clip_param) - R)^2))
    entropy     = mean(w * H)
    loss = action_loss + value_loss_coef * value_loss - alpha * entropy + log_alpha * (entropy - target)

Value normalisation (`normalize_value`, off by default as in the paper): PopArt-style running
mean/std of the GAE returns (EMA with weight max(value_norm_beta, 1/(updates+1))); the value loss is
computed in normalised units and `ActorCritic.set_value_normalization` rescales the value head so
that value outputs (in reward units) are preserved. Recommended when returns are much larger than
~10: the LSTM is shared by actor and critic and saturates when it must produce large values.

Reward normalisation (`normalize_reward`, off by default): the collector divides rewards by the
running std of the discounted return (`ppo.reward_scaler`, a `trainer.normalization.RewardScaler`,
clipped to +-`reward_norm_clip`, as SB3's VecNormalize and CleanRL); `update` merges the rollout's
return statistics of every rank (`stats_sync`) before the epochs, and `state_dict` saves them.

Observation normalisation (`policy.obs_norm`): before the epochs, `update` merges the rollout's
vector observations into the model's running statistics (`ActorCritic.update_obs_normalization`),
so that the epochs and the next rollout use them. Mini-batches: VER sequences for a recurrent
policy, independently sampled rows for a feed-forward one (`ActorCritic.is_recurrent`).

Distributed training: pass `grad_sync(params)`; it is called after `backward()` and before
gradient clipping with every trainable parameter (the model's and `log_alpha` when learned), all
of which have a `.grad`, and must average those gradients across ranks in place. With
`normalize_value`, `normalize_reward` or `policy.obs_norm`, also pass `stats_sync(tensor)`, which
must average a float64 CPU tensor across ranks in place (all-reduce sum / world size; used for the
return moments, the observation moments and the discounted-return moments of reward scaling, so that
every rank keeps identical statistics).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

import torch
from torch import nn

from trainer.cpu_info import cpu_has_bf16
from trainer.entropy import entropy_coefficient_from_config
from trainer.gae import compute_gae
from trainer.minibatch import MiniBatch, build_minibatches, build_row_minibatches
from trainer.networks import ActorCritic, EvalOutput
from trainer.normalization import RewardScaler
from trainer.rollout import Rollout

GradSync = Callable[[Iterable[nn.Parameter]], None]
StatsSync = Callable[[torch.Tensor], None]

LR_SCHEDULES = ("cosine", "constant")
PROXIMAL_POLICIES = ("behaviour", "learner")  # what PPO's clip range is centred on (configs/trainer/ppo.yaml)
LEARNER_BF16_VALUES = "true, false or auto"  # ppo.learner_bf16 (configs/trainer/ppo.yaml)


def is_learner_bf16_value(value: object) -> bool:
    """Whether `value` is one of LEARNER_BF16_VALUES (config_check and PPO share the rule)."""
    return isinstance(value, bool) or value == "auto"


def make_adam(params: list[torch.Tensor], lr: float, eps: float) -> torch.optim.Adam:
    """Adam with torch's fused kernel where it has one for the parameters' device (CPU from torch 2.4, CUDA):
    one C++ step instead of a Python loop over the tensors. Measured 2026-11-26 (skill_cpu network, one
    thread): 0.52-0.87 -> 0.17-0.23 ms per step, and the learner thread holds the GIL less while the
    collector acts (`trainer.overlap_learning`). Same update up to float rounding. A resumed run keeps
    the kind of Adam its checkpoint was saved with (the saved param group carries the flag)."""
    try:
        return torch.optim.Adam(params, lr=lr, eps=eps, fused=True)
    except RuntimeError:  # torch < 2.4 on CPU, or a device without the fused kernel
        return torch.optim.Adam(params, lr=lr, eps=eps)


def native_bf16(device: torch.device) -> bool:
    """Whether `device` multiplies in bf16 in hardware (`learner_bf16: auto`): a CUDA GPU with bf16, or a CPU whose
    Linux flags list avx512_bf16, amx_bf16 (x86) or bf16 (Arm). Elsewhere bf16 autocast is emulated and can be slower
    than fp32, so `auto` leaves the learner in fp32."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return cpu_has_bf16()


class PPO:
    """The learner: owns the optimizer, the entropy coefficient and the update counter."""

    def __init__(
        self,
        actor_critic: ActorCritic,
        ppo_cfg: Mapping,
        total_updates: int = 0,
        grad_sync: GradSync | None = None,
        seed: int | None = None,
        stats_sync: StatsSync | None = None,
        max_seq_len: int | None = None,
    ):
        self.actor_critic = actor_critic
        self.cfg = ppo_cfg
        self.gamma = float(ppo_cfg["gamma"])
        self.gae_lambda = float(ppo_cfg["gae_lambda"])
        self.clip_param = float(ppo_cfg["clip_param"])
        self.ppo_epoch = int(ppo_cfg["ppo_epoch"])
        self.num_mini_batch = int(ppo_cfg["num_mini_batch"])
        self.value_loss_coef = float(ppo_cfg["value_loss_coef"])
        self.use_clipped_value_loss = bool(ppo_cfg["use_clipped_value_loss"])
        self.normalize_advantage = bool(ppo_cfg["normalize_advantage"])
        self.use_importance_weights = bool(ppo_cfg["use_importance_weights"])
        self.proximal_policy = str(ppo_cfg.get("proximal_policy", "behaviour"))
        if self.proximal_policy not in PROXIMAL_POLICIES:
            raise ValueError(f"ppo.proximal_policy must be one of {', '.join(PROXIMAL_POLICIES)}; "
                             f"got {self.proximal_policy!r}")
        self.max_grad_norm = float(ppo_cfg["max_grad_norm"])
        # the learner's forward passes (encoder, trunks) under bf16 autocast; the heads stay fp32 (ActorCritic._dist)
        learner_bf16 = ppo_cfg.get("learner_bf16", False)
        if not is_learner_bf16_value(learner_bf16):
            raise ValueError(f"ppo.learner_bf16 must be {LEARNER_BF16_VALUES}; got {learner_bf16!r}")
        device = next(actor_critic.parameters()).device
        self.learner_bf16 = native_bf16(device) if learner_bf16 == "auto" else learner_bf16
        self.base_lr = float(ppo_cfg["lr"])
        self.lr_schedule = str(ppo_cfg["lr_schedule"])
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(
                f"unknown ppo.lr_schedule '{self.lr_schedule}'; valid choices: {', '.join(LR_SCHEDULES)}"
            )
        self.normalize_value = bool(ppo_cfg["normalize_value"])
        self.value_norm_beta = float(ppo_cfg["value_norm_beta"])
        self.total_updates = int(total_updates)
        self.grad_sync = grad_sync
        self.stats_sync = stats_sync
        self.return_moments = torch.tensor([0.0, 1.0], dtype=torch.float64)  # running E[R], E[R^2]
        self.max_seq_len = max_seq_len  # longest LSTM sequence in a mini-batch (the trainer passes T)
        # the collector scales rewards with it (trainer.train hands it over); None: raw rewards
        self.reward_scaler: RewardScaler | None = None
        if bool(ppo_cfg.get("normalize_reward", False)):
            self.reward_scaler = RewardScaler(self.gamma, clip=float(ppo_cfg.get("reward_norm_clip", 10.0)))

        device = next(actor_critic.parameters()).device
        self.entropy_coef = entropy_coefficient_from_config(ppo_cfg["entropy"], actor_critic.action_space).to(
            device
        )
        self.trainable_params = [p for p in actor_critic.parameters() if p.requires_grad]
        if self.entropy_coef.learned:
            self.trainable_params.append(self.entropy_coef.log_alpha)
        self.optimizer = make_adam(self.trainable_params, self.base_lr, float(ppo_cfg["eps"]))

        if seed is None:
            seed = int(torch.randint(0, 2**62, (1,)).item())  # follows torch.manual_seed
        self.generator = torch.Generator().manual_seed(seed)
        self.num_updates = 0

    # ------------------------------------------------------------------ schedule and state
    @property
    def policy_version(self) -> int:
        return self.num_updates

    def lr_at(self, update: int) -> float:
        """Learning rate used by update number `update` (0-based): cosine from lr to 0 at total_updates."""
        if self.lr_schedule == "constant" or self.total_updates <= 0:
            return self.base_lr
        progress = min(update, self.total_updates) / self.total_updates
        return self.base_lr * 0.5 * (1.0 + math.cos(math.pi * progress))

    def state_dict(self) -> dict:
        return {
            "optimizer": self.optimizer.state_dict(),
            "entropy_coef": self.entropy_coef.state_dict(),
            "num_updates": self.num_updates,
            "total_updates": self.total_updates,
            "generator": self.generator.get_state(),
            "return_moments": self.return_moments.clone(),
            **({"reward_scaler": self.reward_scaler.state_dict()} if self.reward_scaler is not None else {}),
        }

    def load_scales(self, state: Mapping) -> None:
        """Only the value normalisation's return moments and the reward scaler of a `state_dict()`
        (fine-tuning a trained policy: its value head predicts returns in those units)."""
        if "return_moments" in state:
            self.return_moments = state["return_moments"].clone()
        if self.reward_scaler is not None and "reward_scaler" in state:
            self.reward_scaler.load_state_dict(state["reward_scaler"])

    def load_state_dict(self, state: Mapping) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.entropy_coef.load_state_dict(state["entropy_coef"])
        self.num_updates = int(state["num_updates"])
        # total_updates stays the constructor's: the schedule's length is this run's configuration, so a run
        # resumed with a larger trainer.total_steps stretches its cosine instead of training on at lr 0
        self.generator.set_state(state["generator"])
        self.load_scales(state)  # a run that had the reward scaler off has no "reward_scaler"

    # ------------------------------------------------------------------ the update
    def update(self, rollout: Rollout, sync_reward_scaler: bool = True) -> dict[str, float]:
        """One PPO update (ppo_epoch epochs of num_mini_batch mini-batches) on `rollout`.

        `sync_reward_scaler=False`: the caller merged the reward scaler's statistics already (a
        `trainer.learner.Learner` does, on the collector's thread)."""
        ac = self.actor_critic
        device = next(ac.parameters()).device
        rollout = rollout.to(device)
        with torch.no_grad():
            advantages, returns = compute_gae(rollout, self.gamma, self.gae_lambda)
            if self.normalize_advantage:
                advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
            if self.use_importance_weights:
                weights = rollout.importance_weights().to(device)
            else:
                weights = torch.ones(len(rollout), device=device)
            lag = (self.num_updates - rollout.policy_version).float()
            if self.normalize_value:
                self._update_value_normalization(returns)
            ac.update_obs_normalization(rollout.obs, self.stats_sync)
            if self.reward_scaler is not None and sync_reward_scaler:  # the rewards are scaled already; this serves the next rollout
                self.reward_scaler.sync(self.stats_sync)
            value_mean, value_std = ac.value_mean.clone(), ac.value_std.clone()
            # the clip range's centre: the acting policy's log-probs, or the learner's as the epochs start
            # (after the statistics above changed), with each row weighted by min(1, pi_learner / pi_behaviour)
            old_log_probs, proximal_weight = rollout.log_probs, torch.ones_like(rollout.log_probs)
            if self.proximal_policy == "learner":
                old_log_probs = self._learner_log_probs(rollout)
                proximal_weight = (old_log_probs - rollout.log_probs).exp().clamp(max=1.0)

        lr = self.lr_at(self.num_updates)
        for group in self.optimizer.param_groups:
            group["lr"] = lr

        ac.train()
        totals = {
            name: 0.0
            for name in ("value_loss", "action_loss", "entropy", "approx_kl", "clip_fraction", "grad_norm")
        }
        steps = 0
        for _ in range(self.ppo_epoch):
            for mb in self._minibatches(rollout):
                rows, out = self._evaluate(rollout, mb)
                w = weights[rows]
                adv = advantages[rows]
                log_ratio = out.log_prob - old_log_probs[rows]
                ratio = log_ratio.exp()
                surrogate = torch.min(
                    ratio * adv, ratio.clamp(1 - self.clip_param, 1 + self.clip_param) * adv
                )
                action_loss = (w * proximal_weight[rows] * -surrogate).mean()
                value_loss = self.value_error(
                    (out.value - value_mean) / value_std,
                    (rollout.values[rows] - value_mean) / value_std,
                    (returns[rows] - value_mean) / value_std,
                )
                value_loss = (w * value_loss).mean()
                entropy = (w * out.entropy).mean()
                alpha = self.entropy_coef.value()
                loss = (
                    action_loss
                    + self.value_loss_coef * value_loss
                    - alpha * entropy
                    + self.entropy_coef.loss(entropy)
                )

                self.optimizer.zero_grad()
                loss.backward()
                if self.grad_sync is not None:
                    self.grad_sync(self.trainable_params)
                grad_norm = nn.utils.clip_grad_norm_(ac.parameters(), self.max_grad_norm)
                self.optimizer.step()
                self.entropy_coef.project_into_bounds()

                with torch.no_grad():
                    totals["value_loss"] += value_loss.item()
                    totals["action_loss"] += action_loss.item()
                    totals["entropy"] += entropy.item()
                    totals["approx_kl"] += ((ratio - 1) - log_ratio).mean().item()
                    totals["clip_fraction"] += ((ratio - 1).abs() > self.clip_param).float().mean().item()
                    totals["grad_norm"] += float(grad_norm)
                steps += 1

        self.num_updates += 1
        stats = {f"learner/{k}": v / max(steps, 1) for k, v in totals.items()}
        var_returns = returns.var()
        stats.update(
            {
                "learner/entropy_coef": float(self.entropy_coef.value()),
                "learner/entropy_target": self.entropy_coef.target,
                "learner/is_weight_min": float(weights.min()),
                "learner/is_weight_mean": float(weights.mean()),
                "learner/is_weight_max": float(weights.max()),
                "learner/policy_lag_mean": float(lag.mean()),
                "learner/policy_lag_max": float(lag.max()),
                "learner/fraction_stale": float((lag > 0).float().mean()),
                "learner/proximal_weight_mean": float(proximal_weight.mean()),
                "learner/lr": lr,
                "learner/explained_variance": float(1 - (returns - rollout.values).var() / var_returns)
                if var_returns > 0
                else 0.0,
            }
        )
        return stats

    @torch.no_grad()
    def _learner_log_probs(self, rollout: Rollout) -> torch.Tensor:
        """Log-prob of every row's action under the current weights, in row order (evaluated in the
        epochs' mini-batch layout, so memory stays as in training; the layout's order does not matter)."""
        log_probs = torch.empty_like(rollout.log_probs)
        layout = torch.Generator().manual_seed(0)  # not self.generator: the epochs' draws stay as they were
        for mb in self._minibatches(rollout, layout):
            rows, obs, hidden = self._minibatch_inputs(rollout, mb)
            # the actor alone: the critic's outputs are not needed here (the same log-probs, less work)
            with self._autocast(rows.device):
                dist = self.actor_critic.action_dist(obs, hidden, mb.seq_lengths)
            log_probs[rows] = dist.log_prob(rollout.actions[rows])
        return log_probs

    def _evaluate(self, rollout: Rollout, mb: MiniBatch) -> tuple[torch.Tensor, EvalOutput]:
        """The mini-batch's rows (on the rollout's device) and the network's log-probs, entropies and values there."""
        rows, obs, hidden = self._minibatch_inputs(rollout, mb)
        with self._autocast(rows.device):
            return rows, self.actor_critic.evaluate(obs, rollout.actions[rows], hidden, mb.seq_lengths)

    def _autocast(self, device: torch.device) -> torch.autocast:
        """bf16 autocast for the learner's forward passes when `learner_bf16` (thread-local: an inference
        thread beside an overlapped update keeps fp32), else a no-op."""
        return torch.autocast(device.type, dtype=torch.bfloat16, enabled=self.learner_bf16)

    @staticmethod
    def _minibatch_inputs(rollout: Rollout, mb: MiniBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
        """The mini-batch's rows (on the rollout's device), their observations and each sequence's first state."""
        device = rollout.log_probs.device
        rows = mb.rows.to(device)
        return rows, {k: v[rows] for k, v in rollout.obs.items()}, rollout.hidden[mb.seq_first_rows.to(device)]

    def _minibatches(self, rollout: Rollout, generator: torch.Generator | None = None) -> list[MiniBatch]:
        """One epoch's mini-batches, drawn with `generator` (default: the update's own, `self.generator`)."""
        generator = self.generator if generator is None else generator
        if self.actor_critic.is_recurrent:
            return build_minibatches(rollout, self.num_mini_batch, generator, self.max_seq_len)
        return build_row_minibatches(rollout, self.num_mini_batch, generator)

    @torch.no_grad()
    def _update_value_normalization(self, returns: torch.Tensor) -> None:
        batch = torch.stack([returns.mean(), returns.pow(2).mean()]).double().cpu()
        if self.stats_sync is not None:
            self.stats_sync(batch)
        beta = max(self.value_norm_beta, 1.0 / (self.num_updates + 1))
        self.return_moments = (1 - beta) * self.return_moments + beta * batch
        mean = self.return_moments[0]
        std = (self.return_moments[1] - mean**2).clamp(min=1e-4).sqrt()
        device = self.actor_critic.value_mean.device
        self.actor_critic.set_value_normalization(mean.float().to(device), std.float().to(device))

    def value_error(
        self, values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor
    ) -> torch.Tensor:
        """Per-row value loss 0.5 (V - R)^2, or PPO2's clipped max form (gradient kept on both branches)."""
        unclipped = (values - returns).pow(2)
        if not self.use_clipped_value_loss:
            return 0.5 * unclipped
        clipped_values = old_values + (values - old_values).clamp(-self.clip_param, self.clip_param)
        return 0.5 * torch.max(unclipped, (clipped_values - returns).pow(2))
