"""A node's loop does not repeat a tick that changed nothing while nothing it reads can have changed (node/bootstrap.py
`RunNode.run`): the same head block, the same chain second and no node-state write. A new block, a state write (a vote
received over HTTP) or `idle_recheck_s` passing runs the tick again. On a real anvil whose clock stands still between
blocks (tests/clock.py), so only those three can wake it."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from node.bootstrap import IDLE_WAIT_MAX_S, REAL_TIME_SLACK_S, RunNode, compute_idle_wait_s
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import load_manifest
from tests.chain_fixtures import wait_until


class CountingNode(RunNode):
    """A node whose tick changes nothing and counts itself; no run to load, no goldens to train."""

    role_dir = "counting"
    tick_interval_s = 0.0  # paced like a solver: only the idle poll sleeps
    idle_poll_s = 0.02
    idle_recheck_s = 3600.0

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.ticks = 0

    def prewarm_self_check(self) -> None:
        pass

    def start(self) -> bool:
        return True

    def load(self):  # type: ignore[override]
        return SimpleNamespace(created_block=self.chain.manifest.deployed_block)

    def tick(self) -> bool:
        self.ticks += 1
        return False


def _running(deployment, tmp_path, **overrides) -> tuple[CountingNode, threading.Event, threading.Thread]:
    manifest = load_manifest(deployment.manifest_path)
    node = CountingNode(1, tmp_path, get_devnet_account(19), deployment.anvil.rpc_url, manifest)
    for name, value in overrides.items():
        setattr(node, name, value)
    stop = threading.Event()
    thread = threading.Thread(target=node.run, args=(stop,), daemon=True)
    thread.start()
    return node, stop, thread


def test_idle_tick_is_skipped_until_a_block_or_a_state_write_succeeds(deployment, tmp_path):
    node, stop, thread = _running(deployment, tmp_path)
    try:
        started = time.monotonic()
        wait_until(lambda: node.ticks == 1 and node.idle_skips >= 20, 60, "the node to skip its idle tick 20 times")
        assert node.idle_skips <= (time.monotonic() - started) / node.idle_poll_s + 1, "a skipping loop must sleep"
        assert node.ticks == 1, "an idle tick ran again with the same head, chain second and node state"
        assert node.get_activity()["idle"], "a skipping node still reports itself idle (the clock driver reads it)"

        deployment.protocol.chain.mine()  # another party's block
        wait_until(lambda: node.ticks == 2, 60, "a tick at the new head")

        node.state.put("vote", "received", {"over": "http"})  # a write another thread made
        wait_until(lambda: node.ticks == 3, 60, "a tick after the state write")
        skips = node.idle_skips
        wait_until(lambda: node.idle_skips >= skips + 20, 60, "the node to skip again")
        assert node.ticks == 3
    finally:
        stop.set()
        thread.join(timeout=30)


def test_idle_tick_runs_again_after_the_recheck_interval_succeeds(deployment, tmp_path):
    node, stop, thread = _running(deployment, tmp_path, idle_recheck_s=0.2)
    try:
        wait_until(lambda: node.ticks >= 3, 60, "idle ticks rechecked with no new block")
        assert node.idle_skips > 0
    finally:
        stop.set()
        thread.join(timeout=30)


def test_compute_idle_wait_s_paces_a_real_time_chain_by_its_blocks_and_a_driven_one_by_the_poll():
    # a 1-second chain in real time: the next read one block after the head was first seen, whole blocks on
    assert compute_idle_wait_s(0.0, 1.0, 0.3, 0.5) == pytest.approx(0.7)
    assert compute_idle_wait_s(4.0, 1.0, 1.25, 0.5) == pytest.approx(0.75)  # a devnet a few seconds ahead: the same
    # a 12-second chain: every IDLE_WAIT_MAX_S, so a deadline is seen at most that late
    assert compute_idle_wait_s(-3.0, 12.0, 0.5, 0.5) == pytest.approx(IDLE_WAIT_MAX_S - 0.5)
    # the tests' driven devnet (2096) and time travel: blocks come when someone mines, read every idle_poll_s
    assert compute_idle_wait_s(70 * 365 * 86_400.0, 1.0, 0.3, 0.5) == 0.5
    assert compute_idle_wait_s(-(2 + REAL_TIME_SLACK_S + 1), 1.0, 0.3, 0.5) == 0.5
    # never below the poll interval
    assert compute_idle_wait_s(0.0, 0.2, 0.1, 0.5) == pytest.approx(0.4)
