"""The contamination index: every protected text hashed once, queried many times.

Template shingles come first. The tasks render every item through a fixed template
and share phrasings ("how many shells are there now", "in which region does", a
catalogue of function signatures, single digits), so clean generated rows share 8-word
spans with evaluation items all the time. A shingle (3 or 4 words inside one clause)
found in `boilerplate_min_items` or more distinct protected items cannot identify any
one of them: it is *template*. Everything else is *rare*: numbers, names, facts, the
request sentence. Rare shingles carry the evidence in methods 2 and 3; the exact
method ignores the distinction, so an item made only of template text is still caught
when it is copied whole.

Structures, one per method, after the vocabulary (word ids are assigned from the token
hashes of `tokenise`; `word_table` gives the same ids for the token keys of `scan`):

* **anchors** (exact match): one n-gram per protected text, its lowest-frequency one,
  or the whole text when it is shorter than the n-gram length, plus a hash of the whole
  text. A row containing the text contains its anchor; a hit is confirmed by the
  whole-span hash, then by the words.
* **seeds** (n-gram overlap): every `ngram_flag`-gram that starts where a rare shingle
  of its text starts. A run counts by its core (first to last rare shingle inside it),
  so every qualifying run holds such a seed; a hit is extended word by word against
  the texts' word ids (`flat_text_ids`), and the core is found in the text's rare spans.
* **prefix keys, rare-shingle lists and MinHashes** (near-duplicates): for each text its
  `s - ceil(t*s) + 1` rarest shingles (`s` rare shingles, threshold `t`). A window with
  Jaccard >= t shares at least `t*s` of them, so by pigeonhole it holds a prefix key:
  the prefilter cannot drop a true near-duplicate (prefix filtering, Chaudhuri et al.
  2006). The rare-shingle postings (`rare`: shingle -> every text holding it) serve
  the count filter; a datasketch MinHash of each text's rare shingles sits in a
  `MinHashLSH`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._characters import CharIndex, build_characters
from ._config import ContaminationConfig
from ._hashing import UNKNOWN, clause_shingles, id_values, prefix_sums, span_hashes, window_hashes, window_ok
from ._items import ProtectedItem
from ._keys import token_keys
from ._minhash import lean, lsh_params, signatures
from ._normalise import CLAUSE, CLAUSE_HASH, MARKER_KEYS, ROW, ROW_HASH, ranges, tokenise
from ._table import HashTable, WordTable, distinct_pairs, owner_counts

__all__ = ["CLAUSE_ID", "ROW_ID", "ContaminationIndex", "build_index"]

ROW_ID = 1
CLAUSE_ID = 2
_FIRST_WORD_ID = 3


@dataclass
class ContaminationIndex:
    """Protected texts of a task, hashed for the three contamination methods.

    Picklable; `digest` identifies the protected texts and the config.
    """

    config: ContaminationConfig
    items: tuple[ProtectedItem, ...]
    digest: str
    vocab: tuple[np.ndarray, np.ndarray]  # sorted token hashes, word id of each
    word_table: WordTable  # token key (see _keys.token_keys) -> word id, for `scan`
    words: list[str]  # id -> word
    values: np.ndarray  # id -> random 64-bit value
    text_item: np.ndarray  # text -> item index
    text_kind: tuple[str, ...]
    text_ids: tuple[np.ndarray, ...]  # text -> word ids (no clause markers)
    flat_text_ids: np.ndarray  # every text's word ids, each text between two -1 fences (int32)
    text_offset: np.ndarray  # text -> position of its first word in flat_text_ids
    text_length: np.ndarray  # text -> words
    text_hash: np.ndarray  # text -> span hash of all its words (see _hashing.span_hashes)
    anchors: dict[int, HashTable]  # anchor length -> (hash, text, offset of the anchor in the text)
    seeds: HashTable  # (hash, text, position in the text)
    template: HashTable  # template shingles (in boilerplate_min_items or more items)
    prefix: HashTable  # (prefix-key shingle, text, 0)
    rare_hashes: np.ndarray  # distinct rare shingles of every text, grouped by text
    rare: HashTable  # the same as postings: (rare shingle, text, 0), for the count filter
    rare_offsets: np.ndarray  # text -> its slice of rare_hashes
    need: np.ndarray  # text -> rare shingles a row must share with it to be a near-duplicate candidate
    rare_spans: tuple[np.ndarray, ...]  # text -> (start, end) word positions of its rare shingles, by start
    rare_spans_by_end: tuple[np.ndarray, ...]  # the same sorted by end
    text_shingles: tuple[frozenset[int], ...]  # text -> its rare shingles
    minhashes: tuple = field(repr=False)  # LeanMinHash per text (None when it has no shingle)
    lsh: Any = field(repr=False)  # datasketch MinHashLSH keyed by text index (datasketch has no types)
    characters: CharIndex = field(repr=False)  # the character reading (see _characters)

    def ids(self, hashes: np.ndarray) -> np.ndarray:
        """Word ids of token hashes (UNKNOWN for words in no protected text)."""
        return _ids(self.vocab, hashes)

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_texts(self) -> int:
        return len(self.text_kind)


def index_digest(items: Iterable[ProtectedItem], config: ContaminationConfig) -> str:
    """SHA-256 of the canonical JSON of the config and the protected texts."""
    payload = {
        "config": config.model_dump(mode="json"),
        "items": [[it.split, it.sample_id, [list(t) for t in it.texts]] for it in items],
    }
    data = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def _document_frequency(hashes: np.ndarray, owners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct hashes and, for each, the number of distinct owners (items) holding it."""
    if not len(hashes):
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    return owner_counts(np.asarray(hashes, dtype=np.uint64), np.asarray(owners, dtype=np.int64))


