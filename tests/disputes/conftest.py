"""Fixtures of the dispute scenarios: a fresh anvil + deployment per test, node processes, assertions.

The juror registry is global to a deployment, so every scenario gets its own chain: jurors of an
earlier scenario (whose services are gone) would otherwise sit in later pools and break quorums.
Deploying is six transactions on a fresh anvil (the contracts are built once per session).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import pytest
from eth_account import Account
from eth_account.signers.local import LocalAccount

from devnet.deploy import build_contracts
from devnet.lifecycle import stop_processes
from protocol import bls
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.keys import get_devnet_account
from protocol.constants import JUROR_MIN_STAKE
from protocol.hashing import keccak256
from protocol.jury import derive_juror_key
from protocol.ledger import compute_ledger
from protocol.types import ROLE_VERIFIER
from tests.chain_fixtures import DEVNET_NODE_FLAGS, Deployment, RunSetup, driven_deployment, free_port, wait_until
from tests.forked_nodes import start_gradledger


@pytest.fixture(scope="session")
def contracts_out():
    return build_contracts()


@pytest.fixture
def fresh_deployment(contracts_out, tmp_path) -> Iterator[Deployment]:
    with driven_deployment(contracts_out, tmp_path) as deployed:
        yield deployed


@dataclass
class Node:
    label: str
    account: int
    process: subprocess.Popen


def start(
    setup: RunSetup, label: str, command: list[str], account: int, *extra: str, env: dict[str, str] | None = None
) -> Node:
    """Start a node process (`solver run`, `verifier serve`, `whistleblower watch`) through the CLI; `env` replaces
    the test process's environment."""
    if account not in setup.ports:
        setup.ports[account] = free_port()
    args = [*command, "--run", str(setup.run_id), "--devnet-account", str(account)]
    args += ["--port", str(setup.ports[account]), "--home", str(setup.home), "--rpc-url", setup.protocol.chain.rpc_url]
    args += DEVNET_NODE_FLAGS
    process = start_gradledger([*args, *extra], setup.home / f"{label}.log", env=env)  # tests/forked_nodes.py
    return Node(label, account, process)  # type: ignore[arg-type]


def handles(setup: RunSetup, nodes: list[Node]) -> list[tuple[int, subprocess.Popen]]:
    """(port, process) of every node, for the ClockDriver (it skips nodes that exited)."""
    return [(setup.ports[node.account], node.process) for node in nodes]


def wait_for_exits(nodes: list[Node], labels: Iterable[str], what: str, timeout_s: float = 300) -> dict[str, int]:
    """Wait until the nodes named `labels` exited by themselves (`--exit-when-done`); their exit codes."""
    chosen = [n for n in nodes if n.label in set(labels)]
    wait_until(lambda: all(n.process.poll() is not None for n in chosen), timeout_s, what)
    return {n.label: n.process.returncode for n in chosen}


@contextmanager
def nodes_running(setup: RunSetup, nodes: list[Node]) -> Iterator[None]:
    """Stop every node on the way out; a failed wait or assertion inside carries every node's log."""
    try:
        yield
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{logs(setup, nodes)}") from None
    finally:
        stop_all(nodes)


def stop_all(nodes: list[Node]) -> None:
    stop_processes(node.process for node in nodes)


def logs(setup: RunSetup, nodes: list[Node]) -> str:
    """Every node's log, for assertion messages."""
    parts = []
    for node in nodes:
        path = setup.home / f"{node.label}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        parts.append(f"===== {node.label}\n{text[-6000:]}")
    return "\n".join(parts)


def address(account: int) -> str:
    return get_devnet_account(account).address


def all_events(protocol: ProtocolClient) -> list:
    chain = protocol.chain
    for r in range(1, chain.call("RunRegistry", "runCount") + 1):
        chain.add_contract(f"RunShares#{r}", protocol.share_token(r), chain.manifest.contracts["RunShares"].abi)
    return chain.get_events(chain.manifest.deployed_block)


def assert_balance_matches_events(protocol: ProtocolClient) -> None:
    """The contracts' ETH balance equals what the events say they hold (protocol/ledger.py)."""
    chain = protocol.chain
    events = all_events(protocol)
    contracts = [rec.address for name, rec in chain.manifest.contracts.items() if name != "RunShares"]
    tokens = [protocol.share_token(r) for r in range(1, chain.call("RunRegistry", "runCount") + 1)]
    balance = sum(chain.get_balance(a) for a in [*contracts, *tokens])
    assert balance == compute_ledger(events).implied_balance


def register_and_leave_sybils(protocol: ProtocolClient, count: int) -> list[LocalAccount]:
    """`count` fresh staked accounts (funded by devnet account 0) that register as jurors and leave again.

    In an append-only registry they would leave `count` dead entries that juries drawn there could not use
    (issue 16, finding 2); in JurorRegistry they leave nothing behind.
    """
    funder = get_devnet_account(0)
    sybils = [Account.from_key(keccak256(f"sybil juror {i}".encode())) for i in range(count)]
    for sybil in sybils:
        protocol.chain.transfer(funder, sybil.address, JUROR_MIN_STAKE + 10**17)  # the stake and the gas
        protocol.deposit_stake(sybil, ROLE_VERIFIER, JUROR_MIN_STAKE)
        registration = bls.compute_juror_registration(derive_juror_key(bytes(sybil.key)), sybil.address)
        protocol.register_juror(sybil, registration.public_key_g1, registration.proof_of_possession_g2)
    for sybil in sybils:
        protocol.deregister_juror(sybil)
    return sybils


def slashed(events: list) -> dict[tuple[str, int], int]:
    """(account, role) -> wei taken by slashes."""
    out: dict[tuple[str, int], int] = {}
    for e in events:
        if e.name == "StakeSlashed":
            key = (e.args["account"], e.args["role"])
            out[key] = out.get(key, 0) + e.args["taken"]
    return out


def healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def run_until_paid(setup: RunSetup, nodes: list[Node], paid: int) -> str:
    """Create the run, drive its clock until it finishes and account `paid` holds shares, stop every node, and return
    the nodes' logs (which are also the failure message when the run does not get there)."""
    protocol, run_id = setup.protocol, setup.run_id
    try:
        setup.create()
        with setup.drive(lambda: handles(setup, nodes)):
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
            wait_until(lambda: protocol.shares_of(run_id, address(paid)) > 0, 300, f"account {paid}'s shares")
    except AssertionError:
        raise AssertionError(logs(setup, nodes)) from None
    finally:
        stop_all(nodes)
    return logs(setup, nodes)
