from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rsi_master.runtime import (
    CheckpointLoadError,
    EvaluationError,
    EvaluatorDigestError,
    InvalidParameterError,
    evaluate,
    evaluator_digest,
)
from rsi_master.runtime._warm import WARM_ENV
from rsi_master.tasks import PUBLIC_SEAL_KEY
from tests.runtime.conftest import TOY_SOURCE, TOY_SPEC

PUBLIC = {"seal_key": PUBLIC_SEAL_KEY}


def _eval(ckpt, **kw):
    return evaluate(ckpt, TOY_SPEC, "dev", extra_sources=[TOY_SOURCE], **PUBLIC, **kw)


@pytest.fixture(scope="module")
def sft_dev(toy_sft):
    """The trained toy checkpoint's dev evaluation, read by two tests (each one is a process
    that loads torch and transformers)."""
    return _eval(toy_sft)


def test_record_binds_digests_decoding_and_sample_ids(sft_dev, toy):
    r = sft_dev
    items = toy.eval_items("dev")
    assert r.sample_ids == [i.sample_id for i in items] and r.n_expected == len(items)
    assert r.evaluator_digest == evaluator_digest([TOY_SOURCE])
    assert r.decoding["max_new_tokens"] == toy.decoding.max_new_tokens and r.decoding["do_sample"] is False
    assert r.stop == [";"] and len(r.template_digest) == 64
    assert r.score == sum(s.score for s in r.samples) / len(r.samples)
    assert all(";" not in s.output for s in r.samples)  # cut at the stop string


def test_sft_beats_the_untrained_model(sft_dev, tiny_base):
    assert sft_dev.score > _eval(tiny_base).score


@pytest.mark.heavy
def test_a_fresh_evaluator_process_scores_as_the_forked_one(sft_dev, toy_sft, monkeypatch):
    # The module's evaluations fork from this process's pre-imported Python (`runtime/_warm.py`);
    # the same evaluation in a fresh interpreter gives the same record.
    monkeypatch.setenv(WARM_ENV, "0")
    cold = _eval(toy_sft)
    assert [(s.sample_id, s.output, s.score) for s in cold.samples] == [
        (s.sample_id, s.output, s.score) for s in sft_dev.samples
    ]
    assert cold.evaluator_digest == sft_dev.evaluator_digest and cold.checkpoint_digest == sft_dev.checkpoint_digest


def test_pinned_digest_mismatch_refuses(toy_sft):
    with pytest.raises(EvaluatorDigestError, match="refusing"):
        _eval(toy_sft, expected_evaluator_digest="0" * 64)


def test_tampered_seal_refuses_to_run(toy_sft, tmp_path):
    # Edit the sealed copy after sealing: the process re-hashes itself and exits.
    import json
    import subprocess
    import sys

    from rsi_master.runtime import seal_evaluator

    seal, digest = seal_evaluator(extra_sources=[TOY_SOURCE])
    copy = tmp_path / "seal"
    shutil.copytree(seal, copy)
    (copy / "toytask.py").chmod(0o644)
    with open(copy / "toytask.py", "a") as f:
        f.write("\n# edited\n")
    (tmp_path / "req.json").write_text(json.dumps({"checkpoint": str(toy_sft), "task": TOY_SPEC, "split": "dev"}))
    proc = subprocess.run(
        [
            sys.executable,
            "-B",
            str(copy / "evaluator.py"),
            "--request",
            str(tmp_path / "req.json"),
            "--result",
            str(tmp_path / "out.json"),
            "--expected-digest",
            digest,
        ],
        capture_output=True,
        input=json.dumps({"seal_key": PUBLIC_SEAL_KEY.to_wire()}).encode(),
    )
    assert proc.returncode == 3
    assert "refusing" in json.loads((tmp_path / "out.json").read_text())["error"]


def test_checker_crash_is_a_zero_with_reason(toy_sft, tmp_path):
    # A task whose checker raises on every output: scores are 0, the run completes.
    src = TOY_SOURCE.read_text().replace('if got == "boom":', "if True:")
    crashy = tmp_path / "crashytask.py"
    crashy.write_text(src)
    r = evaluate(toy_sft, "crashytask:ToyTask", "dev", extra_sources=[crashy], max_samples=5, **PUBLIC)
    assert r.score == 0.0 and all("checker crashed: RuntimeError" in s.reason for s in r.samples)
    assert r.n_expected == 20 and len(r.sample_ids) == 5


