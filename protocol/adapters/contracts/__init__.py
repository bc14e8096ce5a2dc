"""Typed calls into the gradledger contracts, one module per contract family, on top of the one chain client."""

from protocol.adapters.contracts.client import ProtocolClient
from protocol.adapters.contracts.runs import LEFT_MARKER

__all__ = ["LEFT_MARKER", "ProtocolClient"]
