"""`train-skill`: bad input gives one line and exit code 2; a tiny run writes a checkpoint that
`skills.policy.SkillPolicy` loads and runs on the skill's env."""

import numpy as np
import pytest

from skills.train_cli import main

SMALL = ["trainer.num_envs=2", "trainer.num_steps=32", "trainer.total_steps=128", "trainer.progress_bar=false",
         "dataset.count=2", "policy=mlp", "sim.camera.head.width=32", "sim.camera.head.height=32"]


def run_cli(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip()
    return exc.value.code, err


def test_unknown_skill_exits_2_with_one_line(capsys, tmp_path):
    code, err = run_cli(["--skill", "juggle", "--out", str(tmp_path / "run")], capsys)
    assert code == 2
    assert len(err.splitlines()) == 1 and "unknown skill 'juggle'" in err
    for name in ("pick", "place", "nav", "open_fridge", "close_fridge", "open_cab", "close_cab"):
        assert name in err
    assert not (tmp_path / "run").exists()


def test_missing_skill_and_bad_override_exit_2(capsys, tmp_path):
    code, err = run_cli([], capsys)
    assert code == 2 and "--skill is required" in err and len(err.splitlines()) == 1
    code, err = run_cli(["--skill", "pick", "--out", str(tmp_path / "r"), "policy=nonexistent"], capsys)
    assert code == 2 and "invalid config override" in err and len(err.splitlines()) == 1


def test_nav_without_base_exits_2(capsys, tmp_path):
    code, err = run_cli(["--skill", "nav", "--out", str(tmp_path / "r"), "skill.base_movement=false"], capsys)
    assert code == 2 and "base movement" in err and len(err.splitlines()) == 1


def test_bad_sim_value_exits_2_before_any_work(capsys, tmp_path):
    code, err = run_cli(["--skill", "pick", "--out", str(tmp_path / "r"), "sim.physics.robot_wall_contacts=1"], capsys)
    assert code == 2 and "sim.physics.robot_wall_contacts must be true or false, got 1" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "r").exists()


def test_bad_dataset_exits_2_and_is_not_touched(capsys, tmp_path):
    bad = tmp_path / "eps.json"
    bad.write_text("{not json")
    code, err = run_cli(["--skill", "pick", "--out", str(tmp_path / "r"), f"dataset.path={bad}"], capsys)
    assert code == 2 and "not valid JSON" in err and len(err.splitlines()) == 1
    assert bad.read_text() == "{not json"


def test_dataset_of_another_skill_exits_2(capsys, tmp_path):
    from rearrange.episodes import save_episodes
    from rearrange.generate import generate_episodes

    path = tmp_path / "nav.json.gz"
    save_episodes(path, generate_episodes("nav", "train", 1, 0))
    code, err = run_cli(["--skill", "pick", "--out", str(tmp_path / "r"), f"dataset.path={path}"], capsys)
    assert code == 2 and "needs 'pick' episodes" in err


def test_resume_without_checkpoint_exits_2(capsys, tmp_path):
    code, err = run_cli(["--resume", str(tmp_path)], capsys)
    assert code == 2 and "no checkpoint" in err and len(err.splitlines()) == 1


def test_resume_whose_episode_file_is_gone_names_dataset_path(capsys, tmp_path):
    """A training state records its episode file (the shipped ones under runs/, not in git): resuming one whose
    file is gone is one line naming the file and the override, and writes nothing."""
    from pathlib import Path

    from trainer.checkpoint import load_checkpoint, save_checkpoint

    shipped = Path(__file__).resolve().parents[1] / "checkpoints" / "place_cpu_run" / "checkpoints"
    state = load_checkpoint(next(shipped.glob("ckpt_*.pt")))
    gone = tmp_path / "place_train_gone.json.gz"
    state["config"]["dataset"]["path"] = str(gone)
    save_checkpoint(tmp_path / "state" / "ckpt_000000000001.pt", state)
    code, err = run_cli(["--resume", str(tmp_path / "state"), "--out", str(tmp_path / "r")], capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{gone} does not exist" in err and "dataset.path=FILE" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_tiny_run_writes_checkpoint_that_skill_policy_runs(tmp_path):
    from rearrange.env import RearrangeEnv
    from rearrange.tasks.skill_tasks import make_skill_task
    from skills.policy import SkillPolicy
    from trainer.checkpoint import latest_checkpoint

    out = tmp_path / "run"
    main(["--skill", "pick", "--out", str(out), *SMALL])
    ckpt = latest_checkpoint(out / "checkpoints")
    assert ckpt is not None and (out / "metrics.jsonl").exists()
    assert list((out / "episodes").glob("pick_train_2_seed0.json.gz"))

    policy = SkillPolicy.from_checkpoint(ckpt)
    assert policy.name == "pick" and policy.skill.action_subsets == ("arm", "grip", "base")
    assert policy.config["profile"] in ("cpu", "paper")  # profile=auto, resolved by CUDA
    env = RearrangeEnv(make_skill_task(policy.config["skill"]), next((out / "episodes").iterdir()),
                       sim_cfg=policy.config["sim"])
    obs, _ = env.reset(seed=0)
    assert obs["head_depth"].shape == (32, 32, 1)
    policy.reset()
    actions = []
    for _ in range(3):
        a = policy.act(obs)
        assert a.shape == (10,) and np.all(np.abs(a) <= 1.0)
        obs, *_ = env.step(a)
        actions.append(a)
    policy.reset()  # same observation after reset -> same (deterministic) first action
    obs0, _ = env.reset(seed=0)
    assert np.allclose(policy.act(obs0), actions[0])
    assert policy.full_action(actions[0]).shape == (11,)
    with pytest.raises(ValueError, match="trained on"):
        policy.act({**obs0, "head_depth": np.zeros((64, 64, 1), dtype=np.float32)})
    env.close()


def test_skill_policy_rejects_missing_or_foreign_checkpoint(tmp_path):
    import torch

    from skills.policy import SkillPolicy
    from trainer.checkpoint import CheckpointError

    with pytest.raises(CheckpointError, match="not found"):
        SkillPolicy.from_checkpoint(tmp_path / "nope.pt")
    foreign = tmp_path / "foreign.pt"
    torch.save({"model": {}, "config": {"env_id": "CartPole-v1"}, "obs_space": None, "action_space": None}, foreign)
    with pytest.raises(CheckpointError, match="not a skill checkpoint"):
        SkillPolicy.from_checkpoint(foreign)


def test_unknown_observation_exits_2_before_any_episode_is_made(capsys, tmp_path):
    code, err = run_cli(["--skill", "pick", "--out", str(tmp_path / "r"), "skill.obs_keys=[head_depth,bogus]"], capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("error: skill.obs_keys: unknown sensor 'bogus'; valid choices:") and "obj_path_compass" in err
    assert not (tmp_path / "r" / "episodes").exists()  # nothing generated before the check
