"""`rsi-master demo`: the most complete job that exists end to end, on the embedded default.

Creates a run directory, stores artifacts, records their provenance in the ledger, signs
a checkpoint, exports it outside the run and verifies the whole run from disk.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..artifacts import provenance
from ..events import Contamination, DataGenerate, SourceRegister, dump_payload
from ..ledger import KeyDir
from ..rundir import RunDir, new_run_id, verify_run
from ._commands import help_of
from ._common import env, key_dir_arg

NAME = "demo"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument("--dir", default=env("dir"), metavar="RUN_DIR", help="run directory (default runs/demo-<time>)")
    key_dir_arg(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json
    import tempfile

    run_id = new_run_id()
    path = Path(args.dir or Path("runs") / run_id)
    harness = {"role": "harness", "id": "demo"}
    with RunDir.create(path, key_dir=args.key_dir, run_id=run_id) as run_:
        source = run_.store.put_dir(Path(__file__).resolve().parents[1])
        run_.record(
            {
                "kind": "source.register",
                "actor": harness,
                "payload": dump_payload(SourceRegister(what="rsi_master package source")),
                "artifacts": [{"digest": source, "role": "output", "name": "source"}],
            }
        )
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data.jsonl"
            data.write_text(
                "".join(
                    json.dumps({"prompt": f"{a}+{b}=", "completion": str(a + b)}) + "\n"
                    for a in range(10)
                    for b in range(10)
                )
            )
            dataset = run_.store.put_file(data)
        # A generated dataset as ExpOS records one (the demo has no contract, so no gate: unchecked).
        demo = DataGenerate(
            params={"generator": "demo.addition"},
            seed=0,
            n=100,
            dataset=dataset,
            source="demo.addition",
            n_rows=100,
            inputs=[],
            contamination=Contamination(verdict="unchecked"),
        )
        run_.record(
            {
                "kind": "data.generate",
                "actor": harness,
                "payload": dump_payload(demo),
                "artifacts": [
                    {"digest": source, "role": "input", "name": "generator"},
                    {"digest": dataset, "role": "output", "name": "dataset"},
                ],
            }
        )
        chain = provenance(run_.ledger, dataset)
        assert isinstance(run_.key_dir, KeyDir)  # a new run's: the operator's
        exported = run_.key_dir.witness_path(run_id)
    report = verify_run(path, key_dir=args.key_dir)
    print("---")
    print(f"run_dir: {path}")
    print(f"run_id: {run_id}")
    print(f"events: {report.ledger.events}")
    print(f"artifacts: {report.artifacts}")
    print(f"dataset_provenance_events: {chain.events()}")
    print(f"exported_checkpoint: {exported}")
    print(f"verified: {report.ok}")
    return 0 if report.ok else 1
