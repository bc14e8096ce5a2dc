"""The whistleblower: re-check attestations and θ_(r+1) claims, challenge wrong ones, get paid.

A thin loop like the solver's and the verifier's: read (chain events, node state) -> decide
(whistleblower/decide.py, pure) -> act. Each tick:

1. every new PassAttested / FailAttested of the watched run is recorded in SQLite;
2. each recorded attestation (all of them, or a deterministic fraction) is re-checked with the
   shared checker (node/checker.py) while its challenge window is open -- a pass is wrong if
   a sampled segment (or the document, the trajectory, the data it must serve) is faulty; a fail
   is wrong if the commitment is sound at the draw it named -- and a wrong one is challenged with
   the run's challenge bond. A seat of a commitment that may be planted waits for the solver's
   reveal; a planted one is left to the reveal, which already decided it (docs/planted-faults.md);
3. a posted θ_(r+1) claim is compared with the outer step over the accepted Δs and challenged
   if it differs;
4. after the reveal window, plants left unrevealed are reported (the solver is slashed); the
   opened segments of a commitment revealed as planted are replayed with the revealed secret, and
   the first that is not the planted training is disputed (one plant dispute per segment);
5. after attestEnd, every seat of an opened commitment left unattested is reported once
   (node/abstentions.py: its verifier is charged the bond);
6. its open disputes are driven (draw the jury, execute, expire: node/disputes.py) until
   closed; its credits (bond back, winner's reward) are withdrawn. A won challenge of a pass earns
   what its dispute pays; it proves no solver fault for FaultRewards (only standing fails do).

A challenge is recorded ("sending") before its transaction and confirmed from the chain after
a restart (the dispute id is a pure function of the seat), so a restart loses no open challenge
and never challenges twice.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from eth_account.signers.local import LocalAccount

from node.abstentions import find_abstentions, is_abstention_window, report_abstentions
from node.bootstrap import RunNode
from node.challenges import ChallengeDesk, seat_id
from node.checker import CommitmentChecker
from node.credits import CreditWithdrawer
from node.disputes import JurorRegistryReader
from node.logs import log_event
from node.opening import report_unresolved_commitments
from node.plant_checks import challenge_plant_segment, find_false_segment
from node.plants import report_unrevealed_commitments
from node.theta import compute_next_theta
from protocol.adapters.finality import DurableReadCursor
from protocol.adapters.manifest import DeploymentManifest
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex
from protocol.jury import KIND_ATTESTATION, KIND_CLAIM, KIND_PLANT, DisputeSubject
from protocol.opening import OpeningError
from protocol.types import AttestationRef, ClaimStatus
from whistleblower.decide import (
    can_challenge_attestation,
    decide_attestation_challenge,
    is_claim_wrong,
    is_done,
    is_selected,
    order_plant_checks,
)


class Whistleblower(RunNode):
    role_dir = "whistleblowers"

    def __init__(
        self,
        run_id: int,
        home: Path,
        account: LocalAccount,
        rpc_url: str,
        manifest: DeploymentManifest,
        peers: tuple[str, ...],
        fraction: float = 1.0,
        threads: int = 1,
        *,
        store: str | None = None,
        allow_private_peers: bool | None = None,
    ) -> None:
        super().__init__(
            run_id, home, account, rpc_url, manifest, peers, threads, store=store,
            allow_private_peers=allow_private_peers,
        )  # fmt: skip
        self.fraction = fraction
        self.registry = JurorRegistryReader(self.chain)
        self.checker: CommitmentChecker | None = None
        self.credits = CreditWithdrawer(self.protocol, account, self.log)
        self.desk = ChallengeDesk(self.protocol, account, self.state, self.log, self.registry, self._requeue)
        self._seen_round: tuple[int, bool] = (-1, False)

    # -- state -----------------------------------------------------------------------------

    def get_checker(self) -> CommitmentChecker:
        """The shared commitment checker (node/checker.py) of this run, made on first use."""
        if self.checker is None:
            self.checker = CommitmentChecker(
                self.load(), self.store, self.peers, self.protocol, exact=self.exact_verdicts
            )
        return self.checker

    def on_start(self) -> None:
        log_event(self.log, "watching", run=self.run_id, whistleblower=self.address, fraction=self.fraction)

    def list_challenges(self) -> list[dict]:
        return self.desk.records()

    def list_checks(self) -> list[dict]:
        return [value for _, value in self.state.list("check")]

    def _open_challenges(self) -> list[dict]:
        return self.desk.open_records()

    # -- loop ------------------------------------------------------------------------------

    def tick(self) -> bool:
        """One pass; True when the run is finished and nothing is left to do (every credit withdrawn first).

        Credits are withdrawn whatever the duties did, also when one of them failed (node/credits.py).
        """
        try:
            finished = self._do_duties()
        except Exception:
            self.credits.withdraw_after_tick((self._seen_round, self.state.changes), failing=True)
            raise
        open_challenges = len(self._open_challenges())
        if not (finished and open_challenges == 0):
            self.credits.withdraw_after_tick((self._seen_round, self.state.changes))
            return False
        self.credits.withdraw()  # the node exits next: nothing may stay behind
        return is_done(finished, open_challenges, self.credits.pending())

    def _do_duties(self) -> bool:
        """Check, challenge, report and drive disputes; True when the run is finished."""
        self.load()
        times = self.protocol.round_times(self.run_id)
        self._seen_round = (times.round, times.finished)
        now = self.now()
        self._discover()
        self._check_attestations(now, times)
        if not times.finished and now >= times.open_end:
            report_unresolved_commitments(self.protocol, self.account, self.log, self.load(), times.round)
            report_unrevealed_commitments(self.protocol, self.account, self.log, self.load(), times, now)
        if not times.finished:
            self._isolated("plant checks", self._check_plants, now, times)
            self._report_abstentions(now, times)
            self._check_claim(now, times.round)
        for challenge in self._open_challenges():
            self._isolated(f"challenge {challenge['dispute_id']}", self.desk.drive, challenge, now)
        return times.finished

    def _isolated(self, what: str, step: Callable[..., None], *args: Any) -> None:
        """Run one item's step; an unexpected error skips that item (logged, counted), never the others.

        GradledgerErrors (a slow peer, an RPC hiccup, a race) still end the tick, which is retried.
        """
        try:
            step(*args)
        except GradledgerError:
            raise
        except Exception as exc:
            self.note_skip(what, exc)

    # -- attestations ----------------------------------------------------------------------

    def _discover(self) -> None:
        """Record the attestations of the final blocks not read yet; after a reorg, pending checks of attestations
        from orphaned blocks are set aside ("reorged") and recorded again if the new chain holds them."""
        cursor = DurableReadCursor(self.chain, self.state, "attestations", self.load().created_block)
        events = cursor.span(names=["PassAttested", "FailAttested"], contracts=["Verification"])
        if cursor.last_fork is not None:
            for check in self.list_checks():
                if check["status"] == "pending" and check.get("block", -1) > cursor.last_fork:
                    self._set(
                        check, "reorged", f"its attestation's block was orphaned by a reorg at {cursor.last_fork}"
                    )
        for event in events:
            a = event.args
            if a["runId"] != self.run_id:
                continue
            key = seat_id(a["runId"], a["round"], a["solver"], a["slot"])
            known = self.state.get("check", key)
            if known is not None and known["status"] != "reorged":
                continue
            is_fail = event.name == "FailAttested"
            self.state.put(
                "check",
                key,
                {
                    "id": key, "run_id": a["runId"], "round": a["round"], "solver": a["solver"], "slot": a["slot"],
                    "verifier": a["verifier"], "is_fail": is_fail,
                    "sample_index": a["sampleIndex"] if is_fail else -1, "block": event.block_number,
                    "status": "pending", "finding": "",
                },
            )  # fmt: skip
        cursor.advance()

    def _check_attestations(self, now: int, times) -> None:
        for check in self.list_checks():
            if check["status"] != "pending":
                continue
            challenge_end = times.challenge_end if check["round"] == times.round else 0
            if times.finished or not can_challenge_attestation(now, check["round"], times.round, challenge_end):
                self._set(check, "late", "challenge window closed before the check")
                continue
            if self.protocol.is_challenge_blocked(check["run_id"], check["round"], check["solver"]):
                # a commitment that may be planted is challengeable only once its reveal says it is not; a planted
                # one was decided by the reveal (its passes overturned, its fails paid): nothing to re-check
                if self.protocol.plant_of(check["run_id"], check["round"], check["solver"]).planted:
                    self._set(check, "planted", "the solver revealed a planted fault: the reveal decided this seat")
                continue
            if self.fraction < 1:
                if self.chain.block_number() <= check["block"]:
                    continue  # the selection block (attestation block + 1) is not mined yet
                block_hash = bytes(self.chain.get_block(check["block"] + 1)["hash"])
                chosen = is_selected(
                    block_hash, check["run_id"], check["round"], check["solver"], check["slot"], self.address,
                    self.fraction,
                )  # fmt: skip
                if not chosen:
                    self._set(check, "not_selected", f"not in this whistleblower's {self.fraction:g} sample")
                    continue
            self._isolated(f"check {check['id']}", self._check_one, check)

    # -- planted faults ----------------------------------------------------------------------

    def _check_plants(self, now: int, times) -> None:
        """Replay one opened segment of each commitment revealed as planted this round with the revealed secret, and
        dispute the plant (KIND_PLANT) if it is not the planted training: a false plant is slashed and not paid."""
        if times.finished or now >= times.challenge_end:
            return
        ctx = self.load()
        for event in self.chain.get_events(ctx.created_block, names=["PlantRevealed"], contracts=["Plants"]):
            a = event.args
            if a["runId"] != self.run_id or a["round"] != times.round or not a["planted"]:
                continue
            key = f"plant:{self.run_id}:{times.round}:{a['solver']}"
            if self.state.get("check", key) is not None:
                continue
            self._check_plant(key, a["solver"], a["secret"], bytes(self.chain.get_block(event.block_number)["hash"]))

    def _check_plant(self, key: str, solver: str, secret: bytes, reveal_block_hash: bytes) -> None:
        """Replay the opened segments (whistleblower.decide.order_plant_checks) until one is not the planted training,
        and dispute that segment; a plant whose every opened segment replays as planted is right."""
        ctx, r = self.load(), self.protocol.round_times(self.run_id).round
        commitment = self.protocol.get_commitments(ctx.run_id, r, ctx.created_block)[solver]
        opening = self.protocol.get_opening(ctx.run_id, r, solver, ctx.created_block)
        if opening is None:
            raise OpeningError(f"no CommitmentOpened event for the planted commitment of {solver}")
        order = order_plant_checks(
            reveal_block_hash, ctx.run_id, r, solver, self.address, [e.segment for e in opening.entries]
        )
        segment, reason = find_false_segment(self.get_checker(), self.log, r, solver, commitment, secret, order)
        check = {
            "id": key,
            "round": r,
            "solver": solver,
            "status": "right" if segment is None else "challenged",
            "finding": reason,
        }
        self.state.put("check", key, check)
        if segment is None:
            return
        if challenge_plant_segment(self.protocol, self.account, self.desk, ctx, r, solver, commitment, segment, reason):
            log_event(self.log, "challenged plant", solver=solver, segment=segment, reason=reason)

    def _set(self, check: dict, status: str, finding: str) -> None:
        self.state.put("check", check["id"], {**check, "status": status, "finding": finding})

    def _check_one(self, check: dict) -> None:
        ctx, checker = self.load(), self.get_checker()
        commitment = self.protocol.get_commitments(ctx.run_id, check["round"], ctx.created_block)[check["solver"]]
        ref = AttestationRef(ctx.run_id, check["round"], check["solver"], check["slot"])
        right, decision, _ = checker.is_attestation_right(ref, commitment, check["is_fail"], check["sample_index"])
        plan = decide_attestation_challenge(
            check["is_fail"], right, check["sample_index"], decision.sample_index, decision.reason
        )
        kind = "fail" if check["is_fail"] else "pass"
        if plan is None:
            self._set(check, "right", decision.reason)
            log_event(self.log, "attestation checked", seat=check["id"], kind=kind, verdict="right")
            return
        self._set(check, "challenged", plan.reason)
        kind_name = f"{kind} attestation"
        if self.desk.challenge_attestation(ref, commitment, plan, check["verifier"], kind_name, ctx.created_block):
            log_event(
                self.log, "challenged", seat=check["id"], kind=kind, verifier=check["verifier"], reason=plan.reason
            )

    # -- claims ----------------------------------------------------------------------------

    def _check_claim(self, now: int, round_index: int) -> None:
        claim = self.protocol.claim_of(self.run_id, round_index)
        if claim.status != ClaimStatus.POSTED or now >= claim.window_end:
            return
        key = f"claim:{self.run_id}:{round_index}:{claim.nonce}"
        known = self.state.get("check", key)
        if known is not None and known["status"] != "pending":
            return
        _, expected, accepted = compute_next_theta(self.protocol, self.store, self.peers, self.load(), round_index)
        wrong = is_claim_wrong(claim.theta_hash, expected)
        finding = (
            f"claimed {hash_to_hex(claim.theta_hash)[:18]}, the outer step over {len(accepted)} accepted Δs "
            f"gives {hash_to_hex(expected)[:18]}"
        )
        self.state.put(
            "check", key, {"id": key, "status": "challenged" if wrong else "right", "finding": finding, "claim": True}
        )
        log_event(self.log, "claim checked", round=round_index, nonce=claim.nonce, wrong=wrong, finding=finding)
        if not wrong:
            return
        subject = DisputeSubject(KIND_CLAIM, self.run_id, round_index, claim_nonce=claim.nonce)
        bond = self.protocol.dispute_terms(self.run_id).challenge_bond

        def transact() -> None:
            self.protocol.challenge_claim(self.account, self.run_id, round_index, claim.nonce, bond)

        if self.desk.send(subject, claim.claimer, "theta claim", finding, transact):
            log_event(self.log, "challenged claim", round=round_index, claimer=claim.claimer)

    # -- disputes --------------------------------------------------------------------------

    def _requeue(self, subject: DisputeSubject) -> None:
        """A challenge interrupted before its transaction: check its subject again (if its window is still open)."""
        key = (
            seat_id(subject.run_id, subject.round, subject.solver, subject.slot)
            if subject.kind == KIND_ATTESTATION
            else f"plant:{subject.run_id}:{subject.round}:{subject.solver}"
            if subject.kind == KIND_PLANT
            else f"claim:{subject.run_id}:{subject.round}:{subject.claim_nonce}"
        )
        check = self.state.get("check", key)
        if check is not None:
            self.state.put("check", key, {**check, "status": "pending"})

    # -- abstentions -------------------------------------------------------------------------

    def _report_abstentions(self, now: int, times) -> None:
        """Once per round after attestEnd: report every seat of an opened commitment left unattested."""
        key = f"{self.run_id}:{times.round}"
        if not is_abstention_window(times, now) or self.state.get("abstentions", key) is not None:
            return
        refs = find_abstentions(self.protocol, self.load(), times)
        reported = report_abstentions(self.protocol, self.account, self.log, refs)
        self.state.put("abstentions", key, {"seats": [ref.id for ref in refs], "reported": reported})
