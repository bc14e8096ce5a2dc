"""Typed calls of verification: the verifier list (VerifierRegistry), the round's seed and seats, openings,
attestations, tallies, abstentions and the shares and fault rewards they earn (Verification, RunRegistry's opening,
FaultRewards)."""

from __future__ import annotations

from typing import Any

from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from protocol.adapters.chain import TxResult
from protocol.adapters.contracts.runs import RunCalls
from protocol.hashing import Hash32, to_hash32
from protocol.opening import CommitmentOpening, compute_opened_segments, decode_opening, get_opened_seat_count
from protocol.sampling import RoundDraw
from protocol.types import (
    AttestationInfo,
    AttestationRef,
    Commitment,
    CommitmentStatus,
    FaultRewardRecord,
    JurorRecord,
    LeafData,
    Opening,
    decode_struct,
)


class VerificationCalls(RunCalls):
    """VerifierRegistry, Verification, FaultRewards, and RunRegistry's openings (their draws are Verification's)."""

    def register_verifier(self, account: LocalAccount, run_id: int) -> TxResult:
        return self.chain.send(account, "VerifierRegistry", "register", run_id)

    def deregister_verifier(self, account: LocalAccount, run_id: int) -> TxResult:
        """Leave the run's verifier list now; the stake stays reserved until `release_verifier` (exit delay)."""
        return self.chain.send(account, "VerifierRegistry", "deregister", run_id)

    def release_verifier(self, account: LocalAccount, run_id: int) -> TxResult:
        return self.chain.send(account, "VerifierRegistry", "releaseVerifier", run_id)

    def verifier_record_of(self, run_id: int, verifier: str) -> JurorRecord:
        """VerifierRegistry.records: list index + 1 while registered, when a verifier that left may release its
        reservation, and whether it holds one (the same shape as a juror's record)."""
        fields = self.chain.call_fields("VerifierRegistry", "records", run_id, to_checksum_address(verifier))
        return decode_struct(JurorRecord, fields)

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
        """Segment of draw `sample_index` of seat `ref` (each seat draws its own samples), as Verification computes it.
        Nodes compute every draw of a seat from one `round_draw` (protocol.sampling); this view is the chain's side of
        that rule, for tests and scenarios that check the two agree."""
        return self.chain.call(
            "Verification", "sampledSegment", ref.run_id, ref.round, to_checksum_address(ref.solver), ref.slot,
            sample_index,
        )  # fmt: skip

    def round_seed(self, run_id: int, round_index: int) -> dict[str, Any]:
        """Verification.roundSeed: the round's parameters fixed by drawSeed (all zero until drawn)."""
        return self.chain.call_fields("Verification", "roundSeed", run_id, round_index)

    def round_draw(self, run_id: int, round_index: int) -> RoundDraw:
        """What drawSeed fixed for the round's sampling, in one read (Verification.roundSeed): every seat's draws are
        then computed with protocol.sampling (`compute_seat_samples`), never asked of the chain one by one."""
        return _to_round_draw(self.round_seed(run_id, round_index))

    def opened_segments(self, run_id: int, round_index: int, solver: str) -> tuple[int, ...]:
        """The segment of every entry a commitment's opening must prove, seat-major (the seed must be drawn), from one
        read of the round's seed."""
        rs = self.round_seed(run_id, round_index)
        draw = _to_round_draw(rs)
        seats = get_opened_seat_count(rs["verifiers"], rs["verifierCount"])
        return compute_opened_segments(
            draw.seed_base, run_id, round_index, solver, seats, draw.samples, draw.num_segments
        )

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


def _to_round_draw(round_seed: dict[str, Any]) -> RoundDraw:
    """Verification.roundSeed's sampling inputs: its bytes12 seed left-aligned into the 32-byte seed base (as
    `seedOf` and `sampledSegment` widen it), the samples per seat and the segments per commitment."""
    seed_base = to_hash32(bytes(round_seed["seed"]).ljust(32, b"\0"))
    return RoundDraw(seed_base, int(round_seed["samples"]), int(round_seed["numSegments"]))
