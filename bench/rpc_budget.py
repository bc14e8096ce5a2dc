"""The RPC budget of a node: JSON-RPC requests each node makes per new block, idle and over a whole round (issue 39).

    .venv/bin/python bench/rpc_budget.py [--quick] [--idle-blocks N]

A real anvil on a free port whose clock only this bench moves (as tests/clock.py's: the chain starts in 2096 and
stamps each block one second after the last), the contracts deployed, one run of the tiny preset created (1 round; the
default corpus, the tiny built-in GPT) and its nodes started as real processes through the CLI (`python -m
gradledger`): a coordinating solver, a verifier and a whistleblower. Each node talks to anvil through its own counting
JSON-RPC proxy (`CountingProxy`, a loopback HTTP server that forwards every POST and counts each request in it by
method, a batch request by request), so every request a node makes is counted, whichever of its threads or clients
made it. The bench's own reads and the blocks it mines go to anvil directly and are not counted.

Time moves one block (one chain second) at a time, and only once every live node reports on `/health` that it is idle
at the chain's head, twice in a row (its last tick changed nothing: tests/clock.py's `ClockDriver` without its jumps),
so a node never misses a window because this machine was slow, and a block is mined as soon as the nodes are done
with the last one. Two measurements:

- `rpc_requests_per_node_per_block_idle`: once the solver has committed in round 0, `--idle-blocks` blocks (default
  60, `--quick` 20) are mined inside the commit window, which was made that much longer: every node is idle there
  (the solver waits for the window to close, the verifier for the seed, the whistleblower for attestations). Per node,
  its requests over those blocks / the blocks; reported as the max over the nodes, per role
  (`idle_per_role`), and by JSON-RPC method summed over the nodes (`rpc_requests_by_method`, per block and node).
- `rpc_requests_per_node_per_block_round`: the same over the whole round, from the run's creation until every node
  has exited (join and register, train, commit, seed, open, attest, finalize, claim θ, settle, shares, withdraw,
  leave), less the idle stretch above (so it is the round of a run whose commit window had no extra idle blocks):
  max over the nodes, and per role (`round_per_role`), with the blocks it took (`round_blocks`).

Head polls. An idle node reads the head every `idle_poll_s` (half a second, node/bootstrap.py) to see whether a block
came: a cost per second, not per block, which the per-block figures include at this bench's pace
(`idle_seconds_per_block`: a block as soon as every node is idle again; the solver sleeps up to a second in a tick
that waits). The proxy counts a head read answered with the head the node's previous head read saw as `head_poll`
(`head_polls_per_node_per_second_idle`), and `*_without_head_polls` is what the blocks cost beyond finding them. On a
chain of T-second blocks the polls add 2T requests per block.

The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from protocol.adapters.execution_env import pin_execution_environment

pin_execution_environment()  # before torch loads: the execution profile's kernels (docs/determinism.md)

import httpx

from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from devnet.runs import create_run
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.corpus import load_corpus_shards
from protocol.adapters.http import make_node_app, serve_in_thread
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import write_manifest
from protocol.config import build_run_config
from protocol.constants import JUROR_MIN_STAKE
from protocol.hashing import hash_to_hex
from protocol.run_presets import ETH, TINY
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER

DRIVEN_GENESIS = 4_000_000_000
"""Genesis timestamp of the bench's devnet (2096, tests/clock.py): ahead of the wall clock, so the nodes go by the
chain's time alone, which moves one second per block."""
CREATOR, SOLVER, VERIFIER, WHISTLEBLOWER = 0, 1, 2, 3
"""Devnet accounts of the run's creator and of its three nodes."""
BASE_COMMIT_WINDOW = 30
"""Chain seconds of the commit window besides the idle stretch: join, train and commit fit in it (the chain stands
still while a node trains)."""
ATTEST_WINDOW, CHALLENGE_WINDOW = 40, 24
"""Chain seconds (= blocks): the open window (half the attest window) leaves the seed draw and the opening a margin
over the blocks nodes mine themselves on the devnet to reach the seed block (node/opening.py `reach_past_block`)."""
HEALTH_POLL_S = 0.05
"""How often the driver reads every node's /health while it waits for them to be idle."""
NODE_TIMEOUT_S = 600.0
"""How long one block may keep a node busy before the bench gives up (a stuck node, not a slow machine)."""


# -- counting -------------------------------------------------------------------------------------------------------


HEAD_POLL = "head_poll"
"""Counted besides the methods: head reads that found the head the node's previous head read found."""


