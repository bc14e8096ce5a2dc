"""Chunked top-k with low-bit values (SparseLoCo-style): the b"GLCODEC2" and b"GLCODEC3" (tiled) payloads.

Why: at 1-5% density the cost of a sparse pseudo-gradient is the positions, not the values.
Each tensor is cut into chunks of `chunk` consecutive values; each chunk keeps its `k` largest
magnitudes (a shorter last chunk keeps ceil(k * length / chunk)), each kept value is `bits`
bits (a sign bit and a magnitude level), and the positions are Rice-coded gaps (about
log2(chunk / k) + 1.5 bits each) or a bitmap, whichever is smaller.

Quantization, per chunk: scale s = max|kept| / L with L = 2^(bits - 1) levels; a kept x is
stored as sign(x) and j = clamp(round(|x| / s) - 1, 0, L - 1) and decodes to sign(x) (j + 1) s.
So |x - decoded| <= s / 2 when |x| >= s / 2, and <= s below that, and the chunk maximum is
exact. Every level is non-zero, hence a decoded chunk has exactly its k non-zeros and
re-encoding a decoded payload gives the same bytes (the scale n s / n is exact).

Quantile levels (`quantile`, labels ending "-q"; every value kept, 2, 4 or 8 bits): a dense
low-bit code wants levels where the values are, not steps of max / L, because Adam's updates
are flat in magnitude with a few large ones (max / 2 as the lower 2-bit level overshoots most
values). Per chunk the magnitudes are ranked (0 = largest, stable order) and cut into L bins of
equal count, rank r in bin floor(r L / n); bin b's level is the magnitude at its middle rank,
(lo + hi - 1) // 2 for ranks [lo, hi) (an empty bin, only when n < L, takes rank lo, capped at
n - 1), so the L levels are picked, not computed, and never decrease from bin L - 1 to bin 0.
A value is stored as sign(x) and the index of the first level equal to its bin's level (stored
in increasing order: index L - 1 - b for bin b), and the sign of a value that decodes to 0 is
+: then decoding and re-encoding gives the same bytes, which the decoder checks by re-encoding.
The chunk stores its L levels as float32 in place of the one scale.

1-bit values (int1, scaled sign): no magnitude level, so the chunk's one scale is a kept
magnitude, m = the magnitude at rank floor(k p / 100) (0 = largest, stable order; p = 50, the
median, unless the codec names another, label part "-r40"), and every kept x decodes to
sign(x) m (a kept 0 to +m; error feedback takes that back the next round). m is picked, not
computed (no sums), so it is exact on every machine. With k = chunk (a sign per value) the median
is the scale a sign code wants when magnitudes are flat, as Adam's updates are; with k = chunk / 2
(zero, or a sign: the half-sparse code) a higher rank, nearer the mean of the kept magnitudes,
loses less (docs/benchmarks.md). When m = 0 the chunk decodes to zeros and is written in the
all-zero chunk's canonical form (first k positions, zero codes).

2-D tiles (`tile` S, label suffix "-tS", S x S = chunk, protocol/codec_tiles.py): a matrix whose both
dimensions are multiples of S is chunked tile by tile (each chunk one S x S tile), every other tensor as
above. A fixed permutation of the flat values before chunking and its inverse after decoding, so top-k,
levels, scales, index and canonical form are exactly the 1-D code's, over the permuted order.

Determinism: elementwise float32 arithmetic, round-half-to-even, a stable sort (ties go to the
lower position), integer bit packing; the decoder rejects every byte string the encoder would
not emit (non-canonical scales, codes, index choice or padding), so one update has one payload.

Layout (integers little-endian, bit streams least significant bit first, each zero-padded to
a byte), tensors sorted by UTF-8 name:

    b"GLCODEC2" | u8 bits | u8 levels (int1: p; else 0: max / L steps, 1: quantile) | u32 chunk | u32 k | u32 count
    (tiled: b"GLCODEC3" | the same five fields | u16 tile side S, S >= 2 and S x S = chunk; a codec without
    tiles is always GLCODEC2, so one codec has one header)
    | per tensor:
        u16 name_len | name | u8 ndim | u64 dims... | f32 scale per chunk (quantile: L f32 levels)
        | u8 index kind: 0 bitmap (numel bits) | 1 Rice: u32 unary bytes, unary quotients,
          remainders | 2 none (every value kept)
        | codes (bits per kept value: magnitude level in the low bits, sign in the top bit)
    (positions, scales and codes of a tiled tensor follow the tile order: chunk i is tile i)
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from protocol.codec_tiles import from_tile_order, get_tile_problem, to_tile_order
from protocol.errors import GradledgerError

MAGIC = b"GLCODEC2"
TILED_MAGIC = b"GLCODEC3"
LOW_BITS = (1, 2, 4, 8)
_HEADER = struct.Struct("<BBIII")
_TILE = struct.Struct("<H")
_BITMAP, _RICE, _NONE = 0, 1, 2
_STEP_LEVELS, _QUANTILE_LEVELS = 0, 1


class CompressionError(GradledgerError):
    """A codec is misconfigured, an update cannot be encoded, or bytes are not a payload."""


@dataclass(frozen=True)
class ChunkGroup:
    """`rows` chunks of `length` values in one tensor, each keeping `keep` with Rice parameter `rice`."""

    rows: int
    length: int
    keep: int
    rice: int


@dataclass(frozen=True)
class ChunkedHeader:
    """What a GLCODEC2/3 header says: value bits, chunk length, kept per chunk, tensor count, level kind,
    (int1) the rank of the scale among the kept magnitudes in percent of k, and the tile side (0: 1-D chunks)."""

    bits: int
    chunk: int
    k: int
    count: int
    quantile: bool
    rank_pct: int = 50
    tile: int = 0


def get_rice_parameter(length: int, keep: int) -> int:
    """Near-optimal Rice parameter for ~uniform positions: log2(ln 2 x mean gap), in integers."""
    return max(0, ((length * 693) // (1000 * keep)).bit_length() - 1)


def get_chunk_groups(numel: int, chunk: int, k: int) -> list[ChunkGroup]:
    """The full chunks of a tensor, then its shorter last chunk (same density, at least one kept)."""
    full, rest = divmod(numel, chunk)
    groups = []
    if full:
        keep = min(k, chunk)
        groups.append(ChunkGroup(full, chunk, keep, get_rice_parameter(chunk, keep)))
    if rest:
        keep = min(rest, max(1, -(-k * rest // chunk)))
        groups.append(ChunkGroup(1, rest, keep, get_rice_parameter(rest, keep)))
    return groups


def _to_bits(values: np.ndarray, width: int) -> np.ndarray:
    """Each value's `width` low bits, least significant first, as a flat uint8 0/1 array."""
    if width == 0 or values.size == 0:
        return np.zeros(0, dtype=np.uint8)
    shifts = np.arange(width, dtype=np.int64)
    return ((values.reshape(-1, 1).astype(np.int64) >> shifts) & 1).astype(np.uint8).reshape(-1)


