"""Fixtures for tests that need a real chain with the contracts deployed, and node processes.

One anvil and one deployment per test session (forge builds once); each test creates its own
run with the tiny preset and short windows, and starts real node processes through the CLI.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from devnet.lifecycle import stop_processes
from devnet.runs import ETH, create_run
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.http import ServerHandle, make_node_app, serve_in_thread
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import write_manifest
from protocol.config import build_run_config
from protocol.constants import JUROR_MIN_STAKE
from protocol.hashing import hash_to_hex
from protocol.run_presets import TINY
from protocol.run_terms import CreationTerms
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER
from tests.clock import DRIVEN_GENESIS, ClockDriver, NodeHandle, make_driven
from tests.forked_nodes import run_gradledger, start_gradledger

FAST_RULES = TINY.with_run(
    max_rounds=2, samples_per_commitment=2, verifiers_per_commitment=1, commit_window=300, attest_window=300,
    challenge_window=300, dispute_timeout=600,
)  # fmt: skip
"""Windows in chain seconds of a driven devnet (tests/clock.py): they close when the ClockDriver sees every
node idle, never because this machine was slow."""


@dataclass
class Deployment:
    anvil: AnvilProcess
    manifest_path: Path
    protocol: ProtocolClient


@contextmanager
def driven_deployment(out: Path, directory: Path) -> Iterator[Deployment]:
    """A fresh anvil whose clock only a ClockDriver moves (tests/clock.py), with the contracts deployed."""
    with AnvilProcess(extra_args=("--timestamp", str(DRIVEN_GENESIS))) as anvil:
        chain = ChainClient(anvil.rpc_url)
        manifest = deploy_protocol(chain, get_devnet_account(0), out)
        write_manifest(directory / "manifest.json", manifest)
        protocol = ProtocolClient(ChainClient(anvil.rpc_url, manifest))
        make_driven(protocol)
        yield Deployment(anvil, directory / "manifest.json", protocol)


@pytest.fixture(scope="session")
def deployment(tmp_path_factory) -> Iterator[Deployment]:
    with driven_deployment(build_contracts(), tmp_path_factory.mktemp("deployment")) as deployed:
        yield deployed


@dataclass
class RunSetup:
    """A run about to be created: stakes deposited, creator artifacts served, node home ready."""

    run_id: int
    home: Path
    protocol: ProtocolClient
    creator_server: ServerHandle
    ports: dict[int, int]
    config: object
    corpus: tuple
    rules: CreationTerms

    def drive(self, nodes: Callable[[], Iterable[NodeHandle]]) -> ClockDriver:
        """The clock driver of this run, waiting on the nodes `nodes()` lists (use as a context manager)."""
        return ClockDriver(self.protocol, self.run_id, nodes)

    def create(self, wait_for_nodes: bool = True, theta0_params: dict | None = None) -> int:
        """Create the run on-chain once every started node answers /health (so round 0 finds them warm); θ0 is the
        config's seeded init, or `theta0_params` (continued training from a checkpoint)."""
        if wait_for_nodes:
            for port in self.ports.values():
                wait_until(lambda p=port: _healthy(p), 120, f"the node on port {port} to answer /health")
        manifest_data, shards = self.corpus
        store = LocalArtifactStore(self.home / "creator" / "artifacts")
        run_id, _ = create_run(
            self.protocol, get_devnet_account(0), store, self.config, manifest_data, shards, self.rules, 10 * ETH,
            theta0_params=theta0_params,
        )  # fmt: skip
        assert run_id == self.run_id, "another run was created concurrently"
        return run_id


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


PORTS_BASE = 20_000
PORTS_PER_WORKER = 400
"""Node ports are handed out below the kernel's ephemeral range (32768+ on Linux), one block per pytest-xdist worker."""
_next_port: Iterator[int] | None = None


