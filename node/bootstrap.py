"""How every node starts and keeps going: its adapters, its run, its clock and its loop.

Solver, verifier and whistleblower nodes are all a `RunNode`: one process (or thread) following one
run, with its own directory `<home>/<role dir>/<address>/` holding its artifact store and its SQLite
state, so two roles (or two accounts) on one machine never share a store or a state file. What
differs between roles is `on_start` (join the run, register) and `tick` (one read -> decide -> act
pass); the loop around them, which survives RPC hiccups, slow peers and reverts that race other
nodes, is written once, here.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from eth_account.signers.local import LocalAccount
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from node.logs import get_logger, log_event
from node.money_watch import MoneyCollector, MoneyWatch
from node.peers import PeerDiscovery, announce_url
from node.profile_check import ReproductionReport, check_reproduction, log_reproduction
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.http import PeerSet
from protocol.adapters.manifest import DeploymentManifest
from protocol.adapters.nodestate import NodeState
from protocol.adapters.object_store import ArtifactBackend, open_artifact_store
from protocol.adapters.runs import RunContext, RunNotFoundError, load_run_context
from protocol.errors import GradledgerError
from protocol.execution_pins import CURRENT_PROFILE
from protocol.finality import DEVNET_CHAIN_ID
from protocol.profile import apply_execution_profile

logger = get_logger("node")


@dataclass(frozen=True)
class NodeAdapters:
    """The adapters one node process uses; every role opens them the same way."""

    chain: ChainClient
    protocol: ProtocolClient
    store: ArtifactBackend
    state: NodeState
    peers: PeerSet


def open_node_adapters(
    node_dir: Path,
    rpc_url: str,
    manifest: DeploymentManifest,
    peers: tuple[str, ...],
    store: str | None = None,
    allow_private_peers: bool | None = None,
) -> NodeAdapters:
    """Chain client, contracts, artifact store and node state of the node living in `node_dir`.

    `store` is `--store`: an `s3://bucket/prefix` URL or a directory (protocol/adapters/object_store.py); the
    default is `<node_dir>/artifacts`. The node state stays in `node_dir` either way. `allow_private_peers` is
    `--allow-private-peers`: fetch from loopback and private addresses other accounts announced (protocol/adapters/
    http.py PeerSet); None (not given) allows them on the anvil devnet's chain id only, where every node of the
    network is on one machine, and refuses them on every other chain."""
    if allow_private_peers is None:
        allow_private_peers = manifest.chain_id == DEVNET_CHAIN_ID
    chain = ChainClient(rpc_url, manifest)
    return NodeAdapters(
        chain,
        ProtocolClient(chain),
        open_artifact_store(store or node_dir / "artifacts"),
        NodeState(node_dir / "state.sqlite"),
        PeerSet(peers, allow_private_peers=allow_private_peers),
    )


RUN_WAIT_LOG_S = 30.0
"""How often a node waiting for its run to be created says so again (and at once when the run count changes)."""


def wait_for_run(
    protocol: ProtocolClient,
    run_id: int,
    stop: threading.Event,
    poll_s: float = 0.5,
    log: logging.Logger | None = None,
    log_every_s: float = RUN_WAIT_LOG_S,
) -> bool:
    """Block until run `run_id` exists on-chain (True) or `stop` is set (False).

    Lets nodes start before their run is created and be ready the moment round 0 opens. It waits (a node may
    well be started first), but never in silence: a node given a wrong `--run` looked exactly like one waiting
    for the next run. It logs that the run does not exist yet and the chain's run count at once, again every
    `log_every_s` and whenever the count changes: at INFO when `run_id` is the next run to be created, at
    WARNING when more runs than one must be created first (most likely a wrong --run).
    """
    log = log or logger
    logged_count, logged_at = -1, 0.0
    while not stop.is_set():
        count = protocol.chain.call("RunRegistry", "runCount")
        if count >= run_id:
            if logged_count >= 0:
                log_event(log, "run created", run=run_id)
            return True
        now = time.monotonic()
        if count != logged_count or now - logged_at >= log_every_s:
            level = logging.INFO if run_id == count + 1 else logging.WARNING
            log_event(
                log, "waiting for the run to be created", level=level, run=run_id, run_count=count,
                why=f"run {run_id} does not exist yet: the chain has {count} run(s), the next one created is run "
                f"{count + 1}; create it with `gradledger run create`, or check --run",
            )  # fmt: skip
            logged_count, logged_at = count, now
        stop.wait(poll_s)
    return False


def load_run_when_created(io: NodeAdapters, run_id: int, stop: threading.Event, threads: int) -> RunContext:
    """Wait for the run to exist, load its context and pin this process to the run's execution profile."""
    if not wait_for_run(io.protocol, run_id, stop):
        raise RunNotFoundError(f"stopped before run {run_id} was created")
    ctx = load_run_context(io.protocol, io.store, io.peers, run_id)
    apply_execution_profile(ctx.config.profile, threads)
    return ctx