def test_bad_checkpoints_and_splits_are_clear_errors(tmp_path, toy_sft):
    with pytest.raises(CheckpointLoadError, match="not a directory"):
        _eval(tmp_path / "nope")
    with pytest.raises(CheckpointLoadError, match=r"no config\.json"):
        _eval(tmp_path)
    broken = tmp_path / "broken"
    shutil.copytree(toy_sft, broken)
    (broken / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(CheckpointLoadError, match="does not load"):
        _eval(broken)
    with pytest.raises(InvalidParameterError, match="unknown split"):
        evaluate(toy_sft, TOY_SPEC, "test", **PUBLIC)
    with pytest.raises(InvalidParameterError, match="unknown task"):
        evaluate(toy_sft, "nope", "dev", **PUBLIC)
    with pytest.raises(InvalidParameterError, match="seal_key must be a SealKey"):
        evaluate(toy_sft, TOY_SPEC, "dev", seal_key=20_260_401)
    with pytest.raises(InvalidParameterError, match="expected_evaluator_digest"):
        evaluate(toy_sft, TOY_SPEC, "dev", evaluator=tmp_path, **PUBLIC)


@pytest.mark.heavy
@pytest.mark.parametrize("warm", [True, False], ids=["forked", "fresh"])
def test_timeout_is_an_error_not_a_hang(toy_sft, warm, monkeypatch):
    # A fresh interpreter cannot import torch in half a second; a forked child loads the toy model
    # in a tenth of one, but not after hashing its seal in a hundredth.
    if not warm:
        monkeypatch.setenv(WARM_ENV, "0")
    with pytest.raises(EvaluationError, match="timed out"):
        _eval(toy_sft, timeout_s=0.01 if warm else 0.5)
    assert len(_eval(toy_sft, max_samples=2).samples) == 2  # and the next evaluation runs


def test_real_task_with_a_store_given_by_a_relative_path(toy_sft, tmp_path, monkeypatch):
    # A built-in task scored with a store: the record and the sealed evaluator go into it. The
    # store is relative, as `rsi-master run --dir runs/x` hands it to the runtime; the evaluator
    # child runs in its own temporary cwd and must still find the sealed code.
    from rsi_master.artifacts import ArtifactStore

    monkeypatch.chdir(tmp_path)
    store = ArtifactStore("relative/store")
    r = evaluate(toy_sft, "arithmetic", "dev", store=store, max_samples=8, **PUBLIC)
    assert r.task == "arithmetic" and len(r.samples) == 8 and store.has(r.record_digest)
    assert store.has(r.evaluator_digest)


# --- secret seals: the run's seal is copied privately and checked; its key stays off argv ---
HARNESS = {"role": "harness", "id": "expos"}


@pytest.fixture
def sealed_run(tmp_path):
    from rsi_master.expos import ExpOS

    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=4) as x:
        yield x


def _score_base(x, split="dev"):
    from rsi_master.expos import evaluate_experiment

    return evaluate_experiment(x, HARNESS, "base", x.contract.base_model_artifact, split).payload


def _unlock(seal: Path) -> Path:
    """What an agent with a shell does first: `chmod -R u+w` on the stored seal."""
    import stat

    for p in (seal, *seal.rglob("*")):
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return seal


def test_seal_secret_lives_in_the_key_directory_not_the_run(sealed_run, key_dir):
    import hashlib
    import stat

    from rsi_master.runtime import seal_secret_path

    path = seal_secret_path(key_dir, sealed_run.run.run_id)
    assert path.is_file() and not path.resolve().is_relative_to(sealed_run.run.path.resolve())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    secret = bytes.fromhex(path.read_text())
    c = sealed_run.contract
    commitment = hashlib.sha256(b"rsi-master/seal-commitment/v1\x00" + secret).hexdigest()
    assert c.version == 2 and c.seal_commitment == commitment
    sealed_run.close()
    for f in sealed_run.run.path.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert secret not in data and secret.hex().encode() not in data, f


