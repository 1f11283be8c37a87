"""The sealed evaluator: runs in its own process from a digest-pinned copy of its code.

This file is copied, together with the task suite's source, into a sealed directory
(see `_seal.py`) and executed there as a script, from a private copy the launching
harness has hashed and compared with the contract. It re-hashes the directory it runs
from as a second check (the first, the one that counts, is the harness's: code cannot
vouch for itself). It imports nothing from the installed `rsi_master` except the sealed
copy of the tasks, and it accepts no decoding overrides: template, decoding and stop
rules come from the task.

Protocol: ``python -E -s -B evaluator.py --request REQ.json --result OUT.json --expected-digest HEX``
with ``{"seal_key": {"secret": HEX} | {"seed": INT}}`` on standard input: the key to the
protected splits never appears in argv or the environment, which other processes of the
same user can read through /proc. Without a key nothing is scored.
Exit codes: 0 ok, 2 checkpoint does not load, 3 digest mismatch, 4 bad request.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the type checker only: this file imports nothing of the package at run time
    from rsi_master.tasks import EvalItem, Task

SEAL_DIR = Path(__file__).resolve().parent
EXIT_LOAD, EXIT_DIGEST, EXIT_REQUEST = 2, 3, 4


class _Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def seal_digest(root: Path) -> str:
    """Same manifest rule as the artifact store; bytecode caches are not content."""
    lines = []
    for p in root.rglob("*"):
        if p.is_dir():
            continue
        rel = p.relative_to(root)
        if "__pycache__" in rel.parts:
            continue
        lines.append((rel.as_posix(), hashlib.sha256(p.read_bytes()).hexdigest()))
    lines.sort()
    return hashlib.sha256("".join(f"{r}\t{d}\n" for r, d in lines).encode("utf-8")).hexdigest()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _sealed_tasks() -> Any:
    tasks = importlib.import_module("rsi_master.tasks")
    origin = Path(tasks.__file__ or "").resolve()
    if SEAL_DIR not in origin.parents:
        raise _Refused(EXIT_DIGEST, f"rsi_master.tasks resolved outside the seal: {origin}")
    return tasks


def _read_seal_key(text: str) -> Any:
    try:
        wire = json.loads(text)["seal_key"]
    except (ValueError, KeyError, TypeError):
        raise _Refused(
            EXIT_REQUEST,
            "no seal key on standard input; refusing to draw protected items without the key the harness passes there",
        ) from None
    try:
        return _sealed_tasks().SealKey.from_wire(wire)
    except ValueError as exc:
        raise _Refused(EXIT_REQUEST, f"bad seal key on standard input: {exc}") from None


def _load_task(spec: str, seal_key: Any) -> Any:
    # "module:Class" names a task module inside the seal (used by tests); a bare name goes
    # through the sealed suite's registry.
    if ":" in spec:
        module_name, attr = spec.split(":", 1)
        module = importlib.import_module(module_name)
        origin = Path(module.__file__ or "").resolve()
        if SEAL_DIR not in origin.parents:
            raise _Refused(EXIT_DIGEST, f"task module {module_name} resolved outside the seal: {origin}")
        cls = getattr(module, attr)
        takes_key = "seal_key" in inspect.signature(cls).parameters
        return cls(seal_key=seal_key) if takes_key else cls()
    tasks = _sealed_tasks()
    task_dir = SEAL_DIR / "task"
    if (task_dir / "task.toml").is_file():
        # A task directory sealed with the evaluator: its items are the files' own (no key draws them).
        try:
            task = tasks.load_task_dir(task_dir)
        except Exception as exc:
            raise _Refused(EXIT_REQUEST, f"the sealed task directory does not load: {exc}") from exc
        if task.name != spec:
            raise _Refused(EXIT_REQUEST, f"the seal holds task {task.name!r}, not {spec!r}")
        return task
    try:
        return tasks.get_task(spec, seal_key=seal_key)
    except Exception as exc:  # the registry's own error type is not ours to know
        raise _Refused(EXIT_REQUEST, f"unknown task {spec!r}: {exc}") from exc


class _CheckerTimeout(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _CheckerTimeout()


def _score_one(task: Task, item: EvalItem, output: str, timeout_s: float) -> tuple[float, str]:
    """The task's checker, bounded in time; any failure is a zero with the reason."""
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        result = task.score(item, output)
        value = float(result.score)
        reason = str(result.reason)
    except _CheckerTimeout:
        return 0.0, f"checker timed out after {timeout_s}s"
    except Exception as exc:  # a model output must never crash the run
        return 0.0, f"checker crashed: {type(exc).__name__}: {exc}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if not math.isfinite(value) or value < 0.0 or value > 1.0:
        return 0.0, f"checker returned an invalid score {value!r}"
    return value, reason


