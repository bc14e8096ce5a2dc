"""A node's durable state in SQLite: typed records by kind and key, and event cursors.

Why SQLite with synchronous=FULL and WAL: a node can be SIGKILLed at any instant and must
restart knowing exactly what it already did (which round it committed, which attestation it
sent). Every write is one transaction; a record is either fully there or not at all.

Roles store their own frozen dataclasses as JSON under a kind ("round", "attestation",
"challenge", ...); this module knows nothing about them, so one small adapter serves every role.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from protocol.errors import GradledgerError

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS records (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
    " updated INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (kind, key))",
    "CREATE TABLE IF NOT EXISTS cursors (name TEXT PRIMARY KEY, block INTEGER NOT NULL)",
)


class NodeStateError(GradledgerError):
    """The node's state database cannot be opened or is corrupt."""


class NodeState:
    """Records (kind, key) -> JSON value, and named block cursors, in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            for statement in _SCHEMA:
                self._db.execute(statement)
        except sqlite3.DatabaseError as exc:
            raise NodeStateError(
                f"cannot open node state {self.path}: {exc}; move the file away to start fresh"
            ) from exc
        self._lock = threading.Lock()
        self._counter = self._db.execute("SELECT COALESCE(MAX(updated), 0) FROM records").fetchone()[0]

    def put(self, kind: str, key: str, value: dict[str, Any], *, counts: bool = True) -> None:
        """Insert or replace one record atomically; writing the value a record already holds is a no-op.

        `counts=False`: bookkeeping no decision reads (a read cursor's progress: protocol/adapters/finality.py
        `DurableReadCursor`): written as durably, but `changes` does not grow, so a tick that only moved a cursor past
        blocks without events is still idle (node/bootstrap.py) and is not run again at the same head (issue 39: every
        new block cost a verifier and a whistleblower a second, identical tick and a look at every credit)."""
        text = json.dumps(value, sort_keys=True)
        with self._lock:
            row = self._db.execute("SELECT value FROM records WHERE kind = ? AND key = ?", (kind, key)).fetchone()
            if row is not None and row[0] == text:
                return
            self._counter += 1 if counts else 0
            self._db.execute(
                "INSERT OR REPLACE INTO records (kind, key, value, updated) VALUES (?, ?, ?, ?)",
                (kind, key, text, self._counter),
            )

    @property
    def changes(self) -> int:
        """A number that grows with every record that changed (a node that wrote nothing did no work)."""
        with self._lock:
            return self._counter

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM records WHERE kind = ? AND key = ?", (kind, key)).fetchone()
        return json.loads(row[0]) if row else None

    def list(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        """All records of a kind, oldest write first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT key, value FROM records WHERE kind = ? ORDER BY updated", (kind,)
            ).fetchall()
        return [(key, json.loads(value)) for key, value in rows]

    def get_cursor(self, name: str, default: int) -> int:
        with self._lock:
            row = self._db.execute("SELECT block FROM cursors WHERE name = ?", (name,)).fetchone()
        return row[0] if row else default

    def set_cursor(self, name: str, block: int) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO cursors (name, block) VALUES (?, ?)", (name, block))

    def close(self) -> None:
        with self._lock:
            self._db.close()
