from __future__ import annotations

import json

from rsi_master.cli import build_parser
from rsi_master.cli._main import main


def test_tasks_lists_every_task(capsys):
    assert main(["tasks", "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["task"] for r in rows] == ["arithmetic", "function_calling", "knowledge", "program_synthesis"]
    assert all(r["families"] for r in rows)


def test_data_generate_prints_a_greppable_summary(tmp_path, capsys):
    out = tmp_path / "d.jsonl"
    assert (
        main(["data", "generate", "--task", "knowledge", "--family", "answer_only", "--n", "12", "--out", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    assert "---\n" in text and "rows: 12" in text and out.is_file()


def test_bad_input_is_a_one_line_error(tmp_path, capsys):
    assert main(["data", "generate", "--task", "nope", "--family", "x", "--n", "3", "--out", str(tmp_path / "a")]) == 2
    assert "unknown task" in capsys.readouterr().err
    assert main(["train", "--data", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "r")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_pipeline_and_eval_parsers_exist():
    parser = build_parser()
    args = parser.parse_args(["pipeline", "--task", "arithmetic", "--family", "scratchpad", "--out", "x"])
    assert args.n == 5000 and args.method == "sft"
    args = parser.parse_args(["eval", "--checkpoint", "c", "--task", "arithmetic"])
    assert args.split == "dev"


def test_operator_commands_draw_with_the_operators_own_seal(tmp_path, key_dir, capsys):
    # Outside a run there is no run secret: one operator secret per key directory, made on
    # first use, so `data generate` and `eval` agree on which items are protected.
    import stat

    from rsi_master.runtime import operator_seal_key, seal_secret_path

    for name in ("a", "b"):
        assert (
            main(
                [
                    "data",
                    "generate",
                    "--task",
                    "arithmetic",
                    "--family",
                    "answer_only",
                    "--n",
                    "5",
                    "--out",
                    str(tmp_path / f"{name}.jsonl"),
                ]
            )
            == 0
        )
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    path = seal_secret_path(key_dir, "_operator")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert operator_seal_key(key_dir) == operator_seal_key(key_dir) and not operator_seal_key(key_dir).is_public