def get_chain_now(chain: ChainClient) -> int:
    """The time the contracts will see next: the later of the wall clock and the latest block's timestamp.

    On a chain that mines blocks on its own the two agree; on an automining devnet the latest block
    may be old (no transaction for a while), and after time travel the chain is ahead of the wall.
    """
    return max(int(time.time()), int(chain.get_block("latest")["timestamp"]))


@dataclass(frozen=True)
class IdleReport:
    """A tick that changed nothing: it started at chain block `block` (hash `block_hash`, chain time `now` in whole
    seconds, `get_chain_now`) with `changes` node-state writes."""

    block: int
    changes: int
    block_hash: bytes = b""
    now: int = 0

    def is_same_moment(self, other: IdleReport) -> bool:
        """Whether nothing a tick reads can differ between the two: the same head block, the same chain second, no
        node-state write in between."""
        return (self.block, self.block_hash, self.now, self.changes) == (
            other.block, other.block_hash, other.now, other.changes,
        )  # fmt: skip


REAL_TIME_SLACK_S = 600.0
"""How far a head's timestamp may be from the wall clock on a chain that keeps real time (`get_idle_wait_s`): a
devnet's deployment, many transactions in a few seconds, leaves its blocks' timestamps some seconds ahead for good; the
tests' driven devnet starts in 2096."""
IDLE_WAIT_MAX_S = 2.0
"""The longest an idle node waits for a block that is due (`get_idle_wait_s`): on a 12-second chain it reads the head
every 2 s (about 6 requests a block) rather than react up to a block late to a deadline."""


def compute_idle_wait_s(chain_ahead_s: float, block_s: float, since_head_s: float, idle_poll_s: float) -> float:
    """How long a node loop whose last tick changed nothing waits before it reads the head again. `chain_ahead_s`: the
    head's timestamp less the wall clock; `block_s`: the deployment's block time; `since_head_s`: how long ago the
    loop first saw that head.

    On a chain that keeps real time (its head within `REAL_TIME_SLACK_S` + two blocks of the wall clock): until the
    next block is due, in whole steps of the block time from when the head was first seen (issue 39: a head read every
    `idle_poll_s` cost an idle node two to three requests per 1-second block and 24 per 12-second one, to learn
    nothing). Blocks on a cadence are then seen with one read each, at the same offset after they are mined. A step is
    at most `IDLE_WAIT_MAX_S`, so a deadline a tick acts on is seen at most that late (no contract sees it before the
    next block anyway). On a chain whose clock runs ahead of the wall (the tests' driven devnet, time travel), blocks
    come when someone mines, not on a cadence: every `idle_poll_s`.
    """
    if abs(chain_ahead_s) > 2 * block_s + REAL_TIME_SLACK_S:
        return idle_poll_s
    step = max(idle_poll_s, min(block_s, IDLE_WAIT_MAX_S))
    return step - since_head_s % step  # the next block due, whole steps after the head was first seen


START_REMINDER_S = 300.0
"""How often `RunNode.start` repeats a cause that keeps it from starting (it logs each new cause at once)."""


