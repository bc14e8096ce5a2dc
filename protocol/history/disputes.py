"""The disputes of a run's history: challenges, juries, verdicts and juror rewards.

`DisputeEventsFold` holds the handlers for the Disputes contract's events and for the challenges
that open a dispute (an attestation or a θ claim challenged), and the state they build: every
dispute of the run by id, from open to executed or expired, with its verdict, payouts and the
juror rewards claimed. It is mixed into `protocol.history._Fold`, which dispatches events by name
(`on_<EventName>`) and provides the rounds, attestations, share claims and participant
bookkeeping used here. Pure, like the rest of the fold: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from protocol.history.events import EventLike, get_tx_hash, to_address, to_hash_hex
from protocol.history.records import Attestation, Dispute, JurorReward, ShareClaim


class DisputeEventsFold:
    """Challenge, jury, verdict and juror-reward handlers of the fold (mixed into `protocol.history._Fold`)."""

    # Provided by the fold this is mixed into.
    claims: list[ShareClaim]
    time: Callable[[int], int | None]
    role: Callable[[str, str], None]
    ours: Callable[[Mapping[str, Any]], bool]
    round: Callable[[int], Any]
    set_attestation: Callable[..., Attestation]

    def init_disputes(self) -> None:
        """The state these handlers build, empty."""
        self.disputes: dict[str, Dispute] = {}

    def on_AttestationChallenged(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if not self.ours(a):
            return
        dispute_id, index = to_hash_hex(a["disputeId"]), int(a["round"])
        challenger = to_address(a["challenger"])
        self.disputes[dispute_id] = Dispute(
            dispute_id,
            "attestation",
            index,
            challenger,
            e.block_number,
            self.time(e.block_number),
            "open",
            solver=to_address(a["solver"]),
            slot=int(a["slot"]),
        )
        self.round(index).disputes.append(dispute_id)
        self.set_attestation(index, to_address(a["solver"]), int(a["slot"]), state="challenged")
        self.role(challenger, "challenger")

    def on_ClaimChallenged(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if not self.ours(a):
            return
        dispute_id, index, nonce = to_hash_hex(a["disputeId"]), int(a["round"]), int(a["claimNonce"])
        challenger = to_address(a["challenger"])
        self.disputes[dispute_id] = Dispute(
            dispute_id,
            "claim",
            index,
            challenger,
            e.block_number,
            self.time(e.block_number),
            "open",
            claim_nonce=nonce,
            claimer=to_address(a["claimer"]),
        )
        rnd = self.round(index)
        rnd.disputes.append(dispute_id)
        if nonce in rnd.claims:
            rnd.claims[nonce] = replace(rnd.claims[nonce], status="challenged")
        self.role(challenger, "challenger")

    def _dispute(self, a: Mapping[str, Any]) -> str | None:
        dispute_id = to_hash_hex(a["disputeId"])
        return dispute_id if dispute_id in self.disputes else None

    def on_JuryDrawn(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if (d := self._dispute(a)) is not None:
            self.disputes[d] = replace(self.disputes[d], status="jury drawn", jury_size=int(a["jurySize"]))

    def on_VerdictSubmitted(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if (d := self._dispute(a)) is not None:
            self.disputes[d] = replace(
                self.disputes[d],
                status="decided",
                challenger_wins=bool(a["challengerWins"]),
                signer_count=int(a["signerCount"]),
            )

    def on_DisputeExecuted(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if (d := self._dispute(a)) is not None:
            winner = to_address(a["winner"])
            self.disputes[d] = replace(
                self.disputes[d],
                status="executed",
                challenger_wins=bool(a["challengerWins"]),
                winner=winner,
                total=int(a["total"]),
                to_winner=int(a["toWinner"]),
                bond_returned=int(a["bondReturned"]),
                reward_per_juror=int(a["rewardPerJuror"]),
                signer_count=int(a["signerCount"]),
                to_pool=int(a["toPool"]),
                ended_block=e.block_number,
            )

    def on_DisputeExpired(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if (d := self._dispute(a)) is not None:
            self.disputes[d] = replace(
                self.disputes[d], status="expired", bond_returned=int(a["bondReturned"]), ended_block=e.block_number
            )

    def on_JurorRewardClaimed(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if (d := self._dispute(a)) is None:
            return
        juror, seat = to_address(a["juror"]), int(a["seat"])
        dispute = self.disputes[d]
        reward = JurorReward(juror, seat, int(a["reward"]), int(a["shares"]), e.block_number)
        self.disputes[d] = replace(dispute, juror_rewards=(*dispute.juror_rewards, reward))
        self.claims.append(
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
        self.role(juror, "juror")
