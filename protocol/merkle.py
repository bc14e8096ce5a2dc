"""Segment leaves and the Merkle tree a solver commits to.

Leaf i of a (run, round, solver) commitment binds everything a verifier needs to check
segment i: where it starts and ends (exact state hashes), the sketch of its update and the
tokens it trained on. Encoding, byte for byte, what Solidity computes:

    leaf = keccak256(bytes.concat(keccak256(abi.encode(
        uint256 runId, uint64 round, address solver, uint32 index,
        bytes32 startHash, bytes32 endHash, bytes32 sketchHash, uint64 tokens))))

(double hashing as in OpenZeppelin's StandardMerkleTree, so a leaf can never be confused
with an inner node). Inner nodes hash the sorted pair, keccak256(min(a, b) || max(a, b)),
which is what OpenZeppelin's `MerkleProof.verify` checks. Leaves stay in segment order; a
level with an odd count promotes its last node unchanged. Tested against Solidity through
tests/vectors/merkle.json.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eth_abi import encode as abi_encode
from eth_utils import is_address, to_canonical_address

from protocol.errors import LeafNotFoundError, MerkleError
from protocol.hashing import Hash32, keccak256, to_hash32

UINT64_MAX = 2**64 - 1
UINT32_MAX = 2**32 - 1


@dataclass(frozen=True)
class SegmentLeaf:
    """The fields of one segment leaf (DESIGN section 3)."""

    run_id: int
    round: int
    solver: str
    index: int
    start_hash: Hash32
    end_hash: Hash32
    sketch_hash: Hash32
    tokens: int

    def __post_init__(self) -> None:
        for field, value, limit in (
            ("run_id", self.run_id, 2**256 - 1),
            ("round", self.round, UINT64_MAX),
            ("index", self.index, UINT32_MAX),
            ("tokens", self.tokens, UINT64_MAX),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limit:
                raise MerkleError(f"segment leaf {field} must be an integer in [0, {limit}], got {value!r}")
        if not isinstance(self.solver, str) or not is_address(self.solver):
            raise MerkleError(f"segment leaf solver must be a 20-byte hex address, got {self.solver!r}")
        for field in ("start_hash", "end_hash", "sketch_hash"):
            object.__setattr__(self, field, to_hash32(getattr(self, field), f"segment leaf {field}"))


def compute_leaf_hash(leaf: SegmentLeaf) -> Hash32:
    """The Merkle leaf of a segment, equal to Solidity's `SegmentLeaf.hash`."""
    encoded = abi_encode(
        ["uint256", "uint64", "address", "uint32", "bytes32", "bytes32", "bytes32", "uint64"],
        [
            leaf.run_id,
            leaf.round,
            to_canonical_address(leaf.solver),
            leaf.index,
            leaf.start_hash,
            leaf.end_hash,
            leaf.sketch_hash,
            leaf.tokens,
        ],
    )
    return keccak256(keccak256(encoded))


def hash_pair(a: Hash32, b: Hash32) -> Hash32:
    """OpenZeppelin's commutative node hash: keccak256 of the sorted pair."""
    return keccak256(a + b) if a < b else keccak256(b + a)


@dataclass(frozen=True)
class MerkleTree:
    """All levels of the tree, leaves first; `levels[-1]` holds only the root."""

    levels: tuple[tuple[Hash32, ...], ...]

    @property
    def root(self) -> Hash32:
        return self.levels[-1][0]

    @property
    def leaves(self) -> tuple[Hash32, ...]:
        return self.levels[0]


def build_merkle_tree(leaves: Sequence[bytes]) -> MerkleTree:
    """Build the tree over leaf hashes, in the order given."""
    if not leaves:
        raise MerkleError("cannot build a Merkle tree with no leaves; a round has at least one segment")
    level = tuple(to_hash32(leaf, f"leaf {i}") for i, leaf in enumerate(leaves))
    levels = [level]
    while len(level) > 1:
        parents = [hash_pair(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            parents.append(level[-1])
        level = tuple(parents)
        levels.append(level)
    return MerkleTree(levels=tuple(levels))


def get_merkle_proof_at(tree: MerkleTree, index: int) -> tuple[Hash32, ...]:
    """Sibling hashes from leaf `index` up to the root."""
    if not isinstance(index, int) or not 0 <= index < len(tree.leaves):
        raise LeafNotFoundError(
            f"no leaf at index {index!r}: the tree has {len(tree.leaves)} leaves (0..{len(tree.leaves) - 1})"
        )
    proof = []
    for level in tree.levels[:-1]:
        sibling = index ^ 1
        if sibling < len(level):
            proof.append(level[sibling])
        index //= 2
    return tuple(proof)


def get_merkle_proof(tree: MerkleTree, leaf: bytes) -> tuple[Hash32, ...]:
    """Proof for a leaf given by its hash; LeafNotFoundError if the tree does not hold it."""
    leaf = to_hash32(leaf, "leaf")
    try:
        index = tree.leaves.index(leaf)
    except ValueError:
        raise LeafNotFoundError(
            f"leaf 0x{leaf.hex()} is not in this tree (root 0x{tree.root.hex()}); "
            "check the run, round, solver and segment index it was built from"
        ) from None
    return get_merkle_proof_at(tree, index)


def compute_root_from_proof(proof: Sequence[bytes], leaf: bytes) -> Hash32:
    """Fold a proof onto a leaf, as OpenZeppelin's `MerkleProof.processProof`."""
    node = to_hash32(leaf, "leaf")
    for i, sibling in enumerate(proof):
        node = hash_pair(node, to_hash32(sibling, f"proof element {i}"))
    return node


def verify_merkle_proof(proof: Sequence[bytes], root: bytes, leaf: bytes) -> bool:
    """True when `proof` proves `leaf` under `root` (OpenZeppelin `MerkleProof.verify`)."""
    return compute_root_from_proof(proof, leaf) == to_hash32(root, "root")
