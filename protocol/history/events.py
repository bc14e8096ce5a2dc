"""The contracts' events a run's history is folded from, the fields read from each, and fault keys.

One place for every event name and field the auditor depends on (a renamed event or field is one
edit here); `find_missing_event_fields` tells the auditor, from the ABIs in the deployment
manifest, when the contracts and this module disagree. Pure: no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol, cast

from eth_abi import encode as abi_encode
from eth_utils import to_canonical_address, to_checksum_address

from protocol.constants import FAULT_ATTESTATION, FAULT_SOLVER, ROLE_SOLVER, ROLE_VERIFIER
from protocol.contract_constants import AttestationState, ClaimStatus
from protocol.contract_constants import ShareKind as ContractShareKind
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex, keccak256, to_hash32
from protocol.history.records import ShareKind
from protocol.types import RunTerms, StructError


def to_solidity_name(attribute: str) -> str:
    """A Python struct attribute as the Solidity field it mirrors: `theta0_hash` -> `theta0Hash`."""
    head, *rest = attribute.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# ---------------------------------------------------------------------------------------------
# The events this module reads, and the fields it reads from each (one place: a rename is here).

EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    # exactly the fields this module and protocol/ledger.py read (the audit depends on both)
    # RunRegistry
    "RunCreated": (
        "runId",
        "creator",
        "config",
        # the RunConfig struct's components, from its one Python spelling (protocol.types.RunTerms)
        *(f"config.{to_solidity_name(f.name)}" for f in fields(RunTerms)),
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
    "CommitmentOpened": ("runId", "round", "solver"),
    "CommitmentUnopened": ("runId", "round", "solver", "slashed"),
    # Verification (and Disputes: Withdrawn)
    "VerifierRegistered": ("runId", "verifier"),
    "SeedDrawn": ("runId", "round", "seedBase", "blockNumber", "verifierCount"),
    "PassAttested": ("runId", "round", "solver", "verifier", "slot"),
    "FailAttested": ("runId", "round", "solver", "verifier", "slot", "sampleIndex", "segmentIndex"),
    "AttestationFinalized": ("runId", "round", "solver", "slot", "bond"),
    "AttestationResolved": ("runId", "round", "solver", "slot", "state", "bond"),
    "VerifierSharesClaimed": ("runId", "round", "solver", "slot", "verifier", "shares"),
    "SolverSharesClaimed": ("runId", "round", "solver", "shares"),
    "AbstentionReported": ("runId", "round", "solver", "slot", "verifier", "reporter", "taken"),
    "Withdrawn": ("amount",),
    # Disputes
    "AttestationChallenged": ("disputeId", "runId", "round", "solver", "slot", "challenger"),
    "ClaimChallenged": ("disputeId", "runId", "round", "claimNonce", "claimer", "challenger"),
    "PlantChallenged": ("disputeId", "runId", "round", "solver", "challenger", "segmentIndex"),
    "JuryDrawn": ("disputeId", "appeals", "seats"),
    "DisputeAppealed": ("disputeId", "appeals", "jurySize", "deadline"),
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
    "DisputeExpired": ("disputeId", "bondReturned", "fee"),
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
    "RoundRewardCredited": ("runId", "round", "to", "amount"),
    "RoundReleaseSwept": ("runId", "round", "amount"),
    # Plants (planted faults)
    "PlantTermsSet": ("runId", "rateBps", "jackpot", "penalty", "funded", "pool", "seedBlock"),
    "RunSeedDrawn": ("runId", "seedBlock", "seedBase"),
    "PlantPoolFunded": ("runId", "from", "amount", "pool"),
    "PlantForfeitHeld": ("runId", "round", "solver", "slot", "verifier", "amount"),
    "PlantForfeitReleased": ("runId", "round", "solver", "slot", "verifier", "amount", "returned", "pool"),
    "PlantAnchorSet": ("runId", "solver", "anchor", "round", "early"),
    "PlantRevealed": ("runId", "round", "solver", "secret", "planted"),
    "UnrevealedSlashed": ("runId", "round", "solver", "reporter", "taken"),
    "JackpotPaid": ("runId", "verifier", "amount", "pool"),
    "PlantDisproven": ("runId", "round", "solver"),
    "PlantApplied": ("runId", "round", "solver", "overturned", "forfeited"),
    # RunShares (the run's share token)
    "Transfer": ("from", "to", "value"),
    "RevenueWithdrawn": ("holder", "amount"),
    "UnownedRevenueSwept": ("to", "amount"),
}


# Enum values as the contracts number them.
# The names of the contracts' enums, in their order (protocol/contract_constants.py, generated from the Solidity).
ATTESTATION_STATES = tuple(state.name.lower() for state in AttestationState)
CLAIM_STATUSES = tuple(status.name.lower() for status in ClaimStatus)
SHARE_KINDS: tuple[ShareKind, ...] = tuple(cast(ShareKind, kind.name.lower()) for kind in ContractShareKind)
ROLE_NAMES = {ROLE_SOLVER: "solver", ROLE_VERIFIER: "verifier"}
FINISHED_RUN_ROUND = 2**64 - 1  # PoolReleased's round for slash proceeds reaching a finished run


class HistoryError(GradledgerError):
    """The events do not describe the requested run (or contradict the contracts' rules)."""


class EventLike(Protocol):
    """What the fold reads of an event: read-only, so frozen `ChainEvent`s and hand-built events both fit."""

    @property
    def contract(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def args(self) -> Mapping[str, Any]: ...

    @property
    def block_number(self) -> int: ...

    @property
    def log_index(self) -> int: ...


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
    """An address field of an event as a checksummed 0x-string.

    Memoized for strings: a checksum is a keccak of the address, and a run's few hundred addresses recur in every one
    of its events (two thirds of a fold's time went here: 4.8 s of 7.2 s over 300 rounds x 16 solvers)."""
    return _checksummed(value) if isinstance(value, str) else to_checksum_address(value)


@functools.lru_cache(maxsize=1 << 16)
def _checksummed(address: str) -> str:
    return to_checksum_address(address)


def to_hash_hex(value: Any) -> str:
    """A bytes32 field of an event (bytes, or 0x-hex) as a 0x-prefixed hex string."""
    return hash_to_hex(to_hash32(value if isinstance(value, (bytes, bytearray, str)) else bytes(value)))


def decode_run_terms(config: Any) -> RunTerms:
    """RunCreated's `config` (a mapping by Solidity field name, as the chain adapter decodes it) as RunTerms.

    Decoded by name only: a struct given as a bare tuple is refused rather than read by position.
    """
    if not isinstance(config, Mapping):
        raise HistoryError(f"RunCreated.config must be decoded by field name (a mapping), got {type(config).__name__}")
    try:
        return RunTerms.from_fields(config)
    except StructError as exc:
        raise HistoryError(f"RunCreated.config: {exc}") from exc


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
    for name, wanted in EVENT_FIELDS.items():
        if name not in abi_events:
            missing.append(name)
            continue
        have = set(abi_events[name])
        missing.extend(f"{name}.{f}" for f in wanted if f not in have)
    return missing


def compute_solver_fault_key(run_id: int, round_index: int, solver: str) -> str:
    """keccak256(abi.encode(FAULT_SOLVER, runId, round, solver)), as Verification, Disputes, RunRegistry (unopened)
    and Plants (an unrevealed plant) compute it: one key per commitment, so it is slashed at most once."""
    encoded = abi_encode(
        ["bytes32", "uint256", "uint64", "address"], [FAULT_SOLVER, run_id, round_index, to_canonical_address(solver)]
    )
    return hash_to_hex(keccak256(encoded))


def compute_attestation_fault_key(run_id: int, round_index: int, solver: str, slot: int) -> str:
    """keccak256(abi.encode(FAULT_ATTESTATION, runId, round, solver, slot)), as Disputes (an overturned attestation),
    Plants (a pass on a planted commitment) and Verification.reportAbstention (a seat left unattested) compute it."""
    encoded = abi_encode(
        ["bytes32", "uint256", "uint64", "address", "uint8"],
        [FAULT_ATTESTATION, run_id, round_index, to_canonical_address(solver), slot],
    )
    return hash_to_hex(keccak256(encoded))
