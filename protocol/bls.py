"""BLS signatures of jurors: keys, proofs of possession, signatures, aggregates, EIP-2537 encodings.

The scheme is py_ecc's standard `G2ProofOfPossession` (IETF BLS, ciphersuite
BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_): public keys in G1, signatures in G2. Jurors register a
key with a proof of possession (so an aggregate of registered keys cannot be a rogue key) -- a PoP-tagged
signature of their address and key, so it is worthless to anyone who copies it -- then sign
the verdict message of a dispute; one transaction carries the aggregate signature and the signer
bitmap, and `contracts/src/libraries/BLS.sol` verifies it with the EIP-2537 precompiles.

py_ecc speaks compressed points (48-byte public keys, 96-byte signatures); the contracts take
EIP-2537's uncompressed form: each Fp element as 64 bytes big-endian (16 zero bytes, then 48), G1 as
x || y, and Fp2 as c0 (the real part) then c1, so G2 is x.c0 || x.c1 || y.c0 || y.c1. The point at
infinity is never a valid key or signature here: it raises `InfinityPointError`.

Pure code: no network, no disk, no clock. Keys derive deterministically from a seed (KeyGen of the
IETF draft, HKDF-SHA-256), so tests and devnets get reproducible jurors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eth_abi import encode as abi_encode
from eth_typing import BLSPubkey, BLSSignature
from eth_utils import is_address, to_canonical_address
from py_ecc.bls import G2ProofOfPossession as _Scheme
from py_ecc.bls.g2_primitives import G1_to_pubkey, pubkey_to_G1, signature_to_G2
from py_ecc.optimized_bls12_381 import Z1, add, is_inf, normalize

from protocol.constants import BLS_POP_DST, BLS_SIG_DST
from protocol.errors import GradledgerError
from protocol.hashing import to_hash32

PUBLIC_KEY_BYTES = 48
SIGNATURE_BYTES = 96
G1_ENCODED_BYTES = 128
G2_ENCODED_BYTES = 256
MIN_SEED_BYTES = 32
FP_ENCODED_BYTES = 64


class BlsError(GradledgerError):
    """A BLS key, signature or encoding is malformed or not usable."""


class InfinityPointError(BlsError):
    """A public key, signature or aggregate is the point at infinity, which the protocol rejects."""


@dataclass(frozen=True)
class BlsKeyPair:
    """A juror's BLS key: the secret scalar and the 48-byte compressed public key."""

    secret_key: int
    public_key: bytes

    def __repr__(self) -> str:
        """Never print a secret key into a log."""
        return f"BlsKeyPair(public_key=0x{self.public_key.hex()})"


@dataclass(frozen=True)
class JurorRegistration:
    """What `JurorRegistry.registerJuror` takes: the public key (G1) and its proof of possession (G2),
    both in EIP-2537 encoding."""

    public_key_g1: bytes
    proof_of_possession_g2: bytes


def compute_key_pair(seed: bytes) -> BlsKeyPair:
    """Derive a key pair from at least 32 bytes of secret seed (IETF KeyGen, as py_ecc)."""
    if not isinstance(seed, (bytes, bytearray)) or len(seed) < MIN_SEED_BYTES:
        raise BlsError(
            f"a BLS key seed must be at least {MIN_SEED_BYTES} bytes of secret randomness, "
            f"got {len(seed) if isinstance(seed, (bytes, bytearray)) else type(seed).__name__}"
        )
    secret_key = _Scheme.KeyGen(bytes(seed))
    return BlsKeyPair(secret_key=secret_key, public_key=bytes(_Scheme.SkToPk(secret_key)))


def compute_pop_message(account: str, public_key: bytes) -> bytes:
    """What a proof of possession signs: the 20-byte registering address || the 48-byte compressed key.

    Binding the address means a proof copied from another juror proves nothing for the copier's account
    (`JurorRegistry.registerJuror` checks it against msg.sender).
    """
    _require_compressed(public_key, PUBLIC_KEY_BYTES, "public key")
    return to_canonical_address(account) + bytes(public_key)


def compute_proof_of_possession(key: BlsKeyPair, account: str) -> bytes:
    """Sign `compute_pop_message(account, key)` with the PoP tag (96-byte compressed G2)."""
    message = compute_pop_message(account, key.public_key)
    return bytes(_Scheme._CoreSign(key.secret_key, message, BLS_POP_DST))


def compute_signature(key: BlsKeyPair, message: bytes) -> bytes:
    """Sign `message` (96-byte compressed G2)."""
    return bytes(_Scheme.Sign(key.secret_key, bytes(message)))


def compute_aggregate_signature(signatures: Sequence[bytes]) -> bytes:
    """Sum of signatures over the same message; the contracts verify it against the signers' keys."""
    if not signatures:
        raise BlsError("cannot aggregate zero signatures; a verdict needs at least a quorum of signers")
    for signature in signatures:
        _require_compressed(signature, SIGNATURE_BYTES, "signature")
    return bytes(_Scheme.Aggregate([BLSSignature(bytes(s)) for s in signatures]))


def compute_aggregate_public_key(public_keys: Sequence[bytes]) -> bytes:
    """Sum of compressed public keys, compressed (what the contract recomputes from a bitmap)."""
    if not public_keys:
        raise BlsError("cannot aggregate zero public keys")
    total = Z1
    for public_key in public_keys:
        _require_compressed(public_key, PUBLIC_KEY_BYTES, "public key")
        total = add(total, pubkey_to_G1(BLSPubkey(bytes(public_key))))
    if is_inf(total):
        raise InfinityPointError("the aggregate public key is the point at infinity; the signer set is invalid")
    return bytes(G1_to_pubkey(total))


