"""Reversible encodings of protected items, undone by the gate before matching: each
encoding of review items among clean rows fails the encoded rows and no clean row."""

from __future__ import annotations

import base64
import codecs
import urllib.parse

import pytest

from rsi_master.expos.contamination import check
from rsi_master.tasks import get_task

from .helpers import clean_rows, task_index

ENCODINGS = {
    "base64": lambda t: base64.b64encode(t.encode()).decode(),
    "base64_urlsafe": lambda t: base64.urlsafe_b64encode(t.encode()).decode(),
    "hex": lambda t: t.encode().hex(),
    "rot13": lambda t: codecs.encode(t, "rot13"),
    "url": lambda t: urllib.parse.quote(t),
    "url_plus": lambda t: urllib.parse.quote_plus(t),
    "reversed": lambda t: t[::-1],
    "reversed_words": lambda t: " ".join(t.split()[::-1]),
    "base64_of_rot13": lambda t: base64.b64encode(codecs.encode(t, "rot13").encode()).decode(),
    "rot13_of_reversed": lambda t: codecs.encode(t[::-1], "rot13"),
}


def _interleave(a: str, b: str) -> str:
    wa, wb = a.split(), b.split()
    return (
        " ".join(w for pair in zip(wa, wb, strict=False) for w in pair) + " " + " ".join(wa[len(wb) :] + wb[len(wa) :])
    )


@pytest.mark.parametrize("encoding", list(ENCODINGS))
@pytest.mark.parametrize("name", ["arithmetic", "knowledge", "function_calling", "program_synthesis"])
def test_encoded_items_fail_and_clean_rows_do_not(name: str, encoding: str) -> None:
    items = get_task(name).eval_items("review")[:12]
    clean = clean_rows(name, 10)
    rows = clean + [{"prompt": "Study this: ", "completion": ENCODINGS[encoding](it.prompt)} for it in items]
    report = check(task_index(name), rows)
    failed = {f.row for f in report.findings if f.verdict == "fail"}
    assert failed == set(range(len(clean), len(rows))), (encoding, sorted(failed))
    assert not [f for f in report.findings if f.row < len(clean) and f.reading is not None]


def test_a_finding_names_the_reading_it_was_found_in() -> None:
    item = get_task("knowledge").eval_items("review")[0]
    for encoding, reading in (("base64", "base64"), ("hex", "hex"), ("url", "url"), ("rot13", "rot13")):
        report = check(task_index("knowledge"), [ENCODINGS[encoding](item.prompt)])
        assert report.verdict == "failed" and {f.sample_id for f in report.findings} == {item.sample_id}
        assert {f.reading for f in report.findings} == {reading}, encoding


def test_two_items_interleaved_word_by_word_fail_naming_both() -> None:
    items = get_task("knowledge").eval_items("review")[:8]
    clean = clean_rows("knowledge", 10)
    rows = clean + [_interleave(items[k].prompt, items[k + 1].prompt) for k in range(0, 8, 2)]
    report = check(task_index("knowledge"), rows)
    assert {f.row for f in report.findings if f.verdict == "fail"} == set(range(len(clean), len(rows)))
    named = {f.sample_id for f in report.findings if f.verdict == "fail" and f.reading == "interleaved"}
    assert len(named & {it.sample_id for it in items}) >= 6


def test_text_that_only_looks_encoded_is_not_decoded_into_a_hit() -> None:
    rows = [
        "state-of-the-art-preprocessing-pipeline and 0123456789abcdef0123 are not items",
        "100% of 50%25 percent: %zz is no escape",
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo= decodes to the alphabet",
    ]
    assert check(task_index("knowledge"), rows).verdict == "clean"
