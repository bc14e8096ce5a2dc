"""Planted faults (forced errors): which solver plants in which round, and how the plant is proven.

The design and its attacks are in docs/planted-faults.md (issue 17). A solver registers once per run the anchor
of a hash chain of round secrets; round r's secret is a preimage of round r - 1's, so revealing it after the
attestation window proves it was fixed in advance and tells nobody the next one:

    s_0 = keccak256(abi.encode(PLANT_SEED_TAG, account key, runId))     (recomputed after a restart)
    s_(i+1) = keccak256(s_i),  anchor = s_N with N = maxRounds,  secret of round r: x_r = s_(N-1-r)
    keccak256(x_r) == x_(r-1),  x_(-1) = anchor

Whether round r's commitment is planted is decided by that secret and the seed base of round r - 1, a block
hash fixed before round r starts but after the anchor (plants apply from two rounds after the anchor's):

    planted = uint256(keccak256(abi.encode(PLANT_TAG, x_r, uint256 runId, uint64 r, address solver,
                                           bytes32 previousSeedBase))) % 10_000 < plantRateBps

so the solver knows before it trains, verifiers cannot know before they attest, and nobody chooses.

Plants from round 0 (issue 37): when a run's terms were set before round 0 started (a run with a start delay), the
terms fix a run seed block whose timestamp is at least the start, an anchor registered before the start is eligible
from round 0, and round 0 draws with the run seed (bytes12 of that block's RANDAO value, `Plants.drawRunSeed`) as
its previous seed base. Every round of such a run can then be planted, so no round is publicly safe to pass
without replaying it.

The reveal window of a round is [attestEnd, revealEnd), revealEnd the middle of its challenge window
(Plants._revealEnd): after every seat is attested (no attestation can follow the secret), and early enough that
challenges and plant disputes fit in the rest of the challenge window. Pure: hashing and arithmetic, no I/O.
"""

from __future__ import annotations

from eth_abi import encode as abi_encode
from eth_utils import is_address, to_canonical_address

from protocol.constants import BPS_DENOMINATOR, MAX_PLANT_RATE_BPS, PLANT_DELAY_ROUNDS
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, keccak256, to_hash32
from protocol.types import RoundTimes

PLANT_TAG = keccak256(b"gradledger.plant")
"""Domain tag of the plant decision (Solidity: keccak256("gradledger.plant"))."""
PLANT_SEED_TAG = keccak256(b"gradledger.plant-seed")
"""Domain tag of a solver's chain seed, derived from its account key."""


class PlantError(GradledgerError):
    """Bad input to the plant rules (a chain, a secret or a rate out of range)."""


def compute_chain_seed(account_key: bytes, run_id: int) -> Hash32:
    """The first link s_0 of a solver's chain for a run, from its account key: a restart recomputes the chain."""
    if len(account_key) != 32:
        raise PlantError(f"the account key must be 32 bytes, got {len(account_key)}")
    if run_id < 0:
        raise PlantError(f"run id must be non-negative, got {run_id}")
    return keccak256(abi_encode(["bytes32", "bytes32", "uint256"], [PLANT_SEED_TAG, account_key, run_id]))


def compute_secret_chain(seed: bytes | str, max_rounds: int) -> tuple[Hash32, ...]:
    """The links s_0 .. s_N (N = max_rounds): s_(i+1) = keccak256(s_i); the last one is the anchor."""
    if max_rounds < 1:
        raise PlantError(f"a run has at least one round, got max_rounds={max_rounds}")
    links = [to_hash32(seed, "chain seed")]
    for _ in range(max_rounds):
        links.append(keccak256(links[-1]))
    return tuple(links)


def get_plant_anchor(chain: tuple[Hash32, ...]) -> Hash32:
    """What the solver registers: the last link s_N."""
    return chain[-1]


def get_round_secret(chain: tuple[Hash32, ...], round_index: int) -> Hash32:
    """The secret of round r: x_r = s_(N-1-r), a preimage of x_(r-1) (and of the anchor for r = 0)."""
    max_rounds = len(chain) - 1
    if not 0 <= round_index < max_rounds:
        raise PlantError(f"round {round_index} is outside the chain's {max_rounds} rounds")
    return chain[max_rounds - 1 - round_index]


