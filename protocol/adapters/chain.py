"""The one chain client: a typed wrapper over web3.py that every role uses.

What it adds to web3.py:
- a clear error when the RPC is unreachable or serves another chain;
- retries with backoff on connection loss; an outage logged once (WARNING, naming the RPC URL and
  `gradledger devnet up`) and its end once; after it the nonce counters are resynced, since a
  restarted chain may have lost recent blocks;
- events of every manifest contract read in bounded block ranges, decoded and ordered, so a
  node can resume from the last block it saved; read to the head by default, less the confirmations
  of the chain policy (protocol/adapters/finality.py);
- a failed call's or transaction's custom error decoded from the ABIs into
  `ContractRevertError("StakeTooLow", {...})`;
- sending (protocol/adapters/transactions.py, mixed in): nonces per account, fees under the operator's
  cap, a signed transaction re-sent byte for byte and never replaced, done once as deep as the policy's
  confirmations;
- anvil's time and mining controls (protocol/adapters/devnet_controls.py, mixed in), refused on any client but anvil;
- a block's RLP-encoded header, checked against its hash, which the contracts take to prove the block's RANDAO
  value (`get_block_header_rlp`, contracts/src/BlockRandomness.sol).
Contract-specific calls live in `protocol/adapters/contracts.py` on top of this.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar, cast

import requests
from eth_abi import decode as abi_decode
from eth_typing import ABIError, ChecksumAddress
from eth_utils import function_abi_to_4byte_selector, to_checksum_address
from hexbytes import HexBytes
from web3.contract import Contract
from web3.exceptions import (
    BlockNotFound,
    ContractCustomError,
    ContractLogicError,
    ContractPanicError,
    ProviderConnectionError,
    Web3RPCError,
)
from web3.types import BlockIdentifier, FilterParams, LogReceipt

from protocol.adapters.block_headers import encode_block_header
from protocol.adapters.chain_errors import ChainError as ChainError
from protocol.adapters.chain_errors import ChainUnavailableError as ChainUnavailableError
from protocol.adapters.chain_errors import ContractRevertError as ContractRevertError
from protocol.adapters.chain_errors import HeadGoneError, is_unknown_block
from protocol.adapters.chain_errors import TxResult as TxResult
from protocol.adapters.chain_errors import UnknownHeaderLayoutError as UnknownHeaderLayoutError
from protocol.adapters.chain_errors import WrongChainError as WrongChainError
from protocol.adapters.devnet_controls import DevnetControls
from protocol.adapters.event_memo import EventMemo
from protocol.adapters.finality import ChainPolicy, get_default_chain_policy
from protocol.adapters.head_reads import HeadReads
from protocol.adapters.manifest import DeploymentManifest
from protocol.adapters.quiet_blocks import is_quiet_block, is_storage_read
from protocol.adapters.rpc_provider import connect_web3
from protocol.adapters.transactions import TransactionSender
from protocol.hashing import keccak256
from protocol.history.events import ChainEvent

T = TypeVar("T")

logger = logging.getLogger("gradledger.chain")


def name_abi_values(params: list[dict[str, Any]], values: Any) -> dict[str, Any]:
    """Pair ABI parameters with decoded values by name (structs inside structs become dicts too)."""
    if isinstance(values, dict):
        return dict(values)
    seq = list(values)
    if len(seq) != len(params):
        raise ChainError(f"expected {len(params)} values ({[p['name'] for p in params]}), got {len(seq)}")
    named: dict[str, Any] = {}
    for param, value in zip(params, seq, strict=True):
        if not param.get("name"):
            raise ChainError(f"an ABI output of type {param.get('type')} has no name; name it in the contract")
        components = param.get("components")
        named[param["name"]] = name_abi_values(components, value) if components and param["type"] == "tuple" else value
    return named


def _is_kept_across_quiet_block(key: Hashable) -> bool:
    """A storage read (quiet_blocks.STORAGE_VIEWS) or a block by number: both hold at the quiet head's child."""
    return is_storage_read(key) or (isinstance(key, tuple) and len(key) == 2 and key[0] == "block")


_CONNECTION_ERRORS = (
    requests.exceptions.ConnectionError,
    requests.exceptions.Timeout,
    ProviderConnectionError,
    ConnectionError,
)


