"""Hand-built contract events for history and audit unit tests (no chain).

`RunEvents` emits what the contracts emit for each step of a run, with the fields of
contracts/src/*.sol, one block per step; tests then fold them with protocol.history.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from protocol.history.events import (
    ChainEvent,
    compute_attestation_fault_key,
    compute_solver_fault_key,
    share_token_contract,
)

ETH = 10**18
SOLVER_A = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
SOLVER_B = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
VERIFIER = "0x90F79bf6EB2c4f870365E785982E1f101E93b906"
CHALLENGER = "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65"
JUROR = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"
CREATOR = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
SOLVER_C = "0x976EA74026E726554dB657fA54763abd0C3a0aa9"
SOLVER_D = "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f"
VERIFIER_2 = "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955"
TOKEN = "0x856e4424f806D16E8CBC702B3c0F2ede5468eae5"
ZERO = "0x" + "00" * 20
TOKENS = 768
VERIFICATION_CONTRACT = "0x" + "0" * 38 + "a1"  # stands for Verification's address (PoolFunded.from)

CONFIG = {
    "configHash": b"\x01" * 32,
    "datasetRoot": b"\x02" * 32,
    "theta0Hash": b"\x10" * 32,
    "innerSteps": 6,
    "stepsPerSegment": 2,
    "samplesPerCommitment": 2,
    "verifiersPerCommitment": 1,
    "jurySize": 3,
    "commitWindow": 30,
    "attestWindow": 15,
    "challengeWindow": 4,
    "disputeTimeout": 60,
    "solverMinStake": 10 * ETH,
    "verifierMinStake": 10 * ETH,
    "attestationBond": ETH,
    "challengeBond": 2 * ETH,
    "solverShareBps": 8000,
    "verifierShareBps": 1500,
    "jurorShareBps": 500,
    "sharesPerRound": 1000 * ETH,
    "revenueReleasePeriod": 3600,
    "maxRounds": 2,
    "startDelay": 0,
}


def theta(index: int) -> bytes:
    return bytes([0x10 + index]) * 32


def time_of(block: int) -> int:
    return 1_800_000_000 + 10 * block


class RunEvents:
    """A chain-ordered event list for one deployment, built step by step (one block per call)."""

    def __init__(self, run_id: int = 1, **config: Any) -> None:
        self.run_id = run_id
        self.config = {**CONFIG, **config}
        self.events: list[ChainEvent] = []
        self.block = 10
        self.minted: dict[int, int] = {}
        self.stakes: dict[tuple[str, int], int] = {}
        self.seats: dict[tuple[int, str], list[tuple[str, int, bool]]] = {}  # (round, solver) -> (verifier, slot, fail)
        self.plant: dict[str, int] = {"jackpot": 0, "penalty": 0, "pool": 0}
        self.forfeits: dict[tuple[int, str, int], tuple[str, int]] = {}  # (round, solver, slot) -> (verifier, held)

    @property
    def timestamps(self) -> dict[int, int]:
        return {e.block_number: time_of(e.block_number) for e in self.events}

    def emit(self, contract: str, name: str, **args: Any) -> ChainEvent:
        event = ChainEvent(contract, name, args, self.block, len(self.events), f"0x{self.block:064x}")
        self.events.append(event)
        return event

    def step(self) -> ChainEvent | None:
        self.block += 1
        return None

    # -- stake ---------------------------------------------------------------------------------

    def deposit(self, account: str, role: int, amount: int = 10 * ETH) -> None:
        self.step()
        self.stakes[(account, role)] = self.stakes.get((account, role), 0) + amount
        self.emit(
            "StakeManager",
            "StakeDeposited",
            account=account,
            role=role,
            amount=amount,
            bonded=self.stakes[(account, role)],
        )

    def slash(self, account: str, role: int, key: str, requested: int = 10 * ETH, recipient: str = ZERO) -> int:
        bonded = self.stakes.get((account, role), 0)
        taken = min(bonded, requested)
        self.stakes[(account, role)] = bonded - taken
        self.emit(
            "StakeManager",
            "StakeSlashed",
            account=account,
            role=role,
            faultKey=bytes.fromhex(key[2:]),
            requested=requested,
            taken=taken,
            recipient=recipient,
            bondedAfter=bonded - taken,
            unbondingAfter=0,
        )
        return taken

    # -- run and rounds ------------------------------------------------------------------------

    def create(self, pool: int = 10 * ETH) -> None:
        self.step()
        self.emit(
            "RunRegistry",
            "RunCreated",
            runId=self.run_id,
            creator=CREATOR,
            config=dict(self.config),
            shareToken=TOKEN,
            rewardPool=pool,
        )
        self.emit(
            "RunRegistry",
            "RoundStarted",
            runId=self.run_id,
            round=0,
            start=time_of(self.block) + self.config["startDelay"],  # round 0 starts after the run's start delay
            thetaHash=self.config["theta0Hash"],
        )

    def join(self, solver: str) -> None:
        self.step()
        self.emit("RunRegistry", "SolverJoined", runId=self.run_id, solver=solver)

    def register(self, verifier: str, index: int = 0) -> None:
        self.step()
        self.emit("Verification", "VerifierRegistered", runId=self.run_id, verifier=verifier, index=index)

    def commit(self, r: int, solver: str, tokens: int = TOKENS, delta_hash: bytes | None = None) -> None:
        self.step()
        self.emit(
            "RunRegistry",
            "Committed",
            runId=self.run_id,
            round=r,
            solver=solver,
            root=bytes([0xA0 + r]) + solver.encode()[2:33].ljust(31, b"0"),
            deltaHash=delta_hash or bytes([0xD0 + r]) * 32,
            numSegments=3,
            tokens=tokens,
        )

    def open(self, r: int, solver: str) -> None:
        self.step()
        self.emit("RunRegistry", "CommitmentOpened", runId=self.run_id, round=r, solver=solver, opener=solver)

    def report_unopened(self, r: int, solver: str, slashed: bool = True, reporter: str = VERIFIER) -> None:
        """`reportUnopened`: the commitment marked unopened and, if the seed was drawn, its solver slashed."""
        self.step()
        self.emit(
            "RunRegistry", "CommitmentUnopened", runId=self.run_id, round=r, solver=solver, reporter=reporter,
            slashed=slashed,
        )  # fmt: skip
        if slashed:
            key = compute_solver_fault_key(self.run_id, r, solver)
            taken = self.slash(solver, 1, key)
            self.emit(
                "RunRegistry", "UnopenedSlashed", runId=self.run_id, round=r, solver=solver,
                faultKey=bytes.fromhex(key[2:]), taken=taken,
            )  # fmt: skip

    def seed(self, r: int) -> None:
        self.step()
        self.emit(
            "Verification",
            "SeedDrawn",
            runId=self.run_id,
            round=r,
            seedBase=b"\x55" * 12 + b"\x00" * 20,
            blockNumber=self.block - 1,
            randao=b"\x55" * 32,
            verifierCount=1,
        )

    def attest(self, r: int, solver: str, verifier: str = VERIFIER, slot: int = 0, fail: bool = False) -> None:
        self.step()
        self.seats.setdefault((r, solver), []).append((verifier, slot, fail))
        if fail:
            leaf = {"startHash": b"\x01" * 32, "endHash": b"\x02" * 32, "sketchHash": b"\x03" * 32, "tokens": 256}
            self.emit(
                "Verification",
                "FailAttested",
                runId=self.run_id,
                round=r,
                solver=solver,
                verifier=verifier,
                slot=slot,
                sampleIndex=1,
                segmentIndex=2,
                leaf=leaf,
            )
        else:
            self.emit(
                "Verification", "PassAttested", runId=self.run_id, round=r, solver=solver, verifier=verifier, slot=slot
            )

    def finalize(
        self, r: int, solver: str, verifier: str = VERIFIER, slot: int = 0, fail: bool = False, planted: bool = False
    ) -> None:
        """Finalize a seat; a fail slashes the solver, unless the commitment was revealed as planted."""
        self.step()
        self.emit(
            "Verification",
            "AttestationFinalized",
            runId=self.run_id,
            round=r,
            solver=solver,
            slot=slot,
            verifier=verifier,
            bond=self.config["attestationBond"],
        )
        if fail and not planted:
            key = compute_solver_fault_key(self.run_id, r, solver)
            taken = self.slash(solver, 1, key, recipient="Verification")
            self.emit(
                "Verification",
                "SolverFaultProven",
                runId=self.run_id,
                round=r,
                solver=solver,
                faultKey=bytes.fromhex(key[2:]),
                taken=taken,
                toProvers=taken // 2,
                toPool=taken - taken // 2,
            )
            if taken - taken // 2:
                self.emit(
                    "ModelShares",
                    "PoolFunded",
                    runId=self.run_id,
                    **{"from": CREATOR},
                    amount=taken - taken // 2,
                    pool=0,
                )

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

    def report_abstention(self, r: int, solver: str, verifier: str = VERIFIER, slot: int = 0,
                          reporter: str = SOLVER_A) -> None:  # fmt: skip
        """`Verification.reportAbstention`: the seat's verifier slashed the attestation bond (FAULT_ATTESTATION of the
        seat), all of it to the run's reward pool."""
        self.step()
        key = compute_attestation_fault_key(self.run_id, r, solver, slot)
        taken = self.slash(verifier, 2, key, requested=self.config["attestationBond"], recipient="Verification")
        self.emit(
            "Verification", "AbstentionReported", runId=self.run_id, round=r, solver=solver, slot=slot,
            verifier=verifier, reporter=reporter, taken=taken,
        )  # fmt: skip
        if taken:
            self.emit(
                "ModelShares", "PoolFunded", runId=self.run_id, **{"from": VERIFICATION_CONTRACT}, amount=taken, pool=0
            )

    def claim_theta(self, r: int, claimer: str = SOLVER_A, nonce: int = 0, value: bytes | None = None) -> None:
        self.step()
        self.emit(
            "RunRegistry",
            "ThetaClaimed",
            runId=self.run_id,
            round=r,
            claimer=claimer,
            thetaHash=value or theta(r + 1),
            nonce=nonce,
            bond=self.config["challengeBond"],
        )

    def settle(
        self, r: int, claimer: str = SOLVER_A, nonce: int = 0, released: int = 5 * ETH, theta_hash: bytes | None = None
    ) -> None:
        self.step()
        next_theta = theta_hash or theta(r + 1)
        self.emit(
            "RunRegistry",
            "RoundSettled",
            runId=self.run_id,
            round=r,
            thetaHash=next_theta,
            claimer=claimer,
            nonce=nonce,
        )
        if r + 1 >= self.config["maxRounds"]:
            self.emit("RunRegistry", "RunFinished", runId=self.run_id, rounds=r + 1)
        else:
            self.emit(
                "RunRegistry",
                "RoundStarted",
                runId=self.run_id,
                round=r + 1,
                start=time_of(self.block),
                thetaHash=next_theta,
            )
        self.emit("ModelShares", "PoolReleased", runId=self.run_id, round=r, amount=released, pool=0)

    def _mint(self, r: int, to: str, kind: int, amount: int) -> None:
        self.minted[r] = self.minted.get(r, 0) + amount
        self.emit(
            "ModelShares",
            "SharesMinted",
            runId=self.run_id,
            round=r,
            to=to,
            kind=kind,
            amount=amount,
            mintedInRound=self.minted[r],
        )
        self.emit(share_token_contract(self.run_id), "Transfer", **{"from": ZERO, "to": to, "value": amount})

    def claim_solver(self, r: int, solver: str, shares: int) -> None:
        self.step()
        self.emit("Verification", "SolverSharesClaimed", runId=self.run_id, round=r, solver=solver, shares=shares)
        self._mint(r, solver, 0, shares)

    def claim_verifier(self, r: int, solver: str, shares: int, verifier: str = VERIFIER, slot: int = 0) -> None:
        self.step()
        self.emit(
            "Verification",
            "VerifierSharesClaimed",
            runId=self.run_id,
            round=r,
            solver=solver,
            slot=slot,
            verifier=verifier,
            shares=shares,
        )
        self._mint(r, verifier, 1, shares)

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


