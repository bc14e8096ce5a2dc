"""The solver node: train rounds, commit, serve checkpoints, and (as coordinator) settle.

A thin loop: read the chain and the node's SQLite state into a `SolverView`, ask
`decide_solver_action` what to do, do it. Crash safety comes from the order of writes:
checkpoints and the commitment document are stored (atomically, by hash) before the round is
recorded as trained; the chain is asked whether this solver already committed before a commit
is sent. Killed at any instant and restarted, the node retrains deterministically (same hashes)
or resumes, and never commits twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from eth_account.signers.local import LocalAccount
from fastapi import HTTPException

from node.abstentions import find_abstentions, is_abstention_window, report_abstentions
from node.bootstrap import RunNode
from node.checker import CommitmentChecker
from node.credits import CreditWithdrawer
from node.disputes import JurorRegistryReader
from node.logs import log_event
from node.moments import fetch_start_moments
from node.opening import draw_round_seed, get_unresolved_commitments, report_unresolved_commitments
from node.pace import measure_round_training_ms
from node.payloads import get_previous_payload_doc
from node.plants import (
    draw_run_seed,
    ensure_plant_anchor,
    get_pending_run_seed_block,
    get_plant_secret,
    is_reveal_due,
    reveal_round_secret,
)
from node.self_defence import SelfDefence
from node.theta import compute_next_theta
from protocol.adapters.artifacts import ArtifactError, ArtifactStore, BackgroundStateWriter, put_state
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.http import ServerHandle, serve_in_thread
from protocol.adapters.manifest import DeploymentManifest
from protocol.adapters.runs import RunContext, get_global_state
from protocol.commitment import CommitmentDoc, CommitmentDocError, encode_commitment_doc
from protocol.hashing import Hash32, hash_to_hex
from protocol.ledger import format_eth
from protocol.opening import OpeningError, build_opening
from protocol.payload import PayloadStep, build_payload_step, encode_payload_doc, is_compressed, make_zero_residual
from protocol.sketch import encode_sketch
from protocol.state import compute_state_hash
from protocol.training import SegmentRecord, State, compute_pseudo_gradient, get_params, train_round
from protocol.types import AttestationRef, AttestationState, ClaimStatus, Opening, RoundTimes
from solver.api import make_solver_app
from solver.decide import Action, RoundRecord, SolverView, decide_solver_action
from solver.joining import verify_stake_covers
from solver.own_artifacts import OwnArtifacts
from solver.process_group import SolverGroup


@dataclass(frozen=True)
class SolverSettings:
    run_id: int
    home: Path
    coordinator: bool = False
    peers: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    port: int = 0
    threads: int = 1
    store: str | None = None
    """--store: an s3://bucket/prefix URL or a directory (default <node dir>/artifacts); docs/storage.md."""
    allow_private_peers: bool | None = None
    """--allow-private-peers: fetch from loopback and private URLs other accounts announced (devnets; docs/nodes.md)."""


