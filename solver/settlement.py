"""A solver's rounds after their commitments: finalize, claim θ_(r+1), settle, take its shares and bonds out, leave.

What the coordinator does once a round's challenge window is over (finalize the attested seats, post the claim of
θ_(r+1), settle), and what every solver does with a settled round (mint its shares and withdraw the release, withdraw
a claim bond it posted) and with a finished run (leave it). The decisions are solver/decide.py's; this module reads
what they need (`unfinalized`, `unclaimed_rounds`, `unwithdrawn_claim_bonds`) and sends the transactions.

Every action is idempotent across restarts and races: a revert that means "done already, by this node or another"
(WrongState, ClaimExists, WrongRound, AlreadyMinted, BondAlreadyPaid, NotJoined) is the outcome it wanted, and what
it did is recorded in the node state before the next decision reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from eth_account.signers.local import LocalAccount

from node.credits import CreditWithdrawer
from node.logs import log_event
from node.theta import compute_next_theta
from protocol.adapters.artifacts import ArtifactStore, put_state
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.http import PeerSet
from protocol.adapters.nodestate import NodeState
from protocol.adapters.runs import RunContext
from protocol.hashing import hash_to_hex
from protocol.state import compute_state_hash
from protocol.training import State
from protocol.types import AttestationRef, AttestationState, ClaimStatus
from solver.decide import RoundRecord

ChooseClaimState = Callable[[State, int], State]
"""The node's `choose_claim_state` hook: the θ_(r+1) a coordinator posts (an adversary overrides it)."""


class Settlement:
    """One solver's settling actions in one run, and the reads its view needs for them."""

    def __init__(
        self,
        protocol: ProtocolClient,
        account: LocalAccount,
        state: NodeState,
        credits: CreditWithdrawer,
        log: logging.Logger,
        run_id: int,
    ) -> None:
        self.protocol, self.account, self.state, self.credits, self.log = protocol, account, state, credits, log
        self.run_id = run_id
        self.address: str = account.address

    # -- reads for the view ----------------------------------------------------------------

    def unfinalized(self, ctx: RunContext, round_index: int) -> list[AttestationRef]:
        """The seats of the round's commitments that are attested and not yet finalized."""
        refs, seats = [], self.protocol.seat_count(ctx.run_id, round_index)
        for solver in self.protocol.get_commitments(ctx.run_id, round_index, ctx.created_block):
            for slot in range(seats):
                ref = AttestationRef(ctx.run_id, round_index, solver, slot)
                if self.protocol.attestation_of(ref).state == AttestationState.ATTESTED:
                    refs.append(ref)
        return refs

    def unwithdrawn_claim_bonds(self, current: int) -> tuple[int, ...]:
        """Settled rounds whose claim this node posted and whose bond it has not withdrawn."""
        out = []
        for r in range(current):
            if self.state.get("claim_bond", f"{self.run_id}:{r}") is not None:
                continue
            claim = self.protocol.claim_of(self.run_id, r)
            if (
                claim.claimer.lower() == self.address.lower()
                and claim.status == ClaimStatus.SETTLED
                and not claim.bond_paid
            ):
                out.append(r)
            else:
                self.state.put("claim_bond", f"{self.run_id}:{r}", {"done": True})
        return tuple(out)

    def unclaimed_rounds(self, current: int) -> tuple[int, ...]:
        """Settled rounds before `current` this solver committed to and has not taken its shares of."""
        out = []
        for key, raw in self.state.list("round"):
            record = RoundRecord.from_json(raw)
            if record.run_id != self.run_id or record.status != "committed" or record.round >= current:
                continue
            if self.state.get("shares", key) is None and self.protocol.is_settled(record.run_id, record.round):
                out.append(record.round)
        return tuple(sorted(out))

    # -- actions ---------------------------------------------------------------------------

    def finalize(self, ctx: RunContext, round_index: int) -> None:
        for ref in self.unfinalized(ctx, round_index):
            try:
                self.protocol.finalize(self.account, ref)
            except ContractRevertError as exc:
                if exc.error != "WrongState":  # someone (e.g. the verifier) finalized it first
                    raise

    def post_claim(
        self,
        ctx: RunContext,
        round_index: int,
        store: ArtifactStore,
        peers: PeerSet,
        choose_claim_state: ChooseClaimState,
    ) -> None:
        """Post θ_(r+1), the outer step over the round's accepted Δs as `choose_claim_state` leaves it, with its
        bond; stored first, under the hash the claim names."""
        r = round_index
        next_state, _, accepted = compute_next_theta(self.protocol, store, peers, ctx, r)
        next_state = choose_claim_state(next_state, r)
        next_hash = put_state(store, next_state)
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

    def settle(self, round_index: int) -> None:
        try:
            self.protocol.settle(self.account, self.run_id, round_index)
        except ContractRevertError as exc:
            if exc.error != "WrongRound":  # settled by someone else meanwhile
                raise
            return
        log_event(self.log, "settled", run=self.run_id, round=round_index)

    def claim_shares(self, round_index: int) -> None:
        """Mint this solver's shares of a settled round when its commitment is paid, and withdraw the release."""
        run, r = self.run_id, round_index
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

    def withdraw_claim_bond(self, round_index: int) -> None:
        try:
            self.protocol.withdraw_claim_bond(self.account, self.run_id, round_index)
        except ContractRevertError as exc:
            if exc.error != "BondAlreadyPaid":
                raise
        self.state.put("claim_bond", f"{self.run_id}:{round_index}", {"done": True})
        log_event(self.log, "claim bond withdrawn", run=self.run_id, round=round_index)

    def leave_run(self) -> None:
        try:
            self.protocol.leave_run(self.account, self.run_id)
        except ContractRevertError as exc:
            if exc.error != "NotJoined":  # left already (a restart after leaving)
                raise
        log_event(self.log, "left the run: its stake reservation is released", run=self.run_id)
