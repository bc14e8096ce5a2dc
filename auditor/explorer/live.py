"""The explorer's view of the chain, kept up to date block by block: the deployment's event index and one kept fold
per run.

`poll()` asks the RPC for its latest block (one request); only when it moved does it sync the index (the new final
blocks' logs in one range read, `protocol/adapters/event_index.py`) and fold the new events into each run's kept
`HistoryFolder`, so the work per new block does not grow with the runs' length, and an explorer left open costs the
RPC one request per poll while nothing happens. A reorg the index undoes (events dropped) folds every run again from
the index. Each change (a new block, a new loss) bumps `version`, which the server-sent event stream announces.

# INVARIANT: each run's folder holds exactly the run's fold over the index's events up to `next_block`; the views are
# built from it under `lock`, never from a half-applied block.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from protocol.adapters.chain import ChainClient
from protocol.adapters.event_index import EventIndex
from protocol.history.fold import HistoryFolder, list_runs
from protocol.history.records import RunHistory, RunSummary


@dataclass(frozen=True)
class Head:
    """The chain as last seen: its latest block, that block's time, and the index's next block to read."""

    block: int
    time: int
    next_block: int


class LiveRuns:
    """A deployment's runs as its events fold, followed with `poll()`; `on_change` is called after each change."""

    def __init__(self, index: EventIndex, labels: Mapping[str, str] | None, on_change: Callable[[], None]) -> None:
        self.index = index
        self.chain: ChainClient = index.chain
        self.labels = dict(labels or {})
        self.on_change = on_change
        self.lock = threading.Lock()
        self.folders: dict[int, HistoryFolder] = {}
        self.summaries: tuple[RunSummary, ...] = ()
        self.histories: dict[int, RunHistory] = {}
        self.head = Head(-1, 0, index.next_block)
        self.error: str | None = None

    def poll(self) -> bool:
        """Follow the chain one step: True when something new was folded (or the head moved)."""
        block = self.chain.block_number()
        if block == self.head.block:
            return False
        report = self.index.sync()
        time = int(self.chain.get_block(block)["timestamp"])
        with self.lock:
            if report.reorganised:  # a reorg (even one that orphaned no event): what stands is folded again
                self.folders.clear()
            start = self.head.next_block if self.folders else self.index.start_block
            new = self.index.events(from_block=start)
            times = self.index.timestamps(from_block=start)
            created = [e.args["runId"] for e in new if e.name == "RunCreated" and e.args["runId"] not in self.folders]
            for folder in self.folders.values():
                folder.add(new, times)
            if created:  # a new run folds everything before it too (its participants' earlier stake events)
                everything, all_times = self.index.events(), self.index.timestamps()
                for run_id in created:
                    self.folders[run_id] = HistoryFolder(run_id, self.labels)
                    self.folders[run_id].add(everything, all_times)
            listed = ("RunCreated", "RoundSettled", "RunFinished")
            if any(e.name in listed for e in new) or report.reorganised or not self.summaries:
                self.summaries = list_runs(self.index.events(names=listed))  # the run list changes only with these
            if new or created or report.reorganised:
                self.histories = {r: f.history() for r, f in self.folders.items()}  # kept folds: per block, not run
            self.head = Head(block, time, report.next_block)
            self.error = None
        self.on_change()
        return True

    def snapshot(self) -> tuple[Head, tuple[RunSummary, ...], dict[int, RunHistory]]:
        """The head, the runs and their frozen histories, as one consistent view."""
        with self.lock:
            return self.head, self.summaries, dict(self.histories)

    def status(self) -> dict[str, Any]:
        with self.lock:
            return {"block": self.head.block, "time": self.head.time, "error": self.error}
