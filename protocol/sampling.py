"""Sampling seeds, verifier seats, sampled segments and the probability of catching a cheater.

The seed of a (run, round, solver) commitment comes from the hash of a block mined *after*
the commit, so a solver cannot know at commit time which segments will be replayed:

    seed = keccak256(abi.encode(bytes32 blockHash, uint256 runId, uint64 round, address solver))

Each verifier seat q of the commitment has its own sub-seed, and from it its own verifier and its
own samples (DESIGN section 4: never a consecutive window of a list a sybil can fill):

    seat seed  s_q = keccak256(abi.encode(SEAT_SEED_TAG, seed, uint256 q))
    verifier of seat q = the r_q-th list index no earlier seat holds, r_q = uint256(keccak256(abi.encode(
                         s_q, VERIFIER_DRAW_INDEX))) mod (count - q)     (without replacement)
    sample j of seat q = uint256(keccak256(abi.encode(s_q, uint256 j))) mod n

The seats of a commitment go to distinct verifiers, each drawn from its own sub-seed, so a block of
sybils holding a share p of the list holds all k seats with probability about p^k; samples are drawn
independently, with replacement, so a solver that faked a fraction f of its segments is caught with
probability exactly 1 - (1 - f)^(s x k). The modulo bias
is below n / 2^256. Solidity's `Sampling` library and `Verification` compute the same values
(tests/vectors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from eth_abi import encode as abi_encode
from eth_utils import is_address, to_canonical_address

from protocol.constants import SEAT_SEED_TAG, VERIFIER_DRAW_INDEX
from protocol.errors import SeedError
from protocol.hashing import Hash32, keccak256, to_hash32

MAX_SAMPLES = 1024
"""Upper bound on samples per commitment, so sampling loops stay bounded on-chain too."""


def compute_sampling_seed(block_hash: bytes | str, run_id: int, round_index: int, solver: str) -> Hash32:
    """Seed for (run, round, solver) from the hash of a block mined after the commit."""
    block_hash = to_hash32(block_hash, "block hash")
    if not isinstance(solver, str) or not is_address(solver):
        raise SeedError(f"solver must be a 20-byte hex address, got {solver!r}")
    if run_id < 0 or round_index < 0 or round_index >= 2**64:
        raise SeedError(f"run id and round must be non-negative (round < 2^64), got {run_id}, {round_index}")
    encoded = abi_encode(
        ["bytes32", "uint256", "uint64", "address"],
        [block_hash, run_id, round_index, to_canonical_address(solver)],
    )
    return keccak256(encoded)


def compute_sample(seed: bytes | str, sample_index: int, modulus: int) -> int:
    """The `sample_index`-th draw in [0, modulus) from `seed`."""
    seed = to_hash32(seed, "sampling seed")
    if modulus <= 0:
        raise SeedError(f"cannot sample from an empty range (modulus {modulus})")
    if sample_index < 0:
        raise SeedError(f"sample index must be non-negative, got {sample_index}")
    digest = keccak256(abi_encode(["bytes32", "uint256"], [seed, sample_index]))
    return int.from_bytes(digest, "big") % modulus


def compute_seat_seed(seed: bytes | str, slot: int) -> Hash32:
    """The sub-seed of verifier seat `slot` of a commitment (its verifier and its samples come from it)."""
    seed = to_hash32(seed, "commitment seed")
    if not 0 <= slot < 2**8:
        raise SeedError(f"a seat index is in [0, 256), got {slot}")
    return keccak256(abi_encode(["bytes32", "bytes32", "uint256"], [SEAT_SEED_TAG, seed, slot]))


def compute_seat_verifier_indices(seed: bytes | str, seats: int, verifier_count: int) -> tuple[int, ...]:
    """Verifier-list indices of seats 0 .. seats-1 of a commitment with seed `seed` (Sampling.seatIndex).

    Seat q draws r_q = sample(seat seed q, VERIFIER_DRAW_INDEX, count - q) and takes the r_q-th index no
    earlier seat holds: a uniform draw without replacement from the seat's own sub-seed, so the seats of one
    commitment go to distinct verifiers and no position in the list is favoured.
    """
    if not 0 <= seats <= verifier_count:
        raise SeedError(f"{seats} seats cannot go to distinct verifiers of a list of {verifier_count}")
    used: list[int] = []
    for q in range(seats):
        index = compute_sample(compute_seat_seed(seed, q), VERIFIER_DRAW_INDEX, verifier_count - q)
        for held in sorted(used):
            if held <= index:
                index += 1
        used.append(index)
    return tuple(used)


def compute_sampled_segments(seed: bytes | str, num_segments: int, samples: int) -> tuple[int, ...]:
    """The segments to replay for a commitment, in draw order (duplicates possible)."""
    if not 1 <= samples <= MAX_SAMPLES:
        raise SeedError(f"samples per commitment must be in [1, {MAX_SAMPLES}], got {samples}")
    if num_segments <= 0:
        raise SeedError(f"a commitment has at least one segment, got {num_segments}")
    return tuple(compute_sample(seed, j, num_segments) for j in range(samples))


@dataclass(frozen=True)
class RoundDraw:
    """What `Verification.drawSeed` fixes for a round's sampling (Verification.roundSeed): the seed base (the seed
    block's RANDAO bytes12, left-aligned in 32 bytes; zero until drawn), the draws each seat makes and the segments a
    commitment has (0 until drawn). Read once per round; every seat's draws follow from it (`compute_seat_samples`)."""

    seed_base: Hash32
    samples: int
    num_segments: int

    @property
    def drawn(self) -> bool:
        """Whether the seed was drawn (a drawn round has at least one segment per commitment)."""
        return self.num_segments > 0