def _group(owner: np.ndarray, n: int) -> list[np.ndarray]:
    """Indices of `owner` per owner value 0..n-1."""
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(n + 1))
    return [order[bounds[i] : bounds[i + 1]] for i in range(n)]


def _frequency_of(hashes: np.ndarray, table: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    unique_h, counts = table
    return counts[np.searchsorted(unique_h, hashes)]


@dataclass
class _Texts:
    """Every indexed text concatenated, separated by a barrier word (ROW_ID)."""

    item: list[int]
    kind: list[str]
    ids: list[np.ndarray]
    flat_ids: np.ndarray
    flat_clause: np.ndarray
    flat_text: np.ndarray
    starts: np.ndarray


def _tokenise(
    items: tuple[ProtectedItem, ...], cfg: ContaminationConfig
) -> tuple[_Texts, tuple[np.ndarray, np.ndarray], list[str], WordTable]:
    """Tokenise every text in one pass; returns the texts, the vocabulary (sorted token
    hashes, word id of each), the words and the token-key table of the same ids."""
    owners = [(i, kind) for i, item in enumerate(items) for kind, _ in item.texts]
    joined = ROW.join(text.replace(ROW, " ") for item in items for _, text in item.texts)
    tok = tokenise(joined)
    is_row = tok.hashes == ROW_HASH
    is_clause = tok.hashes == CLAUSE_HASH
    words_mask = ~(is_row | is_clause)
    vocab_hashes, first = np.unique(tok.hashes[words_mask], return_index=True)
    word_positions = np.flatnonzero(words_mask)[first]
    words = ["", ROW, CLAUSE] + [tok.text(int(p)) for p in word_positions]
    hashes = np.concatenate(([ROW_HASH, CLAUSE_HASH], vocab_hashes)).astype(np.uint64)
    order = np.argsort(hashes)
    vocab = (hashes[order], (np.arange(len(hashes)) + 1)[order])  # ids: ROW 1, CLAUSE 2, words from 3
    word_keys = token_keys(
        np.frombuffer(tok.buffer, dtype=np.uint8), tok.starts[word_positions], tok.ends[word_positions]
    )
    marker_keys = [
        (key, marker_id) for marker_id, marker in ((ROW_ID, ROW), (CLAUSE_ID, CLAUSE)) for key in MARKER_KEYS[marker]
    ]
    word_table = WordTable.build(
        np.concatenate((np.asarray([k for k, _ in marker_keys], dtype=np.uint64), word_keys)),
        np.concatenate(([i for _, i in marker_keys], np.arange(len(word_keys)) + _FIRST_WORD_ID)),
    )
    all_ids = _ids(vocab, tok.hashes)
    text_of = np.cumsum(is_row)  # text number of each token (the separator starts the next text)
    clause_of = np.cumsum(is_row | is_clause)
    bounds = np.searchsorted(text_of, np.arange(len(owners) + 1))
    item_of: list[int] = []
    kinds: list[str] = []
    pieces: list[np.ndarray] = []
    clause_pieces: list[np.ndarray] = []
    # The texts kept so far of the current item (an item's texts are consecutive).
    same_item: list[np.ndarray] = []
    for k, (item_index, kind) in enumerate(owners):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        sel = slice(lo + (k > 0), hi)  # skip the separator that opens every text after the first
        keep = ~is_clause[sel]
        ids = all_ids[sel][keep]
        if len(ids) < cfg.min_exact_words:
            continue  # too short to be evidence of anything
        if not item_of or item_of[-1] != item_index:
            same_item = []
        elif any(len(p) == len(ids) and np.array_equal(p, ids) for p in same_item):
            continue  # same words as another text of the item
        same_item.append(ids)
        item_of.append(item_index)
        kinds.append(kind)
        pieces.append(ids)
        clause_pieces.append(clause_of[sel][keep])
    lengths = np.asarray([len(p) + 1 for p in pieces], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64) if len(pieces) else np.zeros(0, np.int64)
    flat = np.concatenate([np.append(p, ROW_ID) for p in pieces]) if pieces else np.zeros(0, np.int64)
    # Each text's clauses are distinct from every other text's; the barrier gets its own.
    flat_clause = np.concatenate([np.append(c, c[-1] + 1) for c in clause_pieces]) if pieces else np.zeros(0, np.int64)
    flat_text = np.repeat(np.arange(len(pieces)), lengths)
    texts = _Texts(item_of, kinds, pieces, flat, flat_clause, flat_text, starts)
    return texts, vocab, words, word_table


def _ids(vocab: tuple[np.ndarray, np.ndarray], hashes: np.ndarray) -> np.ndarray:
    """Word ids of token hashes (UNKNOWN for words in no protected text)."""
    keys, ids = vocab
    if not len(keys):
        return np.zeros(len(hashes), dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, hashes), len(keys) - 1)
    return np.where(keys[at] == hashes, ids[at], UNKNOWN)


