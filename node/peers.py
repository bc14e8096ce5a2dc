"""Finding peers from the chain: nodes announce where they serve, and read where the run's participants serve.

Every node serves its artifact store (and its role's API) over HTTP. Instead of a hand-written list of URLs, a node
announces its URL in the PeerDirectory contract from its own account (one transaction, only when the URL changed)
and learns the URLs of the accounts that take part in its run: the run's creator (who serves the config, dataset
and θ0), the solvers that joined, the verifiers registered for it and the registered jurors. `peers.txt` and
`--peer` still add URLs (an override for networks where announced URLs are not reachable).

Why this is safe to trust: artifacts are content-addressed (every fetched byte is checked against its hash), jury
votes are signed, and only staked participants' URLs are used, so a false or dead URL costs a retry, never a
wrong result; and an account's own announcement wins over any peer's self-declared `/identity`, so no peer can
stand in for another account (PeerSet.url_of; docs/nodes.md, Finding peers). What a URL can do is name a host:
unless the node runs with `--allow-private-peers` (devnets), a URL another account announced at a loopback,
link-local, private or other non-public address, or at a name resolving to one, is refused and never fetched from
(protocol/peer_hosts.py, protocol/adapters/peer_guard.py; issue 36, finding 10).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from urllib.parse import urlparse

from eth_account.signers.local import LocalAccount

from node.logs import log_event
from protocol.adapters.chain_errors import ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.http import PeerSet
from protocol.errors import ConfigError

PEER_REFRESH_S = 5.0
"""How often a node re-reads the run's participants and their URLs: a node that starts late is found within it."""
MAX_URL_BYTES = 256
"""PeerDirectory.MAX_URL_BYTES (tests/node/test_peers.py checks them equal on a real chain)."""


def verify_public_url(url: str) -> str:
    """The URL a node announces: http(s), a host, at most MAX_URL_BYTES; a clear error otherwise."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"--public-url {url!r} must be an http(s):// URL with a host, e.g. http://10.0.0.5:8601")
    if parsed.hostname in ("0.0.0.0", "::"):
        raise ConfigError(f"{url} listens on every interface; pass --public-url with an address peers can reach")
    if len(url.encode()) > MAX_URL_BYTES:
        raise ConfigError(f"--public-url is {len(url.encode())} bytes; PeerDirectory accepts at most {MAX_URL_BYTES}")
    return url.rstrip("/")


DIRECTORY_REFUSALS = ("UnsupportedScheme", "MalformedHost", "PrivateHost")
"""PeerDirectory's errors for a URL a public directory does not take (contracts/src/libraries/PeerHosts.sol)."""


def announce_url(protocol: ProtocolClient, account: LocalAccount, url: str, log: logging.Logger) -> bool:
    """Announce `url` for `account` unless the directory already holds it (restarts send no transaction).

    A public directory refuses loopback, private and other non-public hosts: ConfigError saying to pass
    --public-url with an address other nodes reach."""
    if protocol.peer_url_of(account.address) == url:
        return False
    try:
        result = protocol.announce_peer(account, url)
    except ContractRevertError as exc:
        if exc.error not in DIRECTORY_REFUSALS:
            raise
        raise ConfigError(
            f"PeerDirectory refuses to announce {url} ({exc.error}): this chain's directory takes only http(s) URLs "
            "with a public host; pass --public-url with the public address or name other nodes reach this node at"
        ) from exc
    log_event(log, "url announced", url=url, tx=result.transaction_hash)
    return True


def get_peer_urls(protocol: ProtocolClient, accounts: tuple[str, ...], own: str) -> dict[str, str]:
    """The announced URLs of `accounts` other than `own` (account -> URL, in order; accounts without one left out)."""
    urls = {a: protocol.peer_url_of(a).rstrip("/") for a in accounts if a.lower() != own.lower()}
    return {a: u for a, u in urls.items() if u}


class PeerDiscovery:
    """Keeps a node's PeerSet current with the URLs its run's participants announced, every PEER_REFRESH_S.

    Participants are read incrementally (a block cursor), their URLs every refresh (one may re-announce).
    """

    def __init__(
        self, protocol: ProtocolClient, peers: PeerSet, run_id: int, own: str, log: logging.Logger,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self.protocol, self.peers, self.run_id, self.own, self.log, self.clock = (
            protocol, peers, run_id, own, log, clock,
        )  # fmt: skip
        self.next_at = 0.0
        self.accounts: dict[str, None] = {}
        self.scanned: int | None = None  # last block whose participants are known

    def refresh(self, from_block: int | None, force: bool = False) -> None:
        """Add the participants' URLs (the creator's alone while the run's first block is unknown)."""
        if not force and self.clock() < self.next_at:
            return
        self.next_at = self.clock() + PEER_REFRESH_S
        if from_block is None:
            self.accounts.update(dict.fromkeys([self.protocol.creator_of(self.run_id)]))
        else:
            latest = self.protocol.chain.block_number()
            start = from_block if self.scanned is None else self.scanned + 1
            if start <= latest:
                self.accounts.update(dict.fromkeys(self.protocol.run_participants(self.run_id, start, latest)))
                self.scanned = latest
        announced = get_peer_urls(self.protocol, tuple(self.accounts), self.own)
        known = set(self.peers.urls)
        for account, url in announced.items():
            self.peers.set_announced(account, url)  # a refused URL is reported once and never becomes a peer
        new = [u for u in dict.fromkeys(announced.values()) if u in self.peers.urls and u not in known]
        if new:
            log_event(self.log, "peers found", count=len(new), urls=",".join(new))