def compute_seat_samples(draw: RoundDraw, run_id: int, round_index: int, solver: str, slot: int) -> tuple[int, ...]:
    """The segment of every draw of seat `slot` of `solver`'s commitment, in draw order (Verification.sampledSegment
    of draws 0 .. samples - 1: the seat's sub-seed of the commitment's seed).

    # INVARIANT: the one Python spelling of a seat's draws: the verifier replays, the solver opens
    (`protocol.opening.compute_opened_segments`, seat-major) and the chain checks the same segments (tests/vectors).
    """
    if not draw.drawn:
        raise SeedError(f"the seed of round {round_index} of run {run_id} is not drawn yet: no seat has draws")
    seed = compute_sampling_seed(draw.seed_base, run_id, round_index, solver)
    return compute_sampled_segments(compute_seat_seed(seed, slot), draw.num_segments, draw.samples)


def compute_detection_probability(faked_fraction: Fraction | float, samples: int, seats: int = 1) -> Fraction:
    """P(at least one faked segment sampled by some seat) = 1 - (1 - f)^(s x seats), exact for rational f.

    Every seat draws its own `samples` segments (independently, with replacement), so `seats` seats
    sample like one seat with s x seats draws.
    """
    f = Fraction(faked_fraction)
    if not 0 <= f <= 1:
        raise SeedError(f"the faked fraction must be in [0, 1], got {faked_fraction}")
    if samples < 0 or seats < 0:
        raise SeedError(f"samples and seats must be non-negative, got {samples} and {seats}")
    return 1 - (1 - f) ** (samples * seats)


def get_required_samples(faked_fraction: Fraction | float, target: Fraction | float) -> int:
    """Smallest s with 1 - (1 - f)^s >= target (for 0 < f and target < 1)."""
    f, goal = Fraction(faked_fraction), Fraction(target)
    if not 0 < f <= 1 or not 0 <= goal < 1:
        raise SeedError(f"need 0 < faked fraction <= 1 and 0 <= target < 1, got {faked_fraction}, {target}")
    if goal == 0:
        return 0
    if f == 1:
        return 1
    # log(1 - f) without cancellation: log1p for small f; for f near 1, 1 - f exactly (float(f) may round to 1.0,
    # whose log1p(-1.0) is undefined), and s = 1 when even that underflows (the exact loop below corrects it)
    miss = math.log1p(-float(f)) if f <= Fraction(1, 2) else math.log(float(1 - f)) if float(1 - f) > 0 else None
    estimate = 1 if miss is None else math.ceil(math.log1p(-float(goal)) / miss)
    if estimate > MAX_SAMPLES:
        raise SeedError(
            f"catching a {float(f):.2e} fraction with probability {float(goal)} needs about "
            f"{estimate} samples, more than the {MAX_SAMPLES} a commitment allows"
        )
    samples = max(0, estimate - 2)  # float estimate, then exact correction
    while compute_detection_probability(f, samples) < goal:
        samples += 1
    return samples