def verify_round_secret(secret: bytes | str, round_index: int, known_link: bytes | str, known_round: int) -> bool:
    """Whether `secret` is round `round_index`'s link of the chain through `known_link`, the secret of
    `known_round` (-1: the anchor): hashing it round_index - known_round times must give known_link."""
    if not -1 <= known_round < round_index:
        raise PlantError(f"a round's secret is checked against an earlier link, got {known_round} >= {round_index}")
    link = to_hash32(secret, "round secret")
    for _ in range(round_index - known_round):
        link = keccak256(link)
    return link == to_hash32(known_link, "known link")


def is_planting_round(rate_bps: int, round_index: int, from_round_zero: bool = False) -> bool:
    """Whether pay in the round follows the plant rules (Plants._isPlantingRound): the run plants, and the round is
    PLANT_DELAY_ROUNDS or later, or any round when the terms were set before the start (`from_round_zero`: the
    terms fixed a run seed block)."""
    return rate_bps > 0 and (from_round_zero or round_index >= PLANT_DELAY_ROUNDS)


def is_plant_eligible(
    anchor_round: int, round_index: int, *, early_anchor: bool = False, from_round_zero: bool = False
) -> bool:
    """Whether a solver's commitment of the round can be planted (Plants._isEligible, for a run that plants): its
    anchor is PLANT_DELAY_ROUNDS rounds old, or it was registered before the start (`early_anchor`) of a run whose
    terms were too (`from_round_zero`). A planting round's commitment that is not eligible is unpaid."""
    return (early_anchor and from_round_zero) or round_index >= anchor_round + PLANT_DELAY_ROUNDS


def compute_plant_draw(
    secret: bytes | str, run_id: int, round_index: int, solver: str, previous_seed_base: bytes | str
) -> int:
    """The plant draw in [0, 10_000) of a (run, round, solver) from its round secret and round r - 1's seed base."""
    if not isinstance(solver, str) or not is_address(solver):
        raise PlantError(f"solver must be a 20-byte hex address, got {solver!r}")
    if run_id < 0 or not 0 <= round_index < 2**64:
        raise PlantError(f"run id and round must be non-negative (round < 2^64), got {run_id}, {round_index}")
    encoded = abi_encode(
        ["bytes32", "bytes32", "uint256", "uint64", "address", "bytes32"],
        [
            PLANT_TAG,
            to_hash32(secret, "round secret"),
            run_id,
            round_index,
            to_canonical_address(solver),
            to_hash32(previous_seed_base, "previous seed base"),
        ],
    )
    return int.from_bytes(keccak256(encoded), "big") % BPS_DENOMINATOR


def is_round_planted(
    secret: bytes | str,
    run_id: int,
    round_index: int,
    solver: str,
    previous_seed_base: bytes | str,
    plant_rate_bps: int,
) -> bool:
    """Whether the solver must plant in this round: its draw falls below the run's plant rate."""
    if not 0 <= plant_rate_bps <= MAX_PLANT_RATE_BPS:
        raise PlantError(f"the plant rate must be in [0, {MAX_PLANT_RATE_BPS}] bps, got {plant_rate_bps}")
    return compute_plant_draw(secret, run_id, round_index, solver, previous_seed_base) < plant_rate_bps


def get_reveal_end(attest_end: int, challenge_end: int) -> int:
    """The end (exclusive) of a round's reveal window: the middle of its challenge window, rounded down
    (Plants._revealEnd; tests/vectors/planting.json holds the cases forge checks too)."""
    if not 0 <= attest_end <= challenge_end:
        raise PlantError(f"a round's challenge window ends after its attest window, got {attest_end}, {challenge_end}")
    return attest_end + (challenge_end - attest_end) // 2


def is_in_reveal_window(times: RoundTimes, now: int) -> bool:
    """Whether a reveal of the current round's secret at `now` counts (Plants.reveal records it): the run not
    finished and attestEnd <= now < revealEnd. Earlier it reverts TooEarly, later OutsideRevealWindow."""
    return not times.finished and times.attest_end <= now < get_reveal_end(times.attest_end, times.challenge_end)


def is_reveal_overdue(times: RoundTimes, now: int) -> bool:
    """Whether an owed reveal of the current round can be reported missing at `now` (Plants.reportUnrevealed): the run
    not finished and the reveal window closed (now >= revealEnd); the round settles later, ending the report."""
    return not times.finished and now >= get_reveal_end(times.attest_end, times.challenge_end)