def _from_bits(bits: np.ndarray, width: int, count: int) -> np.ndarray:
    """Inverse of `_to_bits` for `count` values."""
    if width == 0:
        return np.zeros(count, dtype=np.int64)
    weights = np.int64(1) << np.arange(width, dtype=np.int64)
    return (bits.reshape(-1, width).astype(np.int64) * weights).sum(axis=1)


def _pack(bits: np.ndarray) -> bytes:
    return np.packbits(bits, bitorder="little").tobytes()


def _get_gaps(offsets: list[np.ndarray]) -> list[np.ndarray]:
    """Per group (rows, keep): the first offset of a row, then the gap minus one to the next."""
    gaps = []
    for rows in offsets:
        gap = rows.copy()
        gap[:, 1:] = np.diff(rows, axis=1) - 1
        gaps.append(gap)
    return gaps


def _get_rice_sizes(gaps: list[np.ndarray], groups: list[ChunkGroup]) -> tuple[int, int]:
    """(unary bits, remainder bits) of the Rice code of `gaps`."""
    unary = sum(int((g >> grp.rice).sum()) + g.size for g, grp in zip(gaps, groups, strict=True))
    remainder = sum(g.size * grp.rice for g, grp in zip(gaps, groups, strict=True))
    return unary, remainder


