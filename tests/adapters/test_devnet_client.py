"""Devnet shortcuts key on the client, not the chain id (issue 39): a node on another EVM client serving chain id
31337 (Hardhat's node) never calls anvil's controls, and a refused devnet call names the client.

The other client is played by a real HTTP JSON-RPC server in front of a real anvil that answers `web3_clientVersion`
as Hardhat does and refuses every `anvil_*` method with Hardhat's error (-32004 "Method ... is not supported"), passing
everything else through: the client code under test speaks to it over HTTP exactly as to any RPC.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import httpx
import pytest

from devnet.anvil import AnvilProcess
from node.opening import reach_past_block
from protocol.adapters.chain import ChainClient
from protocol.adapters.devnet_controls import is_anvil_version
from protocol.adapters.finality import DevnetOnlyError
from tests.loopback_server import LoopbackServer

HARDHAT_VERSION = "HardhatNetwork/2.22.19/@ethereumjs/vm/5.9.3"


class HardhatLike(LoopbackServer):
    """A JSON-RPC endpoint that says it is Hardhat and refuses anvil's methods; records every method it was asked."""

    def __init__(self, upstream: str) -> None:
        self.methods: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.methods.append(request["method"])
                if request["method"] == "web3_clientVersion":
                    reply = {"jsonrpc": "2.0", "id": request["id"], "result": HARDHAT_VERSION}
                elif request["method"].startswith("anvil_"):
                    message = f"Method {request['method']} is not supported"
                    reply = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32004, "message": message}}
                else:
                    reply = httpx.post(upstream, json=request, timeout=30).json()
                body = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.start(Handler)


@pytest.fixture(scope="module")
def anvil() -> Iterator[AnvilProcess]:
    with AnvilProcess() as process:  # chain id 31337, automining
        yield process


@pytest.fixture
def hardhat(anvil) -> Iterator[HardhatLike]:
    shim = HardhatLike(anvil.rpc_url)
    yield shim
    shim.close()


def test_is_anvil_devnet_on_anvil_succeeds(anvil):
    client = ChainClient(anvil.rpc_url)
    assert is_anvil_version(client.client_version) and client.is_anvil_devnet()
    before = client.block_number()
    assert reach_past_block(client, before + 2) and client.block_number() == before + 3  # mined here on anvil


def test_devnet_calls_on_another_client_with_the_devnet_chain_id_are_refused_naming_it(hardhat):
    client = ChainClient(hardhat.url)
    assert client.chain_id == 31337 and not client.is_anvil_devnet()
    before = client.block_number()
    for call in (lambda: client.mine_blocks(3), lambda: client.mine(), lambda: client.is_automining()):
        with pytest.raises(DevnetOnlyError, match=r"anvil devnet call .* runs HardhatNetwork/2\.22\.19"):
            call()
    assert client.block_number() == before
    assert not [m for m in hardhat.methods if m.startswith(("anvil_", "evm_"))], "nothing devnet-only was sent"


def test_a_node_waiting_for_a_block_on_another_client_waits_instead_of_mining(hardhat):
    # issue 39: on Hardhat the nodes called anvil_mine, the error was dropped and the seed block never came
    client = ChainClient(hardhat.url)
    target = client.block_number() + 2
    assert reach_past_block(client, target) is False  # the chain brings its own blocks: wait
    assert not [m for m in hardhat.methods if m.startswith(("anvil_", "evm_"))]
    assert hardhat.methods.count("web3_clientVersion") == 1  # asked once per client


def test_client_version_is_read_once_per_client(anvil):
    client = ChainClient(anvil.rpc_url)
    for _ in range(5):
        client.is_anvil_devnet()
        client.mine()
    assert client.provider.requests["web3_clientVersion"] == 1 and client.provider.requests["evm_mine"] == 5
