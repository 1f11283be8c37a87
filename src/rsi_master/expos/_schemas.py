"""Input JSON Schemas that tell an agent what it may pass, beyond what the pydantic models
say: the generator families of `data.generate` as an enum with each family's knobs (type,
range, default), the training parameters of `experiment.submit`, and, given a run's
contract, only what that contract allows (its families, its methods, its row budget).

The schema describes; the door decides. A value outside an advertised enum still reaches
ExpOS and is refused and recorded there (an unlisted generator is a teacher-authorization
attempt), so a client that does not validate against the schema loses nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..tasks import get_task, list_tasks
from ._generator_view import GeneratorView, KnobView

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ._contract import TaskContract

__all__ = ["generator_families", "input_schema", "knob_schema"]

# Training parameters the runtime's TrainSpec leaves undescribed, and the ones the tool sets itself.
_CONFIG_HELP = {
    "warmup_ratio": "share of the steps spent warming the learning rate up",
    "weight_decay": "AdamW weight decay",
    "seed": "training seed (data order, initialisation of new weights)",
    "lora_dropout": "dropout on the LoRA layers (lora only)",
    "grpo_temperature": "sampling temperature of the GRPO completions (grpo only)",
}
_CONFIG_SET_BY_TOOL = ("version", "method", "task")


def generator_families(
    contract: TaskContract | None = None, generators: Sequence[GeneratorView] | None = None
) -> list[tuple[str, GeneratorView]]:
    """(name as offered, family) for a run's families: `generators` as the run describes them
    (`generator_views`, or what the door sends), else the contract's allowed built-in families
    (a task directory's or a simulated task's are the run's own: only `generators` has them);
    with neither, every task's, named `task/family`."""

    if generators is not None:
        return [(g.name, g) for g in generators]
    if contract is not None:
        pairs = [g.split("/", 1) for g in contract.allowed_generators if "/" in g]
    else:
        pairs = [[t, f] for t in list_tasks() for f in get_task(t).generators()]
    out = []
    for task, family in pairs:
        if task not in list_tasks():
            continue
        gens = get_task(task).generators()
        if family in gens:
            out.append((family if contract is not None else f"{task}/{family}", GeneratorView.of(gens[family])))
    return out


def knob_schema(knob: KnobView) -> dict[str, Any]:
    """One generator knob as a JSON Schema (type, range or choices, default, help)."""
    if knob.kind == "choice":
        types = {bool: "boolean", int: "integer", float: "number", str: "string"}
        kinds = sorted({types.get(type(c), "string") for c in knob.choices})
        s: dict[str, Any] = {"enum": list(knob.choices)}
        if len(kinds) == 1:
            s = {"type": kinds[0], **s}
    else:
        s = {"type": "integer" if knob.kind == "int" else "number"}
        if knob.low is not None:
            s["minimum"] = int(knob.low) if knob.kind == "int" else knob.low
        if knob.high is not None:
            s["maximum"] = int(knob.high) if knob.kind == "int" else knob.high
    s["default"] = knob.default
    s["description"] = knob.help or knob.name
    return s


def _range(s: dict[str, Any]) -> str:
    if "enum" in s:
        return " | ".join(json.dumps(v) for v in s["enum"])
    lo, hi = s.get("minimum"), s.get("maximum")
    return f"{s['type']} {lo}..{hi}" if lo is not None and hi is not None else s["type"]


def _generate(
    schema: dict[str, Any],
    contract: TaskContract | None,
    generators: Sequence[GeneratorView] | None,
    source: str = "generate",
) -> None:
    # data.generate offers the families whose rows a generator writes, data.sample those sampled
    # from a checkpoint (a task directory's train pool: `self_distill`, `sample_pairs`).
    fams = [(n, g) for n, g in generator_families(contract, generators) if g.source == source]
    if not fams and source != "generate":
        return  # no sampling family in this run (a built-in task): the plain schema says enough
    names = [n for n, _ in fams]
    props = schema["properties"]
    props["family"]["enum"] = names
    props["family"]["description"] += " " + "; ".join(f"`{n}`: {g.description}" for n, g in fams)
    # One property per knob name; a name whose meaning differs between families (none
    # does today) is offered as any of its variants, each naming its families.
    variants: dict[str, list[tuple[dict[str, Any], list[str]]]] = {}
    groups: dict[str, list[str]] = {}
    for n, g in fams:
        groups.setdefault(", ".join(k.name for k in g.knobs), []).append(n)
        for k in g.knobs:
            ks = knob_schema(k)
            for seen, users in variants.setdefault(k.name, []):
                if seen == ks:
                    users.append(n)
                    break
            else:
                variants[k.name].append((ks, [n]))
    knobs: dict[str, Any] = {}
    for name, vs in variants.items():
        every = len(vs) == 1 and len(vs[0][1]) == len(names)
        parts = [
            {**s, "description": s["description"] + ("" if every else f" (families: {', '.join(users)})")}
            for s, users in vs
        ]
        knobs[name] = (
            parts[0]
            if len(parts) == 1
            else {"anyOf": parts, "description": f"{name}: differs by family (see each variant)"}
        )
    summary = "; ".join(
        f"{', '.join(f'`{u}`' for u in users)}: "
        + ", ".join(
            f"{k} ({_range(knobs[k])}, default {json.dumps(knobs[k].get('default'))})" if "anyOf" not in knobs[k] else k
            for k in keys.split(", ")
            if k
        )
        for keys, users in groups.items()
    )
    props["params"].update(
        {
            "type": "object",
            "additionalProperties": False,
            "properties": knobs,
            "description": props["params"]["description"] + f" Knobs by family: {summary}.",
        }
    )
    if contract is not None:
        props["n"]["maximum"] = contract.budget.max_rows


def _submit(schema: dict[str, Any], contract: TaskContract | None, generators: Sequence[GeneratorView] | None) -> None:

    from ..runtime import TrainSpec

    spec = TrainSpec.model_json_schema()
    fields = {}
    for name, s in spec["properties"].items():
        if name in _CONFIG_SET_BY_TOOL:
            continue
        s = {k: v for k, v in s.items() if k != "title"}
        if "anyOf" in s:
            s["anyOf"] = [{k: v for k, v in a.items() if k != "title"} for a in s["anyOf"]]
        s.setdefault("description", _CONFIG_HELP.get(name, name))
        fields[name] = s
    props = schema["properties"]
    props["config"].update({"type": "object", "additionalProperties": False, "properties": fields})
    if contract is not None:
        props["method"]["enum"] = [m for m in props["method"]["enum"] if m in contract.allowed_methods]
        props["config"]["description"] += (
            f" This run allows at most {contract.budget.max_train_steps} steps "
            "(max_steps, or rows x epochs / batch_size)."
        )


def _mix(schema: dict[str, Any], contract: TaskContract | None, generators: Sequence[GeneratorView] | None) -> None:
    if contract is not None:
        schema["properties"]["n"]["maximum"] = contract.budget.max_rows


def _sample(schema: dict[str, Any], contract: TaskContract | None, generators: Sequence[GeneratorView] | None) -> None:
    _generate(schema, contract, generators, source="checkpoint")


_TAILORS = {"data.generate": _generate, "data.sample": _sample, "experiment.submit": _submit, "data.mix": _mix}


def input_schema(
    name: str,
    model: type[BaseModel],
    contract: TaskContract | None = None,
    generators: Sequence[GeneratorView] | None = None,
) -> dict[str, Any]:
    """The JSON schema of tool `name`'s input `model`, tailored to the run (`contract`) where
    the tool's choices are the run's (generator families, methods, datasets)."""
    schema = model.model_json_schema()
    tailor = _TAILORS.get(name)
    if tailor is not None:
        tailor(schema, contract, generators)
    return schema