def honest_two_rounds(events: RunEvents | None = None, unclaimed: tuple[tuple[int, str], ...] = ()) -> RunEvents:
    """Two solvers and one verifier, two rounds, everything accepted, settled and claimed (but for the
    solver shares of `unclaimed` (round, solver) pairs)."""
    ev = events or RunEvents()
    for account in (SOLVER_A, SOLVER_B):
        ev.deposit(account, 1)
    ev.deposit(VERIFIER, 2)
    ev.create()
    ev.join(SOLVER_A)
    ev.join(SOLVER_B)
    ev.register(VERIFIER)
    for r in (0, 1):
        ev.commit(r, SOLVER_A)
        ev.commit(r, SOLVER_B)
        ev.seed(r)
        ev.attest(r, SOLVER_A)
        ev.attest(r, SOLVER_B)
        ev.finalize(r, SOLVER_A)
        ev.finalize(r, SOLVER_B)
        ev.claim_theta(r)
        ev.settle(r)
        for solver in (SOLVER_A, SOLVER_B):
            if (r, solver) not in unclaimed:
                ev.claim_solver(r, solver, 400 * ETH)
            ev.claim_verifier(r, solver, 75 * ETH)
    return ev


PlantDispute = Literal["false plant", "true plant", "unresolved"]
"""How `planted_run`'s dispute of SOLVER_A's plant ends: won by the challenger (the plant disproven), lost by it,
or expired without a verdict."""