def _is_rice_smaller(gaps: list[np.ndarray], groups: list[ChunkGroup], numel: int) -> bool:
    unary, remainder = _get_rice_sizes(gaps, groups)
    return 4 + -(-unary // 8) + -(-remainder // 8) < -(-numel // 8)


def _encode_index(offsets: list[np.ndarray], groups: list[ChunkGroup], numel: int) -> bytes:
    """Kind byte and positions: none when every value is kept, else the smaller of Rice and bitmap."""
    if sum(g.rows * g.keep for g in groups) == numel:
        return bytes([_NONE])
    gaps = _get_gaps(offsets)
    if not _is_rice_smaller(gaps, groups, numel):
        mask = np.zeros(numel, dtype=np.uint8)
        start = 0
        for rows, group in zip(offsets, groups, strict=True):
            base = start + group.length * np.arange(group.rows, dtype=np.int64).reshape(-1, 1)
            mask[(base + rows).reshape(-1)] = 1
            start += group.rows * group.length
        return bytes([_BITMAP]) + _pack(mask)
    quotients = np.concatenate([(g >> grp.rice).reshape(-1) for g, grp in zip(gaps, groups, strict=True)])
    unary = np.ones(int(quotients.sum()) + quotients.size, dtype=np.uint8)
    unary[np.cumsum(quotients + 1) - 1] = 0
    remainders = np.concatenate(
        [_to_bits(g & ((1 << grp.rice) - 1), grp.rice) for g, grp in zip(gaps, groups, strict=True)]
    )
    unary_bytes = _pack(unary)
    return bytes([_RICE]) + struct.pack("<I", len(unary_bytes)) + unary_bytes + _pack(remainders)


def get_encodable_entry(name: str, tensor: torch.Tensor) -> tuple[torch.Tensor, bytes]:
    """(flat float32 values, UTF-8 name) of one update entry; refuses what no payload can hold (both layouts)."""
    if not isinstance(tensor, torch.Tensor) or not tensor.dtype.is_floating_point:
        raise CompressionError(f"update entry {name!r} is not a floating-point tensor")
    flat = tensor.detach().to("cpu", torch.float32).contiguous().view(-1)
    if not torch.isfinite(flat).all():
        raise CompressionError(f"update entry {name!r} contains NaN or infinity; refusing to encode it")
    raw_name = name.encode("utf-8")
    if not raw_name or len(raw_name) > 0xFFFF or tensor.dim() > 0xFF:
        raise CompressionError(f"update entry {name!r}: name must be 1..65535 bytes and rank <= 255")
    return flat, raw_name


def get_quantile_levels(kept: torch.Tensor, levels: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(levels per row, shape (rows, L), non-decreasing; each value's level index) of the quantile code of `kept`.

    # INVARIANT: re-encoding the decoded rows gives the same levels and indices (module docstring), so a
    quantile payload has one byte string per decoded update."""
    rows, n = kept.shape
    ranked = torch.sort(kept.abs(), dim=1, descending=True, stable=True)
    rank = torch.empty_like(ranked.indices)
    rank.scatter_(1, ranked.indices, torch.arange(n).expand(rows, n).contiguous())
    bins = torch.arange(levels - 1, -1, -1)  # level index j holds bin L - 1 - j
    lo, hi = (bins * n + levels - 1) // levels, ((bins + 1) * n + levels - 1) // levels
    middle = torch.clamp((lo + torch.maximum(hi, lo + 1) - 1) // 2, max=n - 1)
    table = ranked.values[:, middle].contiguous()
    own = torch.gather(table, 1, levels - 1 - (rank * levels) // n)
    return table, torch.searchsorted(table, own.contiguous(), side="left")


def _encode_tensor(name: str, tensor: torch.Tensor, header: ChunkedHeader) -> bytes:
    bits, chunk, k = header.bits, header.chunk, header.k
    flat, raw_name = get_encodable_entry(name, tensor)
    flat = to_tile_order(flat, tensor.shape, header.tile)
    levels = 1 << (bits - 1)
    groups = get_chunk_groups(flat.numel(), chunk, k)
    scales, offsets, codes = [], [], []
    start = 0
    for group in groups:
        rows = flat[start : start + group.rows * group.length].view(group.rows, group.length)
        start += group.rows * group.length
        if group.keep == group.length:
            index = torch.arange(group.length).expand(group.rows, -1)
        else:
            order = torch.sort(rows.abs(), dim=1, descending=True, stable=True).indices[:, : group.keep]
            index = torch.sort(order, dim=1).values
        kept = torch.gather(rows, 1, index)
        if bits == 1:
            rank = group.keep * header.rank_pct // 100
            scale = torch.sort(kept.abs(), dim=1, descending=True, stable=True).values[:, rank]
            zero = (scale == 0).unsqueeze(1)  # canonical form of a chunk that decodes to zeros
            index = torch.where(zero, torch.arange(group.keep).expand_as(index), index)
            kept = torch.where(zero, torch.zeros_like(kept), kept)
            level = torch.zeros_like(index)
        elif header.quantile:
            scale, level = get_quantile_levels(kept, levels)
            kept = torch.where(torch.gather(scale, 1, level) == 0, torch.zeros_like(kept), kept)  # sign of a 0: +
            scale = scale.reshape(-1)
        else:
            scale = kept.abs().amax(dim=1) / levels
            safe = torch.where(scale > 0, scale, torch.ones_like(scale)).unsqueeze(1)
            level = (torch.round(kept.abs() / safe) - 1).clamp_(0, levels - 1).to(torch.int64)
        sign = (kept < 0).to(torch.int64)
        scales.append(scale)
        offsets.append(index.numpy().astype(np.int64))
        codes.append(((sign << (bits - 1)) | level).numpy().reshape(-1))
    out = [struct.pack("<H", len(raw_name)), raw_name, struct.pack("<B", tensor.dim())]
    out.append(struct.pack(f"<{tensor.dim()}Q", *tensor.shape))
    if groups:
        out.append(torch.cat(scales).numpy().astype("<f4").tobytes())
    out.append(_encode_index(offsets, groups, flat.numel()))
    out.append(_pack(_to_bits(np.concatenate(codes), bits)) if codes else b"")
    return b"".join(out)


def check_chunked_options(bits: int, chunk: int, k: int, quantile: bool, rank_pct: int, tile: int = 0) -> None:
    """The one rule for chunked codec options (labels via protocol.compression.Codec, and every encode)."""
    if bits not in LOW_BITS or not 1 <= k <= chunk < 1 << 32:
        raise CompressionError(
            f"a chunked codec needs int1, int2, int4 or int8 values and 1 <= k <= chunk < 2**32, got int{bits}, "
            f"k {k}, chunk {chunk} (e.g. int2-c4096-k64)"
        )
    if quantile and (bits == 1 or k != chunk):
        raise CompressionError(
            f"quantile levels need int2, int4 or int8 values and every value kept (k = chunk), got int{bits}, k {k}, "
            f"chunk {chunk} (e.g. int2-c{chunk}-k{chunk}-q)"
        )
    if rank_pct != 50 and bits != 1:
        raise CompressionError(f"a scale rank (-r{rank_pct}) applies to chunked int1 codecs only")
    if not 1 <= rank_pct <= 99:
        raise CompressionError(f"the scale rank must be 1..99 percent of k, got {rank_pct}")
    problem = get_tile_problem(tile, chunk, k)
    if problem:
        raise CompressionError(problem)


def encode_chunked(
    update: Mapping[str, torch.Tensor],
    bits: int,
    chunk: int,
    k: int,
    quantile: bool = False,
    rank_pct: int = 50,
    tile: int = 0,
) -> bytes:
    """The GLCODEC2 payload of `update`: per chunk of `chunk` values, the top `k` at `bits` bits (`quantile`:
    every value, at levels picked from the chunk's magnitudes; int1: the scale at rank k x `rank_pct` / 100).
    `tile` S > 0: the GLCODEC3 payload, whose chunks of a 2-D tensor with both dimensions multiples of S are its
    S x S tiles."""
    check_chunked_options(bits, chunk, k, quantile, rank_pct, tile)
    if not update:
        raise CompressionError("cannot encode an empty update")
    names = sorted(update, key=lambda n: n.encode("utf-8"))
    header = ChunkedHeader(bits, chunk, k, len(names), quantile, rank_pct, tile)
    level_byte = rank_pct if bits == 1 else (_QUANTILE_LEVELS if quantile else _STEP_LEVELS)
    fields = _HEADER.pack(bits, level_byte, chunk, k, len(names))
    prefix = TILED_MAGIC + fields + _TILE.pack(tile) if tile else MAGIC + fields
    return prefix + b"".join(_encode_tensor(n, update[n], header) for n in names)


# ---------------------------------------------------------------------------------------
# Decoding


class PayloadReader:
    """Reads a payload front to back; running short is a CompressionError naming what was being read (every
    layout, GLCODEC1 in protocol/compression.py and GLCODEC2/3 here)."""

    def __init__(self, data: bytes) -> None:
        self.view, self.pos = memoryview(data), 0

    def take(self, size: int, what: str) -> memoryview:
        if self.pos + size > len(self.view):
            raise CompressionError(f"not a codec payload: truncated while reading {what}")
        chunk = self.view[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def unpack(self, fmt: str, what: str) -> tuple[int, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))

    def bits(self, count: int, what: str) -> np.ndarray:
        """`count` bits, checking that the padding to the byte is zero (canonical bytes)."""
        raw = np.frombuffer(self.take(-(-count // 8), what), np.uint8)
        unpacked = np.unpackbits(raw, bitorder="little")
        if unpacked[count:].any():
            raise CompressionError(f"not a codec payload: non-zero padding after {what}")
        return unpacked[:count]


def is_chunked_payload(payload: bytes) -> bool:
    """Whether `payload` starts with a chunked codec's magic (GLCODEC2, or GLCODEC3 with tiles)."""
    return payload[: len(MAGIC)] in (MAGIC, TILED_MAGIC)


def read_chunked_header(payload: bytes) -> ChunkedHeader:
    """The header of a GLCODEC2 or GLCODEC3 payload; rejects anything else (a GLCODEC3 tile side of 0 too: a
    codec without tiles has the GLCODEC2 header only)."""
    tiled = payload[: len(MAGIC)] == TILED_MAGIC
    size = len(MAGIC) + _HEADER.size + (_TILE.size if tiled else 0)
    if len(payload) < size or not is_chunked_payload(payload):
        raise CompressionError("not a codec payload: missing b'GLCODEC2' or b'GLCODEC3' header")
    bits, kind, chunk, k, count = _HEADER.unpack_from(payload, len(MAGIC))
    tile = _TILE.unpack_from(payload, len(MAGIC) + _HEADER.size)[0] if tiled else 0
    if tiled and (tile == 0 or get_tile_problem(tile, chunk, k)):
        raise CompressionError(f"not a codec payload: tile side {tile} for chunk {chunk} (needs S >= 2, S x S = chunk)")
    valid_kinds = range(1, 100) if bits == 1 else (_STEP_LEVELS, _QUANTILE_LEVELS)
    if bits not in LOW_BITS or kind not in valid_kinds or not 1 <= k <= chunk:
        raise CompressionError(f"not a codec payload: bits {bits}, level kind {kind}, chunk {chunk}, k {k}")
    quantile = bits != 1 and kind == _QUANTILE_LEVELS
    if quantile and k != chunk:
        raise CompressionError(f"not a codec payload: quantile levels with {bits} bits and k {k} of {chunk}")
    return ChunkedHeader(bits, chunk, k, count, quantile, kind if bits == 1 else 50, tile)


def _decode_index(reader: PayloadReader, groups: list[ChunkGroup], numel: int, name: str) -> list[np.ndarray]:
    (kind,) = reader.unpack("<B", f"{name} index kind")
    total = sum(g.rows * g.keep for g in groups)
    if (kind == _NONE) != (total == numel) or kind not in (_BITMAP, _RICE, _NONE):
        raise CompressionError(f"not a codec payload: {name} has index kind {kind} for {total} of {numel} kept")
    if kind == _NONE:
        return [np.broadcast_to(np.arange(g.length, dtype=np.int64), (g.rows, g.length)) for g in groups]
    if kind == _BITMAP:
        mask = reader.bits(numel, f"{name} bitmap")
        offsets, start = [], 0
        for group in groups:
            rows = mask[start : start + group.rows * group.length].reshape(group.rows, group.length)
            start += group.rows * group.length
            if np.any(rows.sum(axis=1, dtype=np.int64) != group.keep):
                raise CompressionError(f"not a codec payload: {name} bitmap does not keep {group.keep} per chunk")
            offsets.append(np.nonzero(rows)[1].astype(np.int64).reshape(group.rows, group.keep))
        if _is_rice_smaller(_get_gaps(offsets), groups, numel):
            raise CompressionError(f"not a codec payload: {name} uses a bitmap where Rice codes are smaller")
        return offsets
    (unary_bytes,) = reader.unpack("<I", f"{name} unary length")
    unary = np.unpackbits(np.frombuffer(reader.take(unary_bytes, f"{name} unary"), np.uint8), bitorder="little")
    ends = np.flatnonzero(unary == 0)[:total]
    if ends.size < total or unary[ends[-1] + 1 :].any() or unary_bytes != -(-(int(ends[-1]) + 1) // 8):
        raise CompressionError(f"not a codec payload: {name} unary quotients are not {total} canonical codes")
    quotients = np.diff(ends, prepend=-1) - 1
    remainder_bits = reader.bits(sum(g.rows * g.keep * g.rice for g in groups), f"{name} remainders")
    offsets, at, bit_at = [], 0, 0
    for group in groups:
        size = group.rows * group.keep
        rest = _from_bits(remainder_bits[bit_at : bit_at + size * group.rice], group.rice, size)
        gaps = ((quotients[at : at + size] << group.rice) | rest).reshape(group.rows, group.keep)
        rows = np.cumsum(gaps + 1, axis=1) - 1
        if np.any(rows[:, -1] >= group.length):
            raise CompressionError(f"not a codec payload: {name} positions run past a chunk of {group.length}")
        offsets.append(rows)
        at, bit_at = at + size, bit_at + size * group.rice
    if not _is_rice_smaller(_get_gaps(offsets), groups, numel):
        raise CompressionError(f"not a codec payload: {name} uses Rice codes where a bitmap is not larger")
    return offsets


def _decode_tensor(reader: PayloadReader, header: ChunkedHeader, name: str) -> torch.Tensor:
    (ndim,) = reader.unpack("<B", f"{name} rank")
    shape = reader.unpack(f"<{ndim}Q", f"{name} shape")
    flat = _decode_values(reader, header, shape, name)  # in chunk (tile) order
    return from_tile_order(flat, shape, header.tile).view(shape)


def _decode_values(reader: PayloadReader, header: ChunkedHeader, shape: tuple[int, ...], name: str) -> torch.Tensor:
    """One tensor's flat decoded values, in the order they were chunked."""
    numel = math.prod(shape)
    bits = header.bits
    groups = get_chunk_groups(numel, header.chunk, header.k)
    levels = 1 << (bits - 1)
    n_scales = sum(g.rows for g in groups) * (levels if header.quantile else 1)
    scales = np.frombuffer(reader.take(4 * n_scales, f"{name} scales"), "<f4").astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.all(np.isfinite(scales * np.float32(1 if header.quantile else levels)))
    if not finite or np.any(np.signbit(scales)):
        raise CompressionError(f"not a codec payload: {name} has a negative or non-finite chunk scale")
    if header.quantile:
        return _decode_quantile(reader, groups, scales.reshape(-1, levels), numel, name, bits)
    offsets = _decode_index(reader, groups, numel, name)
    n_kept = sum(g.rows * g.keep for g in groups)
    codes = _from_bits(reader.bits(n_kept * bits, f"{name} codes"), bits, n_kept)
    dense = torch.zeros(numel, dtype=torch.float32)
    start, row_at, code_at = 0, 0, 0
    for group, rows in zip(groups, offsets, strict=True):
        scale = scales[row_at : row_at + group.rows]
        code = codes[code_at : code_at + group.rows * group.keep].reshape(group.rows, group.keep)
        level, sign = code & (levels - 1), code >> (bits - 1)
        zero = scale == 0
        top = level.max(axis=1) == levels - 1
        first = np.all(rows == np.arange(group.keep), axis=1)
        if np.any(zero & (code.any(axis=1) | ~first)) or np.any(~zero & ~top):
            raise CompressionError(f"not a codec payload: {name} has non-canonical chunk codes")
        magnitude = torch.from_numpy(level + 1).to(torch.float32) * torch.from_numpy(scale.copy()).unsqueeze(1)
        values = torch.where(torch.from_numpy(sign == 1), -magnitude, magnitude)
        base = start + group.length * np.arange(group.rows, dtype=np.int64).reshape(-1, 1)
        dense[torch.from_numpy((base + rows).reshape(-1))] = values.reshape(-1)
        start += group.rows * group.length
        row_at += group.rows
        code_at += group.rows * group.keep
    return dense


def _decode_quantile(
    reader: PayloadReader, groups: list[ChunkGroup], tables: np.ndarray, numel: int, name: str, bits: int
) -> torch.Tensor:
    """A quantile-levels tensor's flat values: each is sign x its chunk's level (canonical: `decode_chunked`)."""
    if np.any(np.diff(tables, axis=1) < 0):
        raise CompressionError(f"not a codec payload: {name} has chunk levels that decrease")
    _decode_index(reader, groups, numel, name)  # index kind 2 (every value kept) is the only valid one
    codes = _from_bits(reader.bits(numel * bits, f"{name} codes"), bits, numel)
    levels = tables.shape[1]
    values, at, row_at = [], 0, 0
    for group in groups:
        code = codes[at : at + group.rows * group.length].reshape(group.rows, group.length)
        table = tables[row_at : row_at + group.rows]
        magnitude = np.take_along_axis(table, code & (levels - 1), axis=1)
        values.append(np.where(code >> (bits - 1) == 1, -magnitude, magnitude).reshape(-1))
        at, row_at = at + group.rows * group.length, row_at + group.rows
    flat = np.concatenate(values) if values else np.zeros(0, np.float32)
    return torch.from_numpy(flat.astype(np.float32))


def decode_chunked(payload: bytes) -> dict[str, torch.Tensor]:
    """Inverse of `encode_chunked` up to the quantization; rejects anything it would not emit."""
    header = read_chunked_header(payload)
    reader = PayloadReader(payload)
    reader.take(len(MAGIC) + _HEADER.size + (_TILE.size if header.tile else 0), "header")
    out: dict[str, torch.Tensor] = {}
    previous = b""
    for _ in range(header.count):
        (name_len,) = reader.unpack("<H", "name length")
        raw_name = bytes(reader.take(name_len, "name"))
        if not raw_name or raw_name <= previous:
            raise CompressionError("not a codec payload: tensor names empty or not strictly increasing")
        previous = raw_name
        try:
            name = raw_name.decode("utf-8")
        except UnicodeDecodeError:
            raise CompressionError("not a codec payload: a tensor name is not UTF-8") from None
        out[name] = _decode_tensor(reader, header, name)
    if reader.pos != len(reader.view):
        raise CompressionError(f"not a codec payload: {len(reader.view) - reader.pos} trailing bytes")
    # INVARIANT: one update, one payload. Quantile codes are checked the simplest exact way: by re-encoding.
    if header.quantile and encode_chunked(out, header.bits, header.chunk, header.k, True, tile=header.tile) != payload:
        raise CompressionError("not a codec payload: quantile levels or codes are not in canonical form")
    return out
