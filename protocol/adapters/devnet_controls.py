"""anvil's time and mining controls, mixed into `ChainClient`: for tests, demos and an automining devnet only.

A devnet shortcut keys on the client, not on the chain id (issue 39): Hardhat's node also serves chain id 31337, and
nodes that took it for anvil called `anvil_mine`, which it refuses; the error was dropped, the seed block never came
and the round was voided without a word. So every call here first asks the RPC what it runs (`web3_clientVersion`,
once per client) and goes ahead only on anvil serving the devnet's chain id; an error reply raises, naming the client.
Callers that may meet another client (a node deciding whether to mine a seed block) ask `is_anvil_devnet()` and
otherwise wait for the chain to bring its own blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import requests
from web3.types import RPCEndpoint

from protocol.adapters.chain_errors import ChainError, ChainUnavailableError
from protocol.adapters.finality import require_devnet
from protocol.finality import DEVNET_CHAIN_ID

if TYPE_CHECKING:
    from web3 import Web3

    from protocol.adapters.head_reads import HeadReads

T = TypeVar("T")

MINE_CHUNK_BLOCKS = 128
"""Most empty blocks one anvil_mine call mines: 0.4-2.3 s of anvil's time at load 15 here (3-18 ms a block, more on a
longer chain), well inside the 30 s RPC timeout even when a busier machine slows anvil several-fold."""


def is_anvil_version(client_version: str) -> bool:
    """Whether a `web3_clientVersion` answer is anvil's ("anvil/v1.2.3")."""
    return client_version.lower().startswith("anvil/")


class DevnetControls:
    """Devnet-only calls of `ChainClient`; each checks the client first and its answer after."""

    if TYPE_CHECKING:  # provided by ChainClient
        w3: Web3
        chain_id: int
        rpc_url: str
        max_retries: int
        head_reads: HeadReads

        def _retry(self, fn: Callable[[], T], *, what: str) -> T: ...
        def block_number(self) -> int: ...

    _client_version: str | None = None

    @property
    def client_version(self) -> str:
        """The RPC's `web3_clientVersion` (read once: a client does not change under a URL while it answers)."""
        if self._client_version is None:
            reply = self._retry(
                lambda: self.w3.provider.make_request(RPCEndpoint("web3_clientVersion"), []), what="web3_clientVersion"
            )
            self._client_version = str(reply.get("result") or f"unknown client ({reply.get('error')})")
        return self._client_version

    def is_anvil_devnet(self) -> bool:
        """Whether this RPC is anvil serving the devnet chain id: the only place the devnet shortcuts are taken."""
        return self.chain_id == DEVNET_CHAIN_ID and is_anvil_version(self.client_version)

    def _require_anvil(self, method: str) -> None:
        require_devnet(self.chain_id, self.client_version, is_anvil_version(self.client_version), method)

    def _devnet_request(self, method: str, params: list[Any], *, retry: bool = True) -> Any:
        """An anvil-only JSON-RPC call (time and mining controls); refused on any other client or chain id. Its
        answer is checked: an error reply raises, naming the client, instead of leaving the clock or the chain
        silently where it was. `retry=False` for a call that must not run twice (a timed-out one may have landed)."""
        self._require_anvil(method)
        self.head_reads.forget()  # it may mine or move time: nothing read at the old head stands

        def request() -> Any:
            return self.w3.provider.make_request(RPCEndpoint(method), params)

        reply = self._retry(request, what=method) if retry else request()
        if "error" in reply:
            raise ChainError(f"{method} failed on {self.rpc_url} ({self.client_version}): {reply['error']}")
        return reply.get("result")

    def devnet_call(self, method: str, params: list[Any]) -> Any:
        """Any other anvil call (e.g. evm_snapshot / evm_revert in a demo), refused and checked as the ones below."""
        return self._devnet_request(method, params)

    def is_automining(self) -> bool:
        """Whether the devnet mines a block per transaction and otherwise none (anvil's default), as opposed to
        mining on an interval like a real chain (`anvil --block-time`) or only on request (anvil only)."""
        return bool(self._devnet_request("anvil_getAutomine", []))

    def increase_time(self, seconds: int) -> None:
        """Advance the devnet clock and mine a block (anvil only; tests and demos)."""
        self._devnet_request("evm_increaseTime", [seconds])
        self.mine()

    def mine_at(self, timestamp: int) -> None:
        """Mine one block with exactly this timestamp (anvil only; a test driving the devnet clock)."""
        self._devnet_request("evm_setNextBlockTimestamp", [int(timestamp)])
        self.mine()

    def set_block_timestamp_interval(self, seconds: int) -> None:
        """Make every later block exactly `seconds` after the previous one, whatever the wall clock says
        (anvil only): the chain's time then moves only when blocks are mined."""
        self._devnet_request("anvil_setBlockTimestampInterval", [int(seconds)])

    def mine_blocks(self, count: int, interval_s: int | None = None) -> None:
        """Mine `count` empty blocks (anvil only), `interval_s` apart (None: anvil's own rule).

        On an anvil stamping a fixed interval (a test's driven clock) the interval argument is ignored. Mined in calls
        of at most MINE_CHUNK_BLOCKS blocks, counted against the block number: one call for hundreds of blocks outlasted
        the RPC timeout on a busy machine, and a timed-out call retried would mine its blocks twice (issue 38)."""
        target = self.block_number() + count
        last, stalled = -1, 0  # timeouts in a row with no block mined in between
        while (missing := target - (head := self.block_number())) > 0:
            stalled, last = (0 if head > last else stalled), head
            chunk = min(missing, MINE_CHUNK_BLOCKS)
            params: list[Any] = [hex(chunk)] if interval_s is None else [hex(chunk), hex(interval_s)]
            try:
                self._devnet_request("anvil_mine", params, retry=False)
            except requests.exceptions.Timeout:
                # It may still land: the block number decides what is left (one that lands after that read mines
                # up to a chunk too many, which only a timeout can cause).
                stalled += 1
                if stalled > self.max_retries:
                    raise ChainUnavailableError(f"anvil_mine timed out {stalled} times on {self.rpc_url}") from None

    def mine(self, blocks: int = 1) -> None:
        for _ in range(blocks):
            self._devnet_request("evm_mine", [])
