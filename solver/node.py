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
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from eth_account.signers.local import LocalAccount
from fastapi import HTTPException

from gradledger.logs import get_logger, log_event
from protocol.adapters.artifacts import ArtifactError, BackgroundStateWriter, put_state
from protocol.adapters.chain import ChainError, ContractRevertError
from protocol.adapters.contracts import AttestationRef, AttestationState, ClaimStatus, Commitment
from protocol.adapters.http import make_node_app
from protocol.adapters.manifest import DeploymentManifest
from protocol.adapters.runs import (
    RunContext,
    compute_next_theta,
    get_global_state,
    load_run_when_created,
    open_node_adapters,
)
from protocol.commitment import CommitmentDoc, encode_commitment_doc
from protocol.hashing import hash_to_hex, to_hash32
from protocol.sketch import encode_sketch
from protocol.state import compute_state_hash
from protocol.training import compute_pseudo_gradient, get_params, train_round
from solver.decide import Action, RoundRecord, SolverView, decide_solver_action
from solver.roles import AdversarySettings, SolverAdversary, WithholdingStore, make_wrong_theta, train_dishonest_round

logger = get_logger("solver")


@dataclass(frozen=True)
class SolverSettings:
    run_id: int
    home: Path
    coordinator: bool = False
    peers: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    port: int = 0
    threads: int = 1
    adversary: AdversarySettings | None = None
    """A dishonest role (solver/roles.py) for tests and the adversarial demo; None = honest."""


