"""What a node tells its operator about its own money: its log, `/metrics` and `/health`.

Every node (solver, verifier, whistleblower) holds a `MoneyWatch`. The node's loop calls `refresh()` after each
tick: on a new block it reads the run's new events, the seats the chain assigned to the node in rounds whose
attest window closed, and its pending credits when those events moved (protocol/adapters/run_events.py); it folds
the new events into its kept fold (`HistoryFolder`) and asks its `protocol.money_reporter.MoneyReporter` -- the pure
`compute_money_report`, computed again only where something changed -- what touched the node's money, logs each event
once (a slash or a missed window at WARNING, with its amount and reason), and keeps the report for `/metrics`
(`MoneyCollector`) and `/health` (`health_reasons`, `as_health`). A node restarted logs its history again: the
report is recomputed from the run's events (kept in the node's event index file), never stored. The work per new
block does not grow with the run's length (`bench/index.py` measures it at round 10 and round 1,000).

A verifier's fail on the node's commitment is enriched with the verifier's own reason when the verifier's API
says it (`GET /attestations/{id}`, best effort): "checkpoint ... does not hash to its name" tells an operator
far more than "sample 1 did not replay".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from node.disputes import JurorRegistryReader
from node.logs import log_event
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.http import PeerSet
from protocol.adapters.run_events import RunEventReader, read_assigned_seats, read_pending_credits
from protocol.errors import GradledgerError
from protocol.history.events import EventLike, to_hash_hex
from protocol.history.fold import HistoryFolder
from protocol.history.records import RunHistory
from protocol.jury import get_pool_index
from protocol.money_events import JurySeat, MoneyEvent, MoneyReport, Seat
from protocol.money_reporter import MoneyReporter

RECOMPUTE_S = 2.0
"""Without a new block the report is recomputed at most this often (a window can close while no block is mined)."""

WARNING_KINDS = frozenset({"missed", "failed", "slashed"})


class MoneyWatch:
    """The money events of one node's account in its run, kept current by `refresh()`."""

    def __init__(
        self,
        protocol: ProtocolClient,
        peers: PeerSet,
        run_id: int,
        address: str,
        log: logging.Logger,
        index_path: Path | str = ":memory:",
    ):
        self.protocol = protocol
        self.index_path = index_path  # the node's event index (`RunEventReader`): <node dir>/events.sqlite
        self.peers = peers
        self.run_id = run_id
        self.address = address
        self.log = log
        self.reader: RunEventReader | None = None
        self.folder = HistoryFolder(run_id)
        self.reporter = MoneyReporter(run_id, address)
        self.is_verifier = False
        self.next_seat_round = 0
        self.juries_pending: list[EventLike] = []
        self.seats: dict[int, list[Seat]] = {}
        self.registry: JurorRegistryReader | None = None
        self.jury_seats: list[JurySeat] = []
        self.juries_read: set[tuple[str, int]] = set()
        self.credits: dict[str, int] = {}
        self.logged: set[str] = set()
        self.reasons: dict[str, str] = {}
        self.last_error = ""
        self._block = -1
        self._credits_read = False
        self._computed_at = 0.0

    def refresh(self, created_block: int, now: int) -> None:
        """Read what is new on the chain and log the events not logged yet (errors are logged, never raised)."""
        try:
            self._refresh(created_block, now)
            self.last_error = ""
        except GradledgerError as exc:  # an RPC hiccup: the next tick retries
            self.last_error = str(exc)
        except Exception as exc:  # a bug here must never stop the node's work
            if str(exc) != self.last_error:
                self.log.error("money watch failed", exc_info=exc, extra={"fields": {"error": str(exc)}})
            self.last_error = str(exc)

    def _refresh(self, created_block: int, now: int) -> None:
        if self.reader is None:
            self.reader = RunEventReader(self.protocol, self.run_id, created_block, self.index_path)
        block = self.protocol.chain.block_number()
        fresh = block != self._block
        if not fresh and time.monotonic() - self._computed_at < RECOMPUTE_S:
            return
        new: list[EventLike] = []
        if fresh:
            update = self.reader.read_new()
            if update.reorganised:  # a reorg: what stands (all of it, in `new`) is folded and reported again
                self.folder.reset()
                self.reporter.reset()
                self.is_verifier, self.juries_pending, self.next_seat_round = False, [], 0
            # only what arrived is folded (issue 39: folding everything per block grew with the run)
            new = list(update.new)
            self.folder.add(new, self.reader.timestamps)
            if update.new or update.reorganised or not self._credits_read:
                # A credit moves only in a transaction that emits an event of the deployment (a bond finalized, a
                # dispute executed, shares minted, a withdrawal...): read again when the run's events moved (with
                # confirmations: once they are final), not on every block (issue 39: five calls a block, mostly for
                # nothing).
                self._note_credits(read_pending_credits(self.protocol, self.address))
                self._credits_read = True
            self._block = block
        history = self.folder.history()
        self.is_verifier = self.is_verifier or any(
            e.name == "VerifierRegistered"
            and e.args.get("runId") == self.run_id
            and e.args.get("verifier") == self.address
            for e in new
        )
        if self.is_verifier:
            self._read_seats(history, now)
        # Only what changed is computed again (protocol/money_reporter.py): a node's work per new block does not
        # grow with the run's length (issue 39: the report over the whole run was 32 ms a block at round 300).
        fresh_events = self.reporter.update(new, self.reader.timestamps, history, self.seats, self.jury_seats, now)
        if self._read_jury_seats(new):
            fresh_events += self.reporter.update([], self.reader.timestamps, history, self.seats, self.jury_seats, now)
        self.publish(fresh_events)

    def _note_credits(self, credits: dict[str, int]) -> None:
        """Keep the pending credits; log them whenever they change (a credit left unwithdrawn is money not taken)."""
        pending = {name: wei for name, wei in credits.items() if wei}
        if pending != {name: wei for name, wei in self.credits.items() if wei}:
            log_event(
                self.log, "money: credits pending", run=self.run_id, total_wei=sum(pending.values()),
                contracts=",".join(f"{name}={wei}" for name, wei in sorted(pending.items())) or "none",
            )  # fmt: skip
        self.credits = credits

    @property
    def report(self) -> MoneyReport:
        """Every money event of the account in the run so far (sorted when asked: /health, /metrics)."""
        return self.reporter.report()

    def publish(self, events: Iterable[MoneyEvent]) -> None:
        """Log each of `events` (those computed again) not logged yet, once."""
        self._computed_at = time.monotonic()
        for event in events:
            if event.key not in self.logged:
                self.logged.add(event.key)
                self._log(event)

    def _read_seats(self, history: RunHistory, now: int) -> None:
        """Read the seats of the rounds whose attest window closed, once per round (the chain never changes them);
        rounds before `next_seat_round` are read (or settled without a seed) and not looked at again."""
        terms = history.terms
        for rnd in history.rounds[self.next_seat_round :]:
            if rnd.index not in self.seats and rnd.seed is not None:
                if now < rnd.start_time + terms.commit_window + terms.attest_window:
                    continue
                solvers = [c.solver for c in rnd.commitments]
                self.seats[rnd.index] = read_assigned_seats(
                    self.protocol, self.run_id, rnd.index, solvers, self.address
                )
            if rnd.index == self.next_seat_round and (rnd.index in self.seats or rnd.settled):
                self.next_seat_round += 1

    def _read_jury_seats(self, new: Iterable[EventLike]) -> bool:
        """This account's seats on the juries drawn for the run's disputes, each jury read once: the pool rebuilt
        from JuryDrawn (seed, registry snapshot block, pool size, eligible bitmap) as `drawJury` checked it. A jury
        of a dispute not known as the run's yet waits (`juries_pending`); whether any seat was found."""
        self.juries_pending += [e for e in new if e.name == "JuryDrawn"]
        ours = self.reporter.dispute_rounds
        found, waiting = False, []
        for e in self.juries_pending:
            dispute_id, appeals = to_hash_hex(e.args["disputeId"]), int(e.args["appeals"])
            if dispute_id not in ours:
                waiting.append(e)  # another run's dispute, or one this run's fold has not reached
                continue
            if (dispute_id, appeals) in self.juries_read:
                continue
            if self.registry is None:
                self.registry = JurorRegistryReader(self.protocol.chain)
            snapshot = self.registry.read(int(e.args["snapshotBlock"]))
            pool_size, eligible, seed = int(e.args["poolSize"]), int(e.args["eligible"]), bytes(e.args["seed"])
            for seat in range(min(len(snapshot), pool_size)):
                entry = snapshot[get_pool_index(seed, seat, pool_size, len(snapshot))]
                if eligible >> seat & 1 and entry.account.lower() == self.address.lower():
                    self.jury_seats.append(JurySeat(dispute_id, appeals, seat))
                    found = True
            self.juries_read.add((dispute_id, appeals))
        self.juries_pending = waiting
        return found

    def _log(self, event: MoneyEvent) -> None:
        if event.kind == "failed" and event.by:
            event = self._with_verifier_reason(event)
        level = logging.WARNING if event.kind in WARNING_KINDS else logging.INFO
        fields = event.as_fields()
        fields.pop("kind")
        log_event(self.log, f"money: {event.kind}", level=level, run=self.run_id, **fields)

    def _with_verifier_reason(self, event: MoneyEvent) -> MoneyEvent:
        """The failing verifier's own reason, asked from its API (best effort: a peer may be down or unknown)."""
        slot = event.key.rsplit(":", 1)[-1]
        ident = f"{self.run_id}:{event.round}:{self.address.lower()}:{slot}"
        try:
            url = self.peers.url_of(event.by)
            record = self.peers.get_json(url, f"/attestations/{ident}") if url else {}
        except GradledgerError:
            record = {}
        said = str(record.get("reason", "")) if isinstance(record, dict) else ""
        if said:
            self.reasons[event.key] = said
            return replace(event, reason=f"{event.reason}; the verifier says: {said}")
        return event

    # -- what /health and /metrics show ---------------------------------------------------------------------

    def health_reasons(self) -> list[str]:
        return self.report.health_reasons

    def as_health(self) -> dict:
        """The money part of `/health`: totals, the slashes and failures with their reasons, credits pending."""
        report = self.report

        def listed(kind: str) -> list[dict]:
            out = []
            for e in report.of_kind(kind):  # type: ignore[arg-type]
                fields = e.as_fields()
                if e.key in self.reasons:
                    fields["verifier_reason"] = self.reasons[e.key]
                out.append(fields)
            return out

        return {
            "committed": len([e for e in report.of_kind("committed") if e.what == "commitment"]),
            "attested": len([e for e in report.of_kind("committed") if e.what == "attestation"]),
            "missed": listed("missed"),
            "failed": listed("failed"),
            "slashed": listed("slashed"),
            "slashed_wei": report.slashed_wei,
            "paid_wei": sum(e.amount_wei for e in report.of_kind("paid")),
            "shares_minted": sum(e.shares for e in report.of_kind("paid")),
            "credits_pending_wei": dict(self.credits),
            "watch_error": self.last_error,
        }