def _load_model(checkpoint: str) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(checkpoint)
    if not (path / "config.json").is_file():
        raise _Refused(EXIT_LOAD, f"checkpoint {checkpoint} has no config.json")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype=torch.float32)
    except Exception as exc:
        raise _Refused(EXIT_LOAD, f"checkpoint {checkpoint} does not load: {type(exc).__name__}: {exc}") from exc
    if torch.cuda.is_available() and os.environ.get("RSI_MASTER_DEVICE", "").strip().lower() != "cpu":
        model.to("cuda")  # type: ignore[arg-type]  # fp32 as on the CPU: the precision is part of what the seal pins
    model.eval()
    tokenizer.padding_side = "left"  # batched generation continues from the right edge
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, model


def _load_tokenizer(checkpoint: str) -> Any:
    """The checkpoint's tokenizer alone (vLLM loads the weights itself)."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(checkpoint, local_files_only=True)
    except Exception as exc:
        raise _Refused(
            EXIT_LOAD, f"checkpoint {checkpoint} tokenizer does not load: {type(exc).__name__}: {exc}"
        ) from exc


def _is_chat(task: Task) -> bool:
    # Same rule as the runtime's _chat.is_chat (this file cannot import it: it runs from its seal).
    return getattr(task, "chat", False) is True or getattr(task, "format", None) == "chat"


def _chat_prompts(tokenizer: Any, prompts: list[str]) -> list[str]:
    """The rendered task prompt as the user turn of the model's own chat template."""
    if not getattr(tokenizer, "chat_template", None):
        raise _Refused(EXIT_LOAD, "the task is in chat format but the checkpoint's tokenizer has no chat template")
    return [
        str(tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True))
        for p in prompts
    ]


def _eos_ids(tokenizer: Any, model: Any) -> list[int]:
    """Every id that ends a turn: the tokenizer's eos and the generation config's (a chat
    model's end-of-turn token is often only in the latter)."""
    ids = [tokenizer.eos_token_id]
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids += configured if isinstance(configured, list) else [configured]
    return sorted({i for i in ids if isinstance(i, int)})


def _generate(
    tokenizer: Any,
    model: Any,
    prompts: list[str],
    decoding: Any,
    stop: tuple[str, ...],
    batch_size: int,
    chat: bool = False,
) -> list[str]:
    import torch
    from transformers import GenerationConfig, StoppingCriteria, StoppingCriteriaList

    class StopOnStrings(StoppingCriteria):
        def __init__(self, width: int) -> None:
            self.width = width

        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            texts = tokenizer.batch_decode(input_ids[:, self.width :], skip_special_tokens=True)
            return torch.tensor([any(s in t for s in stop) for t in texts], dtype=torch.bool, device=input_ids.device)

    gen_kwargs: dict[str, Any] = {
        "max_new_tokens": decoding.max_new_tokens,
        "do_sample": decoding.do_sample,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": _eos_ids(tokenizer, model) or None,
        "bos_token_id": tokenizer.bos_token_id,
    }
    if decoding.do_sample:
        gen_kwargs.update(temperature=decoding.temperature, top_p=decoding.top_p)
        torch.manual_seed(0)  # sampling decodings are still reproducible
    config = GenerationConfig(**gen_kwargs)
    # Sorting by length keeps padding (wasted compute) small; outputs go back in order.
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    outputs: list[str] = [""] * len(prompts)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            # A chat template writes its own special tokens (a BOS among them): adding them again
            # would show the model a prompt no training row had.
            enc = tokenizer(
                [prompts[i] for i in idx], return_tensors="pt", padding=True, add_special_tokens=not chat
            ).to(model.device)
            width = enc["input_ids"].shape[1]
            criteria = StoppingCriteriaList([StopOnStrings(width)]) if stop else None
            out = model.generate(**enc, generation_config=config, stopping_criteria=criteria)
            texts = tokenizer.batch_decode(out[:, width:], skip_special_tokens=True)
            for i, text in zip(idx, texts):
                cut = min([text.find(s) for s in stop if s in text] or [len(text)])
                outputs[i] = text[:cut]
    return outputs


