"""FileTask: a task read from a directory (`task.toml` + JSONL splits), on the Task protocol.

The same contract as the built-in tasks: a template, a decoding, stop strings, protected
`dev`/`review`/`final` items with stable ids, a total `score`; plus the `train` pool agents
may learn from (`train_pool`), with every item that repeats a protected one dropped and counted.
"""

from __future__ import annotations

import copy
import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._protocol import SPLITS, Decoding, EvalItem, GeneratorFamily, Score, Split, TaskHints
from .._text import normalise
from ._bwrap import isolation
from ._config import ChoiceScorer, PythonScorer, TaskConfig, UnitTestScorer
from ._errors import TaskInputError
from ._load import TOML, files_digest, parse_config, parse_split, read_file, read_files, sha256
from ._pool import OPENS_WITH, pool_families
from ._scorers import Scorer, make_scorer

__all__ = ["FileTask", "PoolItem", "load_public_task", "load_task_dir", "model_output_boundary"]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class PoolItem:
    """One item of the `train` pool: its input fields, the rendered prompt and the reference."""

    id: str
    question: dict[str, Any]
    prompt: str
    reference: Any


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


class FileTask:
    """A task directory's task; build it with `load_task_dir`."""

    hints: TaskHints  # the `[training]` ranges and the family it opens with (TaskHints)

    def __init__(
        self,
        root: Path,
        config: TaskConfig,
        files: dict[str, bytes],
        *,
        public: tuple[str, Callable[[], tuple[list[PoolItem], dict[str, dict[str, Any]]]]] | None = None,
    ) -> None:
        """`public`: (the whole task's digest, where its train pool and the pool items' fields as
        written come from) for a task read without its protected splits (`load_public_task`): it
        holds no evaluation item, nor the train split's bytes."""
        self.root = root  # where it was read from: a label for messages, never read again
        self.config = config
        self.files = dict(files)
        self.file_digests = {rel: sha256(data) for rel, data in files.items()}
        self.digest = files_digest(self.file_digests) if public is None else public[0]
        self._pool_of = None if public is None else public[1]
        self.public = public is not None  # read without its protected splits
        self.name = config.name
        self.capability = config.capability
        self.template = config.template
        self.format = config.format
        t = config.training
        self.hints = TaskHints(
            learning_rate=None if t.learning_rate is None else (float(t.learning_rate[0]), float(t.learning_rate[1])),
            batch_sizes=tuple(t.batch_sizes or ()),
            max_steps=None if t.max_steps is None else (int(t.max_steps[0]), int(t.max_steps[1])),
            opens_with=OPENS_WITH,
        )
        g = config.generation
        self.decoding = Decoding(g.max_new_tokens, not g.greedy, g.temperature, g.top_p)
        self.stop = tuple(g.stop)
        self.eval_params = {"format": config.format, "scorer": config.scorer.model_dump(mode="json")}
        sc = config.scorer
        # What the evaluator allows one item: the sandbox's own limit and its start-up.
        self.item_timeout_s = sc.timeout_s + 2.0 if isinstance(sc, UnitTestScorer) else 0.0
        # Its scorer runs model output as code (the run summary says where: `model_output_boundary`).
        self.runs_model_code = isinstance(sc, UnitTestScorer)
        label = str(root / sc.path) if isinstance(sc, PythonScorer) else ""
        try:
            self.scorer: Scorer = make_scorer(sc, files.get(sc.path) if isinstance(sc, PythonScorer) else None, label)
        except Exception as exc:  # the user's scorer file may fail in any way at import
            raise TaskInputError(f"{label or root / TOML}: scorer does not load: {type(exc).__name__}: {exc}") from None
        self.placeholders = tuple(dict.fromkeys(_PLACEHOLDER.findall(self.template)))
        if not self.placeholders:
            raise TaskInputError(f"{root / TOML}: the template uses no item field (write one as {{question}})")
        self._items: dict[str, tuple[EvalItem, ...]] = {}
        self._pool: tuple[PoolItem, ...] = ()
        self._raw: dict[str, dict[str, Any]] = {}
        self.train_dropped = 0  # pool items that repeat a protected item (same id or same content)
        if public is None:
            self._read_items(root, config, files)

    def _read_items(self, root: Path, config: TaskConfig, files: dict[str, bytes]) -> None:
        """The protected splits' items, checked, and the train pool without the items that repeat one."""
        seen_ids: dict[str, str] = {}
        seen_content: dict[str, tuple[str, str]] = {}
        for split in SPLITS:
            rel = getattr(config.splits, split)
            items = []
            for item_id, fields in parse_split(str(root / rel), files[rel]):
                where = f"{root / rel} item {item_id!r}"
                if item_id in seen_ids:
                    raise TaskInputError(f"{where}: the id is also in the {seen_ids[item_id]} split")
                key = self._content_key(fields)
                if key in seen_content:
                    other_split, other_id = seen_content[key]
                    raise TaskInputError(f"{where}: the same item as {other_id!r} of the {other_split} split")
                seen_ids[item_id], seen_content[key] = split, (split, item_id)
                prompt, reference = self._prepare(where, item_id, fields)
                items.append(EvalItem(item_id, prompt, reference))
            self._items[split] = tuple(items)
        if config.splits.train is not None:
            rel = config.splits.train
            pool = []
            for item_id, fields in parse_split(str(root / rel), files[rel]):
                if item_id in seen_ids or self._content_key(fields) in seen_content:
                    self.train_dropped += 1
                    continue
                prompt, reference = self._prepare(f"{root / rel} item {item_id!r}", item_id, fields)
                pool.append(PoolItem(item_id, self._inputs(fields), prompt, reference))
            self._pool = tuple(pool)

    # -- items -------------------------------------------------------------------------------
    def _input_names(self) -> tuple[str, ...]:
        sc = self.config.scorer
        if isinstance(sc, ChoiceScorer):
            return tuple(sc.choices_field if p == "choices" else p for p in self.placeholders)
        return self.placeholders

    def _inputs(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        return {name: fields[name] for name in self._input_names() if name in fields}

    def _content_key(self, fields: Mapping[str, Any]) -> str:
        """What makes two items the same item: their input fields, case, width and spacing
        aside (each text normalised on its own, so a trailing space inside a value counts too)."""
        return json.dumps(_normalised(self._inputs(fields)), ensure_ascii=False, sort_keys=True)

    def _prepare(self, where: str, item_id: str, fields: Mapping[str, Any]) -> tuple[str, Any]:
        try:
            extra, reference = self.scorer.prepare(item_id, fields)
        except ValueError as exc:
            raise TaskInputError(f"{where}: {exc}") from None
        values = {**fields, **extra}
        missing = [p for p in self.placeholders if p not in values]
        if missing:
            raise TaskInputError(f"{where}: has no field {missing[0]!r} (the template needs it)")
        return self.render(values), reference

    # -- Task protocol -----------------------------------------------------------------------
    def render(self, question: str | Mapping[str, Any]) -> str:
        """Fill the template: a mapping fills each `{field}`; a bare string fills `{question}`.
        One pass, so text inside a value is never read as a placeholder."""
        values = question if isinstance(question, Mapping) else {"question": question}
        return _PLACEHOLDER.sub(
            lambda m: _text(values[m.group(1)]) if m.group(1) in values else m.group(0), self.template
        )

    def generators(self) -> dict[str, GeneratorFamily]:
        return pool_families(self)

    def eval_items(self, split: Split) -> list[EvalItem]:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; splits are {list(SPLITS)}")
        if self.public:
            raise TaskInputError(
                f"task {self.name!r} was read without its protected splits here: its items are drawn in "
                "evaluator processes only (the sealed evaluator, the run's gate)"
            )
        return copy.deepcopy(list(self._items[split]))

    def _pool_items(self) -> tuple[PoolItem, ...]:
        if self._pool_of is not None:  # read once, from the gate, on first use
            pool, self._raw = self._pool_of()
            self._pool, self._pool_of = tuple(pool), None
        return self._pool

    def raw_pool(self) -> dict[str, dict[str, Any]]:
        """A task read without its protected splits: the pool's items as the train split wrote them."""
        self._pool_items()
        return copy.deepcopy(self._raw)

    def train_pool(self) -> list[PoolItem]:
        """The `train` split minus anything that repeats a protected item ([] without one)."""
        return copy.deepcopy(list(self._pool_items()))

    def score(self, item: EvalItem, output: str) -> Score:
        return self.scorer.score(item, output)

    def reward(self, example: Mapping[str, Any], output: str) -> float:
        if not isinstance(example, Mapping) or "check" not in example:
            raise ValueError("reward needs an example with a 'check' entry (its reference)")
        return self.scorer.score_reference(example["check"], output).score

    def pretrain_text(self, seed: int, n: int) -> list[str]:
        """Prompts of the train pool, in turn (no pool: none)."""
        pool = self._pool_items()
        return [pool[(seed + i) % len(pool)].prompt for i in range(n)] if pool else []

    # -- the files ---------------------------------------------------------------------------
    def write_to(self, dest: Path) -> None:
        """Write the bytes this task was read from (and digested) under `dest`."""
        for rel, data in sorted(self.files.items()):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    def __repr__(self) -> str:
        return f"FileTask({self.name!r}, digest={self.digest[:12]})"


def load_task_dir(path: str | Path, *, expected_digest: str | None = None) -> FileTask:
    """The task in directory `path`; TaskInputError (one line, naming the file) for bad input.

    With `expected_digest` (a contract's), the files' bytes must have that digest, checked
    before anything of them is parsed or run (a scorer file is code)."""
    root = Path(path)
    config, files = read_files(root)
    if expected_digest is not None:
        got = files_digest({rel: sha256(data) for rel, data in files.items()})
        if got != expected_digest:
            raise TaskInputError(f"{root}: the task files have digest {got}, not the pinned {expected_digest}")
    return FileTask(root, config, files)


def load_public_task(
    path: str | Path,
    *,
    pinned: Mapping[str, str],
    digest: str,
    pool: Callable[[], tuple[list[PoolItem], dict[str, dict[str, Any]]]],
) -> FileTask:
    """The task in directory `path` without its protected splits, for a process where agents'
    tools run: `task.toml` and the scorer file, each refused unless its bytes have the digest
    `pinned` (a contract's `task_source.files`) names; the train pool and its items' fields as
    written from `pool` (the run's gate's, without the items that repeat a protected one); no
    evaluation item (`eval_items` refuses). `digest` is the whole task's, for its records."""
    root = Path(path)

    def checked(rel: str) -> bytes:
        data = read_file(root, rel)
        if sha256(data) != pinned.get(rel):
            raise TaskInputError(f"{root / rel}: its bytes are not the ones the run pinned")
        return data

    files = {TOML: checked(TOML)}
    config = parse_config(root, files[TOML])
    if isinstance(config.scorer, PythonScorer):
        files[config.scorer.path] = checked(config.scorer.path)
    return FileTask(root, config, files, public=(digest, pool))


def model_output_boundary(task: object) -> str:
    """For run summaries: where the task's scorer runs model output ('' when it runs none)."""
    if isinstance(task, FileTask) and task.runs_model_code:
        return f"; model output: {isolation().statement}"
    return ""


def _normalised(value: Any) -> Any:
    """Every text inside a JSON value in its case-, width- and space-insensitive form."""
    if isinstance(value, str):
        return normalise(unicodedata.normalize("NFKC", value))
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    if isinstance(value, dict):
        return {normalise(unicodedata.normalize("NFKC", k)): _normalised(v) for k, v in value.items()}
    return value
