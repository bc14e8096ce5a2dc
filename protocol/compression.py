"""Optional pseudo-gradient codecs with error feedback (never a run's default).

Why: a DiLoCo round already cuts communication H-fold against synchronous training; a codec
on the pseudo-gradient Δ cuts the bytes of each exchange again (fp32 -> 16 or 8 bits per
value, a top-k subset, or 2 bits for a few percent of the values per chunk). bench/diloco.py
measures what that costs in loss; a run uses one only when `train.codec` names it.

Everything here is a pure, deterministic function of its inputs -- elementwise float32 ops,
round-half-to-even, a stable sort for top-k ties -- so every party that decodes the same bytes
gets the same tensors, and an outer step over decoded Δs stays bit-identical for everyone.

Error feedback: the sender keeps the residual r (what the codec lost last time) and encodes
Δ + r instead of Δ; the new residual is (Δ + r) - decode(payload). Nothing is dropped for
good, only delayed, which is what keeps lossy codecs from biasing training.

Payload layout (all integers little-endian), tensors sorted by UTF-8 name:

    b"GLCODEC1" | u8 value format | u32 block (0 = one scale per tensor) | u32 keep_ppm (0 = dense)
    | u32 count | per tensor:
        u16 name_len | name | u8 ndim | u64 dims... | u64 kept
        | if keep_ppm: u8 index kind (0 bitmap of numel bits, 1 u32 indices) | index bytes
        | if int8: f32 scale x ceil(kept / block) | values (kept x 1, 2 or 4 bytes)

Chunked top-k with low-bit values (`Codec(values=int1|int2|int4|int8, block=chunk, chunk_keep=k)`,
labels like "int2-c4096-k64", SparseLoCo-style) has its own b"GLCODEC2" layout, and b"GLCODEC3" with
2-D tiles ("int2-c4096-k176-t64"), documented in protocol/chunked_codec.py; `encode`, `decode` and
`get_payload_codec` dispatch on the codec and on the magic, so callers use one API for all of them.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import torch

from protocol.chunked_codec import (
    CompressionError,
    PayloadReader,
    check_chunked_options,
    decode_chunked,
    encode_chunked,
    get_encodable_entry,
    is_chunked_payload,
    read_chunked_header,
)

CODEC_MAGIC = b"GLCODEC1"
PPM = 1_000_000
FP16_MAX = 65504.0
INT8_LEVELS = 127


class ValueFormat(StrEnum):
    """How each transmitted value is stored."""

    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"
    INT8 = "int8"
    INT4 = "int4"
    INT2 = "int2"
    INT1 = "int1"


_FORMAT_CODES = {ValueFormat.FP32: 0, ValueFormat.FP16: 1, ValueFormat.BF16: 2, ValueFormat.INT8: 3}
_CODE_FORMATS = {code: fmt for fmt, code in _FORMAT_CODES.items()}
_LOW_BITS = {ValueFormat.INT1: 1, ValueFormat.INT2: 2, ValueFormat.INT4: 4, ValueFormat.INT8: 8}
_BITS_FORMATS = {bits: fmt for fmt, bits in _LOW_BITS.items()}
_VALUE_BYTES = {ValueFormat.FP32: 4, ValueFormat.FP16: 2, ValueFormat.BF16: 2, ValueFormat.INT8: 1}
_INDEX_BITMAP, _INDEX_LIST = 0, 1


@dataclass(frozen=True)
class Codec:
    """A pseudo-gradient codec: a value format, an int8 scale granularity, an optional top-k.

    `block`: int8 only; one float32 scale per `block` consecutive (kept) values, or one per
    tensor when 0. `keep_ppm`: keep the largest-magnitude `keep_ppm` / 1e6 of each tensor's
    values (at least one), or all of them when 0. Parts per million, not a float, so the
    codec and its payload header are exact integers.

    `chunk_keep` > 0 selects the chunked codec (protocol/chunked_codec.py): `block` is then the
    chunk length, each chunk keeps its `chunk_keep` largest magnitudes with one float32 scale,
    and the values are int2, int4 or int8 (sign + magnitude level) or int1 (sign, scaled by the
    chunk's median kept magnitude); int1/int2/int4 only here. `quantile` (chunked, every value
    kept, 2-8 bits): each chunk's levels are picked from its own magnitudes, equal-count bins,
    instead of steps of max / L (label suffix "-q", e.g. int2-c4096-k4096-q). `rank_pct` (chunked
    int1 only): the chunk's scale is the kept magnitude at rank k x rank_pct / 100, 50 (the median)
    unless the label names another ("int1-c4096-k2048-r40"). `tile` (chunked only; 0: 1-D chunks): the
    side S of 2-D tiles, S x S = chunk, label suffix "-tS" ("int1-c4096-k2048-r30-t64"): a matrix whose
    both dimensions are multiples of S is chunked tile by tile instead of in runs of consecutive values.
    """

    values: ValueFormat = ValueFormat.INT8
    block: int = 0
    keep_ppm: int = 0
    chunk_keep: int = 0
    quantile: bool = False
    rank_pct: int = 50
    tile: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", ValueFormat(self.values))
        if not 0 <= self.block < 1 << 32:
            raise CompressionError(f"codec block must be between 0 and 2**32 - 1, got {self.block}")
        if self.chunk_keep:
            if self.keep_ppm:
                raise CompressionError(f"a chunked codec takes no keep_ppm, got {self.keep_ppm} (e.g. int2-c4096-k64)")
            if self.values not in _LOW_BITS:
                raise CompressionError(
                    f"a chunked codec needs int1, int2, int4 or int8 values and 1 <= k <= chunk, got {self.values} "
                    "(e.g. int2-c4096-k64)"
                )
            bits = _LOW_BITS[self.values]
            check_chunked_options(bits, self.block, self.chunk_keep, self.quantile, self.rank_pct, self.tile)
            return
        if self.tile:
            raise CompressionError(f"tiles (-t{self.tile}) apply to a chunked codec only, e.g. int2-c4096-k176-t64")
        if self.rank_pct != 50:
            raise CompressionError(f"a scale rank (-r{self.rank_pct}) applies to chunked int1 codecs only")
        if self.quantile:
            raise CompressionError("quantile levels apply to a chunked codec only, e.g. int2-c4096-k4096-q")
        if self.values in (ValueFormat.INT1, ValueFormat.INT2, ValueFormat.INT4):
            raise CompressionError(f"{self.values} values need a chunked top-k, e.g. {self.values}-c4096-k64")
        if self.block and self.values is not ValueFormat.INT8:
            raise CompressionError(f"a scale block only applies to int8 values, not {self.values}")
        if not 0 <= self.keep_ppm <= PPM:
            raise CompressionError(f"codec keep_ppm must be between 0 and {PPM}, got {self.keep_ppm}")

    @property
    def name(self) -> str:
        """A short label, e.g. "int8-b256-top10%" or "int2-c4096-k64" (used in benchmark output)."""
        label = self.values.value
        if self.chunk_keep:
            rank = f"-r{self.rank_pct}" if self.rank_pct != 50 else ""
            tile = f"-t{self.tile}" if self.tile else ""
            return f"{label}-c{self.block}-k{self.chunk_keep}" + ("-q" if self.quantile else "") + rank + tile
        if self.values is ValueFormat.INT8:
            label += f"-b{self.block}" if self.block else "-tensor"
        if self.keep_ppm and self.keep_ppm < PPM:
            label += f"-top{self.keep_ppm / 1e4:g}%"
        return label

    @property
    def is_lossless(self) -> bool:
        return self.values is ValueFormat.FP32 and self.keep_ppm in (0, PPM)


FP32 = Codec(ValueFormat.FP32)


def parse_codec(label: str) -> Codec:
    """Inverse of `Codec.name`: "fp16", "bf16", "int8-tensor", "int8-b256", "int8-b256-top10%",
    "int2-c4096-k64" (chunks of 4096 values, top 64 of each, 2-bit values), "int1-c4096-k4096" (every value as
    a sign, one scale per chunk of 4096), "int2-c4096-k4096-q" (every value at 2 bits, quantile levels),
    "int1-c4096-k2048-r40" (half the values as signs, the scale at rank 40% of the kept), "int2-c4096-k176-t64"
    (the chunks of a matrix are its 64 x 64 tiles)."""
    parts = label.strip().lower().split("-")
    try:
        values = ValueFormat(parts[0])
    except ValueError:
        raise CompressionError(
            f"unknown codec {label!r}: values must be fp32, fp16, bf16, int8, int4, int2 or int1"
        ) from None
    block, keep_ppm, chunk_keep, quantile, rank_pct, tile = 0, 0, 0, False, 50, 0
    for part in parts[1:]:
        if part == "tensor" and values is ValueFormat.INT8:
            continue
        if part == "q":
            quantile = True
            continue
        if part[:1] in ("b", "c") and part[1:].isdigit():
            block = int(part[1:])
        elif part.startswith("k") and part[1:].isdigit():
            chunk_keep = int(part[1:])
        elif part.startswith("r") and part[1:].isdigit():
            rank_pct = int(part[1:])
        elif part.startswith("t") and part[1:].isdigit():
            tile = int(part[1:])
        elif part.startswith("top") and part.endswith("%"):
            try:
                keep_ppm = round(float(part[3:-1]) * 1e4)
            except ValueError:
                raise CompressionError(f"bad top-k part {part!r} in codec {label!r}") from None
        else:
            raise CompressionError(f"unknown part {part!r} in codec {label!r}")
    return Codec(values, block, keep_ppm, chunk_keep, quantile, rank_pct, tile)


# ---------------------------------------------------------------------------------------
# Per-tensor pieces


def _kept_count(numel: int, keep_ppm: int) -> int:
    if not keep_ppm or keep_ppm == PPM:
        return numel
    return max(1, numel * keep_ppm // PPM)


def _select_top_k(flat: torch.Tensor, kept: int) -> torch.Tensor:
    """Indices (ascending) of the `kept` largest magnitudes; ties go to the lower index."""
    if kept == flat.numel():
        return torch.arange(flat.numel())
    order = torch.sort(flat.abs(), descending=True, stable=True).indices[:kept]
    return torch.sort(order).values


def _encode_indices(indices: torch.Tensor, numel: int) -> bytes:
    """The smaller of a bitmap (numel bits) and a u32 index list (ties: the bitmap)."""
    bitmap_bytes, list_bytes = (numel + 7) // 8, 4 * indices.numel()
    if bitmap_bytes <= list_bytes:
        mask = np.zeros(numel, dtype=np.uint8)
        mask[indices.numpy()] = 1
        return bytes([_INDEX_BITMAP]) + np.packbits(mask, bitorder="little").tobytes()
    return bytes([_INDEX_LIST]) + indices.numpy().astype("<u4").tobytes()


def _quantize_int8(values: torch.Tensor, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(float32 scales, int8 values): symmetric, scale = max|x| / 127 per block, round half even."""
    size = block or max(values.numel(), 1)
    blocks = math.ceil(values.numel() / size)
    padded = torch.zeros(blocks * size, dtype=torch.float32)
    padded[: values.numel()] = values
    rows = padded.view(blocks, size)
    scales = rows.abs().amax(dim=1) / INT8_LEVELS
    safe = torch.where(scales > 0, scales, torch.ones_like(scales))
    q = torch.round(rows / safe.unsqueeze(1)).clamp_(-INT8_LEVELS, INT8_LEVELS)
    return scales, q.to(torch.int8).view(-1)[: values.numel()]


