"""Artifact store throughput: one state of the "large" preset model through the S3 backend and the local backend.

    python bench/store.py [--quick] [--reps N] [--part-mb MB] [--server juicefs|moto]

The state is a solver checkpoint of the "large" preset (~10x the default model; PRESETS["large"] in
protocol/config.py): its parameters plus AdamW's two moments, encoded with protocol.state.encode_state (~198 MB;
the parameters alone, θ, are ~66 MB). Each repetition stores a fresh state (one parameter nudged, so it has a new
hash and nothing is skipped as already stored) with `put_state` -- the path a solver's checkpoints take -- and reads
it back with `get`, which checks its hash:

- S3: `S3ArtifactStore` against a local S3-compatible server in its own process (devnet/s3server.py): the JuiceFS
  S3 gateway (MinIO's S3 code over an in-memory volume; default) or moto (`--server moto`, what most tests use);
- local: `LocalArtifactStore` in a temporary directory (hash, write, fsync, as a node stores).

MB/s is bytes / 1e6 / seconds, the median over the repetitions. The two backends take turns (local then S3, then S3
then local, ...: bench/interleaved.py), after one untimed warm-up each, so a burst of load from another job lands
on both sides of a pair rather than on one backend's whole block; each pair gives one S3/local ratio, reported as
the median (`put_ratio`, `get_ratio`) and its spread (`*_ratio_spread`: min, quartiles, max). --quick: the same
state, fewer repetitions. Human lines go to stderr; the last stdout line is one JSON object: put_mb_s, get_mb_s
(S3), local_put_mb_s, local_get_mb_s, put_ratio, get_ratio, put_ratio_spread, get_ratio_spread, state_bytes,
part_bytes, concurrency, server.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from protocol.adapters.execution_env import pin_execution_environment

pin_execution_environment()  # before torch loads: the execution profile's kernels (docs/determinism.md)

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.interleaved import compute_paired_ratios, compute_spread
from devnet.s3server import SERVERS
from protocol.adapters.artifacts import ArtifactStore, LocalArtifactStore, put_state
from protocol.adapters.object_store import DEFAULT_CONCURRENCY, DEFAULT_PART_BYTES, S3ArtifactStore
from protocol.config import build_run_config
from protocol.outer import get_initial_global_state
from protocol.state import State, encode_state
from protocol.training import make_start_checkpoint

BUCKET = "bench"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_state() -> State:
    """A checkpoint of the large preset: parameters and both AdamW moments (what a solver stores per segment)."""
    config = build_run_config(preset="large", run_seed="0x" + "5a" * 32, dataset_root="0x" + "00" * 32)
    return make_start_checkpoint(get_initial_global_state(config))


def nudge(state: State, rep: int) -> State:
    """The same state with one value changed: a new hash, so every put uploads (nothing is skipped as stored)."""
    first = min(state)
    changed = dict(state)
    tensor = state[first].clone()
    tensor.view(-1)[0] = float(rep + 1) / 7.0
    changed[first] = tensor
    return changed


def put_and_get(store: ArtifactStore, state: State, size: int, label: str) -> tuple[float, float]:
    """(put MB/s, get MB/s) of one fresh state through `store`, read back and checked."""
    started = time.perf_counter()
    digest = put_state(store, state)
    put_s = time.perf_counter() - started
    started = time.perf_counter()
    data = store.get(digest)
    get_s = time.perf_counter() - started
    if len(data) != size:
        raise SystemExit(f"{label}: read back {len(data)} bytes, stored {size}")
    return size / 1e6 / put_s, size / 1e6 / get_s


def measure(
    stores: dict[str, ArtifactStore], state: State, reps: int, size: int
) -> dict[str, list[tuple[float, float]]]:
    """(put MB/s, get MB/s) per repetition and store, the stores taking turns (reversed every other repetition),
    after one untimed warm-up each; every put is of a state no store has seen (nothing skipped as stored)."""
    labels = list(stores)
    for i, label in enumerate(labels):
        put_and_get(stores[label], nudge(state, 10_000 + i), size, label)
    rates: dict[str, list[tuple[float, float]]] = {label: [] for label in labels}
    for rep in range(reps):
        for label in labels if rep % 2 == 0 else reversed(labels):
            fresh = nudge(state, rep + 1000 * labels.index(label))
            rates[label].append(put_and_get(stores[label], fresh, size, label))
            put, get = rates[label][-1]
            say(f"  {label} rep {rep + 1}/{reps}: put {put:7.1f} MB/s  get {get:7.1f} MB/s")
    return rates


def run_bench(reps: int, part_bytes: int, concurrency: int, server_name: str = "juicefs") -> dict[str, object]:
    torch.manual_seed(0)
    state = build_state()
    size = len(encode_state(state))
    say(f"state: large-preset checkpoint, {len(state)} tensors, {size / 1e6:.1f} MB; {reps} repetition(s)")
    with tempfile.TemporaryDirectory(prefix="gradledger-bench-store-") as tmp, SERVERS[server_name]() as server:
        os.environ.update(server.env())
        server.create_bucket(BUCKET)
        s3 = S3ArtifactStore(BUCKET, "bench", part_bytes=part_bytes, concurrency=concurrency)
        rates = measure({"local": LocalArtifactStore(Path(tmp) / "artifacts"), "s3": s3}, state, reps, size)
    (local_puts, local_gets), (s3_puts, s3_gets) = (list(zip(*rates[label], strict=True)) for label in ("local", "s3"))
    local_put, local_get = statistics.median(local_puts), statistics.median(local_gets)
    s3_put, s3_get = statistics.median(s3_puts), statistics.median(s3_gets)
    put_spread = compute_spread(compute_paired_ratios(s3_puts, local_puts))
    get_spread = compute_spread(compute_paired_ratios(s3_gets, local_gets))
    result: dict[str, object] = {
        "put_mb_s": round(s3_put, 1),
        "get_mb_s": round(s3_get, 1),
        "local_put_mb_s": round(local_put, 1),
        "local_get_mb_s": round(local_get, 1),
        "put_ratio": round(put_spread.median, 3),
        "get_ratio": round(get_spread.median, 3),
        "put_ratio_spread": put_spread.as_json(3),
        "get_ratio_spread": get_spread.as_json(3),
        "state_bytes": size,
        "part_bytes": part_bytes,
        "concurrency": concurrency,
        "reps": reps,
        "server": f"{server.package} {_version(server.package)} ({server.description})",
        "boto3": _version("boto3"),
    }
    say(
        f"S3: put {s3_put:.1f} MB/s, get {s3_get:.1f} MB/s; local: put {local_put:.1f} MB/s, get {local_get:.1f} "
        f"MB/s; S3/local (median pair, min-max): put {result['put_ratio']} "
        f"({put_spread.min:.3f}-{put_spread.max:.3f}), get {result['get_ratio']} "
        f"({get_spread.min:.3f}-{get_spread.max:.3f}) (target >= 0.5 both)"
    )
    return result


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def main(argv: list[str] | None = None, run: Callable[..., dict[str, object]] = run_bench) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (the same ~198 MB state)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per backend (default 5, --quick 2)")
    parser.add_argument(
        "--part-mb", type=int, default=DEFAULT_PART_BYTES >> 20, help="multipart part size in MiB (S3 minimum 5)"
    )
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="parts in flight at once")
    parser.add_argument(
        "--server", choices=sorted(SERVERS), default="juicefs", help="the local S3 server to measure against"
    )
    args = parser.parse_args(argv)
    reps = args.reps or (2 if args.quick else 5)
    print(json.dumps(run(reps, args.part_mb << 20, args.concurrency, args.server)), flush=True)


if __name__ == "__main__":
    main()
