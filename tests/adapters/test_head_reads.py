"""Reads at the head answered once per head (protocol/adapters/head_reads.py): what a cached answer may be, and on a
real anvil that a node's client reads its own writes and others' at the next head while asking the chain less."""

from __future__ import annotations

import copy
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.head_reads import HeadReads
from protocol.adapters.keys import get_devnet_account
from protocol.types import ROLE_SOLVER
from tests.chain_fixtures import wait_until

HASH_A, HASH_B = b"\xaa" * 32, b"\xbb" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def counting(value):
    calls = []

    def fetch():
        calls.append(1)
        return value

    return fetch, calls


def test_read_same_head_fetches_once_succeeds():
    reads = HeadReads(clock=Clock())
    reads.note_block(7, HASH_A)
    fetch, calls = counting(42)
    assert [reads.read("k", 7, fetch) for _ in range(5)] == [42] * 5
    assert len(calls) == 1


@pytest.mark.parametrize(
    "move",
    [
        lambda r: r.note_number(8),  # a live block number shows a new head
        lambda r: r.note_block(7, HASH_B),  # a reorg replaced the head at the same height
        lambda r: r.note_block(8, HASH_B),
        lambda r: r.forget(),  # this client sent a transaction or called a devnet control
    ],
)
def test_read_after_the_head_moved_fetches_again_succeeds(move):
    reads = HeadReads(clock=Clock())
    reads.note_block(7, HASH_A)
    fetch, calls = counting(1)
    reads.read("k", 7, fetch)
    move(reads)
    head = reads.get_head()
    reads.read("k", head if head is not None else 7, fetch)
    assert len(calls) == 2


def test_get_head_older_than_max_age_is_none_succeeds():
    clock = Clock()
    reads = HeadReads(max_age_s=1.0, clock=clock)
    assert reads.get_head() is None
    reads.note_block(7, HASH_A)
    clock.now = 1.0
    assert reads.get_head() == 7
    clock.now = 1.01
    assert reads.get_head() is None
    reads.note_block(7, HASH_A)  # seen again: fresh, answers kept
    assert reads.get_head() == 7


def test_note_number_same_head_keeps_answers_succeeds():
    reads = HeadReads(clock=Clock())
    reads.note_block(7, HASH_A)
    fetch, calls = counting(1)
    reads.read("k", 7, fetch)
    reads.note_number(7)
    reads.read("k", 7, fetch)
    assert len(calls) == 1


def test_read_at_a_head_no_longer_current_is_not_kept_succeeds():
    reads = HeadReads(clock=Clock())
    reads.note_block(8, HASH_B)
    fetch, calls = counting(1)
    reads.read("k", 7, fetch)  # a reader that looked at the head before it moved
    reads.read("k", 7, fetch)
    assert len(calls) == 2


@given(st.lists(st.integers(), max_size=5), st.dictionaries(st.text(max_size=3), st.integers(), max_size=3))
def test_read_answers_edited_by_a_caller_do_not_change_the_next_succeeds(items, mapping):
    reads = HeadReads(clock=Clock())
    reads.note_block(1, HASH_A)
    for key, value in (("list", items), ("dict", mapping), ("tuple", (list(items), 1))):
        expected = copy.deepcopy(value)
        first = reads.read(key, 1, lambda value=value: value)
        if isinstance(first, list):
            first.append("edited")
        elif isinstance(first, dict):
            first["edited"] = 1
        else:
            first[0].append("edited")
        assert reads.read(key, 1, lambda: None) == expected


def test_read_unhashable_key_fetches_every_time_succeeds():
    reads = HeadReads(clock=Clock())
    reads.note_block(1, HASH_A)
    fetch, calls = counting(3)
    reads.read(("call", [1, 2]), 1, fetch)
    reads.read(("call", [1, 2]), 1, fetch)
    assert len(calls) == 2


