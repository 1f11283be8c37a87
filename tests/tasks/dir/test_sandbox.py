"""Unit-test answers that are wrong, exit early or hang: each scores 0; right answers pass in
both test formats. The attacks on the sandbox itself are in test_sandbox_attacks.py."""

from __future__ import annotations

import time

import pytest

from rsi_master.tasks._dir import _sandbox, run_unit_tests
from rsi_master.tasks._dir._bwrap import unsandboxed
from rsi_master.tasks._dir._sandbox import CallCase

TESTS = "assert f(2) == 3\n"
RIGHT = "def f(x):\n    return x + 1\n"


def _run(program: str, timeout_s: float = 2.0, tests: str | list[CallCase] = TESTS) -> tuple[float, str]:
    s = run_unit_tests(program, tests, timeout_s, 256)
    return s.score, s.reason


def test_a_right_answer_passes() -> None:
    assert _run(RIGHT) == (1.0, "tests passed")
    assert _run(RIGHT, tests=[CallCase("f", (2,), {}, 3), CallCase("f", (), {"x": -1}, 0)]) == (1.0, "2 cases passed")


def test_a_wrong_answer_fails_with_the_line_or_case() -> None:
    assert _run("def f(x):\n    return x\n") == (0.0, "unit tests failed: AssertionError at line 1")
    score, reason = _run("def f(x):\n    return x\n", tests=[CallCase("f", (2,), {}, 3)])
    assert score == 0.0 and reason == "case 0: f returned 2"


def test_assert_tests_keep_python_semantics_over_plain_data() -> None:
    """Tuples stay tuples, sets sets, dict keys any plain value; exceptions of built-in types
    reach the tests as those types; a HumanEval-style `check(candidate)` works."""
    program = (
        "def pair(a, b):\n    return (a, b)\n"
        "def uniq(xs):\n    return set(xs)\n"
        "def inv(d):\n    return {v: k for k, v in d.items()}\n"
        "def pos(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n"
        "LIMIT = 3\n"
    )
    tests = (
        "def check(candidate):\n    assert candidate(1, 'a') == (1, 'a')\n    assert candidate(1, 2) != [1, 2]\n"
        "check(pair)\n"
        "assert uniq([1, 1, 2]) == {1, 2}\n"
        "assert inv({'a': 1, 'b': (2, 3)}) == {1: 'a', (2, 3): 'b'}\n"
        "try:\n    pos(-1)\n    raise AssertionError('no error')\nexcept ValueError as e:\n    assert 'negative' in str(e)\n"
        "assert LIMIT == 3 and pos(b'x' and 2) == 2\n"
    )
    assert _run(program, tests=tests) == (1.0, "tests passed")


def test_call_cases_compare_json_types_and_tolerance() -> None:
    program = "def f(x):\n    return x\ndef g():\n    return 0.1 + 0.2\ndef h():\n    return (1, [2])\n"
    cases = [CallCase("f", (1,), {}, 1.0), CallCase("g", (), {}, 0.3, 1e-9), CallCase("h", (), {}, [1, [2]])]
    assert _run(program, tests=cases)[0] == 1.0
    for case in (CallCase("f", (True,), {}, 1), CallCase("f", (1,), {}, True), CallCase("g", (), {}, 0.3)):
        assert _run(program, tests=[case])[0] == 0.0, case
    score, reason = _run("def f():\n    return {1, 2}\n", tests=[CallCase("f", (), {}, [1, 2])])
    assert score == 0.0 and "not JSON" in reason


@pytest.mark.parametrize(
    "early",
    [
        "import sys\nsys.exit(0)\n",
        "import os\nos._exit(0)\n",
        "raise SystemExit(0)\n",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
        "def f(x):\n    import os\n    os._exit(0)\n",
        # Printing what looks like success or a protocol line is nothing: prints go to the log.
        "print('tests passed')\nprint('{\"ok\": 3}')\nimport sys\nsys.exit(0)\n",
    ],
)
def test_exiting_before_or_during_the_tests_does_not_pass(early: str) -> None:
    assert _run(early)[0] == 0.0


def test_a_test_that_swallows_the_answer_dying_does_not_pass() -> None:
    tests = "try:\n    f(1)\nexcept BaseException:\n    pass\n"
    score, reason = _run("def f(x):\n    import os\n    os._exit(0)\n", tests=tests)
    assert score == 0.0 and "process ended" in reason


def test_an_endless_loop_is_killed_at_the_time_limit() -> None:
    t0 = time.monotonic()
    score, reason = _run("def f(x):\n    while True:\n        pass\n", timeout_s=1.0)
    assert score == 0.0 and "killed after 1s" in reason
    assert time.monotonic() - t0 < 10


def test_a_sleeping_answer_is_killed_at_the_wall_clock_limit() -> None:
    t0 = time.monotonic()
    score, reason = _run("import time\ntime.sleep(60)\n", timeout_s=1.0)
    assert score == 0.0 and "killed after" in reason
    assert time.monotonic() - t0 < 10


