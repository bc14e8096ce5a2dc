"""One incremental, reorg-safe index of a deployment's events in SQLite, for every reader of a run's history.

Before it, each reader (a node's money watch, `run status --watch`, the audit) read the chain's events from the
deployment block on every time, so the work per new block grew with the run's length. `EventIndex.sync()` reads only
the blocks it has not indexed (`protocol.adapters.finality.read_final_span`: final blocks, reorg-checked), stores
their events with their blocks' timestamps in one transaction, and answers `events()` / `timestamps()` from the file.

# INVARIANT: the file holds exactly the events of blocks [start, next_block) of the canonical chain as of the last
# sync: a reorg found by `find_fork` deletes every event above the fork point in the same transaction that rewinds the
# progress, and a sync killed half-way leaves the last committed state (SQLite transactions; WAL lets readers in
# other processes read while a node writes).

Each run's share token is a contract of its own whose address the `RunCreated` event names: the index registers it
as soon as it stores that event, and reads the token's events of the same span again, so a mint in the creation
block is not missed. The file is bound to one deployment (chain id, deployment block and its hash, ABIs): opened for
another, it is emptied and rebuilt rather than mixing two chains. Args are stored as JSON with bytes tagged, and come
back as the same Python values (`ChainEvent.args`), so a fold over indexed events equals a fold over read ones.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.adapters.chain import ChainClient
from protocol.adapters.finality import find_fork, read_final_span
from protocol.finality import ReadProgress, rewind
from protocol.history.events import ChainEvent, share_token_contract

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    block INTEGER NOT NULL, log_index INTEGER NOT NULL, contract TEXT NOT NULL, name TEXT NOT NULL,
    run_id INTEGER, tx TEXT NOT NULL, args TEXT NOT NULL, PRIMARY KEY (block, log_index)
);
CREATE INDEX IF NOT EXISTS events_by_run ON events (run_id, block, log_index);
CREATE TABLE IF NOT EXISTS block_times (block INTEGER PRIMARY KEY, time INTEGER NOT NULL);
"""


