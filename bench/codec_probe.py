"""Probe a codec family that is not a protocol codec: bench/diloco.py's compressed arm with the codec step replaced.

    python bench/codec_probe.py --rank 16 [bench/diloco.py options, e.g. --hs 25 --skip-baselines ...]

Why: a protocol codec must be bit-exact on every machine (verifiers recompute P_r from committed bytes,
protocol/payload.py), which rules out float matmuls and reductions whose order depends on the CPU. Before an
exact (integer) version of a family is worth building, this measures what it would buy in loss and bytes.

Family probed: low rank (PowerSGD-style). Every 2-D tensor of Δ + e is approximated by P Q^T of rank r from
`--iterations` power iterations from a fixed random start (modified Gram-Schmidt), P and Q rounded to int8 with
one float32 scale per column; other tensors go as int8 in blocks of 256. Error feedback as in the protocol:
e_(r+1) = Δ + e_r - D(P_r). Bytes are what such a payload would hold (factors, scales, 16 header bytes per
tensor), counted like bench/diloco.py counts real payloads (own up, the M - 1 peers' down). Float math, not
bit-exact across machines: never used by a node. bench/diloco.py needs a `--codecs` label to run one
compressed arm (any, e.g. int8-b256: it is not used); the arm's `codecs` entry names the probe under `probe`.
"""

from __future__ import annotations

import argparse
import sys
import zlib
from collections.abc import Mapping
from pathlib import Path

from protocol.adapters.execution_env import pin_execution_environment

pin_execution_environment()  # before torch loads: the execution profile's kernels (docs/determinism.md)

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.diloco as diloco
import sim.simulate as simulate
from protocol.compression import Codec, Compressed

INT8_BLOCK = 256
HEADER_BYTES = 16


def orthonormalize(columns: torch.Tensor) -> torch.Tensor:
    """Modified Gram-Schmidt on the columns (a zero column stays zero)."""
    out: list[torch.Tensor] = []
    for j in range(columns.shape[1]):
        v = columns[:, j].clone()
        for u in out:
            v = v - (u * v).sum() * u
        norm = torch.sqrt((v * v).sum())
        out.append(v / norm if norm > 0 else torch.zeros_like(v))
    return torch.stack(out, dim=1)


def round_int8_columns(x: torch.Tensor) -> torch.Tensor:
    """x rounded to int8 levels with one absmax scale per column (the decoded values)."""
    scale = x.abs().amax(dim=0, keepdim=True) / 127
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.round(x / safe).clamp(-127, 127) * scale


def approximate_low_rank(matrix: torch.Tensor, rank: int, iterations: int, seed: int) -> tuple[torch.Tensor, int]:
    """(decoded P Q^T, payload bytes) of one matrix."""
    rows, cols = matrix.shape
    q = torch.randn(cols, rank, generator=torch.Generator().manual_seed(seed))
    p = torch.zeros(rows, rank)
    for _ in range(iterations):
        p = orthonormalize(matrix @ q)
        q = matrix.T @ p
    return round_int8_columns(p) @ round_int8_columns(q).T, rank * (rows + cols) + 8 * rank


def round_int8_blocks(tensor: torch.Tensor) -> tuple[torch.Tensor, int]:
    """(decoded, payload bytes) of a tensor as int8 in blocks of INT8_BLOCK with a float32 scale each."""
    flat = tensor.reshape(-1)
    blocks = torch.nn.functional.pad(flat, (0, -flat.numel() % INT8_BLOCK)).view(-1, INT8_BLOCK)
    decoded = round_int8_columns(blocks.T).T.reshape(-1)[: flat.numel()]
    return decoded.view_as(tensor), flat.numel() + 4 * blocks.shape[0]


def make_low_rank_step(rank: int, iterations: int):
    """A stand-in for `compress_with_feedback` with the low-rank family (same signature, same residual rule)."""

    def step(update: Mapping[str, torch.Tensor], codec: Codec, residual: Mapping[str, torch.Tensor] | None = None):
        target, decoded, size = {}, {}, 0
        for name, value in update.items():
            x = value.detach().to(torch.float32)
            if residual and name in residual:
                x = x + residual[name]
            target[name] = x
            if x.dim() == 2 and min(x.shape) > rank:
                decoded[name], nbytes = approximate_low_rank(x, rank, iterations, zlib.crc32(name.encode()))
            else:
                decoded[name], nbytes = round_int8_blocks(x)
            size += nbytes + HEADER_BYTES
        return Compressed(bytes(size), decoded, {n: target[n] - decoded[n] for n in target})

    return step


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rank", type=int, required=True, help="r of the low-rank factors")
    parser.add_argument("--iterations", type=int, default=2, help="power iterations per matrix and round")
    args, rest = parser.parse_known_args(argv)
    simulate.compress_with_feedback = make_low_rank_step(args.rank, args.iterations)
    probe = f"lowrank-r{args.rank}-i{args.iterations} (int8 factors; float, not a protocol codec)"
    summarize = diloco.summarize_codec

    def summarize_probe(*a, **k):
        return {**summarize(*a, **k), "probe": probe}

    diloco.summarize_codec = summarize_probe
    diloco.main(rest if any(a.startswith("--tag") for a in rest) else [*rest, f"--tag=-probe-lowrank-r{args.rank}"])


if __name__ == "__main__":
    main()