class SolverNode:
    """One solver in one run."""

    def __init__(
        self,
        settings: SolverSettings,
        account: LocalAccount,
        rpc_url: str,
        manifest: DeploymentManifest,
        on_progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self.settings = settings
        self.account = account
        self.address = account.address
        node_dir = settings.home / "solvers" / self.address.lower()
        self.io = open_node_adapters(node_dir, rpc_url, manifest, settings.peers)
        self.chain, self.protocol, self.store, self.state, self.peers = (
            self.io.chain, self.io.protocol, self.io.store, self.io.state, self.io.peers,
        )  # fmt: skip
        self.on_progress = on_progress
        self.ctx: RunContext | None = None
        self.server = None
        self._stop = threading.Event()

    # -- HTTP ------------------------------------------------------------------------------

    def start_server(self) -> str:
        from protocol.adapters.http import serve_in_thread

        served = self.store if not self._is(SolverAdversary.WITHHOLD) else WithholdingStore(self.store)
        app = make_node_app("solver", self.address, served)

        @app.get("/commitments/{run_id}/{round_index}")
        def get_commitment(run_id: int, round_index: int) -> dict:
            record = self._record(run_id, round_index)
            if record is None or not record.doc_hash:
                raise HTTPException(404, f"no commitment document for run {run_id} round {round_index}")
            return {"document": self.store.get(to_hash32(record.doc_hash)).decode()}

        self.server = serve_in_thread(app, self.settings.host, self.settings.port)
        return self.server.url

    def _is(self, mode: SolverAdversary) -> bool:
        return self.settings.adversary is not None and self.settings.adversary.mode is mode

    # -- state -----------------------------------------------------------------------------

    def _record(self, run_id: int, round_index: int) -> RoundRecord | None:
        raw = self.state.get("round", f"{run_id}:{round_index}")
        return RoundRecord(**raw) if raw else None

    def _save(self, record: RoundRecord) -> None:
        self.state.put("round", f"{record.run_id}:{record.round}", asdict(record))

    def load(self) -> RunContext:
        """The run's context; waits for the run to be created if it does not exist yet."""
        if self.ctx is None:
            self.ctx = load_run_when_created(self.io, self.settings.run_id, self._stop, self.settings.threads)
        return self.ctx

    def ensure_joined(self) -> None:
        """Join the run if this staked solver has not yet (idempotent)."""
        if not self.protocol.has_joined(self.settings.run_id, self.address):
            try:
                self.protocol.join_run(self.account, self.settings.run_id)
                log_event(logger, "joined", run=self.settings.run_id, solver=self.address)
            except ContractRevertError as exc:
                if exc.error != "AlreadyJoined":
                    raise

    # -- read ------------------------------------------------------------------------------

    def read_view(self) -> SolverView:
        ctx, run = self.load(), self.settings.run_id
        times = self.protocol.round_times(run)
        now = max(int(time.time()), self.chain.get_block("latest")["timestamp"])
        record = self._record(run, times.round)
        committed = False
        if record is not None and record.status == "trained":
            committed = self.address in self.protocol.get_commitments(run, times.round, ctx.created_block)
        claim_status, window_end, disputes, unfinalized = 0, 0, 0, 0
        if self.settings.coordinator and not times.finished and now >= times.challenge_end:
            claim = self.protocol.claim_of(run, times.round)
            claim_status, window_end = claim.status, claim.window_end
            disputes = self.protocol.open_disputes(run)
            unfinalized = len(self._unfinalized(times.round))
        return SolverView(
            now=now,
            times=times,
            record=record,
            committed_on_chain=committed,
            coordinator=self.settings.coordinator,
            claim_status=claim_status,
            claim_window_end=window_end,
            open_disputes=disputes,
            unfinalized=unfinalized,
            unclaimed_rounds=self._unclaimed_rounds(times.round),
            unwithdrawn_claim_bonds=self._unwithdrawn_claim_bonds(times.round) if self.settings.coordinator else (),
        )

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
            record = RoundRecord(**raw)
            if record.run_id != self.settings.run_id or record.status != "committed" or record.round >= current:
                continue
            if self.state.get("shares", key) is None and self.protocol.is_settled(record.run_id, record.round):
                out.append(record.round)
        return tuple(sorted(out))

    def _unfinalized(self, round_index: int) -> list[AttestationRef]:
        ctx = self.load()
        refs = []
        for solver in self.protocol.get_commitments(ctx.run_id, round_index, ctx.created_block):
            for slot in range(ctx.terms.verifiers_per_commitment):
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
        theta = get_params(get_global_state(self.store, self.peers, theta_hash))
        log_event(logger, "train", run=ctx.run_id, round=r, theta=hash_to_hex(theta_hash)[:18])
        total = ctx.config.train.inner_steps

        def on_step(done: int) -> None:
            if self.on_progress:
                self.on_progress(f"round {r}", done, total)

        with BackgroundStateWriter(self.store) as writer:
            if self._is(SolverAdversary.CHEAT):
                adversary = self.settings.adversary
                records, end = train_dishonest_round(
                    adversary.behaviour, ctx.config, ctx.dataset, theta, r, self.address, writer.save, adversary.seed
                )
                log_event(logger, "trained dishonestly", round=r, adversary=adversary.label)
            else:
                records, end = train_round(
                    ctx.config,
                    ctx.dataset,
                    theta,
                    r,
                    self.address,
                    save_checkpoint=writer.save,
                    on_step=on_step,
                    in_background=writer.submit,
                )
            # while c_H is fsynced by the writer; leaving the block waits for every checkpoint
            for record in records:
                self.store.put(encode_sketch(record.sketch))
            delta_hash = put_state(self.store, compute_pseudo_gradient(theta, end))
        doc = CommitmentDoc(
            ctx.run_id,
            r,
            self.address,
            theta_hash,
            delta_hash,
            tuple(rec.to_leaf(ctx.run_id, r, self.address) for rec in records),
        )
        doc_hash = self.store.put(encode_commitment_doc(doc))
        self._save(
            RoundRecord(
                ctx.run_id, r, "trained", hash_to_hex(theta_hash), hash_to_hex(doc.root), hash_to_hex(delta_hash),
                doc.tokens, hash_to_hex(doc_hash),
            )
        )  # fmt: skip
        log_event(
            logger,
            "trained",
            run=ctx.run_id,
            round=r,
            root=hash_to_hex(doc.root)[:18],
            loss=round(records[-1].mean_loss, 4),
        )

    def _do_commit(self, action: Action) -> None:
        record = self._record(self.settings.run_id, action.round)
        commitment = Commitment(to_hash32(record.root), to_hash32(record.delta_hash), record.tokens)
        try:
            result = self.protocol.commit(self.account, record.run_id, record.round, commitment)
        except ContractRevertError as exc:
            if exc.error != "AlreadyCommitted":
                raise
            result = None
        self._save(
            RoundRecord(
                **{**asdict(record), "status": "committed", "commit_tx": result.transaction_hash if result else ""}
            )
        )
        log_event(
            logger, "committed", run=record.run_id, round=record.round, tx=result.transaction_hash if result else ""
        )

    def _do_mark_committed(self, action: Action) -> None:
        record = self._record(self.settings.run_id, action.round)
        self._save(RoundRecord(**{**asdict(record), "status": "committed"}))

    def _do_mark_missed(self, action: Action) -> None:
        record = self._record(self.settings.run_id, action.round)
        base = asdict(record) if record else {"run_id": self.settings.run_id, "round": action.round}
        self._save(RoundRecord(**{**base, "status": "missed"}))
        log_event(logger, "missed round", run=self.settings.run_id, round=action.round)

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
        if self._is(SolverAdversary.WRONG_CLAIM) and self.protocol.claim_of(ctx.run_id, r).nonce == 0:
            next_state = make_wrong_theta(next_state)
            log_event(logger, "posting a wrong claim", level=logging.WARNING, run=ctx.run_id, round=r)
        next_hash = put_state(self.store, next_state)
        if next_hash != compute_state_hash(next_state):
            raise AssertionError("artifact name differs from the state hash")
        try:
            self.protocol.post_claim(self.account, ctx.run_id, r, next_hash, self.protocol.challenge_bond(ctx.run_id))
        except ContractRevertError as exc:
            if exc.error != "ClaimExists":  # another coordinator claimed first; its claim is checked by juries
                raise
        log_event(logger, "claimed", run=ctx.run_id, round=r, accepted=len(accepted), theta=hash_to_hex(next_hash)[:18])

    def _do_settle(self, action: Action) -> None:
        try:
            self.protocol.settle(self.account, self.settings.run_id, action.round)
        except ContractRevertError as exc:
            if exc.error != "WrongRound":  # settled by someone else meanwhile
                raise
            return
        log_event(logger, "settled", run=self.settings.run_id, round=action.round)

    def _do_claim_shares(self, action: Action) -> None:
        run, r = self.settings.run_id, action.round
        if self.protocol.is_accepted(run, r, self.address):
            try:
                self.protocol.claim_solver_shares(self.account, run, r, self.address)
            except ContractRevertError as exc:
                if exc.error != "AlreadyMinted":
                    raise
        self.state.put("shares", f"{run}:{r}", {"claimed": True})
        log_event(logger, "shares claimed", run=run, round=r)

    def _do_withdraw_claim_bond(self, action: Action) -> None:
        try:
            self.protocol.withdraw_claim_bond(self.account, self.settings.run_id, action.round)
        except ContractRevertError as exc:
            if exc.error != "BondAlreadyPaid":
                raise
        self.state.put("claim_bond", f"{self.settings.run_id}:{action.round}", {"done": True})
        log_event(logger, "claim bond withdrawn", run=self.settings.run_id, round=action.round)

    def _do_wait(self, action: Action) -> None:
        self._stop.wait(min(action.seconds, 1.0))

    def _do_done(self, action: Action) -> None:
        self._stop.set()

    # -- loop ------------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> None:
        """Loop until the run is finished (or `stop` is set)."""
        self._stop = stop or self._stop
        while not self._stop.is_set():
            try:
                self.load()
                self.ensure_joined()
                break
            except (ArtifactError, ChainError) as exc:  # run artifacts not reachable yet, RPC hiccup: retry
                log_event(logger, "cannot load run yet", level=logging.WARNING, error=str(exc))
                self._stop.wait(1.0)
        while not self._stop.is_set():
            try:
                self.act(decide_solver_action(self.read_view()))
            except (ArtifactError, ChainError) as exc:  # a slow peer or a race with another node: retry
                log_event(logger, "step failed, retrying", level=logging.WARNING, error=str(exc))
                self._stop.wait(1.0)
