"""`rsi-master data|train|eval|pipeline`: run data -> train -> evaluate by hand.

    rsi-master data generate --task arithmetic --family scratchpad --n 5000 --out d.jsonl
    rsi-master train --data d.jsonl --method sft --out runs/x
    rsi-master eval --checkpoint runs/x/checkpoint --task arithmetic --split dev
    rsi-master pipeline --task arithmetic --family scratchpad --n 5000 --method sft --out runs/x

Every run ends with a `---` line and `key: value` lines, so people and scripts can read it.

Outside a run there is no contract and no run secret: `data generate`, `eval` and
`pipeline` draw the splits from the operator's own seal secret in the key directory
(made on first use), so these scores compare with each other and with no run's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..runtime import (
    InvalidParameterError,
    dedup,
    evaluate,
    filter_data,
    generate,
    make_spec,
    mix,
    operator_seal_key,
    resolve_model,
    stage_model,
    train,
)
from ..tasks import UnknownTaskError, get_task
from ._commands import help_of
from ._common import env, is_tty, key_dir_arg

HELP_DATA = help_of("data")
HELP_TRAIN = help_of("train")
HELP_EVAL = help_of("eval")
HELP_PIPELINE = help_of("pipeline")


def _json_arg(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc.msg}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _train_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", default=env("method", "sft"), help="sft | lora | dpo | grpo (env RSI_MASTER_METHOD)")
    p.add_argument(
        "--parent",
        default=env("parent"),
        help="parent checkpoint dir, or a repository id in the local Hugging Face cache (default: shipped base model)",
    )
    p.add_argument("--lr", type=float, default=None, help="peak learning rate (default 1e-3)")
    p.add_argument("--batch-size", type=int, default=None, help="examples per step (default 32)")
    p.add_argument("--epochs", type=float, default=None, help="passes over the data (default 1)")
    p.add_argument("--max-steps", type=int, default=None, help="optimizer steps (overrides --epochs)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument(
        "--spec",
        type=_json_arg,
        default=None,
        metavar="JSON",
        help="other TrainSpec fields as a JSON object, e.g. '{\"lora_r\": 8}'",
    )


def _spec_from(args: argparse.Namespace, task: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = dict(args.spec or {})
    spec["method"] = args.method
    for flag, field in (
        ("lr", "learning_rate"),
        ("batch_size", "batch_size"),
        ("epochs", "epochs"),
        ("max_steps", "max_steps"),
        ("seed", "seed"),
    ):
        if getattr(args, flag) is not None:
            spec[field] = getattr(args, flag)
    if task is not None and args.method in ("dpo", "grpo"):
        spec.setdefault("task", task)
    return spec


def add_parser(sub: argparse._SubParsersAction) -> None:
    data = sub.add_parser("data", help=HELP_DATA, description=HELP_DATA)
    dsub = data.add_subparsers(dest="data_command", metavar="OP", required=True)
    g = dsub.add_parser("generate", help="run a task's generator family")
    g.add_argument("--task", required=True)
    g.add_argument("--family", required=True)
    g.add_argument("--params", type=_json_arg, default={}, metavar="JSON", help="generator knobs as a JSON object")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--n", type=int, required=True, help="number of examples")
    g.add_argument("--out", required=True, help="output JSONL path")
    key_dir_arg(g)
    g.set_defaults(handler=run_generate)
    f = dsub.add_parser("filter", help="keep rows that pass the criteria (eval overlap always dropped)")
    f.add_argument("input")
    f.add_argument("--out", required=True)
    f.add_argument("--max-chars", type=int, default=None)
    f.add_argument("--verified-only", action="store_true", help="keep rows the task's checker accepts")
    f.add_argument("--exclude-regex", default=None)
    f.set_defaults(handler=run_filter)
    m = dsub.add_parser("mix", help="sample N rows from several datasets by weight")
    m.add_argument("inputs", nargs="+")
    m.add_argument("--weights", type=float, nargs="+", default=None)
    m.add_argument("--n", type=int, required=True)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--out", required=True)
    m.set_defaults(handler=run_mix)
    d = dsub.add_parser("dedup", help="drop repeated prompts")
    d.add_argument("input")
    d.add_argument("--out", required=True)
    d.add_argument("--key", default="prompt", choices=("prompt", "prompt+completion"))
    d.set_defaults(handler=run_dedup)

    t = sub.add_parser("train", help=HELP_TRAIN, description=HELP_TRAIN)
    t.add_argument("--data", required=True, help="JSONL with prompt/completion rows")
    t.add_argument("--out", required=True, help="run directory (checkpoint/ is written inside)")
    t.add_argument("--task", default=env("task"), help="task name (needed by dpo and grpo)")
    _train_flags(t)
    t.set_defaults(handler=run_train)

    e = sub.add_parser("eval", help=HELP_EVAL, description=HELP_EVAL)
    e.add_argument("--checkpoint", required=True)
    e.add_argument("--task", required=True)
    e.add_argument("--split", default=env("split", "dev"), help="dev | review | final")
    e.add_argument("--samples", action="store_true", help="also print each sample's output and reason")
    e.add_argument("--json", action="store_true", help="print the whole evaluation record as JSON")
    key_dir_arg(e)
    e.set_defaults(handler=run_eval)

    p = sub.add_parser("pipeline", help=HELP_PIPELINE, description=HELP_PIPELINE)
    p.add_argument("--task", required=True)
    p.add_argument("--family", required=True)
    p.add_argument("--params", type=_json_arg, default={}, metavar="JSON", help="generator knobs as a JSON object")
    p.add_argument("--n", type=int, default=5000, help="training examples (default 5000: one default experiment)")
    p.add_argument("--data-seed", type=int, default=0)
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--split", default=env("split", "dev"))
    _train_flags(p)
    key_dir_arg(p)
    p.set_defaults(handler=run_pipeline)


def _summary(**fields: Any) -> None:
    print("---")
    for k, v in fields.items():
        print(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}")


def _operator_task(args: argparse.Namespace) -> Any:
    """The task with the operator's seal key: generators keep clear of the items `eval` scores."""

    try:
        get_task(args.task)
    except UnknownTaskError as exc:
        raise InvalidParameterError(str(exc)) from None
    return get_task(args.task, seal_key=operator_seal_key(args.key_dir))