def encode_args(value: Any) -> Any:
    """Event args as JSON-able values: bytes tagged {"$bytes": hex}, mappings and sequences recursively."""
    if isinstance(value, bytes | bytearray):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, Mapping):
        return {str(k): encode_args(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode_args(v) for v in value]
    return value


def decode_args(value: Any) -> Any:
    """The inverse of `encode_args` (sequences come back as lists, mappings as dicts, bytes as bytes)."""
    if isinstance(value, dict):
        if value.keys() == {"$bytes"}:
            return bytes.fromhex(value["$bytes"])
        return {k: decode_args(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_args(v) for v in value]
    return value


def _row(e: ChainEvent) -> tuple:
    """The `events` row of an event: where it is, what it is, its run, and its args as JSON."""
    args = json.dumps(encode_args(e.args), separators=(",", ":"))
    return (e.block_number, e.log_index, e.contract, e.name, _run_of(e), e.transaction_hash, args)


def _run_of(event: ChainEvent) -> int | None:
    """The run an event belongs to: its `runId`, or the run whose share token emitted it; None for neither."""
    run = event.args.get("runId")
    if isinstance(run, int) and not isinstance(run, bool):
        return run
    if event.contract.startswith("RunShares#"):
        return int(event.contract.split("#", 1)[1])
    return None


@dataclass(frozen=True)
class SyncReport:
    """What one `sync()` did: events stored, events deleted by a reorg, the next block to index, and whether a reorg
    rewound the index (it may have deleted no event: a reader that takes the blocks after those it has must then take
    everything again, since blocks below what it had were read anew)."""

    new: int
    dropped: int
    next_block: int
    reorganised: bool = False


class EventStore:
    """The SQLite file of an index: events, their blocks' timestamps and the read progress, bound to one deployment
    (`identity`: opened for another, it is emptied). Storage only; `EventIndex` decides what to store."""

    def __init__(self, path: Path | str, identity: str, start_block: int) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()
        self.start_block = start_block
        with self.lock:
            self.db.execute("PRAGMA journal_mode=WAL")
            # a commit per synced block without an fsync each: WAL stays consistent, and what a power cut loses the
            # next sync reads again from the chain (the index is a cache of the chain, never the only copy)
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            if self._meta("identity") != identity:  # another deployment's (or a new) file: start it over
                self.db.execute("BEGIN")
                for table in ("meta", "events", "block_times"):
                    self.db.execute(f"DELETE FROM {table}")  # fixed table names, no input
                self._set_meta("identity", identity)
                self._set_meta("progress", json.dumps(ReadProgress.starting_at(start_block).to_json()))
                self.db.execute("COMMIT")
            self.progress = ReadProgress.from_json(json.loads(self._meta("progress") or "{}"))

    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def store(
        self, new: list[ChainEvent], times: Mapping[int, int], progress: ReadProgress, orphaned_above: int | None = None
    ) -> int:
        """In one transaction: delete what lies above `orphaned_above` (a reorg's fork point), add `new` with its
        blocks' `times`, and record `progress`; returns the number of events deleted."""
        dropped = 0
        with self.lock:
            self.db.execute("BEGIN")
            if orphaned_above is not None:
                dropped = self.db.execute("DELETE FROM events WHERE block > ?", (orphaned_above,)).rowcount
                self.db.execute("DELETE FROM block_times WHERE block > ?", (orphaned_above,))
            rows = [_row(e) for e in new]
            self.db.executemany("INSERT OR REPLACE INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            self.db.executemany("INSERT OR REPLACE INTO block_times VALUES (?, ?)", sorted(times.items()))
            self._set_meta("progress", json.dumps(progress.to_json()))
            self.db.execute("COMMIT")
        self.progress = progress
        return dropped

    def created_tokens(self) -> list[tuple[int, str]]:
        """(run id, share token address) of every stored RunCreated."""
        with self.lock:
            rows = self.db.execute("SELECT run_id, args FROM events WHERE name = 'RunCreated'").fetchall()
        return [(int(run), decode_args(json.loads(args))["shareToken"]) for run, args in rows]

    def events(
        self, run_id: int | None = None, names: Iterable[str] | None = None, from_block: int = 0
    ) -> list[ChainEvent]:
        """Stored events in chain order: all, or those of `run_id` (its runId, or its share token's), of `names`,
        from `from_block` on (a reader that keeps what it read asks only for the blocks after it)."""
        query = "SELECT block, log_index, contract, name, tx, args FROM events WHERE block >= ?"
        params: list[int | str] = [from_block]
        if run_id is not None:
            query += " AND run_id = ?"
            params.append(run_id)
        wanted = None if names is None else list(names)
        if wanted is not None:
            query += f" AND name IN ({','.join('?' * len(wanted))})"
            params += wanted
        with self.lock:
            rows = self.db.execute(query + " ORDER BY block, log_index", params).fetchall()
        return [
            ChainEvent(contract, name, decode_args(json.loads(args)), block, log_index, tx)
            for block, log_index, contract, name, tx, args in rows
        ]

    def timestamps(self, from_block: int = 0) -> dict[int, int]:
        """Block -> timestamp of every stored block that holds an event."""
        with self.lock:
            rows = self.db.execute("SELECT block, time FROM block_times WHERE block >= ?", (from_block,)).fetchall()
        return dict(rows)

    def close(self) -> None:
        self.db.close()


class EventIndex:
    """The events of `chain`'s deployment, kept in the `EventStore` at `path` (":memory:": process-local)."""

    def __init__(self, path: Path | str, chain: ChainClient) -> None:
        self.chain = chain
        manifest = chain.deployment
        identity = json.dumps(
            [manifest.chain_id, manifest.deployed_block, manifest.deployed_block_hash, manifest.abis_hash]
        )
        self.store = EventStore(path, identity, manifest.deployed_block)
        self.start_block = manifest.deployed_block
        for run_id, token in self.store.created_tokens():
            self._register_token(run_id, token)

    def _register_token(self, run_id: int, token: str) -> str | None:
        """Register run `run_id`'s share token with the chain client so its events decode; its name if new."""
        name = share_token_contract(run_id)
        if self.chain.has_contract(name):
            return None
        self.chain.add_contract(name, token, self.chain.deployment.contracts["RunShares"].abi)
        return name

    @property
    def next_block(self) -> int:
        return self.store.progress.next_block

    def sync(self) -> SyncReport:
        """Index the final blocks not indexed yet (after undoing what a reorg orphaned); one SQLite transaction."""
        progress = self.store.progress
        reorganised, fork = find_fork(self.chain, progress)
        floor = None
        if reorganised:
            progress = rewind(progress, fork)
            floor = fork if fork is not None else self.start_block - 1
        names = self.chain.contract_names()
        contracts = [n for n in names if n in self.chain.deployment.contracts or n.startswith("RunShares#")]
        read = read_final_span(self.chain, progress, None, contracts)
        new: list[ChainEvent] = []
        if read is not None:
            start, (progress, new) = progress.next_block, read
            new = self._with_new_tokens(new, start, progress.next_block - 1)
        if read is None and not reorganised:
            return SyncReport(0, 0, progress.next_block)  # nothing new final, no reorg: nothing written
        times = self.chain.get_block_timestamps({e.block_number for e in new}) if new else {}
        dropped = self.store.store(new, times, progress, floor)
        return SyncReport(len(new), dropped, progress.next_block, reorganised)

    def _with_new_tokens(self, events: list[ChainEvent], start: int, end: int) -> list[ChainEvent]:
        """`events` plus those of share tokens created in [start, end], which were not registered while it was read."""
        names = [
            name
            for e in events
            if e.name == "RunCreated" and (name := self._register_token(e.args["runId"], e.args["shareToken"]))
        ]
        if not names:
            return events
        extra = self.chain.get_events(start, end, contracts=names)
        return sorted([*events, *extra], key=lambda e: (e.block_number, e.log_index))

    def events(
        self, run_id: int | None = None, names: Iterable[str] | None = None, from_block: int = 0
    ) -> list[ChainEvent]:
        return self.store.events(run_id, names, from_block)

    def timestamps(self, from_block: int = 0) -> dict[int, int]:
        return self.store.timestamps(from_block)