def run(request: dict[str, Any], seal_key: Any) -> dict[str, Any]:
    t0 = time.time()
    task = _load_task(str(request["task"]), seal_key)
    split = request["split"]
    if split not in ("dev", "review", "final"):
        raise _Refused(EXIT_REQUEST, f"unknown split {split!r}; known: dev, review, final")
    items = list(task.eval_items(split))
    n_expected = len(items)
    limit = request.get("max_samples")
    if limit is not None:
        items = items[: int(limit)]
    prompts = [item.prompt for item in items]
    # An adapter checkpoint arrives as its base (`checkpoint`) and the adapter itself.
    adapter = request.get("adapter")
    backend = _backend()
    chat = _is_chat(task)
    if backend["name"] == "vllm":
        tokenizer = _load_tokenizer(str(request["checkpoint"]))
        shown = _chat_prompts(tokenizer, prompts) if chat else prompts
        # Token ids made here as the transformers path makes them, so both see the same prompt.
        ids = [tokenizer(p, add_special_tokens=not chat)["input_ids"] for p in shown]
        backends = _backends()
        try:
            outputs = backends.vllm_generate(
                str(request["checkpoint"]), adapter, ids, task.decoding, tuple(task.stop), backend
            )
        except backends.BackendUnavailable as exc:
            raise _Refused(EXIT_REQUEST, str(exc)) from exc
    else:
        tokenizer, model = _load_model(str(request["checkpoint"]))
        if adapter is not None:
            model = _backends().apply_adapter(model, str(adapter))
        shown = _chat_prompts(tokenizer, prompts) if chat else prompts
        outputs = _generate(
            tokenizer, model, shown, task.decoding, tuple(task.stop), int(request.get("batch_size", 64)), chat
        )
    # A task may need longer per item than the request's limit (a task directory's unit tests
    # run with their own `timeout_s`, and the sandbox kills them at it).
    per_item = max(float(request.get("sample_timeout_s", 5.0)), float(getattr(task, "item_timeout_s", 0.0)))
    samples = []
    for item, output in zip(items, outputs):
        value, reason = _score_one(task, item, output, per_item)
        samples.append({"sample_id": item.sample_id, "output": output, "score": value, "reason": reason})
    d = task.decoding
    return {
        "task": task.name,
        "split": split,
        "template_digest": _sha(task.template),
        "prompts_digest": _sha("\x00".join(prompts)),
        "decoding": {
            "max_new_tokens": d.max_new_tokens,
            "do_sample": d.do_sample,
            "temperature": d.temperature,
            "top_p": d.top_p,
        },
        "stop": list(task.stop),
        "sample_ids": [s["sample_id"] for s in samples],
        "n_expected": n_expected,
        "score": sum(s["score"] for s in samples) / len(samples) if samples else 0.0,
        "samples": samples,
        "seconds": round(time.time() - t0, 3),
        "backend": backend,
    }


def _backends() -> Any:
    """The sealed `eval_backends.py` beside this file (never an installed module of that name)."""
    module = importlib.import_module("eval_backends")
    origin = Path(module.__file__ or "").resolve()
    if origin.parent != SEAL_DIR:
        raise _Refused(EXIT_DIGEST, f"eval_backends resolved outside the seal: {origin}")
    return module


def _backend() -> dict[str, Any]:
    try:
        return dict(_backends().read_backend(SEAL_DIR))
    except ValueError as exc:
        raise _Refused(EXIT_REQUEST, f"the seal's backend.json does not parse: {exc}") from exc
    except Exception as exc:  # BackendUnavailable lives in the sealed module
        raise _Refused(EXIT_REQUEST, str(exc)) from exc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--request", required=True)
    parser.add_argument("--result", required=True)
    parser.add_argument("--expected-digest", required=True)
    args = parser.parse_args(argv)
    result_path = Path(args.result)
    try:
        actual = seal_digest(SEAL_DIR)
        if actual != args.expected_digest:
            raise _Refused(
                EXIT_DIGEST, f"sealed evaluator digest {actual} != expected {args.expected_digest}; refusing to run"
            )
        seal_key = _read_seal_key(sys.stdin.read() if sys.stdin is not None else "")
        request = json.loads(Path(args.request).read_text())
        result = run(request, seal_key)
        result["evaluator_digest"] = actual
        result_path.write_text(json.dumps(result))
        return 0
    except _Refused as exc:
        result_path.write_text(json.dumps({"error": str(exc), "code": exc.code}))
        return exc.code


if __name__ == "__main__":
    sys.exit(main())
