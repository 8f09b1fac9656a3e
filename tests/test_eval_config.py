"""The evaluators' `eval` and `video` values are checked before any episode runs (eval/eval_config.py)."""

import pytest
from cli_errors import one_line_exit_2

from configs.compose import ConfigError, compose, to_plain
from eval.eval_config import check_eval_config
from eval.hab_eval import main as eval_hab_main
from eval.skill_eval import main as eval_skill_main


@pytest.mark.parametrize("name", ["eval_skill", "eval_hab"])
def test_the_shipped_eval_configs_pass(name):
    check_eval_config(to_plain(compose(name, [])))


@pytest.mark.parametrize("override, message", [
    ("eval.bootstrap_samples=0", "eval.bootstrap_samples must be an integer >= 1; got 0"),
    ("eval.ci=1.5", "eval.ci must be a number in (0, 1); got 1.5"),
    ("eval.ci=0", "eval.ci must be a number in (0, 1); got 0"),
    ("eval.seed=abc", "eval.seed must be an integer >= 0; got 'abc'"),
    ("eval.seed=2.5", "eval.seed must be an integer >= 0; got 2.5"),
    ("eval.episodes=0", "eval.episodes must be an integer >= 1; got 0"),
    ("eval.deterministic=maybe", "eval.deterministic must be true or false; got 'maybe'"),
    ("video.width=0", "video.width must be an integer >= 1; got 0"),
    ("video.every=-1", "video.every must be an integer >= 1; got -1"),
])
def test_eval_skill_rejects_a_bad_value_before_any_episode(capsys, tmp_path, override, message):
    out = tmp_path / "result.json"
    line = one_line_exit_2(capsys, eval_skill_main, ["--skill", "nav", "--out", str(out), "--no-progress", override])
    assert line == f"error: {message}"
    assert not out.exists()


@pytest.mark.parametrize("override, message", [
    ("eval.bootstrap_samples=-5", "eval.bootstrap_samples must be an integer >= 1; got -5"),
    ("eval.ci=1", "eval.ci must be a number in (0, 1); got 1"),
    ("eval.seed=-1", "eval.seed must be an integer >= 0; got -1"),
    ("video.fps=0", "video.fps must be an integer >= 1; got 0"),
    ("eval.out_dir=null", "eval.out_dir must be a path; got None"),
])
def test_eval_hab_rejects_a_bad_value_before_any_episode(capsys, tmp_path, override, message):
    out = tmp_path / "run"
    line = one_line_exit_2(capsys, eval_hab_main, ["--scenario", "tidy_house", "--out", str(out), "--no-progress",
                                                   override])
    assert line == f"error: {message}"
    assert not out.exists()


def test_a_config_without_an_eval_node_is_named():
    with pytest.raises(ConfigError, match="eval.episodes is missing"):
        check_eval_config({"video": {"width": 1, "height": 1, "every": 1}})