class MoneyCollector(Collector):
    """Prometheus view of a `MoneyWatch`: counts and sums per kind, and one labelled sample per slash and miss."""

    def __init__(self, watch: MoneyWatch) -> None:
        self.watch = watch

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        report, credits = self.watch.report, dict(self.watch.credits)
        counts = CounterMetricFamily(
            "gradledger_money_events", "money events of this node's account in its run, by kind", labels=["kind"]
        )
        for kind in ("committed", "missed", "failed", "slashed", "paid"):
            counts.add_metric([kind], len(report.of_kind(kind)))
        yield counts
        slashed = GaugeMetricFamily(
            "gradledger_slashed_wei",
            "stake slashed from this node's account, one sample per slash (round, fault, slashing event, reason)",
            labels=["round", "fault", "by", "reason"],
        )
        for e in report.of_kind("slashed"):
            slashed.add_metric([str(e.round), e.what, e.by, e.reason], e.amount_wei)
        yield slashed
        missed = GaugeMetricFamily(
            "gradledger_missed_window",
            "windows this node was due in and missed (1 while it still makes /health unhealthy, else 0)",
            labels=["round", "window", "reason"],
        )
        current = {e.key for e in report.current_misses}
        for e in report.of_kind("missed"):
            missed.add_metric([str(e.round), e.what, e.reason], 1 if e.key in current else 0)
        yield missed
        failed = GaugeMetricFamily(
            "gradledger_failed", "fail attestations on this node's commitments, overturned attestations of its own",
            labels=["round", "what", "verifier", "reason"],
        )  # fmt: skip
        for e in report.of_kind("failed"):
            failed.add_metric([str(e.round), e.what, e.by, self.watch.reasons.get(e.key, e.reason)], 1)
        yield failed
        paid = CounterMetricFamily(
            "gradledger_paid_wei", "ETH paid or credited to this node's account, by what", labels=["what"]
        )
        shares = CounterMetricFamily("gradledger_shares_minted", "run shares minted to this node's account", labels=[])
        totals: dict[str, int] = {}
        for e in report.of_kind("paid"):
            totals[e.what] = totals.get(e.what, 0) + e.amount_wei
        for what, amount in sorted(totals.items()):
            paid.add_metric([what], amount)
        shares.add_metric([], sum(e.shares for e in report.of_kind("paid")))
        yield paid
        yield shares
        pending = GaugeMetricFamily(
            "gradledger_credits_pending_wei",
            "withdrawable credits not withdrawn yet, per contract",
            labels=["contract"],
        )
        for contract, wei in sorted(credits.items()):
            pending.add_metric([contract], wei)
        yield pending
        unhealthy = GaugeMetricFamily(
            "gradledger_money_unhealthy", "1 while a missed window makes /health unhealthy", value=int(bool(current))
        )
        yield unhealthy
