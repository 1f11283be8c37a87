"""Each built-in scorer on right, wrong and malformed outputs, through a FileTask."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_master.tasks import FileTask, Task, load_task_dir

from .helpers import make_task_dir


def _task(tmp_path: Path, kind: str, **kw) -> FileTask:
    return load_task_dir(make_task_dir(tmp_path / kind, kind, **kw))


def _scores(task: FileTask, outputs: list[str]) -> list[float]:
    item = task.eval_items("dev")[1]
    return [task.score(item, out).score for out in outputs]


def test_file_task_satisfies_the_task_protocol(tmp_path: Path) -> None:
    task = _task(tmp_path, "numeric")
    assert isinstance(task, Task)
    assert [i.sample_id for i in task.eval_items("final")] == ["f-0", "f-1", "f-2", "f-3"]
    assert task.eval_items("dev")[1].prompt == "Question: What is 1 plus 2?\nAnswer:"
    assert task.stop == ("\n",) and task.decoding.max_new_tokens == 8 and not task.decoding.do_sample


def test_exact_match_normalises_case_space_and_edge_punctuation(tmp_path: Path) -> None:
    task = _task(tmp_path, "exact_match")  # answer City1
    assert _scores(task, ["City1", "  city1. ", '"CITY1"', "City 1", "City12", ""]) == [1, 1, 1, 0, 0, 0]


def test_numeric_takes_the_last_number_gsm8k_style(tmp_path: Path) -> None:
    task = _task(tmp_path, "numeric")  # answer "1 + 2 = 3\n#### 3"
    assert task.eval_items("dev")[1].reference == 3.0
    assert _scores(task, ["3", "1 + 2 = 3", "so 3.0", "$3", "3 apples, not 4", "none", "-3"]) == [1, 1, 1, 1, 0, 0, 0]


def test_regex_extracts_the_last_match(tmp_path: Path) -> None:
    task = _task(tmp_path, "regex")  # answer "bb"
    assert _scores(task, ["ANSWER: bb", "ANSWER: aa then ANSWER: bb", "answer:BB", "bb", "ANSWER: bbb"]) == [
        1,
        1,
        1,
        0,
        0,
    ]


def test_multiple_choice_shuffles_by_a_fixed_seed(tmp_path: Path) -> None:
    task = _task(tmp_path, "multiple_choice")
    again = load_task_dir(tmp_path / "multiple_choice")
    items = task.eval_items("dev")
    assert [i.prompt for i in items] == [i.prompt for i in again.eval_items("dev")]
    # The right choice does not sit at the same letter for every item (the file puts it first).
    letters = {i.reference["letter"] for i in items + task.eval_items("review") + task.eval_items("final")}
    assert len(letters) > 1
    item = items[1]
    right = item.reference["letter"]
    wrong = next(c for c in "ABCD" if c != right)
    assert f"{right}. 1\n" in item.prompt + "\n"
    outs = [right, f"({right})", f"The answer is {right}", wrong, f"The answer is {wrong}", "E", ""]
    assert [task.score(item, o).score for o in outs] == [1, 1, 1, 0, 0, 0, 0]


def test_function_call_compares_parsed_calls(tmp_path: Path) -> None:
    task = _task(tmp_path, "function_call")  # weather(town="t1", days=1)
    outs = [
        '{"name": "weather", "arguments": {"town": "t1", "days": 1}}',
        'call: {"arguments": {"days": 1.0, "town": "t1"}, "name": "weather"} done',
        '{"name": "weather", "arguments": "{\\"town\\": \\"t1\\", \\"days\\": 1}"}',
        '{"name": "weather", "arguments": {"town": "t1", "days": "1"}}',
        '{"name": "forecast", "arguments": {"town": "t1", "days": 1}}',
        '{"name": "weather", "arguments": {"town": "t1"}}',
        "weather(t1, 1)",
        '{"name": ',
    ]
    assert _scores(task, outs) == [1, 1, 1, 0, 0, 0, 0, 0]


def test_unit_tests_pass_and_fail(tmp_path: Path) -> None:
    task = _task(tmp_path, "unit_tests")  # f(x) = x + 1
    assert _scores(task, ["def f(x):\n    return x + 1\n", "def f(x):\n    return x\n", "def f(x) return"]) == [1, 0, 0]


def test_python_scorer_raising_on_one_item_scores_it_zero_with_the_reason(tmp_path: Path) -> None:
    task = _task(tmp_path, "python")
    items = task.eval_items("dev")  # answers yes0..yes3; the scorer raises on yes3
    assert task.score(items[1], "yes1").score == 1.0
    assert task.score(items[1], "no").score == 0.0
    broken = task.score(items[3], "yes3")
    assert broken.score == 0.0 and "RuntimeError" in broken.reason and "item 3" in broken.reason
    assert task.score(items[2], "yes2").score == 1.0  # the next item is scored as usual


def test_python_scorer_is_compiled_from_the_bytes_read_not_the_file_now(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "p", "python")
    task = load_task_dir(root)
    (root / "scorer.py").write_text("def score(item, output):\n    return 1.0\n")
    assert task.score(task.eval_items("dev")[0], "wrong").score == 0.0


@pytest.mark.parametrize("kind", ["exact_match", "numeric", "regex", "multiple_choice", "function_call", "python"])
def test_scores_are_total_on_garbage(tmp_path: Path, kind: str) -> None:
    task = _task(tmp_path, kind)
    item = task.eval_items("dev")[0]
    for out in ["", "\x00" * 10, "{" * 5000, "9" * 400, None]:
        s = task.score(item, out)  # type: ignore[arg-type]
        assert 0.0 <= s.score <= 1.0


def test_reward_uses_the_example_check(tmp_path: Path) -> None:
    task = _task(tmp_path, "numeric", train=3)
    pool = task.train_pool()
    assert [p.id for p in pool] == ["t-0", "t-1", "t-2"]
    assert pool[0].question == {"question": "What is 300 plus 301?"}
    assert task.reward({"check": pool[0].reference}, "601") == 1.0
    assert task.reward({"check": pool[0].reference}, "600") == 0.0
