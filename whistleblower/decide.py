"""What a whistleblower does with an attestation or a claim: pure functions of what it read and checked.

The loop is read (chain events, the shared checker's verdict) -> decide (here) -> act (challenge
with the bond, drive the dispute, withdraw). Everything here is a plain value, so the decisions
are unit-tested without a chain (tests/whistleblower/test_decide.py).

Which attestations to re-check, with `--fraction F` < 1: a deterministic draw from the hash of
the block mined right after the attestation, the seat and the whistleblower's address. The
attester cannot know that block hash when it attests, so it cannot tell which of its
attestations a given whistleblower will check; anyone can re-derive the choice from the chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

from eth_abi import encode as abi_encode
from eth_utils import to_canonical_address

from node.challenges import ChallengePlan, decide_attestation_challenge  # noqa: F401 (shared with solvers' self-defence)
from protocol.errors import GradledgerError
from protocol.hashing import keccak256, to_hash32

SELECTION_DOMAIN = b"gradledger.whistleblower.selection.v1"


Verdict = Literal["right", "challenge", "late", "not_selected"]


def is_selected(
    block_hash: bytes | str,
    run_id: int,
    round_index: int,
    solver: str,
    slot: int,
    watcher: str,
    fraction: float | Fraction,
) -> bool:
    """Whether this whistleblower re-checks seat (run, round, solver, slot): uniform draw < fraction."""
    share = Fraction(fraction)
    if share >= 1:
        return True
    if share <= 0:
        return False
    digest = keccak256(
        abi_encode(
            ["bytes32", "bytes32", "uint256", "uint64", "address", "uint8", "address"],
            [
                keccak256(SELECTION_DOMAIN),
                to_hash32(block_hash, "block hash"),
                run_id,
                round_index,
                to_canonical_address(solver),
                slot,
                to_canonical_address(watcher),
            ],
        )
    )
    return Fraction(int.from_bytes(digest, "big"), 2**256) < share


def is_claim_wrong(claimed_hash: bytes, expected_hash: bytes) -> bool:
    """A θ_(r+1) claim is wrong when it is not the outer step over the accepted pseudo-gradients."""
    return to_hash32(claimed_hash) != to_hash32(expected_hash)


def can_challenge_attestation(now: int, round_index: int, current_round: int, challenge_end: int) -> bool:
    """Attestations of the current round can be challenged until its challenge window closes."""
    return round_index == current_round and now < challenge_end


def is_done(run_finished: bool, open_challenges: int, credits_wei: int) -> bool:
    """A whistleblower watching one run is done once it finished, its disputes closed and it was paid."""
    return run_finished and open_challenges == 0 and credits_wei == 0


PLANT_CHECK_DOMAIN = b"gradledger.whistleblower.plant-check.v1"


def choose_plant_check(
    block_hash: bytes | str, run_id: int, round_index: int, solver: str, watcher: str, opened: int
) -> int:
    """Which opened draw of a commitment revealed as planted this whistleblower replays with the revealed secret.

    From the hash of the reveal's block: the solver committed (and trained) before it existed, so it cannot make
    only the checked segment genuine; each whistleblower checks a different draw.
    """
    if opened < 1:
        raise GradledgerError(f"a planted commitment has at least one opened draw, got {opened}")
    digest = keccak256(
        abi_encode(
            ["bytes32", "bytes32", "uint256", "uint64", "address", "address"],
            [
                keccak256(PLANT_CHECK_DOMAIN),
                to_hash32(block_hash, "block hash"),
                run_id,
                round_index,
                to_canonical_address(solver),
                to_canonical_address(watcher),
            ],
        )
    )
    return int.from_bytes(digest, "big") % opened


def order_plant_checks(
    block_hash: bytes | str, run_id: int, round_index: int, solver: str, watcher: str, segments: Sequence[int]
) -> tuple[int, ...]:
    """The distinct opened segments of a commitment revealed as planted, in the order this whistleblower replays them
    with the revealed secret; it disputes the first one that does not replay as the planted training.

    Plant disputes are per segment (Disputes.challengePlant), so a planter that trained only some segments as planted
    cannot use up the check by disputing its own plant over one of those: every opened segment can be disputed. The
    order starts at `choose_plant_check`'s draw from the reveal's block hash, so whistleblowers start apart.
    """
    distinct = list(dict.fromkeys(segments))
    if not distinct:
        raise GradledgerError("a planted commitment has at least one opened draw, got none")
    start = choose_plant_check(block_hash, run_id, round_index, solver, watcher, len(distinct))
    return tuple(distinct[start:] + distinct[:start])
