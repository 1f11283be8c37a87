"""Bad input to `rsi-master guide`, `serve` and `report`: one clear line on stderr, exit 2, no
traceback, and nothing written: every file under the test's directory (run directories and the
key directory) has the same bytes and modification time after the refusal as before."""

from __future__ import annotations

import io
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from rsi_master.cli._main import main
from rsi_master.events import OrchestraStart
from rsi_master.expos import ExpOS
from rsi_master.orchestra import ORCHESTRA, PlainDisplay, RunSpec, start_run
from rsi_master.sim import generate_world


@dataclass(frozen=True)
class Place:
    root: Path  # everything below is compared before and after
    keys: Path
    running: Path  # a campaign that has started and not finished, moved since it was made
    finished: Path  # a simulated campaign that ran to its end


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> Place:
    root = tmp_path_factory.mktemp("bad-input")
    keys = root / "keys"
    made = root / "made-here"
    with ExpOS.create(made, "arithmetic", eval_limit=3, key_dir=keys) as x:
        settings = OrchestraStart(
            version=1, task="arithmetic", budget_s=600.0, slots=1, main="policy", reviewer="evidence", eval_limit=3
        )
        x.record(ORCHESTRA, settings)
    # Moved by the operator: opening it for writing would record its new place in the key
    # directory, so a refusal must be decided before anything opens it writable.
    (root / "runs").mkdir()
    running = made.rename(root / "runs" / "running")
    finished = root / "runs" / "finished"
    spec = RunSpec(budget="10m", backend="sim", world=generate_world(0), run_dir=finished, key_dir=str(keys))
    start_run(spec, display=PlainDisplay(io.StringIO()), durable=False)
    return Place(root, keys, running, finished)


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def refused(argv: list[str], capsys, root: Path) -> str:
    """Run the CLI on `argv`: it must exit 2 with one error line and leave `root` as it was."""
    before = snapshot(root)
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's refusals, as `rsi-master` exits with them
        code = exc.code
    assert code == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == ""
    errors = [line for line in captured.err.splitlines() if "error:" in line]
    assert len(errors) == 1, captured.err
    # argparse's own refusals put its usage above the one line; ours are the line alone.
    assert all(line.startswith(("usage:", " ")) for line in captured.err.splitlines() if line not in errors)
    assert snapshot(root) == before
    return errors[0]


Case = Callable[[Place], list[str]]
KEYS: Callable[[Place], list[str]] = lambda p: ["--key-dir", str(p.keys)]  # noqa: E731

