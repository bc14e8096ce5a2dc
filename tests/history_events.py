"""The chain-free core of `tests.history_builder.RunEvents`: the shared accounts and run config, and the events of a
run's ordinary life (stakes, the run, joins, commitments, openings, seeds, attestations, abstentions, θ claims,
settlement, shares), each with the fields of contracts/src/*.sol, one block per step."""

from __future__ import annotations

from typing import Any

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


def round_tag(base: int, r: int) -> bytes:
    """A per-round byte string starting with `base + r` (the values these tests compare by eye); past 255 (a long
    scripted run, bench/index.py), `base` then `r` in 4 bytes, so every round's value still differs."""
    return bytes([base + r]) if base + r < 256 else bytes([base]) + r.to_bytes(4, "big")


def theta(index: int) -> bytes:
    return (round_tag(0x10, index) * 32)[:32]


def time_of(block: int) -> int:
    return 1_800_000_000 + 10 * block


class CoreRunEvents:
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
            root=(round_tag(0xA0, r) + solver.encode()[2:33].ljust(31, b"0"))[:32],
            deltaHash=delta_hash or (round_tag(0xD0, r) * 32)[:32],
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