def run_generate(args: argparse.Namespace) -> int:
    r = generate(_operator_task(args), args.family, args.params, args.seed, args.n, args.out)
    _summary(path=r.path, rows=r.n_rows, sha256=r.sha256)
    return 0


def run_filter(args: argparse.Namespace) -> int:
    r = filter_data(
        args.input,
        args.out,
        max_chars=args.max_chars,
        verified_only=args.verified_only,
        exclude_regex=args.exclude_regex,
    )
    _summary(path=r.path, rows=r.n_rows, rows_in=r.spec["n_in"], sha256=r.sha256)
    return 0


def run_mix(args: argparse.Namespace) -> int:
    r = mix(args.inputs, args.weights, args.n, args.seed, args.out)
    _summary(path=r.path, rows=r.n_rows, sha256=r.sha256)
    return 0


def run_dedup(args: argparse.Namespace) -> int:
    r = dedup(args.input, args.out, key=args.key)
    _summary(path=r.path, rows=r.n_rows, rows_in=r.spec["n_in"], sha256=r.sha256)
    return 0


class _Progress:
    """Training progress: a rich bar on a terminal, one plain line per log otherwise."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.task_id: Any = None

    def __call__(self, entry: dict[str, Any]) -> None:
        step, total = entry.get("step", 0), entry.get("max_steps", 0)
        loss = entry.get("loss")
        if is_tty():
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            if self.bar is None:
                self.bar = Progress(
                    TextColumn("training"),
                    BarColumn(),
                    TextColumn("{task.completed}/{task.total}"),
                    TextColumn("{task.fields[loss]}"),
                    TimeElapsedColumn(),
                )
                self.task_id = self.bar.add_task("train", total=total, loss="")
                self.bar.start()
            self.bar.update(self.task_id, completed=step, loss=f"loss {loss:.3f}" if loss is not None else "")
        elif loss is not None:
            print(f"step {step}/{total} loss {loss:.4f} ({entry.get('elapsed_s', 0):.1f}s)", flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _train(args: argparse.Namespace, data: str, out: str, task: str | None) -> Any:
    import tempfile
    from pathlib import Path

    spec = make_spec(**_spec_from(args, task))
    progress = _Progress()
    with tempfile.TemporaryDirectory(prefix="rsi-parent-") as tmp:
        parent = args.parent
        if parent is not None and not Path(parent).is_dir():
            # A repository id in the local HF cache: its snapshot is links into blobs, which a
            # measured copy refuses; train from a staged copy of the files they point at.
            parent = Path(tmp) / "model"
            stage_model(resolve_model(args.parent), parent)
        try:
            return train(data, out, spec, parent=parent, progress=progress)
        finally:
            progress.close()


def run_train(args: argparse.Namespace) -> int:
    t0 = time.time()
    r = _train(args, args.data, args.out, args.task)
    _summary(
        checkpoint=r.checkpoint_dir,
        checkpoint_digest=r.checkpoint_digest,
        method=r.method,
        steps=r.steps,
        train_seconds=r.train_seconds,
        final_loss=r.final_loss,
        total_seconds=round(time.time() - t0, 2),
    )
    return 0


def _print_eval(r: Any, samples: bool) -> None:
    if samples:
        for s in r.samples:
            print(f"{s.sample_id}\t{s.score:.2f}\t{json.dumps(s.output)}\t{s.reason}")


def run_eval(args: argparse.Namespace) -> int:
    task = _operator_task(args)
    r = evaluate(args.checkpoint, task.name, args.split, seal_key=task.seal_key)
    if args.json:
        sys.stdout.write(r.model_dump_json(indent=2) + "\n")
        return 0
    _print_eval(r, args.samples)
    _summary(
        task=r.task,
        split=r.split,
        score=r.score,
        samples=len(r.sample_ids),
        evaluator_digest=r.evaluator_digest,
        checkpoint_digest=r.checkpoint_digest,
        eval_seconds=r.seconds,
    )
    return 0


def run_pipeline(args: argparse.Namespace) -> int:
    t0 = time.time()
    out = Path(args.out)
    task = _operator_task(args)
    data = generate(task, args.family, args.params, args.data_seed, args.n, out / "data.jsonl")
    print(f"data: {data.n_rows} rows of {args.task}/{args.family} -> {data.path}", flush=True)
    r = _train(args, data.path, str(out / "train"), args.task)
    print(f"trained: {r.steps} steps in {r.train_seconds:.1f}s -> {r.checkpoint_dir}", flush=True)
    ev = evaluate(r.checkpoint_dir, task.name, args.split, seal_key=task.seal_key)
    (out / f"eval_{args.split}.json").write_text(ev.model_dump_json(indent=2) + "\n")
    _summary(
        task=args.task,
        family=args.family,
        method=r.method,
        split=args.split,
        score=ev.score,
        steps=r.steps,
        train_seconds=r.train_seconds,
        eval_seconds=ev.seconds,
        total_seconds=round(time.time() - t0, 2),
        checkpoint=r.checkpoint_dir,
        checkpoint_digest=r.checkpoint_digest,
        evaluator_digest=ev.evaluator_digest,
    )
    return 0