CASES: list[tuple[str, Case, str]] = [
    ("guide an unknown run", lambda p: ["guide", str(p.root / "nope"), "--text", "hi", *KEYS(p)], "no such run"),
    (
        "guide a directory that is not a run",
        lambda p: ["guide", str(p.root / "runs"), "--text", "hi", *KEYS(p)],
        "not an RSI-Master run directory",
    ),
    ("guide a text over 4 kB", lambda p: ["guide", str(p.running), "--text", "x" * 4097, *KEYS(p)], "at most 4096"),
    ("guide a finished run", lambda p: ["guide", str(p.finished), "--text", "hi", *KEYS(p)], "the run has finished"),
    (
        "guide with --pause and --resume",
        lambda p: ["guide", str(p.running), "--pause", "--resume", *KEYS(p)],
        "not allowed with argument --pause",
    ),
    (
        "guide an unknown direction (the moved run's key record stays)",
        lambda p: ["guide", str(p.running), "--prefer", "no_such_family", *KEYS(p)],
        "unknown direction 'no_such_family'",
    ),
    ("guide that says nothing", lambda p: ["guide", str(p.running), *KEYS(p)], "guidance says nothing"),
    (
        "guide an unknown Worker to stop",
        lambda p: ["guide", str(p.running), "--stop-worker", "w9", *KEYS(p)],
        "no Worker 'w9'",
    ),
    ("serve an unknown run", lambda p: ["serve", str(p.root / "nope"), *KEYS(p)], "no such run directory"),
    ("serve on port 70000", lambda p: ["serve", str(p.finished), "--port", "70000", *KEYS(p)], "0..65535"),
    ("serve on port -1", lambda p: ["serve", str(p.finished), "--port", "-1", *KEYS(p)], "0..65535"),
    ("serve a file", lambda p: ["serve", str(p.finished / "ledger.pub"), *KEYS(p)], "not a directory"),
    (
        "report a directory that is not a run",
        lambda p: ["report", str(p.keys / "runs"), *KEYS(p)],
        "neither a run directory nor a directory of runs",
    ),
    ("report an unknown run", lambda p: ["report", str(p.root / "nope"), *KEYS(p)], "no such run directory"),
    (
        "report into a missing directory",
        lambda p: ["report", str(p.finished), "-o", str(p.root / "no" / "r.html"), *KEYS(p)],
        "does not exist",
    ),
    (
        "report onto a directory",
        lambda p: ["report", str(p.finished), "-o", str(p.root / "runs"), *KEYS(p)],
        "is a directory",
    ),
    (
        "run a simulated clock's speed off Ray",
        lambda p: ["run", "--backend", "sim", "--sim-speed", "10", "--dir", str(p.root / "new"), *KEYS(p)],
        "--sim-speed is for a simulated run on --executor ray",
    ),
    (
        "run a simulated clock at speed 0",
        lambda p: (
            ["run", "--backend", "sim", "--executor", "ray", "--sim-speed", "0", "--dir", str(p.root / "new"), *KEYS(p)]
        ),
        "--sim-speed must be a positive number",
    ),
    (
        "run the real backend at a simulated speed",
        lambda p: ["run", "--executor", "ray", "--sim-speed", "10", "--dir", str(p.root / "new"), *KEYS(p)],
        "--sim-speed is for a simulated run (--backend sim)",
    ),
    (
        "resume on a simulated clock off Ray",
        lambda p: ["resume", str(p.finished), "--sim-speed", "10", *KEYS(p)],
        "--sim-speed is for a simulated run on --executor ray",
    ),
]


@pytest.mark.parametrize(("what", "argv", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(place, capsys, what, argv, message):
    assert message in refused(argv(place), capsys, place.root)


def test_a_port_in_use_is_one_line(place, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        line = refused(["serve", str(place.finished), "--port", port, *KEYS(place)], capsys, place.root)
    assert f"127.0.0.1:{port} is in use" in line


def test_a_bad_number_in_the_environment_is_one_line_for_its_command_only(place, capsys, monkeypatch):
    monkeypatch.setenv("RSI_MASTER_SERVE_PORT", "http")
    line = refused(["serve", str(place.finished), *KEYS(place)], capsys, place.root)
    assert "--port: invalid int value: 'http'" in line
    # Other commands do not read it: they still work.
    assert main(["verify", str(place.finished), *KEYS(place)]) == 0


def test_refused_guidance_left_the_moved_runs_key_record_and_taken_guidance_moves_it(place, capsys):
    """The snapshot comparison above is no empty check: opening the moved run for writing, as
    taken guidance does, rewrites the key directory's record of where it lives."""

    def records() -> str:
        return "".join(f.read_text() for f in sorted((place.keys / "runs").glob("*.json")))

    assert str(place.root / "made-here") in records() and str(place.running) not in records()
    assert main(["guide", str(place.running), "--text", "look at longer problems", *KEYS(place)]) == 0
    assert capsys.readouterr().out.startswith("guidance: event ")
    assert str(place.running) in records()
    with ExpOS.open(place.running, key_dir=place.keys, writable=False) as x:
        assert [e.payload["text"] for e in x.events("human.guidance")] == ["look at longer problems"]


def test_the_runs_index_of_a_directory_whose_runs_are_gone_is_an_empty_list(tmp_path):
    pytest.importorskip("starlette", reason="the live view needs the serve extra (starlette, uvicorn)")
    from starlette.testclient import TestClient

    from rsi_master.views.live import LiveRuns, make_app
    from tests.views.conftest import AUTH, TOKEN

    (tmp_path / "runs").mkdir()
    runs = LiveRuns(tmp_path / "runs", str(tmp_path / "keys"))
    try:
        client = TestClient(make_app(runs, token=TOKEN, loopback=True), base_url="http://127.0.0.1:8765", headers=AUTH)
        index = client.get("/")
        assert index.status_code == 200 and "0 runs" in index.text
        assert client.get("/run/gone/").status_code == 404
    finally:
        runs.close()
