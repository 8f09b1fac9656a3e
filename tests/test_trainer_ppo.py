"""PPO: improves advantaged actions, reduces value loss, value-clipping form, entropy-coef direction, hooks."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from trainer.entropy import EntropyCoefficient
from trainer.networks import ActorCritic
from trainer.ppo import PPO
from trainer.rollout import Rollout

POLICY_CFG = {
    "visual": {"encoder": "cnn_small", "channels": [4], "kernels": [3], "strides": [2], "out_dim": 8},
    "vector_mlp": [32],
    "rnn": {"hidden_size": 16, "num_layers": 2},
    "action": {"mean_activation": "none", "log_std_init": 0.0, "min_log_std": -5.0, "max_log_std": 2.0},
}
PPO_CFG = {
    "gamma": 0.99, "gae_lambda": 0.95, "clip_param": 0.2, "ppo_epoch": 4, "num_mini_batch": 2,
    "value_loss_coef": 0.5, "use_clipped_value_loss": False, "normalize_advantage": False,
    "use_importance_weights": True, "normalize_value": False, "value_norm_beta": 0.1, "max_grad_norm": 0.5, "lr": 3e-3, "eps": 1e-5, "lr_schedule": "cosine",
    "entropy": {"learned": True, "coef": 1e-2, "target": 0.0, "target_per_action_dim": False,
                "min_coef": 1e-4, "max_coef": 1.0},
}  # fmt: skip
OBS_SPACE = gym.spaces.Dict({"x": gym.spaces.Box(-1, 1, (4,), np.float32)})


def reward_of(action: torch.Tensor) -> float:
    """+1 for the 'good' action (first dim positive / discrete action 1), -1 otherwise."""
    good = action[0] > 0 if action.dim() == 1 else action == 1
    return 1.0 if bool(good) else -1.0


def collect(ac: ActorCritic, num_envs=4, steps=48, seed=0, steps_bias=None, policy_version=0) -> Rollout:
    """A variable-experience rollout from the real policy: envs act in random order, episodes of random length."""
    g = torch.Generator().manual_seed(seed)
    probs = torch.tensor(steps_bias or [1.0] * num_envs)
    hidden = ac.initial_hidden(num_envs)
    start = torch.ones(num_envs, dtype=torch.bool)
    ep_id = list(range(num_envs))
    step = [0] * num_envs
    rows = []
    with torch.no_grad():
        for _ in range(steps):
            e = int(torch.multinomial(probs, 1, generator=g))
            obs = {"x": torch.rand(1, 4, generator=g) * 2 - 1}
            h_in = hidden[e : e + 1] * (~start[e])
            out = ac.act(obs, h_in, start[e : e + 1])
            done = bool(torch.rand(1, generator=g) < 0.2)
            rows.append((obs, out, h_in[0], e, ep_id[e], step[e], bool(start[e]), done))
            hidden[e] = out.hidden[0]
            start[e] = done
            step[e] = 0 if done else step[e] + 1
            if done:
                ep_id[e] += num_envs
    S = len(rows)
    return Rollout(
        obs={"x": torch.cat([r[0]["x"] for r in rows])},
        actions=torch.cat([r[1].action for r in rows]),
        log_probs=torch.cat([r[1].log_prob for r in rows]),
        values=torch.cat([r[1].value for r in rows]),
        rewards=torch.tensor([reward_of(r[1].action[0]) for r in rows]),
        dones=torch.tensor([r[7] for r in rows]),
        episode_start=torch.tensor([r[6] for r in rows]),
        hidden=torch.stack([r[2] for r in rows]),
        env_ids=torch.tensor([r[3] for r in rows]),
        episode_ids=torch.tensor([r[4] for r in rows]),
        step_ids=torch.tensor([r[5] for r in rows]),
        policy_version=torch.full((S,), policy_version, dtype=torch.long),
        bootstrap_value=torch.zeros(num_envs),
        num_envs=num_envs,
        expected_steps_per_env=S / num_envs,
    )


def reevaluate(ac: ActorCritic, r: Rollout):
    """Log-probs and values of all rollout rows under the current weights (each env's rows as one sequence per episode)."""
    from trainer.minibatch import build_minibatches

    (mb,) = build_minibatches(r, 1, torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = ac.evaluate(
            {k: v[mb.rows] for k, v in r.obs.items()},
            r.actions[mb.rows],
            r.hidden[mb.seq_first_rows],
            mb.seq_lengths,
        )
    log_prob, value = torch.empty(len(r)), torch.empty(len(r))
    log_prob[mb.rows], value[mb.rows] = out.log_prob, out.value
    return log_prob, value


@pytest.mark.parametrize("action_space", [gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(3)])
def test_update_raises_log_prob_of_advantaged_actions_and_lowers_value_loss(action_space):
    torch.manual_seed(0)
    ac = ActorCritic(OBS_SPACE, action_space, POLICY_CFG)
    r = collect(ac)
    old_log_prob, old_value = reevaluate(ac, r)
    torch.testing.assert_close(old_log_prob, r.log_probs, rtol=1e-5, atol=1e-5)  # collection == evaluation
    ppo = PPO(ac, PPO_CFG, total_updates=10, seed=0)
    from trainer.gae import compute_gae

    adv, returns = compute_gae(r, 0.99, 0.95)
    stats = ppo.update(r)
    new_log_prob, new_value = reevaluate(ac, r)
    delta = new_log_prob - old_log_prob
    assert delta[adv > 0].mean() > 0 and delta[adv < 0].mean() < 0
    assert ((new_value - returns) ** 2).mean() < ((old_value - returns) ** 2).mean()
    for key in ("value_loss", "action_loss", "entropy", "entropy_coef", "approx_kl", "clip_fraction", "grad_norm",
                "is_weight_min", "is_weight_mean", "is_weight_max", "policy_lag_mean", "policy_lag_max",
                "fraction_stale", "lr"):  # fmt: skip
        assert np.isfinite(stats[f"learner/{key}"]), key
    assert ppo.policy_version == 1


def test_clipped_value_loss_is_the_ppo2_max_form():
    ppo = PPO(
        ActorCritic(OBS_SPACE, gym.spaces.Discrete(2), POLICY_CFG),
        {**PPO_CFG, "use_clipped_value_loss": True},
    )
    old, ret = torch.tensor([0.0, 0.0]), torch.tensor([1.0, 1.0])
    values = torch.tensor([-0.5, 0.5], requires_grad=True)
    loss = ppo.value_error(values, old, ret)
    # row 0 moved away from the return: the unclipped error is larger and keeps its gradient
    # (habitat's torch.where form would use the clipped, gradient-free branch here);
    # row 1 moved past the clip towards the return: the clipped error 0.5*(0.2-1)^2 wins, no gradient.
    torch.testing.assert_close(loss.detach(), torch.tensor([0.5 * 1.5**2, 0.5 * 0.8**2]))
    loss.sum().backward()
    torch.testing.assert_close(values.grad, torch.tensor([-1.5, 0.0]))
    ppo.use_clipped_value_loss = False
    torch.testing.assert_close(
        ppo.value_error(values, old, ret).detach(), torch.tensor([0.5 * 1.5**2, 0.5 * 0.5**2])
    )


@pytest.mark.parametrize("entropy,rises", [(-3.0, True), (3.0, False)])
def test_entropy_coefficient_direction_and_bounds(entropy, rises):
    coef = EntropyCoefficient(init=0.01, learned=True, target=0.0, min_coef=1e-4, max_coef=1.0)
    opt = torch.optim.Adam([coef.log_alpha], lr=0.05)
    previous = float(coef.value())
    for i in range(400):
        opt.zero_grad()
        coef.loss(torch.tensor(entropy)).backward()
        opt.step()
        coef.project_into_bounds()
        value = float(coef.value())
        assert 1e-4 * (1 - 1e-6) <= value <= 1.0 * (1 + 1e-6)
        if i < 5:
            assert (value > previous) == rises
        previous = value
    assert value == pytest.approx(1.0 if rises else 1e-4, rel=1e-5)


@pytest.mark.parametrize("target,rises", [(50.0, True), (-50.0, False)])
def test_ppo_update_moves_entropy_coef_towards_target(target, rises):
    torch.manual_seed(1)
    ac = ActorCritic(OBS_SPACE, gym.spaces.Box(-1, 1, (2,), np.float32), POLICY_CFG)
    cfg = {**PPO_CFG, "entropy": {**PPO_CFG["entropy"], "target": target}}
    ppo = PPO(ac, cfg, seed=0)
    before = float(ppo.entropy_coef.value())
    stats = ppo.update(collect(ac, steps=24))
    assert (stats["learner/entropy_coef"] > before) == rises


def test_fixed_entropy_coef_does_not_move():
    ac = ActorCritic(OBS_SPACE, gym.spaces.Discrete(3), POLICY_CFG)
    ppo = PPO(ac, {**PPO_CFG, "entropy": {**PPO_CFG["entropy"], "learned": False, "coef": 1e-3}}, seed=0)
    stats = ppo.update(collect(ac, steps=24))
    assert stats["learner/entropy_coef"] == pytest.approx(1e-3)


def test_grad_sync_hook_sees_every_trainable_parameter_before_the_step():
    torch.manual_seed(2)
    ac = ActorCritic(OBS_SPACE, gym.spaces.Box(-1, 1, (2,), np.float32), POLICY_CFG)
    seen = []

    def zero_grads(params):  # stands in for an all-reduce; zeroing proves it runs before the step
        params = list(params)
        seen.append(len(params))
        for p in params:
            assert p.grad is not None
            p.grad.zero_()

    ppo = PPO(ac, PPO_CFG, grad_sync=zero_grads, seed=0)
    before = [p.detach().clone() for p in ac.parameters()] + [ppo.entropy_coef.log_alpha.detach().clone()]
    ppo.update(collect(ac, steps=24))
    after = list(ac.parameters()) + [ppo.entropy_coef.log_alpha]
    assert seen == [len(before)] * (PPO_CFG["ppo_epoch"] * PPO_CFG["num_mini_batch"])
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_importance_weight_and_lag_stats_and_determinism():
    def run():
        torch.manual_seed(3)
        ac = ActorCritic(OBS_SPACE, gym.spaces.Box(-1, 1, (2,), np.float32), POLICY_CFG)
        r = collect(ac, steps=40, steps_bias=[4.0, 1.0, 1.0, 1.0])
        r.policy_version[::2] = -2  # every other row acted two versions ago
        ppo = PPO(ac, PPO_CFG, total_updates=4)
        return r, ppo.update(r), [p.detach().clone() for p in ac.parameters()]

    r, stats, params = run()
    w = r.importance_weights()
    assert stats["learner/is_weight_min"] == pytest.approx(float(w.min())) and float(w.min()) < 1.0
    assert stats["learner/is_weight_max"] == pytest.approx(1.0)
    assert stats["learner/policy_lag_max"] == 2 and stats["learner/fraction_stale"] == pytest.approx(0.5)
    _, stats2, params2 = run()
    assert stats == stats2 and all(torch.equal(a, b) for a, b in zip(params, params2, strict=True))


def test_cosine_learning_rate_schedule():
    ppo = PPO(ActorCritic(OBS_SPACE, gym.spaces.Discrete(2), POLICY_CFG), PPO_CFG, total_updates=100)
    assert ppo.lr_at(0) == pytest.approx(3e-3)
    assert ppo.lr_at(50) == pytest.approx(1.5e-3)
    assert ppo.lr_at(100) == pytest.approx(0.0, abs=1e-12) and ppo.lr_at(150) == pytest.approx(0.0, abs=1e-12)
    assert ppo.lr_at(25) > ppo.lr_at(26)


def test_value_normalization_preserves_outputs_and_tracks_returns():
    torch.manual_seed(4)
    ac = ActorCritic(OBS_SPACE, gym.spaces.Discrete(2), POLICY_CFG)
    r = collect(ac, steps=32)
    r.rewards *= 50.0  # large returns
    obs, hidden, start = {"x": torch.rand(5, 4)}, ac.initial_hidden(5), torch.ones(5, dtype=torch.bool)
    before = ac.get_value(obs, hidden, start)
    ac.set_value_normalization(torch.tensor(7.0), torch.tensor(3.0))
    torch.testing.assert_close(ac.get_value(obs, hidden, start), before, rtol=1e-5, atol=1e-4)

    ppo = PPO(ac, {**PPO_CFG, "normalize_value": True, "lr": 1e-12}, seed=0)  # no learning: stats only
    from trainer.gae import compute_gae

    _, returns = compute_gae(r, 0.99, 0.95)
    stats = ppo.update(r)
    assert float(ac.value_mean) == pytest.approx(float(returns.mean()), rel=1e-4)  # first update: batch stats
    assert float(ac.value_std) == pytest.approx(float(returns.std(correction=0)), rel=1e-3)
    torch.testing.assert_close(ac.get_value(obs, hidden, start), before, rtol=1e-4, atol=1e-3)
    assert stats["learner/value_loss"] < 5.0  # measured in normalised units, not (50x reward)^2


@pytest.mark.parametrize("action_space,target", [(gym.spaces.Box(-1, 1, (7,), np.float32), -7.0),
                                                 (gym.spaces.Discrete(5), -1.0)])
def test_entropy_target_per_action_dimension(action_space, target):
    """A per-dimension target (e.g. -1 nat per Box dimension for the CPU profile) scales with the dims."""
    cfg = {**PPO_CFG, "entropy": {**PPO_CFG["entropy"], "target": -1.0, "target_per_action_dim": True}}
    ppo = PPO(ActorCritic(OBS_SPACE, action_space, POLICY_CFG), cfg, seed=0)
    assert ppo.entropy_coef.target == target
    stats = ppo.update(collect(ppo.actor_critic, steps=16))
    assert stats["learner/entropy_target"] == target


def test_adam_is_fused_and_a_checkpoint_without_it_resumes_without_it():
    def ppo_and_rollout():
        torch.manual_seed(5)
        ac = ActorCritic(OBS_SPACE, gym.spaces.Box(-1, 1, (2,), np.float32), POLICY_CFG)
        return ac, PPO(ac, PPO_CFG, total_updates=4, seed=0), collect(ac, steps=24)

    ac, ppo, rollout = ppo_and_rollout()
    assert ppo.optimizer.param_groups[0]["fused"] is True  # torch >= 2.4 has the CPU kernel
    ppo.update(rollout)
    fused_params = [p.detach().clone() for p in ac.parameters()]

    ac, ppo, rollout = ppo_and_rollout()
    plain = torch.optim.Adam(ppo.trainable_params, lr=ppo.base_lr, eps=PPO_CFG["eps"])
    ppo.optimizer.load_state_dict(plain.state_dict())  # what resuming a run saved before the kernel does
    assert not ppo.optimizer.param_groups[0]["fused"]
    ppo.update(rollout)
    for a, b in zip(fused_params, ac.parameters(), strict=True):
        torch.testing.assert_close(a, b.detach(), rtol=1e-4, atol=1e-6)  # the same update up to rounding


@pytest.mark.parametrize("recurrent", [True, False])
def test_learner_proximal_policy_centres_the_clip_on_the_learner_and_weights_stale_rows(recurrent):
    """Rows acted by a wider, older policy (log-std 0) and learned by a narrower one (log-std -1): with the
    behaviour policy as the clip's centre, rows start outside the clip range; with the learner's, none do,
    and the rows are weighted by min(1, pi_learner / pi_behaviour)."""
    cfg = {**PPO_CFG, "lr": 1e-12, "ppo_epoch": 1, "num_mini_batch": 1}  # measure at the start, learn nothing
    policy = POLICY_CFG if recurrent else {**POLICY_CFG, "architecture": "feedforward",
                                           "feedforward": {"actor": [16], "critic": [16], "activation": "tanh"}}
    stats = {}
    for proximal in ("behaviour", "learner"):
        torch.manual_seed(7)
        ac = ActorCritic(OBS_SPACE, gym.spaces.Box(-1, 1, (2,), np.float32), policy)
        assert ac.is_recurrent == recurrent
        rollout = collect(ac, steps=64)  # acted with log-std 0
        with torch.no_grad():
            ac.action_head.log_std.fill_(-1.0)  # the learner has narrowed its policy since
        stats[proximal] = PPO(ac, {**cfg, "proximal_policy": proximal}, total_updates=4, seed=0).update(rollout)
        learner_log_probs, _ = reevaluate(ac, rollout)  # lr 1e-12: the learner's policy before and after
    assert stats["behaviour"]["learner/clip_fraction"] > 0.3
    assert stats["behaviour"]["learner/proximal_weight_mean"] == 1.0
    assert stats["learner"]["learner/clip_fraction"] == 0.0
    assert abs(stats["learner"]["learner/approx_kl"]) < 1e-6
    assert 0.2 < stats["learner"]["learner/proximal_weight_mean"] < 1.0
    weight = (learner_log_probs - rollout.log_probs).exp().clamp(max=1.0).mean()  # from the learner's log-probs
    assert stats["learner"]["learner/proximal_weight_mean"] == pytest.approx(float(weight), rel=1e-5)


def test_learner_proximal_policy_equals_behaviour_when_nothing_is_stale():
    """Fresh rows (acted by the learner's own weights, no statistics changing): the same update either way."""
    params = {}
    for proximal in ("behaviour", "learner"):
        torch.manual_seed(3)
        ac = ActorCritic(OBS_SPACE, gym.spaces.Box(-1, 1, (2,), np.float32), POLICY_CFG)
        rollout = collect(ac, steps=40)
        PPO(ac, {**PPO_CFG, "proximal_policy": proximal}, total_updates=4, seed=0).update(rollout)
        params[proximal] = [p.detach().clone() for p in ac.parameters()]
    for a, b in zip(params["behaviour"], params["learner"], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("recurrent", [True, False])
def test_learner_log_probs_are_the_networks_own_from_the_actor_alone(recurrent, monkeypatch):
    """The learner's log-probs (the clip's centre) are `evaluate`'s (up to the rounding of another row
    layout), and computing them never runs the critic (it is not needed there)."""
    policy = POLICY_CFG if recurrent else {**POLICY_CFG, "architecture": "feedforward",
                                           "feedforward": {"actor": [16], "critic": [16], "activation": "tanh"}}
    torch.manual_seed(5)
    ac = ActorCritic(OBS_SPACE, gym.spaces.Box(-1, 1, (2,), np.float32), policy)
    rollout = collect(ac, steps=48)
    ppo = PPO(ac, {**PPO_CFG, "proximal_policy": "learner"}, total_updates=4, seed=0)
    expected, _ = reevaluate(ac, rollout)
    monkeypatch.setattr(ac, "value", lambda *_: pytest.fail("the critic ran"))
    torch.testing.assert_close(ppo._learner_log_probs(rollout), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("recurrent", [True, False])
def test_learner_bf16_runs_the_trunk_in_bf16_keeps_the_heads_fp32_and_tracks_the_fp32_update(recurrent, monkeypatch):
    """`learner_bf16`: the trunk's matmuls run in bf16 inside the update only, the log-probs and values reach the loss
    in fp32, and one update lands near the fp32 update; acting outside the update stays fp32."""
    policy = POLICY_CFG if recurrent else {**POLICY_CFG, "architecture": "feedforward",
                                           "feedforward": {"actor": [16], "critic": [16], "activation": "tanh"}}
    cfg = {**PPO_CFG, "lr": 1e-3, "ppo_epoch": 1, "num_mini_batch": 1, "entropy": {**PPO_CFG["entropy"], "learned": False}}
    results = {}
    for bf16 in (False, True):
        torch.manual_seed(11)
        ac = ActorCritic(OBS_SPACE, gym.spaces.Box(-1, 1, (2,), np.float32), policy)
        rollout = collect(ac, steps=48)
        ppo = PPO(ac, {**cfg, "learner_bf16": bf16}, total_updates=4, seed=0)
        dtypes = {}
        evaluate = ac.evaluate

        def spy(*args, _evaluate=evaluate, _dtypes=dtypes, **kwargs):
            out = _evaluate(*args, **kwargs)
            _dtypes["autocast"] = torch.is_autocast_enabled("cpu")
            _dtypes["out"] = (out.log_prob.dtype, out.value.dtype, out.entropy.dtype)
            return out

        monkeypatch.setattr(ac, "evaluate", spy)
        stats = ppo.update(rollout)
        assert dtypes["autocast"] is bf16
        assert dtypes["out"] == (torch.float32,) * 3
        assert np.isfinite(stats["learner/action_loss"]) and np.isfinite(stats["learner/value_loss"])
        act = ac.act({"x": torch.zeros(1, 4)}, ac.initial_hidden(1), torch.ones(1, dtype=torch.bool))
        assert not torch.is_autocast_enabled("cpu") and act.log_prob.dtype == torch.float32
        results[bf16] = (stats, [p.detach().clone() for p in ac.parameters()])
    (s32, p32), (s16, p16) = results[False], results[True]
    assert s16["learner/value_loss"] == pytest.approx(s32["learner/value_loss"], rel=0.05, abs=1e-3)
    moved = [float((a - b).abs().max()) for a, b in zip(p16, p32, strict=True)]
    assert max(moved) < 5e-3  # one Adam step at lr 1e-3 moves each weight by <= ~1e-3: the two updates agree in sign


@pytest.mark.parametrize("native", [True, False])
def test_learner_bf16_auto_follows_the_hardware_and_bad_values_are_refused(native, monkeypatch):
    """`learner_bf16: auto` turns bf16 on exactly where the device has it natively (`native_bf16`); anything but
    true, false or auto is a one-line error."""
    import trainer.ppo as ppo_module

    monkeypatch.setattr(ppo_module, "native_bf16", lambda device: native)
    ac = ActorCritic(OBS_SPACE, gym.spaces.Box(-1, 1, (2,), np.float32), POLICY_CFG)
    assert PPO(ac, {**PPO_CFG, "learner_bf16": "auto"}, total_updates=1).learner_bf16 is native
    assert PPO(ac, {**PPO_CFG, "learner_bf16": True}, total_updates=1).learner_bf16 is True
    with pytest.raises(ValueError, match="learner_bf16 must be true, false or auto; got 'yes'"):
        PPO(ac, {**PPO_CFG, "learner_bf16": "yes"}, total_updates=1)


def test_native_bf16_on_a_cpu_follows_its_flags(monkeypatch):
    """On a CPU, `native_bf16` is what the cpuinfo flags say (trainer.cpu_info, tested in test_cpu_info.py)."""
    import trainer.ppo as ppo_module

    for has in (True, False):
        monkeypatch.setattr(ppo_module, "cpu_has_bf16", lambda _has=has: _has)
        assert ppo_module.native_bf16(torch.device("cpu")) is has
