"""Sending transactions for the chain client: nonces, fees, signing once, waiting, and reverts decoded.

Why a module of its own: this is the part of protocol/adapters/chain.py that moves money, and its rules are the
ones a reorg, a lost reply or a second process on the same account attack:
- nonce management per account: the chain's pending count unless another send of the account is under way in this
  process (a counter that ran ahead of a reorg would sign a nonce with a gap);
- a signed transaction is re-sent byte for byte, so a retry can never send a second, different transaction (and one
  the node already holds is waited for, not replaced);
- fees under the operator's cap (EIP-1559, or legacy gasPrice where the chain has no base fee);
- done once as deep as the policy's confirmations (a reorg that drops it meanwhile gets the same bytes back).

`TransactionSender` is a mixin of `ChainClient`, which provides the web3 connection, retries, the policy and the
ABI decoding it declares below.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from eth_account.signers.local import LocalAccount
from eth_utils import keccak, to_checksum_address
from hexbytes import HexBytes
from web3.exceptions import ContractLogicError, TransactionNotFound, Web3RPCError
from web3.types import BlockIdentifier, TxParams

from protocol.adapters.chain_errors import ChainError, ContractRevertError, TxResult
from protocol.adapters.finality import ConfirmationError, wait_for_confirmations, wait_for_receipt
from protocol.fees import compute_eip1559_fees, compute_legacy_fees, compute_next_base_fee

if TYPE_CHECKING:
    from web3 import Web3
    from web3.contract import Contract

    from protocol.adapters.chain_connection import ChainConnection
    from protocol.adapters.finality import ChainPolicy
    from protocol.adapters.head_reads import HeadReads
    from protocol.history.events import ChainEvent

T = TypeVar("T")

SENT_KEPT = 64
"""Signed transactions a client keeps per account, so that those a reorg drops can be sent again as they were."""


class TransactionSender:
    """Estimate, sign once, send, wait for receipt and confirmations; mixed into `ChainClient`."""

    if TYPE_CHECKING:  # provided by ChainClient
        w3: Web3
        chain_id: int
        policy: ChainPolicy
        confirmations: int
        head_reads: HeadReads

        def _retry(self, fn: Callable[[], T], *, what: str) -> T: ...
        def _revert_from(self, exc: Exception, context: str) -> ContractRevertError: ...
        def _decode_receipt_events(self, receipt: Any) -> list[ChainEvent]: ...
        def contract(self, name: str) -> Contract: ...
        def get_block(self, block: BlockIdentifier = "latest") -> Any: ...

    def _init_sender(self) -> None:
        self._nonces: dict[str, int] = {}
        self._nonce_lock = threading.Lock()
        self._in_flight: dict[str, int] = {}  # sends of each account under way in this process
        self._sent: dict[str, dict[int, bytes]] = {}  # the last signed transactions of each account, by nonce

    def forget_nonces(self) -> None:
        """Resync every nonce counter from the chain at the next send (after an outage or a reorg)."""
        with self._nonce_lock:
            self._nonces.clear()

    def _next_nonce(self, address: str) -> int:
        """The next nonce: the chain's pending count unless another send of this account is under way here.

        Asking the chain whenever this process sends alone keeps a counter that ran ahead of the chain (a reorg
        dropped transactions it counted) from signing a nonce with a gap, stuck in the pool and mined later."""
        with self._nonce_lock:
            if address not in self._nonces or self._in_flight.get(address, 0) <= 1:
                self._nonces[address] = self._retry(
                    lambda: self.w3.eth.get_transaction_count(to_checksum_address(address), "pending"),
                    what="eth_getTransactionCount",
                )
            nonce = self._nonces[address]
            self._nonces[address] = nonce + 1
            return nonce

    def sent_transactions(self, address: str) -> dict[int, bytes]:
        """The last SENT_KEPT transactions this client signed for `address`, by nonce (re-sent after a reorg)."""
        with self._nonce_lock:
            return dict(self._sent.get(address, {}))

    def _note_sent(self, address: str, nonce: int, raw: bytes) -> None:
        with self._nonce_lock:
            sent = self._sent.setdefault(address, {})
            sent[nonce] = raw
            for old in sorted(sent)[:-SENT_KEPT]:
                del sent[old]

    def _forget_nonce(self, address: str) -> None:
        with self._nonce_lock:
            self._nonces.pop(address, None)

    def send(
        self,
        account: LocalAccount,
        contract: str,
        function: str,
        *args: Any,
        value: int = 0,
        gas: int | None = None,
    ) -> TxResult:
        """Estimate, sign, send and wait; reverts (at estimation or mined) become ContractRevertError."""
        fn = getattr(self.contract(contract).functions, function)(*args)
        return self._transact(account, fn.build_transaction, f"{contract}.{function}", value, gas)

    def deploy(self, account: LocalAccount, abi: list[dict[str, Any]], bytecode: str, *args: Any) -> TxResult:
        """Deploy a contract; the new address is `result.contract_address`."""
        factory = self.w3.eth.contract(abi=abi, bytecode=bytecode)
        return self._transact(account, factory.constructor(*args).build_transaction, "deploy", 0, None)

    def _transact(
        self, account: LocalAccount, build: Callable[[dict], dict], context: str, value: int, gas: int | None
    ) -> TxResult:
        """Send and wait, counted as a send under way of the account (see `_next_nonce`).

        The head's reads are forgotten once a transaction was sent, not when nothing was: a call refused at estimation
        (a revert a node expects, e.g. a registration that is already there) or above the fee cap moved no chain, and
        forgetting then made the rest of the tick read the head and everything at it again (issue 39)."""
        with self._nonce_lock:
            self._in_flight[account.address] = self._in_flight.get(account.address, 0) + 1
        try:
            address = account.address
            base = {"from": address, "value": value, "chainId": self.chain_id, **self._fees()}
            if gas is None:
                gas = self._estimate_gas(build, base, context)
            try:
                return self._transact_once(account, build, context, base, gas)
            finally:
                self.head_reads.forget()  # INVARIANT: a node reads its own writes (protocol/adapters/head_reads.py)
        finally:
            with self._nonce_lock:
                self._in_flight[account.address] -= 1

    def _estimate_gas(self, build: Callable[[dict], dict], base: dict, context: str) -> int:
        """The gas limit to send with: the estimate plus a margin; a revert at estimation is ContractRevertError."""
        # Estimate against the pending block: its timestamp is "now", while the latest block's may be
        # minutes old on a quiet chain, and window checks depend on block.timestamp.
        draft = {k: v for k, v in build({**base, "gas": 30_000_000}).items() if k not in ("gas", "nonce")}
        try:
            estimate = self._retry(
                lambda: self.w3.eth.estimate_gas(cast(TxParams, draft), "pending"), what=f"estimate {context}"
            )
        except (ContractLogicError, Web3RPCError) as exc:
            raise self._revert_from(exc, context) from None
        return estimate * 12 // 10 + 10_000

    def _transact_once(
        self, account: LocalAccount, build: Callable[[dict], dict], context: str, base: dict, gas: int
    ) -> TxResult:
        address = account.address
        for _attempt in range(3):
            nonce = self._next_nonce(address)
            tx = build({**base, "gas": gas, "nonce": nonce})
            raw = account.sign_transaction(tx).raw_transaction
            try:
                tx_hash = self._send_raw(raw, context)
                self._note_sent(address, nonce, raw)
                break
            except Web3RPCError as exc:
                message = str(exc).lower()
                known = self._find_sent(raw)
                if known is not None:  # a re-send after a lost reply: the chain holds these very bytes, wait for them
                    tx_hash = known
                    break
                if "nonce" in message or "already known" in message or "replacement" in message:
                    self._forget_nonce(address)  # another process used this account; resync
                    continue
                raise self._revert_from(exc, context) from None
        else:
            raise ChainError(f"{context}: could not find a free nonce for {address} after 3 attempts")
        connection = cast("ChainConnection", self)  # a mixin of ChainClient, which is one
        try:
            receipt = wait_for_receipt(connection, tx_hash, tx, raw, context)
        except ConfirmationError:
            self._forget_nonce(address)
            raise
        if receipt["status"] == 1 and self.confirmations > 0:
            receipt = wait_for_confirmations(connection, receipt, raw, tx, context, self.confirmations)
        if receipt["status"] != 1:
            raise self._mined_revert(tx, receipt, context)
        return TxResult(
            transaction_hash=receipt["transactionHash"].to_0x_hex(),
            block_number=receipt["blockNumber"],
            gas_used=receipt["gasUsed"],
            events=tuple(self._decode_receipt_events(receipt)),
            contract_address=receipt.get("contractAddress"),
        )

    def _send_raw(self, raw: bytes, context: str) -> HexBytes:
        return self._retry(lambda: self.w3.eth.send_raw_transaction(raw), what=f"send {context}")

    def _find_sent(self, raw: bytes) -> HexBytes | None:
        """The hash of `raw` if the chain already holds that transaction (pending or mined), else None.

        A send whose reply was lost (the RPC went away mid-request) is re-sent byte for byte, and the chain then
        answers "already known" or "nonce too low": signing a new transaction then would act twice."""
        tx_hash = HexBytes(keccak(raw))
        try:
            self._retry(lambda: self.w3.eth.get_transaction(tx_hash), what="eth_getTransactionByHash")
        except TransactionNotFound:
            return None
        return tx_hash

    def _fees(self) -> dict[str, int]:
        """EIP-1559 fees: twice the next block's base fee plus the policy's tip, under its cap (protocol/fees.py);
        a chain whose blocks have no base fee is paid its gasPrice, under the same cap. Above the cap nothing is
        sent: FeeCapExceededError names the cap and the base fee."""
        latest = self.get_block("latest")
        cap, tip = self.policy.max_fee_wei, self.policy.priority_fee_wei
        if latest.get("baseFeePerGas") is None:
            return compute_legacy_fees(
                self._retry(lambda: self.w3.eth.gas_price, what="eth_gasPrice"), cap
            ).to_tx_fields()
        next_base = compute_next_base_fee(int(latest["baseFeePerGas"]), int(latest["gasUsed"]), int(latest["gasLimit"]))
        return compute_eip1559_fees(next_base, tip, cap).to_tx_fields()

    def _mined_revert(self, tx: dict, receipt: Any, context: str) -> ContractRevertError:
        call = {k: tx[k] for k in ("from", "to", "value", "data") if k in tx}
        try:
            self.w3.eth.call(cast(TxParams, call), block_identifier=receipt["blockNumber"] - 1)
        except (ContractLogicError, Web3RPCError) as exc:
            return self._revert_from(exc, context)
        return ContractRevertError(
            "Revert", {}, f"{context} reverted on-chain (tx {receipt['transactionHash'].to_0x_hex()})"
        )

    def transfer(self, account: LocalAccount, to: str, value: int) -> TxResult:
        """Plain ETH transfer (devnet funding)."""
        recipient = to_checksum_address(to)
        return self._transact(
            account, lambda base: {**base, "to": recipient}, f"transfer to {recipient}", value, 21_000
        )