def verify_signature(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """True when `signature` signs `message` under `public_key`."""
    return bool(_Scheme.Verify(BLSPubkey(bytes(public_key)), bytes(message), BLSSignature(bytes(signature))))


def verify_aggregate_signature(public_keys: Sequence[bytes], message: bytes, signature: bytes) -> bool:
    """True when `signature` is the aggregate of signatures of `message` by all of `public_keys`."""
    keys = [BLSPubkey(bytes(k)) for k in public_keys]
    return bool(_Scheme.FastAggregateVerify(keys, bytes(message), BLSSignature(bytes(signature))))


def verify_proof_of_possession(public_key: bytes, account: str, proof: bytes) -> bool:
    """True when `proof` proves that `account` holds the secret key behind `public_key`."""
    message = compute_pop_message(account, public_key)
    return bool(_Scheme._CoreVerify(BLSPubkey(bytes(public_key)), message, BLSSignature(bytes(proof)), BLS_POP_DST))


def compute_eip2537_g1(public_key: bytes) -> bytes:
    """128-byte EIP-2537 encoding of a compressed G1 point (a public key or an aggregate of keys)."""
    _require_compressed(public_key, PUBLIC_KEY_BYTES, "public key")
    point = pubkey_to_G1(BLSPubkey(bytes(public_key)))
    if is_inf(point):
        raise InfinityPointError("public key is the point at infinity; generate a key with compute_key_pair")
    x, y = normalize(point)
    return _fp(int(x)) + _fp(int(y))


def compute_eip2537_g2(signature: bytes) -> bytes:
    """256-byte EIP-2537 encoding of a compressed G2 point: x.c0 || x.c1 || y.c0 || y.c1."""
    _require_compressed(signature, SIGNATURE_BYTES, "signature")
    point = signature_to_G2(BLSSignature(bytes(signature)))
    if is_inf(point):
        raise InfinityPointError("signature is the point at infinity; it proves nothing and is rejected")
    x, y = normalize(point)
    return b"".join(_fp(int(c)) for c in (*x.coeffs, *y.coeffs))


def compute_juror_registration(key: BlsKeyPair, account: str) -> JurorRegistration:
    """The arguments of `JurorRegistry.registerJuror` for `key`, sent from `account`."""
    return JurorRegistration(
        public_key_g1=compute_eip2537_g1(key.public_key),
        proof_of_possession_g2=compute_eip2537_g2(compute_proof_of_possession(key, account)),
    )


def compute_verdict_message(disputes: str, chain_id: int, dispute_id: bytes | str, challenger_wins: bool) -> bytes:
    """The bytes jurors sign: abi.encode(address disputes, uint256 chainid, bytes32 disputeId, bool verdict).

    Binding the contract and the chain stops a signature from being replayed on another deployment;
    binding the dispute and the verdict stops it from being used for another dispute or outcome.
    """
    if not isinstance(disputes, str) or not is_address(disputes):
        raise BlsError(f"disputes contract must be a 20-byte hex address, got {disputes!r}")
    if not isinstance(chain_id, int) or chain_id <= 0:
        raise BlsError(f"chain id must be a positive integer, got {chain_id!r}")
    return abi_encode(
        ["address", "uint256", "bytes32", "bool"],
        [to_canonical_address(disputes), chain_id, to_hash32(dispute_id, "dispute id"), bool(challenger_wins)],
    )


def compute_signer_bitmap(seats: Sequence[int], pool_size: int) -> int:
    """Bitmap with bit i set for each signing jury seat i (0 <= i < pool_size)."""
    bitmap = 0
    for seat in seats:
        if not isinstance(seat, int) or not 0 <= seat < pool_size:
            raise BlsError(f"jury seat {seat!r} is outside the pool of {pool_size} seats")
        if bitmap >> seat & 1:
            raise BlsError(f"jury seat {seat} appears twice; each juror signs once")
        bitmap |= 1 << seat
    return bitmap


def get_dsts() -> tuple[bytes, bytes]:
    """(signature tag, proof-of-possession tag); equal to py_ecc's and to Constants.sol's."""
    return BLS_SIG_DST, BLS_POP_DST


def is_infinity_encoding(encoded: bytes) -> bool:
    """True for the all-zero EIP-2537 encoding of the point at infinity (G1 or G2)."""
    return len(encoded) in (G1_ENCODED_BYTES, G2_ENCODED_BYTES) and not any(encoded)


def _fp(value: int) -> bytes:
    """One Fp element as EIP-2537 wants it: 64 bytes big-endian."""
    return value.to_bytes(FP_ENCODED_BYTES, "big")


def _require_compressed(value: bytes, length: int, what: str) -> None:
    """Fail early, naming the input, on a wrong length or the infinity flag (py_ecc would accept it)."""
    if not isinstance(value, (bytes, bytearray)) or len(value) != length:
        got = len(value) if isinstance(value, (bytes, bytearray)) else type(value).__name__
        raise BlsError(f"{what} must be {length} compressed bytes (py_ecc encoding), got {got}")
    if value[0] & 0x40:
        raise InfinityPointError(f"{what} is the point at infinity (infinity flag set); it is rejected")