def planted_run(
    claimed: tuple[str, ...] = (SOLVER_A, SOLVER_B), dispute: PlantDispute | None = None, own_dispute: bool = False
) -> RunEvents:
    """Three rounds of a run that plants (20%, jackpot 1 ETH, penalty 3 ETH, pool 10 ETH); two seats per commitment.

    Round 1: SOLVER_D commits without an anchor old enough -- paid as usual, plants start in round 2. Round 2:
    - SOLVER_A (anchor in round 0) is planted: VERIFIER's pass on it is overturned by the reveal, VERIFIER_2's fail
      earns the jackpot and is finalized without slashing the solver; paid, its Δ not accepted;
    - SOLVER_B (anchor in round 0) reveals "not planted": accepted and paid;
    - SOLVER_C (anchor in round 0) never reveals and is reported: slashed, unpaid, its Δ not accepted;
    - SOLVER_D (anchor in round 1, too young) is unpaid and its Δ not accepted.
    The solver shares of `claimed` of round 2 are claimed (the 800 ETH bucket over the round's paid commitments: A
    and B, 400 ETH each; B alone, 800 ETH, once A's plant is disproven). After settlement the held forfeit of
    VERIFIER's lazy pass is released: into the plant pool, or back to VERIFIER when the plant was disproven.
    With `dispute`, CHALLENGER disputes SOLVER_A's plant (segment 2) after the reveals, and a juror claims its reward
    of an executed verdict (50 ETH: the round's juror bucket over one signature); a disproven plant is not paid,
    so then leave SOLVER_A out of `claimed` (claimSolverShares would revert). With `own_dispute`, SOLVER_A first
    disputes its own plant over segment 0, a segment it did train as planted, and loses (one dispute per segment:
    that uses up no one else's check).
    """
    ev = RunEvents(maxRounds=3, verifiersPerCommitment=2)
    solvers = (SOLVER_A, SOLVER_B, SOLVER_C, SOLVER_D)
    for account in solvers:
        ev.deposit(account, 1)
    for verifier in (VERIFIER, VERIFIER_2):
        ev.deposit(verifier, 2)
    ev.create()
    ev.set_plant_terms()
    for solver in solvers:
        ev.join(solver)
    for solver in (SOLVER_A, SOLVER_B, SOLVER_C):
        ev.set_anchor(solver, 0)
    ev.register(VERIFIER, 0)
    ev.register(VERIFIER_2, 1)
    ev.seed(0)
    ev.claim_theta(0, value=theta(0))
    ev.settle(0, theta_hash=theta(0))
    ev.set_anchor(SOLVER_D, 1)
    ev.commit(1, SOLVER_D)
    ev.seed(1)
    ev.attest(1, SOLVER_D)
    ev.finalize(1, SOLVER_D)
    ev.claim_theta(1)
    ev.settle(1)
    ev.claim_solver(1, SOLVER_D, 800 * ETH)
    for solver in solvers:
        ev.commit(2, solver)
    ev.seed(2)
    ev.attest(2, SOLVER_A, VERIFIER, 0)
    ev.attest(2, SOLVER_A, VERIFIER_2, 1, fail=True)
    for solver in (SOLVER_B, SOLVER_C, SOLVER_D):
        ev.attest(2, solver, VERIFIER, 0)
    ev.reveal(2, SOLVER_A, planted=True)
    ev.reveal(2, SOLVER_B, planted=False)
    ev.report_unrevealed(2, SOLVER_C)
    if own_dispute:
        own = ev.challenge_plant(2, SOLVER_A, segment=0, challenger=SOLVER_A)
        ev.decide(own, False)
        ev.execute_plant(2, SOLVER_A, own, False)
    disputed = None if dispute is None else ev.challenge_plant(2, SOLVER_A)
    if disputed is not None and dispute == "unresolved":
        ev.expire(disputed)
    elif disputed is not None:
        ev.decide(disputed, dispute == "false plant")
        ev.execute_plant(2, SOLVER_A, disputed, dispute == "false plant")
    ev.finalize(2, SOLVER_A, VERIFIER_2, 1, fail=True, planted=True)
    for solver in (SOLVER_B, SOLVER_C, SOLVER_D):
        ev.finalize(2, solver)
    ev.claim_theta(2)
    ev.settle(2)
    ev.release_forfeits(2, returned=dispute == "false plant")
    paid = 1 if dispute == "false plant" else 2
    for solver in claimed:
        ev.claim_solver(2, solver, 800 * ETH // paid)
    if disputed is not None and dispute != "unresolved":
        ev.claim_juror(2, disputed, 50 * ETH)
    return ev


def with_args(event: ChainEvent, **changes: Any) -> ChainEvent:
    return replace(event, args={**event.args, **changes})
