"""The solver node: train rounds, commit, serve checkpoints, and (as coordinator) settle.

A thin loop: read the chain and the node's SQLite state into a `SolverView`, ask
`decide_solver_action` what to do, do it. To train a round it first gathers everything the round is a function of
(`gather_round_inputs`: θ_r, the plant secret, the carried moments, a codec run's e_r), then trains once from that
value and stores the outputs (solver/round_training.py); committing and opening are solver/commitment_actions.py's,
claiming, settling and withdrawing solver/settlement.py's. Crash safety comes from the order of writes:
checkpoints and the commitment document are stored (atomically, by hash) before the round is
recorded as trained; the chain is asked whether this solver already committed before a commit
is sent. Killed at any instant and restarted, the node retrains deterministically (same hashes)
or resumes, and never commits twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

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
from protocol.adapters.artifacts import ArtifactError, ArtifactStore, BackgroundStateWriter
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.http import ServerHandle, serve_in_thread
from protocol.adapters.manifest import DeploymentManifest
from protocol.adapters.runs import RunContext, get_global_state
from protocol.commitment import CommitmentDoc, encode_commitment_doc
from protocol.hashing import Hash32, hash_to_hex
from protocol.payload import PayloadStep, build_payload_step, is_compressed, make_zero_residual
from protocol.training import RoundInputs, SegmentRecord, State, get_params, train_round_inputs
from protocol.types import ClaimStatus, Opening, RoundTimes
from solver.api import make_solver_app
from solver.commitment_actions import RoundNotRecordedError, commit_round, open_round, recheck_commit
from solver.decide import Action, RoundRecord, SolverView, decide_solver_action
from solver.joining import ensure_joined
from solver.own_artifacts import OwnArtifacts
from solver.process_group import SolverGroup
from solver.round_training import SolverRoundInputs, train_into_store
from solver.settlement import Settlement


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
    `train_records` (what a round's checkpoints are), `start_moments`, `carried_residual` and `build_payload` (what a
    round is trained from and what its payload is), `served_store` and `served_document` (what the API serves) and
    `choose_claim_state` (the θ_(r+1) a coordinator posts)."""

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
        self.settlement = Settlement(self.protocol, account, self.state, self.credits, self.log, settings.run_id)
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

    def train_records(self, inputs: RoundInputs, writer: BackgroundStateWriter) -> tuple[list[SegmentRecord], State]:
        """Train the round from its gathered inputs honestly, storing every checkpoint through `writer`: on the
        planted batches if `inputs.plant_secret` is set (node/plants.py), else on the committed ones."""
        if inputs.plant_secret is not None:
            log_event(self.log, "planting", run=self.run_id, round=inputs.round_index)
        total = inputs.config.train.inner_steps

        def on_step(done: int) -> None:
            if self.on_progress:
                self.on_progress(f"round {inputs.round_index}", done, total)

        train = self.group.train_round_inputs if self.group is not None else train_round_inputs  # the same bits
        return train(inputs, save_checkpoint=writer.save, on_step=on_step, in_background=writer.submit)

    def plant_secret(self, ctx: RunContext, round_index: int) -> Hash32 | None:
        """The round's plant secret when the plant draw selects this solver's round (node/plants.py), else None."""
        return get_plant_secret(self.protocol, self.account, ctx, round_index)

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
        app = make_solver_app(
            self.address,
            self.served_store(),
            self.get_health,  # the loop runs in the thread that calls run() (RunNode.loop_thread)
            self.get_metrics,
            self.served_document,
        )
        self.server = serve_in_thread(app, self.settings.host, self.settings.port)
        return self.server.url

    # -- state -----------------------------------------------------------------------------

    def record_of(self, run_id: int, round_index: int) -> RoundRecord | None:
        raw = self.state.get("round", f"{run_id}:{round_index}")
        return RoundRecord.from_json(raw) if raw else None

    def recorded(self, round_index: int) -> RoundRecord:
        """The record of a round the decision acts on (commit, open, mark committed): one exists by then."""
        record = self.record_of(self.settings.run_id, round_index)
        if record is None:
            raise RoundNotRecordedError(
                f"no record of run {self.settings.run_id} round {round_index} in the node state"
            )
        return record

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
        """Join the run if this staked solver has not yet (solver/joining.py); RunNode.start retries until it has."""
        ensure_joined(self.protocol, self.account, self.log, self.settings.run_id, self.load().terms.solver_min_stake)

    # -- read ------------------------------------------------------------------------------

    def read_view(self) -> SolverView:
        ctx, run, save = self.load(), self.settings.run_id, self.save_record
        times = self.protocol.round_times(run)
        self.ensure_plant_anchor(times)
        now = self.now()
        record = recheck_commit(self.protocol, self.address, self.log, self.record_of(run, times.round), times, save)
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
        claim_status, window_end, disputes, unfinalized = ClaimStatus.NONE, 0, 0, 0
        unresolved: tuple[str, ...] = ()
        if self.settings.coordinator and not times.finished and now >= times.challenge_end:
            claim = self.protocol.claim_of(run, times.round)
            claim_status, window_end = claim.status, claim.window_end
            disputes = self.protocol.open_disputes(run)
            unfinalized = len(self.settlement.unfinalized(ctx, times.round))
            unresolved = get_unresolved_commitments(self.protocol, ctx, times.round) if now >= times.open_end else ()
        block, coordinating = self.chain.block_number(), self.settings.coordinator
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
            unclaimed_rounds=self.settlement.unclaimed_rounds(times.round),
            unwithdrawn_claim_bonds=self.settlement.unwithdrawn_claim_bonds(times.round) if coordinating else (),
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

    def _has_earlier_round(self, current: int) -> bool:
        """Whether this node recorded any round of its run before `current` (it was following the run then)."""
        return any(
            (record := RoundRecord.from_json(raw)).run_id == self.settings.run_id and record.round < current
            for _, raw in self.state.list("round")
        )

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

    def gather_round_inputs(self, ctx: RunContext, r: int, theta_hash: Hash32) -> SolverRoundInputs:
        """Everything round `r` is a function of, read before its training starts: θ_r from the stores (or peers), the
        plant secret, the AdamW moments it carries and, in a codec run, the residual e_r it carries. Each read goes
        through a hook an adversary may override; training then asks for nothing more (solver/round_training.py)."""
        theta = get_params(get_global_state(self.store, self.peers, theta_hash))
        training = RoundInputs(
            ctx.config, ctx.dataset, r, self.address, theta, self.plant_secret(ctx, r), self.start_moments(ctx, r)
        )
        residual = self.carried_residual(ctx, r, theta) if is_compressed(ctx.config.train) else None
        return SolverRoundInputs(ctx.run_id, theta_hash, training, residual)

    def train_artifacts(self, ctx: RunContext, r: int, theta_hash: Hash32) -> tuple[CommitmentDoc, list[SegmentRecord]]:
        """Gather round `r`'s inputs, then train once and store every checkpoint, sketch and Δ; the round's commitment
        document (stored by `record_trained`) and segment records.

        Deterministic: run again (a crash, a corrupt checkpoint: solver/own_artifacts.py) it stores the same bytes
        under the same hashes.
        """
        inputs = self.gather_round_inputs(ctx, r, theta_hash)
        return train_into_store(self.store, inputs, self.train_records, self.build_payload)

    def carried_residual(self, ctx: RunContext, r: int, theta: State) -> State:
        """e_r: the e_(r+1) of this solver's accepted commitment of round r - 1, else zero over θ_r's names (the
        e-chain rule every verifier checks). Read back from the chain and the stores, so a restarted node carries the
        same e."""
        previous = get_previous_payload_doc(self.protocol, self.store, self.peers, ctx, r, self.address)
        if previous is None:
            return make_zero_residual(theta)
        return get_global_state(self.store, self.peers, previous.next_residual_hash)

    def build_payload(self, inputs: SolverRoundInputs, delta: State, residual: State) -> PayloadStep:
        """P_r = C(Δ_r + e_r) and e_(r+1) under the run's codec (an adversary overrides this)."""
        codec, solver = inputs.training.config.train.codec, inputs.training.solver
        return build_payload_step(delta, residual, codec, inputs.run_id, inputs.round_index, solver)

    def recreate_artifacts(self, ctx: RunContext, r: int, theta_hash: Hash32) -> Hash32:
        """Re-create round `r`'s artifacts (solver/own_artifacts.py): the hash its document is stored under."""
        doc, _ = self.train_artifacts(ctx, r, theta_hash)
        return self.store.put(encode_commitment_doc(doc))

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
        commit_round(self.protocol, self.account, self.log, self.recorded(action.round), self.save_record)

    def _do_draw_run_seed(self, action: Action) -> None:
        draw_run_seed(self.protocol, self.account, self.log, self.load())

    def _do_draw_seed(self, action: Action) -> None:
        draw_round_seed(self.protocol, self.account, self.settings.run_id, self.protocol.round_times(self.run_id))

    def _do_open(self, action: Action) -> None:
        record, ctx = self.recorded(action.round), self.load()
        open_round(self.protocol, self.account, self.log, ctx, record, self.own_artifacts, self.save_record)

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
        self.save_record(replace(self.recorded(action.round), status="committed"))

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
        self.settlement.finalize(self.load(), action.round)

    def _do_post_claim(self, action: Action) -> None:
        self.settlement.post_claim(self.load(), action.round, self.store, self.peers, self.choose_claim_state)

    def _do_settle(self, action: Action) -> None:
        self.settlement.settle(action.round)

    def _do_claim_shares(self, action: Action) -> None:
        self.settlement.claim_shares(action.round)

    def _do_withdraw_claim_bond(self, action: Action) -> None:
        self.settlement.withdraw_claim_bond(action.round)

    def _do_wait(self, action: Action) -> None:
        self.stop.wait(min(action.seconds, 1.0))

    def _do_leave_run(self, action: Action) -> None:
        self.settlement.leave_run()

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
