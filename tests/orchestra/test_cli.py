"""`rsi-master run` / `resume`: bad input gets a clear message and overwrites nothing."""

from __future__ import annotations

import pytest

from rsi_master.cli._main import main
from rsi_master.errors import RsiMasterError
from rsi_master.orchestra import parse_budget
from rsi_master.orchestra._graph import ORCHESTRA

from .helpers import new_run


@pytest.mark.parametrize(
    "text,seconds", [("90", 90.0), ("90s", 90.0), ("5m", 300.0), ("1h30m", 5400.0), ("2.5m", 150.0), (45, 45.0)]
)
def test_budget_durations(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["0", "-5", "0s", "-1m", "5x", "m", "", "5m3"])
def test_bad_budgets_are_refused(text):
    with pytest.raises(RsiMasterError):
        parse_budget(text)


def _err(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.err + out.out


def test_unknown_task_and_bad_budget_write_nothing(tmp_path, capsys):
    target = tmp_path / "new"
    code, msg = _err(capsys, ["run", "--task", "chess", "--dir", str(target)])
    assert code == 2 and "unknown task 'chess'" in msg and "arithmetic" in msg
    for budget in ("0", "-3m"):
        code, msg = _err(capsys, ["run", "--task", "arithmetic", f"--budget={budget}", "--dir", str(target)])
        assert code == 2 and "budget" in msg
    code, msg = _err(capsys, ["run", "--task", "arithmetic", "--slots", "0", "--dir", str(target)])
    assert code == 2 and "slots" in msg
    code, msg = _err(capsys, ["run", "--task", "arithmetic", "--final-limit", "-1", "--dir", str(target)])
    assert code == 2 and "final_limit" in msg
    assert not target.exists() and not list(tmp_path.glob(".new*"))


def test_run_refuses_a_directory_that_holds_another_run(tmp_path, capsys):
    with new_run(tmp_path) as expos:
        size = expos.run.ledger.size()
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    code, msg = _err(capsys, ["run", "--task", "knowledge", "--dir", str(tmp_path / "run")])
    assert code == 2 and "already holds a run" in msg and "resume" in msg
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before
    from rsi_master.expos import ExpOS

    with ExpOS.open(tmp_path / "run", writable=False) as expos:
        assert expos.run.ledger.size() == size
    # A directory of other files is no run to resume: the line does not suggest it.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    code, msg = _err(capsys, ["run", "--task", "knowledge", "--dir", str(tmp_path / "other")])
    assert code == 2 and "already holds files" in msg and "resume" not in msg


def test_resume_refuses_finished_runs_and_foreign_directories(tmp_path, capsys):
    with new_run(tmp_path) as expos:
        expos.record(ORCHESTRA, "orchestra.finish", {"summary": "0" * 64, "final_score": 0.0})
        size = expos.run.ledger.size()
    code, msg = _err(capsys, ["resume", str(tmp_path / "run")])
    assert code == 2 and "already finished" in msg
    from rsi_master.expos import ExpOS

    with ExpOS.open(tmp_path / "run", writable=False) as expos:
        assert expos.run.ledger.size() == size

    (tmp_path / "empty").mkdir()
    code, msg = _err(capsys, ["resume", str(tmp_path / "empty")])
    assert code == 2 and "not a run directory" in msg

    # An ExpOS run that `rsi-master run` did not start is not resumed either.
    ExpOS.create(tmp_path / "plain", "knowledge", eval_limit=5).close()
    code, msg = _err(capsys, ["resume", str(tmp_path / "plain")])
    assert code == 2 and "did not start" in msg


def test_flags_default_from_the_environment(monkeypatch):
    from rsi_master.cli._main import build_parser

    for k, v in (("TASK", "knowledge"), ("BUDGET", "7m"), ("SLOTS", "3"), ("SEED", "4"), ("DIR", "/x")):
        monkeypatch.setenv(f"RSI_MASTER_{k}", v)
    args = build_parser().parse_args(["run"])
    assert (args.task, args.budget, args.slots, args.seed, args.dir) == ("knowledge", "7m", 3, 4, "/x")


def test_a_run_without_a_budget_gets_its_tasks_default(tmp_path, monkeypatch, capsys):
    """Five minutes, except function calling's ten (its curves turn later); a budget given
    on the command line or in the environment wins. The budget reaches the ledger."""
    import json
    import sqlite3

    from rsi_master.orchestra import _orchestra

    # Record the run, do not drive it (a summary that names a selection: exit 0).
    monkeypatch.setattr(_orchestra, "drive", lambda *a, **k: {"selected": "exp-00001"})
    monkeypatch.delenv("RSI_MASTER_BUDGET", raising=False)

    def recorded(task, *flags):
        target = tmp_path / f"{task}{len(flags)}"
        assert main(["run", "--task", task, "--dir", str(target), *flags]) == 0
        db = sqlite3.connect(target / "ledger.db")
        (body,) = db.execute("select body from events where kind='orchestra.start'").fetchone()
        return json.loads(body)["payload"]["budget_s"]

    assert recorded("function_calling") == 600.0
    assert recorded("knowledge") == 300.0
    assert recorded("function_calling", "--budget", "90s") == 90.0
    monkeypatch.setenv("RSI_MASTER_BUDGET", "2m")
    from rsi_master.cli._main import build_parser

    assert build_parser().parse_args(["run", "--task", "function_calling"]).budget == "2m"


def test_a_bad_model_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from tests.helpers import tiny_hf_model

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    target = tmp_path / "new"
    model = tiny_hf_model(tmp_path / "models", "gpt2")
    (model / "model.safetensors").unlink()
    for spec, expected in (
        (str(model), "has no weights"),
        (str(tmp_path / "missing"), "does not exist"),
        ("org/not-cached", "not in the local Hugging Face cache"),
    ):
        code, msg = _err(capsys, ["run", "--task", "arithmetic", "--model", spec, "--dir", str(target)])
        assert code == 2 and expected in msg and "Traceback" not in msg, msg
        assert len(msg.strip().splitlines()) == 1
    assert not target.exists() and not list(tmp_path.glob(".new*"))


def test_model_flag_reaches_the_contract(tmp_path, monkeypatch, capsys):
    """`--model` (or RSI_MASTER_MODEL) freezes the user's model into the run's contract."""
    from rsi_master.expos import ExpOS
    from rsi_master.orchestra import _orchestra
    from rsi_master.runtime import resolve_model
    from tests.helpers import tiny_hf_model

    # Record the run, do not drive it (a summary that names a selection: exit 0).
    monkeypatch.setattr(_orchestra, "drive", lambda *a, **k: {"selected": "exp-00001"})
    model = tiny_hf_model(tmp_path / "models", "qwen2")
    monkeypatch.setenv("RSI_MASTER_MODEL", str(model))
    assert main(["run", "--task", "arithmetic", "--budget", "60s", "--dir", str(tmp_path / "run")]) == 0
    with ExpOS.open(tmp_path / "run", writable=False) as x:
        assert x.contract.base_model_digest == resolve_model(model).tree_digest
        assert x.contract.base_model_source is not None and x.contract.base_model_source.architecture == "qwen2"