def _dequantize_int8(scales: torch.Tensor, q: torch.Tensor, block: int) -> torch.Tensor:
    size = block or max(q.numel(), 1)
    blocks = scales.numel()
    padded = torch.zeros(blocks * size, dtype=torch.float32)
    padded[: q.numel()] = q.to(torch.float32)
    return (padded.view(blocks, size) * scales.unsqueeze(1)).view(-1)[: q.numel()]


def _encode_values(values: torch.Tensor, codec: Codec) -> bytes:
    if codec.values is ValueFormat.FP32:
        return values.numpy().astype("<f4").tobytes()
    if codec.values is ValueFormat.FP16:
        return values.clamp(-FP16_MAX, FP16_MAX).to(torch.float16).view(torch.int16).numpy().tobytes()
    if codec.values is ValueFormat.BF16:
        return values.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
    scales, q = _quantize_int8(values, codec.block)
    return scales.numpy().astype("<f4").tobytes() + q.numpy().tobytes()


def _encode_tensor(name: str, tensor: torch.Tensor, codec: Codec) -> bytes:
    flat, raw_name = get_encodable_entry(name, tensor)
    kept = _kept_count(flat.numel(), codec.keep_ppm)
    out = [struct.pack("<H", len(raw_name)), raw_name, struct.pack("<B", tensor.dim())]
    out.append(struct.pack(f"<{tensor.dim()}Q", *tensor.shape) + struct.pack("<Q", kept))
    if codec.keep_ppm:
        indices = _select_top_k(flat, kept)
        out.append(_encode_indices(indices, flat.numel()))
        flat = flat[indices]
    out.append(_encode_values(flat, codec))
    return b"".join(out)