def test_edited_seal_in_the_store_is_refused(sealed_run):
    from rsi_master.expos import ToolRefused

    target = _unlock(sealed_run.sealed_evaluator()) / "rsi_master" / "tasks" / "_arithmetic.py"
    with open(target, "a") as fh:
        fh.write(
            "\nArithmeticTask.check = lambda self, reference, output: __import__('rsi_master.tasks')"
            ".tasks.Score(1.0, 'edited')\n"
        )
    with pytest.raises(ToolRefused, match="digest") as info:
        _score_base(sealed_run)
    assert info.value.subcategory.value == "harness_verifier"
    assert not sealed_run.events("eval.record")


def test_evaluator_runs_from_a_private_copy_and_gets_the_key_on_stdin(sealed_run, monkeypatch):
    # The agent edits the store's seal in the gap between the harness's check and the launch:
    # what runs is the copy that was checked, in a directory only the harness can enter.
    import stat

    import rsi_master.runtime._evaluate as ev
    from rsi_master.expos import ToolRefused

    store_seal = sealed_run.sealed_evaluator()
    secret = sealed_run.seal_key().secret.hex()
    seen = {}

    def launch_after_tampering(script, args, **kw):
        # What the launch hands over (a fresh interpreter's command line, or the zygote's
        # request: the same script, arguments and environment) never holds the secret.
        seen.update(
            script=script,
            mode=stat.S_IMODE(script.parent.parent.stat().st_mode),
            visible=" ".join([str(script), *args]) + " ".join(kw["env"].values()),
            stdin=kw["input"],
        )
        target = _unlock(store_seal) / "rsi_master" / "tasks" / "_arithmetic.py"
        target.write_text("raise SystemExit('the tampered copy ran')\n")
        return real(script, args, **kw)

    real = ev.run_sealed
    monkeypatch.setattr(ev, "run_sealed", launch_after_tampering)
    payload = _score_base(sealed_run)
    assert payload.evaluator_digest == sealed_run.contract.evaluator.evaluator_digest and payload.n_samples == 4
    assert not seen["script"].is_relative_to(sealed_run.run.path.resolve()) and seen["mode"] == 0o700
    assert not seen["script"].exists()  # the private copy is gone once the evaluation ends
    assert secret not in seen["visible"] and secret in seen["stdin"]
    monkeypatch.setattr(ev, "run_sealed", real)
    with pytest.raises(ToolRefused, match="digest"):  # the next evaluation sees the edit
        _score_base(sealed_run, "review")


def test_bytecode_planted_in_the_store_seal_does_not_run(sealed_run):
    # A cache file is not part of the digest. Run in place, Python would import it instead of
    # the hashed source (its header names the source's mtime and size); the copy drops it.
    import importlib.util
    import subprocess
    import sys
    from importlib._bootstrap_external import _code_to_timestamp_pyc

    seal = _unlock(sealed_run.sealed_evaluator())
    source = seal / "rsi_master" / "tasks" / "_arithmetic.py"
    planted = source.read_text() + "\nArithmeticTask.check = lambda self, reference, output: Score(1.0, 'planted')\n"
    cache = Path(importlib.util.cache_from_source(str(source)))
    cache.parent.mkdir()
    st = source.stat()
    cache.write_bytes(_code_to_timestamp_pyc(compile(planted, str(source), "exec"), st.st_mtime, st.st_size))
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); from rsi_master.tasks import get_task; "
        "print(get_task('arithmetic').check(1, 'x').reason)"
    )
    in_place = subprocess.run(
        [sys.executable, "-E", "-s", "-B", "-c", probe, str(seal)], capture_output=True, text=True, timeout=60
    )
    assert in_place.stdout.strip() == "planted"  # the attack is real against a seal run in place
    assert _score_base(sealed_run).score < 1.0


