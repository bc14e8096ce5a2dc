"""The verifier's background worker: watch commitments, replay sampled segments, attest.

Runs in its own thread, never on the HTTP event loop. Each pass of the loop reads the current
round, draws the seed when nobody has, and for every seat assigned to this verifier: waits for the
solver to open the commitment on-chain (and reports it unopened once `open_end` passed without an
opening), fetches the solver's commitment document and the sampled start checkpoints (by hash, from
the solver's artifact API), replays with the one training step, judges, and attests with its bond
(a fail names the opened leaf and proof of its draw, from the chain). A seat's fetches share one wall-clock
budget, a sixth of the attest window (protocol/fetch_budget.py), so the replays still fit before attestEnd:
what the solver has not served when it is spent is unavailable, and the seat is attested a data-availability
fail like a withheld checkpoint's (a solver dripping its checkpoints cannot make this verifier miss the window). Before
sending, it asks the chain whether the seat is already attested, and records the attestation in
SQLite right after, so a restart never attests twice. After the challenge window it finalizes
its attestations (bond back) and, once the round is settled, claims its shares; a pass a planted reveal overturned
has its forfeit (bond + penalty, held by Plants) released then, which brings it back if a jury disproved the plant.
A verifier slashed below its reservations (an attestation of it overturned: the reservation stays through its exit
delay, the stake is gone) attests nothing more until it tops up (Verification reverts StakeNotCovered).

The fetch-check-replay logic is the shared `node/checker.CommitmentChecker` (the whistleblower
and jurors use the same one). Each tick also does jury duty (`verifier/jury.py`) unless disabled;
`juror_only` skips the run's verifier list and attesting. Dishonest verifiers (adversary/verifier.py,
never the default) subclass this worker and override `decide_seat`.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

from eth_account.signers.local import LocalAccount

from node.bootstrap import RunNode
from node.checker import CommitmentChecker
from node.credits import CreditWithdrawer
from node.disputes import JurorRegistryReader
from node.logs import log_event
from node.opening import draw_round_seed, report_unopened
from node.plant_checks import PlantDefence
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.manifest import DeploymentManifest
from protocol.errors import GradledgerError
from protocol.opening import OpeningError
from protocol.stake_actions import get_exit_step
from protocol.types import ROLE_VERIFIER, AttestationRef, AttestationState, Commitment, Opening
from protocol.verdict import AttestationDecision
from verifier.decide import get_verifier_phase
from verifier.jury import JuryDuty
from verifier.metrics import VerifierMetrics


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
    status: str  # attested -> finalized -> done (shares claimed, forfeit released, or nothing more to do)


def attestation_id(ref: AttestationRef) -> str:
    return ref.id


class VerifierWorker(RunNode):
    """An honest verifier of one run: attests its seats, finalizes, claims, sits on juries."""

    role_dir = "verifiers"
    sits_on_juries: ClassVar[bool] = True
    """A dishonest verifier never sits on juries (its adversary is its attestations)."""
    checks_plants: ClassVar[bool] = True
    """Check every plant revealed over its own seats and dispute a false one (node/plant_checks.py, issue 37)."""

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
        store: str | None = None,
        allow_private_peers: bool | None = None,
    ) -> None:
        super().__init__(
            run_id, home, account, rpc_url, manifest, peers, threads, store=store,
            allow_private_peers=allow_private_peers,
        )  # fmt: skip
        self.juror_only = juror_only
        self.metrics = metrics
        self.checker: CommitmentChecker | None = None
        self.credits = CreditWithdrawer(self.protocol, account, self.log)
        self._seen_round: tuple[int, bool] = (-1, False)
        self._uncovered_round = -1
        self._said_uncovered = False  # "cannot register" logged once
        self.plant_defence: PlantDefence | None = None
        if self.checks_plants and not juror_only:
            self.plant_defence = PlantDefence(
                self.protocol, account, self.state, self.log, JurorRegistryReader(self.chain), self.get_checker,
                self._own_seats,
            )  # fmt: skip
        self.jury: JuryDuty | None = None
        if (jury or juror_only) and self.sits_on_juries:
            self.jury = JuryDuty(
                run_id, account, self.protocol, self.state, self.peers, self.load, self.get_checker, self.store,
                on_skip=self._skip_dispute,
            )  # fmt: skip

    def _skip_dispute(self, what: str, exc: BaseException) -> None:
        self.note_skip(what, exc)
        self.metrics.skips.inc()

    def get_checker(self) -> CommitmentChecker:
        """The shared commitment checker (node/checker.py) for this run."""
        if self.checker is None:
            ctx = self.load()
            self.checker = CommitmentChecker(
                ctx, self.store, self.peers, self.protocol, self.metrics, exact=self.exact_verdicts
            )
        return self.checker

    def on_start(self) -> None:
        self.ensure_registered()
        log_event(
            self.log, "watching", run=self.run_id, verifier=self.address, juror=self.jury is not None,
            juror_only=self.juror_only, honest=self.sits_on_juries,
        )  # fmt: skip

    def ensure_registered(self) -> None:
        """Register as a juror (unless jury duty is off) and in the run's verifier list (unless juror-only);
        both idempotent."""
        if self.jury is not None and not self.jury.registered:
            self.jury.ensure_registered()
        if self.juror_only:
            return
        if self.protocol.verifier_record_of(self.run_id, self.address).active:
            # registered: the transaction would revert AlreadyRegistered. A storage read the tick keeps across blocks
            # that change nothing (protocol/adapters/quiet_blocks.py), where the attempt cost an eth_estimateGas on
            # every block of the commit window (issue 39)
            return
        try:
            self.protocol.register_verifier(self.account, self.run_id)
            log_event(self.log, "registered", run=self.run_id, verifier=self.address)
        except ContractRevertError as exc:
            if exc.error == "StakeNotCovered":  # slashed below its reservations: it may return once topped up
                if not self._said_uncovered:
                    self._said_uncovered = True
                    log_event(
                        self.log, "cannot register: stake does not cover reservations (top up the verifier stake)",
                        level=logging.WARNING, run=self.run_id,
                    )  # fmt: skip
                return
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

    def tick(self) -> bool:
        """One pass; True when the run is finished and nothing is left to do (every credit withdrawn first, the run's
        stake reservation released).

        Credits are withdrawn whatever the duties did: after them, and also when one of them failed (a peer
        down, a seat that cannot be checked yet) -- a verifier that abstains still takes its money out.
        """
        try:
            done = self._do_duties()
        except Exception:
            self.credits.withdraw_after_tick(self._credit_marker(), failing=True)
            raise
        if done:
            self.credits.withdraw()  # the node exits next: nothing may stay behind
        else:
            self.credits.withdraw_after_tick(self._credit_marker())
        return done

    def _credit_marker(self) -> tuple[int, bool, int]:
        """What changes when this verifier may have been credited: the round, the run's end, its own records."""
        return (*self._seen_round, self.state.changes)

    def _do_duties(self) -> bool:
        ctx = self.load()
        times = self.protocol.round_times(ctx.run_id)
        self._seen_round = (times.round, times.finished)
        now = self.now()
        block = self.chain.block_number()
        self.metrics.block.set(block)
        seed_drawn = not times.finished and self.protocol.seed_base(ctx.run_id, times.round) != bytes(32)
        phase = get_verifier_phase(now, times, seed_drawn, block)
        if self.juror_only:
            phase = "before_attest" if phase in ("wait_seed_block", "draw_seed", "attest") else phase
        if phase == "before_attest" and not self.juror_only:
            self.ensure_registered()  # idempotent (a revert at estimation): a registration a reorg dropped goes again
        if phase in ("wait_seed_block", "draw_seed"):
            draw_round_seed(self.protocol, self.account, ctx.run_id, times)
        elif phase == "attest":
            self._attest_round(times.round, now >= times.open_end)
        self.finalize_and_claim(now)
        if self.plant_defence is not None:
            self.plant_defence.tick(ctx, times, now)
        if self.jury is not None and self.jury.registered:
            self.jury.tick(now)
        done = times.finished and all(r["status"] == "done" for r in self.list_attestations())
        disputing = self.plant_defence is not None and bool(self.plant_defence.desk.open_records())
        done = done and not disputing and (self.jury is None or not self.jury.pending())
        return done and self._leave_finished_run(now)

    def _leave_finished_run(self, now: int) -> bool:
        """Take this verifier off the finished run's list, which releases the stake it reserved at once (no seat of a
        finished run is drawn again: VerifierRegistry.deregister), or release a reservation an overturn left pending:
        True once nothing is held (protocol.stake_actions.get_exit_step). Issue 39: a verifier that exited still held
        the reservation and could not register for the next run (InsufficientFreeStake, retried forever)."""
        if self.juror_only:
            return True
        record = self.protocol.verifier_record_of(self.run_id, self.address)
        step = get_exit_step(record.active, record.reserved, record.exit_at, now, run_finished=True)
        if step == "deregister":
            self.protocol.deregister_verifier(self.account, self.run_id)
        elif step == "release":
            self.protocol.release_verifier(self.account, self.run_id)
        if step in ("deregister", "release"):
            held = self.protocol.verifier_record_of(self.run_id, self.address).reserved
            log_event(self.log, "left the finished run and released its stake reservation", run=self.run_id)
            return not held
        return step == "none"

    def _own_seats(self, round_index: int) -> dict[str, list[AttestationRef]]:
        """Solver -> the seats of its commitment this verifier attested in the round (its own records)."""
        out: dict[str, list[AttestationRef]] = {}
        for record in self.list_attestations():
            if record["round"] == round_index:
                ref = AttestationRef(record["run_id"], round_index, record["solver"], record["slot"])
                out.setdefault(record["solver"], []).append(ref)
        return out

    def _claim_fault_reward(self, ref: AttestationRef) -> None:
        """A standing fail proves its solver's fault: take this seat's equal share of the provers' reward."""
        try:
            self.protocol.claim_fault_reward(self.account, ref)
            log_event(self.log, "fault reward claimed", solver=ref.solver, round=ref.round, slot=ref.slot)
        except ContractRevertError as exc:
            # NoFaultReward: the solver had nothing left to slash; AlreadyRewarded: claimed before a crash
            if exc.error not in ("NoFaultReward", "AlreadyRewarded"):
                raise

    def _release_forfeit(self, ref: AttestationRef) -> bool:
        """A pass a planted reveal overturned: Plants holds its bond and penalty until the round settles, then anyone
        releases them -- into the plant pool, or back to this verifier when a jury disproved the plant (the pass was
        right). Released here once settled; True when nothing is held any more (a jury's overturn holds nothing)."""
        if self.protocol.forfeit_of(ref).amount == 0:
            return True
        if not self.protocol.is_settled(ref.run_id, ref.round):
            return False
        try:
            result = self.protocol.release_forfeit(self.account, ref)
        except ContractRevertError as exc:
            if exc.error != "NothingHeld":  # released by someone else meanwhile
                raise
            return True
        released = next((e.args for e in result.events if e.name == "PlantForfeitReleased"), None)
        log_event(
            self.log, "planted pass's forfeit released", solver=ref.solver, round=ref.round, slot=ref.slot,
            returned=bool(released and released["returned"]), amount_wei=released["amount"] if released else 0,
        )  # fmt: skip
        return True

    # -- attesting ---------------------------------------------------------------------------

    def _my_seats(self, round_index: int) -> list[tuple[AttestationRef, Commitment]]:
        ctx = self.load()
        seats, count = [], self.protocol.seat_count(ctx.run_id, round_index)  # fewer when the list shrank
        for solver, commitment in self.protocol.get_commitments(ctx.run_id, round_index, ctx.created_block).items():
            for slot in range(count):
                ref = AttestationRef(ctx.run_id, round_index, solver, slot)
                assigned, eligible = self.protocol.assigned_verifier(ref)
                if eligible and assigned.lower() == self.address.lower():
                    seats.append((ref, commitment))
        return seats

    def _attest_round(self, round_index: int, past_open_end: bool) -> None:
        seats = self._my_seats(round_index)
        if seats and not self.protocol.is_covered(self.address, ROLE_VERIFIER):
            # slashed below its reservations (an attestation was overturned: its reservation stays through the exit
            # delay while the slash took its stake): attestPass/attestFail revert StakeNotCovered until it tops up,
            # and its seats will be reported as abstentions
            if self._uncovered_round != round_index:
                self._uncovered_round = round_index
                log_event(
                    self.log, "cannot attest: stake does not cover reservations (top up the verifier stake)",
                    level=logging.WARNING, run=self.run_id, round=round_index, seats=len(seats),
                )  # fmt: skip
            return
        for ref, commitment in seats:
            known = self.get_attestation(attestation_id(ref))
            if self.protocol.attestation_of(ref).state != AttestationState.NONE:
                continue  # attested (and recorded), before a crash, or by this key from another process
            if known is not None:
                if known["status"] != "attested":
                    continue
                log_event(
                    self.log, "own attestation dropped by a reorg", level=logging.WARNING, solver=ref.solver,
                    round=ref.round, slot=ref.slot, tx=known["transaction"],
                    why="the chain no longer holds it (its block was orphaned) and the seat is unattested: attesting "
                    "again",
                )  # fmt: skip
            opening = self.protocol.opening_state(ref.run_id, ref.round, ref.solver)
            if opening == Opening.NONE and past_open_end:
                report_unopened(self.protocol, self.account, self.log, ref.run_id, ref.round, ref.solver)
                continue
            if opening != Opening.OPENED:
                continue  # not opened yet (wait for the solver), or reported unopened (nothing to attest)
            try:
                decision = self.decide_seat(ref, commitment)
                self._attest(ref, commitment, decision)
            except GradledgerError:
                raise  # a slow peer or a race: the whole tick is retried
            except Exception as exc:  # one bad seat must not stop the others, finalizing or jury duty
                self.note_skip(f"seat {ref.id}", exc)
                self.metrics.skips.inc()

    def decide_seat(self, ref: AttestationRef, commitment: Commitment) -> AttestationDecision:
        """What to attest for a seat: fetch, check and replay its samples (node/checker.py)."""
        return self.get_checker().check_commitment(ref, commitment)[0]

    def _attest(self, ref: AttestationRef, commitment: Commitment, decision: AttestationDecision) -> None:
        ctx = self.load()
        bond = ctx.terms.attestation_bond
        if decision.kind == "pass":
            result = self.protocol.attest_pass(self.account, ref, commitment, bond)
        else:
            opening = self.protocol.get_opening(ref.run_id, ref.round, ref.solver, ctx.created_block)
            if opening is None:
                raise OpeningError(f"no CommitmentOpened event yet for {ref.id}")
            opened = opening.leaf_of(ref.slot, decision.sample_index)
            result = self.protocol.attest_fail(
                self.account, ref, commitment, decision.sample_index, opened.leaf, list(opened.proof), bond
            )
        self.metrics.attestations.labels(result=decision.kind).inc()
        self._save(
            AttestationRecord(
                attestation_id(ref), ref.run_id, ref.round, ref.solver, ref.slot, decision.kind, decision.sample_index,
                decision.segment, decision.reason, result.transaction_hash, "attested",
            )
        )  # fmt: skip
        log_event(self.log, "attested", kind=decision.kind, solver=ref.solver, round=ref.round, reason=decision.reason)

    # -- after the window --------------------------------------------------------------------

    def finalize_and_claim(self, now: int) -> None:
        """Finalize own attestations after their window; claim shares once their round settled."""
        times = self.protocol.round_times(self.run_id)
        for record in self.list_attestations():
            if record["status"] == "done":
                continue
            ref = AttestationRef(record["run_id"], record["round"], record["solver"], record["slot"])
            state = self.protocol.attestation_of(ref).state
            if state == AttestationState.NONE and (
                ref.round != times.round or times.finished or now >= times.attest_end
            ):
                # recorded, then dropped by a reorg after its window: nothing to finalize or claim
                self.state.put("attestation", record["id"], {**record, "status": "done"})
                continue
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
            if state == AttestationState.OVERTURNED and record["kind"] == "pass":
                if self._release_forfeit(ref):
                    self.state.put("attestation", record["id"], {**record, "status": "done"})
            elif state in (AttestationState.OVERTURNED, AttestationState.VOIDED):  # nothing to claim
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
                if record["kind"] == "fail":
                    self._claim_fault_reward(ref)
                self.state.put("attestation", record["id"], {**record, "status": "done"})
