"""BLS keys, proofs of possession, signatures, aggregates and EIP-2537 encodings (protocol.bls).

py_ecc pairings cost ~0.4 s each, so verification is exercised on a handful of cases; the encodings and
error paths need no pairing. Solidity agreement is tested by forge on tests/vectors/bls.json.
"""

from __future__ import annotations

import hashlib

import pytest
from eth_abi import decode as abi_decode
from py_ecc.bls import G2ProofOfPossession
from py_ecc.bls.hash_to_curve import hash_to_G2
from py_ecc.optimized_bls12_381 import field_modulus, normalize

from protocol import bls
from protocol.errors import GradledgerError
from protocol.hashing import keccak256

DISPUTES = "0x5FbDB2315678afecb367f032d93F642f64180aa3"


@pytest.fixture(scope="module")
def keys() -> list[bls.BlsKeyPair]:
    return [bls.compute_key_pair(keccak256(f"test juror {i}".encode())) for i in range(3)]


@pytest.fixture(scope="module")
def message() -> bytes:
    return bls.compute_verdict_message(DISPUTES, 31337, keccak256(b"dispute"), True)


def test_key_pair_is_deterministic_and_matches_py_ecc(keys):
    again = bls.compute_key_pair(keccak256(b"test juror 0"))
    assert again == keys[0]
    assert keys[0].public_key == G2ProofOfPossession.SkToPk(keys[0].secret_key)
    assert len({k.public_key for k in keys}) == 3


def test_key_pair_repr_hides_the_secret(keys):
    assert str(keys[0].secret_key) not in repr(keys[0])


@pytest.mark.parametrize("seed", [b"short", b"", "a string of more than thirty-two characters"])
def test_key_pair_rejects_weak_or_wrong_seeds(seed):
    with pytest.raises(bls.BlsError, match="at least 32 bytes"):
        bls.compute_key_pair(seed)


def test_signature_verifies_and_binds_message_and_key(keys, message):
    signature = bls.compute_signature(keys[0], message)
    assert bls.verify_signature(keys[0].public_key, message, signature)
    other = bls.compute_verdict_message(DISPUTES, 31337, keccak256(b"dispute"), False)
    assert not bls.verify_signature(keys[0].public_key, other, signature)
    assert not bls.verify_signature(keys[1].public_key, message, signature)


def test_aggregate_verifies_only_for_the_signer_set(keys, message):
    signatures = [bls.compute_signature(k, message) for k in keys[:2]]
    aggregate = bls.compute_aggregate_signature(signatures)
    assert bls.verify_aggregate_signature([k.public_key for k in keys[:2]], message, aggregate)
    assert not bls.verify_aggregate_signature([k.public_key for k in keys], message, aggregate)


ACCOUNT = "0x" + "ab" * 20


def test_proof_of_possession_verifies_for_its_key_and_account_only(keys):
    pop = bls.compute_proof_of_possession(keys[1], ACCOUNT)
    assert bls.verify_proof_of_possession(keys[1].public_key, ACCOUNT, pop)
    assert not bls.verify_proof_of_possession(keys[2].public_key, ACCOUNT, pop)
    # a copied proof proves nothing for another account (finding 4 of issue 16)
    assert not bls.verify_proof_of_possession(keys[1].public_key, "0x" + "cd" * 20, pop)
    assert bls.compute_pop_message(ACCOUNT, keys[1].public_key) == bytes.fromhex("ab" * 20) + keys[1].public_key


def test_eip2537_g1_is_x_then_y_padded_to_64_bytes(keys):
    encoded = bls.compute_eip2537_g1(keys[0].public_key)
    assert len(encoded) == bls.G1_ENCODED_BYTES
    x, y = int.from_bytes(encoded[:64], "big"), int.from_bytes(encoded[64:], "big")
    assert encoded[:16] == bytes(16) and encoded[64:80] == bytes(16)
    assert x < field_modulus and y < field_modulus
    assert (y * y - x * x * x - 4) % field_modulus == 0, "not on y^2 = x^3 + 4"
    assert x == int.from_bytes(keys[0].public_key, "big") & ((1 << 381) - 1), "x is the compressed key"


