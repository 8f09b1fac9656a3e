"""A policy soup is the parts' weight average, runs as a skill policy, and refuses parts that cannot be averaged."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from skill_checkpoints import untrained_checkpoint

from skills.policy import SkillPolicy
from skills.soup import main, soup_policies
from trainer.checkpoint import CheckpointError, load_checkpoint

SMALL = ["profile=cpu", "sim.camera.head.width=16", "sim.camera.head.height=16"]


def _two_parts(tmp_path):
    for i in range(2):
        torch.manual_seed(i)
        untrained_checkpoint(tmp_path / f"p{i}.pt", "place", SMALL)
    return tmp_path / "p0.pt", tmp_path / "p1.pt"


def test_soup_is_the_mean_of_the_weights_and_acts_as_a_policy(tmp_path):
    a, b = _two_parts(tmp_path)
    main([str(tmp_path / "soup.pt"), str(a), str(b)])
    soup, pa, pb = (load_checkpoint(p) for p in (tmp_path / "soup.pt", a, b))
    for name, value in soup["model"].items():
        if value.is_floating_point():
            torch.testing.assert_close(value, (pa["model"][name] + pb["model"][name]) / 2)
    assert not torch.equal(pa["model"]["actor.0.weight"], pb["model"]["actor.0.weight"])
    assert [p["path"] for p in soup["souped_from"]] == [str(a), str(b)] and "ppo" not in soup
    policy = SkillPolicy.from_checkpoint(tmp_path / "soup.pt")
    obs = {k: np.zeros(s.shape, np.float32) for k, s in soup["obs_space"].spaces.items()}
    action = policy.act(obs)
    assert action.shape == soup["action_space"].shape and np.all(np.isfinite(action))


def test_soup_of_one_policy_with_itself_is_that_policy(tmp_path):
    a, _ = _two_parts(tmp_path)
    soup = soup_policies([a, a])
    for name, value in load_checkpoint(a)["model"].items():
        assert torch.equal(soup["model"][name], value)


def test_soup_refuses_another_skill_or_network_in_one_line(tmp_path, capsys):
    a, _ = _two_parts(tmp_path)
    untrained_checkpoint(tmp_path / "pick.pt", "pick", SMALL)
    with pytest.raises(CheckpointError, match="it is skill pick, not place"):
        soup_policies([a, tmp_path / "pick.pt"])
    untrained_checkpoint(tmp_path / "wide.pt", "place", [*SMALL, "policy.feedforward.actor=[64,64]"])
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path / "soup.pt"), str(a), str(tmp_path / "wide.pt")])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1
    assert err.startswith("error: cannot average") and "policy.feedforward.actor" in err
    assert not (tmp_path / "soup.pt").exists()
    with pytest.raises(CheckpointError, match="at least two"):
        soup_policies([a])


def test_soup_takes_a_run_folder_for_its_newest_checkpoint(tmp_path):
    a, b = _two_parts(tmp_path)
    run = tmp_path / "run" / "checkpoints"
    run.mkdir(parents=True)
    untrained_checkpoint(run / "ckpt_000000000100.pt", "place", SMALL)
    b.replace(run / "ckpt_000000000200.pt")
    soup = soup_policies([a, tmp_path / "run"])
    assert soup["souped_from"][1]["path"] == str(run / "ckpt_000000000200.pt")
    newest = load_checkpoint(run / "ckpt_000000000200.pt")["model"]["actor.0.weight"]
    first = load_checkpoint(a)["model"]["actor.0.weight"]
    torch.testing.assert_close(soup["model"]["actor.0.weight"], (first + newest) / 2)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="no checkpoint"):
        soup_policies([a, tmp_path / "empty"])
