"""The verifier's background worker: watch commitments, replay sampled segments, attest.

Runs in its own thread, never on the HTTP event loop. Each pass of the loop reads the current
round, draws the seed when nobody has, and for every seat assigned to this verifier: fetches the
solver's commitment document and the sampled start checkpoints (by hash, from the solver's
artifact API), replays with the one training step, judges, and attests with its bond. Before
sending, it asks the chain whether the seat is already attested, and records the attestation in
SQLite right after, so a restart never attests twice. After the challenge window it finalizes
its attestations (bond back) and, once the round is settled, claims its shares.

The fetch-check-replay logic is the shared `verifier/checks.CommitmentChecker` (the whistleblower
and jurors use the same one). Each tick also does jury duty (`verifier/jury.py`) unless disabled;
`juror_only` skips the run's verifier list and attesting; `adversary` (verifier/roles.py, never
the default) attests without checking.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from eth_account.signers.local import LocalAccount

from gradledger.logs import get_logger, log_event
from protocol.adapters.artifacts import ArtifactError
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.contracts import AttestationRef, AttestationState, Commitment, LeafData
from protocol.adapters.http import PeerError
from protocol.adapters.manifest import DeploymentManifest
from protocol.adapters.runs import RunContext, load_run_when_created, open_node_adapters
from protocol.commitment import CommitmentDoc, CommitmentDocError
from protocol.errors import GradledgerError
from protocol.merkle import build_merkle_tree, compute_leaf_hash, get_merkle_proof_at
from verifier.checks import CommitmentChecker
from verifier.decide import AttestationDecision, get_verifier_phase
from verifier.jury import JuryDuty
from verifier.metrics import VerifierMetrics
from verifier.roles import VerifierAdversary, decide_dishonest_attestation

logger = get_logger("verifier")


@dataclass(frozen=True)
class AttestationRecord:
    """An attestation this verifier made (stored in SQLite, served by the API)."""

    id: str
    run_id: int
    round: int
    solver: str
    slot: int
    kind: str
    sample_index: int
    segment: int
    reason: str
    transaction: str
    status: str  # attested -> finalized -> done (shares claimed, or nothing more to do)


def attestation_id(ref: AttestationRef) -> str:
    return f"{ref.run_id}:{ref.round}:{ref.solver.lower()}:{ref.slot}"


class VerifierWorker:
    def __init__(
        self,
        run_id: int,
        home: Path,
        account: LocalAccount,
        rpc_url: str,
        manifest: DeploymentManifest,
        peers: tuple[str, ...],
        metrics: VerifierMetrics,
        threads: int = 1,
        *,
        jury: bool = True,
        juror_only: bool = False,
        adversary: VerifierAdversary | None = None,
    ) -> None:
        self.run_id = run_id
        self.juror_only = juror_only
        self.adversary = adversary
        self.threads = threads
        self.account = account
        self.address = account.address
        self.io = open_node_adapters(home / "verifiers" / self.address.lower(), rpc_url, manifest, peers)
        self.chain, self.protocol, self.store, self.state, self.peers = (
            self.io.chain, self.io.protocol, self.io.store, self.io.state, self.io.peers,
        )  # fmt: skip
        self.metrics = metrics
        self.ctx: RunContext | None = None
        self.checker: CommitmentChecker | None = None
        self.stop = threading.Event()
        self.last_error = ""
        # A dishonest verifier never sits on juries (its adversary is its attestations).
        self.jury = (
            JuryDuty(run_id, account, self.protocol, self.state, self.peers, self.load, self.get_checker, self.store)
            if (jury or juror_only) and adversary is None
            else None
        )

    def load(self) -> RunContext:
        """The run's context; waits for the run to be created if it does not exist yet."""
        if self.ctx is None:
            self.ctx = load_run_when_created(self.io, self.run_id, self.stop, self.threads)
        return self.ctx

    def get_checker(self) -> CommitmentChecker:
        """The shared commitment checker (verifier/checks.py) for this run."""
        if self.checker is None:
            self.checker = CommitmentChecker(self.load(), self.store, self.peers, self.protocol, self.metrics)
        return self.checker

    def ensure_registered(self) -> None:
        """Register as a juror (unless jury duty is off) and in the run's verifier list (unless juror-only);
        both idempotent."""
        if self.jury is not None and not self.jury.registered:
            self.jury.ensure_registered()
        if self.juror_only:
            return
        try:
            self.protocol.register_verifier(self.account, self.run_id)
            log_event(logger, "registered", run=self.run_id, verifier=self.address)
        except ContractRevertError as exc:
            if exc.error not in ("AlreadyRegistered", "RunIsFinished"):
                raise

    # -- records -----------------------------------------------------------------------------

    def list_attestations(self) -> list[dict]:
        return [value for _, value in self.state.list("attestation")]

    def get_attestation(self, identifier: str) -> dict | None:
        return self.state.get("attestation", identifier)

    def _save(self, record: AttestationRecord) -> None:
        self.state.put("attestation", record.id, asdict(record))

    # -- loop ----------------------------------------------------------------------------------

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                ctx = self.load()
                self.ensure_registered()
                break
            except GradledgerError as exc:  # run artifacts not reachable yet, RPC hiccup: retry
                self.last_error = str(exc)
                log_event(logger, "cannot load run yet", level=logging.WARNING, error=str(exc))
                self.stop.wait(1.0)
        else:
            return
        log_event(
            logger, "watching", run=ctx.run_id, verifier=self.address, juror=self.jury is not None,
            juror_only=self.juror_only, adversary=self.adversary.value if self.adversary else "none",
        )  # fmt: skip
        while not self.stop.is_set():
            try:
                finished = self.tick()
                self.last_error = ""
            except ArtifactError as exc:  # a peer is slow or gone: retry next tick
                self.last_error = str(exc)
                log_event(logger, "artifact unavailable", error=str(exc))
                finished = False
            except GradledgerError as exc:  # e.g. a revert racing another node: log, retry next tick
                self.last_error = str(exc)
                log_event(logger, "tick failed", level=logging.WARNING, error=str(exc))
                finished = False
            if finished:
                break
            self.stop.wait(0.5)

    def tick(self) -> bool:
        """One pass; True when the run is finished and nothing is left to do."""
        ctx = self.load()
        times = self.protocol.round_times(ctx.run_id)
        now = max(int(time.time()), self.chain.get_block("latest")["timestamp"])
        self.metrics.block.set(self.chain.block_number())
        seed_drawn = not times.finished and self.protocol.seed_base(ctx.run_id, times.round) != bytes(32)
        phase = get_verifier_phase(now, times, seed_drawn)
        if self.juror_only:
            phase = "before_attest" if phase in ("draw_seed", "attest") else phase
        if phase == "draw_seed":
            try:
                self.protocol.draw_seed(self.account, ctx.run_id, times.round)
            except ContractRevertError as exc:
                if exc.error != "SeedAlreadyDrawn":
                    raise
        elif phase == "attest":
            self._attest_round(times.round)
        self._finalize_and_claim(now)
        if self.jury is not None and self.jury.registered:
            self.jury.tick(now)
        done = times.finished and all(r["status"] == "done" for r in self.list_attestations())
        done = done and (self.jury is None or not self.jury.pending())
        if done:
            self._withdraw_credits()
        return done

    def _withdraw_credits(self) -> None:
        """Pull returned bonds and rewards out of Verification and Disputes."""
        for contract in ("Verification", "Disputes"):
            if self.protocol.credits_of(contract, self.address) > 0:
                self.protocol.withdraw_credits(self.account, contract)
                log_event(logger, "credits withdrawn", contract=contract)

    # -- attesting ---------------------------------------------------------------------------

    def _my_seats(self, round_index: int) -> list[tuple[AttestationRef, Commitment]]:
        ctx = self.load()
        seats = []
        for solver, commitment in self.protocol.get_commitments(ctx.run_id, round_index, ctx.created_block).items():
            for slot in range(ctx.terms.verifiers_per_commitment):
                ref = AttestationRef(ctx.run_id, round_index, solver, slot)
                assigned, eligible = self.protocol.assigned_verifier(ref)
                if eligible and assigned.lower() == self.address.lower():
                    seats.append((ref, commitment))
        return seats

    def _attest_round(self, round_index: int) -> None:
        for ref, commitment in self._my_seats(round_index):
            identifier = attestation_id(ref)
            if self.get_attestation(identifier) is not None:
                continue
            if self.protocol.attestation_of(ref).state != AttestationState.NONE:
                continue  # attested before a crash, or by this key from another process
            if self.adversary is not None:
                decision, doc = self._dishonest_decision(ref)
            else:
                decision, doc = self.check_commitment(ref, commitment)
            self._attest(ref, commitment, decision, doc)

    def check_commitment(
        self, ref: AttestationRef, commitment: Commitment
    ) -> tuple[AttestationDecision, CommitmentDoc | None]:
        """Fetch, check and replay the sampled segments of one commitment (verifier/checks.py)."""
        return self.get_checker().check_commitment(ref.round, ref.solver, commitment)

    def _dishonest_decision(self, ref: AttestationRef) -> tuple[AttestationDecision, CommitmentDoc | None]:
        """An adversarial verifier's attestation: no replay at all (verifier/roles.py)."""
        checker = self.get_checker()
        doc = None
        if self.adversary is VerifierAdversary.FAIL_HONEST:
            try:
                doc = checker.get_document(ref.round, ref.solver)
            except (PeerError, CommitmentDocError, KeyError) as exc:
                raise ArtifactError(f"document of {ref.solver} unavailable, retrying: {exc}") from None
        samples = checker.get_samples(ref.round, ref.solver)
        return decide_dishonest_attestation(self.adversary, samples), doc

    def _attest(
        self, ref: AttestationRef, commitment: Commitment, decision: AttestationDecision, doc: CommitmentDoc | None
    ) -> None:
        ctx = self.load()
        bond = ctx.terms.attestation_bond
        if decision.kind == "abstain":
            log_event(logger, "abstained", solver=ref.solver, round=ref.round, reason=decision.reason)
            self._save(
                AttestationRecord(
                    attestation_id(ref),
                    ref.run_id,
                    ref.round,
                    ref.solver,
                    ref.slot,
                    "abstain",
                    -1,
                    -1,
                    decision.reason,
                    "",
                    "shares_claimed",
                )
            )
            return
        if decision.kind == "pass":
            result = self.protocol.attest_pass(self.account, ref, commitment, bond)
        else:
            tree = build_merkle_tree([compute_leaf_hash(leaf) for leaf in doc.leaves])
            leaf = doc.leaves[decision.segment]
            proof = list(get_merkle_proof_at(tree, decision.segment))
            data = LeafData(leaf.start_hash, leaf.end_hash, leaf.sketch_hash, leaf.tokens)
            result = self.protocol.attest_fail(self.account, ref, commitment, decision.sample_index, data, proof, bond)
        self.metrics.attestations.labels(result=decision.kind).inc()
        self._save(
            AttestationRecord(
                attestation_id(ref), ref.run_id, ref.round, ref.solver, ref.slot, decision.kind, decision.sample_index,
                decision.segment, decision.reason, result.transaction_hash, "attested",
            )
        )  # fmt: skip
        log_event(logger, "attested", kind=decision.kind, solver=ref.solver, round=ref.round, reason=decision.reason)

    # -- after the window --------------------------------------------------------------------

    def _finalize_and_claim(self, now: int) -> None:
        """Finalize own attestations after their window; claim shares once their round settled."""
        times = self.protocol.round_times(self.run_id)
        for record in self.list_attestations():
            if record["status"] == "done":
                continue
            ref = AttestationRef(record["run_id"], record["round"], record["solver"], record["slot"])
            state = self.protocol.attestation_of(ref).state
            if state == AttestationState.ATTESTED:
                if ref.round == times.round and not times.finished and now < times.challenge_end:
                    continue
                try:
                    self.protocol.finalize(self.account, ref)
                    state = AttestationState.FINALIZED
                except ContractRevertError as exc:
                    if exc.error not in ("WrongState", "ChallengeWindowOpen"):
                        raise
                    continue
            if state == AttestationState.OVERTURNED:
                self.state.put("attestation", record["id"], {**record, "status": "done"})
            elif state in (AttestationState.FINALIZED, AttestationState.UPHELD):
                if not self.protocol.is_settled(ref.run_id, ref.round):
                    self.state.put("attestation", record["id"], {**record, "status": "finalized"})
                    continue
                try:
                    self.protocol.claim_verifier_shares(self.account, ref)
                except ContractRevertError as exc:
                    if exc.error not in ("AlreadyMinted", "NotAccepted", "WrongState"):
                        raise
                self.state.put("attestation", record["id"], {**record, "status": "done"})