def test_without_a_sandbox_every_reason_says_so_and_the_hook_still_refuses(monkeypatch) -> None:
    """The fallback where bwrap cannot start: today's hook, and a loud line in every reason."""
    monkeypatch.setattr(_sandbox, "isolation", lambda: unsandboxed("forced by a test"))
    score, reason = _run(RIGHT)
    assert score == 1.0 and reason.startswith("trust_boundary: MODEL OUTPUT IS NOT SANDBOXED (forced by a test)")
    for spawn in ("import os\nos.fork()\n", "import socket\nsocket.socket()\n", "import ctypes\n"):
        score, reason = _run(spawn + RIGHT)
        assert score == 0.0 and "trust_boundary:" in reason and "not allowed" in reason, reason


def test_the_run_summary_line_names_where_model_output_runs(tmp_path, monkeypatch) -> None:
    from rsi_master.tasks import load_task_dir, model_output_boundary
    from rsi_master.tasks._dir import _file_task

    from .helpers import make_task_dir

    code = load_task_dir(make_task_dir(tmp_path / "ut", "unit_tests"))
    assert model_output_boundary(load_task_dir(make_task_dir(tmp_path / "num", "numeric"))) == ""
    assert model_output_boundary(code).startswith("; model output: ")
    monkeypatch.setattr(_file_task, "isolation", lambda: unsandboxed("no bwrap here"))
    line = model_output_boundary(code)
    assert line.startswith("; model output: trust_boundary: MODEL OUTPUT IS NOT SANDBOXED (no bwrap here)")


@pytest.mark.parametrize(("bwrap", "why"), [(None, "bwrap is not installed"), ("/bin/false", "exit 1")])
def test_a_machine_where_bwrap_cannot_start_falls_back_loudly(monkeypatch, bwrap: str | None, why: str) -> None:
    from rsi_master.tasks._dir import _bwrap

    monkeypatch.setattr(_bwrap.shutil, "which", lambda name: bwrap)
    iso = _bwrap.isolation.__wrapped__()  # the probe itself, not this process's cached answer
    assert not iso.sandboxed and iso.prefix == ()
    assert iso.statement.startswith(f"trust_boundary: MODEL OUTPUT IS NOT SANDBOXED ({why}")


def test_grpo_s_reward_goes_through_the_same_sandbox_after_a_json_round_trip(tmp_path) -> None:
    """GRPO carries each row's reference as JSON: call cases survive it, and the reward is the
    score (an always-equal answer gets 0)."""
    import json

    from rsi_master.tasks import load_task_dir

    from .helpers import make_task_dir, write_jsonl

    root = make_task_dir(tmp_path / "ut", "unit_tests")
    cases = [{"call": "f", "args": [2], "expected": 3}, {"call": "f", "args": [], "kwargs": {"x": 0}, "expected": 1}]
    write_jsonl(root / "dev.jsonl", [{"id": "d-0", "question": "x + 1", "tests": cases}])
    task = load_task_dir(root)
    row = json.loads(json.dumps({"check": task.eval_items("dev")[0].reference}))
    assert task.reward(row, RIGHT) == 1.0
    assert task.reward(row, "class E(int):\n    __eq__ = lambda s, o: True\ndef f(x):\n    return E(0)\n") == 0.0


def test_malformed_call_cases_are_refused_at_load(tmp_path) -> None:
    from rsi_master.tasks import TaskInputError, load_task_dir

    from .helpers import make_task_dir, write_jsonl

    root = make_task_dir(tmp_path / "ut", "unit_tests")
    for bad in ({"call": "f", "args": [1]}, {"call": "f(", "expected": 1}, {"call": "f", "args": 1, "expected": 1}):
        write_jsonl(root / "dev.jsonl", [{"id": "d-0", "question": "x", "tests": [bad]}])
        with pytest.raises(TaskInputError, match="call case"):
            load_task_dir(root)


def test_an_answer_that_stops_reading_cannot_hold_the_harness() -> None:
    """The answer forges its own "loaded" reply and stops reading, then a test sends 1 MB of
    arguments: the write ends at the wall clock instead of waiting on a full pipe forever."""
    t0 = time.monotonic()
    stall = (
        'import os, time\nfor fd in (3, 4, 5):\n    try:\n        os.write(fd, b\'{"names": {"f": "callable"}}\\n\')\n'
    )
    stall += "    except OSError:\n        pass\ntime.sleep(60)\n"
    tests = "assert f(b'x' * (1 << 20)) == 1\n"
    score, reason = _run(stall, timeout_s=1.0, tests=tests)
    assert score == 0.0 and "killed after 1s" in reason and time.monotonic() - t0 < 10
    assert _run("def f(x):\n    return len(x) // (1 << 20)\n", tests=tests)[0] == 1.0  # read, the same passes
