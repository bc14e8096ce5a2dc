"""A node's RPC budget per new block (issue 39, item 6): storage reads kept across a block without a deployment log
(protocol/adapters/quiet_blocks.py), a tick's events read once per head and by range (protocol/adapters/event_memo.py),
on a real anvil and against the Bloom filter's definition."""

from __future__ import annotations

from eth_utils import keccak, to_canonical_address

from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.head_reads import HeadReads
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.quiet_blocks import STORAGE_VIEWS, bloom_may_contain, is_quiet_block, is_storage_read
from protocol.types import ROLE_SOLVER

HASH_A, HASH_B, HASH_C = b"\xaa" * 32, b"\xbb" * 32, b"\xcc" * 32
STORED = ("call", "RunRegistry", "roundTimes", (1,))
TIMED = ("call", "Plants", "isChallengeBlocked", (1, 0, "0x" + "11" * 20))


def _bloom_of(*items: bytes) -> bytes:
    """A logs Bloom filter holding `items`, built the Yellow Paper's way (independently of bloom_may_contain)."""
    bits = 0
    for item in items:
        digest = keccak(item)
        for i in (0, 2, 4):
            bits |= 1 << (((digest[i] << 8) | digest[i + 1]) & 2047)
    return bits.to_bytes(256, "big")


def test_bloom_holds_what_was_put_in_and_misses_the_rest_succeeds():
    inside = [to_canonical_address("0x" + f"{i:040x}") for i in range(1, 6)]
    bloom = _bloom_of(*inside)
    assert all(bloom_may_contain(bloom, item) for item in inside)
    outside = [to_canonical_address("0x" + f"{i:040x}") for i in range(100, 140)]
    assert sum(bloom_may_contain(bloom, item) for item in outside) <= 1, "a 5-item bloom matched most of 40 others"
    assert not bloom_may_contain(bytes(256), inside[0])
    assert bloom_may_contain(b"\x01", inside[0]), "a filter of another size is not trusted to say no"


def test_storage_read_answers_outlive_a_quiet_child_block_only_succeeds():
    assert is_storage_read(STORED) and not is_storage_read(TIMED) and not is_storage_read(("block",))
    assert ("Plants", "isChallengeBlocked") not in STORAGE_VIEWS, "a view that reads block.timestamp"

    def primed() -> HeadReads:
        reads = HeadReads(max_age_s=3600)
        reads.note_block(7, HASH_A)
        for key in (STORED, TIMED, ("block",)):
            reads.read(key, 7, lambda key=key: f"old {key}")
        return reads

    reads = primed()
    reads.note_block(8, HASH_B, HASH_A, is_storage_read)  # the quiet child of the head read at
    assert reads.read(STORED, 8, lambda: "new") == f"old {STORED}"
    assert reads.read(TIMED, 8, lambda: "new") == "new", "a time-dependent view is read again"
    assert reads.read(("block", 7), 8, lambda: "new") == "old ('block',)", "the old head is the block of its number"
    assert reads.read(("block",), 8, lambda: "new") == "new"
    for moved in (
        lambda r: r.note_block(8, HASH_B, HASH_C, is_storage_read),  # not the child: a reorg
        lambda r: r.note_block(9, HASH_B, HASH_A, is_storage_read),  # a block skipped: its logs unseen
        lambda r: r.note_block(8, HASH_B, HASH_A),  # the block holds a deployment log
    ):
        reads = primed()
        moved(reads)
        assert reads.read(STORED, 8, lambda: "new") == "new"


def test_an_idle_tick_at_a_block_without_deployment_logs_asks_only_for_the_head_succeeds(deployment):
    """On anvil: a block the bench mines empty keeps a tick's storage reads and events (one request: the head), a block
    holding a deployment event reads them again and sees the change; every answer equals a live read's."""
    manifest = deployment.protocol.chain.manifest
    node = ProtocolClient(ChainClient(deployment.anvil.rpc_url, manifest))
    driver, account = deployment.protocol, get_devnet_account(16)
    from_block = driver.chain.block_number()

    def tick() -> tuple[object, list, int]:
        with node.chain.head_reads.scope():
            before = node.chain.provider.total_requests
            node.chain.get_block("latest")  # the tick's head read (RunNode.observe)
            credits = node.credits_of("Verification", account.address)
            events = node.chain.get_events(from_block, names=["StakeDeposited"])
            return credits, events, node.chain.provider.total_requests - before

    tick()
    driver.chain.mine()  # nobody's transaction: no log
    block = driver.chain.get_block("latest")
    assert is_quiet_block(block, [manifest.contracts[name].address for name in manifest.contracts])
    credits, events, asked = tick()
    assert asked == 1, f"an idle tick at a quiet block asked {asked} requests, not just the head"
    assert credits == driver.credits_of("Verification", account.address)
    assert events == driver.chain.get_events(from_block, names=["StakeDeposited"])

    driver.deposit_stake(account, ROLE_SOLVER, 10**18)  # a StakeManager event
    block = driver.chain.get_block("latest")
    assert not is_quiet_block(block, [manifest.contracts["StakeManager"].address])
    _, events, asked = tick()
    assert asked > 1, "a block with a deployment log must be read again"
    assert events == driver.chain.get_events(from_block, names=["StakeDeposited"])
    assert events and events[-1].block_number == block["number"], "the new event is seen at the next tick"