def test_node_client_reads_its_own_and_others_writes_with_fewer_calls_succeeds(deployment):
    """Inside a tick's scope a client sees its own deposit at once and another client's at the next scope or head,
    and answers repeated reads at one head without a new eth_call; outside any scope every read is live."""
    node = ProtocolClient(ChainClient(deployment.anvil.rpc_url, deployment.protocol.chain.manifest))
    other = deployment.protocol
    mine, theirs = get_devnet_account(17), get_devnet_account(18)
    with node.chain.head_reads.scope():
        before = node.bonded_of(mine.address, ROLE_SOLVER)
        calls = node.chain.provider.requests["eth_call"]
        for _ in range(5):
            assert node.bonded_of(mine.address, ROLE_SOLVER) == before
        assert node.chain.provider.requests["eth_call"] == calls, "the same read at one head asked the chain again"

        node.deposit_stake(mine, ROLE_SOLVER, 10**18)
        assert node.bonded_of(mine.address, ROLE_SOLVER) == before + 10**18, "a node must read its own write"

        theirs_before = node.bonded_of(theirs.address, ROLE_SOLVER)
        other.deposit_stake(theirs, ROLE_SOLVER, 10**18)  # through another client: a new block
        wait_until(lambda: node.bonded_of(theirs.address, ROLE_SOLVER) > theirs_before, 30, "the new head in a scope")

    other.deposit_stake(theirs, ROLE_SOLVER, 10**18)
    assert node.bonded_of(theirs.address, ROLE_SOLVER) == theirs_before + 2 * 10**18, "outside a scope: live"
    with node.chain.head_reads.scope():  # a new scope (the next tick) reads the head live first
        assert node.bonded_of(theirs.address, ROLE_SOLVER) == theirs_before + 2 * 10**18
        other.deposit_stake(theirs, ROLE_SOLVER, 10**18)
    with node.chain.head_reads.scope():
        assert node.bonded_of(theirs.address, ROLE_SOLVER) == theirs_before + 3 * 10**18


def test_scope_is_per_thread_succeeds():
    reads = HeadReads()
    seen = []
    with reads.scope():
        worker = threading.Thread(target=lambda: seen.append(reads.is_active()))
        worker.start()
        worker.join()
        assert reads.is_active()
    assert seen == [False] and not reads.is_active()


def test_block_number_in_a_scope_is_the_ticks_head_and_moves_with_own_writes_succeeds(deployment):
    """A tick asks for the head once (with its hash), not once per `block_number()`; its own transaction moves it."""
    node = ProtocolClient(ChainClient(deployment.anvil.rpc_url, deployment.protocol.chain.manifest))
    mine = get_devnet_account(17)
    with node.chain.head_reads.scope():
        head = node.chain.block_number()
        sent = node.chain.provider.total_requests
        assert [node.chain.block_number() for _ in range(5)] == [head] * 5
        assert node.chain.provider.total_requests == sent, "the head was asked for again inside one tick"
        node.deposit_stake(mine, ROLE_SOLVER, 10**18)
        assert node.chain.block_number() > head, "a node must see the block of its own transaction"
    deployment.protocol.deposit_stake(mine, ROLE_SOLVER, 10**18)  # another client's block
    assert node.chain.block_number() > head + 1, "outside a scope the head is read live"


def test_read_at_a_head_a_reorg_removed_is_read_again_live_succeeds(deployment):
    """A tick remembers the head's number; if the chain reorganises to a shorter one meanwhile, a read at that number
    finds no block (anvil: BlockOutOfRange). The client forgets the head and reads live instead of failing the read."""
    node = ProtocolClient(ChainClient(deployment.anvil.rpc_url, deployment.protocol.chain.manifest))
    node.chain.head_reads = HeadReads(max_age_s=3600)  # the head stays trusted: only the reorg can move it
    driver = deployment.protocol.chain
    snapshot = driver.provider.make_request("evm_snapshot", [])["result"]
    driver.mine_blocks(3)
    with node.chain.head_reads.scope():
        node.bonded_of(get_devnet_account(17).address, ROLE_SOLVER)  # the head is remembered here
        assert driver.provider.make_request("evm_revert", [snapshot])["result"] is True  # 3 blocks shorter
        assert node.bonded_of(get_devnet_account(18).address, ROLE_SOLVER) >= 0
        assert node.chain.block_number() == driver.block_number(), "the vanished head is still answered"
