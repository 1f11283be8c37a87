"""The three methods, each turning hash hits in a batch into verified findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._config import ContaminationConfig
from ._hashing import UNKNOWN, clause_shingles, prefix_sums, span_hashes, window_hashes, window_ok
from ._index import ROW_ID, ContaminationIndex
from ._minhash import lean, signatures
from ._normalise import ranges
from ._report import ContaminationFinding

if TYPE_CHECKING:
    from ._check import Batch

__all__ = ["exact_matches", "near_duplicate_matches", "ngram_matches"]

_EVIDENCE_CHARS = 300
_MARGIN = 0.2


def _finding(index: ContaminationIndex, batch: Batch, row: int, text: int, **fields: object) -> ContaminationFinding:
    item = index.items[int(index.text_item[text])]
    return ContaminationFinding(
        row=batch.first_row + row, split=item.split, sample_id=item.sample_id, text_kind=index.text_kind[text], **fields
    )


def _span(index: ContaminationIndex, ids: list[int]) -> str:
    return " ".join(index.words[i] for i in ids)[:_EVIDENCE_CHARS]


def exact_matches(
    index: ContaminationIndex, batch: Batch, cache: dict[int, tuple[np.ndarray, np.ndarray]]
) -> list[ContaminationFinding]:
    """Method 1: a protected text, normalised, appears whole inside a row."""
    found: dict[tuple[int, int], ContaminationFinding] = {}
    prefix = prefix_sums(batch.values)
    for k, table in index.anchors.items():
        hashes, ok = cache[k] if k in cache else (window_hashes(batch.values, k), window_ok(batch.bad, k))
        pos = np.flatnonzero(ok)
        qi, ei = table.lookup(hashes[pos])
        if not len(qi):
            continue
        texts = table.a[ei]
        start = pos[qi] - table.b[ei]
        length = index.text_length[texts]
        inside = (start >= 0) & (start + length <= len(batch.values))
        start, texts, length = start[inside], texts[inside], length[inside]
        # Compare whole-span hashes first (vectorised), then the words of the survivors.
        same = span_hashes(prefix, start, length) == index.text_hash[texts]
        for i, t in zip(start[same].tolist(), texts[same].tolist()):
            text = index.text_ids[t]
            row = int(batch.row[i])
            if (row, t) in found or not np.array_equal(batch.ids[i : i + len(text)], text):
                continue  # a span cannot cross a row: the separator id never occurs in a text
            found[row, t] = _finding(
                index, batch, row, t, kind="exact", verdict="fail", words=len(text), evidence=_span(index, text.tolist())
            )
    return list(found.values())


def ngram_matches(
    index: ContaminationIndex, cfg: ContaminationConfig, batch: Batch, grams: np.ndarray, ok: np.ndarray
) -> list[ContaminationFinding]:
    """Method 2: the longest run of shared words seeded by a non-template n-gram.

    The run is measured by its core: from the first to the last rare (non-template)
    shingle of the protected text that lies inside it.
    """
    n = cfg.ngram_flag
    pos = np.flatnonzero(ok)
    qi, ei = index.seeds.lookup(grams[pos])
    if not len(qi):
        return []
    hits = sorted(zip(index.seeds.a[ei].tolist(), pos[qi].tolist(), index.seeds.b[ei].tolist()))
    row_words: dict[int, tuple[int, list[int]]] = {}  # row -> (first position, its word ids)
    text_words: dict[int, list[int]] = {}
    text_spans: dict[int, list[tuple[int, int]]] = {}
    covered: dict[tuple[int, int], int] = {}  # (text, diagonal) -> end of the last run found on it
    best: dict[tuple[int, int], tuple[int, int, int]] = {}  # (row, text) -> longest core (row-relative)
    for t, i, j in hits:
        if covered.get((t, i - j), -1) >= i + n:
            continue  # inside a run already extended
        row = int(batch.row[i])
        if row not in row_words:
            lo, hi = int(batch.row_start[row]), int(batch.row_end[row])
            row_words[row] = (lo, batch.ids[lo:hi].tolist())
        offset, words = row_words[row]
        tw = text_words.get(t)
        if tw is None:
            tw = text_words[t] = index.text_ids[t].tolist()
            text_spans[t] = [tuple(span) for span in index.rare_spans[t].tolist()]
        a, b = i - offset, j
        while a > 0 and b > 0 and words[a - 1] == tw[b - 1]:
            a, b = a - 1, b - 1
        e, f = i - offset + n, j + n
        while e < len(words) and f < len(tw) and words[e] == tw[f]:
            e, f = e + 1, f + 1
        if words[a:e] != tw[b:f]:
            continue  # a hash collision, not a shared run
        covered[t, i - j] = e + offset
        # Measure the run's core: template words at its ends (a shared instruction,
        # a function catalogue, "how many ... are there now") say nothing about copying.
        inside = [(s, x) for s, x in text_spans[t] if s >= b and x <= f]
        if not inside:
            continue
        core = (a + min(s for s, _ in inside) - b, a + max(x for _, x in inside) - b)
        if core[1] - core[0] < n:
            continue
        key = (row, t)
        if key not in best or core[1] - core[0] > best[key][1] - best[key][0]:
            best[key] = (core[0], core[1], offset)
    return [
        _finding(
            index,
            batch,
            row,
            t,
            kind="ngram",
            verdict="fail" if e - a >= cfg.ngram_fail else "flag",
            words=e - a,
            evidence=_span(index, row_words[row][1][a:e]),
        )
        for (row, t), (a, e, _) in best.items()
    ]


def _row_shingles(
    index: ContaminationIndex, cfg: ContaminationConfig, batch: Batch, rows: list[int]
) -> dict[int, dict[int, set[int]]]:
    """Non-template shingles of each of `rows`, per clause, computed for all rows at once."""
    start, end = batch.row_start[rows], batch.row_end[rows]
    pos = ranges(start, end)
    values = batch.values[pos]
    ids = batch.ids[pos]
    # Words outside the index vocabulary still count in a window's shingle set (they
    # make it less similar); each keeps its own token hash as its value.
    unknown = np.flatnonzero(ids == UNKNOWN)
    values[unknown] = batch.tokens.hashes(batch.token_pos[pos[unknown]]) | np.uint64(1)
    # Rows never share a clause number, so shingles of the concatenation are those of
    # each row.
    clause = batch.clause[pos]
    hashes, starts, _ = clause_shingles(values, clause, ids == ROW_ID, cfg.shingle_words)
    keep = ~index.template.contains(hashes)
    starts = starts[keep]
    per_row: dict[int, dict[int, set[int]]] = {row: {} for row in rows}
    for h, c, row in zip(hashes[keep].tolist(), clause[starts].tolist(), batch.row[pos[starts]].tolist()):
        clauses = per_row[row]
        if c in clauses:
            clauses[c].add(h)
        else:
            clauses[c] = {h}
    return per_row


def near_duplicate_matches(
    index: ContaminationIndex,
    cfg: ContaminationConfig,
    batch: Batch,
    shingles: np.ndarray,
    starts: np.ndarray,
) -> list[ContaminationFinding]:
    """Method 3: a window of a row whose rare shingles are a near-duplicate of a text's.

    Candidates come from prefix keys (see _index), then a count filter, vectorised: a
    window with Jaccard >= t against a text's `s` rare shingles contains at least
    `ceil(t*s)` of them, and so does the row around it; rows below that count cannot
    hold a near-duplicate and are skipped. Neither step drops a true near-duplicate.
    For the rest, the window is the run of clauses holding shared rare shingles, and a
    MinHash of its non-template shingles is compared with every text that the LSH
    returns for it and with the candidate text itself.
    """
    qi, ei = index.prefix.lookup(shingles)
    if not len(qi):
        return []
    mask31 = (1 << 31) - 1
    pairs = np.unique((batch.row[starts[qi]] << 31) | index.prefix.a[ei])  # rows and texts fit in 31 bits
    rows, texts = pairs >> 31, pairs & mask31
    # Count filter, vectorised: for each candidate (row, text), how many of the text's
    # rare shingles the row holds. The distinct rare shingles of the candidate rows are
    # looked up in the rare-shingle postings (shingle -> every text holding it), and the
    # hits on candidate pairs are counted.
    shingle_rows = batch.row[starts]
    candidate_row = np.zeros(len(batch.row_start), dtype=bool)
    candidate_row[rows] = True
    sel = np.flatnonzero(candidate_row[shingle_rows])
    sel = sel[index.rare.contains(shingles[sel])]
    h, r = shingles[sel], shingle_rows[sel]
    order = np.lexsort((h, r))
    h, r = h[order], r[order]
    distinct = np.concatenate(([True], (h[1:] != h[:-1]) | (r[1:] != r[:-1]))) if len(h) else np.zeros(0, dtype=bool)
    h, r = h[distinct], r[distinct]
    qi, ei = index.rare.lookup(h)
    hit_pairs = (r[qi] << 31) | index.rare.a[ei]
    at = np.minimum(np.searchsorted(pairs, hit_pairs), len(pairs) - 1)
    on_pair = pairs[at] == hit_pairs
    counts = np.bincount(at[on_pair], minlength=len(pairs))
    enough = counts >= index.need[texts]
    by_row: dict[int, list[int]] = {}
    for row, t in zip(rows[enough].tolist(), texts[enough].tolist()):
        by_row.setdefault(row, []).append(t)
    findings: list[ContaminationFinding] = []
    shingles_of = _row_shingles(index, cfg, batch, sorted(by_row))
    for row, candidates in sorted(by_row.items()):
        per_clause = shingles_of[row]
        positions = np.arange(batch.row_start[row], batch.row_end[row])
        clause = batch.clause[positions]
        windows: dict[tuple[int, int], object] = {}
        reported: set[int] = set()
        for t in sorted(candidates):
            own = index.text_shingles[t]
            hit = [c for c, hs in per_clause.items() if not hs.isdisjoint(own)]
            one_clause = len(hit) < cfg.near_dup_min_clauses
            if not hit or (one_clause and len(own) < cfg.near_dup_one_clause_min_shingles):
                continue
            lo, hi = min(hit), max(hit)
            window = set().union(*(hs for c, hs in per_clause.items() if lo <= c <= hi))
            # MinHash and LSH cost about a millisecond; skip windows whose exact Jaccard
            # is far below the threshold (the margin is over five standard deviations of
            # a 128-permutation estimate, so no estimate above the threshold is lost).
            if len(window & own) < (cfg.near_dup_threshold - _MARGIN) * len(window | own):
                continue
            if (lo, hi) not in windows:
                hashes = np.fromiter(window, dtype=np.uint64, count=len(window))
                windows[lo, hi] = lean(signatures(hashes, np.zeros(len(hashes), dtype=np.int64), 1, cfg)[0], cfg)
            mh = windows[lo, hi]
            for other in sorted({t, *index.lsh.query(mh)} - reported):
                target = index.minhashes[other]
                jaccard = float(mh.jaccard(target)) if target is not None else 0.0
                if jaccard < cfg.near_dup_threshold:
                    continue
                reported.add(other)
                in_window = positions[(clause >= lo) & (clause <= hi)]
                evidence = " ".join(batch.tokens.text(int(p)) for p in batch.token_pos[in_window])[:_EVIDENCE_CHARS]
                findings.append(
                    _finding(
                        index,
                        batch,
                        row,
                        other,
                        kind="near_duplicate",
                        verdict="flag" if one_clause else cfg.near_dup_verdict,
                        words=len(in_window),
                        jaccard=round(jaccard, 4),
                        evidence=evidence,
                    )
                )
    return findings
