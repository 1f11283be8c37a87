"""Loading task directories: bad input gives one clear line and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_master.errors import RsiMasterError
from rsi_master.tasks import TaskInputError, UnknownTaskError, get_task, load_task_dir, resolve_task

from .helpers import make_task_dir, write_jsonl


def _error(root: Path) -> str:
    with pytest.raises(TaskInputError) as info:
        load_task_dir(root)
    message = str(info.value)
    assert "\n" not in message and isinstance(info.value, RsiMasterError)
    return message


def _toml(root: Path, edit) -> None:
    path = root / "task.toml"
    path.write_text(edit(path.read_text()))


def test_missing_directory_and_missing_task_toml(tmp_path: Path) -> None:
    assert "not a task directory" in _error(tmp_path / "nope")
    root = make_task_dir(tmp_path / "t")
    (root / "task.toml").unlink()
    assert "no task.toml" in _error(root)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda s: s.replace('capability = "a test task scored by exact_match"\n', ""), "missing field 'capability'"),
        (lambda s: "colour = 'blue'\n" + s, "unknown field 'colour'"),
        (lambda s: s + "colour = 'blue'\n", "unknown field 'scorer.colour'"),
        (lambda s: s.replace("[generation]\n", "[generation]\ntopk = 3\n"), "unknown field 'generation.topk'"),
        (lambda s: s.replace('kind = "exact_match"', 'kind = "bleu"'), "scorer"),
        (lambda s: s.replace('kind = "exact_match"', 'kind = "exact_match"\npattern = "x"'), "unknown field"),
        (lambda s: s.replace('[scorer]\nkind = "exact_match"\n', ""), "missing field 'scorer'"),
        (lambda s: s + "version = 2\n", "version"),
        (lambda s: s.replace('name = "exact-match"', 'name = "Bad/Name"'), "name"),
        (lambda s: s + "[splits]\ndev = '../elsewhere.jsonl'\n", "not a relative path"),
        (lambda s: s + "[splits]\ndev = '/etc/passwd'\n", "not a relative path"),
        (lambda s: s.replace("max_new_tokens = 8", "max_new_tokens = 0"), "max_new_tokens"),
        (lambda s: s.replace("max_new_tokens = 8", 'max_new_tokens = "8"'), "max_new_tokens"),
        (lambda s: s + "= broken", "not TOML"),
        (lambda s: s.replace("{question}", "{nothing}"), "no field 'nothing'"),
        (lambda s: s.replace("{question}", "no field at all"), "uses no item field"),
        (lambda s: s + "[training]\nlearning_rate = [1e-3, 1e-4]\n", "learning_rate must be [low, high]"),
        (lambda s: s + "[training]\nlearning_rate = [1e-3]\n", "learning_rate must be [low, high]"),
        (lambda s: s + "[training]\nlearning_rate = [1e-3, 0.5]\n", "high <= 0.1"),
        (lambda s: s + "[training]\nbatch_sizes = []\n", "batch_sizes must be distinct"),
        (lambda s: s + "[training]\nbatch_sizes = [8, 8]\n", "batch_sizes must be distinct"),
        (lambda s: s + "[training]\nmax_steps = [0, 100]\n", "max_steps must be [low, high]"),
        (lambda s: s + "[training]\nwarmup = 3\n", "unknown field 'training.warmup'"),
    ],
)
def test_bad_task_toml(tmp_path: Path, edit, expected: str) -> None:
    root = make_task_dir(tmp_path / "t")
    _toml(root, edit)
    assert expected in _error(root)


def test_missing_split_file(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "t")
    (root / "review.jsonl").unlink()
    assert _error(root).endswith("no review.jsonl")


def test_duplicate_ids_in_a_split(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "t")
    write_jsonl(
        root / "dev.jsonl", [{"id": "a", "question": "x", "answer": "1"}, {"id": "a", "question": "y", "answer": "2"}]
    )
    assert "dev.jsonl line 2: duplicate id 'a'" in _error(root)


def test_items_holding_unicode_line_separators_load_whole(tmp_path: Path) -> None:
    """Text scraped from the web holds U+2028 and U+0085; JSON writes them raw. A line ends
    at "\n" only, so such an item is one item, not two broken lines."""
    root = make_task_dir(tmp_path / "t")
    rows = [{"id": f"u-{i}", "question": f"first\u2028second\x85third {i}", "answer": "1"} for i in range(4)]
    (root / "dev.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    task = load_task_dir(root)
    assert len(task.eval_items("dev")) == 4
    assert "first\u2028second\x85third 0" in task.eval_items("dev")[0].prompt


def test_same_id_in_two_splits(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "t")
    write_jsonl(root / "final.jsonl", [{"id": "d-0", "question": "new", "answer": "1"}])
    assert "also in the dev split" in _error(root)


def test_same_content_in_two_splits_even_written_otherwise(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "t")
    # dev has question "country 1"; the same question with other case, spacing and width.
    write_jsonl(root / "review.jsonl", [{"id": "other", "question": "COUNTRY   \uff11", "answer": "x"}])
    assert "the same item as 'd-1' of the dev split" in _error(root)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("not json", "line 1: not JSON"),
        ("[1, 2]", "line 1: not a JSON object"),
        ('{"question": "q", "answer": "a"}', "needs an 'id'"),
        ('{"id": "", "question": "q", "answer": "a"}', "needs an 'id'"),
        ('{"id": "z", "answer": "a"}', "no field 'question'"),
        ('{"id": "z", "question": "q"}', "no field 'answer'"),
        ("", "no items"),
    ],
)
def test_bad_split_lines(tmp_path: Path, line: str, expected: str) -> None:
    root = make_task_dir(tmp_path / "t")
    (root / "final.jsonl").write_text(line + "\n")
    assert expected in _error(root)


def test_a_split_that_is_a_link_is_refused(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "t")
    outside = tmp_path / "outside.jsonl"
    (root / "dev.jsonl").rename(outside)
    (root / "dev.jsonl").symlink_to(outside)
    assert "links are refused" in _error(root)


def test_scorer_file_missing_or_broken(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "p", "python")
    (root / "scorer.py").write_text("def other(item, output):\n    return 1\n")
    assert "defines no function 'score'" in _error(root)
    (root / "scorer.py").write_text("def (:\n")
    assert "scorer does not load: SyntaxError" in _error(root)
    (root / "scorer.py").unlink()
    assert "no scorer.py" in _error(root)


def test_train_items_that_repeat_protected_ones_are_dropped_and_counted(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "t", train=3)
    rows = [json.loads(line) for line in (root / "train.jsonl").read_text().splitlines()]
    rows.append({"id": "d-0", "question": "fresh", "answer": "x"})  # a protected id
    rows.append({"id": "t-new", "question": "Country 201", "answer": "x"})  # final's content
    write_jsonl(root / "train.jsonl", rows)
    task = load_task_dir(root)
    assert [p.id for p in task.train_pool()] == ["t-0", "t-1", "t-2"]
    assert task.train_dropped == 2
    assert load_task_dir(make_task_dir(tmp_path / "none")).train_pool() == []


def test_files_and_digest_are_of_the_bytes_read(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "t", train=2)
    task = load_task_dir(root)
    assert sorted(task.files) == ["dev.jsonl", "final.jsonl", "review.jsonl", "task.toml", "train.jsonl"]
    before = task.digest
    (root / "dev.jsonl").write_text("")  # edited after loading: the task holds what it read
    assert task.digest == before and len(task.eval_items("dev")) == 4
    copy = tmp_path / "copy"
    task.write_to(copy)
    assert load_task_dir(copy).digest == before


def test_registry_resolves_a_directory_but_holds_built_ins_only(tmp_path: Path) -> None:
    """A task directory resolves by its path to its task; the registry is not changed by it (a
    run holds its own task: `ExpOS.task`), so its name alone names nothing."""
    root = make_task_dir(tmp_path / "t", name="my-task")
    task = resolve_task(str(root))
    assert task.name == "my-task"
    with pytest.raises(UnknownTaskError):
        get_task("my-task")
    with pytest.raises(UnknownTaskError):
        resolve_task("my-task")
    assert resolve_task("arithmetic").name == "arithmetic"
    clash = make_task_dir(tmp_path / "c", name="arithmetic")
    with pytest.raises(TaskInputError, match="built-in"):
        resolve_task(clash)


def test_training_ranges_are_the_ranges_every_direction_searches(tmp_path: Path) -> None:
    """`[training]` is the task's TaskHints ranges: a user's model that wants a lower rate or
    bigger batches than the small-model defaults says so once, in the frozen task."""
    from rsi_master.orchestra import default_directions
    from rsi_master.tasks import task_hints

    root = make_task_dir(tmp_path / "t", name="ranged", train=4)
    _toml(
        root,
        lambda s: s + "[training]\nlearning_rate = [1e-5, 1e-4]\nbatch_sizes = [16, 32, 64]\nmax_steps = [50, 400]\n",
    )
    task = resolve_task(str(root))
    hints = task_hints(task)
    assert hints.learning_rate == (1e-5, 1e-4) and hints.batch_sizes == (16, 32, 64) and hints.max_steps == (50, 400)
    directions = default_directions(task)
    assert directions
    for d in directions:
        lr, batch, steps = d.train["learning_rate"], d.train["batch_size"], d.train["max_steps"]
        assert (lr.low, lr.high, lr.log) == (1e-5, 1e-4, True)
        if d.method != "grpo":  # GRPO keeps its own batch (a multiple of its group) and steps
            assert batch.choices == [16, 32, 64] and (steps.low, steps.high) == (50, 400)
            assert d.enqueue[0]["t:batch_size"] == 32 and d.enqueue[0]["t:max_steps"] == 400
    plain = resolve_task(str(make_task_dir(tmp_path / "p", name="plain", train=4)))
    assert task_hints(plain).learning_rate is None and task_hints(plain).batch_sizes == ()