class SolverNode(RunNode):
    """One honest solver in one run. Dishonest solvers (adversary/solver.py) override its hooks:
    `train_records` (what a round's checkpoints are), `served_store` (what the artifact API serves)
    and `choose_claim_state` (the θ_(r+1) a coordinator posts)."""

    role_dir = "solvers"

    def __init__(
        self,
        settings: SolverSettings,
        account: LocalAccount,
        rpc_url: str,
        manifest: DeploymentManifest,
        on_progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        super().__init__(
            settings.run_id, settings.home, account, rpc_url, manifest, settings.peers, settings.threads,
            store=settings.store, allow_private_peers=settings.allow_private_peers,
        )  # fmt: skip
        self.settings = settings
        self.on_progress = on_progress
        self.server: ServerHandle | None = None
        self.plant_anchor_known = False
        self.credits = CreditWithdrawer(self.protocol, account, self.log)
        self.own_artifacts = OwnArtifacts(self)
        # its own checkpoints gone corrupt are named in an ERROR and re-created (solver/own_artifacts.py)
        self.store.reporter = self.own_artifacts.on_store_report
        self.round_training_ms = 0
        """This machine's measured compute for one round (measure_pace), 0 until measured."""
        self.group: SolverGroup | None = None
        """This solver's process group (`--nproc`, torchrun): it trains each round with every rank when set."""
        self.checker: CommitmentChecker | None = None
        self.defence = SelfDefence(
            self.protocol, account, self.state, self.log, JurorRegistryReader(self.chain), self.get_checker
        )

    # -- hooks (an adversary overrides these) ----------------------------------------------------

    def served_store(self) -> ArtifactStore:
        """The store the artifact API serves: everything this solver stored."""
        return self.store

    def train_records(
        self, ctx: RunContext, theta: Mapping[str, torch.Tensor], round_index: int, writer: BackgroundStateWriter
    ) -> tuple[list[SegmentRecord], State]:
        """Train round `round_index` from θ_r honestly, storing every checkpoint through `writer`: on the planted
        batches if the plant draw selects this round (node/plants.py), else on the committed ones."""
        total = ctx.config.train.inner_steps
        plant_secret = get_plant_secret(self.protocol, self.account, ctx, round_index)
        if plant_secret is not None:
            log_event(self.log, "planting", run=ctx.run_id, round=round_index)

        def on_step(done: int) -> None:
            if self.on_progress:
                self.on_progress(f"round {round_index}", done, total)

        train = self.group.train_round if self.group is not None else train_round  # the same bits either way
        return train(
            ctx.config, ctx.dataset, theta, round_index, self.address,
            save_checkpoint=writer.save, on_step=on_step, in_background=writer.submit, plant_secret=plant_secret,
            start_moments=self.start_moments(ctx, round_index),
        )  # fmt: skip

    def start_moments(self, ctx: RunContext, round_index: int) -> State | None:
        """The AdamW moments round `round_index` starts from (node/moments.py): those its accepted commitment of the
        previous round ended with in a run that carries them, else None (fresh). An adversary overrides this."""
        return fetch_start_moments(
            self.protocol, self.store, self.peers, ctx, round_index, self.address, self.own_document
        )

    def own_document(self, run_id: int, round_index: int, solver: str) -> bytes:
        """The commitment document this solver committed to for a round, from its own store (ArtifactError when
        it has none: a node whose state lost a round cannot carry that round's moments)."""
        record = self.record_of(run_id, round_index)
        if record is None or record.doc_hash is None or solver.lower() != self.address.lower():
            raise ArtifactError(f"this node has no commitment document of run {run_id} round {round_index}")
        return self.store.get(record.doc_hash)

    def served_document(self, run_id: int, round_index: int) -> bytes | None:
        """The commitment document the API serves for a round: the one this solver committed to."""
        record = self.record_of(run_id, round_index)
        if record is None or record.doc_hash is None:
            return None
        try:
            return self.store.get(record.doc_hash)
        except ArtifactError:  # corrupt (moved aside, logged as an ERROR, re-created next tick) or gone: never a 500
            raise HTTPException(
                503,
                f"the commitment document of run {run_id} round {round_index} is not available on this node right now "
                "(its stored copy is corrupt or missing; the node re-creates it): retry later",
                headers={"Retry-After": "30"},
            ) from None

    def choose_claim_state(self, next_state: State, round_index: int) -> State:
        """The θ_(r+1) a coordinator posts: the outer step over the accepted Δs."""
        return next_state

    # -- HTTP ------------------------------------------------------------------------------

    def start_server(self) -> str:
        """Serve the solver's API (solver/api.py) on its host and port; returns its URL."""
        self.server = serve_in_thread(make_solver_app(self), self.settings.host, self.settings.port)
        return self.server.url

    # -- state -----------------------------------------------------------------------------

    def record_of(self, run_id: int, round_index: int) -> RoundRecord | None:
        raw = self.state.get("round", f"{run_id}:{round_index}")
        return RoundRecord.from_json(raw) if raw else None

    def save_record(self, record: RoundRecord) -> None:
        self.state.put("round", f"{record.run_id}:{record.round}", record.to_json())

    def on_start(self) -> None:
        self.ensure_joined()
        self.measure_pace()

    def measure_pace(self) -> None:
        """Time a few of the run's steps here (node/pace.py), once: a node started with too little of a commit
        window left sits the round out (solver/decide.py) instead of training for a commitment it cannot send."""
        if not self.round_training_ms:
            self.round_training_ms = measure_round_training_ms(self.load(), self.log)

    def ensure_plant_anchor(self, times: RoundTimes) -> None:
        """Register the plant anchor once the run plants (its creator sets the terms during round 0, possibly
        after this node started); settled once the anchor is on-chain or round 0 is over without terms."""
        if self.plant_anchor_known:
            return
        anchor_round = ensure_plant_anchor(self.protocol, self.account, self.log, self.load())
        self.plant_anchor_known = anchor_round is not None or times.round > 0

    def ensure_joined(self) -> None:
        """Join the run if this staked solver has not yet (idempotent).

        Without enough free solver stake it raises StakeNeededError naming the stake needed and the command that
        deposits it, before any transaction (a join would only revert with InsufficientFreeStake). The node waits
        rather than exits: `RunNode.start` retries, logs the cause once, and joins as soon as the stake is there
        (the operator may stake from another terminal after starting the node; docs/nodes.md)."""
        if not self.protocol.has_joined(self.settings.run_id, self.address):
            verify_stake_covers(self.protocol, self.address, self.settings.run_id, self.load().terms.solver_min_stake)
            try:
                self.protocol.join_run(self.account, self.settings.run_id)
                log_event(self.log, "joined", run=self.settings.run_id, solver=self.address)
            except ContractRevertError as exc:
                if exc.error != "AlreadyJoined":
                    raise

    # -- read ------------------------------------------------------------------------------

    def read_view(self) -> SolverView:
        ctx, run = self.load(), self.settings.run_id
        times = self.protocol.round_times(run)
        self.ensure_plant_anchor(times)
        now = self.now()
        record = self.recheck_commit(self.record_of(run, times.round), times)
        committed = False
        if record is not None and record.status == "trained":
            committed = self.address in self.protocol.get_commitments(run, times.round, ctx.created_block)
        seed_drawn, opening = False, Opening.NONE
        if record is not None and record.status == "committed" and not times.finished and now >= times.commit_end:
            seed_drawn = self.protocol.seed_base(run, times.round) != bytes(32)
            opening = self.protocol.opening_state(run, times.round, self.address)
        reveal_due = (
            record is not None
            and record.status == "committed"
            and is_reveal_due(self.protocol, self.address, ctx, times, now)
        )
        abstention_check_due = (
            opening == Opening.OPENED
            and is_abstention_window(times, now)
            and self.state.get("abstentions", f"{run}:{times.round}") is None
        )
        claim_status, window_end, disputes, unfinalized, unresolved = 0, 0, 0, 0, ()
        if self.settings.coordinator and not times.finished and now >= times.challenge_end:
            claim = self.protocol.claim_of(run, times.round)
            claim_status, window_end = claim.status, claim.window_end
            disputes = self.protocol.open_disputes(run)
            unfinalized = len(self._unfinalized(times.round))
            unresolved = get_unresolved_commitments(self.protocol, ctx, times.round) if now >= times.open_end else ()
        block = self.chain.block_number()
        pending_seed = 0
        if record is None and times.round == 0 and not times.finished:
            pending_seed = get_pending_run_seed_block(self.protocol, self.address, ctx, 0, block)
        return SolverView(
            now=now,
            times=times,
            block=block,
            record=record,
            committed_on_chain=committed,
            coordinator=self.settings.coordinator,
            claim_status=claim_status,
            claim_window_end=window_end,
            open_disputes=disputes,
            unfinalized=unfinalized,
            unclaimed_rounds=self._unclaimed_rounds(times.round),
            unwithdrawn_claim_bonds=self._unwithdrawn_claim_bonds(times.round) if self.settings.coordinator else (),
            seed_drawn=seed_drawn,
            opening=opening,
            reveal_due=reveal_due,
            abstention_check_due=abstention_check_due,
            unresolved=unresolved,
            member=self.protocol.is_member(run, self.address) if times.finished else True,
            round_training_ms=self.round_training_ms,
            first_round=record is None and not self._has_earlier_round(times.round),
            run_seed_block=pending_seed,
        )

    def recheck_commit(self, record: RoundRecord | None, times: RoundTimes) -> RoundRecord | None:
        """A round recorded committed whose commitment the chain no longer holds (a reorg dropped the commit) is
        trained again: the decision then commits it once more if its window is still open, or marks it missed."""
        if record is None or record.status != "committed" or times.finished or record.round != times.round:
            return record
        if self.protocol.has_committed(record.run_id, record.round, self.address):
            return record
        record = replace(record, status="trained", commit_tx="")
        self.save_record(record)
        log_event(
            self.log, "own commitment dropped by a reorg", level=logging.WARNING, run=record.run_id, round=record.round,
            why="the chain no longer holds this round's commit (its block was orphaned); it is sent again while the "
            "commit window is open",
        )  # fmt: skip
        return record

    def _unwithdrawn_claim_bonds(self, current: int) -> tuple[int, ...]:
        """Settled rounds whose claim this node posted and whose bond it has not withdrawn."""
        out = []
        for r in range(current):
            if self.state.get("claim_bond", f"{self.settings.run_id}:{r}") is not None:
                continue
            claim = self.protocol.claim_of(self.settings.run_id, r)
            if (
                claim.claimer.lower() == self.address.lower()
                and claim.status == ClaimStatus.SETTLED
                and not claim.bond_paid
            ):
                out.append(r)
            else:
                self.state.put("claim_bond", f"{self.settings.run_id}:{r}", {"done": True})
        return tuple(out)

    def _unclaimed_rounds(self, current: int) -> tuple[int, ...]:
        out = []
        for key, raw in self.state.list("round"):
            record = RoundRecord.from_json(raw)
            if record.run_id != self.settings.run_id or record.status != "committed" or record.round >= current:
                continue
            if self.state.get("shares", key) is None and self.protocol.is_settled(record.run_id, record.round):
                out.append(record.round)
        return tuple(sorted(out))

    def _has_earlier_round(self, current: int) -> bool:
        """Whether this node recorded any round of its run before `current` (it was following the run then)."""
        return any(
            (record := RoundRecord.from_json(raw)).run_id == self.settings.run_id and record.round < current
            for _, raw in self.state.list("round")
        )

    def _unfinalized(self, round_index: int) -> list[AttestationRef]:
        ctx = self.load()
        refs, seats = [], self.protocol.seat_count(ctx.run_id, round_index)
        for solver in self.protocol.get_commitments(ctx.run_id, round_index, ctx.created_block):
            for slot in range(seats):
                ref = AttestationRef(ctx.run_id, round_index, solver, slot)
                if self.protocol.attestation_of(ref).state == AttestationState.ATTESTED:
                    refs.append(ref)
        return refs

    # -- act -------------------------------------------------------------------------------

    def act(self, action: Action) -> None:
        handler = getattr(self, f"_do_{action.kind}")
        handler(action)

    def _do_train(self, action: Action) -> None:
        ctx, r = self.load(), action.round
        theta_hash = self.protocol.theta_of(ctx.run_id, r)
        log_event(self.log, "train", run=ctx.run_id, round=r, theta=hash_to_hex(theta_hash)[:18])
        doc, records = self.train_artifacts(ctx, r, theta_hash)
        self.record_trained(doc)
        log_event(
            self.log,
            "trained",
            run=ctx.run_id,
            round=r,
            root=hash_to_hex(doc.root)[:18],
            loss=round(records[-1].mean_loss, 4),
        )

    def train_artifacts(self, ctx: RunContext, r: int, theta_hash: Hash32) -> tuple[CommitmentDoc, list[SegmentRecord]]:
        """Train round `r` from θ_r and store every checkpoint, sketch and Δ; the round's commitment document.

        Deterministic: run again (a crash, a corrupt checkpoint: solver/own_artifacts.py) it stores the same bytes
        under the same hashes.
        """
        theta = get_params(get_global_state(self.store, self.peers, theta_hash))
        with BackgroundStateWriter(self.store) as writer:
            records, end = self.train_records(ctx, theta, r, writer)
            # while c_H is fsynced by the writer; leaving the block waits for every checkpoint
            for record in records:
                self.store.put(encode_sketch(record.sketch))
            delta_hash = self.store_update(ctx, r, theta, end)
        leaves = tuple(rec.to_leaf(ctx.run_id, r, self.address) for rec in records)
        return CommitmentDoc(ctx.run_id, r, self.address, theta_hash, delta_hash, leaves), records

    def store_update(self, ctx: RunContext, r: int, theta: State, end: State) -> Hash32:
        """Store what the commitment's Δ hash names and return that hash: Δ = θ_r - c_H itself, or in a codec run
        (protocol/payload.py) the payload document, after its payload P_r, e_r and e_(r+1) (all served to verifiers;
        e_(r+1) is this solver's e for round r + 1 if the commitment is accepted)."""
        delta = compute_pseudo_gradient(theta, end)
        if not is_compressed(ctx.config.train):
            return put_state(self.store, delta)
        residual = self.carried_residual(ctx, r, delta)
        step = self.build_payload(ctx, r, delta, residual)
        self.store.put(step.payload)
        put_state(self.store, residual)
        put_state(self.store, step.next_residual)
        return self.store.put(encode_payload_doc(step.doc))

    def carried_residual(self, ctx: RunContext, r: int, delta: State) -> State:
        """e_r: the e_(r+1) of this solver's accepted commitment of round r - 1, else zero (the e-chain rule every
        verifier checks). Read back from the chain and the stores, so a restarted node carries the same e."""
        previous = get_previous_payload_doc(self.protocol, self.store, self.peers, ctx, r, self.address)
        if previous is None:
            return make_zero_residual(delta)
        return get_global_state(self.store, self.peers, previous.next_residual_hash)

    def build_payload(self, ctx: RunContext, r: int, delta: State, residual: State) -> PayloadStep:
        """P_r = C(Δ_r + e_r) and e_(r+1) under the run's codec (an adversary overrides this)."""
        return build_payload_step(delta, residual, ctx.config.train.codec, ctx.run_id, r, self.address)

    def train_into_store(self, ctx: RunContext, r: int, theta_hash: Hash32) -> tuple[CommitmentDoc, Hash32]:
        """Re-create round `r`'s artifacts (solver/own_artifacts.py): the document and the hash it is stored under."""
        doc, _ = self.train_artifacts(ctx, r, theta_hash)
        return doc, self.store.put(encode_commitment_doc(doc))

    def record_trained(self, doc: CommitmentDoc) -> Hash32:
        """Store a round's commitment document and record the round as trained (ready to commit).

        # INVARIANT: called only once every checkpoint, sketch and Δ the document names is stored, so a
        node killed at any instant either retrains (same hashes) or commits exactly what it serves.
        """
        doc_hash = self.store.put(encode_commitment_doc(doc))
        self.save_record(
            RoundRecord(
                doc.run_id, doc.round, "trained", doc.theta_hash, doc.root, doc.delta_hash, doc.tokens, doc_hash
            )
        )  # fmt: skip
        return doc_hash

    def _do_commit(self, action: Action) -> None:
        record = self.record_of(self.settings.run_id, action.round)
        try:
            result = self.protocol.commit(self.account, record.run_id, record.round, record.commitment)
        except ContractRevertError as exc:
            if exc.error != "AlreadyCommitted":
                raise
            result = None
        self.save_record(replace(record, status="committed", commit_tx=result.transaction_hash if result else ""))
        log_event(
            self.log, "committed", run=record.run_id, round=record.round, tx=result.transaction_hash if result else ""
        )

    def _do_draw_run_seed(self, action: Action) -> None:
        draw_run_seed(self.protocol, self.account, self.log, self.load())

    def _do_draw_seed(self, action: Action) -> None:
        draw_round_seed(self.protocol, self.account, self.settings.run_id, self.protocol.round_times(self.run_id))

    def _do_open(self, action: Action) -> None:
        """Open the sampled leaves of this round's commitment on-chain (protocol/opening.py)."""
        ctx, r = self.load(), action.round
        record = self.record_of(ctx.run_id, r)
        try:
            # a corrupt or missing document is re-created first (retraining is deterministic)
            doc = self.own_artifacts.read_document(record)
            segments = self.protocol.opened_segments(ctx.run_id, r, self.address)
            opening = build_opening(doc, segments, ctx.terms.samples_per_commitment)
        except (OpeningError, CommitmentDocError) as exc:
            # Nothing to prove: the commitment will be reported unopened and this solver slashed.
            self.save_record(replace(record, status="unopenable"))
            log_event(
                self.log, "cannot open", level=logging.ERROR, run=ctx.run_id, round=r, reason=str(exc),
                consequence=f"the commitment will be reported unopened and this solver slashed "
                f"{format_eth(ctx.terms.solver_min_stake)} ETH",
            )  # fmt: skip
            return
        # what verifiers will fetch is hash-checked now and re-created if corrupt; opening stays right either way
        self.own_artifacts.ensure_served(record, doc, segments)
        try:
            commitment = record.commitment
            result = self.protocol.open_commitment(self.account, ctx.run_id, r, self.address, commitment, opening)
        except ContractRevertError as exc:
            if exc.error != "AlreadyResolved":  # opened by someone else holding the document
                raise
            return
        log_event(self.log, "opened", run=ctx.run_id, round=r, leaves=len(opening.entries), tx=result.transaction_hash)

    def _do_reveal(self, action: Action) -> None:
        try:
            reveal_round_secret(self.protocol, self.account, self.log, self.load(), action.round)
        except ContractRevertError as exc:
            if exc.error != "NotAfterLastReveal":  # revealed already (a restart after the reveal)
                raise

    def _do_report_abstentions(self, action: Action) -> None:
        """Report the seats of its own opened commitment that were left unattested, once per round (after
        attestEnd no seat can be attested any more)."""
        ctx, run = self.load(), self.settings.run_id
        times = self.protocol.round_times(run)
        if times.round != action.round or not is_abstention_window(times, self.now()):
            return
        refs = find_abstentions(self.protocol, ctx, times, [self.address])
        reported = report_abstentions(self.protocol, self.account, self.log, refs)
        self.state.put(
            "abstentions", f"{run}:{action.round}", {"seats": [ref.id for ref in refs], "reported": reported}
        )

    def _do_report_unopened(self, action: Action) -> None:
        report_unresolved_commitments(self.protocol, self.account, self.log, self.load(), action.round)

    def _do_mark_committed(self, action: Action) -> None:
        record = self.record_of(self.settings.run_id, action.round)
        self.save_record(replace(record, status="committed"))

    def _do_mark_missed(self, action: Action) -> None:
        record = self.record_of(self.settings.run_id, action.round)
        base = record or RoundRecord(self.settings.run_id, action.round, "missed")
        self.save_record(replace(base, status="missed"))
        log_event(self.log, "missed round", run=self.settings.run_id, round=action.round)

    def _do_sit_out(self, action: Action) -> None:
        times = self.protocol.round_times(self.settings.run_id)
        self.save_record(RoundRecord(self.settings.run_id, action.round, "sat_out"))
        log_event(
            self.log, "joining the next round", run=self.settings.run_id, round=action.round,
            why=f"started with {max(times.commit_end - self.now(), 0)} s of round {action.round}'s commit window left "
            f"and a round takes about {self.round_training_ms / 1000:.1f} s to train here; trains from round "
            f"{action.round + 1}",
        )  # fmt: skip

    def _do_finalize(self, action: Action) -> None:
        for ref in self._unfinalized(action.round):
            try:
                self.protocol.finalize(self.account, ref)
            except ContractRevertError as exc:
                if exc.error != "WrongState":  # someone (e.g. the verifier) finalized it first
                    raise

    def _do_post_claim(self, action: Action) -> None:
        ctx, r = self.load(), action.round
        next_state, _, accepted = compute_next_theta(self.protocol, self.store, self.peers, ctx, r)
        next_state = self.choose_claim_state(next_state, r)
        next_hash = put_state(self.store, next_state)
        if next_hash != compute_state_hash(next_state):
            raise AssertionError("artifact name differs from the state hash")
        try:
            self.protocol.post_claim(self.account, ctx.run_id, r, next_hash, self.protocol.challenge_bond(ctx.run_id))
        except ContractRevertError as exc:
            if exc.error != "ClaimExists":  # another coordinator claimed first; its claim is checked by juries
                raise
        log_event(
            self.log, "claimed", run=ctx.run_id, round=r, accepted=len(accepted), theta=hash_to_hex(next_hash)[:18]
        )

    def _do_settle(self, action: Action) -> None:
        try:
            self.protocol.settle(self.account, self.settings.run_id, action.round)
        except ContractRevertError as exc:
            if exc.error != "WrongRound":  # settled by someone else meanwhile
                raise
            return
        log_event(self.log, "settled", run=self.settings.run_id, round=action.round)

    def _do_claim_shares(self, action: Action) -> None:
        run, r = self.settings.run_id, action.round
        paid = self.protocol.is_paid(run, r, self.address)
        if paid:
            try:
                self.protocol.claim_solver_shares(self.account, run, r, self.address)
            except ContractRevertError as exc:
                if exc.error != "AlreadyMinted":
                    raise
        # the mint credited this solver its part of the round's release (ModelShares): take it out
        reward = self.protocol.credits_of("ModelShares", self.address)
        self.credits.withdraw()  # that release, and whatever else is credited to it meanwhile (node/credits.py)
        self.state.put("shares", f"{run}:{r}", {"claimed": True})
        if paid:  # "shares claimed" only when SolverSharesClaimed exists (the money watch logs the mint itself)
            log_event(self.log, "shares claimed", run=run, round=r, round_reward_wei=reward)
        else:
            log_event(
                self.log, "no shares for this round", level=logging.WARNING, run=run, round=r,
                why="the commitment is not paid (failed, unopened, or its plant unrevealed or disproven): see the "
                "`money:` lines of this log and /health",
            )  # fmt: skip

    def _do_withdraw_claim_bond(self, action: Action) -> None:
        try:
            self.protocol.withdraw_claim_bond(self.account, self.settings.run_id, action.round)
        except ContractRevertError as exc:
            if exc.error != "BondAlreadyPaid":
                raise
        self.state.put("claim_bond", f"{self.settings.run_id}:{action.round}", {"done": True})
        log_event(self.log, "claim bond withdrawn", run=self.settings.run_id, round=action.round)

    def _do_wait(self, action: Action) -> None:
        self.stop.wait(min(action.seconds, 1.0))

    def _do_leave_run(self, action: Action) -> None:
        try:
            self.protocol.leave_run(self.account, self.settings.run_id)
        except ContractRevertError as exc:
            if exc.error != "NotJoined":  # left already (a restart after leaving)
                raise
        log_event(self.log, "left the run: its stake reservation is released", run=self.settings.run_id)

    def _do_done(self, action: Action) -> None:
        self.credits.withdraw()  # the node exits next: nothing may stay behind in any contract
        self.finished = True

    # -- self-defence ----------------------------------------------------------------------

    defends_own_work = True
    """Challenge fails on its own commitments that its replay contradicts (node/self_defence.py); an adversary
    that would rather not pay the bond sets it False."""

    def get_checker(self) -> CommitmentChecker:
        """The shared checker (node/checker.py), the verifiers' replay and verdict, over this solver's own work as its
        peers see it: what it serves (`served_store`), not what it holds, so a node whose server withholds or corrupts
        its artifacts agrees with a data-availability fail instead of throwing a challenge bond after it."""
        if self.checker is None:
            ctx, exact = self.load(), self.exact_verdicts
            self.checker = CommitmentChecker(ctx, self.served_store(), self.peers, self.protocol, exact=exact)
        return self.checker

    def defend(self) -> None:
        """Challenge every fail on this solver's commitment that its own replay contradicts and drive those disputes.
        Isolated: a failure here (a slow peer, a race) is logged and retried next tick, never blocks training."""
        if not self.defends_own_work:
            return
        try:
            self.defence.tick(self.load(), self.protocol.round_times(self.run_id), self.now())
        except Exception as exc:
            self.note_skip("self-defence", exc)

    # -- loop ------------------------------------------------------------------------------

    tick_interval_s = 0.0  # `wait` actions pace the loop

    def tick(self) -> bool:
        """One read -> decide -> act step; True once the run is finished for this solver.

        Own artifacts found corrupt while serving are re-created first; credits are withdrawn whatever the step
        did (node/credits.py), also when it failed.
        """
        self.finished = False
        try:
            self.own_artifacts.run_queued()
            self.defend()
            self.act(decide_solver_action(self.read_view()))
        except Exception:
            self.credits.withdraw_after_tick(self.state.changes, failing=True)
            raise
        # once its records changed or a while passed: a claim bond an unresolved dispute returns lands any time
        self.credits.withdraw_after_tick(self.state.changes)
        return self.finished