class CountingProxy:
    """A loopback JSON-RPC proxy in front of one upstream: forwards each POST as it is, counts its requests by method.

    One kept-alive upstream connection per handler thread; the node's own client keeps its connection alive too (HTTP
    1.1), so the proxy adds a hop, never a request."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname or "127.0.0.1", parts.port or 80
        self.requests: Counter[str] = Counter()
        self._head: int | None = None  # the head the last head read answered
        self._lock = threading.Lock()
        self._local = threading.local()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="rpc-proxy", daemon=True)
        self._thread.start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: Nagle + delayed ACK cost 40 ms each

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, data = proxy.forward(body)
                proxy.count(body, data)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def count(self, body: bytes, response: bytes) -> None:
        """Count each request of `body` by method; a head read answered with the head the last one saw is counted
        under HEAD_POLL as well (a poll: the node asking whether a block came, not what a block changed)."""
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = {}
        calls = parsed if isinstance(parsed, list) else [parsed]
        methods = [str(c.get("method", "?")) if isinstance(c, dict) else "?" for c in calls]
        head = _head_of(parsed, response)
        with self._lock:
            self.requests.update(methods)
            if head is not None:
                if head == self._head:
                    self.requests[HEAD_POLL] += 1
                self._head = head

    def forward(self, body: bytes) -> tuple[int, bytes]:
        for attempt in (0, 1):  # a kept connection anvil closed meanwhile is opened again, once
            conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
            if conn is None:
                conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
                self._local.conn = conn
            try:
                conn.request("POST", "/", body, {"Content-Type": "application/json"})
                response = conn.getresponse()
                return response.status, response.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _head_of(request: Any, response: bytes) -> int | None:
    """The block number a lone `eth_getBlockByNumber("latest")` was answered with, else None."""
    if not isinstance(request, dict) or request.get("method") != "eth_getBlockByNumber":
        return None
    if (request.get("params") or [None])[0] != "latest":
        return None
    try:
        result = json.loads(response).get("result")
        return int(result["number"], 16) if isinstance(result, dict) else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


# -- the nodes --------------------------------------------------------------------------------------------------------


@dataclass
class Node:
    role: str
    account: int
    port: int
    proxy: CountingProxy
    process: subprocess.Popen[bytes] | None = None
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=5))

    @property
    def name(self) -> str:
        return self.role

    def is_alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def idle_block(self) -> int | None:
        """The block this node says it is idle at (`/health` activity), or None (busy, starting, unreachable)."""
        try:
            activity = self.http.get(f"http://127.0.0.1:{self.port}/health").json().get("activity")
        except (httpx.HTTPError, ValueError):
            return None
        return int(activity["block"]) if activity and activity.get("idle") else None


def get_free_port() -> int:
    """A loopback port the kernel hands out now (the node binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_node(node: Node, run_id: int, home: Path) -> None:
    """`gradledger solver run` (the coordinator), `verifier serve` or `whistleblower watch` as a process of its own,
    talking to the chain through its proxy; its output in <home>/<role>.log."""
    common = ["--run", str(run_id), "--devnet-account", str(node.account), "--port", str(node.port)]
    common += ["--allow-private-peers", "--home", str(home), "--rpc-url", node.proxy.url]
    argv = {
        "solver": ["solver", "run", *common, "--no-progress", "--coordinator"],
        "verifier": ["verifier", "serve", *common, "--exit-when-done"],
        "whistleblower": ["whistleblower", "watch", *common, "--exit-when-done"],
    }[node.role]
    with open(home / f"{node.name}.log", "ab") as log:
        node.process = subprocess.Popen(
            [sys.executable, "-m", "gradledger", *argv], stdout=log, stderr=subprocess.STDOUT, cwd=home
        )


def stop_node(node: Node) -> None:
    process = node.process
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(30)
    except Exception:
        process.kill()
        process.wait(30)


def wait_for(predicate: Callable[[], object], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(HEALTH_POLL_S)


class Driver:
    """Moves the chain one block at a time once every live node is idle at its head (tests/clock.py, no jumps)."""

    def __init__(self, protocol: ProtocolClient, nodes: list[Node], logs: Path) -> None:
        self.chain = protocol.chain
        self.nodes = nodes
        self.logs = logs

    def settle(self) -> int:
        """Wait until every live node reports idle at the head twice in a row; the head (-1 once none is alive)."""
        streak, seen = 0, -1
        deadline = time.monotonic() + NODE_TIMEOUT_S
        while time.monotonic() < deadline:
            live = [n for n in self.nodes if n.is_alive()]
            if not live:
                return -1
            head = self.chain.block_number()
            if all(n.idle_block() == head for n in live):
                streak = streak + 1 if head == seen else 1
                seen = head
                if streak >= 2:
                    return head
            else:
                streak = 0
            time.sleep(HEALTH_POLL_S)
        busy = [n.name for n in self.nodes if n.is_alive() and n.idle_block() != self.chain.block_number()]
        raise SystemExit(f"nodes {busy} were not idle at the head within {NODE_TIMEOUT_S:.0f} s; logs in {self.logs}")

    def step(self) -> int:
        """Mine one block (one chain second) and wait for every live node to be idle at it."""
        self.chain.mine()
        return self.settle()


def counts(nodes: list[Node]) -> dict[str, Counter[str]]:
    return {n.name: n.proxy.snapshot() for n in nodes}


def subtract(after: dict[str, Counter[str]], before: dict[str, Counter[str]]) -> dict[str, Counter[str]]:
    return {name: after[name] - before.get(name, Counter()) for name in after}


# -- the run ----------------------------------------------------------------------------------------------------------


@dataclass
class Measured:
    idle: dict[str, Counter[str]]
    idle_blocks: int
    idle_s: float
    round_: dict[str, Counter[str]]
    round_blocks: int


def stake(protocol: ProtocolClient, solver_stake: int, verifier_stake: int) -> None:
    for index, role, needed in ((SOLVER, ROLE_SOLVER, solver_stake), (VERIFIER, ROLE_VERIFIER, verifier_stake)):
        account = get_devnet_account(index)
        free = protocol.free_stake_of(account.address, role)
        if free < needed:
            protocol.deposit_stake(account, role, needed - free)


def run_and_measure(idle_blocks: int, home: Path) -> Measured:
    """Deploy, create a one-round run, drive it block by block and count each node's requests (module docstring)."""
    rules = TINY.with_run(
        max_rounds=1, commit_window=BASE_COMMIT_WINDOW + idle_blocks, attest_window=ATTEST_WINDOW,
        challenge_window=CHALLENGE_WINDOW,
    )  # fmt: skip
    corpus_manifest, shards = load_corpus_shards()
    with AnvilProcess(extra_args=("--timestamp", str(DRIVEN_GENESIS))) as anvil:
        manifest = deploy_protocol(ChainClient(anvil.rpc_url), get_devnet_account(CREATOR), build_contracts())
        write_manifest(home / "manifest.json", manifest)
        protocol = ProtocolClient(ChainClient(anvil.rpc_url, manifest))
        protocol.chain.set_block_timestamp_interval(1)  # every block one second after the last (tests/clock.py)
        stake(protocol, rules.run.solver_min_stake, rules.run.verifier_min_stake + JUROR_MIN_STAKE)
        config = build_run_config(
            preset="tiny", run_seed="0x" + os.urandom(32).hex(), dataset_root=hash_to_hex(corpus_manifest.root)
        )
        store = LocalArtifactStore(home / "creator" / "artifacts")
        creator_server = serve_in_thread(make_node_app("creator", get_devnet_account(CREATOR).address, store))
        rpc_url = anvil.rpc_url
        nodes = [
            Node(role, account, get_free_port(), CountingProxy(rpc_url))
            for role, account in (("solver", SOLVER), ("verifier", VERIFIER), ("whistleblower", WHISTLEBLOWER))
        ]
        urls = [creator_server.url] + [f"http://127.0.0.1:{n.port}" for n in nodes]
        (home / "peers.txt").write_text("\n".join(urls) + "\n")
        run_id = protocol.chain.call("RunRegistry", "runCount") + 1
        try:
            start_nodes(nodes, run_id, home)
            return drive(protocol, nodes, home, run_id, rules, corpus_manifest, shards, config, store, idle_blocks)
        finally:
            close_nodes(nodes)
            creator_server.stop()


def start_nodes(nodes: list[Node], run_id: int, home: Path) -> None:
    """Start every node and wait until each serves /health."""
    for node in nodes:
        start_node(node, run_id, home)
    for node in nodes:
        wait_for(partial(_answers, node), 300, f"the {node.name} to serve /health")


def close_nodes(nodes: list[Node]) -> None:
    """Stop every node, its proxy and its HTTP client."""
    for node in nodes:
        stop_node(node)
        node.proxy.close()
        node.http.close()


def _answers(node: Node) -> bool:
    try:
        return node.http.get(f"http://127.0.0.1:{node.port}/health").status_code in (200, 503)
    except httpx.HTTPError:
        return False


def drive(
    protocol: ProtocolClient, nodes: list[Node], home: Path, run_id: int, rules: Any, corpus_manifest: Any,
    shards: Any, config: Any, store: LocalArtifactStore, idle_blocks: int,
) -> Measured:  # fmt: skip
    """Create the run, then move the chain a block at a time until every node exited; the idle stretch once the solver
    committed."""
    driver = Driver(protocol, nodes, home)
    creator = get_devnet_account(CREATOR)
    before_round = counts(nodes)
    created_at = protocol.chain.block_number()
    created, _ = create_run(protocol, creator, store, config, corpus_manifest, shards, rules, 10 * ETH)
    if created != run_id:
        raise SystemExit(f"created run {created}, expected {run_id}: another run was created meanwhile")
    solver = get_devnet_account(SOLVER).address
    idle: dict[str, Counter[str]] = {}
    idle_span, idle_s = 0, 0.0
    head = driver.settle()
    while head >= 0:
        if not idle and solver in protocol.get_commitments(run_id, 0, created_at):
            start_block, start, started = head, counts(nodes), time.monotonic()
            for _ in range(idle_blocks):
                head = driver.step()
                if head < 0:
                    raise SystemExit("a node exited during the idle stretch")
            idle, idle_span = subtract(counts(nodes), start), head - start_block
            idle_s = time.monotonic() - started
            if protocol.chain.get_block("latest")["timestamp"] >= protocol.round_times(run_id).commit_end:
                raise SystemExit("the idle stretch reached the end of the commit window: make it longer")
            continue
        head = driver.step()
    if not idle:
        raise SystemExit(f"the solver never committed; logs in {home}")
    for node in nodes:
        code = node.process.poll() if node.process is not None else None
        if code != 0:
            raise SystemExit(f"{node.name} exited with {code}; its log: {home / (node.name + '.log')}")
    round_blocks = protocol.chain.block_number() - created_at - idle_span
    round_counts = subtract(subtract(counts(nodes), before_round), idle)
    return Measured(idle, idle_span, idle_s, round_counts, round_blocks)


# -- the report -------------------------------------------------------------------------------------------------------


def requests_of(counter: Counter[str]) -> int:
    return sum(n for method, n in counter.items() if method != HEAD_POLL)


def per_block(by_node: dict[str, Counter[str]], blocks: int, polls: bool = True) -> dict[str, float]:
    """Requests per block of each node; without its head polls when `polls` is False."""
    return {name: round((requests_of(c) - (0 if polls else c[HEAD_POLL])) / blocks, 3) for name, c in by_node.items()}


def summarise(measured: Measured) -> dict[str, Any]:
    idle = per_block(measured.idle, measured.idle_blocks)
    round_ = per_block(measured.round_, measured.round_blocks)
    methods: Counter[str] = Counter()
    for c in measured.idle.values():
        methods.update(c)
    nodes = len(measured.idle)
    return {
        "rpc_requests_per_node_per_block_idle": max(idle.values()),
        "rpc_requests_per_node_per_block_round": max(round_.values()),
        "idle_per_role": idle,
        "round_per_role": round_,
        "idle_per_role_without_head_polls": per_block(measured.idle, measured.idle_blocks, polls=False),
        "round_per_role_without_head_polls": per_block(measured.round_, measured.round_blocks, polls=False),
        "head_polls_per_node_per_second_idle": round(
            max(c[HEAD_POLL] for c in measured.idle.values()) / measured.idle_s, 2
        ),
        "idle_blocks": measured.idle_blocks,
        "idle_seconds_per_block": round(measured.idle_s / measured.idle_blocks, 2),
        "round_blocks": measured.round_blocks,
        "rpc_requests_by_method": {m: round(n / measured.idle_blocks / nodes, 3) for m, n in methods.most_common()},
        "rpc_requests_by_method_per_role": {
            name: {m: round(n / measured.idle_blocks, 3) for m, n in c.most_common()}
            for name, c in measured.idle.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="an idle stretch of 20 blocks instead of 60")
    parser.add_argument("--idle-blocks", type=int, default=None, help="blocks mined with every node idle (default 60)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the chain's and the nodes' files (logs) here")
    args = parser.parse_args()
    idle_blocks = args.idle_blocks or (20 if args.quick else 60)
    started = time.perf_counter()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        measured = run_and_measure(idle_blocks, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="gradledger-rpc-budget-") as tmp:
            measured = run_and_measure(idle_blocks, Path(tmp))
    result = summarise(measured)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    for name in measured.idle:
        print(
            f"{name}: idle {result['idle_per_role'][name]} requests/block "
            f"({result['idle_per_role_without_head_polls'][name]} besides head polls), "
            f"round {result['round_per_role'][name]}"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
