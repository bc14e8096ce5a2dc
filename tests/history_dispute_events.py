"""Disputes in hand-built run events (`tests.history_builder.RunEvents`): challenges of a pass, juries, verdicts,
execution, appeals and expiry, and juror rewards, with the fields of contracts/src/Disputes.sol."""

from __future__ import annotations

from protocol.history.events import compute_attestation_fault_key, compute_solver_fault_key
from tests.history_events import CHALLENGER, ETH, JUROR, VERIFIER, CoreRunEvents


class DisputeRunEvents(CoreRunEvents):
    """What Disputes emits (and Verification and StakeManager in the same transactions)."""

    # -- a dispute over a pass attestation, won by the challenger ------------------------------

    def challenge_pass(self, r: int, solver: str, slot: int = 0) -> str:
        """A challenge of the pass at `slot` of `solver`'s commitment; returns the dispute id."""
        dispute = "0x" + "dd" * 32
        self.step()
        self.emit(
            "Disputes",
            "AttestationChallenged",
            disputeId=bytes.fromhex(dispute[2:]),
            runId=self.run_id,
            round=r,
            solver=solver,
            slot=slot,
            challenger=CHALLENGER,
            attestation={"isFail": False, "sampleIndex": 0, "segmentIndex": 1},
            leaf={},
        )
        return dispute

    def leave_unresolved(self, r: int, solver: str, dispute: str, verifier: str = VERIFIER, slot: int = 0) -> None:
        """Two appeals of silent juries, then the unresolved end: the pass voided, the challenger's fee to the pool."""
        self.expire(dispute)
        self.emit("Verification", "AttestationResolved", runId=self.run_id, round=r, solver=solver, slot=slot,
                  verifier=verifier, state=6, bond=self.config["attestationBond"])  # fmt: skip

    def expire(self, dispute: str) -> None:
        """Two appeals of silent juries, then `expire` ends the dispute: the challenger's bond back less the fee."""
        for appeals, jury_size in ((1, 7), (2, 15)):
            self.step()
            self.emit("Disputes", "DisputeAppealed", disputeId=bytes.fromhex(dispute[2:]), appeals=appeals,
                      jurySize=jury_size, deadline=0)  # fmt: skip
        self.step()
        fee = self.config["challengeBond"] * 2000 // 10_000
        self.emit("Disputes", "DisputeExpired", disputeId=bytes.fromhex(dispute[2:]), challenger=CHALLENGER,
                  bondReturned=self.config["challengeBond"] - fee, fee=fee)  # fmt: skip

    def decide(self, dispute: str, challenger_wins: bool) -> None:
        """A jury of one seat drawn, and its verdict (1 signer) submitted."""
        self.step()
        self.emit(
            "Disputes",
            "JuryDrawn",
            disputeId=bytes.fromhex(dispute[2:]),
            seed=b"\x00" * 32,
            appeals=0,
            snapshotBlock=0,
            poolSize=1,
            seats=1,
            eligible=1,
        )
        self.step()
        self.emit(
            "Disputes",
            "VerdictSubmitted",
            disputeId=bytes.fromhex(dispute[2:]),
            challengerWins=challenger_wins,
            signers=1,
            signerCount=1,
        )

    def _executed(self, dispute: str, challenger_wins: bool, winner: str, total: int, bond_returned: int) -> None:
        """DisputeExecuted as Disputes.execute splits `total` (WINNER_REWARD_BPS, JUROR_REWARD_BPS, the rest)."""
        to_winner = total // 2
        reward = total * 2000 // 10_000
        self.emit(
            "Disputes",
            "DisputeExecuted",
            disputeId=bytes.fromhex(dispute[2:]),
            challengerWins=challenger_wins,
            winner=winner,
            total=total,
            toWinner=to_winner,
            bondReturned=bond_returned,
            rewardPerJuror=reward,
            signerCount=1,
            toPool=total - to_winner - reward,
        )

    def overturn_pass(self, r: int, solver: str, verifier: str = VERIFIER, slot: int = 0) -> str:
        """Challenge, jury, verdict (challenger wins, 1 signer) and execution; returns the dispute id."""
        dispute = self.challenge_pass(r, solver, slot)
        self.decide(dispute, True)
        self.step()
        self.emit(
            "Verification",
            "AttestationResolved",
            runId=self.run_id,
            round=r,
            solver=solver,
            slot=slot,
            verifier=verifier,
            state=5,
            bond=self.config["attestationBond"],
        )
        self.emit("Verification", "VerifierDeregistered", runId=self.run_id, verifier=verifier, index=0, slashed=True)
        taken = self.slash(verifier, 2, compute_attestation_fault_key(self.run_id, r, solver, slot))
        taken += self.slash(solver, 1, compute_solver_fault_key(self.run_id, r, solver))
        self._executed(dispute, True, CHALLENGER, taken + self.config["attestationBond"], self.config["challengeBond"])
        return dispute

    def claim_juror(self, r: int, dispute: str, shares: int, juror: str = JUROR) -> None:
        self.step()
        self.emit(
            "Disputes",
            "JurorRewardClaimed",
            disputeId=bytes.fromhex(dispute[2:]),
            juror=juror,
            seat=0,
            reward=ETH,
            shares=shares,
        )
        self._mint(r, juror, 2, shares)