# ---------------------------------------------------------------------------------------
# Public API


def encode(update: Mapping[str, torch.Tensor], codec: Codec) -> bytes:
    """The payload of `update` under `codec`; `len()` of it is the exact bytes on the wire."""
    if codec.chunk_keep:
        bits = _LOW_BITS[codec.values]
        return encode_chunked(update, bits, codec.block, codec.chunk_keep, codec.quantile, codec.rank_pct, codec.tile)
    if not update:
        raise CompressionError("cannot encode an empty update")
    names = sorted(update, key=lambda n: n.encode("utf-8"))
    header = CODEC_MAGIC + struct.pack("<BIII", _FORMAT_CODES[codec.values], codec.block, codec.keep_ppm, len(names))
    return header + b"".join(_encode_tensor(n, update[n], codec) for n in names)


def _decode_values(reader: PayloadReader, codec: Codec, kept: int, name: str) -> torch.Tensor:
    if codec.values is ValueFormat.INT8:
        size = codec.block or max(kept, 1)
        blocks = math.ceil(kept / size)
        scales = torch.from_numpy(np.frombuffer(reader.take(4 * blocks, f"{name} scales"), "<f4").copy())
        q = torch.from_numpy(np.frombuffer(reader.take(kept, f"{name} values"), np.int8).copy())
        return _dequantize_int8(scales, q, codec.block)
    raw = reader.take(kept * _VALUE_BYTES[codec.values], f"{name} values")
    if codec.values is ValueFormat.FP32:
        return torch.from_numpy(np.frombuffer(raw, "<f4").copy())
    halves = torch.from_numpy(np.frombuffer(raw, "<i2").copy())
    dtype = torch.float16 if codec.values is ValueFormat.FP16 else torch.bfloat16
    return halves.view(dtype).to(torch.float32)


