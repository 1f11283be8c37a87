"""Build the shipped base model: deterministic pretraining on every task's free-form text.

    .venv/bin/python scripts/build_base_model.py            # writes src/rsi_master/models/base/
    .venv/bin/python scripts/build_base_model.py --check    # rebuild in a temp dir, compare digests

The directory digest (artifact-store manifest rule) goes into
`src/rsi_master/models/base.build.json` together with the recipe, so a rebuild can be
checked against the committed model. Takes about 4 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from rsi_master.runtime._model import TinyLlamaSpec, models_dir
from rsi_master.runtime._pretrain import PretrainSpec, pretrain
from rsi_master.tasks import get_task, list_tasks

# The recipe. Steps are the binding cost on CPU (~0.5 s per 16x256-token step on 2 cores);
# 400 steps see ~1.6M tokens, enough to learn the domains' vocabulary and number/JSON/list
# syntax while the tasks' own formats stay unseen.
SPEC = PretrainSpec(seed=0, docs_per_task=20000, block_size=256, batch_size=16, steps=400, lr=3e-3, warmup_steps=40)
ARCH = TinyLlamaSpec()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: the shipped location)")
    parser.add_argument(
        "--check", action="store_true", help="rebuild in a temp dir and compare with the committed digest"
    )
    args = parser.parse_args()
    tasks = [get_task(name) for name in list_tasks()]
    if args.check:
        import json

        expected = json.loads((models_dir() / "base.build.json").read_text())["digest"]
        with tempfile.TemporaryDirectory() as tmp:
            record = pretrain(tasks, Path(tmp) / "base", SPEC, ARCH)
        ok = record["digest"] == expected
        print(f"---\nrebuilt_digest: {record['digest']}\ncommitted_digest: {expected}\nmatch: {ok}")
        return 0 if ok else 1
    out = args.out or (models_dir() / "base")
    if out.exists():
        shutil.rmtree(out)
    record = pretrain(tasks, out, SPEC, ARCH)
    print(
        f"---\nmodel_dir: {out}\ndigest: {record['digest']}\nn_params: {record['n_params']}\nfinal_loss: {record['final_loss']:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
