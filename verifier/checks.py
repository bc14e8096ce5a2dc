"""The one commitment checker: fetch, check and replay a solver's commitment.

Verifiers use it to attest, whistleblowers to re-check attestations, jurors to decide disputes:
one implementation, so the three roles can never disagree about what honest work is. Order of
checks (DESIGN section 3, docs/nodes.md):

1. the published commitment document is fetched from the solver and must match the on-chain
   commitment (root, Δ hash, tokens) -- a document that cannot be fetched or does not hash to
   the root leaves nothing provable on-chain;
2. the trajectory: leaf 0 starts at c_0 of θ_r, leaves chain, and Δ = θ_r - c_H for the
   committed end checkpoint;
3. every sampled segment (or only the named one, for a fail attestation) is replayed with the
   one training step and judged exactly.

A checkpoint the solver does not serve counts as a failed segment (data availability).
Results are cached per (round, solver, commitment, samples), so a node that attested a
commitment and then sits on a jury about it does not replay it twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from protocol.adapters.artifacts import ArtifactError, ArtifactStore
from protocol.adapters.contracts import Commitment, ProtocolClient
from protocol.adapters.http import PeerError, PeerSet
from protocol.adapters.runs import RunContext, get_artifact, get_global_state
from protocol.commitment import CommitmentDoc, CommitmentDocError, decode_commitment_doc, verify_commitment_doc
from protocol.replay import judge_exact, replay_segment, verify_leaf_chain
from protocol.state import compute_state_hash, decode_state
from protocol.training import compute_pseudo_gradient, get_params, make_start_checkpoint
from verifier.decide import AttestationDecision, SampleCheck, decide_attestation
from verifier.metrics import VerifierMetrics

DocumentFetcher = Callable[[int, int, str], bytes]


class CommitmentChecker:
    """Checks commitments of one run against the chain, fetching artifacts from peers."""

    def __init__(
        self,
        ctx: RunContext,
        store: ArtifactStore,
        peers: PeerSet,
        protocol: ProtocolClient,
        metrics: VerifierMetrics | None = None,
        fetch_document: DocumentFetcher | None = None,
    ) -> None:
        self.ctx = ctx
        self.store = store
        self.peers = peers
        self.protocol = protocol
        self.metrics = metrics
        self._fetch_document = fetch_document or self._fetch_document_from_solver
        self._cache: dict[tuple, tuple[AttestationDecision, CommitmentDoc | None]] = {}
        self._lock = threading.Lock()

    # -- inputs from the chain and peers ---------------------------------------------------

    def get_samples(self, round_index: int, solver: str) -> list[tuple[int, int]]:
        """(draw j, segment) for every draw of the commitment (the round's seed must be drawn)."""
        return [
            (j, self.protocol.sampled_segment(self.ctx.run_id, round_index, solver, j))
            for j in range(self.ctx.terms.samples_per_commitment)
        ]

    def _fetch_document_from_solver(self, run_id: int, round_index: int, solver: str) -> bytes:
        url = self.peers.url_of(solver)
        if url is None:
            raise PeerError(f"no known peer serves solver {solver}")
        return self.peers.get_json(url, f"/commitments/{run_id}/{round_index}")["document"].encode()

    def get_document(self, round_index: int, solver: str) -> CommitmentDoc:
        """The solver's published document (raises PeerError / CommitmentDocError / KeyError)."""
        return decode_commitment_doc(self._fetch_document(self.ctx.run_id, round_index, solver))

    # -- checks ----------------------------------------------------------------------------

    def check_commitment(
        self,
        round_index: int,
        solver: str,
        commitment: Commitment,
        only_samples: Sequence[int] | None = None,
    ) -> tuple[AttestationDecision, CommitmentDoc | None]:
        """The verdict on a commitment: pass, fail (naming a draw) or abstain (nothing provable).

        `only_samples` restricts the replays to those draws (a fail attestation names one); the
        document and trajectory checks always run.
        """
        samples = self.get_samples(round_index, solver)
        if only_samples is not None:
            samples = [samples[j] for j in only_samples]
        key = (round_index, solver.lower(), commitment, tuple(samples))
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        result = self._check(round_index, solver, commitment, samples)
        if result[0].kind != "abstain":  # an unavailable peer may come back: do not remember that
            with self._lock:
                self._cache[key] = result
        return result

    def _check(
        self, round_index: int, solver: str, commitment: Commitment, samples: list[tuple[int, int]]
    ) -> tuple[AttestationDecision, CommitmentDoc | None]:
        ctx = self.ctx
        try:
            doc = self.get_document(round_index, solver)
        except (PeerError, CommitmentDocError, KeyError) as exc:
            return decide_attestation(f"commitment document unavailable: {exc}", False, []), None
        problem = verify_commitment_doc(
            doc, ctx.run_id, round_index, solver, commitment.root, commitment.delta_hash, commitment.tokens
        )
        if problem is not None and doc.root != commitment.root:
            return decide_attestation(problem, False, []), None
        first = [SampleCheck(samples[0][0], samples[0][1], False, problem or "")]
        if problem is not None:
            return decide_attestation(problem, True, first), doc
        solver_url = self.peers.url_of(solver)
        if doc.theta_hash != self.protocol.theta_of(ctx.run_id, round_index):
            return decide_attestation("document trains from another θ than the round's", True, first), doc
        # θ_r is the round's state (served by the run creator and coordinators), not the solver's to
        # withhold: if it cannot be fetched now, the ArtifactError propagates and the caller retries.
        theta = get_params(get_global_state(self.store, self.peers, doc.theta_hash))
        chain_problem = verify_leaf_chain(
            list(doc.leaves), ctx.run_id, round_index, solver, compute_state_hash(make_start_checkpoint(theta)),
            ctx.config.train.num_segments,
        )  # fmt: skip
        if chain_problem is None:
            chain_problem = self._check_delta_binding(doc, theta, solver_url)
        if chain_problem is not None:
            return decide_attestation(chain_problem, True, first), doc
        checks = [self._check_sample(round_index, solver, doc, j, segment, solver_url) for j, segment in samples]
        return decide_attestation(None, True, checks), doc

    def _check_delta_binding(self, doc: CommitmentDoc, theta: dict, solver_url: str | None) -> str | None:
        """Δ must equal θ_r - c_H for the committed end checkpoint (no spoofed pseudo-gradient)."""
        try:
            end = decode_state(get_artifact(self.store, self.peers, doc.leaves[-1].end_hash, solver_url))
        except ArtifactError as exc:
            return f"end checkpoint not served: {exc}"
        if compute_state_hash(compute_pseudo_gradient(theta, end)) != doc.delta_hash:
            return "committed delta hash is not θ_r - c_H"
        return None

    def _check_sample(
        self, round_index: int, solver: str, doc: CommitmentDoc, j: int, segment: int, url: str | None
    ) -> SampleCheck:
        leaf = doc.leaves[segment]
        try:
            start = decode_state(get_artifact(self.store, self.peers, leaf.start_hash, url))
        except ArtifactError as exc:
            return SampleCheck(j, segment, False, f"start checkpoint of segment {segment} not served: {exc}")
        if self.metrics is not None:
            with self.metrics.replay_seconds.time():
                replayed = replay_segment(self.ctx.config, self.ctx.dataset, round_index, solver, segment, start)
            self.metrics.replays.inc()
        else:
            replayed = replay_segment(self.ctx.config, self.ctx.dataset, round_index, solver, segment, start)
        verdict = judge_exact(self.ctx.config, leaf, start, replayed)
        return SampleCheck(j, segment, verdict.accepted, verdict.reason)

    def is_attestation_right(
        self, round_index: int, solver: str, commitment: Commitment, is_fail: bool, sample_index: int
    ) -> tuple[bool, AttestationDecision, CommitmentDoc | None]:
        """Was this attestation right? A pass: every sampled segment is honest. A fail: the commitment
        is faulty at the named draw (or as a whole: its document or trajectory is wrong, or the
        solver does not serve what it committed). Returns (right, the checker's decision, document)."""
        if is_fail:
            decision, doc = self.check_commitment(round_index, solver, commitment, only_samples=[sample_index])
            return decision.kind != "pass", decision, doc
        decision, doc = self.check_commitment(round_index, solver, commitment)
        return decision.kind == "pass", decision, doc
