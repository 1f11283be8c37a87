"""`rsi-master lineage RUN_DIR CHECKPOINT`: from a checkpoint back to the base model."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import RsiMasterError
from ..expos import ExpOS, evidence, lineage, load_state
from ._commands import help_of
from ._common import key_dir_arg

NAME = "lineage"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("checkpoint", metavar="CHECKPOINT", help="checkpoint digest (or a unique prefix) or experiment id")
    p.add_argument("--json", action="store_true", help="print JSON")
    key_dir_arg(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with ExpOS.open(args.run_dir, key_dir=args.key_dir, writable=False) as expos:
        st = load_state(expos.reader)
        target = args.checkpoint
        matches = [
            x
            for x in st.experiments.values()
            if x.id == target or (x.checkpoint and len(target) >= 6 and x.checkpoint.startswith(target))
        ]
        if len(matches) != 1:
            raise RsiMasterError(f"{target!r} names {len(matches)} checkpoints in this run (want exactly one)")
        chain = lineage(st, matches[0].id)
        steps: list[dict[str, Any]] = []
        for x in chain:
            ds = st.datasets.get(x.dataset)
            steps.append(
                {
                    "experiment_id": x.id,
                    "owner": x.owner,
                    "status": x.status,
                    "checkpoint": x.checkpoint,
                    "parent": x.parent,
                    "parent_checkpoint": x.parent_checkpoint,
                    "method": x.method,
                    "spec": x.spec,
                    "dataset": x.dataset,
                    "dataset_source": ds.source if ds else None,
                    "evidence": evidence(st, x.id),
                }
            )
        base = expos.contract.base_model_artifact
    if args.json:
        print(json.dumps({"base_model": base, "steps": steps}, indent=1))
        return 0
    for s in steps:
        ev = ", ".join(f"{e['split']}={e['score']:.3f} (event {e['seq']})" for e in s["evidence"]["evaluations"])
        print(f"{s['experiment_id']}  checkpoint {str(s['checkpoint'])[:12]}  by {s['owner']}  [{s['status']}]")
        print(
            f"  {s['method']} lr={s['spec'].get('learning_rate')} bs={s['spec'].get('batch_size')} "
            f"on {s['dataset'][:12]} ({s['dataset_source']}, {s['evidence']['dataset']['contamination']})"
        )
        print(f"  evaluations: {ev or 'none'}")
        print(f"  from: {s['parent']} ({s['parent_checkpoint'][:12]})")
    print(f"base model {base[:12]}")
    return 0
