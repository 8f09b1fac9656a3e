"""`eval-hab`: bad inputs exit 2 with one line; a tiny run writes results.json, the chart and a video."""

from __future__ import annotations

import json

import imageio.v2 as iio
import pytest
from cli_errors import one_line_exit_2
from PIL import Image
from skill_checkpoints import untrained_checkpoint

from eval.hab_eval import main


def test_bad_inputs_exit_2_with_one_line(capsys, tmp_path):
    err = one_line_exit_2(capsys, main, ["--scenario", "tidy_kitchen", "--out", str(tmp_path)])
    assert "tidy_kitchen" in err and "tidy_house, prepare_groceries, set_table" in err
    err = one_line_exit_2(capsys, main, ["--scenario", "tidy_house", "--agent", "magic", "--out", str(tmp_path)])
    assert "magic" in err and "oracle, tp-srl, tp-srl-nonav" in err
    err = one_line_exit_2(capsys, main, ["--scenario", "tidy_house", "--split", "test", "--out", str(tmp_path)])
    assert "train, val" in err
    err = one_line_exit_2(capsys, main, ["--scenario", "tidy_house", "--out", str(tmp_path), "agent.no_such_key=1"])
    assert "override" in err
    err = one_line_exit_2(capsys, main, ["--scenario", "tidy_house", "--out", str(tmp_path), "--mode", "sometimes"])
    assert "agent.mode" in err and "replan, fixed" in err
    err = one_line_exit_2(capsys, main, ["--scenario", "tidy_house", "--out", str(tmp_path), "agent.max_replans=-1"])
    assert "agent.max_replans" in err
    err = one_line_exit_2(capsys, main, ["--scenario", "tidy_house", "--out", str(tmp_path), "agent.sample_retries=often"])
    assert "agent.sample_retries must be true or false" in err
    err = one_line_exit_2(capsys, main, ["--scenario", "tidy_house", "--out", str(tmp_path), "eval.torch_threads=-2"])
    assert "eval.torch_threads must be an int >= 0" in err
    err = one_line_exit_2(capsys, main, ["--scenario", "tidy_house", "--out", str(tmp_path),
                                         "+sim.physics.robot_wall_contacts=maybe"])
    assert "sim.physics.robot_wall_contacts must be true or false" in err
    err = one_line_exit_2(capsys, main, ["--scenario", "set_table", "--agent", "tp-srl", "--episodes", "1",
                                         "--checkpoint-dir", str(tmp_path / "ckpts"), "--out", str(tmp_path)])
    assert "checkpoint for skill 'nav' not found" in err and str(tmp_path / "ckpts" / "nav.pt") in err
    assert not (tmp_path / "results.json").exists()


def test_corrupt_checkpoint_exit_2(capsys, tmp_path):
    ckpts = tmp_path / "ckpts"
    ckpts.mkdir()
    for skill in ("nav", "pick", "place"):
        (ckpts / f"{skill}.pt").write_bytes(b"not a checkpoint")
    err = one_line_exit_2(capsys, main, ["--scenario", "prepare_groceries", "--agent", "tp-srl", "--episodes", "1",
                                         "--checkpoint-dir", str(ckpts), "--out", str(tmp_path / "out")])
    assert "nav.pt" in err


