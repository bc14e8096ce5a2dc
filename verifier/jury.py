"""Jury duty of a verifier service: register a BLS key, watch disputes, vote, aggregate, get paid.

At startup the node registers its juror key (derived from its account key, protocol/jury.py)
in the JurorRegistry with a proof of possession bound to its address; registration is idempotent
(an active juror is left alone, one that left returns with the same key). Each tick, for every dispute of the watched
run (AttestationChallenged / ClaimChallenged):

1. anyone's step first: draw the jury once the seed block exists, execute a decided verdict,
   expire a dispute past its deadline (node/disputes.py);
2. when this node holds an eligible seat (again after each appeal: a new jury, new seats): decide
   with the shared checker -- an attestation:
   "was it right?" (a pass: are all sampled segments honest? a fail: is the named segment (or
   the commitment as a whole) really faulty?); a θ_(r+1) claim: "is it the hash the accepted
   pseudo-gradients give?" -- sign the verdict message and store the vote in SQLite;
3. exchange votes with the other verifiers over HTTP (push to `POST /jury/votes`, pull from
   `GET /jury/votes/{dispute_id}`), keeping only votes that verify against the seat's
   registered key;
4. holding a quorum of matching votes, submit the aggregate (`submitVerdict`: signer bitmap,
   eligible aggregate key, non-signers); racing jurors are harmless (the losers' transactions
   revert and are ignored);
5. after the round settles, claim the juror reward of every executed verdict it signed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass

from eth_account.signers.local import LocalAccount

from node.checker import CommitmentChecker
from node.credits import withdraw_all_credits
from node.disputes import JurorRegistryReader, advance_dispute, get_drawn_jury
from node.logs import get_logger, log_event
from node.theta import compute_next_theta
from protocol import bls
from protocol.adapters.artifacts import ArtifactStore
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.finality import DurableReadCursor
from protocol.adapters.http import PeerSet
from protocol.adapters.nodestate import NodeState
from protocol.adapters.runs import RunContext
from protocol.constants import JUROR_MIN_STAKE
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex, to_hash32
from protocol.jury import (
    KIND_ATTESTATION,
    KIND_CLAIM,
    KIND_PLANT,
    DisputeSubject,
    Jury,
    JuryError,
    Vote,
    assemble_verdict,
    check_vote,
    compute_vote,
    derive_juror_key,
    get_plant_subject,
)
from protocol.types import ROLE_VERIFIER, AttestationRef, DisputeStatus

logger = get_logger("jury")


class VoteRejectedError(GradledgerError):
    """A vote offered to this node cannot count; `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class DisputeInfo:
    """What this node recorded about a dispute of its run (SQLite kind "dispute")."""

    dispute_id: str
    subject: dict
    challenger: str
    is_fail: bool = False
    sample_index: int = 0
    my_seat: int = -1  # seat in the latest jury this node sat on
    my_verdict: str = ""  # "challenger" | "defendant" once decided (kept across appeals)
    my_appeals: int = -1  # appeal level of the jury `my_seat` belongs to
    status: str = "open"  # open -> closed (executed or expired) -> done (reward claimed or nothing to claim)


class JuryDuty:
    def __init__(
        self,
        run_id: int,
        account: LocalAccount,
        protocol: ProtocolClient,
        state: NodeState,
        peers: PeerSet,
        get_context: Callable[[], RunContext],
        get_checker: Callable[[], CommitmentChecker],
        store: ArtifactStore,
        on_skip: Callable[[str, BaseException], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self.account = account
        self.address = account.address
        self.protocol = protocol
        self.chain = protocol.chain
        self.state = state
        self.peers = peers
        self.get_context = get_context
        self.get_checker = get_checker
        self.store = store
        self.on_skip = on_skip
        self.key = derive_juror_key(bytes(account.key))
        self.registration = bls.compute_juror_registration(self.key, self.address)
        self.registry = JurorRegistryReader(self.chain)
        self.disputes_address = self.chain.contract("Disputes").address
        self.registered = False

    # -- registration ----------------------------------------------------------------------

    def ensure_registered(self) -> bool:
        """Register (or return with) this node's juror key; False when its verifier stake is too low."""
        record = self.protocol.juror_of(self.address)
        if record.active:
            self.registered = True
            return True
        free = self.protocol.free_stake_of(self.address, ROLE_VERIFIER)
        if free < JUROR_MIN_STAKE and not record.reserved:
            log_event(
                logger, "not registering as juror: free verifier stake (not reserved by a run) below JUROR_MIN_STAKE",
                level=logging.WARNING, free_wei=free, required_wei=JUROR_MIN_STAKE,
            )  # fmt: skip
            return False
        try:
            self.protocol.register_juror(
                self.account, self.registration.public_key_g1, self.registration.proof_of_possession_g2
            )
        except ContractRevertError as exc:
            if exc.error != "AlreadyRegistered":
                raise
        log_event(logger, "juror registered", juror=self.address, returning=record.reserved)
        self.registered = True
        return True

    # -- records ---------------------------------------------------------------------------

    def list_disputes(self) -> list[dict]:
        return [value for _, value in self.state.list("dispute")]

    def _save(self, info: dict) -> None:
        self.state.put("dispute", info["dispute_id"], info)

    def _votes(self, dispute_id: bytes) -> list[Vote]:
        """Every stored vote of a dispute, of any of its juries (`assemble_verdict` keeps the current jury's)."""
        prefix = hash_to_hex(dispute_id) + ":"
        return [Vote.from_json(v) for k, v in self.state.list("vote") if k.startswith(prefix)]

    def list_votes(self, dispute_id: str) -> list[dict]:
        try:
            digest = to_hash32(dispute_id, "dispute id")
        except GradledgerError as exc:
            raise VoteRejectedError(400, str(exc)) from None
        return [v.to_json() for v in self._votes(digest)]

    @staticmethod
    def _vote_key(vote: Vote) -> str:
        """One vote per (dispute, seat, juror): after an appeal the same seat belongs to another juror."""
        return f"{hash_to_hex(vote.dispute_id)}:{vote.seat}:{vote.juror.lower()}"

    def _store_vote(self, vote: Vote) -> None:
        self.state.put("vote", self._vote_key(vote), vote.to_json())

    def pending(self) -> bool:
        """Whether a dispute still needs this node (open, or a reward to claim)."""
        return any(d["status"] != "done" for d in self.list_disputes())

    # -- incoming votes (HTTP) -------------------------------------------------------------

    def accept_vote(self, payload: dict) -> dict:
        """Check and store a vote offered by a peer; VoteRejectedError (with an HTTP status) if it cannot count."""
        try:
            vote = Vote.from_json(payload)
        except JuryError as exc:
            raise VoteRejectedError(400, str(exc)) from None
        known = self.state.get("vote", self._vote_key(vote))
        if known is not None and known == vote.to_json():
            return {"accepted": True, "known": True}
        record = self.protocol.dispute_of(vote.dispute_id)
        if record.status == DisputeStatus.NONE:
            raise VoteRejectedError(404, f"no dispute {hash_to_hex(vote.dispute_id)} on this chain")
        if record.status == DisputeStatus.OPEN:
            raise VoteRejectedError(409, "the jury of this dispute is not drawn yet; send the vote after drawJury")
        jury = get_drawn_jury(self.registry, record)
        problem = check_vote(vote, jury, self.disputes_address, self.chain.chain_id, vote.dispute_id)
        if problem is not None:
            raise VoteRejectedError(403, f"vote rejected: {problem}")
        if known is not None:
            raise VoteRejectedError(409, f"seat {vote.seat} already voted differently; one vote per seat counts")
        self._store_vote(vote)
        return {"accepted": True, "known": False}

    # -- loop ------------------------------------------------------------------------------

    def tick(self, now: int) -> None:
        self._discover()
        for info in self.list_disputes():
            if info["status"] == "done":
                continue
            try:
                self._handle(info, now)
            except ContractRevertError as exc:
                log_event(logger, "dispute step failed", level=logging.WARNING, dispute=info["dispute_id"][:18],
                          error=str(exc))  # fmt: skip
            except GradledgerError:
                raise  # a slow peer or an RPC hiccup: the tick is retried
            except Exception as exc:  # one malformed dispute must not stop the others
                if self.on_skip is None:
                    raise
                self.on_skip(f"dispute {info['dispute_id']}", exc)

    def _discover(self) -> None:
        """Record every new challenge of the watched run, from the final blocks (reorg-checked: a challenge re-read
        after a reorg is known by its dispute id and recorded once)."""
        cursor = DurableReadCursor(self.chain, self.state, "jury", self.chain.deployment.deployed_block)
        for event in cursor.span(
            names=["AttestationChallenged", "ClaimChallenged", "PlantChallenged"], contracts=["Disputes"]
        ):
            a = event.args
            if a["runId"] != self.run_id:
                continue
            dispute_id = hash_to_hex(a["disputeId"])
            if self.state.get("dispute", dispute_id) is not None:
                continue
            if event.name == "AttestationChallenged":
                attestation = a["attestation"]
                is_fail, sample = (
                    (attestation["isFail"], attestation["sampleIndex"])
                    if hasattr(attestation, "get") or isinstance(attestation, dict)
                    else (attestation[0], attestation[1])
                )
                subject = DisputeSubject(KIND_ATTESTATION, a["runId"], a["round"], a["solver"], a["slot"], 0)
                info = DisputeInfo(dispute_id, subject.to_json(), a["challenger"], bool(is_fail), int(sample))
            elif event.name == "PlantChallenged":
                subject = get_plant_subject(a["runId"], a["round"], a["solver"], int(a["segmentIndex"]))
                info = DisputeInfo(dispute_id, subject.to_json(), a["challenger"], sample_index=int(a["segmentIndex"]))
            else:
                subject = DisputeSubject(KIND_CLAIM, a["runId"], a["round"], claim_nonce=a["claimNonce"])
                info = DisputeInfo(dispute_id, subject.to_json(), a["challenger"])
            self._save(asdict(info))
            log_event(logger, "dispute seen", dispute=dispute_id[:18], kind=subject.kind, challenger=a["challenger"])
        cursor.advance()

    def _handle(self, info: dict, now: int) -> None:
        subject = DisputeSubject.from_json(info["subject"])
        record = advance_dispute(self.protocol, self.account, self.registry, subject, now)
        if record.status == DisputeStatus.JURY_DRAWN:
            self._serve(info, subject, record)
        elif record.is_closed:
            self._after(info, subject, record)

    def _serve(self, info: dict, subject: DisputeSubject, record) -> None:
        jury = get_drawn_jury(self.registry, record)
        seat = jury.seat_of(self.address)
        if seat is not None and info["my_appeals"] != record.appeals:
            challenger_wins = info["my_verdict"] == "challenger" if info["my_verdict"] else self._decide(subject, info)
            vote = compute_vote(
                self.key, self.disputes_address, self.chain.chain_id, subject.dispute_id, seat, self.address,
                challenger_wins,
            )  # fmt: skip
            self._store_vote(vote)
            verdict_name = "challenger" if challenger_wins else "defendant"
            info = {**info, "my_seat": seat, "my_verdict": verdict_name, "my_appeals": record.appeals}
            self._save(info)
            log_event(logger, "voted", dispute=info["dispute_id"][:18], seat=seat, appeals=record.appeals,
                      challenger_wins=challenger_wins)  # fmt: skip
        self._exchange(subject.dispute_id, jury)
        verdict = assemble_verdict(jury, self._votes(subject.dispute_id))
        if verdict is None:
            return
        try:
            self.protocol.submit_verdict(
                self.account, subject, verdict.challenger_wins, verdict.signers, verdict.signature_g2,
                verdict.eligible_aggregate_g1, list(verdict.non_signers),
            )  # fmt: skip
            log_event(logger, "verdict submitted", dispute=info["dispute_id"][:18],
                      challenger_wins=verdict.challenger_wins, signers=verdict.signer_count)  # fmt: skip
        except ContractRevertError as exc:
            if exc.error != "WrongStatus":  # another juror submitted first
                raise

    def _decide(self, subject: DisputeSubject, info: dict) -> bool:
        """The juror's verdict: True when the challenger is right."""
        ctx = self.get_context()
        if subject.kind == KIND_PLANT:
            # the disputed segment (recorded as sample_index) must replay as the planted training of the secret
            commitment = self.protocol.get_commitments(subject.run_id, subject.round, ctx.created_block)[subject.solver]
            secret = self.protocol.plant_secret_of(subject.run_id, subject.round, subject.solver, ctx.created_block)
            if secret is None:  # challengePlant needs a revealed plant: its event must be there (retry the tick)
                raise GradledgerError(f"no PlantRevealed event found for the plant dispute {info['dispute_id']}")
            true, reason = self.get_checker().is_plant_true(
                subject.round, subject.solver, commitment, info["sample_index"], secret
            )
            log_event(logger, "juror check", dispute=info["dispute_id"][:18], plant_true=true, finding=reason)
            return not true
        if subject.kind == KIND_ATTESTATION:
            commitments = self.protocol.get_commitments(subject.run_id, subject.round, ctx.created_block)
            commitment = commitments[subject.solver]
            ref = AttestationRef(subject.run_id, subject.round, subject.solver, subject.slot)
            right, decision, _ = self.get_checker().is_attestation_right(
                ref, commitment, info["is_fail"], info["sample_index"]
            )
            log_event(logger, "juror check", dispute=info["dispute_id"][:18], attestation_right=right,
                      finding=decision.reason)  # fmt: skip
            return not right
        claim = self.protocol.claim_of(subject.run_id, subject.round)
        _, expected, accepted = compute_next_theta(self.protocol, self.store, self.peers, ctx, subject.round)
        log_event(logger, "juror check", dispute=info["dispute_id"][:18], claim=hash_to_hex(claim.theta_hash)[:18],
                  expected=hash_to_hex(expected)[:18], accepted=len(accepted))  # fmt: skip
        return claim.theta_hash != expected

    def _exchange(self, dispute_id: bytes, jury: Jury) -> None:
        """Push this node's vote to every verifier peer and pull theirs (each checked before it counts)."""
        mine = [v for v in self._votes(dispute_id) if v.juror.lower() == self.address.lower()]
        known = {(v.seat, v.signature) for v in self._votes(dispute_id)}
        for url in self.peers.find_role("verifier", exclude_address=self.address):
            for vote in mine:
                self.peers.post_json(url, "/jury/votes", vote.to_json())
            for raw in self.peers.get_json_list(url, f"/jury/votes/{hash_to_hex(dispute_id)}"):
                try:
                    vote = Vote.from_json(raw)
                except JuryError:
                    continue
                if (vote.seat, vote.signature) in known:
                    continue
                if check_vote(vote, jury, self.disputes_address, self.chain.chain_id, dispute_id) is None:
                    if self.state.get("vote", self._vote_key(vote)) is None:
                        self._store_vote(vote)
                    known.add((vote.seat, vote.signature))

    def _after(self, info: dict, subject: DisputeSubject, record) -> None:
        """A closed dispute: claim the reward of a verdict this node signed once the round settled."""
        seat = info["my_seat"]
        sat = seat >= 0 and info["my_appeals"] == record.appeals  # a seat in the jury that decided
        signed = record.status == DisputeStatus.EXECUTED and sat and record.signers >> seat & 1
        if not signed or record.claimed >> seat & 1:
            self._save({**info, "status": "done"})
            return
        if info["status"] != "closed":
            info = {**info, "status": "closed"}
            self._save(info)
        if not self.protocol.is_settled(subject.run_id, subject.round):
            return
        try:
            self.protocol.claim_juror_reward(self.account, subject, seat)
            log_event(logger, "juror reward claimed", dispute=info["dispute_id"][:18], seat=seat)
        except ContractRevertError as exc:
            if exc.error != "AlreadyClaimed":
                raise
        self._save({**info, "status": "done"})
        # the juror reward (Disputes), the round's release credited with the juror's shares (ModelShares), and
        # whatever else is pending (node/credits.py; the worker also withdraws each round, abstaining or not)
        withdraw_all_credits(self.protocol, self.account, logger)
