"""Prometheus metrics of a verifier service (one registry per service instance)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class VerifierMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.replays = Counter("gradledger_replays_total", "segments replayed", registry=self.registry)
        self.attestations = Counter(
            "gradledger_attestations_total", "attestations sent, by result", ["result"], registry=self.registry
        )
        self.replay_seconds = Histogram(
            "gradledger_replay_seconds", "wall time of one segment replay", registry=self.registry
        )
        self.skips = Counter(
            "gradledger_skips_total", "seats or disputes skipped after an unexpected error", registry=self.registry
        )
        self.block = Gauge("gradledger_chain_block", "latest chain block seen", registry=self.registry)
