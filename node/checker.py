"""The one commitment checker: fetch what a verdict needs, then ask the pure verdict.

Verifiers use it to attest, whistleblowers to re-check attestations, jurors to decide disputes:
one implementation, so the three roles can never disagree about what honest work is. This module
only fetches (the solver's document, θ_r, the committed end checkpoint, the sampled start
checkpoints) and reads the round's seed once per check, from which `protocol/sampling.py` computes the seat's
draws exactly as Verification does (tests/vectors/sampling.json); every rule is in `protocol/verdict.py`, stage by
stage: document, trajectory, sampled replays, decision. A checkpoint the solver does not serve is
passed on as missing, and the verdict counts it as a failed segment (data availability).

What the solver must serve is fetched within one budget per check (protocol/fetch_budget.py: a sixth of the
run's attest window, wall-clock): a document or checkpoint not in when it is spent is unavailable, exactly as
if withheld, so a solver dripping its checkpoints cannot make the check outlast the attest window. Time spent
replaying between fetches is not charged; θ_r (the round's state, not the solver's) is fetched outside it.

Results are cached per (round, solver, commitment, samples), so a node that attested a
commitment and then sits on a jury about it does not replay it twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from node.moments import DocumentFetcher, fetch_start_moments
from node.payloads import fetch_payload_evidence
from protocol.adapters.artifacts import ArtifactError, ArtifactStore
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.deadlines import FetchBudget
from protocol.adapters.http import PeerError, PeerSet
from protocol.adapters.runs import RunContext, get_artifact, get_global_state
from protocol.commitment import CommitmentDoc, CommitmentDocError, decode_commitment_doc
from protocol.errors import StateEncodingError
from protocol.fetch_budget import compute_fetch_budget_s
from protocol.hashing import to_hash32
from protocol.payload import is_compressed
from protocol.sampling import compute_seat_samples
from protocol.state import decode_state
from protocol.training import State, get_params
from protocol.types import AttestationRef, Commitment
from protocol.verdict import (
    AttestationDecision,
    MomentsEvidence,
    SampleCheck,
    check_document,
    check_sample,
    check_trajectory,
    decide_attestation,
)

SeatSampler = Callable[[AttestationRef], Sequence[int]]
"""A seat -> the segment of each of its draws, in draw order (by default computed from the round's seed)."""


class ReplayMetrics(Protocol):
    """What the checker reports replays to (a verifier's Prometheus metrics)."""

    replays: Any
    replay_seconds: Any


def get_run_fetch_budget_s(ctx: RunContext) -> float | None:
    """The run's fetch budget per check (protocol/fetch_budget.py), from its attest window; None for a context whose
    terms carry no windows (a test's stand-in)."""
    attest_window = getattr(ctx.terms, "attest_window", None)
    return None if attest_window is None else compute_fetch_budget_s(attest_window)


class CommitmentChecker:
    """Checks commitments of one run against the chain, fetching artifacts from peers."""

    def __init__(
        self,
        ctx: RunContext,
        store: ArtifactStore,
        peers: PeerSet,
        protocol: ProtocolClient,
        metrics: ReplayMetrics | None = None,
        fetch_document: DocumentFetcher | None = None,
        *,
        exact: bool = True,
        fetch_budget_s: float | None = None,
        draw_seat: SeatSampler | None = None,
    ) -> None:
        self.ctx = ctx
        self.store = store
        self.peers = peers
        self.protocol = protocol
        self.metrics = metrics
        self.exact = exact
        """False on a machine that does not reproduce the run's execution profile (node/profile_check.py): then a
        replay that differs is judged by the run's tolerances (protocol/verdict.py), never failed outright."""
        self.fetch_budget_s = fetch_budget_s if fetch_budget_s is not None else get_run_fetch_budget_s(ctx)
        """Wall-clock seconds one check may spend fetching what the solver serves (None: each fetch only has its own
        deadline, for contexts without window terms)."""
        self._fetch_document = fetch_document or self._fetch_document_from_solver
        self._draw_seat = draw_seat or self._draw_seat_from_round_seed
        self._cache: dict[tuple, tuple[AttestationDecision, CommitmentDoc | None]] = {}
        self._lock = threading.Lock()

    # -- inputs from the chain and peers ---------------------------------------------------

    def get_samples(self, ref: AttestationRef) -> list[tuple[int, int]]:
        """(draw j, segment) for every draw of a seat: each seat has its own (the round's seed must be drawn)."""
        return list(enumerate(self._draw_seat(ref)))

    def _draw_seat_from_round_seed(self, ref: AttestationRef) -> tuple[int, ...]:
        """The seat's draws from one read of the round's seed (Verification.roundSeed), computed by
        protocol.sampling as `Verification.sampledSegment` computes them. Read per check, not cached: a reorg of the
        seed block would change the seed, and one read per seat costs nothing next to a replay."""
        draw = self.protocol.round_draw(ref.run_id, ref.round)
        return compute_seat_samples(draw, ref.run_id, ref.round, ref.solver, ref.slot)

    def new_fetch_budget(self, round_index: int, solver: str) -> FetchBudget | None:
        """A fresh budget for one check's fetches of what `solver` serves (None without a run budget)."""
        if self.fetch_budget_s is None:
            return None
        return FetchBudget(self.fetch_budget_s, f"solver {solver}'s artifacts of round {round_index}")

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
        ref: AttestationRef,
        commitment: Commitment,
        only_samples: Sequence[int] | None = None,
    ) -> tuple[AttestationDecision, CommitmentDoc | None]:
        """The verdict on a commitment: pass or fail (naming a draw); only for opened commitments.

        `only_samples` restricts the replays to those draws (a fail attestation names one); the
        document and trajectory checks always run.
        """
        samples = self.get_samples(ref)
        if only_samples is not None:
            samples = [samples[j] for j in only_samples]
        key = (ref.round, ref.solver.lower(), commitment, tuple(samples))
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            return cached
        result = self._check(ref.round, ref.solver, commitment, samples)
        if result[1] is not None:  # an unavailable document may be served later (e.g. to a jury): do not remember
            with self._lock:
                self._cache[key] = result
        return result

    def _check(
        self, round_index: int, solver: str, commitment: Commitment, samples: list[tuple[int, int]]
    ) -> tuple[AttestationDecision, CommitmentDoc | None]:
        """Fetch each stage's inputs within one fetch budget, then let the pure verdict (protocol/verdict.py) judge
        them."""
        with self.peers.budgeted(self.new_fetch_budget(round_index, solver)):
            return self._check_within_budget(round_index, solver, commitment, samples)

    def _check_within_budget(
        self, round_index: int, solver: str, commitment: Commitment, samples: list[tuple[int, int]]
    ) -> tuple[AttestationDecision, CommitmentDoc | None]:
        ctx = self.ctx
        # A problem of the document as a whole is named at the first draw: its opened leaf proves the fail.
        first = [SampleCheck(j, segment, False, "") for j, segment in samples[:1]]
        try:
            doc = self.get_document(round_index, solver)
        except (PeerError, CommitmentDocError, KeyError) as exc:
            return decide_attestation(f"commitment document unavailable: {exc}", first), None
        round_theta = self.protocol.theta_of(ctx.run_id, round_index)
        problem = check_document(doc, commitment, ctx.run_id, round_index, solver, round_theta)
        if problem is not None:
            return decide_attestation(problem, first), doc
        solver_url = self.peers.url_of(solver)
        # θ_r is the round's state (served by the run creator and coordinators), not the solver's to
        # withhold: if it cannot be fetched now, the ArtifactError propagates and the caller retries. Nor is its
        # fetch the solver's time: it is charged to no budget.
        with self.peers.budgeted(None):
            theta = get_params(get_global_state(self.store, self.peers, doc.theta_hash))
        end, end_problem = self._fetch_state(doc.leaves[-1].end_hash, solver_url) if doc.leaves else (None, "none")
        payload = None
        if is_compressed(ctx.config.train):  # the Δ hash names a payload document (protocol/payload.py)
            payload = fetch_payload_evidence(
                self.protocol, self.store, self.peers, ctx, round_index, solver, doc.delta_hash, theta
            )
        moments = self._fetch_moments(round_index, solver) if ctx.config.train.carry_moments else None
        trajectory_problem = check_trajectory(
            doc, theta, end, ctx.config.train.num_segments, end_problem, payload, moments
        )
        if trajectory_problem is not None:
            return decide_attestation(trajectory_problem, first), doc
        checks = []
        for j, segment in samples:
            start, fetch_problem = (
                self._fetch_state(doc.leaves[segment].start_hash, solver_url)
                if segment < len(doc.leaves)
                else (None, "the document has no such leaf")
            )
            checks.append(self._timed_check(doc, j, segment, start, fetch_problem or "", solver_url))
        return decide_attestation(None, checks), doc

    def _fetch_moments(self, round_index: int, solver: str) -> MomentsEvidence:
        """The AdamW moments the commitment must start from (node/moments.py), or why the solver could not serve
        them: its previous accepted document or end checkpoint (chain errors propagate: they are not its fault)."""
        try:
            moments = fetch_start_moments(
                self.protocol, self.store, self.peers, self.ctx, round_index, solver, self._fetch_document
            )
        except (ArtifactError, PeerError, CommitmentDocError, StateEncodingError, KeyError) as exc:
            return MomentsEvidence(problem=f"round {round_index - 1}'s end checkpoint or document: {exc}")
        return MomentsEvidence(moments)

    def _fetch_state(self, digest: bytes, url: str | None) -> tuple[State | None, str | None]:
        """A checkpoint the solver must serve: (state, None), or (None, why it could not be had)."""
        try:
            return decode_state(get_artifact(self.store, self.peers, digest, url)), None
        except ArtifactError as exc:
            return None, str(exc)
        except StateEncodingError as exc:  # bytes that hash right but are no canonical state: the solver's fault
            return None, f"not a canonical state: {exc}"

    def _check_sample(
        self,
        doc: CommitmentDoc,
        j: int,
        segment: int,
        start: State | None,
        fetch_problem: str,
        solver_url: str | None,
        secret: bytes | None = None,
    ) -> SampleCheck:
        """`check_sample`, exactly; or, off the profile (`exact` False), with the committed end checkpoint the
        tolerances need (fetched only then: a reproducing node never needs it)."""
        end, end_problem = None, ""
        if not self.exact and start is not None and 0 <= segment < len(doc.leaves):
            end, problem = self._fetch_state(doc.leaves[segment].end_hash, solver_url)
            end_problem = problem or ""
        return check_sample(
            self.ctx.config, self.ctx.dataset, doc, j, segment, start, fetch_problem,
            to_hash32(secret) if secret is not None else None,
            exact=self.exact, end_checkpoint=end, end_problem=end_problem,
        )  # fmt: skip

    def _timed_check(
        self, doc: CommitmentDoc, j: int, segment: int, start: State | None, fetch_problem: str, solver_url: str | None
    ) -> SampleCheck:
        if self.metrics is None or start is None:
            return self._check_sample(doc, j, segment, start, fetch_problem, solver_url)
        with self.metrics.replay_seconds.time():
            result = self._check_sample(doc, j, segment, start, fetch_problem, solver_url)
        self.metrics.replays.inc()
        return result

    def is_plant_true(
        self, round_index: int, solver: str, commitment: Commitment, segment: int, secret: bytes
    ) -> tuple[bool, str]:
        """Does segment `segment` of a commitment revealed as planted replay as the planted training (the same steps
        on the batches of the revealed `secret`)? A plant whose document or checkpoint is not served (within the
        fetch budget), or whose document is not the commitment, is false: the solver must serve what it committed."""
        with self.peers.budgeted(self.new_fetch_budget(round_index, solver)):
            return self._is_plant_true_within_budget(round_index, solver, commitment, segment, secret)

    def _is_plant_true_within_budget(
        self, round_index: int, solver: str, commitment: Commitment, segment: int, secret: bytes
    ) -> tuple[bool, str]:
        ctx = self.ctx
        try:
            doc = self.get_document(round_index, solver)
        except (PeerError, CommitmentDocError, KeyError) as exc:
            return False, f"commitment document unavailable: {exc}"
        problem = check_document(
            doc, commitment, ctx.run_id, round_index, solver, self.protocol.theta_of(ctx.run_id, round_index)
        )
        if problem is not None:
            return False, problem
        if not 0 <= segment < len(doc.leaves):
            return False, f"the document has no leaf for segment {segment}"
        url = self.peers.url_of(solver)
        start, fetch_problem = self._fetch_state(doc.leaves[segment].start_hash, url)
        check = self._check_sample(doc, 0, segment, start, fetch_problem or "", url, secret)
        return check.accepted, check.reason

    def is_attestation_right(
        self, ref: AttestationRef, commitment: Commitment, is_fail: bool, sample_index: int
    ) -> tuple[bool, AttestationDecision, CommitmentDoc | None]:
        """Was this attestation right? A pass: every sampled segment is honest. A fail: the commitment
        is faulty at the named draw (or as a whole: its document or trajectory is wrong, or the
        solver does not serve what it committed). Returns (right, the checker's decision, document)."""
        if is_fail:
            decision, doc = self.check_commitment(ref, commitment, only_samples=[sample_index])
            return decision.kind != "pass", decision, doc
        decision, doc = self.check_commitment(ref, commitment)
        return decision.kind == "pass", decision, doc
