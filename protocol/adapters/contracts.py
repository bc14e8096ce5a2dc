"""Typed calls into the gradledger contracts, on top of the one chain client.

Each method is one contract function; structs travel as frozen dataclasses and come back as
dataclasses, so roles never build ABI tuples by hand. Names follow the contracts
(docs/contracts.md); amounts are integers in wei.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from enum import IntEnum
from typing import Any

from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from protocol.adapters.chain import ChainClient, TxResult
from protocol.hashing import Hash32, to_hash32

ROLE_SOLVER = 1
ROLE_VERIFIER = 2


class AttestationState(IntEnum):
    NONE = 0
    ATTESTED = 1
    CHALLENGED = 2
    FINALIZED = 3
    UPHELD = 4
    OVERTURNED = 5


class ClaimStatus(IntEnum):
    NONE = 0
    POSTED = 1
    CHALLENGED = 2
    UPHELD = 3
    SETTLED = 4


@dataclass(frozen=True)
class RunTerms:
    """The on-chain `RunConfig` struct: what a run is created with (field order = Solidity)."""

    config_hash: bytes
    dataset_root: bytes
    theta0_hash: bytes
    inner_steps: int
    steps_per_segment: int
    samples_per_commitment: int
    verifiers_per_commitment: int
    jury_size: int
    commit_window: int
    attest_window: int
    challenge_window: int
    dispute_timeout: int
    solver_min_stake: int
    verifier_min_stake: int
    attestation_bond: int
    challenge_bond: int
    solver_share_bps: int
    verifier_share_bps: int
    juror_share_bps: int
    shares_per_round: int
    revenue_release_period: int
    max_rounds: int

    def to_abi(self) -> tuple:
        return astuple(self)


@dataclass(frozen=True)
class Commitment:
    """What a solver committed for a round (the chain stores only its hash)."""

    root: Hash32
    delta_hash: Hash32
    tokens: int

    def to_abi(self) -> tuple:
        return (self.root, self.delta_hash, self.tokens)


@dataclass(frozen=True)
class AttestationRef:
    """One verifier seat of one commitment."""

    run_id: int
    round: int
    solver: str
    slot: int

    def to_abi(self) -> tuple:
        return (self.run_id, self.round, to_checksum_address(self.solver), self.slot)


@dataclass(frozen=True)
class LeafData:
    """The fields of a segment leaf that the commitment does not already fix."""

    start_hash: Hash32
    end_hash: Hash32
    sketch_hash: Hash32
    tokens: int

    def to_abi(self) -> tuple:
        return (self.start_hash, self.end_hash, self.sketch_hash, self.tokens)


@dataclass(frozen=True)
class RoundTimes:
    round: int
    start: int
    commit_end: int
    attest_end: int
    challenge_end: int
    finished: bool


@dataclass(frozen=True)
class Claim:
    theta_hash: Hash32
    claimer: str
    window_end: int
    nonce: int
    status: ClaimStatus
    bond_paid: bool


class DisputeStatus(IntEnum):
    NONE = 0
    OPEN = 1
    JURY_DRAWN = 2
    DECIDED = 3
    EXECUTED = 4
    EXPIRED = 5


@dataclass(frozen=True)
class DisputeTerms:
    challenge_bond: int
    dispute_timeout: int
    jury_size: int


@dataclass(frozen=True)
class DisputeRecord:
    """`Disputes.disputeOf` (field order = the Solidity struct)."""

    challenger: str
    deadline: int
    opened_block: int
    status: DisputeStatus
    kind: int
    jury_offset: int
    registry_size: int
    pool_size: int
    jury_size: int
    eligible: int
    signers: int
    claimed: int
    challenger_wins: bool
    aggregate_hash: Hash32
    reward_per_juror: int


@dataclass(frozen=True)
class AttestationInfo:
    state: AttestationState
    is_fail: bool
    shares_minted: bool
    sample_index: int


class ProtocolClient:
    """The gradledger contracts of one deployment, with typed arguments and results."""

    def __init__(self, chain: ChainClient) -> None:
        self.chain = chain

    # -- stakes ----------------------------------------------------------------------------

    def deposit_stake(self, account: LocalAccount, role: int, amount_wei: int) -> TxResult:
        return self.chain.send(account, "StakeManager", "deposit", role, value=amount_wei)

    def bonded_of(self, address: str, role: int) -> int:
        return self.chain.call("StakeManager", "bondedOf", to_checksum_address(address), role)

    def stake_of(self, address: str, role: int) -> tuple[int, int, int, int]:
        """(bonded, unbonding, release time, locks)."""
        return tuple(self.chain.call("StakeManager", "stakeOf", to_checksum_address(address), role))

    # -- runs ------------------------------------------------------------------------------

    def create_run(self, account: LocalAccount, terms: RunTerms, reward_pool_wei: int) -> tuple[int, TxResult]:
        result = self.chain.send(account, "RunRegistry", "createRun", terms.to_abi(), value=reward_pool_wei)
        created = [e for e in result.events if e.name == "RunCreated"]
        return created[0].args["runId"], result

    def join_run(self, account: LocalAccount, run_id: int) -> TxResult:
        return self.chain.send(account, "RunRegistry", "join", run_id)

    def has_joined(self, run_id: int, solver: str) -> bool:
        return self.chain.call("RunRegistry", "hasJoined", run_id, to_checksum_address(solver))

    def round_times(self, run_id: int) -> RoundTimes:
        return RoundTimes(*self.chain.call("RunRegistry", "roundTimes", run_id))

    def theta0_hash(self, run_id: int) -> Hash32:
        return to_hash32(self.chain.call("RunRegistry", "theta0Hash", run_id))

    def theta_of(self, run_id: int, round_index: int) -> Hash32:
        """θ_round's hash (θ0 for round 0; the settled claim of round-1 after that)."""
        return to_hash32(self.chain.call("RunRegistry", "thetaOf", run_id, round_index))

    def commit(self, account: LocalAccount, run_id: int, round_index: int, commitment: Commitment) -> TxResult:
        return self.chain.send(
            account,
            "RunRegistry",
            "commit",
            run_id,
            round_index,
            commitment.root,
            commitment.delta_hash,
            commitment.tokens,
        )

    def claim_of(self, run_id: int, round_index: int) -> Claim:
        raw = self.chain.call("RunRegistry", "claimOf", run_id, round_index)
        values = _fields(raw, ("thetaHash", "claimer", "windowEnd", "nonce", "status", "bondPaid"))
        return Claim(to_hash32(values[0]), values[1], values[2], values[3], ClaimStatus(values[4]), bool(values[5]))

    def withdraw_claim_bond(self, account: LocalAccount, run_id: int, round_index: int) -> TxResult:
        return self.chain.send(account, "RunRegistry", "withdrawClaimBond", run_id, round_index)

    def post_claim(
        self, account: LocalAccount, run_id: int, round_index: int, theta_hash: bytes, bond_wei: int
    ) -> TxResult:
        return self.chain.send(account, "RunRegistry", "postClaim", run_id, round_index, theta_hash, value=bond_wei)

    def settle(self, account: LocalAccount, run_id: int, round_index: int) -> TxResult:
        return self.chain.send(account, "RunRegistry", "settle", run_id, round_index)

    def is_settled(self, run_id: int, round_index: int) -> bool:
        return self.chain.call("RunRegistry", "isSettled", run_id, round_index)

    def open_disputes(self, run_id: int) -> int:
        return _fields(self.chain.call("RunRegistry", "runState", run_id), ())[4]

    def get_commitments(self, run_id: int, round_index: int, from_block: int) -> dict[str, Commitment]:
        """Solver address -> commitment, from the `Committed` events of (run, round)."""
        found = {}
        for event in self.chain.get_events(from_block, names=["Committed"]):
            if event.args["runId"] == run_id and event.args["round"] == round_index:
                found[event.args["solver"]] = Commitment(
                    to_hash32(event.args["root"]), to_hash32(event.args["deltaHash"]), event.args["tokens"]
                )
        return found

    def challenge_bond(self, run_id: int) -> int:
        return self.chain.call("RunRegistry", "disputeTerms", run_id)[0]

    def run_params(self, run_id: int) -> Any:
        return self.chain.call("RunRegistry", "runParams", run_id)

    # -- verification ----------------------------------------------------------------------

    def register_verifier(self, account: LocalAccount, run_id: int) -> TxResult:
        return self.chain.send(account, "Verification", "register", run_id)

    def verifier_count(self, run_id: int) -> int:
        return self.chain.call("Verification", "verifierCount", run_id)

    def draw_seed(self, account: LocalAccount, run_id: int, round_index: int) -> TxResult:
        return self.chain.send(account, "Verification", "drawSeed", run_id, round_index)

    def seed_base(self, run_id: int, round_index: int) -> Hash32:
        return to_hash32(self.chain.call("Verification", "seedBase", run_id, round_index))

    def assigned_verifier(self, ref: AttestationRef) -> tuple[str, bool]:
        verifier, eligible = self.chain.call("Verification", "assignedVerifier", ref.to_abi())
        return verifier, eligible

    def sampled_segment(self, run_id: int, round_index: int, solver: str, sample_index: int) -> int:
        return self.chain.call(
            "Verification", "sampledSegment", run_id, round_index, to_checksum_address(solver), sample_index
        )

    def attest_pass(
        self, account: LocalAccount, ref: AttestationRef, commitment: Commitment, bond_wei: int
    ) -> TxResult:
        return self.chain.send(account, "Verification", "attestPass", ref.to_abi(), commitment.to_abi(), value=bond_wei)

    def attest_fail(
        self,
        account: LocalAccount,
        ref: AttestationRef,
        commitment: Commitment,
        sample_index: int,
        leaf: LeafData,
        proof: list[bytes],
        bond_wei: int,
    ) -> TxResult:
        return self.chain.send(
            account, "Verification", "attestFail", ref.to_abi(), commitment.to_abi(), sample_index, leaf.to_abi(),
            list(proof), value=bond_wei,
        )  # fmt: skip

    def attestation_of(self, ref: AttestationRef) -> AttestationInfo:
        state, is_fail, minted, sample = self.chain.call("Verification", "attestationOf", ref.to_abi())
        return AttestationInfo(AttestationState(state), is_fail, minted, sample)

    def finalize(self, account: LocalAccount, ref: AttestationRef) -> TxResult:
        return self.chain.send(account, "Verification", "finalize", ref.to_abi())

    def commitment_status(self, run_id: int, round_index: int, solver: str) -> dict[str, Any]:
        raw = self.chain.call("Verification", "commitmentStatusOf", run_id, round_index, to_checksum_address(solver))
        names = ("roundPlusOne", "tokens", "passes", "faults", "solverMinted", "live", "seats")
        return dict(zip(names, _fields(raw, names), strict=True))

    def is_accepted(self, run_id: int, round_index: int, solver: str) -> bool:
        """Verified work: at least one standing pass and no standing fault (Verification's rule)."""
        status = self.commitment_status(run_id, round_index, solver)
        return status["passes"] > 0 and status["faults"] == 0

    def claim_solver_shares(self, account: LocalAccount, run_id: int, round_index: int, solver: str) -> TxResult:
        return self.chain.send(
            account, "Verification", "claimSolverShares", run_id, round_index, to_checksum_address(solver)
        )

    def claim_verifier_shares(self, account: LocalAccount, ref: AttestationRef) -> TxResult:
        return self.chain.send(account, "Verification", "claimVerifierShares", ref.to_abi())

    # -- disputes and juries ---------------------------------------------------------------

    def register_juror(self, account: LocalAccount, public_key_g1: bytes, proof_of_possession_g2: bytes) -> TxResult:
        return self.chain.send(account, "Disputes", "registerJuror", public_key_g1, proof_of_possession_g2)

    def deregister_juror(self, account: LocalAccount) -> TxResult:
        return self.chain.send(account, "Disputes", "deregisterJuror")

    def juror_of(self, address: str) -> tuple[int, bool]:
        """(registry index + 1, active); (0, False) for an account that never registered."""
        index_plus_one, active = self.chain.call("Disputes", "jurors", to_checksum_address(address))
        return index_plus_one, active

    def juror_count(self) -> int:
        return self.chain.call("Disputes", "jurorCount")

    def attester_of(self, ref: AttestationRef) -> str:
        return self.chain.call("Verification", "attesterOf", ref.to_abi())

    def claimer_of(self, run_id: int, round_index: int) -> str:
        return self.chain.call("RunRegistry", "claimerOf", run_id, round_index)

    def dispute_terms(self, run_id: int) -> DisputeTerms:
        return DisputeTerms(*_fields(self.chain.call("RunRegistry", "disputeTerms", run_id), ()))

    def dispute_of(self, dispute_id: bytes) -> DisputeRecord:
        raw = _fields(self.chain.call("Disputes", "disputeOf", dispute_id), ())
        return DisputeRecord(
            raw[0], raw[1], raw[2], DisputeStatus(raw[3]), raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10],
            raw[11], bool(raw[12]), to_hash32(raw[13]), raw[14],
        )  # fmt: skip

    def challenge_attestation(
        self,
        account: LocalAccount,
        ref: AttestationRef,
        commitment: Commitment,
        sample_index: int,
        leaf: LeafData,
        proof: list[bytes],
        bond_wei: int,
    ) -> TxResult:
        return self.chain.send(
            account, "Disputes", "challengeAttestation", ref.to_abi(), commitment.to_abi(), sample_index,
            leaf.to_abi(), list(proof), value=bond_wei,
        )  # fmt: skip

    def challenge_claim(
        self, account: LocalAccount, run_id: int, round_index: int, claim_nonce: int, bond_wei: int
    ) -> TxResult:
        return self.chain.send(account, "Disputes", "challengeClaim", run_id, round_index, claim_nonce, value=bond_wei)

    def draw_jury(self, account: LocalAccount, subject: Any, pool: list[tuple[str, bytes]]) -> TxResult:
        """`subject` is a protocol.jury.DisputeSubject; `pool` the (account, G1 key) of every pool seat."""
        seats = [(to_checksum_address(a), bytes(k)) for a, k in pool]
        return self.chain.send(account, "Disputes", "drawJury", subject.to_abi(), seats)

    def submit_verdict(
        self,
        account: LocalAccount,
        subject: Any,
        challenger_wins: bool,
        signers: int,
        signature_g2: bytes,
        eligible_aggregate_g1: bytes,
        non_signers: list[tuple[int, str, bytes]],
    ) -> TxResult:
        rows = [(seat, to_checksum_address(a), bytes(k)) for seat, a, k in non_signers]
        return self.chain.send(
            account, "Disputes", "submitVerdict", subject.to_abi(), challenger_wins, signers, signature_g2,
            eligible_aggregate_g1, rows,
        )  # fmt: skip

    def execute_dispute(self, account: LocalAccount, subject: Any) -> TxResult:
        return self.chain.send(account, "Disputes", "execute", subject.to_abi())

    def expire_dispute(self, account: LocalAccount, subject: Any) -> TxResult:
        return self.chain.send(account, "Disputes", "expire", subject.to_abi())

    def claim_juror_reward(self, account: LocalAccount, subject: Any, seat: int, public_key_g1: bytes) -> TxResult:
        return self.chain.send(account, "Disputes", "claimJurorReward", subject.to_abi(), seat, public_key_g1)

    # -- shares and revenue --------------------------------------------------------------

    def share_token(self, run_id: int) -> str:
        return self.chain.call("ModelShares", "shareToken", run_id)

    def shares_of(self, run_id: int, holder: str) -> int:
        token = self.chain.w3.eth.contract(
            address=self.share_token(run_id), abi=self.chain.manifest.contracts["RunShares"].abi
        )
        return token.functions.balanceOf(to_checksum_address(holder)).call()

    def pay_revenue(self, account: LocalAccount, run_id: int, amount_wei: int) -> TxResult:
        return self.chain.send(account, "ModelShares", "payRevenue", run_id, value=amount_wei)

    def credits_of(self, contract: str, address: str) -> int:
        return self.chain.call(contract, "credits", to_checksum_address(address))

    def withdraw_credits(self, account: LocalAccount, contract: str) -> TxResult:
        return self.chain.send(account, contract, "withdraw")


def _fields(raw: Any, names: tuple[str, ...]) -> tuple:
    """A struct returned by web3 as a tuple (or an object with attributes), as a plain tuple."""
    if isinstance(raw, (tuple, list)):
        return tuple(raw)
    if hasattr(raw, "values"):
        return tuple(raw.values())
    return tuple(getattr(raw, n) for n in names)