def _decode_indices(reader: PayloadReader, numel: int, kept: int, name: str) -> torch.Tensor:
    (kind,) = reader.unpack("<B", f"{name} index kind")
    if kind == _INDEX_BITMAP:
        raw = np.frombuffer(reader.take((numel + 7) // 8, f"{name} bitmap"), np.uint8)
        indices = np.flatnonzero(np.unpackbits(raw, bitorder="little")[:numel])
    elif kind == _INDEX_LIST:
        indices = np.frombuffer(reader.take(4 * kept, f"{name} indices"), "<u4").astype(np.int64)
        if np.any(np.diff(indices) <= 0) or (kept and indices[-1] >= numel):
            raise CompressionError(f"not a codec payload: {name} indices are not increasing and in range")
    else:
        raise CompressionError(f"not a codec payload: {name} has index kind {kind}")
    if indices.size != kept:
        raise CompressionError(f"not a codec payload: {name} lists {indices.size} indices for {kept} values")
    return torch.from_numpy(indices.astype(np.int64))


def decode(payload: bytes) -> dict[str, torch.Tensor]:
    """Inverse of `encode` (up to the codec's loss); rejects anything `encode` would not emit."""
    if is_chunked_payload(payload):
        return decode_chunked(payload)
    reader = PayloadReader(payload)
    if bytes(reader.take(len(CODEC_MAGIC), "magic")) != CODEC_MAGIC:
        raise CompressionError("not a codec payload: missing b'GLCODEC1' header")
    code, block, keep_ppm, count = reader.unpack("<BIII", "header")
    if code not in _CODE_FORMATS:
        raise CompressionError(f"not a codec payload: unknown value format code {code}")
    codec = Codec(_CODE_FORMATS[code], block, keep_ppm)
    out: dict[str, torch.Tensor] = {}
    previous = b""
    for _ in range(count):
        (name_len,) = reader.unpack("<H", "name length")
        raw_name = bytes(reader.take(name_len, "name"))
        if not raw_name or raw_name <= previous:
            raise CompressionError("not a codec payload: tensor names empty or not strictly increasing")
        previous = raw_name
        name = raw_name.decode("utf-8")
        (ndim,) = reader.unpack("<B", f"{name} rank")
        shape = reader.unpack(f"<{ndim}Q", f"{name} shape")
        numel = math.prod(shape)
        (kept,) = reader.unpack("<Q", f"{name} kept count")
        if kept != _kept_count(numel, keep_ppm):
            raise CompressionError(f"not a codec payload: {name} keeps {kept} of {numel} values")
        indices = _decode_indices(reader, numel, kept, name) if keep_ppm else None
        values = _decode_values(reader, codec, kept, name)
        if indices is None:
            dense = values
        else:
            dense = torch.zeros(numel, dtype=torch.float32)
            dense[indices] = values
        out[name] = dense.view(shape)
    if reader.pos != len(reader.view):
        raise CompressionError(f"not a codec payload: {len(reader.view) - reader.pos} trailing bytes")
    return out


def get_payload_codec(payload: bytes) -> Codec:
    """The codec a payload was encoded with (from its header)."""
    if is_chunked_payload(payload):
        header = read_chunked_header(payload)
        bits = _BITS_FORMATS[header.bits]
        return Codec(bits, header.chunk, 0, header.k, header.quantile, header.rank_pct, header.tile)
    if len(payload) < len(CODEC_MAGIC) + 13 or payload[: len(CODEC_MAGIC)] != CODEC_MAGIC:
        raise CompressionError("not a codec payload: missing b'GLCODEC1' header")
    code, block, keep_ppm, _ = struct.unpack_from("<BIII", payload, len(CODEC_MAGIC))
    if code not in _CODE_FORMATS:
        raise CompressionError(f"not a codec payload: unknown value format code {code}")
    return Codec(_CODE_FORMATS[code], block, keep_ppm)


@dataclass(frozen=True)
class Compressed:
    """One error-feedback step: the payload, what the receiver decodes, the sender's new residual."""

    payload: bytes
    decoded: dict[str, torch.Tensor]
    residual: dict[str, torch.Tensor]


def compress_with_feedback(
    update: Mapping[str, torch.Tensor],
    codec: Codec,
    residual: Mapping[str, torch.Tensor] | None = None,
) -> Compressed:
    """Encode update + residual; return the payload, its decoding and the new residual.

    Pass the returned `residual` back on the sender's next call (None or {} at the start).
    """
    target = {}
    for name, value in update.items():
        carried = residual.get(name) if residual else None
        value32 = value.detach().to("cpu", torch.float32)
        target[name] = value32 if carried is None else value32 + carried
    payload = encode(target, codec)
    decoded = decode(payload)
    return Compressed(payload, decoded, {name: target[name] - decoded[name] for name in target})


def get_dense_fp32_bytes(update: Mapping[str, torch.Tensor]) -> int:
    """Bytes of the raw float32 values alone (the uncompressed reference, no header)."""
    return 4 * sum(t.numel() for t in update.values())
