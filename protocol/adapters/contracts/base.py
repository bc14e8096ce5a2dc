"""The root of every typed contract call: the one chain client they all go through.

Each contract family is a mixin over `ContractCalls` (runs.py, verification.py, disputes.py, shares.py, plants.py);
`protocol.adapters.contracts.client.ProtocolClient` combines them, so a role holds one object with one method per
contract function, and none of them builds ABI tuples by hand.
"""

from __future__ import annotations

from protocol.adapters.chain import ChainClient


class ContractCalls:
    """Holds the chain client every family's calls and transactions go through."""

    def __init__(self, chain: ChainClient) -> None:
        self.chain = chain
