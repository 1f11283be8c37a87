"""RFC 6962 hashing against the Certificate Transparency known answers, and proof properties."""

from __future__ import annotations

import hashlib

import pytest

from rsi_master.ledger import (
    EMPTY_ROOT,
    Frontier,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root,
    verify_consistency,
    verify_inclusion,
)

# Certificate Transparency test vectors (the leaves and tree heads every RFC 6962
# implementation is checked against).
CT_DATA = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"]
CT_LEAVES = [leaf_hash(bytes.fromhex(h)) for h in CT_DATA]
CT_ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
CT_INCLUSION = [
    (
        0,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        [
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
]
CT_CONSISTENCY = [
    (1, 1, []),
    (
        2,
        8,
        [
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        [
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
]


def test_prefixes_are_rfc6962():
    assert leaf_hash(b"x") == hashlib.sha256(b"\x00x").digest()
    assert node_hash(b"a" * 32, b"b" * 32) == hashlib.sha256(b"\x01" + b"a" * 32 + b"b" * 32).digest()
    assert EMPTY_ROOT.hex() == CT_ROOTS[0]


@pytest.mark.parametrize("n", range(9))
def test_tree_heads_match_ct_vectors(n):
    assert root(CT_LEAVES[:n]).hex() == CT_ROOTS[n]


@pytest.mark.parametrize("index,size,expected", CT_INCLUSION)
def test_inclusion_proofs_match_ct_vectors(index, size, expected):
    proof = inclusion_proof(CT_LEAVES, index, size)
    assert [p.hex() for p in proof] == expected
    assert verify_inclusion(CT_LEAVES[index], index, size, proof, bytes.fromhex(CT_ROOTS[size]))


@pytest.mark.parametrize("first,second,expected", CT_CONSISTENCY)
def test_consistency_proofs_match_ct_vectors(first, second, expected):
    proof = consistency_proof(CT_LEAVES, first, second)
    assert [p.hex() for p in proof] == expected
    assert verify_consistency(first, second, bytes.fromhex(CT_ROOTS[first]), bytes.fromhex(CT_ROOTS[second]), proof)


LEAVES = [leaf_hash(i.to_bytes(2, "big")) for i in range(33)]
ROOTS = [root(LEAVES[:n]) for n in range(len(LEAVES) + 1)]


def test_frontier_matches_recursive_definition():
    f = Frontier()
    for n, leaf in enumerate(LEAVES, start=1):
        f.append(leaf)
        assert f.size == n and f.root() == ROOTS[n]


def test_every_inclusion_proof_verifies_and_mangled_ones_fail():
    for n in range(1, len(LEAVES) + 1):
        for i in range(n):
            proof = inclusion_proof(LEAVES, i, n)
            assert verify_inclusion(LEAVES[i], i, n, proof, ROOTS[n])
            assert not verify_inclusion(LEAVES[i], i, n, [*proof, b"\x00" * 32], ROOTS[n])
            if proof:
                assert not verify_inclusion(LEAVES[i], i, n, proof[:-1], ROOTS[n])
                bad = [bytes([proof[0][0] ^ 1]) + proof[0][1:], *proof[1:]]
                assert not verify_inclusion(LEAVES[i], i, n, bad, ROOTS[n])
            other = (i + 1) % n
            if n > 1:
                assert not verify_inclusion(LEAVES[other], i, n, proof, ROOTS[n])


def test_every_consistency_proof_verifies_and_mangled_ones_fail():
    cache: dict = {}
    for n in range(len(LEAVES) + 1):
        for m in range(n + 1):
            proof = consistency_proof(LEAVES, m, n, cache)
            assert verify_consistency(m, n, ROOTS[m], ROOTS[n], proof)
            if 0 < m < n:
                assert not verify_consistency(m, n, ROOTS[m], ROOTS[n], proof[:-1])
                assert not verify_consistency(m, n, ROOTS[m], ROOTS[n], [*proof, b"\x00" * 32])
                flipped = [bytes([proof[0][0] ^ 128]) + proof[0][1:], *proof[1:]]
                assert not verify_consistency(m, n, ROOTS[m], ROOTS[n], flipped)
                # A different older tree is not a prefix of this one.
                assert not verify_consistency(m, n, ROOTS[m - 1] if m > 1 else b"\1" * 32, ROOTS[n], proof)


def test_bad_proof_requests_raise():
    with pytest.raises(ValueError):
        inclusion_proof(CT_LEAVES, 8, 8)
    with pytest.raises(ValueError):
        consistency_proof(CT_LEAVES, 5, 3)
