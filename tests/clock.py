"""A devnet clock that end-to-end tests drive, so no test depends on how fast this machine trains.

The tests' anvil starts far in the future (`DRIVEN_GENESIS`, beyond any wall clock) and stamps every
block exactly one second after the previous one (`anvil_setBlockTimestampInterval`): the chain's
time, which is what the contracts and the nodes go by (`node.bootstrap.get_chain_now` takes the later
of wall clock and chain), moves by a second per transaction and otherwise stands still. A window of
a few hundred chain-seconds therefore never closes while a node is still training or replaying,
however loaded the machine is.

`ClockDriver` moves time on instead: it reads every live node's `/health` activity (each node reports
whether its last tick changed nothing, and at which block) and, once every one of them is idle at the
chain's latest block -- nothing left to do until time passes -- moves the chain to the next deadline the contracts
hold (round 0's start after a start delay, a window end of the current round, a claim window, a dispute deadline), or
a second later when none is ahead: blocks one second apart while a rule counts blocks, then one block at the deadline
(`ClockDriver._advance`). A test that acts itself (a dishonest challenger, forged votes) holds the
clock while it does: `gate = driver.pause_when(condition)` stops time the first time `condition()`
holds when the driver is about to move it, `gate.wait()` waits for that, `gate.release()` lets it go.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import httpx

from protocol.adapters.contracts import ProtocolClient
from protocol.types import ClaimStatus, DisputeStatus, RoundTimes

DRIVEN_GENESIS = 4_000_000_000
"""Genesis timestamp of a driven devnet (year 2096): ahead of the wall clock for the life of a test."""

LEAD_BLOCKS = 3
"""Blocks an advance always mines one second apart before it jumps to the deadline (tests/clock.py `_advance`)."""

NodeHandle = tuple[int | str, subprocess.Popen]
"""(API port on 127.0.0.1, or the node's base URL, and its process) of a node whose activity the driver waits on."""


def make_driven(protocol: ProtocolClient) -> None:
    """Turn a devnet started with `--timestamp DRIVEN_GENESIS` into one whose time only the driver moves."""
    protocol.chain.set_block_timestamp_interval(1)


class Gate:
    """Time stops the first time `condition()` is true when the driver would move it, until `release()`."""

    def __init__(self, driver: ClockDriver, condition: Callable[[], object]) -> None:
        self.driver = driver
        self.condition = condition
        self.paused = threading.Event()
        self.released = False

    def wait(self, timeout_s: float, what: str) -> None:
        if not self.paused.wait(timeout_s):
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")

    def release(self) -> None:
        self.released = True


class ClockDriver:
    """Advance a driven devnet's time whenever every live node is idle (see the module docstring)."""

    def __init__(
        self, protocol: ProtocolClient, run_id: int, nodes: Callable[[], Iterable[NodeHandle]], poll_s: float = 0.2
    ) -> None:
        self.protocol = protocol
        self.chain = protocol.chain
        self.run_id = run_id
        self.nodes = nodes
        self.poll_s = poll_s
        self.advances = 0
        self._held = 0
        self._gates: list[Gate] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="clock-driver", daemon=True)
        self._http = httpx.Client(timeout=5)
        self.error: Exception | None = None

    def __enter__(self) -> ClockDriver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._http.close()

    def pause_when(self, condition: Callable[[], object]) -> Gate:
        """A gate that stops time once `condition()` holds (checked right before every move)."""
        gate = Gate(self, condition)
        with self._lock:
            self._gates.append(gate)
        return gate

    def _gated(self) -> bool:
        with self._lock:
            gates = list(self._gates)
        for gate in gates:
            if gate.released:
                continue
            if gate.paused.is_set() or gate.condition():
                gate.paused.set()
                return True
        return False

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Keep the chain's time where it is while the test itself acts."""
        with self._lock:
            self._held += 1
        try:
            yield
        finally:
            with self._lock:
                self._held -= 1

    # -- the loop ----------------------------------------------------------------------------------

    def _loop(self) -> None:
        streak = 0
        while not self._stop.wait(self.poll_s):
            try:
                with self._lock:
                    held = self._held > 0
                latest = self.chain.block_number()
                if held or not self._all_idle_at(latest):
                    streak = 0
                    continue
                # Twice in a row at the same block: a node mid-tick has finished the tick by then.
                streak += 1
                if streak >= 2 and self.chain.block_number() == latest and not self._gated():
                    self._advance()
                    streak = 0
            except Exception as exc:  # keep driving; the test's own timeouts report a stuck run
                self.error = exc

    def _all_idle_at(self, latest: int) -> bool:
        for port, process in self.nodes():
            if process.poll() is not None:
                continue  # exited (done, or killed by the test): nothing to wait for
            try:
                base = port if isinstance(port, str) else f"http://127.0.0.1:{port}"
                activity = self._http.get(f"{base}/health").json().get("activity")
            except (httpx.HTTPError, ValueError):
                return False  # starting, or restarting after a kill
            if not activity or not activity.get("idle") or activity.get("block") != latest:
                return False
        return True

    def _advance(self) -> None:
        """Move the chain to the next deadline the contracts hold (or one second on), mining as few blocks as keep
        every block-counted rule of a real chain.

        Blocks are one second apart (the chain stamps each block one second after the last) while a rule counts them:
        until the chain is past the round's RANDAO block (the seed block was placed `ceil(window / blockSeconds)`
        blocks after the round's start, as if blocks came one per second, and the seed is proven from the block after
        it) and past the run seed's, and for the first LEAD_BLOCKS blocks of every move (a dispute's jury seed is the
        block after its opening). Past those, one block jumps to the deadline: a stretch of idle blocks carries
        nothing a node or contract reads, and anvil spends 2-3 ms of CPU on each empty block (a 300-second window
        mined second by second was most of a test's anvil time).
        """
        latest = self.chain.get_block("latest")
        now, head = int(latest["timestamp"]), int(latest["number"])
        times = self.protocol.round_times(self.run_id)
        deadlines = [d for d in self._deadlines(times) if d > now]
        target = min(deadlines) + 1 if deadlines else now + 1
        stepped = target - now if self._is_counting_blocks(times, head) else min(target - now, LEAD_BLOCKS)
        self.chain.mine_blocks(stepped)  # one second apart: now + 1, ..., now + stepped
        if now + stepped < target:
            self.chain.mine_at(target)
        self.advances += 1

    def _is_counting_blocks(self, times: RoundTimes, head: int) -> bool:
        """Whether a seed's RANDAO block is still ahead of `head`: the round's, or the run seed's (plants)."""
        if not times.finished and times.seed_block and head <= times.randao_block:
            return True
        run_seed = self.protocol.run_seed(self.run_id)
        return bool(run_seed.seed_block) and not run_seed.drawn and head <= run_seed.randao_block

    def _deadlines(self, times: RoundTimes) -> list[int]:
        if times.finished:
            return []
        # the start first: round 0 of a run with a start delay opens its commit window there, not at creation
        out = [times.start, times.commit_end, times.open_end, times.attest_end, times.challenge_end]
        claim = self.protocol.claim_of(self.run_id, times.round)
        if claim.status == ClaimStatus.POSTED:
            out.append(claim.window_end)
        for event in self.chain.get_events(
            self.chain.manifest.deployed_block, names=["AttestationChallenged", "ClaimChallenged"]
        ):
            if event.args["runId"] == self.run_id:
                record = self.protocol.dispute_of(event.args["disputeId"])
                if record.status not in (DisputeStatus.EXECUTED, DisputeStatus.EXPIRED):
                    out.append(record.deadline)
        return out
