"""The disputes of a run's history: challenges, juries, verdicts and juror rewards.

Handlers for the Disputes contract's events and for the challenges that open a dispute (an
attestation, a θ claim or a planted commitment challenged): every dispute of the run by id, from
open to executed or expired, with its verdict, payouts and the juror rewards claimed. A plant
dispute changes no seat: its outcome is Plants' PlantDisproven (`protocol.history.plants`) and the
solver's slash, or nothing. Each is a plain function `handler(state, event, args)` over
`protocol.history.state.FoldState`; `HANDLERS` maps event names to them for
`protocol.history.fold`. Dispute events carry no runId: they belong to the run through the
dispute ids its challenges opened. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from protocol.history.events import EventLike, get_tx_hash, to_address, to_hash_hex
from protocol.history.records import Dispute, DisputeKind, JurorReward, ShareClaim
from protocol.history.state import FoldState, Handler


def _open_dispute(s: FoldState, e: EventLike, a: Mapping[str, Any], kind: DisputeKind, **fields: Any) -> int:
    """Record a challenge's new dispute (status "open") in its round and the challenger's role; return the round."""
    dispute_id, index = to_hash_hex(a["disputeId"]), int(a["round"])
    challenger = to_address(a["challenger"])
    s.disputes[dispute_id] = Dispute(
        dispute_id, kind, index, challenger, e.block_number, s.time(e.block_number), "open", **fields
    )
    s.round(index).disputes.append(dispute_id)
    s.role(challenger, "challenger")
    return index


def on_attestation_challenged(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if not s.ours(a):
        return
    solver, slot = to_address(a["solver"]), int(a["slot"])
    index = _open_dispute(s, e, a, "attestation", solver=solver, slot=slot)
    s.set_attestation(index, solver, slot, state="challenged")


def on_plant_challenged(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    """Disputes.challengePlant: a commitment revealed as planted disputed over one segment (KIND_PLANT)."""
    if s.ours(a):
        _open_dispute(s, e, a, "plant", solver=to_address(a["solver"]), segment_index=int(a["segmentIndex"]))


def on_claim_challenged(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if not s.ours(a):
        return
    nonce = int(a["claimNonce"])
    index = _open_dispute(s, e, a, "claim", claim_nonce=nonce, claimer=to_address(a["claimer"]))
    rnd = s.round(index)
    if nonce in rnd.claims:
        rnd.claims[nonce] = replace(rnd.claims[nonce], status="challenged")


def _ours(s: FoldState, a: Mapping[str, Any]) -> str | None:
    """The event's dispute id when the dispute is this run's, else None."""
    dispute_id = to_hash_hex(a["disputeId"])
    return dispute_id if dispute_id in s.disputes else None


def on_jury_drawn(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if (d := _ours(s, a)) is not None:
        s.disputes[d] = replace(
            s.disputes[d], status="jury drawn", jury_size=int(a["seats"]), appeals=int(a["appeals"])
        )


def on_dispute_appealed(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if (d := _ours(s, a)) is not None:
        s.disputes[d] = replace(s.disputes[d], status="open", jury_size=None, appeals=int(a["appeals"]))


def on_verdict_submitted(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if (d := _ours(s, a)) is not None:
        s.disputes[d] = replace(
            s.disputes[d],
            status="decided",
            challenger_wins=bool(a["challengerWins"]),
            signer_count=int(a["signerCount"]),
        )


def on_dispute_executed(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if (d := _ours(s, a)) is not None:
        s.disputes[d] = replace(
            s.disputes[d],
            status="executed",
            challenger_wins=bool(a["challengerWins"]),
            winner=to_address(a["winner"]),
            total=int(a["total"]),
            to_winner=int(a["toWinner"]),
            bond_returned=int(a["bondReturned"]),
            reward_per_juror=int(a["rewardPerJuror"]),
            signer_count=int(a["signerCount"]),
            to_pool=int(a["toPool"]),
            ended_block=e.block_number,
        )


def on_dispute_expired(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if (d := _ours(s, a)) is not None:
        s.disputes[d] = replace(
            s.disputes[d],
            status="expired",
            bond_returned=int(a["bondReturned"]),
            to_pool=int(a["fee"]),
            ended_block=e.block_number,
        )


def on_juror_reward_claimed(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if (d := _ours(s, a)) is None:
        return
    juror, seat = to_address(a["juror"]), int(a["seat"])
    dispute = s.disputes[d]
    reward = JurorReward(juror, seat, int(a["reward"]), int(a["shares"]), e.block_number)
    s.disputes[d] = replace(dispute, juror_rewards=(*dispute.juror_rewards, reward))
    s.claims.append(
        ShareClaim(
            dispute.round,
            "juror",
            juror,
            int(a["shares"]),
            f"verdict {d[:10]} seat {seat}",
            e.block_number,
            get_tx_hash(e),
            dispute_id=d,
            seat=seat,
        )
    )
    s.role(juror, "juror")


HANDLERS: dict[str, Handler] = {
    "AttestationChallenged": on_attestation_challenged,
    "ClaimChallenged": on_claim_challenged,
    "PlantChallenged": on_plant_challenged,
    "JuryDrawn": on_jury_drawn,
    "DisputeAppealed": on_dispute_appealed,
    "VerdictSubmitted": on_verdict_submitted,
    "DisputeExecuted": on_dispute_executed,
    "DisputeExpired": on_dispute_expired,
    "JurorRewardClaimed": on_juror_reward_claimed,
}
