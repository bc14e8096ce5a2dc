"""A run across separate hosts (devnet/multihost.py): chain, object store, two solvers, a verifier and a
whistleblower each in its own network namespace with its own address on a virtual bridge, two rounds to settlement.

The chain's clock is driven (tests/clock.py) through the nodes' announced addresses, so windows close when every
node is idle. Where network namespaces cannot be made (not root, no iproute2) the test fails and says why: a run
across hosts that was never exercised must not look like one that passed."""

from __future__ import annotations

import pytest

from devnet.hosts import HostsUnavailableError, VirtualHosts
from devnet.multihost import ACCOUNTS, HOSTS, NODE_PORT, run_across_hosts
from protocol.adapters.keys import get_devnet_account
from tests.clock import DRIVEN_GENESIS, ClockDriver, make_driven

pytestmark = pytest.mark.e2e


def _drive(protocol, run_id, nodes):
    make_driven(protocol)
    return ClockDriver(protocol, run_id, nodes)


def test_two_rounds_settle_with_every_party_on_its_own_host(tmp_path):
    try:
        with VirtualHosts(["probe"]):
            pass
    except HostsUnavailableError as exc:
        pytest.fail(f"network namespaces are unavailable here, so the multi-host run cannot be tested: {exc}")
    summary = run_across_hosts(
        tmp_path, rounds=2, anvil_args=("--timestamp", str(DRIVEN_GENESIS)), drive=_drive, log=lambda _m: None
    )
    assert summary["rounds_settled"] == 2
    solvers = {get_devnet_account(ACCOUNTS[h]).address for h in ("solver-1", "solver-2")}
    assert sorted(summary["commitments"]) == sorted((r, s) for r in (0, 1) for s in solvers)
    assert summary["passes"] == 4 and summary["fails"] == 0
    for host in ("solver-1", "solver-2", "verifier"):
        assert summary["shares"][host] > 0, (host, summary)
    # every node announced the address of its own host, none a loopback one
    addresses = summary["addresses"]
    for host in ("store", "solver-1", "solver-2", "verifier", "whistleblower"):
        account = get_devnet_account(ACCOUNTS[host]).address
        assert summary["announced"][account] == f"http://{addresses[host]}:{NODE_PORT}", (host, summary["announced"])
    assert len(set(addresses.values())) == len(HOSTS)
    # the solvers kept their checkpoints in the object store on the store host
    assert summary["objects"].get("solver-1", 0) > 0 and summary["objects"].get("solver-2", 0) > 0, summary["objects"]
