"""Interleaved timing and the spread of a ratio: what a benchmark ratio needs to survive a busy machine.

Why (issue 38): `bench/lsh.py --quick` read 0.10, 1.29 and 5.67 on three runs when each side was timed in its own
block (all A, then all B): a burst of load from another job lands on one side only and the ratio carries it in full.
Timed in turns instead (A B, then B A, ...), both sides of each pair see the same machine, so each pair's ratio is
one fair sample; the median of those samples is the figure, and their spread (min, quartiles, max) says how far
to trust it. A bench reports both; a single number without its spread is what misled before.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Spread:
    """Five-number summary of repeated samples (quartiles by the inclusive method: exact at the ends)."""

    min: float
    q1: float
    median: float
    q3: float
    max: float
    n: int

    def as_json(self, digits: int = 4) -> dict[str, float | int]:
        """Rounded, for a bench's JSON line."""
        return {k: (v if isinstance(v, int) else round(v, digits)) for k, v in asdict(self).items()}


def compute_spread(samples: Sequence[float]) -> Spread:
    """The five-number summary of `samples` (at least one)."""
    if not samples:
        raise ValueError("no samples: nothing to summarize")
    values = sorted(samples)
    if len(values) == 1:
        q1 = q3 = values[0]
    else:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return Spread(values[0], q1, statistics.median(values), q3, values[-1], len(values))


def time_interleaved(
    candidates: dict[str, Callable[[], object]],
    reps: int,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Seconds of each candidate per repetition, timed in turns: round i runs them in order, round i+1 in reverse
    (A B, B A, A B, ...), so neither always runs right after the other (a cache or a turbo state one leaves behind
    would otherwise favour the same side every time). `warmup` untimed rounds first (allocations, lazy inits).

    `clock`: wall time by default; `time.thread_time` for work done on the calling thread alone (one torch thread),
    which counts only the time this thread ran: a busy machine that deschedules it cannot stretch the figure."""
    if reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    names = list(candidates)
    for _ in range(warmup):
        for name in names:
            candidates[name]()
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(reps):
        for name in names if rep % 2 == 0 else reversed(names):
            start = clock()
            candidates[name]()
            seconds[name].append(clock() - start)
    return seconds


def compute_paired_ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """numerator_i / denominator_i for each interleaved pair (same length, no zero denominator)."""
    if len(numerators) != len(denominators):
        raise ValueError(f"unpaired samples: {len(numerators)} vs {len(denominators)}")
    return [n / d for n, d in zip(numerators, denominators, strict=True)]
