"""`rsi-master init --model DIR` (or RSI_MASTER_MODEL): a run prepared for external agents
trains the user's model. End to end: init a chat-format task directory on a test-size Qwen2
(tests/hf_model.py), serve its door, and an external Worker (the `expos` CLI, through the
door with only its capability) generates data and trains; the contract pins the model and
the experiment's checkpoint descends from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rsi_master.cli._main import main
from rsi_master.expos import ExpOS, load_state
from rsi_master.runtime import resolve_model
from tests.helpers import tiny_hf_model
from tests.tasks.dir.helpers import make_task_dir

pytestmark = [
    pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
]
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return tiny_hf_model(tmp_path_factory.mktemp("models"), "qwen2")


def chat_task(root: Path) -> Path:
    return make_task_dir(root, "numeric", n=4, train=16, extra_toml='format = "chat"\n')


def test_rsi_master_model_in_the_environment_is_the_runs_base_model(model, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RSI_MASTER_MODEL", str(model))
    assert main(["init", "--task", "arithmetic", "--dir", str(tmp_path / "run"), "--eval-limit", "2"]) == 0
    assert f"model: {model}" in capsys.readouterr().out
    with ExpOS.open(tmp_path / "run", writable=False) as x:
        source = x.contract.base_model_source
        assert source is not None and source.spec == str(model) and source.architecture == "qwen2"
        assert x.contract.base_model_digest == resolve_model(model).tree_digest
    # A flag wins over the environment, and a bad model is one line with nothing written.
    assert main(["init", "--task", "arithmetic", "--dir", str(tmp_path / "bad"), "--model", str(tmp_path / "no")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err and not (tmp_path / "bad").exists()


def _expos(*args: str, env: dict[str, str]) -> dict:
    proc = subprocess.run(
        [str(VENV_BIN / "expos"), "--json", *args], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_an_external_worker_through_the_door_trains_the_users_model(model, tmp_path):
    keys = tmp_path / "keys"
    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(keys), "OMP_NUM_THREADS": "1"}
    rsi = [sys.executable, "-m", "rsi_master.cli"]
    task = chat_task(tmp_path / "task")
    run = tmp_path / "run"
    init = subprocess.run(
        [*rsi, "init", "--task", str(task), "--dir", str(run), "--model", str(model), "--eval-limit", "4"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert init.returncode == 0, init.stderr
    cap = tmp_path / "cap"
    issued = subprocess.run(
        [*rsi, "capability", str(run), "--role", "worker", "--id", "ext1", "-o", str(cap)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert issued.returncode == 0, issued.stderr
    sock = tmp_path / "d" / "door.sock"
    door = subprocess.Popen([*rsi, "door", str(run), "--socket", str(sock)], stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not sock.exists() and door.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sock.exists(), door.stderr.read() if door.poll() is not None else "the door did not open"
        # The agent's environment: the door and its capability, no key directory, no run.
        agent = {"PATH": os.environ["PATH"], "OMP_NUM_THREADS": "1", "EXPOS_DOOR": str(sock)}
        agent["EXPOS_CAPABILITY_FILE"] = str(cap)
        data = _expos("data.generate", '{"family": "pool", "n": 16}', env=agent)
        config = {"max_steps": 2, "batch_size": 4, "learning_rate": 1e-3}
        done = _expos("experiment.submit", json.dumps({"dataset": data["dataset"], "config": config}), env=agent)
    finally:
        door.terminate()
        door.wait(timeout=60)
        door.stderr.close()
    assert done["status"] == "completed" and done["dev_score"] is not None, done
    with ExpOS.open(run, writable=False, key_dir=keys) as x:
        c = x.contract
        assert c.base_model_source is not None and c.base_model_source.spec == str(model)
        assert c.base_model_digest == resolve_model(model).tree_digest
        finish = [e.payload for e in x.run.ledger.events(kinds=["experiment.finish"])]
        assert [f["measured"]["parent_checkpoint"] for f in finish] == [c.base_model_artifact]
        ckpt = x.run.store.path(load_state(x.reader).experiments[done["experiment_id"]].checkpoint)
        assert json.loads((ckpt / "config.json").read_text())["model_type"] == "qwen2"
        assert x.contract.task_source is not None and x.contract.task_source.format == "chat"


def _truncate(model: Path, dest: Path) -> Path:
    import shutil

    broken = dest / "truncated"
    shutil.copytree(model, broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    return broken


@pytest.mark.parametrize("command", ["init", "run"])
def test_broken_models_are_refused_before_anything_is_written(model, tmp_path, monkeypatch, capsys, command):
    """A model without a chat template on a chat-format task, and weights cut short, are one
    line naming the model as the user gave it (no temporary path), with no run directory."""
    monkeypatch.chdir(tmp_path)
    nochat = tiny_hf_model(tmp_path / "models", "qwen2", name="nochat", chat=False)
    truncated = _truncate(model, tmp_path / "models")
    task = chat_task(tmp_path / "task")
    plain = make_task_dir(tmp_path / "plain", "numeric", n=4, train=8)
    extra = ["--budget", "60s"] if command == "run" else []
    cases = [
        (str(task), None, "task numeric is in chat format but the shipped model has no chat template"),
        (str(task), nochat, f"task numeric is in chat format but model {nochat} has no chat template"),
        (str(plain), truncated, f"model {truncated}: weight file model.safetensors is damaged"),
        ("arithmetic", truncated, "truncated"),
    ]
    for i, (given, spec, message) in enumerate(cases):
        run = tmp_path / f"run{i}"
        args = [command, "--task", given, "--dir", str(run), *extra] + (["--model", str(spec)] if spec else [])
        assert main(args) == 2, given
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
        assert "/tmp" not in err.replace(str(tmp_path), "") and "Traceback" not in err
        assert not run.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(f".run{i}")]
    # The same models are fine where nothing is missing: a plain task on the model without a template.
    assert main(["init", "--task", str(plain), "--dir", str(tmp_path / "ok"), "--model", str(nochat)]) == 0
