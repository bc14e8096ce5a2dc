"""Protocol constants that the contracts mirror (contracts/src/Constants.sol).

Every value here has a twin in Solidity. `python -m tests.vectors.generate_bls` writes them into
tests/vectors/constants.json; `forge test` (contracts/test/Constants.t.sol) checks the Solidity
library against that file and pytest checks the file against this module, so a change on one side
fails the build until the other side follows. Why each value is what it is: docs/contracts.md.
"""

from __future__ import annotations

from eth_hash.auto import keccak as _keccak

# Stake roles.
ROLE_SOLVER = 1
ROLE_VERIFIER = 2

# Bounds: every on-chain loop is bounded by one of these.
BPS_DENOMINATOR = 10_000
MAX_SAMPLES = 1024
MAX_VERIFIERS_PER_COMMITMENT = 8
MAX_OPENED_LEAVES = 64
MAX_VERIFIERS_PER_RUN = 65_535
MAX_JURY_SIZE = 21
# The smallest jury that can decide (and the smallest jury size a run may set); a silent jury is replaced
# MAX_APPEALS times by one of min(2J + 1, MAX_JURY_SIZE) seats before the dispute ends unresolved.
MIN_JURY_SIZE = 3
MAX_APPEALS = 2
JURY_PARTY_SLACK = 3
QUORUM_NUMERATOR = 2
QUORUM_DENOMINATOR = 3

# Payouts of forfeited bonds and slashed stake.
WINNER_REWARD_BPS = 5000
JUROR_REWARD_BPS = 2000
JUROR_MIN_STAKE = 10**18
# Seconds a juror's stake stays locked after it leaves the registry (2 days).
JUROR_EXIT_DELAY = 2 * 24 * 3600
# Seconds during which rewards stay claimable (30 days) before anyone sweeps what is unclaimed to the run's
# reward pool: juror rewards (after the dispute's deadline), fault rewards (after the unbonding delay that
# follows the proof).
REWARD_CLAIM_WINDOW = 30 * 24 * 3600
# Share of the challenge bond a challenger loses when its dispute ends without any verdict.
UNRESOLVED_CHALLENGE_FEE_BPS = 2000
# Upper bound on a run's plant rate (planted commitments per 10,000; docs/planted-faults.md).
MAX_PLANT_RATE_BPS = 2000
# Rounds between a solver's plant anchor and its first plantable round (the previous round's seed, an input of
# the plant draw, must not exist when the anchor is fixed).
PLANT_DELAY_ROUNDS = 2
# Upper bound on the hashes one plant reveal checks (rounds since the solver's last reveal).
MAX_REVEAL_GAP = 256

# Sampling domain of the verifier-list offset of a commitment (far above any segment sample index).
VERIFIER_DRAW_INDEX = 2**32
# Domain of a verifier seat's sub-seed: seat q of a commitment draws its verifier and its samples from
# keccak256(abi.encode(SEAT_SEED_TAG, commitment seed, q)) (protocol/sampling.py, Sampling.seatSeed).
SEAT_SEED_TAG = _keccak(b"gradledger.seat")

# Round seeds. A round starting in block B takes its seed from the hash of block
# B + ceil(commitWindow / blockSeconds) (`roundTimes(run).seedBlock`), blockSeconds being the deployment's
# declared block time (RunRegistry.blockSeconds, in [MIN_BLOCK_SECONDS, MAX_BLOCK_SECONDS]): every block is at
# least blockSeconds after its parent, so any block inside the commit window comes before it (and `commit`
# also reverts from that block on). `drawSeed` works only in the SEED_HORIZON_BLOCKS blocks after it (EVM
# `blockhash` reaches 256 blocks back); createRun refuses windows that do not leave room for it
# (protocol/windows.py, RunRegistry._validateWindows).
MIN_BLOCK_SECONDS = 1
MAX_BLOCK_SECONDS = 60
SEED_HORIZON_BLOCKS = 256
# The seed is the RANDAO value revealed in the seed block: the mixHash of block seedBlock + RANDAO_LAG_BLOCKS (a
# block's own mixHash is completed by its predecessor's proposer, who can still include commits before the seed block).
RANDAO_LAG_BLOCKS = 1
# Upper bound on a run's start delay (RunConfig.startDelay, seconds from createRun to round 0's start): 1 day. Enough to
# start nodes and register plant anchors; bounded because round 0's seed block is counted in blocks from creation, so
# every slot a chain skips during the delay postpones it (past openEnd, round 0 would be void).
MAX_START_DELAY = 24 * 3600

# Ownership shares and revenue.
REVENUE_PRECISION = 10**27
MAX_TOTAL_SHARES = 10**27
MIN_SUPPLY_FOR_RELEASE = 10**18
# Seconds after a run's last settlement before its creator may reclaim revenue nobody owns (30 days).
UNOWNED_REVENUE_GRACE = 30 * 24 * 3600

