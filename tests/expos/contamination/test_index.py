"""The index: digest, persistence, config checks, and MinHash parity with datasketch."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from datasketch import MinHash, MinHashLSH
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from rsi_master.expos.contamination import ContaminationConfig, ProtectedItem, build_index, check, protected_items
from rsi_master.expos.contamination._minhash import identity, lsh_params, signatures
from rsi_master.expos.contamination._table import distinct_pairs, owner_counts
from rsi_master.tasks import get_task

from .helpers import TASKS, task_index

ITEM = ProtectedItem(
    "review",
    "toy/review/0000",
    (
        (
            "prompt",
            "The violet heron crossed seven quiet rivers before dawn, then rested beside an old mill near Farrow.",
        ),
    ),
)


def test_protected_items_cover_every_split_and_text_kind() -> None:
    items = protected_items(get_task("function_calling"))
    assert {item.split for item in items} == {"dev", "review", "final"}
    assert len(items) == 600
    kinds = {kind for item in items for kind, _ in item.texts}
    assert kinds == {"prompt", "question", "reference"}
    # The question is the prompt without the template around it.
    texts = dict(items[0].texts)
    assert texts["prompt"] == get_task("function_calling").render(texts["question"])


def test_digest_tracks_texts_and_config() -> None:
    base = build_index([ITEM])
    assert build_index([ITEM]).digest == base.digest
    assert len(base.digest) == 64
    edited = ProtectedItem(ITEM.split, ITEM.sample_id, (("prompt", ITEM.texts[0][1] + "!"),))
    assert build_index([edited]).digest != base.digest
    assert build_index([ITEM], ContaminationConfig(ngram_fail=14)).digest != base.digest


def test_pickled_index_checks_the_same() -> None:
    index = task_index("knowledge")
    clone = pickle.loads(pickle.dumps(index))
    rows = [item.prompt.upper() for item in get_task("knowledge").eval_items("final")[:5]]
    assert check(clone, rows) == check(index, rows)
    assert clone.digest == index.digest


def test_every_task_index_has_all_structures() -> None:
    for name in TASKS:
        index = task_index(name)
        assert index.n_items == 600
        assert len(index.seeds) > 0 and len(index.prefix) > 0 and index.anchors


def test_signatures_equal_datasketch() -> None:
    config = ContaminationConfig()
    rng = np.random.default_rng(0)
    hashes = rng.integers(0, 2**63, 500, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    owner = rng.integers(0, 4, 500)
    sigs = signatures(hashes, owner, 5, config)
    for i in range(4):
        reference = MinHash(num_perm=config.num_perm, seed=config.minhash_seed, hashfunc=identity, scheme="affine64")
        reference.update_batch(hashes[owner == i].tolist())
        assert np.array_equal(reference.hashvalues, sigs[i])
    assert (sigs[4] == np.iinfo(np.uint64).max).all()  # an empty set


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.85])
def test_the_lsh_bands_are_the_ones_datasketch_picks(threshold) -> None:
    config = ContaminationConfig(near_dup_threshold=threshold)
    lsh = MinHashLSH(threshold=threshold, num_perm=config.num_perm)
    assert lsh_params(config) == (lsh.b, lsh.r)


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(-3, 3)), max_size=40),
    signed=st.booleans(),
)
def test_distinct_pairs_and_owner_counts_equal_numpy_unique(pairs, signed) -> None:
    values = np.asarray([v for v, _ in pairs], dtype=np.uint64)
    values = values.view(np.int64) if signed else values
    owners = np.asarray([o for _, o in pairs], dtype=np.int64)
    a, b = distinct_pairs(values, owners)
    distinct, counts = owner_counts(values, owners)
    want_pairs = sorted(set(zip(values.tolist(), owners.tolist(), strict=True)))
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == want_pairs and a.dtype == values.dtype
    want = np.unique(values, return_counts=False)
    assert distinct.tolist() == want.tolist() and distinct.dtype == values.dtype
    assert counts.tolist() == [len({o for v, o in want_pairs if v == d}) for d in want.tolist()]


def test_config_validation() -> None:
    with pytest.raises(ValidationError):
        ContaminationConfig(ngram_flag=14, ngram_fail=13)
    with pytest.raises(ValidationError):
        ContaminationConfig(shingle_words=(3, 3))
    with pytest.raises(ValidationError):
        ContaminationConfig(unknown_field=1)


def test_check_refuses_a_config_the_index_was_not_built_for() -> None:
    index = build_index([ITEM])
    with pytest.raises(ValueError, match="rebuild"):
        check(index, ["x"], ContaminationConfig(ngram_flag=9))
    with pytest.raises(ValueError, match="rebuild"):
        check(index, ["x"], ContaminationConfig(near_dup_threshold=0.5))
    with pytest.raises(ValueError, match="rebuild"):
        check(index, ["x"], ContaminationConfig(near_dup_min_shingles=4))
    # Verdict thresholds may change without a rebuild.
    report = check(index, ["x"], ContaminationConfig(ngram_fail=20, near_dup_verdict="flag"))
    assert report.config.ngram_fail == 20
