"""2-D tiles for the chunked codecs (issue 40): which tensors are cut in S x S tiles, and the permutation.

Why: the chunked codecs (protocol/chunked_codec.py) keep the top k of each chunk of `chunk` values. In 1-D a
chunk is `chunk` consecutive row-major values, i.e. a few whole rows of a matrix, so its top k follow the
scale of those rows; SparseLoCo and DeMo chunk a matrix in 64 x 64 tiles instead, each tile mixing 64 rows
and 64 columns. A codec with tile side S (label suffix "-tS", S >= 2, S x S = chunk: "int2-c4096-k176-t64")
takes the values of a 2-D tensor whose both dimensions are multiples of S tile by tile: tiles in row-major
order, each tile's values row-major, so each chunk is one tile. Every other tensor (not 2-D, or a dimension
not a multiple of S) is chunked exactly as without tiles.

That is a fixed permutation of a tensor's flat values, applied before chunking on encode and undone after
decoding: views, reshapes and one copy, no arithmetic, so it is exact and the same on every machine, and the
encoder, decoder and canonical-form checks are the 1-D code's, over the permuted order.
"""

from __future__ import annotations

import math

import torch

MAX_TILE = 0xFFFF  # the payload stores the side as a u16 (b"GLCODEC3")


def get_tile_problem(tile: int, chunk: int, k: int) -> str | None:
    """Why `tile` is not a valid tile side for chunks of `chunk` values keeping `k` (None: valid). A side is 0
    (1-D chunks) or S with 2 <= S <= 65535 and S x S = chunk; a refusal names what to write instead."""
    if tile == 0 or (2 <= tile <= MAX_TILE and tile * tile == chunk):
        return None
    side = math.isqrt(chunk)
    hints = []
    if 2 <= side <= MAX_TILE and side * side == chunk:
        hints.append(f"-t{side} ({side} x {side} tiles of chunk {chunk})")
    if 2 <= tile <= MAX_TILE and k <= tile * tile:
        hints.append(f"-c{tile * tile} ({tile} x {tile} tiles)")
    if not hints:
        hints.append("a square chunk and its side, e.g. int1-c4096-k2048-t64, or no -t part for 1-D chunks")
    return f"a tile side S needs 2 <= S and S x S = chunk, got -t{tile} with chunk {chunk}; write " + " or ".join(hints)


def is_tiled(shape: tuple[int, ...] | torch.Size, tile: int) -> bool:
    """Whether a tensor of `shape` is chunked in `tile` x `tile` tiles: 2-D, both dimensions multiples of it."""
    return tile > 0 and len(shape) == 2 and shape[0] % tile == 0 and shape[1] % tile == 0


def to_tile_order(flat: torch.Tensor, shape: tuple[int, ...] | torch.Size, tile: int) -> torch.Tensor:
    """The row-major `flat` values of a `shape` tensor, tile by tile (tiles row-major, each row-major) when it
    `is_tiled`, else `flat` itself. A permutation: exact, and undone by `from_tile_order`."""
    if not is_tiled(shape, tile):
        return flat
    rows, cols = shape
    return flat.view(rows // tile, tile, cols // tile, tile).permute(0, 2, 1, 3).reshape(-1)


def from_tile_order(flat: torch.Tensor, shape: tuple[int, ...] | torch.Size, tile: int) -> torch.Tensor:
    """Inverse of `to_tile_order`: the row-major flat values."""
    if not is_tiled(shape, tile):
        return flat
    rows, cols = shape
    return flat.view(rows // tile, cols // tile, tile, tile).permute(0, 2, 1, 3).reshape(-1)
