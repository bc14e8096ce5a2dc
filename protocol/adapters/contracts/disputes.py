"""Typed calls of disputes and juries: the juror registry (JurorRegistry), a run's dispute terms, challenges of an
attestation, a plant or a θ claim, juries, verdicts and their execution (Disputes)."""

from __future__ import annotations

from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from protocol.adapters.chain import TxResult
from protocol.adapters.contracts.base import ContractCalls
from protocol.jury import DisputeSubject
from protocol.types import AttestationRef, Commitment, DisputeRecord, DisputeTerms, JurorRecord, LeafData, decode_struct


class DisputeCalls(ContractCalls):
    """JurorRegistry, Disputes, and the run's dispute terms (RunRegistry)."""

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

    def challenge_bond(self, run_id: int) -> int:
        return self.dispute_terms(run_id).challenge_bond

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