def test_evaluation_without_the_seal_secret_fails_clearly(sealed_run, key_dir, tmp_path):
    import subprocess
    import sys

    from rsi_master.runtime import SealSecretError, seal_secret_path

    # Another process without the key directory: a clear error, not the public splits.
    code = (
        "import sys; from rsi_master.expos import ExpOS; "
        "x = ExpOS.open(sys.argv[1], writable=False); x.protected_task()"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.run(
        [sys.executable, "-c", code, str(sealed_run.run.path)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": src, "RSI_MASTER_KEY_DIR": str(tmp_path / "elsewhere"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert proc.returncode != 0 and "SealSecretError: no seal secret for run" in proc.stderr
    # In this process: the secret removed, then replaced by another one.
    path = seal_secret_path(key_dir, sealed_run.run.run_id)
    secret = path.read_bytes()
    path.unlink()
    with pytest.raises(SealSecretError, match="no seal secret"):
        _score_base(sealed_run)
    path.write_text(bytes(32).hex())
    with pytest.raises(SealSecretError, match="not the one"):
        _score_base(sealed_run)
    path.write_bytes(secret)
    assert not sealed_run.events("eval.record")


def test_seal_problems_name_a_missing_or_foreign_secret(sealed_run, key_dir):
    from rsi_master.expos import ExpOS
    from rsi_master.runtime import seal_secret_path

    def problems():  # a fresh read-only session each time, as a verifier would open
        with ExpOS.open(sealed_run.run.path, writable=False) as x:
            return x.seal_problems()

    assert problems() == []
    path = seal_secret_path(key_dir, sealed_run.run.run_id)
    path.unlink()
    assert "no seal secret" in problems()[0]
    path.write_text(bytes(32).hex())
    assert "not the one" in problems()[0]


def test_evaluator_refuses_to_draw_items_without_a_key(tmp_path):
    import json
    import subprocess
    import sys

    from rsi_master.runtime import seal_evaluator

    seal, digest = seal_evaluator()
    (tmp_path / "req.json").write_text(json.dumps({"checkpoint": str(tmp_path), "task": "arithmetic", "split": "dev"}))
    proc = subprocess.run(
        [
            sys.executable,
            "-B",
            str(seal / "evaluator.py"),
            "--request",
            str(tmp_path / "req.json"),
            "--result",
            str(tmp_path / "out.json"),
            "--expected-digest",
            digest,
        ],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode == 4 and "no seal key" in json.loads((tmp_path / "out.json").read_text())["error"]


def test_v1_contract_keeps_the_public_splits(tmp_path):
    # Runs frozen before seal secrets: no commitment, public seed; they open and evaluate.
    from rsi_master.expos import ExpOS, TaskContract
    from rsi_master.expos._contract import CONTRACT_KIND
    from rsi_master.rundir import RunDir
    from rsi_master.runtime import base_model_dir, seal_evaluator
    from rsi_master.tasks import get_task, task_spec

    with ExpOS.create(tmp_path / "v2", "arithmetic", eval_limit=4) as v2:
        template = v2.contract
    spec = task_spec(get_task("arithmetic"))
    with RunDir.create(tmp_path / "v1") as run:
        base = run.store.put_dir(base_model_dir())
        seal, digest = seal_evaluator(store=run.store)
        contract = template.model_copy(
            update={
                "version": 1,
                "seal_commitment": None,
                "base_model_digest": base,
                "base_model_artifact": base,
                "evaluator": template.evaluator.model_copy(
                    update={
                        "evaluator_digest": digest,
                        "evaluator_artifact": seal.name,
                        "items_sha256": spec["items_sha256"],
                    }
                ),
            }
        )
        TaskContract.model_validate(contract.model_dump())
        run.record(
            {
                "kind": CONTRACT_KIND,
                "actor": HARNESS,
                "payload": contract.model_dump(mode="json"),
                "artifacts": [
                    {"digest": base, "role": "output", "name": "base_model"},
                    {"digest": seal.name, "role": "output", "name": "sealed_evaluator"},
                ],
            }
        )
    with ExpOS.open(tmp_path / "v1") as v1:
        assert v1.seal_key() == PUBLIC_SEAL_KEY and v1.protected_task() is get_task("arithmetic")
        assert _score_base(v1).n_samples == 4
    with pytest.raises(ValueError, match="v2 contract commits"):
        TaskContract.model_validate({**template.model_dump(), "seal_commitment": None})
