"""The verifier's background worker: watch commitments, replay sampled segments, attest.

Runs in its own thread, never on the HTTP event loop. Each pass of the loop reads the current
round, draws the seed when nobody has, and for every seat assigned to this verifier: fetches the
solver's commitment document and the sampled start checkpoints (by hash, from the solver's
artifact API), replays with the one training step, judges, and attests with its bond. Before
sending, it asks the chain whether the seat is already attested, and records the attestation in
SQLite right after, so a restart never attests twice. After the challenge window it finalizes
its attestations (bond back) and, once the round is settled, claims its shares.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from eth_account.signers.local import LocalAccount

from gradledger.logs import get_logger, log_event
from protocol.adapters.artifacts import ArtifactError, LocalArtifactStore
from protocol.adapters.chain import ChainClient, ContractRevertError
from protocol.adapters.contracts import AttestationRef, AttestationState, Commitment, LeafData, ProtocolClient
from protocol.adapters.http import PeerError, PeerSet
from protocol.adapters.manifest import DeploymentManifest
from protocol.adapters.nodestate import NodeState
from protocol.adapters.runs import (
    RunContext,
    RunNotFoundError,
    get_artifact,
    get_global_state,
    load_run_context,
    wait_for_run,
)
from protocol.commitment import CommitmentDoc, CommitmentDocError, decode_commitment_doc, verify_commitment_doc
from protocol.errors import GradledgerError
from protocol.merkle import build_merkle_tree, compute_leaf_hash, get_merkle_proof_at
from protocol.profile import apply_execution_profile
from protocol.replay import judge_exact, replay_segment, verify_leaf_chain
from protocol.state import compute_state_hash, decode_state
from protocol.training import compute_pseudo_gradient, get_params, make_start_checkpoint
from verifier.decide import AttestationDecision, SampleCheck, decide_attestation, get_verifier_phase
from verifier.metrics import VerifierMetrics

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
    ) -> None:
        self.run_id = run_id
        self.threads = threads
        self.account = account
        self.address = account.address
        self.chain = ChainClient(rpc_url, manifest)
        self.protocol = ProtocolClient(self.chain)
        node_dir = home / "verifiers" / self.address.lower()
        self.store = LocalArtifactStore(node_dir / "artifacts")
        self.state = NodeState(node_dir / "state.sqlite")
        self.peers = PeerSet(peers)
        self.metrics = metrics
        self.ctx: RunContext | None = None
        self.stop = threading.Event()
        self.last_error = ""

    def load(self) -> RunContext:
        """The run's context; waits for the run to be created if it does not exist yet."""
        if self.ctx is None:
            if not wait_for_run(self.protocol, self.run_id, self.stop):
                raise RunNotFoundError(f"stopped before run {self.run_id} was created")
            self.ctx = load_run_context(self.protocol, self.store, self.peers, self.run_id)
            apply_execution_profile(self.ctx.config.profile, self.threads)
        return self.ctx

    def ensure_registered(self) -> None:
        """Register in the run's verifier list if not yet (idempotent)."""
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
        log_event(logger, "watching", run=ctx.run_id, verifier=self.address)
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
        if phase == "draw_seed":
            try:
                self.protocol.draw_seed(self.account, ctx.run_id, times.round)
            except ContractRevertError as exc:
                if exc.error != "SeedAlreadyDrawn":
                    raise
        elif phase == "attest":
            self._attest_round(times.round)
        self._finalize_and_claim(now)
        done = times.finished and all(r["status"] == "done" for r in self.list_attestations())
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
            decision, doc = self.check_commitment(ref, commitment)
            self._attest(ref, commitment, decision, doc)

    def check_commitment(
        self, ref: AttestationRef, commitment: Commitment
    ) -> tuple[AttestationDecision, CommitmentDoc | None]:
        """Fetch, check and replay the sampled segments of one commitment."""
        ctx = self.load()
        samples = [
            (j, self.protocol.sampled_segment(ref.run_id, ref.round, ref.solver, j))
            for j in range(ctx.terms.samples_per_commitment)
        ]
        solver_url = self.peers.url_of(ref.solver)
        try:
            if solver_url is None:
                raise PeerError(f"no known peer serves solver {ref.solver}")
            raw = self.peers.get_json(solver_url, f"/commitments/{ref.run_id}/{ref.round}")["document"].encode()
            doc = decode_commitment_doc(raw)
        except (PeerError, CommitmentDocError, KeyError) as exc:
            return decide_attestation(f"commitment document unavailable: {exc}", False, []), None
        problem = verify_commitment_doc(
            doc, ref.run_id, ref.round, ref.solver, commitment.root, commitment.delta_hash, commitment.tokens
        )
        if problem is not None and doc.root != commitment.root:
            return decide_attestation(problem, False, []), None
        first = [SampleCheck(samples[0][0], samples[0][1], False, problem or "")]
        if problem is not None:
            return decide_attestation(problem, True, first), doc
        theta = get_params(get_global_state(self.store, self.peers, doc.theta_hash))
        chain_problem = verify_leaf_chain(
            list(doc.leaves), ref.run_id, ref.round, ref.solver, compute_state_hash(make_start_checkpoint(theta)),
            ctx.config.train.num_segments,
        )  # fmt: skip
        if doc.theta_hash != self.protocol.theta_of(ref.run_id, ref.round):
            chain_problem = "document trains from another θ than the round's"
        if chain_problem is None:
            chain_problem = self._check_delta_binding(doc, theta, solver_url)
        if chain_problem is not None:
            return decide_attestation(chain_problem, True, first), doc
        checks = [self._check_sample(ctx, ref, doc, j, segment, solver_url) for j, segment in samples]
        return decide_attestation(None, True, checks), doc

    def _check_delta_binding(self, doc: CommitmentDoc, theta: dict, solver_url: str) -> str | None:
        """Δ must equal θ_r - c_H for the committed end checkpoint (no spoofed pseudo-gradient)."""
        try:
            end = decode_state(get_artifact(self.store, self.peers, doc.leaves[-1].end_hash, solver_url))
        except ArtifactError as exc:
            return f"end checkpoint not served: {exc}"
        if compute_state_hash(compute_pseudo_gradient(theta, end)) != doc.delta_hash:
            return "committed delta hash is not θ_r - c_H"
        return None

    def _check_sample(
        self, ctx: RunContext, ref: AttestationRef, doc: CommitmentDoc, j: int, segment: int, url: str
    ) -> SampleCheck:
        leaf = doc.leaves[segment]
        try:
            start = decode_state(get_artifact(self.store, self.peers, leaf.start_hash, url))
        except ArtifactError as exc:
            return SampleCheck(j, segment, False, f"start checkpoint of segment {segment} not served: {exc}")
        with self.metrics.replay_seconds.time():
            replayed = replay_segment(ctx.config, ctx.dataset, ref.round, ref.solver, segment, start)
        self.metrics.replays.inc()
        verdict = judge_exact(ctx.config, leaf, start, replayed)
        return SampleCheck(j, segment, verdict.accepted, verdict.reason)

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
