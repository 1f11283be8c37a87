"""The one name of a learning curve: `family[knob=value,...]+method+prompt_loss@bN@sS`.

Every part but the family is optional and written only away from its default, so that one
curve has one name (a dictionary key of the landscape file, part of a run directory's name):

* `[knob=value,...]`: a data selection, the generator knobs the curve fixes (sorted by
  name; values as the measurement wrote them, `0.0` stays `0.0`);
* `+method`: another training method than full SFT (`+lora`), a family of its own;
* `+prompt_loss`: the loss on the prompt's tokens too;
* `@bN`: measured at batch N instead of the curves' `CURVE_BATCH` (compared only with
  curves at that batch);
* `@sS`: one seed's run of the curve (seed 0 and the landscape's seed-averaged curves carry
  none).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import RsiMasterError

__all__ = ["CURVE_BATCH", "CurveLabel", "LabelError"]

# The batch size of the landscape's curves: a curve at another batch carries `@bN`.
CURVE_BATCH = 8
_NAME = r"[A-Za-z0-9_]+"
_GRAMMAR = re.compile(
    rf"(?P<family>{_NAME})(?:\[(?P<knobs>[^\[\]]*)\])?(?P<mods>(?:\+{_NAME})*)"
    r"(?:@b(?P<batch>\d+))?(?:@s(?P<seed>\d+))?"
)
_GRAMMAR_TEXT = "family[knob=value,...]+method+prompt_loss@bN@sS"


class LabelError(RsiMasterError, ValueError):
    """A curve label that does not follow the grammar (the message names the part at fault)."""


class CurveLabel(BaseModel):
    """A parsed curve label. `str(label)` writes it back; `CurveLabel.parse(str(x)) == x`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str
    knobs: tuple[tuple[str, str], ...] = ()
    method: str = "sft"
    prompt_loss: bool = False
    batch: int = CURVE_BATCH
    seed: int = 0

    # -- reading and writing ---------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> CurveLabel:
        """The label `text` names; a `LabelError` that says what is wrong otherwise. Only the
        one way of writing a label is accepted (sorted knobs, no default batch or seed
        written out), so that two strings never name one curve."""
        if not isinstance(text, str):
            raise LabelError(f"a curve label is a string, got {type(text).__name__}")
        m = _GRAMMAR.fullmatch(text)
        if m is None:
            raise LabelError(f"curve label {text!r} does not read as {_GRAMMAR_TEXT}")
        knobs: list[tuple[str, str]] = []
        if m.group("knobs") is not None:
            for part in m.group("knobs").split(","):
                name, eq, value = part.partition("=")
                if not eq or not re.fullmatch(_NAME, name) or not value:
                    raise LabelError(f"curve label {text!r}: knob {part!r} is not knob=value")
                knobs.append((name, value))
            names = [k for k, _ in knobs]
            if names != sorted(set(names)):
                raise LabelError(f"curve label {text!r}: knobs must be sorted by name, each once")
        mods = [x for x in m.group("mods").split("+") if x]
        prompt_loss = bool(mods) and mods[-1] == "prompt_loss"
        if prompt_loss:
            mods.pop()
        if len(mods) > 1 or mods == ["sft"] or "prompt_loss" in mods:
            raise LabelError(f"curve label {text!r}: at most one method other than sft, then +prompt_loss")
        batch, seed = m.group("batch"), m.group("seed")
        if batch is not None and (int(batch) < 1 or int(batch) == CURVE_BATCH or batch != str(int(batch))):
            raise LabelError(
                f"curve label {text!r}: @b{batch} must be a batch size other than the "
                f"curves' {CURVE_BATCH}, without leading zeros"
            )
        if seed is not None and (int(seed) == 0 or seed != str(int(seed))):
            raise LabelError(
                f"curve label {text!r}: @s{seed} must be a nonzero seed without leading zeros (seed 0 is not written)"
            )
        return cls(
            family=m.group("family"),
            knobs=tuple(knobs),
            method=mods[0] if mods else "sft",
            prompt_loss=prompt_loss,
            batch=int(batch) if batch else CURVE_BATCH,
            seed=int(seed) if seed else 0,
        )

    @classmethod
    def of(
        cls,
        family: str,
        params: Mapping[str, Any] | None = None,
        method: str = "sft",
        batch: int = CURVE_BATCH,
        prompt_loss: bool = False,
        seed: int = 0,
    ) -> CurveLabel:
        """The label of a measurement: the knobs it fixes written as `str(value)`."""
        label = cls(
            family=family,
            knobs=tuple((k, str(v)) for k, v in sorted((params or {}).items())),
            method=method,
            prompt_loss=prompt_loss,
            batch=batch,
            seed=seed,
        )
        return cls.parse(str(label))  # one check of every part, whichever way a label was made

    @classmethod
    def of_selection(cls, family: str, selection: str = "") -> CurveLabel:
        """The curve of `family` on the data selection `selection` (`knob=value,...` as a label
        writes it; empty for the whole family), full SFT at the curves' batch."""
        return cls.parse(f"{family}[{selection}]") if selection else cls(family=family)

    def __str__(self) -> str:
        out = self.family
        if self.knobs:
            out += "[" + ",".join(f"{k}={v}" for k, v in self.knobs) + "]"
        if self.method != "sft":
            out += f"+{self.method}"
        if self.prompt_loss:
            out += "+prompt_loss"
        if self.batch != CURVE_BATCH:
            out += f"@b{self.batch}"
        if self.seed:
            out += f"@s{self.seed}"
        return out

    # -- related labels ----------------------------------------------------------------------
    @property
    def selection(self) -> str:
        """The knobs part without brackets (`ops=add`), empty for a plain family."""
        return ",".join(f"{k}={v}" for k, v in self.knobs)

    @property
    def is_family(self) -> bool:
        """A plain family: no data selection, full SFT, the loss on the completion only."""
        return not self.knobs and self.method == "sft" and not self.prompt_loss

    def at_batch(self, batch: int) -> CurveLabel:
        return self.model_copy(update={"batch": batch})

    def with_seed(self, seed: int) -> CurveLabel:
        return self.model_copy(update={"seed": seed})

    @property
    def curve(self) -> CurveLabel:
        """The curve a seed's run belongs to (the label without `@sS`)."""
        return self.with_seed(0)

    @property
    def recipe(self) -> CurveLabel:
        """The same recipe at the curves' batch, seed 0: `family[...]+method`."""
        return self.model_copy(update={"batch": CURVE_BATCH, "seed": 0})

    @property
    def family_label(self) -> CurveLabel:
        """The plain family this curve belongs to, at this curve's batch."""
        return CurveLabel(family=self.family, batch=self.batch)
