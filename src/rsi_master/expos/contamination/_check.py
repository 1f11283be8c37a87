"""Check training rows against a contamination index (all three methods, always).

Rows are processed in batches of about a megabyte: the batch is normalised as one
string, mapped to word ids, and every n-gram, anchor window and shingle of the batch
is hashed and looked up with numpy. Python-level work happens only for hits, which are
rare in clean data; that is where the speed comes from.

Rows are read as one stream: an item cut into pieces over consecutive rows is still
one run of words, so the exact and n-gram methods match across row boundaries (a
match names its first and last row). Near-duplicates (reordered clauses) are looked
for inside one row. A batch starts with the last rows of the one before, enough to
hold the longest protected text, so no match is lost at a batch boundary.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from itertools import accumulate, islice
from typing import Any, cast

import numpy as np

from ._batch import Batch
from ._characters import evidence
from ._config import ContaminationConfig
from ._encodings import FAIL_ONLY, chunk_readings, rot13, word_readings
from ._hashing import UNKNOWN, clause_shingles, window_hashes, window_ok
from ._index import CLAUSE_ID, ROW_ID, ContaminationIndex
from ._matching import exact_matches, near_duplicate_matches, ngram_matches
from ._normalise import ROW, scan
from ._pieces import Pieces, Stream, batch_pieces, character_findings
from ._report import ContaminationFinding, ContaminationReport, Verdict
from ._unicode import other_reading

__all__ = ["check", "row_text"]

_BATCH_CHARS = 1 << 20
_BARRIER = "zqxvkjbarrierzqxvkj"  # a word in no protected text: no match runs over it
_CHUNK_ROWS = 4096
# Decodings of decodings are followed this deep (base64 of rot13 of a protected item).
_DECODE_DEPTH = 3
# Fewest white-space words of a row read reordered (a list written without spaces is one word).
_MIN_WORDS = 4
# A row is read rot13-decoded (as written and reversed) when at least this share of its words (and four)
# is unknown to the protected vocabulary.
_UNKNOWN_SHARE = 0.5
# Fields a check may set differently from the index: they only decide verdicts.
# near_dup_threshold may only go up (see _effective_config).
_VERDICT_FIELDS = frozenset(
    {
        "ngram_fail",
        "near_dup_verdict",
        "near_dup_threshold",
        "near_dup_min_clauses",
        "near_dup_one_clause_min_shingles",
        "char_cover",
        "char_piece",
        "char_window",
        "char_far",
    }
)


def row_text(row: str | Mapping[str, Any]) -> str:
    """The text a model would train on: a string as is, or a JSONL row's prompt + completion
    (and prompt + rejected, for a preference pair).

    Rows with `text` or `messages` (chat format) are read too; anything else is an error,
    because silently checking nothing would pass contaminated data.
    """
    kind = type(row)
    if kind is str:  # fast paths first: this runs once per row, hundreds of thousands of times
        return cast(str, row)
    if kind is dict and "prompt" in row and "rejected" not in row:
        row = cast(Mapping[str, Any], row)
        return f"{row['prompt']}{row.get('completion', '')}"
    if isinstance(row, str):
        return str(row)
    if isinstance(row, Mapping):
        if "rejected" in row:
            # A preference pair: DPO reads the prompt with each completion, so both are checked.
            prompt = row.get("prompt", "")
            return f"{prompt}{row.get('completion', '')}\n{prompt}{row['rejected']}"
        if "prompt" in row or "completion" in row:
            return f"{row.get('prompt', '')}{row.get('completion', '')}"
        if "text" in row:
            return str(row["text"])
        if "messages" in row:
            return "\n".join(str(m.get("content", "")) for m in row["messages"])
    raise ValueError(f"cannot read training text from a {type(row).__name__}; expected str or prompt/completion row")


def _effective_config(index: ContaminationIndex, config: ContaminationConfig | None) -> ContaminationConfig:
    if config is None:
        return index.config
    for name in sorted(set(ContaminationConfig.model_fields) - _VERDICT_FIELDS):
        if getattr(config, name) != getattr(index.config, name):
            raise ValueError(f"config.{name} differs from the index ({getattr(index.config, name)}); rebuild the index")
    if config.near_dup_threshold < index.config.near_dup_threshold:
        # The prefix filter keeps enough keys for the index threshold, not for a lower one.
        raise ValueError("near_dup_threshold below the index's; rebuild the index with the lower threshold")
    return config


def _batch(index: ContaminationIndex, rows: list[str], first_row: int) -> Batch:
    joined = ROW.join(rows)
    if joined.count(ROW) != len(rows) - 1:  # a row with a NUL byte would split in two
        joined = ROW.join(r.replace(ROW, " ") for r in rows)
    tok = scan(joined)
    all_ids = index.word_table.lookup(tok.keys)
    # Clause and row numbers by repeating counters between markers (a cumulative sum
    # over a boolean array casts every element and costs several times as much).
    is_clause = all_ids == CLAUSE_ID
    is_row = all_ids == ROW_ID
    is_marker = is_clause | is_row
    markers = np.flatnonzero(is_marker)
    clause_all = np.repeat(np.arange(len(markers) + 1), np.diff(np.concatenate(([0], markers, [len(all_ids)]))))
    separators = np.flatnonzero(is_row)
    if len(separators) != len(rows) - 1:
        raise RuntimeError("internal error: a row separator did not become one ROW token")
    row_all = np.repeat(np.arange(len(rows)), np.diff(np.concatenate(([0], separators, [len(all_ids)]))))
    keep = np.flatnonzero(~is_marker)
    ids = all_ids[keep]
    row = row_all[keep]
    numbers = np.arange(len(rows))
    starts, ends = np.searchsorted(row, numbers), np.searchsorted(row, numbers, side="right")
    return Batch(first_row, tok, keep, ids, index.values[ids], row, clause_all[keep], ids == UNKNOWN, starts, ends)


def _tail(index: ContaminationIndex, batch: Batch) -> int:
    """How many rows at the end of a batch the next batch must see again: those
    holding its last `longest protected text` words, where a match into the next
    batch can start (in characters for the character reading: a word has one or more)."""
    lengths = (index.text_length, index.characters.length)
    longest = max((int(x.max()) for x in lengths if len(x)), default=0)
    if not longest or not len(batch.row):
        return 0
    return len(batch.row_start) - int(batch.row[max(len(batch.row) - longest, 0)])


def _check_batch(
    index: ContaminationIndex,
    cfg: ContaminationConfig,
    batch: Batch,
    new: int,
    found: list[Pieces],
    stream: Stream,
    words_only: bool = False,
) -> list[ContaminationFinding]:
    """Findings of the word methods in a batch whose rows from `new` on were not seen
    before; its pieces in the character reading go to `found`, its new rows to `stream`.
    `words_only`: exact and n-gram matches alone (no character reading, no near-duplicates)."""
    if not words_only:
        found.append(batch_pieces(index.characters, cfg, batch.tokens.c, batch.first_row, new, stream))
    n = cfg.ngram_flag
    grams = window_hashes(batch.values, n)
    gram_ok = window_ok(batch.bad, n)
    findings = exact_matches(index, batch, {n: (grams, gram_ok)})
    findings += ngram_matches(index, cfg, batch, grams, gram_ok)
    if words_only:
        return findings
    shingles, starts, _ = clause_shingles(batch.values, batch.clause, batch.bad, cfg.shingle_words, ends=False)
    findings += near_duplicate_matches(index, cfg, batch, shingles, starts)
    return findings


def _second_reading(
    index: ContaminationIndex, cfg: ContaminationConfig, rows: list[tuple[int, str]]
) -> list[ContaminationFinding]:
    """Findings in the rows that hold ambiguous characters, read the other way.

    The normaliser deletes invisible characters, which undoes `sh<ZWSP>ells`; an agent
    can as well put them where the spaces were (`A<ZWSP>box<ZWSP>holds`), and deleting
    them then glues the words together. A caseless look-alike of a stroke reads `l`,
    and may stand for `I` (see `_unicode.other_reading`). Such rows are checked a
    second time read the other way, in one stream where each run of consecutive such
    rows is kept apart from the next by a row holding only a word of no protected text
    (clean generated data has none).
    """
    if not rows:
        return []
    texts: list[str] = []
    original: list[int] = []  # row of the second stream -> row of the input (-1: barrier)
    for k, (row, text) in enumerate(rows):
        if k and row != rows[k - 1][0] + 1:
            texts.append(_BARRIER)
            original.append(-1)
        texts.append(text)
        original.append(row)
    found: list[ContaminationFinding] = []
    for f in check(index, texts, cfg).findings:
        last = None if f.last_row is None else original[f.last_row]
        found.append(f.model_copy(update={"row": original[f.row], "last_row": last}))
    return found


def _decoded(
    index: ContaminationIndex, cfg: ContaminationConfig, rows: list[tuple[int, str, str]], depth: int, words: bool
) -> list[ContaminationFinding]:
    """Findings in the rows' decoded readings (see `_encodings`): each reading is checked in one
    stream, apart from the next by a barrier row, and its findings are the original row's,
    naming the reading."""
    if not rows:
        return []
    texts: list[str] = []
    origin: list[tuple[int, str] | None] = []
    for row, name, text in rows:
        if texts:
            texts.append(_BARRIER)
            origin.append(None)
        texts.append(text)
        origin.append((row, name))
    out = []
    for f in check(index, texts, cfg, _depth=depth, _words_only=words).findings:
        at = origin[f.row]
        if at is not None:
            reading = at[1] if f.reading is None else f"{at[1]}+{f.reading}"
            if f.verdict == "fail" or not FAIL_ONLY & set(reading.split("+")):
                out.append(f.model_copy(update={"row": at[0], "last_row": None, "reading": reading}))
    return out


def _unknown_rows(batch: Batch, new: int) -> list[int]:
    """Rows of a batch (from `new` on) whose words are mostly unknown to the protected vocabulary."""
    n_rows = len(batch.row_start)
    words = np.bincount(batch.row, minlength=n_rows)
    unknown = np.bincount(batch.row, weights=batch.bad, minlength=n_rows)
    return [int(r) for r in np.flatnonzero((words >= 4) & (unknown >= _UNKNOWN_SHARE * words)) if r >= new]


def _character_findings(
    index: ContaminationIndex, cfg: ContaminationConfig, found: list[Pieces], stream: Stream
) -> list[ContaminationFinding]:
    """The character reading's findings, from the pieces of every batch (see _pieces)."""
    out = []
    for t, first, last, start, end in character_findings(index.characters, cfg, found, stream):
        item = index.items[int(index.text_item[t])]
        out.append(
            ContaminationFinding(
                row=first,
                last_row=last if last != first else None,
                split=item.split,
                sample_id=item.sample_id,
                text_kind=index.text_kind[t],
                kind="characters",
                verdict="fail",
                words=end - start,
                evidence=evidence(index.characters, t, start, end)[:300],
            )
        )
    return out


