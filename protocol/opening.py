"""Opening a commitment: the sampled leaves and Merkle proofs that `RunRegistry.open` checks.

A committed root proves nothing by itself: a random root, a root copied from another solver or round,
or a document missing leaves can never be failed (a fail names a leaf proven under the root), so it
must never be paid either. Hence every commitment is opened on-chain after the round's seed is drawn
and before `open_end` (commit_end + attestWindow / 2): the leaf of every sampled segment of every seat,
each with its proof. Only an opened commitment can be attested; one not opened in time is reported and
its solver slashed (docs/contracts.md, "Opening").

Order (seat-major, the one `RunRegistry.open` checks): entry `q * samples + j` is draw j of seat q,
for the seats 0 .. min(verifiersPerCommitment, verifierCount) - 1 of the round. Everything here is a
pure function of committed inputs, so the solver that opens, the verifier that attests a fail and the
whistleblower that challenges a pass all name the same leaf and proof.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from protocol.commitment import CommitmentDoc
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, to_hash32
from protocol.merkle import SegmentLeaf, build_merkle_tree, compute_leaf_hash, get_merkle_proof_at
from protocol.sampling import compute_sampled_segments, compute_sampling_seed, compute_seat_seed
from protocol.types import LeafData


class OpeningError(GradledgerError):
    """A commitment cannot be opened (its document lacks a sampled leaf), or an opening lacks an entry."""


@dataclass(frozen=True)
class OpenedLeaf:
    """One opened draw: the segment it samples, its leaf fields and the proof under the committed root."""

    segment: int
    leaf: LeafData
    proof: tuple[Hash32, ...]


@dataclass(frozen=True)
class CommitmentOpening:
    """The opened draws of one commitment, seat-major (entry q * samples + j is draw j of seat q)."""

    samples: int
    entries: tuple[OpenedLeaf, ...]

    def leaf_of(self, slot: int, sample_index: int) -> OpenedLeaf:
        """Draw `sample_index` of seat `slot`."""
        k = slot * self.samples + sample_index
        if not 0 <= sample_index < self.samples or not 0 <= k < len(self.entries):
            raise OpeningError(
                f"the opening has no draw {sample_index} of seat {slot} ({len(self.entries)} entries, "
                f"{self.samples} per seat)"
            )
        return self.entries[k]

    def to_abi(self) -> tuple[list[tuple], list[list[bytes]]]:
        """(leaves, proofs) in the argument form of `RunRegistry.open`."""
        return [e.leaf.to_abi() for e in self.entries], [list(e.proof) for e in self.entries]


def get_opened_seat_count(verifiers_per_commitment: int, verifier_count: int) -> int:
    """Seats a commitment opens for: the round's seats that are not void (Verification's `seats`)."""
    return max(0, min(verifiers_per_commitment, verifier_count))


def compute_opened_segments(
    seed_base: bytes, run_id: int, round_index: int, solver: str, seats: int, samples: int, num_segments: int
) -> tuple[int, ...]:
    """The sampled segment of every entry of the opening, seat-major (Sampling.sample of each seat's sub-seed)."""
    seed = compute_sampling_seed(seed_base, run_id, round_index, solver)
    out: list[int] = []
    for slot in range(seats):
        seat_seed = compute_seat_seed(seed, slot)
        out.extend(compute_sampled_segments(seat_seed, num_segments, samples))
    return tuple(out)


def build_opening(doc: CommitmentDoc, segments: Sequence[int], samples: int) -> CommitmentOpening:
    """The opening of `doc` for the sampled `segments` (from `compute_opened_segments`).

    Raises OpeningError when the document holds no leaf for a sampled segment: then no proof exists and
    the commitment cannot be opened (it ends reported and slashed).
    """
    tree = build_merkle_tree([compute_leaf_hash(leaf) for leaf in doc.leaves])
    entries = []
    for segment in segments:
        if not 0 <= segment < len(doc.leaves):
            raise OpeningError(f"the document has {len(doc.leaves)} leaves: no leaf for sampled segment {segment}")
        leaf: SegmentLeaf = doc.leaves[segment]
        data = LeafData(leaf.start_hash, leaf.end_hash, leaf.sketch_hash, leaf.tokens)
        entries.append(OpenedLeaf(segment, data, tuple(get_merkle_proof_at(tree, segment))))
    return CommitmentOpening(samples, tuple(entries))


def decode_opening(
    leaves: Sequence[Sequence | Mapping], proofs: Sequence[Sequence[bytes]], segments: Sequence[int], samples: int
) -> CommitmentOpening:
    """A `CommitmentOpened` event's leaves and proofs as a CommitmentOpening (segments recomputed)."""
    if not len(leaves) == len(proofs) == len(segments):
        raise OpeningError(f"an opening of {len(leaves)} leaves, {len(proofs)} proofs and {len(segments)} draws")
    entries = tuple(
        OpenedLeaf(segment, _to_leaf_data(leaf), tuple(to_hash32(p) for p in proof))
        for leaf, proof, segment in zip(leaves, proofs, segments, strict=True)
    )
    return CommitmentOpening(samples, entries)


def _to_leaf_data(leaf: Sequence | Mapping) -> LeafData:
    """A decoded LeafData struct: a tuple in Types.sol field order, or a mapping by field name."""
    if isinstance(leaf, Mapping):
        leaf = (leaf["startHash"], leaf["endHash"], leaf["sketchHash"], leaf["tokens"])
    return LeafData(to_hash32(leaf[0]), to_hash32(leaf[1]), to_hash32(leaf[2]), int(leaf[3]))
