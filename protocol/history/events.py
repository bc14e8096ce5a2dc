"""The contracts' events a run's history is folded from, the fields read from each, and fault keys.

One place for every event name and field the auditor depends on (a renamed event or field is one
edit here); `find_missing_event_fields` tells the auditor, from the ABIs in the deployment
manifest, when the contracts and this module disagree. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from eth_abi import encode as abi_encode
from eth_utils import to_canonical_address, to_checksum_address

from protocol.constants import FAULT_ATTESTATION, FAULT_SOLVER, ROLE_SOLVER, ROLE_VERIFIER
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex, keccak256, to_hash32

# ---------------------------------------------------------------------------------------------
# The events this module reads, and the fields it reads from each (one place: a rename is here).

RUN_CONFIG_FIELDS: dict[str, str] = {
    # RunConfig struct field (Solidity) -> RunSettings attribute
    "configHash": "config_hash",
    "datasetRoot": "dataset_root",
    "theta0Hash": "theta0_hash",
    "innerSteps": "inner_steps",
    "stepsPerSegment": "steps_per_segment",
    "samplesPerCommitment": "samples_per_commitment",
    "verifiersPerCommitment": "verifiers_per_commitment",
    "jurySize": "jury_size",
    "commitWindow": "commit_window",
    "attestWindow": "attest_window",
    "challengeWindow": "challenge_window",
    "disputeTimeout": "dispute_timeout",
    "solverMinStake": "solver_min_stake",
    "verifierMinStake": "verifier_min_stake",
    "attestationBond": "attestation_bond",
    "challengeBond": "challenge_bond",
    "solverShareBps": "solver_share_bps",
    "verifierShareBps": "verifier_share_bps",
    "jurorShareBps": "juror_share_bps",
    "sharesPerRound": "shares_per_round",
    "revenueReleasePeriod": "revenue_release_period",
    "maxRounds": "max_rounds",
}

EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    # exactly the fields this module and protocol/ledger.py read (the audit depends on both)
    # RunRegistry
    "RunCreated": (
        "runId",
        "creator",
        "config",
        *(f"config.{f}" for f in RUN_CONFIG_FIELDS),
        "shareToken",
        "rewardPool",
    ),
    "RoundStarted": ("runId", "round", "start", "thetaHash"),
    "SolverJoined": ("runId", "solver"),
    "Committed": ("runId", "round", "solver", "root", "deltaHash", "numSegments", "tokens"),
    "ThetaClaimed": ("runId", "round", "claimer", "thetaHash", "nonce", "bond"),
    "ClaimResolved": ("runId", "round", "nonce", "status"),
    "RoundSettled": ("runId", "round", "thetaHash", "claimer", "nonce"),
    "RunFinished": ("runId",),
    "ClaimBondWithdrawn": ("runId", "round", "amount"),
    # Verification (and Disputes: Withdrawn)
    "VerifierRegistered": ("runId", "verifier"),
    "SeedDrawn": ("runId", "round", "seedBase", "blockNumber", "verifierCount"),
    "PassAttested": ("runId", "round", "solver", "verifier", "slot"),
    "FailAttested": ("runId", "round", "solver", "verifier", "slot", "sampleIndex", "segmentIndex"),
    "AttestationFinalized": ("runId", "round", "solver", "slot", "bond"),
    "AttestationResolved": ("runId", "round", "solver", "slot", "state", "bond"),
    "VerifierSharesClaimed": ("runId", "round", "solver", "slot", "verifier", "shares"),
    "SolverSharesClaimed": ("runId", "round", "solver", "shares"),
    "Withdrawn": ("amount",),
    # Disputes
    "AttestationChallenged": ("disputeId", "runId", "round", "solver", "slot", "challenger"),
    "ClaimChallenged": ("disputeId", "runId", "round", "claimNonce", "claimer", "challenger"),
    "JuryDrawn": ("disputeId", "jurySize"),
    "VerdictSubmitted": ("disputeId", "challengerWins", "signerCount"),
    "DisputeExecuted": (
        "disputeId",
        "challengerWins",
        "winner",
        "total",
        "toWinner",
        "bondReturned",
        "rewardPerJuror",
        "signerCount",
        "toPool",
    ),
    "DisputeExpired": ("disputeId", "bondReturned"),
    "JurorRewardClaimed": ("disputeId", "juror", "seat", "reward", "shares"),
    # StakeManager
    "StakeDeposited": ("account", "role", "amount", "bonded"),
    "UnbondingRequested": ("account", "role", "amount", "unbonding"),
    "StakeWithdrawn": ("account", "role", "amount"),
    "StakeSlashed": ("account", "role", "faultKey", "requested", "taken", "bondedAfter", "unbondingAfter"),
    # ModelShares
    "PoolFunded": ("runId", "from", "amount"),
    "PoolReleased": ("runId", "round", "amount"),
    "RevenuePaid": ("runId", "payer", "amount"),
    "SharesMinted": ("runId", "round", "to", "kind", "amount", "mintedInRound"),
    # RunShares (the run's share token)
    "Transfer": ("from", "to", "value"),
    "RevenueWithdrawn": ("holder", "amount"),
    "UnownedRevenueSwept": ("to", "amount"),
}


# Enum values as the contracts number them.
ATTESTATION_STATES = ("none", "attested", "challenged", "finalized", "upheld", "overturned")
CLAIM_STATUSES = ("none", "posted", "challenged", "upheld", "settled")
SHARE_KINDS = ("solver", "verifier", "juror")
ROLE_NAMES = {ROLE_SOLVER: "solver", ROLE_VERIFIER: "verifier"}
FINISHED_RUN_ROUND = 2**64 - 1  # PoolReleased's round for slash proceeds reaching a finished run


class HistoryError(GradledgerError):
    """The events do not describe the requested run (or contradict the contracts' rules)."""


class EventLike(Protocol):
    contract: str
    name: str
    args: Mapping[str, Any]
    block_number: int
    log_index: int


@dataclass(frozen=True)
class ChainEvent:
    """A decoded event of a deployment's contract and where it happened.

    The chain adapter (protocol/adapters/chain.py) decodes logs into these; tests build them by hand.
    """

    contract: str
    name: str
    args: Mapping[str, Any]
    block_number: int
    log_index: int = 0
    transaction_hash: str = ""


def to_address(value: Any) -> str:
    """An address field of an event as a checksummed 0x-string."""
    return to_checksum_address(value)


def to_hash_hex(value: Any) -> str:
    """A bytes32 field of an event (bytes, or 0x-hex) as a 0x-prefixed hex string."""
    return hash_to_hex(to_hash32(value if isinstance(value, (bytes, bytearray, str)) else bytes(value)))


def get_tx_hash(event: EventLike) -> str:
    """The transaction an event came from ("" when the event was built without one)."""
    return str(getattr(event, "transaction_hash", ""))


def share_token_contract(run_id: int) -> str:
    """The contract name a run's share token is registered under (its events carry no runId)."""
    return f"RunShares#{run_id}"


def find_missing_event_fields(abi_events: Mapping[str, Iterable[str]]) -> list[str]:
    """What this module reads that the deployed ABIs lack: ["Committed.tokens", "RunCreated", ...].

    `abi_events` maps each event name of the manifest's ABIs to its input names, with the components
    of a struct input as "input.component" (e.g. "config.innerSteps").
    """
    missing = []
    for name, fields in EVENT_FIELDS.items():
        if name not in abi_events:
            missing.append(name)
            continue
        have = set(abi_events[name])
        missing.extend(f"{name}.{f}" for f in fields if f not in have)
    return missing


def compute_solver_fault_key(run_id: int, round_index: int, solver: str) -> str:
    """keccak256(abi.encode(FAULT_SOLVER, runId, round, solver)), as Verification and Disputes compute it."""
    encoded = abi_encode(
        ["bytes32", "uint256", "uint64", "address"], [FAULT_SOLVER, run_id, round_index, to_canonical_address(solver)]
    )
    return hash_to_hex(keccak256(encoded))


def compute_attestation_fault_key(run_id: int, round_index: int, solver: str, slot: int) -> str:
    """keccak256(abi.encode(FAULT_ATTESTATION, runId, round, solver, slot)), as Disputes computes it."""
    encoded = abi_encode(
        ["bytes32", "uint256", "uint64", "address", "uint8"],
        [FAULT_ATTESTATION, run_id, round_index, to_canonical_address(solver), slot],
    )
    return hash_to_hex(keccak256(encoded))