def build_index(items: Iterable[ProtectedItem], config: ContaminationConfig | None = None) -> ContaminationIndex:
    """Index every text of every protected item (see the module docstring for the layout)."""
    cfg = config or ContaminationConfig()
    items = tuple(items)
    n = cfg.ngram_flag
    texts, vocab, words, word_table = _tokenise(items, cfg)
    values = id_values(len(words))
    text_item = np.asarray(texts.item, dtype=np.int64)
    flat_values = values[texts.flat_ids]
    bad = texts.flat_ids == ROW_ID

    # Shingles: document frequency splits them into template and rare ones.
    sh_all, sh_pos, sh_end = clause_shingles(flat_values, texts.flat_clause, bad, cfg.shingle_words)
    assert sh_end is not None  # ends are asked for (the default)
    sh_text_all = texts.flat_text[sh_pos]
    shingle_df = _document_frequency(sh_all, text_item[sh_text_all])
    sh_freq_all = _frequency_of(sh_all, shingle_df)
    rare_all = sh_freq_all < cfg.boilerplate_min_items
    template_h = np.unique(sh_all[~rare_all])
    template = HashTable.build(template_h, np.zeros(len(template_h), np.int64), np.zeros(len(template_h), np.int64))
    rare_pos, rare_end = sh_pos[rare_all], sh_end[rare_all]
    # Per text, (start, end) of its rare shingles sorted by start, and sorted by end: the
    # n-gram method finds the first and last one inside a run with two bisections.
    rare_text = sh_text_all[rare_all]
    rare_start, rare_stop = rare_pos - texts.starts[rare_text], rare_end - texts.starts[rare_text]
    span_bounds = np.searchsorted(np.sort(rare_text), np.arange(len(texts.ids) + 1)).tolist()
    rare_spans, rare_spans_by_end = (
        tuple(
            np.stack([rare_start[o], rare_stop[o]], axis=1)
            for o in (order[lo:hi] for lo, hi in itertools.pairwise(span_bounds))
        )
        for order in (np.lexsort((rare_stop, rare_start, rare_text)), np.lexsort((rare_start, rare_stop, rare_text)))
    )

    # n-grams: a seed is a non-template n-gram that covers a rare shingle of its text.
    pos = np.flatnonzero(window_ok(bad, n))
    grams = window_hashes(flat_values, n)[pos]
    gram_text = texts.flat_text[pos]
    freq = _frequency_of(grams, _document_frequency(grams, text_item[gram_text]))
    # A run counts by its core, which starts where a rare shingle starts (see
    # _matching.ngram_matches); so every qualifying run holds an n-gram that starts at
    # a rare shingle, and only those n-grams are seeds. They are never template n-grams:
    # an n-gram is in no more items than the rare shingle inside it.
    starts_rare = np.zeros(len(flat_values), dtype=bool)
    starts_rare[rare_pos] = True
    seed = starts_rare[pos]
    seeds = HashTable.build(grams[seed], gram_text[seed], (pos - texts.starts[gram_text])[seed])
    # Anchor of a text: its lowest-frequency n-gram (first on ties); np.lexsort sorts by
    # the last key first, so this orders by text, then frequency, then position.
    order = np.lexsort((pos, freq, gram_text))
    first = order[np.flatnonzero(np.concatenate(([True], np.diff(gram_text[order]) != 0)))] if len(order) else order
    anchor_parts: dict[int, tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]] = {}
    anchor_parts[n] = ([grams[first]], [gram_text[first]], [pos[first] - texts.starts[gram_text[first]]])
    has_anchor = np.zeros(len(texts.ids), dtype=bool)
    has_anchor[gram_text[first]] = True
    for t in np.flatnonzero(~has_anchor).tolist():  # shorter than the n-gram: the whole text is the anchor
        ids = texts.ids[t]
        hs, ts, offs = anchor_parts.setdefault(len(ids), ([], [], []))
        hs.append(window_hashes(values[ids], len(ids)))
        ts.append(np.asarray([t]))
        offs.append(np.asarray([0]))
    anchors = {
        length: HashTable.build(np.concatenate(hs), np.concatenate(ts), np.concatenate(offs))
        for length, (hs, ts, offs) in sorted(anchor_parts.items())
    }
    flat_prefix = prefix_sums(flat_values)
    text_hash = span_hashes(flat_prefix, texts.starts, np.asarray([len(i) for i in texts.ids], dtype=np.int64))

    # Near-duplicates work on each text's distinct rare shingles only: template shingles
    # would make every row of the same template look alike.
    n_texts = len(texts.ids)
    sh_text, sh_signed = distinct_pairs(sh_text_all[rare_all].astype(np.int64), sh_all[rare_all].view(np.int64))
    sh = sh_signed.view(np.uint64)
    sizes = np.bincount(sh_text, minlength=n_texts)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)  # pairs are sorted by text
    # A window with Jaccard >= t against a text's s rare shingles holds at least t*s of them.
    need = np.ceil(cfg.near_dup_threshold * sizes - 1e-9).astype(np.int64)
    # Two or three rare shingles are too little evidence for a similarity estimate: such
    # texts are left to the exact and n-gram methods (a count no row can reach).
    need[sizes < cfg.near_dup_min_shingles] = np.iinfo(np.int64).max
    # Prefix keys: per text, its s - need + 1 rarest shingles. A row holding `need` of the
    # s shingles holds at least one of any s - need + 1 of them (pigeonhole), so rows
    # without a prefix key cannot be near-duplicates and are never counted.
    freq = _frequency_of(sh, shingle_df)
    order = np.lexsort((sh, freq, sh_text))
    rank = np.empty(len(sh), dtype=np.int64)
    rank[order] = np.arange(len(sh)) - offsets[sh_text[order]]
    eligible = sizes >= cfg.near_dup_min_shingles
    is_key = eligible[sh_text] & (rank < (sizes - need + 1)[sh_text])
    prefix = HashTable.build(sh[is_key], sh_text[is_key], np.zeros(int(is_key.sum()), dtype=np.int64))
    text_shingles = tuple(frozenset(sh[sel].tolist()) for sel in _group(sh_text, n_texts))

    from datasketch import MinHashLSH  # optional extra `search`, imported only when indexing

    sigs = signatures(sh, sh_text, n_texts, cfg)
    lsh = MinHashLSH(threshold=cfg.near_dup_threshold, num_perm=cfg.num_perm, params=lsh_params(cfg))
    minhashes: list[object] = []
    with lsh.insertion_session() as session:
        for t in range(n_texts):
            if not sizes[t]:
                minhashes.append(None)
                continue
            mh = lean(sigs[t], cfg)
            minhashes.append(mh)
            session.insert(t, mh, check_duplication=False)
    text_lengths = np.asarray([len(i) for i in texts.ids], dtype=np.int64)
    text_offset = 1 + np.cumsum(text_lengths + 1) - (text_lengths + 1)
    flat_text_ids = np.full(int((text_lengths + 1).sum()) + 1, -1, dtype=np.int32)
    if len(texts.ids):
        flat_text_ids[ranges(text_offset, text_offset + text_lengths)] = np.concatenate(texts.ids)
    return ContaminationIndex(
        config=cfg,
        items=items,
        digest=index_digest(items, cfg),
        vocab=vocab,
        word_table=word_table,
        words=words,
        values=values,
        text_item=text_item,
        text_kind=tuple(texts.kind),
        text_ids=tuple(texts.ids),
        flat_text_ids=flat_text_ids,
        text_offset=text_offset,
        text_length=np.asarray([len(i) for i in texts.ids], dtype=np.int64),
        text_hash=text_hash,
        anchors=anchors,
        seeds=seeds,
        template=template,
        prefix=prefix,
        rare_hashes=sh,
        rare=HashTable.build(sh, sh_text, np.zeros(len(sh), dtype=np.int64)),
        rare_offsets=offsets,
        need=need,
        rare_spans=rare_spans,
        rare_spans_by_end=rare_spans_by_end,
        text_shingles=text_shingles,
        minhashes=tuple(minhashes),
        lsh=lsh,
        characters=build_characters(
            [dict(items[i].texts)[kind] for i, kind in zip(texts.item, texts.kind)], text_item, cfg
        ),
    )