def test_tiny_oracle_run_writes_results_and_chart(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["--scenario", "prepare_groceries", "--agent", "oracle", "--episodes", "1", "--out", str(out),
                 "--no-progress", "hab_task.max_steps=120"]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["scenario"] == "prepare_groceries" and result["agent"] == "oracle"
    assert result["num_episodes"] == 1
    assert result["stage_order"] == ["pick_0", "place_0", "pick_1", "place_1", "pick_2", "place_2"]
    for stats in [result["success"], *result["stage_success"].values()]:
        assert stats["ci_low"] <= stats["mean"] <= stats["ci_high"]
    # 120 steps are far too few for 3 objects: the episode is truncated and the active skill blamed
    assert result["success"]["mean"] == 0.0
    episode = result["episodes"][0]
    assert episode["failed_skill"] in ("nav", "pick", "place") and episode["failed_call"]
    assert episode["end_reason"] == "truncated"
    assert result["failed_skill"] == {episode["failed_skill"]: 1}
    first_missing = next(n for n in result["stage_order"] if not episode["stages"][n])
    assert result["failed_subtask"] == {first_missing: 1}
    assert result["measures"]["steps"]["mean"] == 120
    calls = result["skill_calls"]  # every call counted once, as a first try or a repeat
    assert sum(c[k]["calls"] for c in calls.values() for k in ("first", "retry")) == len(episode["skill_calls"])
    with Image.open(out / "stages.png") as img:
        assert img.format == "PNG" and img.size[0] > 100
    printed = capsys.readouterr().out
    assert "success" in printed
    # the histogram's line says what it counts (a truncated episode blames the step running at its end)
    assert f"failed skills (the last failed call, or the step running when the episode ended): {{'{episode['failed_skill']}': 1}}" in printed
    # same seed and config: the same episode, step for step
    again = tmp_path / "again"
    main(["--scenario", "prepare_groceries", "--agent", "oracle", "--episodes", "1", "--out", str(again),
          "--no-progress", "hab_task.max_steps=120"])
    assert json.loads((again / "results.json").read_text())["episodes"] == result["episodes"]


def test_video_has_one_frame_per_step(tmp_path):
    out, videos = tmp_path / "out", tmp_path / "videos"
    assert main(["--scenario", "tidy_house", "--episodes", "1", "--out", str(out), "--video", str(videos),
                 "--no-progress", "hab_task.max_steps=25", "video.width=96", "video.height=96"]) == 0
    result = json.loads((out / "results.json").read_text())
    steps = int(result["episodes"][0]["measures"]["steps"])
    files = sorted(videos.glob("*.mp4"))
    assert [f.name for f in files] == ["tidy_house_epval_0_0_success=0.mp4"]
    reader = iio.get_reader(files[0])
    try:
        frames = [f for f in reader]
    finally:
        reader.close()
    assert len(frames) == steps == 25
    assert frames[0].shape[1] >= 2 * 96  # RGB and depth side by side


@pytest.mark.parametrize("agent", ["tp-srl", "tp-srl-nonav"])
def test_learned_agents_run_skill_checkpoints(tmp_path, agent):
    ckpts = tmp_path / "ckpts"
    for skill in ("nav", "pick", "place"):
        untrained_checkpoint(ckpts / f"{skill}.pt", skill)
    out = tmp_path / "out"
    assert main(["--scenario", "prepare_groceries", "--agent", agent, "--episodes", "1", "--out", str(out),
                 "--checkpoint-dir", str(ckpts), "--no-progress", "hab_task.max_steps=12"]) == 0
    result = json.loads((out / "results.json").read_text())
    episode = result["episodes"][0]
    assert result["checkpoints"]["pick"] == str(ckpts / "pick.pt")
    # untrained skills either run into the step limit or (a nav whose stop output is > 0) end at
    # once without their effect, and the agent re-plans until its budget is spent
    assert 1 <= episode["measures"]["steps"] <= 12
    assert episode["end_reason"] in ("truncated", "replans_exhausted", "force")
    if episode["end_reason"] == "replans_exhausted":
        from rearrange.tasks.hab import load_hab_config

        assert episode["measures"]["num_replans"] == load_hab_config()["agent"]["max_replans"]
    first = episode["skill_calls"][0]
    # with nav the plan starts by navigating to the first object; without nav it starts with the pick
    assert first.startswith("nav(obj_0)" if agent == "tp-srl" else "pick(obj_0)")
    assert not episode["success"]


def test_only_runs_the_named_episodes_as_the_full_run_does(tmp_path, capsys):
    """--only 1 plays episode 1 exactly as a run of both does (sampled nav actions seeded per episode
    index, not by what ran before); an index outside the episodes is a one-line error."""
    ckpts = tmp_path / "ckpts"
    for skill in ("nav", "pick", "place"):
        untrained_checkpoint(ckpts / f"{skill}.pt", skill)
    common = ["--scenario", "prepare_groceries", "--agent", "tp-srl", "--episodes", "2", "--checkpoint-dir",
              str(ckpts), "--no-progress", "hab_task.max_steps=40", "agent.sampled_skills=[nav,pick]"]
    assert main([*common, "--out", str(tmp_path / "both")]) == 0
    assert main([*common, "--out", str(tmp_path / "one"), "--only", "1"]) == 0
    both = json.loads((tmp_path / "both" / "results.json").read_text())["episodes"]
    one = json.loads((tmp_path / "one" / "results.json").read_text())["episodes"]
    assert [e["episode_id"] for e in one] == [both[1]["episode_id"]]
    assert one[0] == both[1]
    err = one_line_exit_2(capsys, main, [*common, "--out", str(tmp_path / "bad"), "--only", "2"])
    assert "--only: episode index 2 is not among the 2 episodes (0..1)" in err
    # the same holds across processes: two workers, each with its own agent and env, give the same rows
    assert main([*common, "--out", str(tmp_path / "two"), "--workers", "2"]) == 0
    two = json.loads((tmp_path / "two" / "results.json").read_text())
    assert two["episodes"] == both
    err = one_line_exit_2(capsys, main, [*common, "--out", str(tmp_path / "bad"), "--workers", "0"])
    assert "--workers (eval.workers) must be an int >= 1, got 0" in err


def test_help_shows_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "examples:" in text and "--checkpoint-dir" in text and "tidy_house, prepare_groceries, set_table" in text


def test_skill_call_summary_separates_first_tries_from_repeats():
    from types import SimpleNamespace

    from eval.episode_outcome import SkillRun
    from eval.hab_eval import skill_call_summary

    def run(label, skill, ok, outcome="done"):
        return SkillRun(label=label, skill=skill, steps=10, outcome=outcome, effects_hold=ok)

    episodes = [
        SimpleNamespace(skill_runs=[run("pick(a)", "pick", False, "timeout"), run("nav(a)", "nav", True),
                                    run("pick(a)", "pick", False, "timeout"), run("pick(a)", "pick", True),
                                    run("pick(b)", "pick", True)]),
        SimpleNamespace(skill_runs=[run("pick(a)", "pick", True)]),  # a new episode: a first try again
    ]
    summary = skill_call_summary(episodes)
    assert summary["pick"]["first"] == {"calls": 3, "succeeded": 2, "failed_by": {"timeout": 1}}
    assert summary["pick"]["retry"] == {"calls": 2, "succeeded": 1, "failed_by": {"timeout": 1}}
    assert summary["nav"]["first"]["calls"] == 1 and summary["nav"]["retry"]["calls"] == 0
    assert "unstuck" not in summary["nav"]["first"]  # no nav was driven out of a wedge


def test_skill_call_summary_counts_the_navs_driven_out_of_a_wedge():
    from types import SimpleNamespace

    from eval.episode_outcome import SkillRun
    from eval.hab_eval import skill_call_summary

    runs = [SkillRun(label="nav(a)", skill="nav", steps=400, outcome="timeout", effects_hold=False, unsticks=3),
            SkillRun(label="nav(b)", skill="nav", steps=90, outcome="done", effects_hold=True, unsticks=1),
            SkillRun(label="nav(c)", skill="nav", steps=50, outcome="done", effects_hold=True)]
    summary = skill_call_summary([SimpleNamespace(skill_runs=runs)])
    assert summary["nav"]["first"]["unstuck"] == {"calls": 2, "succeeded": 1, "drives": 4}
    assert summary["nav"]["first"]["calls"] == 3


def test_the_summary_names_the_navs_driven_out_of_a_wedge(capsys, tmp_path):
    from eval.hab_eval import print_summary

    interval = {"mean": 0.0, "ci_low": 0.0, "ci_high": 0.0}
    nav = {"first": {"calls": 3, "succeeded": 2, "failed_by": {}, "unstuck": {"calls": 2, "succeeded": 1, "drives": 4}},
           "retry": {"calls": 1, "succeeded": 1, "failed_by": {}, "unstuck": {"calls": 1, "succeeded": 1, "drives": 1}}}
    result = {"scenario": "tidy_house", "agent": "tp-srl", "mode": "replan", "num_episodes": 1, "success": interval,
              "stage_success": {"pick_0": interval}, "failed_skill": {}, "skill_calls": {"nav": nav},
              "measures": {}}
    print_summary(result, tmp_path)
    assert "nav calls driven out of a wedge (agent.nav_unstick_steps): 3, 2 of them succeeded" in capsys.readouterr().out


def test_an_episode_file_records_its_own_split(tmp_path):
    """--episodes-file with train episodes: results.json says split 'train' (it wrote the default 'val')."""
    from rearrange.episodes import save_episodes
    from rearrange.generate import generate_episodes

    path = tmp_path / "train.json.gz"
    save_episodes(path, generate_episodes("set_table", "train", 1, 4), kind="set_table", split="train", seed=4)
    out = tmp_path / "out"
    assert main(["--scenario", "set_table", "--agent", "oracle", "--episodes-file", str(path), "--episodes", "1",
                 "--out", str(out), "--no-progress", "hab_task.max_steps=5"]) == 0
    assert json.loads((out / "results.json").read_text())["split"] == "train"
