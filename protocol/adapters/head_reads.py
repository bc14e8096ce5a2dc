"""Reads at the chain's head answered once per head: a node's tick asks the same questions every half second.

A node ticks every 0.5 s and each tick reads the run's times, the seed, its records and its credits; between two
blocks none of that can change, yet each read was an `eth_call` (issue 39, "a chatty chain client"). `HeadReads`
remembers the head block the client last read (number and hash) and answers a read "at latest" again from what was
read at that same head; a live `eth_blockNumber` that shows another number drops it at once.

# INVARIANT: a cached answer is never older than the head it was read at, and the head is never older than
`max_age_s` (then the next read asks the chain for the head again); the client forgets the head and every answer as
soon as it sends a transaction, asks a devnet to mine or move time, or sees a reorg, so a node always reads its own
writes. Reads with an explicit block are not cached here.

Only a node's tick loop uses it (`RunNode.run` wraps each tick in `scope()`), in its own thread: a node is the one
that polls, and the tick starts with a live read of the head; inside the scope `ChainClient.block_number()` answers
that head too. Everything else -- the node's HTTP API threads, a tick
a test calls directly, one-shot commands, the audit -- reads live, where a write through another client (another
process, `cast`, a test driving the chain) must show in the very next read.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

HEAD_MAX_AGE_S = 1.0
"""How long a head seen is trusted before the next read at "latest" asks for it again: a reader in another thread
(the node's HTTP API during a long training tick) sees a block at most this much later than a live read would."""


class HeadReads:
    """The head last seen and the answers read at it (thread-safe)."""

    def __init__(self, max_age_s: float = HEAD_MAX_AGE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age_s = max_age_s
        self._clock = clock
        self._lock = threading.Lock()
        self._head: tuple[int, bytes] | None = None  # (number, hash) of the head block
        self._seen_at = 0.0
        self._answers: dict[Hashable, Any] = {}
        self._local = threading.local()  # how deep this thread is in `scope()`

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Reads made by this thread inside the block go through the cache; the first reads the head live (a node's
        tick: whatever moved the chain since the last tick is seen). Every other read stays live."""
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._lock:
                self._seen_at = -math.inf
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth

    def is_active(self) -> bool:
        """Whether this thread is inside `scope()`."""
        return getattr(self._local, "depth", 0) > 0

    def note_block(
        self,
        number: int,
        block_hash: bytes,
        parent_hash: bytes | None = None,
        keep: Callable[[Hashable], bool] | None = None,
    ) -> None:
        """The head is this block now (read live): answers read at another block are dropped. Keyed by hash too, so
        a reorg that replaces the head at the same height drops them as well.

        `keep` (protocol/adapters/quiet_blocks.py): when the new head is the child of the head the answers were read at
        (`parent_hash`) and changed nothing they read, the answers `keep` names are kept (issue 39: an idle node read
        the same storage again at every block), and the old head's block is kept as the block of its number."""
        with self._lock:
            if (number, block_hash) != self._head:
                old, answers = self._head, self._answers
                self._answers = {}
                if keep is not None and old is not None and (old[0] + 1, old[1]) == (number, parent_hash):
                    self._answers = {k: v for k, v in answers.items() if keep(k)}
                    if ("block",) in answers:
                        self._answers[("block", old[0])] = answers[("block",)]
                self._head = (number, block_hash)
            self._seen_at = self._clock()

    def note_number(self, number: int) -> None:
        """A live block number: when the head moved, nothing read at the old one is answered again."""
        with self._lock:
            if self._head is not None and number != self._head[0]:
                self._head = None
                self._answers.clear()

    def forget(self) -> None:
        """Something this client did may have moved the chain (a transaction, a devnet call, a reorg seen)."""
        with self._lock:
            self._head = None
            self._answers.clear()

    def get_head(self) -> int | None:
        """The head's number when it was seen at most `max_age_s` ago, or None (then the caller reads the head's
        block live and notes it)."""
        with self._lock:
            if self._head is None or self._clock() - self._seen_at > self.max_age_s:
                return None
            return self._head[0]

    def read(self, key: Hashable, head: int, fetch: Callable[[], T]) -> T:
        """The answer for `key` at `head`: remembered, or fetched (outside the lock) and remembered while `head` is
        still the head. Lists, tuples and dicts are copied out: a caller that edits one cannot change the next."""
        try:
            hash(key)
        except TypeError:
            return fetch()  # an argument that cannot be a key (a list): read live
        with self._lock:
            if self._head is not None and head == self._head[0] and key in self._answers:
                return _copied(self._answers[key])
        answer = fetch()
        with self._lock:
            if self._head is not None and head == self._head[0]:
                self._answers[key] = _copied(answer)
        return answer


def _copied(value: T) -> T:
    return copy.deepcopy(value) if isinstance(value, list | dict | tuple) else value