class ChainClient(DevnetControls, TransactionSender):
    """Read from and write to the contracts of one deployment (or bare RPC before deploy); sending is
    `TransactionSender`'s (protocol/adapters/transactions.py)."""

    def __init__(
        self,
        rpc_url: str,
        manifest: DeploymentManifest | None = None,
        *,
        expected_chain_id: int | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 6,
        policy: ChainPolicy | None = None,
    ) -> None:
        self.rpc_url = rpc_url
        self.manifest = manifest
        self.max_retries = max_retries
        self.w3, self.provider = connect_web3(rpc_url, timeout_s)  # counted, no per-call eth_chainId (rpc_provider.py)
        self._outage_since: float | None = None  # monotonic time the RPC was first found unreachable
        self._outage_lock = threading.Lock()
        self._init_sender()
        self.head_reads = HeadReads()  # "latest" read once per head inside a node's tick (head_reads.py)
        self.event_memo = EventMemo(self)  # a tick's events read once per head, by range (event_memo.py)
        self.chain_id = self._retry(lambda: self.w3.eth.chain_id, what="eth_chainId")
        self.policy = policy if policy is not None else get_default_chain_policy()
        self.confirmations = self.policy.get_confirmations(self.chain_id)
        wanted = expected_chain_id if expected_chain_id is not None else (manifest.chain_id if manifest else None)
        if wanted is not None and self.chain_id != wanted:
            raise WrongChainError(
                f"RPC {rpc_url} serves chain id {self.chain_id}, expected {wanted}: wrong endpoint or manifest"
            )
        if manifest is not None and manifest.deployed_block_hash is not None:
            self._verify_deployment_chain(manifest)
        self._contracts: dict[str, Contract] = {}
        self._errors: dict[bytes, tuple[str, list[dict[str, Any]]]] = {}
        self._events: dict[tuple[str, bytes], tuple[str, Any]] = {}
        if manifest is not None:
            for name, record in manifest.contracts.items():
                self._register(name, record.address, record.abi)

    def _verify_deployment_chain(self, manifest: DeploymentManifest) -> None:
        """Refuse an RPC whose block at the deployment is not the manifest's (issue 39: a node pointed at a second
        devnet with the same chain id and addresses staked there). One read, before anything is sent."""
        try:
            found = self._retry(lambda: self.w3.eth.get_block(manifest.deployed_block), what="eth_getBlockByNumber")
            got = found["hash"].to_0x_hex()
        except BlockNotFound:
            got = "no block"
        if got.lower() != str(manifest.deployed_block_hash).lower():
            raise WrongChainError(
                f"RPC {self.rpc_url} serves chain id {self.chain_id} but its block {manifest.deployed_block} is {got}, "
                f"not the deployment's {manifest.deployed_block_hash}: another chain (a second devnet, or one "
                "restarted from scratch). Point --rpc-url at the chain the manifest describes, or deploy again there"
            )

    # -- plumbing ------------------------------------------------------------------------

    def _register(self, name: str, address: str, abi: list[dict[str, Any]]) -> None:
        contract = self.w3.eth.contract(address=to_checksum_address(address), abi=abi)
        self._contracts[name] = contract
        for item in abi:
            if item.get("type") == "error":
                selector = function_abi_to_4byte_selector(cast(ABIError, item))
                self._errors[selector] = (item["name"], item.get("inputs", []))
            elif item.get("type") == "event" and not item.get("anonymous"):
                event = contract.events[item["name"]]()
                self._events[(contract.address.lower(), bytes(HexBytes(event.topic)))] = (name, event)

    def _retry(self, fn: Callable[[], T], *, what: str) -> T:
        delay = 0.2
        for attempt in range(self.max_retries + 1):
            try:
                result = fn()
            except _CONNECTION_ERRORS as exc:
                self._note_outage(what, exc)
                if attempt == self.max_retries:
                    raise ChainUnavailableError(
                        f"cannot reach the chain RPC at {self.rpc_url} ({what}: {type(exc).__name__}); is the node "
                        "running? Start the devnet with `gradledger devnet up` or pass the right --rpc-url"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
            else:
                if self._outage_since is not None:
                    self._note_recovery()
                return result
        raise AssertionError("unreachable")

    def _note_outage(self, what: str, exc: BaseException) -> None:
        """Log the first failure of an outage, once: a node retries every call while the chain is down (a devnet
        being restarted), and a line per retry buried the one that says what to do."""
        with self._outage_lock:
            if self._outage_since is not None:
                return
            self._outage_since = time.monotonic()
        logger.warning(
            "chain RPC unreachable, retrying until it is back",
            extra={"fields": {
                "rpc_url": self.rpc_url, "call": what, "error": type(exc).__name__,
                "why": f"nothing answers at {self.rpc_url} (in time); if it is the local devnet, run "
                "`gradledger devnet up` (it restarts on the same port and chain), else check --rpc-url",
            }},
        )  # fmt: skip

    def _note_recovery(self) -> None:
        """The chain answers again: say so once, and resync every nonce from it (a devnet killed rather than
        stopped may come back without its last blocks, and a stale counter would leave transactions stuck)."""
        with self._outage_lock:
            since, self._outage_since = self._outage_since, None
        if since is None:
            return
        self.forget_nonces()
        logger.info(
            "chain RPC reachable again",
            extra={"fields": {"rpc_url": self.rpc_url, "down_s": round(time.monotonic() - since, 1)}},
        )

    @property
    def deployment(self) -> DeploymentManifest:
        """The deployment manifest this client was opened with (ChainError when it was opened without one)."""
        if self.manifest is None:
            raise ChainError(f"the chain client for {self.rpc_url} has no deployment manifest; pass one")
        return self.manifest

    def has_contract(self, name: str) -> bool:
        return name in self._contracts

    def contract_names(self) -> list[str]:
        """The names of every registered contract: the manifest's, and those added since (share tokens)."""
        return list(self._contracts)

    def add_contract(self, name: str, address: str, abi: list[dict[str, Any]]) -> None:
        """Track another contract's events and errors (e.g. a run's share token)."""
        self._register(name, address, abi)

    def contract(self, name: str) -> Contract:
        try:
            return self._contracts[name]
        except KeyError:
            raise ChainError(
                f"contract {name!r} is not in the deployment manifest ({sorted(self._contracts)})"
            ) from None

    def decode_revert(self, data: Any, context: str) -> ContractRevertError:
        """Turn revert data into a ContractRevertError naming the custom error and its args."""
        raw = bytes(HexBytes(data)) if data else b""
        if len(raw) >= 4 and raw[:4] in self._errors:
            name, inputs = self._errors[raw[:4]]
            values = abi_decode([i["type"] for i in inputs], raw[4:]) if inputs else ()
            args = {i["name"] or f"arg{n}": v for n, (i, v) in enumerate(zip(inputs, values, strict=True))}
            shown = ", ".join(f"{k}={v.hex() if isinstance(v, bytes) else v}" for k, v in args.items())
            return ContractRevertError(name, args, f"{context} reverted with {name}({shown})")
        return ContractRevertError("Unknown", {"data": raw.hex()}, f"{context} reverted (data 0x{raw.hex()})")

    def _revert_from(self, exc: Exception, context: str) -> ContractRevertError:
        if isinstance(exc, ContractCustomError):
            return self.decode_revert(exc.data, context)
        if isinstance(exc, ContractPanicError):
            return ContractRevertError("Panic", {}, f"{context} panicked: {exc}")
        if isinstance(exc, ContractLogicError):
            if exc.data and isinstance(exc.data, str) and exc.data.startswith("0x") and len(exc.data) >= 10:
                return self.decode_revert(exc.data, context)
            return ContractRevertError("Revert", {}, f"{context} reverted: {exc}")
        return ContractRevertError("Revert", {}, f"{context} failed: {exc}")

    # -- reads ---------------------------------------------------------------------------

    def call(self, contract: str, function: str, *args: Any, block: BlockIdentifier = "latest") -> Any:
        """Call a view function; reverts become ContractRevertError. At "latest" the call is made at the head and
        answered again from memory while the head stands (`HeadReads`)."""

        def read(at: BlockIdentifier) -> Any:
            fn = getattr(self.contract(contract).functions, function)(*args)  # ABI matching: only when asked live
            try:
                return self._retry(lambda: fn.call(block_identifier=at), what=f"{contract}.{function}")
            except (ContractLogicError, Web3RPCError) as exc:
                if block == "latest" and isinstance(at, int) and is_unknown_block(exc):
                    raise HeadGoneError from None
                raise self._revert_from(exc, f"{contract}.{function}") from None

        if block != "latest" or not self.head_reads.is_active():
            return read(block)
        head = self._get_head()
        try:
            return self.head_reads.read(("call", contract, function, args), head, lambda: read(head))
        except HeadGoneError:
            # the head this tick read at is no longer on the chain (a reorg to a shorter chain, within HEAD_MAX_AGE_S)
            self.note_reorg()
            return read("latest")

    def _get_head(self) -> int:
        """The head's number: the one seen within HEAD_MAX_AGE_S, else the latest block read live (and kept)."""
        head = self.head_reads.get_head()
        if head is not None:
            return head
        block = self._retry(lambda: self.w3.eth.get_block("latest"), what="eth_getBlockByNumber")
        number = int(block["number"])
        # a block without a log of any contract this client knows keeps the storage reads (quiet_blocks.py)
        quiet = is_quiet_block(block, [c.address for c in self._contracts.values()])
        keep = _is_kept_across_quiet_block if quiet and self._contracts else None
        self.head_reads.note_block(number, bytes(block["hash"]), bytes(block.get("parentHash", b"")), keep)
        return self.head_reads.read(("block",), number, lambda: block)["number"]

    def call_fields(
        self, contract: str, function: str, *args: Any, block: BlockIdentifier = "latest"
    ) -> dict[str, Any]:
        """Call a view function and name its results from the ABI: {Solidity output or field name: value}.

        A single struct output is opened into its fields, so callers decode by name, never by position.
        """
        outputs = self._function_outputs(contract, function)
        raw = self.call(contract, function, *args, block=block)
        if len(outputs) == 1 and outputs[0].get("components"):
            return name_abi_values(outputs[0]["components"], raw)
        return name_abi_values(outputs, raw if len(outputs) > 1 else (raw,))

    def _function_outputs(self, contract: str, function: str) -> list[dict[str, Any]]:
        abi: list[dict[str, Any]] = [dict(item) for item in self.contract(contract).abi]
        matches = [f for f in abi if f.get("type") == "function" and f.get("name") == function]
        if len(matches) != 1:
            raise ChainError(f"{contract}.{function}: {len(matches)} functions of that name in the ABI, expected 1")
        return list(matches[0].get("outputs", []))

    def block_number(self) -> int:
        """The head's number: inside a node's tick (`HeadReads.scope()`) the head that tick saw, read once per
        HEAD_MAX_AGE_S and again after every own transaction or devnet call; elsewhere read live (a new one drops what
        was read at the old head)."""
        if self.head_reads.is_active():
            return self._get_head()
        head = int(self._retry(lambda: self.w3.eth.block_number, what="eth_blockNumber"))
        self.head_reads.note_number(head)
        return head

    def final_block_number(self) -> int:
        """The highest block `confirmations` deep: what event readers treat as final (-1 before there is one)."""
        return self.block_number() - self.confirmations

    def note_reorg(self) -> None:
        """A reorg was seen: forget the nonce counters (transactions they counted may be gone) and the head's reads."""
        self.forget_nonces()
        self.head_reads.forget()

    def get_block(self, block: BlockIdentifier = "latest") -> Any:
        """A block; "latest" is the head's block, read once per head (`HeadReads`). Inside a node's tick a block by
        number at or below the head is read once per head too, and the head's own number is the head's block already
        read: a tick's event readers each checked the same blocks' hashes (the last block read, still canonical? the
        new last one) and read them two or three times per new block (issue 39). A reorg that replaces any of them
        shows as another head hash, which drops every answer (`HeadReads.note_block`)."""
        number = block if isinstance(block, int) else None
        if not self.head_reads.is_active() or (block != "latest" and number is None):
            return self._retry(lambda: self.w3.eth.get_block(block), what="eth_getBlockByNumber")
        head = self._get_head()
        if number is None or number == head:
            return self.head_reads.read(("block",), head, lambda: self._read_block(head))
        if number > head:
            return self._read_block(number)
        return self.head_reads.read(("block", number), head, lambda: self._read_block(number))

    def _read_block(self, number: int) -> Any:
        return self._retry(lambda: self.w3.eth.get_block(number), what="eth_getBlockByNumber")

    def get_block_header_rlp(self, block_number: int) -> bytes:
        """Block `block_number`'s RLP-encoded header, which Verification.drawSeed (and Plants) take to prove the
        block's RANDAO value against blockhash (contracts/src/BlockRandomness.sol). Checked here, against the hash the
        node serves, so a layout this client does not know fails with its reason instead of an on-chain
        HeaderMismatch after paying for the transaction.
        """
        try:
            block = self.get_block(block_number)
        except BlockNotFound:
            raise ChainError(
                f"block {block_number} is not available from {self.rpc_url}: not mined yet, or pruned by the node"
            ) from None
        header = encode_block_header(block)
        expected = bytes(HexBytes(block["hash"]))
        if keccak256(header) != expected:
            raise UnknownHeaderLayoutError(
                f"block {block_number}'s header fields, RLP-encoded in the order this client knows ({len(header)} "
                f"bytes), hash to 0x{keccak256(header).hex()}, not the block hash 0x{expected.hex()}: the node at "
                f"{self.rpc_url} serves a header layout (fork or client) this client does not know, so the seed "
                "block's RANDAO value cannot be proven; upgrade gradledger (protocol/adapters/chain.py, "
                "OPTIONAL_HEADER_FIELDS) or use a client whose headers it knows"
            )
        return header

    def get_block_timestamps(self, numbers: Iterable[int], *, batch: int = 200) -> dict[int, int]:
        """Block number -> timestamp for many blocks, in JSON-RPC batches of `batch` requests."""
        wanted = sorted(set(numbers))
        out: dict[int, int] = {}
        for start in range(0, len(wanted), batch):
            part = wanted[start : start + batch]

            def fetch(part: list[int] = part) -> list[Any]:
                with self.w3.batch_requests() as requests_:
                    for number in part:
                        requests_.add(self.w3.eth.get_block(number))
                    return requests_.execute()

            blocks = self._retry(fetch, what="eth_getBlockByNumber (batch)")
            for number, block in zip(part, blocks, strict=True):
                if isinstance(block, Exception) or block is None:
                    raise ChainError(f"block {number} is not available from {self.rpc_url}: {block}")
                out[number] = int(block["timestamp"])
        return out

    def get_balance(self, address: str, block: BlockIdentifier = "latest") -> int:
        return self._retry(
            lambda: self.w3.eth.get_balance(to_checksum_address(address), block_identifier=block),
            what="eth_getBalance",
        )

    def get_events(
        self,
        from_block: int,
        to_block: int | None = None,
        *,
        chunk: int = 2000,
        names: Iterable[str] | None = None,
        contracts: Iterable[str] | None = None,
    ) -> list[ChainEvent]:
        """Decoded events of every manifest contract in [from_block, to_block], in chain order.

        `names` keeps only those events; `contracts` reads only those registered contracts. Without `to_block`,
        up to the final block (`final_block_number`: the head less the policy's confirmations). Inside a node's tick
        the answer comes from one shared log read once per head, by range (protocol/adapters/event_memo.py).
        """
        if self.head_reads.is_active() and not self.event_memo.is_reading():
            memo = self.event_memo.events(from_block, to_block, names, contracts)
            if memo is not None:
                return memo
        last = self.final_block_number() if to_block is None else to_block
        wanted = set(names) if names is not None else None
        sources = self._contracts if contracts is None else {n: self.contract(n) for n in contracts}
        addresses = [c.address for c in sources.values()]
        if not addresses:
            return []
        events: list[ChainEvent] = []
        start = from_block
        while start <= last:
            end = min(start + chunk - 1, last)
            logs = self._get_logs(start, end, addresses)
            events += [e for log in logs if (e := self._decode_log(log, wanted)) is not None]
            start = end + 1
        events.sort(key=lambda e: (e.block_number, e.log_index))
        return events

    def _get_logs(self, start: int, end: int, addresses: list[ChecksumAddress]) -> list[LogReceipt]:
        params: FilterParams = {"fromBlock": start, "toBlock": end, "address": addresses}
        return list(self._retry(lambda: self.w3.eth.get_logs(params), what="eth_getLogs"))

    def _decode_log(self, log: Any, names: set[str] | None = None) -> ChainEvent | None:
        """The event a log is, if it comes from a registered contract (and is one of `names`), else None."""
        key = (log["address"].lower(), bytes(log["topics"][0])) if log["topics"] else None
        if key not in self._events:
            return None
        contract_name, event = self._events[key]
        if names is not None and event.event_name not in names:
            return None
        decoded = event.process_log(log)
        return ChainEvent(
            contract=contract_name,
            name=decoded["event"],
            args=dict(decoded["args"]),
            block_number=decoded["blockNumber"],
            transaction_hash=decoded["transactionHash"].to_0x_hex(),
            log_index=decoded["logIndex"],
        )

    def _decode_receipt_events(self, receipt: Any) -> list[ChainEvent]:
        return [e for log in receipt["logs"] if (e := self._decode_log(log)) is not None]