def _last_row(finding: ContaminationFinding) -> int:
    return finding.row if finding.last_row is None else finding.last_row


def _strongest(findings: list[ContaminationFinding]) -> list[ContaminationFinding]:
    """One finding per (row, text, method): a run cut short by the end of a batch is
    found whole in the next one, which carries its first rows."""
    best: dict[tuple[int, str, str, str, str], ContaminationFinding] = {}
    for f in findings:
        key = (f.row, f.split, f.sample_id, f.text_kind, f.kind)
        old = best.get(key)
        if old is None or (f.verdict == "fail", f.words) > (old.verdict == "fail", old.words):
            best[key] = f
    return list(best.values())


def check(
    index: ContaminationIndex,
    rows: Iterable[str | Mapping[str, Any]],
    config: ContaminationConfig | None = None,
    *,
    _depth: int = 0,
    _words_only: bool = False,
) -> ContaminationReport:
    """Check every training row against every protected text of `index`.

    `rows` are strings or JSONL-style mappings (see `row_text`). `config` defaults to the
    index's; it may change the verdict thresholds (`ngram_fail`, `near_dup_verdict`, a
    higher `near_dup_threshold`) but not what the index was built with.

    Rows holding base64, hex or URL-encoded runs are checked again decoded, and every row
    again as its even and its odd words (two items interleaved); see `_encodings`.
    """
    cfg = _effective_config(index, config)
    findings: list[ContaminationFinding] = []
    second: list[tuple[int, str]] = []  # (row, the row with its ambiguous characters read the other way)
    decoded: list[tuple[int, str, str]] = []  # (row, reading, the row decoded)
    worded: list[tuple[int, str, str]] = []  # (row, reading, the row's words reordered)
    pending: list[str] = []
    carry: list[str] = []  # the last rows of the previous batch, seen again
    size = chars = count = 0
    found: list[Pieces] = []  # the character reading's pieces, judged once all rows are read
    stream = Stream()  # the character reading of every row

    def run_batch() -> None:
        nonlocal carry, count, chars
        batch = _batch(index, carry + pending, count - len(carry))
        # Matches that lie within the carried rows were found with the previous batch.
        findings.extend(
            f for f in _check_batch(index, cfg, batch, len(carry), found, stream, _words_only) if _last_row(f) >= count
        )
        seen = carry + pending
        if _depth < _DECODE_DEPTH:
            for r in _unknown_rows(batch, len(carry)):
                row = batch.first_row + r
                decoded.extend(((row, "rot13", rot13(seen[r])), (row, "rot13+reversed", rot13(seen[r][::-1]))))
        carry = seen[len(seen) - _tail(index, batch) :]
        count += len(pending)
        chars += size

    it = iter(rows)
    # Rows are read a chunk at a time (a comprehension with the common row shapes
    # inline); a batch closes after the row that brings it to _BATCH_CHARS or more.
    while chunk := list(islice(it, _CHUNK_ROWS)):
        texts = [
            r
            if type(r) is str
            else f"{r['prompt']}{r.get('completion', '')}"
            if type(r) is dict and "prompt" in r and "rejected" not in r
            else row_text(r)
            for r in chunk
        ]
        first = count + len(pending)
        second += [(first + k, t) for k, text in enumerate(texts) if not text.isascii() and (t := other_reading(text))]
        if _depth < _DECODE_DEPTH:
            decoded += [(first + k, name, t) for k, name, t in chunk_readings(texts)]
        if _depth == 0:
            worded += [
                (first + k, name, t) for k, text in enumerate(texts) for name, t in word_readings(text, _MIN_WORDS)
            ]
        total = list(accumulate(map(len, texts)))
        start = 0
        while start < len(texts):
            before = total[start - 1] if start else 0
            end = bisect_left(total, _BATCH_CHARS - size + before, lo=start)
            if end == len(texts):
                pending += texts[start:]
                size += total[-1] - before
                break
            pending += texts[start : end + 1]
            size += total[end] - before
            run_batch()
            pending, size = [], 0
            start = end + 1
    if pending:
        run_batch()
    if not _words_only:
        findings += _character_findings(index, cfg, found, stream)
    findings += _second_reading(index, cfg, second)
    findings += _decoded(index, cfg, decoded, _depth + 1, False)
    # Reordered words are read once, by the word methods only: only their fails count.
    findings += _decoded(index, cfg, worded, _DECODE_DEPTH, True)
    findings = _strongest(findings)
    findings.sort(key=lambda f: (f.row, f.split, f.sample_id, f.kind, f.text_kind))
    failed = {r for f in findings if f.verdict == "fail" for r in range(f.row, _last_row(f) + 1)}
    flagged = {r for f in findings for r in range(f.row, _last_row(f) + 1)} - failed
    verdict: Verdict = "failed" if failed else "flagged" if flagged else "clean"
    return ContaminationReport(
        index_digest=index.digest,
        config=cfg,
        rows=count,
        chars=chars,
        rows_failed=len(failed),
        rows_flagged=len(flagged),
        findings=findings,
        verdict=verdict,
    )