class RunNode:
    """The part every role's node shares: adapters, the run it follows, the loop, the last error.

    Subclasses set `role_dir` and implement `tick()` (True once nothing is left to do) and, when the
    role must join or register before working, `on_start()`.
    """

    role_dir: ClassVar[str] = "nodes"
    tick_interval_s: ClassVar[float] = 0.5
    idle_poll_s: ClassVar[float] = 0.5
    """How long a loop that skipped an idle tick sleeps before it reads the head again (whatever `tick_interval_s`: a
    solver paces itself inside its tick and has none)."""
    idle_recheck_s: ClassVar[float] = 5.0
    """A tick that changed nothing is not run again while nothing it reads can have changed (the same head block and
    chain second, no node-state write: `IdleReport.is_same_moment`), but at least this often anyway: a peer that did
    not serve an artifact may serve it now."""

    def __init__(
        self,
        run_id: int,
        home: Path,
        account: LocalAccount,
        rpc_url: str,
        manifest: DeploymentManifest,
        peers: tuple[str, ...] = (),
        threads: int = 1,
        *,
        store: str | None = None,
        allow_private_peers: bool | None = None,
    ) -> None:
        self.run_id = run_id
        self.home = home
        self.account = account
        self.address = account.address
        self.threads = threads
        node_dir = home / self.role_dir / self.address.lower()
        # --store: S3 or a directory; --allow-private-peers: announced loopback/private URLs are fetched from
        self.io = open_node_adapters(node_dir, rpc_url, manifest, peers, store, allow_private_peers)
        self.chain, self.protocol, self.store, self.state, self.peers = (
            self.io.chain, self.io.protocol, self.io.store, self.io.state, self.io.peers,
        )  # fmt: skip
        self.ctx: RunContext | None = None
        self.stop = threading.Event()
        self.last_error = ""
        self.log = get_logger(self.role_dir.rstrip("s"))
        # the store moves a corrupt copy aside and heals it from peers; the operator hears of both in this log
        self.store.reporter = lambda event, level, fields: log_event(self.log, event, level, **fields)
        self.peers.reporter = self.store.reporter  # announced URLs it refuses to fetch from (issue 36, finding 10)
        self.idle: IdleReport | None = None
        self.head_seen_at = 0.0  # when the loop first saw its current head (time.monotonic; `get_idle_wait_s`)
        self.idle_skips = 0  # loop passes that skipped a tick: nothing it reads had changed since an idle one
        self.skips = 0
        self.finished = False
        self.public_url: str | None = None  # announced in PeerDirectory once set (the CLI sets it after serving)
        self.announced = False
        self.discovery = PeerDiscovery(self.protocol, self.peers, run_id, self.address, self.log)
        self.peers.resolve = self.protocol.peer_url_of  # an unknown account's URL is looked up when needed
        self.loop_thread: threading.Thread | None = None  # the thread running `run()`, for /health
        self.money = MoneyWatch(self.protocol, self.peers, run_id, self.address, self.log, node_dir / "events.sqlite")
        self.metrics_registry = CollectorRegistry()  # served at /metrics (docs/nodes.md, "your money")
        self.metrics_registry.register(MoneyCollector(self.money))
        self.reproduction: ReproductionReport | None = None  # the golden self-check, once the run is loaded
        self.reproduced_gauge = Gauge(
            "gradledger_profile_reproduced",
            "1 when this machine reproduces the run's execution profile (exact verdicts), 0 when not (tolerances)",
            ["profile"],
            registry=self.metrics_registry,
        )

    def load(self) -> RunContext:
        """The run's context; waits for the run to be created if it does not exist yet."""
        if self.ctx is None:
            if not wait_for_run(self.protocol, self.run_id, self.stop):
                raise RunNotFoundError(f"stopped before run {self.run_id} was created")
            self.discovery.refresh(None, force=True)  # the creator serves the run's config, dataset and θ0
            ctx = load_run_when_created(self.io, self.run_id, self.stop, self.threads)
            self.self_check(ctx)
            self.ctx = ctx
        return self.ctx

    def self_check(self, ctx: RunContext) -> ReproductionReport:
        """Train the run's profile's golden segments here (cached per machine) and say how this node will judge.

        A machine that does not reproduce them still works: its replays that differ are judged by tolerances
        (`exact_verdicts` False), and /health, /metrics and the log say why."""
        if self.reproduction is None or self.reproduction.profile != ctx.config.profile.name:
            self.reproduction = check_reproduction(ctx.config.profile.name, self.threads)
            log_reproduction(self.log, self.reproduction, self.role_dir.rstrip("s"))
            self.reproduced_gauge.labels(profile=self.reproduction.profile).set(int(self.reproduction.reproduces))
        return self.reproduction

    def prewarm_self_check(self) -> None:
        """Train the current profile's goldens before the run is loaded (a node usually starts before its run is
        created): the answer is cached, so the self-check of `load` costs nothing when round 0 opens. A problem is
        left for that check to report."""
        if self.ctx is None:
            with contextlib.suppress(GradledgerError):
                check_reproduction(CURRENT_PROFILE, self.threads)

    @property
    def exact_verdicts(self) -> bool:
        """Whether this node may fail a replay on an exact mismatch (its machine reproduces the goldens)."""
        return self.reproduction is not None and self.reproduction.reproduces

    def now(self) -> int:
        return get_chain_now(self.chain)

    def on_start(self) -> None:
        """Join or register once the run is loaded (idempotent); nothing by default."""

    def tick(self) -> bool:
        """One read -> decide -> act pass; True when the run is finished and nothing is left to do."""
        raise NotImplementedError

    def start(self) -> bool:
        """Load the run and call `on_start`, retrying while artifacts or the RPC are not reachable yet.

        Returns False when stopped before that succeeded. Each distinct cause is logged once (and again every
        START_REMINDER_S while it lasts), not on every retry: a cause that lasts (no stake to join with, artifacts
        nobody serves) flooded the log with the same line every second; `/health` shows it as `last_error`.
        """
        logged, logged_at = "", 0.0
        while not self.stop.is_set():
            try:
                self.announce_if_due()
                self.load()
                self.on_start()
                return True
            except GradledgerError as exc:  # run artifacts not reachable yet, RPC hiccup, no stake yet: retry
                self.last_error = str(exc)
                if self.last_error != logged or time.monotonic() - logged_at >= START_REMINDER_S:
                    log_event(
                        self.log, "cannot start yet, retrying", level=logging.WARNING, error=self.last_error,
                        repeated=self.last_error == logged,
                    )  # fmt: skip
                    logged, logged_at = self.last_error, time.monotonic()
                self.stop.wait(1.0)
        return False

    def run(self, stop: threading.Event | None = None) -> None:
        """Start, then tick until the run is finished (or `stop` is set).

        # INVARIANT: nothing raised in a tick ends the loop. A GradledgerError (a slow peer, an RPC hiccup, a
        revert racing another node) is retried on the next tick; anything else (malformed input a rule did
        not turn into a verdict, a bug) is logged with its traceback and counted in `skips`.
        """
        if stop is not None:
            self.stop = stop
        self.loop_thread = threading.current_thread()
        self.prewarm_self_check()
        if not self.start():
            return
        ticks, blocks_seen = 0, [-1, -1]  # the head at the first and at the last tick (the log's `blocks`)
        idle_since = 0.0  # when the last tick that changed nothing ran (time.monotonic)
        while not self.stop.is_set():
            # One scope for the tick and the money watch after it: reads at one head are answered once
            # (protocol/adapters/head_reads.py), and the watch reads at the head the tick read unless the tick sent a
            # transaction or HEAD_MAX_AGE_S passed (issue 39: a scope of its own read the head again every block).
            with self.chain.head_reads.scope():
                try:
                    before = self.observe()
                    if (
                        self.idle is not None
                        and before.is_same_moment(self.idle)
                        and time.monotonic() - idle_since < self.idle_recheck_s
                    ):
                        # INVARIANT: the same head, chain second and node state: the tick would idle again
                        self.idle_skips += 1
                        self.stop.wait(self.get_idle_wait_s(before))
                        continue
                    ticks += 1
                    if before.block != blocks_seen[1]:
                        self.head_seen_at = time.monotonic()
                    blocks_seen = [before.block if blocks_seen[0] < 0 else blocks_seen[0], before.block]
                    self.announce_if_due()
                    self.discovery.refresh(self.load().created_block)  # nodes that start later are found here
                    finished = self.tick()
                    if self.state.changes != before.changes:
                        self.idle = None
                    else:
                        self.idle, idle_since = before, time.monotonic()
                    self.last_error = ""
                except GradledgerError as exc:
                    self.idle = None
                    repeated, self.last_error = str(exc) == self.last_error, str(exc)
                    if not repeated:  # an outage fails every tick alike: logged once, /health shows it meanwhile
                        log_event(self.log, "tick failed, retrying", level=logging.WARNING, error=str(exc))
                    finished = False
                    self.stop.wait(1.0)
                except Exception as exc:
                    self.idle = None
                    self.note_skip("tick", exc)
                    finished = False
                    self.stop.wait(1.0)
                self.watch_money()
            if finished:
                self.finished = True
                break
            self.stop.wait(self.tick_interval_s if self.idle is None else self.get_idle_wait_s(self.idle))
        # what this node asked of its RPC over the blocks it followed (docs/nodes.md, "What the client asks the RPC")
        log_event(
            self.log, "loop ended", finished=self.finished, ticks=ticks, idle_ticks_skipped=self.idle_skips,
            blocks=blocks_seen[1] - blocks_seen[0], rpc_requests=dict(self.chain.provider.requests),
        )  # fmt: skip

    def get_idle_wait_s(self, moment: IdleReport) -> float:
        """How long this loop, its last tick idle at `moment`, waits before it reads the head again
        (`compute_idle_wait_s`)."""
        block_s = float(self.chain.deployment.block_seconds) if self.chain.manifest is not None else 1.0
        since_head_s = time.monotonic() - self.head_seen_at
        return compute_idle_wait_s(moment.now - time.time(), block_s, since_head_s, self.idle_poll_s)

    def observe(self) -> IdleReport:
        """The moment a tick starts at: the head block (one read, kept for the tick), chain time, node-state writes."""
        head = self.chain.get_block("latest")
        now = max(int(time.time()), int(head["timestamp"]))  # get_chain_now, from the block just read
        return IdleReport(int(head["number"]), self.state.changes, bytes(head["hash"]), now)

    def watch_money(self) -> None:
        """Log and keep for /metrics and /health what touched this node's money (node/money_watch.py); never raises."""
        if self.ctx is None:
            return
        try:
            now = self.now()
        except GradledgerError:
            return  # the RPC is down: the tick said so already
        self.money.refresh(self.ctx.created_block, now)

    def get_metrics(self) -> bytes:
        """This node's Prometheus metrics (its money; a verifier adds its own, verifier/service.py)."""
        return generate_latest(self.metrics_registry)

    def announce_if_due(self) -> None:
        """Announce `public_url` in PeerDirectory once it is set (a transaction only if the directory differs)."""
        if self.public_url and not self.announced:
            announce_url(self.protocol, self.account, self.public_url, self.log)
            self.announced = True

    def note_skip(self, what: str, exc: BaseException) -> None:
        """Log and count an item this node could not handle (it goes on with the rest)."""
        self.skips += 1
        self.last_error = f"{what}: {type(exc).__name__}: {exc}"
        self.log.error("skipped %s", what, exc_info=exc, extra={"fields": {"error": self.last_error}})

    def get_health(self, thread: threading.Thread | None = None) -> dict[str, Any]:
        """What `/health` says of a node whose loop runs in `thread` (default: the thread that called `run()`).

        Unhealthy (HTTP 503, protocol/adapters/http.py) when the loop is gone without finishing, or when the node
        missed a window it was due in and no later round it took part in succeeded yet (node/money_watch.py,
        protocol/money_events.py `get_current_misses`); `reasons` says why. A loop that returned because the run is
        finished is healthy: `worker` says "finished" (never a bare "ok" with a dead worker and no word why).
        """
        thread = thread if thread is not None else self.loop_thread
        alive = thread is not None and thread.is_alive()
        if alive:
            worker = "running"
        elif self.finished:
            worker = "finished"
        else:
            worker = "dead" if thread is not None and thread.ident is not None else "not started"
        reasons = []
        if worker in ("dead", "not started"):
            why = f": {self.last_error}" if self.last_error else ""
            reasons.append(f"the worker thread is {worker} without finishing the run{why}")
        reasons += self.money.health_reasons()
        return {
            "status": "unhealthy" if reasons else "ok",
            "reasons": reasons,
            "run_id": self.run_id,
            "worker": worker,
            "worker_alive": alive,
            "finished": self.finished,
            "skips": self.skips,
            "last_error": self.last_error,
            "activity": self.get_activity(),
            "money": self.money.as_health(),
            "profile": self.get_profile_health(),
        }

    def get_profile_health(self) -> dict[str, Any] | None:
        """The golden self-check as /health shows it: whether this machine reproduces, how it judges, why."""
        report = self.reproduction
        if report is None:
            return None
        env = report.environment
        return {
            "name": report.profile,
            "reproduces": report.reproduces,
            "verdicts": report.verdicts,
            "reason": report.reason,
            "aten_capability": env.aten_capability,
            "mkl": env.mkl_mode,
            "cpu": f"{env.cpu_vendor} {env.cpu_model}",
        }

    def get_activity(self) -> dict[str, int | bool]:
        """Whether this node is idle: its last tick changed nothing, and nothing changed since.

        Work only follows a new block, a changed node state (e.g. a vote received over HTTP) or a
        failure; so a node idle at the chain's latest block has nothing to do until time passes.
        Served on /health, where an end-to-end test's clock driver reads it (tests/clock.py).
        """
        report = self.idle
        idle = report is not None and report.changes == self.state.changes
        return {"idle": idle, "block": report.block if report is not None else -1}
