"""Typed calls into the gradledger contracts, on top of the one chain client.

Each method is one contract function; structs travel as frozen dataclasses and come back as
dataclasses, so roles never build ABI tuples by hand. Names follow the contracts
(docs/contracts.md); amounts are integers in wei.
"""

from __future__ import annotations

from typing import Any

from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from protocol.adapters.chain import ChainClient, TxResult
from protocol.hashing import Hash32, to_hash32
from protocol.jury import DisputeSubject
from protocol.opening import CommitmentOpening, compute_opened_segments, decode_opening, get_opened_seat_count
from protocol.types import (
    AttestationInfo,
    AttestationRef,
    Claim,
    Commitment,
    CommitmentStatus,
    DisputeRecord,
    DisputeTerms,
    FaultRewardRecord,
    JurorRecord,
    LeafData,
    Opening,
    PlantForfeit,
    PlantPay,
    PlantStatus,
    PlantTerms,
    RoundTimes,
    RunSeed,
    RunTerms,
    decode_struct,
)

LEFT_MARKER = 2
"""RunRegistry.LEFT: the commitment hash of a solver that left a run."""


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
        """(bonded, unbonding, release time, reserved by open obligations)."""
        f = self.chain.call_fields("StakeManager", "stakeOf", to_checksum_address(address), role)
        return (f["bonded"], f["unbonding"], f["releaseTime"], f["reserved"])

    def is_covered(self, address: str, role: int) -> bool:
        """Whether the account's bonded stake covers everything it reserved (StakeManager.isCovered): attestPass,
        attestFail and commit revert StakeNotCovered otherwise. An overturned verifier keeps its reservation through
        its exit delay while the slash took its stake, so it is uncovered until it tops up (issue 36, finding 7)."""
        return self.chain.call("StakeManager", "isCovered", to_checksum_address(address), role)

    def free_stake_of(self, address: str, role: int) -> int:
        """Bonded stake not reserved by an obligation: what a new join or registration can reserve."""
        bonded, _, _, reserved = self.stake_of(address, role)
        return max(bonded - reserved, 0)

    # -- runs ------------------------------------------------------------------------------

    def block_seconds(self) -> int:
        """The chain's block time the deployment declared (RunRegistry.blockSeconds): every run's windows fit it."""
        return self.chain.call("RunRegistry", "blockSeconds")

    def create_run(self, account: LocalAccount, terms: RunTerms, reward_pool_wei: int) -> tuple[int, TxResult]:
        result = self.chain.send(account, "RunRegistry", "createRun", terms.to_abi(), value=reward_pool_wei)
        created = [e for e in result.events if e.name == "RunCreated"]
        return created[0].args["runId"], result

    def join_run(self, account: LocalAccount, run_id: int) -> TxResult:
        return self.chain.send(account, "RunRegistry", "join", run_id)

    def has_joined(self, run_id: int, solver: str) -> bool:
        """Whether `solver` ever joined the run (it stays true after `leaveRun`)."""
        return self.chain.call("RunRegistry", "hasJoined", run_id, to_checksum_address(solver))

    def creator_of(self, run_id: int) -> str:
        return self.chain.call("RunRegistry", "creatorOf", run_id)

    def run_participants(self, run_id: int, from_block: int, to_block: int) -> tuple[str, ...]:
        """Who a node of the run may need to reach, in chain order: its creator (who serves the run's config,
        dataset and θ0), then the solvers that joined it, the verifiers registered for it and the jurors that
        registered in blocks [from_block, to_block]."""
        found = [self.creator_of(run_id)]
        for event in self.chain.get_events(
            from_block, to_block, names=["SolverJoined", "VerifierRegistered", "JurorRegistered"],
            contracts=["RunRegistry", "VerifierRegistry", "JurorRegistry"],
        ):  # fmt: skip
            if event.name == "JurorRegistered" or event.args["runId"] == run_id:
                found.append(str(event.args.get("solver") or event.args.get("verifier") or event.args["juror"]))
        return tuple(dict.fromkeys(to_checksum_address(a) for a in found))

    def peer_url_of(self, account: str) -> str:
        """The URL `account` announced in PeerDirectory ("" if none)."""
        return self.chain.call("PeerDirectory", "urlOf", to_checksum_address(account))

    def announce_peer(self, account: LocalAccount, url: str) -> TxResult:
        return self.chain.send(account, "PeerDirectory", "announce", url)

    def withdraw_peer(self, account: LocalAccount) -> TxResult:
        """Remove `account`'s announced URL (PeerDirectory.withdraw; reverts NothingToWithdraw when none)."""
        return self.chain.send(account, "PeerDirectory", "withdraw")

    def is_member(self, run_id: int, solver: str) -> bool:
        """Whether `solver` joined the run and has not left it (its solverMinStake is reserved)."""
        f = self.chain.call_fields("RunRegistry", "commitmentOf", run_id, to_checksum_address(solver))
        return int.from_bytes(bytes(f["hash"]), "big") not in (0, LEFT_MARKER)

    def has_committed(self, run_id: int, round_index: int, solver: str) -> bool:
        """Whether the chain holds `solver`'s commitment of `round_index` now (state at the head, not events: a node
        checks its own commit after a reorg before sending it again)."""
        f = self.chain.call_fields("RunRegistry", "commitmentOf", run_id, to_checksum_address(solver))
        return bool(f["committed"]) and int(f["round"]) == round_index

    def leave_run(self, account: LocalAccount, run_id: int) -> TxResult:
        """Leave a run whose last commitment of this solver has settled: releases its reserved solverMinStake."""
        return self.chain.send(account, "RunRegistry", "leaveRun", run_id)

    def round_times(self, run_id: int) -> RoundTimes:
        return decode_struct(RoundTimes, self.chain.call_fields("RunRegistry", "roundTimes", run_id))

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
        return decode_struct(Claim, self.chain.call_fields("RunRegistry", "claimOf", run_id, round_index))

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
        return self.chain.call_fields("RunRegistry", "runState", run_id)["openDisputes"]

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
        return self.dispute_terms(run_id).challenge_bond

    def run_params(self, run_id: int) -> dict[str, Any]:
        return self.chain.call_fields("RunRegistry", "runParams", run_id)

    # -- verification ----------------------------------------------------------------------

    def register_verifier(self, account: LocalAccount, run_id: int) -> TxResult:
        return self.chain.send(account, "VerifierRegistry", "register", run_id)

    def deregister_verifier(self, account: LocalAccount, run_id: int) -> TxResult:
        """Leave the run's verifier list now; the stake stays reserved until `release_verifier` (exit delay)."""
        return self.chain.send(account, "VerifierRegistry", "deregister", run_id)

    def release_verifier(self, account: LocalAccount, run_id: int) -> TxResult:
        return self.chain.send(account, "VerifierRegistry", "releaseVerifier", run_id)

    def is_reserved(self, run_id: int, verifier: str) -> bool:
        """Whether `verifier` holds the run's verifierMinStake reservation (VerifierRegistry.isReserved): registered,
        or out of the list (left, or overturned) and still inside its exit delay."""
        return self.chain.call("VerifierRegistry", "isReserved", run_id, to_checksum_address(verifier))

    def verifier_count(self, run_id: int) -> int:
        return self.chain.call("VerifierRegistry", "size", run_id)

    def draw_seed(self, account: LocalAccount, run_id: int, round_index: int) -> TxResult:
        """Verification.drawSeed with the header of the block after the current round's seed block (its mixHash is the
        RANDAO value revealed in the seed block: the seed), fetched here so callers need only the round."""
        header = self.chain.get_block_header_rlp(self.round_times(run_id).randao_block)
        return self.chain.send(account, "Verification", "drawSeed", run_id, round_index, header)

    def seed_base(self, run_id: int, round_index: int) -> Hash32:
        """The round's seed base (Verification.seedOf: the first 12 bytes of the seed block's RANDAO value, its
        header's mixHash; zero until drawn)."""
        return to_hash32(self.chain.call_fields("Verification", "seedOf", run_id, round_index)["seedBase"])

    def seat_count(self, run_id: int, round_index: int) -> int:
        """Seats of the round's commitments that are not void: fewer than the run's when the verifier list is shorter
        (protocol.opening.get_opened_seat_count; 0 until the seed is drawn)."""
        seed = self.round_seed(run_id, round_index)
        return get_opened_seat_count(seed["verifiers"], seed["verifierCount"])

    def assigned_verifier(self, ref: AttestationRef) -> tuple[str, bool]:
        f = self.chain.call_fields("Verification", "assignedVerifier", ref.to_abi())
        return f["verifier"], f["eligible"]

    def sampled_segment(self, ref: AttestationRef, sample_index: int) -> int:
        """Segment of draw `sample_index` of seat `ref` (each seat draws its own samples)."""
        return self.chain.call(
            "Verification", "sampledSegment", ref.run_id, ref.round, to_checksum_address(ref.solver), ref.slot,
            sample_index,
        )  # fmt: skip

    def round_seed(self, run_id: int, round_index: int) -> dict[str, Any]:
        """Verification.roundSeed: the round's parameters fixed by drawSeed (all zero until drawn)."""
        return self.chain.call_fields("Verification", "roundSeed", run_id, round_index)

    def opened_segments(self, run_id: int, round_index: int, solver: str) -> tuple[int, ...]:
        """The segment of every entry a commitment's opening must prove, seat-major (the seed must be drawn)."""
        rs = self.round_seed(run_id, round_index)
        return compute_opened_segments(
            self.seed_base(run_id, round_index), run_id, round_index, solver, self.seat_count(run_id, round_index),
            rs["samples"], rs["numSegments"],
        )  # fmt: skip

    def open_commitment(
        self, account: LocalAccount, run_id: int, round_index: int, solver: str, commitment: Commitment,
        opening: CommitmentOpening,
    ) -> TxResult:  # fmt: skip
        leaves, proofs = opening.to_abi()
        return self.chain.send(
            account, "RunRegistry", "open", run_id, round_index, to_checksum_address(solver), commitment.to_abi(),
            leaves, proofs,
        )  # fmt: skip

    def report_unopened(self, account: LocalAccount, run_id: int, round_index: int, solver: str) -> TxResult:
        solver = to_checksum_address(solver)
        return self.chain.send(account, "RunRegistry", "reportUnopened", run_id, round_index, solver)

    def opening_state(self, run_id: int, round_index: int, solver: str) -> Opening:
        """OPENED or UNOPENED once resolved for that round, NONE before (or if the solver did not commit)."""
        return Opening(self.chain.call("RunRegistry", "openingOf", run_id, round_index, to_checksum_address(solver)))

    def get_opening(self, run_id: int, round_index: int, solver: str, from_block: int) -> CommitmentOpening | None:
        """The commitment's opened draws, decoded from its `CommitmentOpened` event's call data (None if not opened)."""
        for event in self.chain.get_events(from_block, names=["CommitmentOpened"]):
            a = event.args
            if a["runId"] == run_id and a["round"] == round_index and a["solver"].lower() == solver.lower():
                _, call = self.chain.contract("RunRegistry").decode_function_input(bytes(a["openCall"]))
                samples = self.round_seed(run_id, round_index)["samples"]
                segments = self.opened_segments(run_id, round_index, solver)
                return decode_opening(call["leaves"], call["proofs"], segments, samples)
        return None

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
        return decode_struct(AttestationInfo, self.chain.call_fields("Verification", "attestationOf", ref.to_abi()))

    def finalize(self, account: LocalAccount, ref: AttestationRef) -> TxResult:
        return self.chain.send(account, "Verification", "finalize", ref.to_abi())

    def commitment_status(self, run_id: int, round_index: int, solver: str) -> CommitmentStatus:
        fields = self.chain.call_fields(
            "Verification", "commitmentStatusOf", run_id, round_index, to_checksum_address(solver)
        )
        return decode_struct(CommitmentStatus, fields)

    def is_accepted(self, run_id: int, round_index: int, solver: str) -> bool:
        """Verified work whose Δ enters θ_(r+1): accepted on the chain's tally (protocol.types.is_commitment_accepted)
        and not unpaid under the plant rules (a planted commitment is never accepted: its passes were overturned)."""
        if not self.commitment_status(run_id, round_index, solver).accepted:
            return False
        return self.plant_pay(run_id, round_index, solver) != PlantPay.UNPAID

    def is_paid(self, run_id: int, round_index: int, solver: str) -> bool:
        """Whether `claimSolverShares` pays the commitment: counted paid on the chain's tally
        (protocol.types.is_commitment_paid: accepted, or planted and attested, and not found unpaid) and not unpaid
        under the plant rules (a reveal missed but never reported stays counted, and is never minted)."""
        if not self.commitment_status(run_id, round_index, solver).paid:
            return False
        return self.plant_pay(run_id, round_index, solver) != PlantPay.UNPAID

    def round_tally(self, run_id: int, round_index: int) -> dict[str, int]:
        """Verification.roundTally: standing attestations (`totalChecks`), paid commitments (`paidCommitments`, the
        denominator of every solver's shares) and the round's attestation bond (all zero until the seed is drawn)."""
        return {k: int(v) for k, v in self.chain.call_fields("Verification", "roundTally", run_id, round_index).items()}

    def report_abstention(self, account: LocalAccount, ref: AttestationRef) -> TxResult:
        """Verification.reportAbstention: seat `ref` of an opened commitment was not attested by attestEnd; its
        verifier is slashed the round's attestation bond into the run's reward pool (anyone, until challengeEnd)."""
        return self.chain.send(account, "Verification", "reportAbstention", ref.to_abi())

    def claim_solver_shares(self, account: LocalAccount, run_id: int, round_index: int, solver: str) -> TxResult:
        return self.chain.send(
            account, "Verification", "claimSolverShares", run_id, round_index, to_checksum_address(solver)
        )

    def claim_verifier_shares(self, account: LocalAccount, ref: AttestationRef) -> TxResult:
        return self.chain.send(account, "Verification", "claimVerifierShares", ref.to_abi())

    def claim_fault_reward(self, account: LocalAccount, ref: AttestationRef) -> TxResult:
        """FaultRewards.claimFaultReward: credit the prover of seat `ref` (a fail that stands: only fail seats prove a
        fault, an overturned pass's challenger is paid by its dispute) its equal share of the provers' part of the
        solver's slash, once the round is settled."""
        return self.chain.send(account, "FaultRewards", "claimFaultReward", ref.to_abi())

    def fault_reward_of(self, run_id: int, round_index: int, solver: str) -> FaultRewardRecord:
        fields = self.chain.call_fields(
            "FaultRewards", "faultRewardOf", run_id, round_index, to_checksum_address(solver)
        )
        return decode_struct(FaultRewardRecord, fields)

    # -- disputes and juries ---------------------------------------------------------------

    def register_juror(self, account: LocalAccount, public_key_g1: bytes, proof_of_possession_g2: bytes) -> TxResult:
        return self.chain.send(account, "JurorRegistry", "registerJuror", public_key_g1, proof_of_possession_g2)

    def deregister_juror(self, account: LocalAccount) -> TxResult:
        return self.chain.send(account, "JurorRegistry", "deregisterJuror")

    def release_juror(self, account: LocalAccount) -> TxResult:
        return self.chain.send(account, "JurorRegistry", "releaseJuror")

    def juror_of(self, address: str) -> JurorRecord:
        """The registry record of `address` (all zero for an account that never registered)."""
        fields = self.chain.call_fields("JurorRegistry", "jurors", to_checksum_address(address))
        return decode_struct(JurorRecord, fields)

    def juror_count(self) -> int:
        """Active jurors now."""
        return self.chain.call("JurorRegistry", "size")

    def attester_of(self, ref: AttestationRef) -> str:
        return self.chain.call("Verification", "attesterOf", ref.to_abi())

    def claimer_of(self, run_id: int, round_index: int) -> str:
        return self.chain.call("RunRegistry", "claimerOf", run_id, round_index)

    def dispute_terms(self, run_id: int) -> DisputeTerms:
        return decode_struct(DisputeTerms, self.chain.call_fields("RunRegistry", "disputeTerms", run_id))

    def dispute_of(self, dispute_id: bytes) -> DisputeRecord:
        return decode_struct(DisputeRecord, self.chain.call_fields("Disputes", "disputeOf", dispute_id))

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

    def challenge_plant(
        self,
        account: LocalAccount,
        run_id: int,
        round_index: int,
        solver: str,
        commitment: Commitment,
        segment: int,
        leaf: LeafData,
        proof: list[bytes],
        bond_wei: int,
    ) -> TxResult:
        """Disputes.challengePlant: segment `segment` of a planted commitment is not its planted training."""
        return self.chain.send(
            account, "Disputes", "challengePlant", run_id, round_index, to_checksum_address(solver),
            commitment.to_abi(), segment, leaf.to_abi(), list(proof), value=bond_wei,
        )  # fmt: skip

    def plant_secret_of(self, run_id: int, round_index: int, solver: str, from_block: int) -> Hash32 | None:
        """The secret a solver revealed for a round (its PlantRevealed event), None if it did not reveal it."""
        for event in self.chain.get_events(from_block, names=["PlantRevealed"], contracts=["Plants"]):
            a = event.args
            if a["runId"] == run_id and a["round"] == round_index and a["solver"].lower() == solver.lower():
                return to_hash32(a["secret"])
        return None

    def challenge_claim(
        self, account: LocalAccount, run_id: int, round_index: int, claim_nonce: int, bond_wei: int
    ) -> TxResult:
        return self.chain.send(account, "Disputes", "challengeClaim", run_id, round_index, claim_nonce, value=bond_wei)

    def draw_jury(self, account: LocalAccount, subject: DisputeSubject, pool_keys: list[bytes]) -> TxResult:
        """`subject` is a protocol.jury.DisputeSubject; `pool_keys` the G1 key of every pool seat, in seat order."""
        return self.chain.send(account, "Disputes", "drawJury", subject.to_abi(), [bytes(k) for k in pool_keys])

    def submit_verdict(
        self,
        account: LocalAccount,
        subject: DisputeSubject,
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

    def execute_dispute(self, account: LocalAccount, subject: DisputeSubject) -> TxResult:
        return self.chain.send(account, "Disputes", "execute", subject.to_abi())

    def expire_dispute(self, account: LocalAccount, subject: DisputeSubject) -> TxResult:
        return self.chain.send(account, "Disputes", "expire", subject.to_abi())

    def claim_juror_reward(self, account: LocalAccount, subject: DisputeSubject, seat: int) -> TxResult:
        return self.chain.send(account, "Disputes", "claimJurorReward", subject.to_abi(), seat)

    # -- shares and revenue --------------------------------------------------------------

    def share_token(self, run_id: int) -> str:
        return self.chain.call("ModelShares", "shareToken", run_id)

    def shares_of(self, run_id: int, holder: str) -> int:
        return self.chain.call(self.share_token_contract(run_id), "balanceOf", to_checksum_address(holder))

    def pay_revenue(self, account: LocalAccount, run_id: int, amount_wei: int) -> TxResult:
        return self.chain.send(account, "ModelShares", "payRevenue", run_id, value=amount_wei)

    def finished_at(self, run_id: int) -> int:
        """When the run's last round was settled (0 before): its unowned revenue is reclaimable a grace period
        later (ModelShares.reclaimUnownedRevenue)."""
        return self.chain.call("ModelShares", "finishedAt", run_id)

    def is_run_finished(self, run_id: int) -> bool:
        """Whether the run's last round was settled (ModelShares.finished)."""
        return self.chain.call("ModelShares", "finished", run_id)

    def round_release(self, run_id: int, round_index: int) -> dict[str, Any]:
        """ModelShares.roundReleaseOf: `amount` set aside for the round's contributors at its settlement,
        `credited` to them so far, `settledAt` (0: not settled) and whether the rest was `swept`."""
        return self.chain.call_fields("ModelShares", "roundReleaseOf", run_id, round_index)

    def sweep_round_release(self, account: LocalAccount, run_id: int, round_index: int) -> TxResult:
        """Send what a settled round's contributors did not claim within REWARD_CLAIM_WINDOW back to the pool, or
        into the revenue stream once the run is finished (anyone)."""
        return self.chain.send(account, "ModelShares", "sweepRoundRelease", run_id, round_index)

    def share_supply(self, run_id: int) -> int:
        """The run's share token's total supply."""
        return self.chain.call(self.share_token_contract(run_id), "totalSupply")

    def reclaim_unowned_revenue(self, account: LocalAccount, run_id: int) -> TxResult:
        """Send a finished run's revenue to its creator when no whole share exists (anyone may send it); the
        result's events include the run token's UnownedRevenueSwept (the token is tracked for that)."""
        self.share_token_contract(run_id)
        return self.chain.send(account, "ModelShares", "reclaimUnownedRevenue", run_id)

    def share_token_contract(self, run_id: int) -> str:
        """The chain client's name of the run's share token, registered on first use so its events and errors
        decode ("RunShares#<run>")."""
        name = f"RunShares#{run_id}"
        if not self.chain.has_contract(name):
            self.chain.add_contract(name, self.share_token(run_id), self.chain.deployment.contracts["RunShares"].abi)
        return name

    # -- planted faults (Plants) -------------------------------------------------------------

    def set_plant_terms(self, account: LocalAccount, run_id: int, terms: PlantTerms, pool_wei: int) -> TxResult:
        """Plants.setTerms (the run's creator, in round 0), funding the plant pool with `pool_wei`."""
        return self.chain.send(
            account, "Plants", "setTerms", run_id, terms.rate_bps, terms.jackpot, terms.penalty, value=pool_wei
        )

    def plant_terms(self, run_id: int) -> PlantTerms:
        return decode_struct(PlantTerms, self.chain.call_fields("Plants", "termsOf", run_id))

    def plant_pool(self, run_id: int) -> int:
        return self.chain.call("Plants", "pool", run_id)

    def fund_plant_pool(self, account: LocalAccount, run_id: int, amount_wei: int) -> TxResult:
        """Plants.fundPool: add `amount_wei` to a run's plant pool (anyone, any time)."""
        return self.chain.send(account, "Plants", "fundPool", run_id, value=amount_wei)

    def is_pay_blocked(self, run_id: int, round_index: int, solver: str) -> bool:
        """Plants.isPayBlocked: the commitment is unpaid whatever happens to it (planting on, the round plantable,
        no plant anchor old enough)."""
        return self.chain.call("Plants", "isPayBlocked", run_id, round_index, to_checksum_address(solver))

    def forfeit_of(self, ref: AttestationRef) -> PlantForfeit:
        """Plants.forfeitOf: the bond and penalty of a pass on a planted commitment held until the round settles."""
        return decode_struct(PlantForfeit, self.chain.call_fields("Plants", "forfeitOf", ref.to_abi()))

    def release_forfeit(self, account: LocalAccount, ref: AttestationRef) -> TxResult:
        """Plants.releaseForfeit (anyone, once the round is settled): the held forfeit of seat `ref` joins the plant
        pool, or is credited back to its verifier when a jury disproved the plant."""
        return self.chain.send(account, "Plants", "releaseForfeit", ref.to_abi())

    def set_plant_anchor(self, account: LocalAccount, run_id: int, anchor: Hash32) -> TxResult:
        return self.chain.send(account, "Plants", "setAnchor", run_id, anchor)

    def run_seed(self, run_id: int) -> RunSeed:
        """Plants.runSeedOf: the run seed block (0: the terms were set after the start), whether round 0's plant seed
        was drawn, and its value (zero until drawn)."""
        fields = self.chain.call_fields("Plants", "runSeedOf", run_id)
        return RunSeed(int(fields["seedBlock"]), bool(fields["drawn"]), to_hash32(fields["seedBase"]))

    def draw_run_seed(self, account: LocalAccount, run_id: int) -> TxResult:
        """Plants.drawRunSeed with the header of the block after the run seed block (anyone, once, in the 256 blocks
        after that block)."""
        header = self.chain.get_block_header_rlp(self.run_seed(run_id).randao_block)
        return self.chain.send(account, "Plants", "drawRunSeed", run_id, header)

    def plant_anchor_round(self, run_id: int, solver: str) -> int | None:
        """The round the solver registered its anchor in (None: no anchor)."""
        chain = self.chain.call_fields("Plants", "chainOf", run_id, to_checksum_address(solver))
        return chain["anchorRound"] if chain["set"] else None

    def reveal_plant(self, account: LocalAccount, run_id: int, round_index: int, secret: Hash32) -> TxResult:
        return self.chain.send(account, "Plants", "reveal", run_id, round_index, secret)

    def report_unrevealed(self, account: LocalAccount, run_id: int, round_index: int, solver: str) -> TxResult:
        return self.chain.send(account, "Plants", "reportUnrevealed", run_id, round_index, to_checksum_address(solver))

    def plant_of(self, run_id: int, round_index: int, solver: str) -> PlantStatus:
        fields = self.chain.call_fields("Plants", "plantOf", run_id, round_index, to_checksum_address(solver))
        return decode_struct(PlantStatus, fields)

    def plant_pay(self, run_id: int, round_index: int, solver: str) -> PlantPay:
        return PlantPay(self.chain.call("Plants", "payOf", run_id, round_index, to_checksum_address(solver)))

    def is_challenge_blocked(self, run_id: int, round_index: int, solver: str) -> bool:
        """Whether the commitment's attestations cannot be challenged (its plant may be pending, or it was planted)."""
        return self.chain.call("Plants", "isChallengeBlocked", run_id, round_index, to_checksum_address(solver))

    def credits_of(self, contract: str, address: str) -> int:
        return self.chain.call(contract, "credits", to_checksum_address(address))

    def withdraw_credits(self, account: LocalAccount, contract: str) -> TxResult:
        return self.chain.send(account, contract, "withdraw")
