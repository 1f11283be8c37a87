"""The three methods, each turning hash hits in a batch into verified findings."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import chain
from typing import TYPE_CHECKING, Literal

import numpy as np

from ._config import ContaminationConfig
from ._hashing import UNKNOWN, clause_shingles, direct_span_hashes, window_hashes, window_ok
from ._index import ContaminationIndex
from ._minhash import lean, signatures
from ._normalise import ranges
from ._report import ContaminationFinding, MatchKind

if TYPE_CHECKING:
    from ._batch import Batch

__all__ = ["exact_matches", "near_duplicate_matches", "ngram_matches"]

_EVIDENCE_CHARS = 300
_MARGIN = 0.2


def _finding(
    index: ContaminationIndex,
    batch: Batch,
    row: int,
    text: int,
    last_row: int | None = None,
    *,
    kind: MatchKind,
    verdict: Literal["fail", "flag"],
    words: int,
    evidence: str,
    jaccard: float | None = None,
) -> ContaminationFinding:
    item = index.items[int(index.text_item[text])]
    return ContaminationFinding(
        row=batch.first_row + row,
        last_row=None if last_row is None or last_row == row else batch.first_row + last_row,
        split=item.split,
        sample_id=item.sample_id,
        text_kind=index.text_kind[text],
        kind=kind,
        verdict=verdict,
        words=words,
        jaccard=jaccard,
        evidence=evidence,
    )


def _span(index: ContaminationIndex, ids: list[int]) -> str:
    return " ".join(index.words[i] for i in ids)[:_EVIDENCE_CHARS]


def exact_matches(
    index: ContaminationIndex, batch: Batch, cache: dict[int, tuple[np.ndarray, np.ndarray]]
) -> list[ContaminationFinding]:
    """Method 1: a protected text, normalised, appears whole inside a row."""
    found: dict[tuple[int, int], ContaminationFinding] = {}
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
        same = direct_span_hashes(batch.values, start, length) == index.text_hash[texts]
        for i, t in zip(start[same].tolist(), texts[same].tolist()):
            text = index.text_ids[t]
            row = int(batch.row[i])
            if (row, t) in found or not np.array_equal(batch.ids[i : i + len(text)], text):
                continue
            last = int(batch.row[i + len(text) - 1])  # the rows are one stream: a copy may span several
            found[row, t] = _finding(
                index,
                batch,
                row,
                t,
                last,
                kind="exact",
                verdict="fail",
                words=len(text),
                evidence=_span(index, text.tolist()),
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
    t, i, j = index.seeds.a[ei], pos[qi], index.seeds.b[ei]
    order = np.lexsort((j, i, t))  # by text, then position (the order runs are met in)
    t, i, j = t[order], i[order], j[order]
    ids, flat = batch.ids, index.flat_text_ids  # texts in `flat` are fenced by -1, never a word id
    # Seeds are hash hits: keep those whose words match, then extend every run word by
    # word, all hits at once (a run of k words takes k passes over the hits still growing).
    a, b = i.copy(), index.text_offset[t] + j
    good = np.ones(len(t), dtype=bool)
    for k in range(n):
        good &= ids[i + k] == flat[b + k]
    # Seeds on one diagonal whose windows overlap or touch lie in one run: extend only the
    # first of each such chain (a copied text holds a seed at nearly every word).
    verified = np.flatnonzero(good)
    diagonal = i[verified] - j[verified]
    chain = np.lexsort((i[verified], diagonal, t[verified]))
    tc, dc, ic = t[verified][chain], diagonal[chain], i[verified][chain]
    opens = np.ones(len(chain), dtype=bool)
    opens[1:] = (tc[1:] != tc[:-1]) | (dc[1:] != dc[:-1]) | (ic[1:] > ic[:-1] + n)
    heads = np.sort(verified[chain[opens]])  # back in (text, position) order
    # Runs extend across row boundaries (rows are one stream), up to the batch's ends.
    active = heads
    while len(active):
        active = active[a[active] > 0]
        active = active[ids[a[active] - 1] == flat[b[active] - 1]]
        a[active] -= 1
        b[active] -= 1
    e, f = i + n, index.text_offset[t] + j + n
    active = heads
    while len(active):
        active = active[e[active] < len(ids)]
        active = active[ids[e[active]] == flat[f[active]]]
        e[active] += 1
        f[active] += 1
    b -= index.text_offset[t]
    f -= index.text_offset[t]
    text_spans: dict[int, tuple[list[int], list[int], list[int], list[int]]] = {}
    seen: set[tuple[int, int, int]] = set()
    best: dict[tuple[int, int], tuple[int, int]] = {}  # (row, text) -> longest core (batch positions)
    for t_, a_, b_, f_ in zip(t[heads].tolist(), a[heads].tolist(), b[heads].tolist(), f[heads].tolist()):
        if (t_, a_, b_) in seen:
            continue  # the same run, met from another seed inside it
        seen.add((t_, a_, b_))
        spans = text_spans.get(t_)
        if spans is None:
            by_start, by_end = index.rare_spans[t_], index.rare_spans_by_end[t_]
            spans = text_spans[t_] = (
                by_start[:, 0].tolist(),
                by_start[:, 1].tolist(),
                by_end[:, 1].tolist(),
                by_end[:, 0].tolist(),
            )
        # Measure the run's core: template words at its ends (a shared instruction,
        # a function catalogue, "how many ... are there now") say nothing about copying.
        # The core runs from the first rare shingle inside [b, f) (the first by start
        # with start >= b that ends by f) to the last (by end, ending by f, starting >= b).
        start_s, start_x, end_x, end_s = spans
        k = bisect_left(start_s, b_)
        while k < len(start_s) and start_s[k] < f_ and start_x[k] > f_:
            k += 1
        if k == len(start_s) or start_s[k] >= f_:
            continue  # no rare shingle inside the run
        m = bisect_right(end_x, f_) - 1
        while end_s[m] < b_:  # stops: the shingle found above qualifies
            m -= 1
        core = (a_ + start_s[k] - b_, a_ + end_x[m] - b_)
        if core[1] - core[0] < n:
            continue
        key = (int(batch.row[core[0]]), t_)  # the row where the core starts
        if key not in best or core[1] - core[0] > best[key][1] - best[key][0]:
            best[key] = core
    return [
        _finding(
            index,
            batch,
            r,
            t_,
            int(batch.row[e_ - 1]),
            kind="ngram",
            verdict="fail" if e_ - a_ >= cfg.ngram_fail else "flag",
            words=e_ - a_,
            evidence=_span(index, ids[a_:e_].tolist()),
        )
        for (r, t_), (a_, e_) in best.items()
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
    hashes, starts, _ = clause_shingles(values, clause, np.zeros(len(ids), dtype=bool), cfg.shingle_words, ends=False)
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
    pairs = np.sort((batch.row[starts[qi]] << 31) | index.prefix.a[ei])  # rows and texts fit in 31 bits
    pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
    rows, texts = pairs >> 31, pairs & mask31
    # Count filter, vectorised: for each candidate (row, text), how many of the text's
    # rare shingles the row holds. The distinct rare shingles of the candidate rows are
    # looked up in the rare-shingle postings (shingle -> every text holding it), and the
    # hits on candidate pairs are counted.
    shingle_rows = batch.row[starts]
    candidate_row = np.zeros(len(batch.row_start), dtype=bool)
    candidate_row[rows] = True
    sel = np.flatnonzero(candidate_row[shingle_rows])
    found, first = index.rare.find(shingles[sel])  # `first` identifies the shingle
    # Distinct (row, shingle) pairs, then every text holding each shingle.
    held = np.sort((shingle_rows[sel[found]] << 32) | first)
    held = held[np.concatenate(([True], held[1:] != held[:-1]))] if len(held) else held
    at, entries = index.rare.expand(held & ((1 << 32) - 1))
    hit_pairs = np.sort(((held[at] >> 32) << 31) | index.rare.a[entries])
    counts = np.searchsorted(hit_pairs, pairs, side="right") - np.searchsorted(hit_pairs, pairs, side="left")
    enough = counts >= index.need[texts]
    by_row: dict[int, list[int]] = {}
    for row, t in zip(rows[enough].tolist(), texts[enough].tolist()):
        by_row.setdefault(row, []).append(t)
    # Windows to compare: the run of clauses holding shared rare shingles, per candidate.
    shingles_of = _row_shingles(index, cfg, batch, sorted(by_row))
    plans: list[tuple[int, int, int, int, bool, int]] = []  # row, text, window clauses, one clause, window
    window_sets: list[set[int]] = []
    window_of: dict[tuple[int, int, int], int] = {}
    for row, candidates in sorted(by_row.items()):
        per_clause = shingles_of[row]
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
            if (row, lo, hi) not in window_of:
                window_of[row, lo, hi] = len(window_sets)
                window_sets.append(window)
            plans.append((row, t, lo, hi, one_clause, window_of[row, lo, hi]))
    if not plans:
        return []
    # MinHashes of all windows in one call.
    sizes = [len(w) for w in window_sets]
    hashes = np.fromiter(chain.from_iterable(window_sets), dtype=np.uint64, count=sum(sizes))
    sigs = signatures(hashes, np.repeat(np.arange(len(window_sets)), sizes), len(window_sets), cfg)
    minhashes = [lean(sig, cfg) for sig in sigs]
    findings: list[ContaminationFinding] = []
    reported: set[int] = set()
    current = -1
    for row, t, lo, hi, one_clause, w in plans:
        if row != current:
            current, reported = row, set()
            positions = np.arange(batch.row_start[row], batch.row_end[row])
            clause = batch.clause[positions]
        mh = minhashes[w]
        for other in sorted({t, *index.lsh.query(mh)} - reported):
            target = index.minhashes[other]
            jaccard = float(mh.jaccard(target)) if target is not None else 0.0
            if jaccard < cfg.near_dup_threshold:
                continue
            reported.add(other)
            in_window = positions[(clause >= lo) & (clause <= hi)]
            evidence = batch.tokens.join(batch.token_pos[in_window])[:_EVIDENCE_CHARS]
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