def test_eip2537_g2_puts_the_real_part_first(keys, message):
    signature = bls.compute_signature(keys[0], message)
    encoded = bls.compute_eip2537_g2(signature)
    assert len(encoded) == bls.G2_ENCODED_BYTES
    h = normalize(hash_to_G2(message, bls.BLS_SIG_DST, hashlib.sha256))
    # the same coefficient order for any G2 point: x.c0, x.c1, y.c0, y.c1
    coefficients = [int(c) for c in (*h[0].coeffs, *h[1].coeffs)]
    assert all(0 < c < field_modulus for c in coefficients)
    compressed_x_c1 = int.from_bytes(signature[:48], "big") & ((1 << 381) - 1)
    assert int.from_bytes(encoded[64:128], "big") == compressed_x_c1, "c1 (imaginary) is the second Fp"


def test_aggregate_public_key_matches_pointwise_sum(keys):
    aggregate = bls.compute_aggregate_public_key([k.public_key for k in keys])
    assert aggregate == G2ProofOfPossession._AggregatePKs([k.public_key for k in keys])
    assert len(bls.compute_eip2537_g1(aggregate)) == 128


def test_infinity_points_are_rejected(keys):
    infinity_g1 = bytes([0xC0]) + bytes(47)
    infinity_g2 = bytes([0xC0]) + bytes(95)
    with pytest.raises(bls.InfinityPointError):
        bls.compute_eip2537_g1(infinity_g1)
    with pytest.raises(bls.InfinityPointError):
        bls.compute_eip2537_g2(infinity_g2)
    with pytest.raises(bls.InfinityPointError):
        bls.compute_aggregate_signature([infinity_g2])
    with pytest.raises(bls.InfinityPointError, match="point at infinity"):
        bls.compute_aggregate_public_key([keys[0].public_key, infinity_g1])
    assert issubclass(bls.InfinityPointError, GradledgerError)
    assert bls.is_infinity_encoding(bytes(128)) and bls.is_infinity_encoding(bytes(256))
    assert not bls.is_infinity_encoding(bls.compute_eip2537_g1(keys[0].public_key))


def test_wrong_lengths_are_rejected():
    with pytest.raises(bls.BlsError, match="48 compressed bytes"):
        bls.compute_eip2537_g1(bytes(47))
    with pytest.raises(bls.BlsError, match="96 compressed bytes"):
        bls.compute_eip2537_g2(bytes(48))
    with pytest.raises(bls.BlsError, match="zero signatures"):
        bls.compute_aggregate_signature([])
    with pytest.raises(bls.BlsError, match="zero public keys"):
        bls.compute_aggregate_public_key([])


def test_verdict_message_is_the_abi_encoding_the_contract_signs():
    dispute_id = keccak256(b"d")
    encoded = bls.compute_verdict_message(DISPUTES, 31337, dispute_id, False)
    assert len(encoded) == 128
    disputes, chain_id, decoded_id, verdict = abi_decode(["address", "uint256", "bytes32", "bool"], encoded)
    assert (disputes.lower(), chain_id, decoded_id, verdict) == (DISPUTES.lower(), 31337, dispute_id, False)
    assert encoded != bls.compute_verdict_message(DISPUTES, 1, dispute_id, False)


@pytest.mark.parametrize(
    ("disputes", "chain_id", "match"),
    [("0x1234", 1, "20-byte hex address"), (DISPUTES, 0, "positive integer")],
)
def test_verdict_message_rejects_bad_inputs(disputes, chain_id, match):
    with pytest.raises(bls.BlsError, match=match):
        bls.compute_verdict_message(disputes, chain_id, keccak256(b"d"), True)


def test_signer_bitmap_sets_one_bit_per_seat():
    assert bls.compute_signer_bitmap([0, 2, 5], 8) == 0b100101
    with pytest.raises(bls.BlsError, match="outside the pool"):
        bls.compute_signer_bitmap([8], 8)
    with pytest.raises(bls.BlsError, match="appears twice"):
        bls.compute_signer_bitmap([1, 1], 8)


def test_dsts_are_py_ecc_ciphersuite_tags():
    sig_dst, pop_dst = bls.get_dsts()
    assert sig_dst == G2ProofOfPossession.DST
    assert pop_dst == G2ProofOfPossession.POP_TAG


def test_juror_registration_encodes_key_and_pop(keys):
    registration = bls.compute_juror_registration(keys[2], ACCOUNT)
    assert registration.public_key_g1 == bls.compute_eip2537_g1(keys[2].public_key)
    pop = bls.compute_proof_of_possession(keys[2], ACCOUNT)
    assert registration.proof_of_possession_g2 == bls.compute_eip2537_g2(pop)