# BLS domain separation tags (py_ecc G2ProofOfPossession).
BLS_SIG_DST = b"BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_"
BLS_POP_DST = b"BLS_POP_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_"

# Fault domains: a slash happens at most once per fault key.
FAULT_SOLVER = _keccak(b"gradledger.fault.solver")
FAULT_ATTESTATION = _keccak(b"gradledger.fault.attestation")


def get_quorum(seats: int, appeals: int) -> int:
    """Signers a verdict needs from a jury of `seats` drawn seats at appeal level `appeals`, as `Disputes.quorum`
    computes it: ceil(seats * 2 / 3) before the last level, a simple majority (seats // 2 + 1) at the last
    (appeals == MAX_APPEALS), so a minority of the last jury cannot block every verdict."""
    if appeals >= MAX_APPEALS:
        return seats // 2 + 1
    return -(-seats * QUORUM_NUMERATOR // QUORUM_DENOMINATOR)


def get_appeal_jury_size(jury_size: int, appeals: int) -> int:
    """The jury size after `appeals` replacements: the run's, then min(2 * previous + 1, MAX_JURY_SIZE)."""
    for _ in range(appeals):
        jury_size = min(2 * jury_size + 1, MAX_JURY_SIZE)
    return jury_size


def get_constants() -> dict[str, int | str]:
    """Every mirrored constant by its Solidity name; bytes as 0x-hex (the vectors file's content)."""
    values: dict[str, int | bytes] = {
        "ROLE_SOLVER": ROLE_SOLVER,
        "ROLE_VERIFIER": ROLE_VERIFIER,
        "BPS_DENOMINATOR": BPS_DENOMINATOR,
        "MAX_SAMPLES": MAX_SAMPLES,
        "MAX_VERIFIERS_PER_COMMITMENT": MAX_VERIFIERS_PER_COMMITMENT,
        "MAX_OPENED_LEAVES": MAX_OPENED_LEAVES,
        "MAX_VERIFIERS_PER_RUN": MAX_VERIFIERS_PER_RUN,
        "MAX_JURY_SIZE": MAX_JURY_SIZE,
        "MIN_JURY_SIZE": MIN_JURY_SIZE,
        "MAX_APPEALS": MAX_APPEALS,
        "JURY_PARTY_SLACK": JURY_PARTY_SLACK,
        "QUORUM_NUMERATOR": QUORUM_NUMERATOR,
        "QUORUM_DENOMINATOR": QUORUM_DENOMINATOR,
        "WINNER_REWARD_BPS": WINNER_REWARD_BPS,
        "JUROR_REWARD_BPS": JUROR_REWARD_BPS,
        "JUROR_MIN_STAKE": JUROR_MIN_STAKE,
        "JUROR_EXIT_DELAY": JUROR_EXIT_DELAY,
        "UNRESOLVED_CHALLENGE_FEE_BPS": UNRESOLVED_CHALLENGE_FEE_BPS,
        "REWARD_CLAIM_WINDOW": REWARD_CLAIM_WINDOW,
        "MAX_PLANT_RATE_BPS": MAX_PLANT_RATE_BPS,
        "PLANT_DELAY_ROUNDS": PLANT_DELAY_ROUNDS,
        "MAX_REVEAL_GAP": MAX_REVEAL_GAP,
        "VERIFIER_DRAW_INDEX": VERIFIER_DRAW_INDEX,
        "SEAT_SEED_TAG": SEAT_SEED_TAG,
        "MIN_BLOCK_SECONDS": MIN_BLOCK_SECONDS,
        "MAX_BLOCK_SECONDS": MAX_BLOCK_SECONDS,
        "SEED_HORIZON_BLOCKS": SEED_HORIZON_BLOCKS,
        "RANDAO_LAG_BLOCKS": RANDAO_LAG_BLOCKS,
        "MAX_START_DELAY": MAX_START_DELAY,
        "REVENUE_PRECISION": REVENUE_PRECISION,
        "MAX_TOTAL_SHARES": MAX_TOTAL_SHARES,
        "MIN_SUPPLY_FOR_RELEASE": MIN_SUPPLY_FOR_RELEASE,
        "UNOWNED_REVENUE_GRACE": UNOWNED_REVENUE_GRACE,
        "BLS_SIG_DST": BLS_SIG_DST,
        "BLS_POP_DST": BLS_POP_DST,
        "FAULT_SOLVER": FAULT_SOLVER,
        "FAULT_ATTESTATION": FAULT_ATTESTATION,
    }
    return {name: "0x" + value.hex() if isinstance(value, bytes) else value for name, value in values.items()}
