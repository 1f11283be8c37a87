"""The check's fast paths agree with the plain definitions they replace.

`scan` (token spans and vocabulary keys) must cut exactly the tokens `tokenise` cuts
and map them to the same word ids; `WordTable` must answer like a dict; the sparse
number rules, `window_ok` and the shared-state `clause_shingles` must equal their
straightforward versions.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rsi_master.expos.contamination import row_text
from rsi_master.expos.contamination._hashing import (
    _MULTIPLIER,
    _salt,
    clause_shingles,
    direct_span_hashes,
    prefix_sums,
    span_hashes,
    window_hashes,
    window_ok,
)
from rsi_master.expos.contamination._keys import token_hashes, token_keys
from rsi_master.expos.contamination._normalise import ROW, scan, tokenise
from rsi_master.expos.contamination._table import WordTable
from rsi_master.tasks import get_task

from .helpers import TASKS, case, clean_rows, numbers, spaces, task_index

# Characters that exercise every rule: digits and zeros (number rules), commas and
# points (thousands, fractions, clause boundaries), hyphens, operators, brackets,
# apostrophes, whitespace, row separators and non-ASCII text.
_ALPHABET = "0000000..,,,123456789abcxyz -+-*/=<>'\x00\n\t?!;:)]}[(\"é’—…０ﬁ"
_TEXT = st.text(alphabet=_ALPHABET, max_size=60) | st.lists(
    st.sampled_from(
        ["0" * 5, "1" * 40, "007", "1,000", "2.500", ".", ",", " ", "[", "a-b", "\x00", ". ", "x" * 20, "y" * 3000]
    ),
    max_size=12,
).map("".join)


def _assert_scan_matches(text: str) -> None:
    tok = tokenise(text)
    sc = scan(text)
    assert sc.c.tobytes() == tok.buffer
    assert np.array_equal(sc.starts, tok.starts) and np.array_equal(sc.ends, tok.ends)
    words = np.flatnonzero(tok.hashes > 2)  # not a ROW or CLAUSE marker
    assert np.array_equal(sc.hashes(words), tok.hashes[words])
    assert [sc.text(int(i)) for i in words] == [tok.text(int(i)) for i in words]


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_scan_cuts_the_tokens_tokenise_cuts(text: str) -> None:
    _assert_scan_matches(text)


@settings(max_examples=200, deadline=None)
@given(_TEXT)
def test_short_token_keys_are_the_bytes(text: str) -> None:
    sc = scan(text)
    for s, e, key in zip(sc.starts.tolist(), sc.ends.tolist(), sc.keys.tolist()):
        if e - s <= 8:
            assert key == int.from_bytes(sc.c[s:e].tobytes(), "little")


def test_scan_matches_on_generated_and_disguised_rows() -> None:
    import random

    rng = random.Random(3)
    for name in TASKS:
        texts = [row_text(row) for row in clean_rows(name, 30)]
        texts += [spaces(case(numbers(item.prompt, rng), rng), rng) for item in get_task(name).eval_items("final")[:30]]
        _assert_scan_matches(ROW.join(texts))


def test_word_ids_from_keys_equal_ids_from_hashes() -> None:
    import random

    rng = random.Random(5)
    for name in TASKS:
        index = task_index(name)
        texts = [row_text(row) for row in clean_rows(name, 20)]
        texts += [numbers(item.prompt, rng) for item in get_task(name).eval_items("review")[:40]]
        joined = ROW.join(texts)
        assert np.array_equal(index.word_table.lookup(scan(joined).keys), index.ids(tokenise(joined).hashes))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), unique=True, max_size=300), st.lists(st.integers(0, 2**64 - 1), max_size=300)
)
def test_word_table_answers_like_a_dict(keys: list[int], others: list[int]) -> None:
    mapping = {key: i + 1 for i, key in enumerate(keys)}
    table = WordTable.build(np.asarray(keys, dtype=np.uint64), np.arange(1, len(keys) + 1))
    query = keys + others
    got = table.lookup(np.asarray(query, dtype=np.uint64))
    assert got.tolist() == [mapping.get(q, 0) for q in query]


def test_word_table_probes_past_collisions() -> None:
    # Keys that all land in the same slot of a 16-slot table: lookups walk the chain,
    # across the end of the table too.
    slot_of: dict[int, list[int]] = {}
    small = WordTable.build(np.asarray([1], dtype=np.uint64), np.asarray([1]))
    for key in range(1000):
        slot_of.setdefault(small.slot(key), []).append(key)
    last = slot_of[15][:4]
    table = WordTable.build(np.asarray(last, dtype=np.uint64), np.arange(1, 5))
    assert len(table.keys) == 16
    assert np.flatnonzero(table.ids).tolist() == [0, 1, 2, 15]  # one chain from the last slot, wrapped
    assert table.lookup(np.asarray(last, dtype=np.uint64)).tolist() == [1, 2, 3, 4]
    assert table.lookup(np.asarray(slot_of[15][4:8] + slot_of[0][:2], dtype=np.uint64)).tolist() == [0] * 6


def test_long_token_keys_differ() -> None:
    text = "abcdefghij abcdefghik abcdefghijklmnopqrstuvwxyz abcdefghijklmnopqrstuvwxyy abcdefgh"
    sc = scan(text)
    assert len(set(sc.keys.tolist())) == 5
    c = sc.c
    assert np.array_equal(token_keys(c, sc.starts, sc.ends), sc.keys)
    assert np.array_equal(token_hashes(c, sc.starts, sc.ends), tokenise(text).hashes)


def _window_ok_reference(bad: np.ndarray, n: int) -> np.ndarray:
    count = len(bad) - n + 1
    if count <= 0:
        return np.zeros(0, dtype=bool)
    csum = np.concatenate(([0], np.cumsum(bad, dtype=np.int64)))
    return csum[n : n + count] == csum[:count]


def _clause_shingles_reference(values: np.ndarray, clause: np.ndarray, bad: np.ndarray, sizes: tuple[int, ...]):
    """Every k-word window inside one clause, then every clause shorter than k, per size."""
    out = []
    n = len(values)
    for k in sizes:
        for i in range(n - k + 1):
            if clause[i] == clause[i + k - 1] and not bad[i : i + k].any():
                out.append((i, k))
        first = [i for i in range(n) if i == 0 or clause[i] != clause[i - 1]]
        for i, j in zip(first, [*first[1:], n]):
            if j - i < k and not bad[i:j].any():
                out.append((i, j - i))
    hashes = []
    for i, length in out:
        h = values[i]
        for j in range(1, length):
            h = h * _MULTIPLIER + values[i + j]
        hashes.append(h ^ _salt(length))
    return sorted(zip(np.asarray(hashes, dtype=np.uint64).tolist(), [i for i, _ in out], [i + k for i, k in out]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.booleans()), max_size=40), st.integers(1, 9))
def test_window_ok_and_clause_shingles_equal_the_plain_definitions(words, n) -> None:
    rng = np.random.default_rng(len(words))
    values = rng.integers(0, 2**63, len(words), dtype=np.uint64)
    clause = np.cumsum([new for _, new, _ in words]).astype(np.int64)
    bad = np.asarray([b for _, _, b in words], dtype=bool)
    assert np.array_equal(window_ok(bad, n), _window_ok_reference(bad, n))
    with np.errstate(over="ignore"):
        for sizes in ((3, 4), (1,), (2, 5), (4, 3)):
            h, s, e = clause_shingles(values, clause, bad, sizes)
            assert sorted(zip(h.tolist(), s.tolist(), e.tolist())) == _clause_shingles_reference(
                values, clause, bad, sizes
            )


def test_batching_does_not_change_the_report(monkeypatch) -> None:
    import random

    from rsi_master.expos.contamination import _check, check

    rng = random.Random(7)
    name = "knowledge"
    rows: list = list(clean_rows(name, 15))
    for item in get_task(name).eval_items("final")[:12]:
        rows.insert(rng.randrange(len(rows)), {"prompt": case(item.prompt, rng), "completion": " yes"})
        rows.insert(rng.randrange(len(rows)), spaces(item.prompt, rng))
    rows.insert(3, {"text": get_task(name).eval_items("dev")[0].prompt})
    rows.insert(5, "")
    expected = check(task_index(name), rows)
    assert expected.rows_failed >= 12
    for batch_chars, chunk_rows in ((1, 4096), (700, 3), (5000, 1), (1 << 20, 7)):
        monkeypatch.setattr(_check, "_BATCH_CHARS", batch_chars)
        monkeypatch.setattr(_check, "_CHUNK_ROWS", chunk_rows)
        assert check(task_index(name), iter(rows)) == expected


@settings(max_examples=150, deadline=None)
@given(_TEXT)
def test_scan_join_equals_joined_token_texts(text: str) -> None:
    sc = scan(text)
    every = np.arange(len(sc))
    assert sc.join(every) == " ".join(sc.text(int(i)) for i in every)
    assert sc.join(every[1::2]) == " ".join(sc.text(int(i)) for i in every[1::2])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(1, 20)), max_size=20))
def test_direct_span_hashes_equal_prefix_sum_hashes(spans) -> None:
    values = np.random.default_rng(1).integers(0, 2**63, 100, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    starts = np.asarray([s for s, _ in spans], dtype=np.int64)
    lengths = np.asarray([n for _, n in spans], dtype=np.int64)
    assert np.array_equal(
        direct_span_hashes(values, starts, lengths), span_hashes(prefix_sums(values), starts, lengths)
    )


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 40), st.integers(1, 20))
def test_window_hashes_equal_the_horner_definition(size: int, n: int) -> None:
    values = np.random.default_rng(size).integers(0, 2**63, size, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    expected = []
    with np.errstate(over="ignore"):
        for i in range(size - n + 1):
            h = values[i]
            for k in range(1, n):
                h = h * _MULTIPLIER + values[i + k]
            expected.append(h ^ _salt(n))
    assert window_hashes(values, n).tolist() == np.asarray(expected, dtype=np.uint64).tolist()


def _letter_zeros_plain(c: np.ndarray) -> np.ndarray:
    from rsi_master.expos.contamination._characters import _FRACTION, _LEADING, _ZEROS

    text = _FRACTION.sub(lambda m: m.group(1).rstrip(b".").rstrip(b"0"), _LEADING.sub(b"", c.tobytes()))
    return np.frombuffer(_ZEROS.sub(b"o", text), dtype=np.uint8)


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet="oooo00559..  ,ab\x00\x80", max_size=24) | st.sampled_from(["o", "5.o", "indigo3 onyx3", "oo"]))
def test_letter_zeros_skips_only_text_its_patterns_leave_as_is(text: str) -> None:
    from rsi_master.expos.contamination._characters import _letter_zeros

    c = np.frombuffer(text.encode("latin-1"), dtype=np.uint8)
    assert _letter_zeros(c).tobytes() == _letter_zeros_plain(c).tobytes()
