"""Planted faults in hand-built run events (`tests.history_builder.RunEvents`): Plants' terms, pool, anchors,
reveals, reports, forfeits, and disputes of a plant (KIND_PLANT), with the fields of contracts/src/Plants.sol."""

from __future__ import annotations

from protocol.history.events import compute_attestation_fault_key, compute_solver_fault_key
from tests.history_dispute_events import DisputeRunEvents
from tests.history_events import CHALLENGER, CREATOR, ETH


class PlantRunEvents(DisputeRunEvents):
    """What Plants emits (and Verification's onPlantRevealed in the same transaction)."""

    # -- planted faults (Plants, and Verification's onPlantRevealed) --------------------------

    def set_plant_terms(
        self,
        rate_bps: int = 2000,
        jackpot: int = ETH,
        penalty: int = 3 * ETH,
        pool: int = 10 * ETH,
        seed_block: int = 0,
    ) -> None:
        """`Plants.setTerms` with msg.value `pool` (`funded`), added to whatever fundPool brought in before
        (`seed_block` != 0: set before the start, so every round can be planted)."""
        self.step()
        self.plant = {"jackpot": jackpot, "penalty": penalty, "pool": self.plant["pool"] + pool}
        self.emit(
            "Plants", "PlantTermsSet", runId=self.run_id, rateBps=rate_bps, jackpot=jackpot, penalty=penalty,
            funded=pool, pool=self.plant["pool"], seedBlock=seed_block,
        )  # fmt: skip

    def fund_plant_pool(self, amount: int, funder: str = CREATOR) -> None:
        """`Plants.fundPool` (anyone, also before the terms are set)."""
        self.step()
        self.plant["pool"] += amount
        self.emit(
            "Plants", "PlantPoolFunded", runId=self.run_id, **{"from": funder}, amount=amount, pool=self.plant["pool"]
        )

    def set_anchor(self, solver: str, r: int, early: bool = False) -> None:
        self.step()
        anchor = bytes([0xAC]) + solver.encode()[2:33].ljust(31, b"0")
        self.emit("Plants", "PlantAnchorSet", runId=self.run_id, solver=solver, anchor=anchor, round=r, early=early)

    def reveal(self, r: int, solver: str, planted: bool) -> None:
        """A reveal in the window; if planted, what Verification.onPlantRevealed does in the same transaction: every
        attested pass overturned (verifier slashed the penalty, bond + penalty held by Plants until the round
        settles), every fail paid the jackpot."""
        self.step()
        self.emit(
            "Plants", "PlantRevealed", runId=self.run_id, round=r, solver=solver, secret=b"\x5e" * 32, planted=planted
        )
        seats = self.seats.get((r, solver), [])
        if not planted or not seats:
            return
        bond = self.config["attestationBond"]
        passes = sum(1 for _, _, fail in seats if not fail)
        self.emit(
            "Verification", "PlantApplied", runId=self.run_id, round=r, solver=solver, overturned=passes,
            forfeited=passes * bond,
        )  # fmt: skip
        for verifier, slot, fail in seats:
            if fail:
                amount = min(self.plant["jackpot"], self.plant["pool"])
                self.plant["pool"] -= amount
                self.emit(
                    "Plants", "JackpotPaid", runId=self.run_id, verifier=verifier, amount=amount,
                    pool=self.plant["pool"],
                )  # fmt: skip
                continue
            self.emit(
                "Verification", "VerifierDeregistered", runId=self.run_id, verifier=verifier, index=0, slashed=True
            )
            key = compute_attestation_fault_key(self.run_id, r, solver, slot)
            taken = self.slash(verifier, 2, key, requested=self.plant["penalty"], recipient="Verification")
            self.forfeits[(r, solver, slot)] = (verifier, bond + taken)
            self.emit(
                "Plants", "PlantForfeitHeld", runId=self.run_id, round=r, solver=solver, slot=slot, verifier=verifier,
                amount=bond + taken,
            )  # fmt: skip

    def release_forfeits(self, r: int, returned: bool = False) -> None:
        """`Plants.releaseForfeit` of every forfeit held for round `r` (after settlement): into the plant pool, or
        back to the verifier as a credit when the plant was disproven (`returned`)."""
        for (index, solver, slot), (verifier, amount) in sorted(self.forfeits.items()):
            if index != r:
                continue
            self.step()
            if not returned:
                self.plant["pool"] += amount
            self.emit(
                "Plants", "PlantForfeitReleased", runId=self.run_id, round=r, solver=solver, slot=slot,
                verifier=verifier, amount=amount, returned=returned, pool=self.plant["pool"],
            )  # fmt: skip
            del self.forfeits[(index, solver, slot)]

    def report_unrevealed(self, r: int, solver: str, reporter: str = CHALLENGER) -> None:
        """`Plants.reportUnrevealed`: the solver slashed (up to solverMinStake, under its commitment's FAULT_SOLVER
        key) into the plant pool, and the commitment left the round's paid commitments (CommitmentUnpaid)."""
        self.step()
        key = compute_solver_fault_key(self.run_id, r, solver)
        taken = self.slash(solver, 1, key, requested=self.config["solverMinStake"], recipient="Plants")
        self.plant["pool"] += taken
        self.emit(
            "Plants", "UnrevealedSlashed", runId=self.run_id, round=r, solver=solver, reporter=reporter, taken=taken
        )
        if (r, solver) in self.seats:
            self.emit("Verification", "CommitmentUnpaid", runId=self.run_id, round=r, solver=solver)

    # -- a dispute over a plant (KIND_PLANT) ---------------------------------------------------

    def challenge_plant(self, r: int, solver: str, segment: int = 2, challenger: str = CHALLENGER) -> str:
        """`Disputes.challengePlant` of `solver`'s planted commitment over `segment` (one dispute per segment);
        returns the dispute id."""
        dispute = "0x" + "d3" * 31 + f"{segment:02x}"
        self.step()
        leaf = {"startHash": b"\x01" * 32, "endHash": b"\x02" * 32, "sketchHash": b"\x03" * 32, "tokens": 256}
        self.emit(
            "Disputes", "PlantChallenged", disputeId=bytes.fromhex(dispute[2:]), runId=self.run_id, round=r,
            solver=solver, challenger=challenger, segmentIndex=segment, leaf=leaf,
        )  # fmt: skip
        return dispute

    def execute_plant(self, r: int, solver: str, dispute: str, false_plant: bool) -> None:
        """`Disputes.execute` of a decided plant dispute (`_resolvePlant`): a false plant is disproven (Plants), its
        solver slashed solverMinStake (FAULT_SOLVER) and the challenger wins that; a true one wins the bond."""
        self.step()
        if not false_plant:
            self._executed(dispute, False, solver, self.config["challengeBond"], 0)
            return
        self.emit("Plants", "PlantDisproven", runId=self.run_id, round=r, solver=solver)
        if (r, solver) in self.seats:
            self.emit("Verification", "CommitmentUnpaid", runId=self.run_id, round=r, solver=solver)
        key = compute_solver_fault_key(self.run_id, r, solver)
        taken = self.slash(solver, 1, key, requested=self.config["solverMinStake"], recipient="Disputes")
        self._executed(dispute, True, CHALLENGER, taken, self.config["challengeBond"])