def _worker_index() -> int:
    """0 for a plain run, N for pytest-xdist's worker gwN (PYTEST_XDIST_WORKER)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0


def free_port() -> int:
    """A loopback port for a node this test starts, never handed to another test of this run.

    `bind(0)` then close is racy in a parallel suite: the kernel may hand the same port to another worker before the
    node binds it. Ports come from this worker's own block below the ephemeral range instead (no other worker, and no
    outgoing connection, takes them), each checked free by a bind; a port is handed out once per worker.
    INVARIANT: two workers' blocks never overlap, so two tests running at once never share a port.
    """
    global _next_port
    if _next_port is None:
        start = PORTS_BASE + _worker_index() * PORTS_PER_WORKER
        _next_port = iter(range(start, start + PORTS_PER_WORKER))
    for port in _next_port:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # held by something outside this suite: skip it
            return port
    raise RuntimeError(f"pytest worker {_worker_index()} used all {PORTS_PER_WORKER} of its ports")


def prepare_run(
    deployment: Deployment,
    corpus,
    home: Path,
    solvers: list[int],
    verifiers: list[int],
    rules: CreationTerms = FAST_RULES,
    overrides: dict | None = None,
    model: dict | None = None,
) -> RunSetup:
    """Stake the given devnet accounts, serve the creator's store, write the node home. `model` replaces the tiny
    preset's built-in GPT (a model section, e.g. examples/llama-tiny.json).

    Nodes started now wait for the run; `RunSetup.create()` then creates it, so round 0 opens
    with every node warmed up.
    """
    manifest_data, _ = corpus
    home.mkdir(parents=True, exist_ok=True)
    (home / "manifest.json").write_text(deployment.manifest_path.read_text())
    protocol = deployment.protocol
    config = build_run_config(
        preset="tiny", run_seed="0x" + os.urandom(32).hex(), dataset_root=hash_to_hex(manifest_data.root),
        overrides=overrides, model=model,
    )  # fmt: skip
    # a verifier's stake backs its run registration and, separately, its juror registration (StakeManager reserves
    # each obligation's own stake)
    for index, role, needed in [(i, ROLE_SOLVER, rules.run.solver_min_stake) for i in solvers] + [
        (i, ROLE_VERIFIER, rules.run.verifier_min_stake + JUROR_MIN_STAKE) for i in verifiers
    ]:
        account = get_devnet_account(index)
        free = protocol.free_stake_of(account.address, role)  # another test's unfinished run may hold some reserved
        if free < needed:
            protocol.deposit_stake(account, role, needed - free)
    store = LocalArtifactStore(home / "creator" / "artifacts")
    server = serve_in_thread(make_node_app("creator", get_devnet_account(0).address, store))
    ports = {i: free_port() for i in [*solvers, *verifiers]}
    urls = [server.url] + [f"http://127.0.0.1:{p}" for p in ports.values()]
    (home / "peers.txt").write_text("\n".join(urls) + "\n")
    run_id = protocol.chain.call("RunRegistry", "runCount") + 1
    return RunSetup(run_id, home, protocol, server, ports, config, corpus, rules)


DEVNET_NODE_FLAGS = ("--allow-private-peers",)
"""What every node a test starts passes: all of them serve, and announce, on this machine's 127.0.0.1."""


def start_node(setup: RunSetup, role: str, account: int, *extra: str) -> subprocess.Popen:
    """Start `gradledger solver run` or `gradledger verifier serve` as a real process (forked from the pre-loaded
    interpreter of tests/forked_nodes.py: the node's own code, without paying torch's import again)."""
    common = ["--run", str(setup.run_id), "--devnet-account", str(account), "--port", str(setup.ports[account])]
    common += DEVNET_NODE_FLAGS
    common += ["--home", str(setup.home), "--rpc-url", setup.protocol.chain.rpc_url]
    args = ["solver", "run", *common, "--no-progress"] if role == "solver" else ["verifier", "serve", *common]
    return start_gradledger([*args, *extra], setup.home / f"{role}-{account}.log")  # type: ignore[return-value]


def run_audit(setup: RunSetup, json_path: Path, *extra: str) -> dict:
    """`gradledger audit` of the run as a real process; asserts it exits 0 and returns its JSON report."""
    audit = run_gradledger(
        ["audit", "--run", str(setup.run_id), "--home", str(setup.home), "--rpc-url", setup.protocol.chain.rpc_url,
         "--json", str(json_path), *extra],
        timeout=600,
    )  # fmt: skip
    assert audit.returncode == 0, audit.stdout[-3000:] + audit.stderr[-3000:]
    return json.loads(json_path.read_text())


def run_to_the_end(
    setup: RunSetup, nodes: list[tuple[int, subprocess.Popen]], theta0_params: dict | None = None, finish_s: float = 900
) -> None:
    """Create the run once the started nodes answer /health, drive the clock until the run is finished and every
    node has exited, and stop every node whatever happens. `nodes`: (devnet account, process) of each started node."""
    processes = [process for _, process in nodes]
    try:
        setup.create(theta0_params=theta0_params)
        # the deployment's devnet is driven (tests/clock.py): its time moves only while every node is idle
        with setup.drive(lambda: [(setup.ports[account], process) for account, process in nodes]):
            wait_until(lambda: setup.protocol.round_times(setup.run_id).finished, finish_s, "the run to finish")
            wait_until(lambda: all(p.poll() is not None for p in processes), 300, "every node to exit")
    finally:
        for process in processes:
            stop(process)


def wait_until(predicate, timeout_s: float, what: str, poll_s: float = 0.25):
    """Poll `predicate` until it returns a truthy value; fail the test with `what` on timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def stop(process: subprocess.Popen) -> None:
    stop_processes([process])


def events_of(protocol: ProtocolClient, name: str, run_id: int) -> list:
    return [
        e
        for e in protocol.chain.get_events(protocol.chain.manifest.deployed_block, names=[name])
        if e.args.get("runId") == run_id
    ]


def read_log(setup: RunSetup, role: str, account: int) -> str:
    path = setup.home / f"{role}-{account}.log"
    return path.read_text(errors="replace") if path.exists() else ""


def dump(obj) -> str:
    return json.dumps(obj, default=str)
