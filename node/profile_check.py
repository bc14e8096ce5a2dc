"""The self-check every solver and verifier runs at start, and `gradledger profile check` runs for an operator.

It reads back what the pins did (protocol/adapters/execution_env.py), trains the profile's golden segments at the
node's thread count (protocol/goldens.py) and compares their hashes with the committed ones. The answer decides how
the node may judge: a machine that reproduces gives exact verdicts; one that does not never gives an exact fail and
judges mismatches by the run's tolerances instead (protocol/verdict.py). A solver on such a machine is warned that
reproducing verifiers will fail its work. The result is cached per machine and setting
(protocol/adapters/goldens.py), so only the first node a machine starts pays the few seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from node.logs import log_event
from protocol.adapters.execution_env import read_execution_environment
from protocol.adapters.goldens import (
    compute_cache_key,
    compute_code_fingerprint,
    get_goldens_path,
    get_installed_version,
    load_goldens,
    read_cached_check,
    write_cached_check,
)
from protocol.execution_pins import ExecutionEnvironment, explain_environment_mismatch
from protocol.goldens import (
    GOLDEN_SEGMENTS,
    GoldenSegment,
    build_golden_dataset,
    compute_golden_hash,
    decide_reproduction,
)
from protocol.hashing import hash_to_hex
from protocol.profile import set_deterministic_algorithms

SegmentTrainer = Callable[[GoldenSegment], str]
"""Trains one golden segment and returns its state hash (0x-hex); the default trains it in this process."""


@dataclass(frozen=True)
class ReproductionReport:
    """Whether this machine reproduces a profile's goldens, and the evidence."""

    profile: str
    reproduces: bool
    reason: str
    threads: int
    environment: ExecutionEnvironment
    computed: dict[str, str] = field(default_factory=dict)
    expected: dict[str, str] = field(default_factory=dict)
    goldens_file: str = ""
    cached: bool = False

    def as_dict(self) -> dict[str, Any]:
        """For `--json`, /health and the cache."""
        return {
            "profile": self.profile,
            "reproduces": self.reproduces,
            "reason": self.reason,
            "threads": self.threads,
            "environment": self.environment.as_dict(),
            "segments": {
                name: {"expected": self.expected.get(name), "computed": got, "match": self.expected.get(name) == got}
                for name, got in self.computed.items()
            },
            "goldens_file": self.goldens_file,
            "cached": self.cached,
        }

    @property
    def verdicts(self) -> str:
        """How a node on this machine judges replays."""
        return "exact" if self.reproduces else "tolerance"


def check_reproduction(
    profile: str,
    threads: int,
    *,
    goldens_path: Path | None = None,
    use_cache: bool = True,
    train_segment: SegmentTrainer | None = None,
    deterministic: bool = True,
) -> ReproductionReport:
    """Train the goldens of `profile` here (or take the cached answer for this very setting) and compare."""
    torch.set_num_threads(threads)
    set_deterministic_algorithms(deterministic)
    environment = read_execution_environment()
    goldens = load_goldens(profile, goldens_path)
    where = str(get_goldens_path(goldens_path))
    key = compute_cache_key(
        {
            "profile": profile,
            "goldens": goldens.segments if goldens else None,
            "environment": environment.as_dict(),
            "threads": threads,
            "deterministic": deterministic,
            "transformers": get_installed_version("transformers"),
            "code": compute_code_fingerprint(),
            "trainer": "process" if train_segment is None else "custom",
        }
    )
    if use_cache and train_segment is None and (cached := read_cached_check(key)) is not None:
        computed = dict(cached.get("computed", {}))
    else:
        computed = _train_goldens(profile, train_segment) if goldens is not None else {}
        if train_segment is None:
            write_cached_check(key, {"computed": computed})
        cached = None
    reproduces, reason = decide_reproduction(goldens, computed, explain_environment_mismatch(profile, environment))
    return ReproductionReport(
        profile, reproduces, reason, threads, environment, computed,
        dict(goldens.segments) if goldens else {}, where, cached is not None,
    )  # fmt: skip


def _train_goldens(profile: str, train_segment: SegmentTrainer | None) -> dict[str, str]:
    dataset = build_golden_dataset()
    trainer = train_segment or (lambda golden: hash_to_hex(compute_golden_hash(golden, dataset, profile)))
    return {golden.name: trainer(golden) for golden in GOLDEN_SEGMENTS}


def log_reproduction(log: logging.Logger, report: ReproductionReport, role: str) -> None:
    """Say at start how this node will judge, and why (a WARNING when the machine does not reproduce)."""
    env = report.environment
    fields: dict[str, Any] = {
        "profile": report.profile,
        "reproduces": report.reproduces,
        "verdicts": report.verdicts,
        "why": report.reason,
        "aten": env.aten_capability,
        "mkl": env.mkl_mode,
        "cpu": f"{env.cpu_vendor} {env.cpu_model}",
        "threads": report.threads,
    }
    if report.reproduces:
        log_event(log, "execution profile reproduced", **fields)
        return
    consequence = {
        "solver": "reproducing verifiers will fail this node's commitments and its stake is at risk; run "
        "`gradledger profile check` and fix the machine before committing",
        "verifier": "this node never attests an exact fail: a replay that differs is judged by the run's tolerances",
    }.get(role, "this node judges replays that differ by the run's tolerances, never by an exact mismatch")
    log_event(log, "execution profile NOT reproduced", level=logging.WARNING, consequence=consequence, **fields)
