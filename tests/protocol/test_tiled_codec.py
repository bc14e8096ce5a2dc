"""2-D tiles for the chunked codecs (issue 40, b"GLCODEC3", protocol/codec_tiles.py): labels and their refusals, the
header, chunks that really are S x S tiles, exact and canonical round trips, the 1-D fallback, the same bytes in any
process and thread count, error feedback, and every tiled payload equal to the 1-D code over the tile order."""

from __future__ import annotations

import math
import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.codec_tiles import from_tile_order, is_tiled, to_tile_order
from protocol.compression import (
    Codec,
    CompressionError,
    ValueFormat,
    compress_with_feedback,
    decode,
    encode,
    get_payload_codec,
    parse_codec,
)
from tests.protocol.test_chunked_codec import draw_chunked_codec, draw_exact_update, get_payloads_by_process

HEADER = 8 + 14  # magic and the five GLCODEC2 fields; GLCODEC3 adds a u16 tile side
LABELS = [
    "int1-c4096-k2048-r30-t64",
    "int2-c4096-k176-t64",
    "int2-c4096-k4096-q-t64",
    "int1-c1024-k512-r30-t32",
    "int4-c16-k3-t4",
    "int1-c4-k4-t2",
    "int8-c9-k9-q-t3",
]


def _plain(codec: Codec) -> Codec:
    """The same codec with 1-D chunks."""
    return Codec(codec.values, codec.block, 0, codec.chunk_keep, codec.quantile, codec.rank_pct)


def _update(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(128, 192, generator=g) * 1e-2, "b": torch.randn(300, generator=g)}


def _tiles_flat(x: torch.Tensor, side: int) -> list[torch.Tensor]:
    """The S x S tiles of `x`, row-major, each flattened row-major (a reference written as loops)."""
    return [
        x[i : i + side, j : j + side].reshape(-1)
        for i in range(0, x.shape[0], side)
        for j in range(0, x.shape[1], side)
    ]


# -- labels and header ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("label", LABELS)
def test_tiled_labels_round_trip_and_the_payload_names_its_tile(label):
    codec = parse_codec(label)
    assert codec.tile == math.isqrt(codec.block) and codec.name == label and parse_codec(codec.name) == codec
    payload = encode(_update(), codec)
    assert payload[:8] == b"GLCODEC3" and struct.unpack_from("<H", payload, HEADER) == (codec.tile,)
    assert get_payload_codec(payload) == codec
    plain = _plain(codec)
    assert plain.tile == 0 and encode(_update(), plain)[:8] == b"GLCODEC2"
    assert parse_codec(label.rsplit("-", 1)[0]) == plain


def test_bad_tiles_are_refused_with_what_to_write_instead():
    with pytest.raises(CompressionError, match=r"got -t32 with chunk 4096; write -t64"):
        parse_codec("int1-c4096-k2048-r30-t32")
    with pytest.raises(CompressionError, match=r"write -t32 .* or -c4096 \(64 x 64 tiles\)"):
        parse_codec("int2-c1024-k176-t64")
    with pytest.raises(CompressionError, match=r"got -t10 with chunk 1000; write -c100"):
        parse_codec("int2-c1000-k10-t10")
    with pytest.raises(CompressionError, match=r"got -t1 with chunk 4096; write -t64"):
        parse_codec("int2-c4096-k176-t1")
    with pytest.raises(CompressionError, match=r"e\.g\. int1-c4096-k2048-t64, or no -t part"):
        parse_codec("int2-c1000-k500-t2")  # neither a square chunk nor room for k in 2 x 2 tiles
    for label in ("int8-b256-t64", "fp16-t64", "int8-tensor-t8"):
        with pytest.raises(CompressionError, match="apply to a chunked codec only"):
            parse_codec(label)
    with pytest.raises(CompressionError, match="S x S = chunk"):
        Codec(ValueFormat.INT2, block=64, chunk_keep=4, tile=4)
    assert Codec(ValueFormat.INT2, block=64, chunk_keep=4, tile=8).name == "int2-c64-k4-t8"


def test_non_canonical_tiled_headers_are_rejected():
    codec = parse_codec("int2-c4096-k176-t64")
    payload = encode(_update(), codec)
    for side in (0, 1, 32, 4096):  # tile 0 in the new format, or a side whose square is not the chunk
        bad = payload[:HEADER] + struct.pack("<H", side) + payload[HEADER + 2 :]
        with pytest.raises(CompressionError, match=f"tile side {side} for chunk 4096"):
            decode(bad)
    plain = encode(_update(), _plain(codec))
    with pytest.raises(CompressionError, match="tile side 0"):  # a 1-D payload written as GLCODEC3
        decode(b"GLCODEC3" + plain[8:HEADER] + b"\0\0" + plain[HEADER:])
    with pytest.raises(CompressionError, match="missing b'GLCODEC2' or b'GLCODEC3' header"):
        decode(payload[: HEADER + 1])
    with pytest.raises(CompressionError, match="truncated"):
        decode(payload[: HEADER + 2])
    with pytest.raises(CompressionError, match="trailing"):
        decode(payload + b"\0")


# -- chunks are tiles -----------------------------------------------------------------------------------------------


def test_the_tile_order_is_tiles_row_major_each_row_major():
    x = torch.arange(128 * 192, dtype=torch.float32).view(128, 192)
    flat = to_tile_order(x.reshape(-1), x.shape, 64)
    assert torch.equal(flat, torch.cat(_tiles_flat(x, 64)))
    assert torch.equal(from_tile_order(flat, x.shape, 64).view(128, 192), x)
    for shape in [(100, 64), (64, 100), (8192,), (64, 64, 2), ()]:
        assert not is_tiled(shape, 64)
        values = torch.arange(math.prod(shape), dtype=torch.float32)
        assert to_tile_order(values, shape, 64) is values and from_tile_order(values, shape, 64) is values
    assert is_tiled((64, 128), 64) and is_tiled((0, 64), 64) and not is_tiled((64, 128), 0)


@pytest.mark.parametrize("label", ["int1-c4096-k1-t64", "int2-c4096-k1-t64", "int8-c4096-k1-t64"])
def test_k1_keeps_exactly_the_one_large_value_of_each_tile(label):
    """One large value per 64 x 64 tile of a 128 x 128 matrix, all four in rows whose 1-D chunks of 4096 (32 rows)
    hold two each: the tiles keep exactly the four, the 1-D chunks keep two of them and two small values."""
    x = torch.rand(128, 128, generator=torch.Generator().manual_seed(4)) * 1e-2
    large = {(5, 10): 5.0, (20, 100): -6.0, (70, 3): 7.0, (90, 127): -8.0}  # tiles (0,0), (0,1), (1,0), (1,1)
    expected = torch.zeros(128, 128)
    for (row, col), value in large.items():
        x[row, col] = expected[row, col] = value
    codec = parse_codec(label)
    payload = encode({"w": x}, codec)
    assert torch.equal(decode(payload)["w"], expected)
    assert encode(decode(payload), codec) == payload
    chunks = decode(encode({"w": x}, _plain(codec)))["w"]
    assert {tuple(p) for p in chunks.nonzero().tolist()} != set(large)
    assert int((chunks.abs() >= 5).sum()) == 2


def test_each_tile_keeps_its_own_top_k():
    """Top 3 of each 8 x 8 tile of an arange matrix: its last three values (the bottom row's right end)."""
    x = torch.arange(1.0, 24 * 40 + 1).view(24, 40)
    decoded = decode(encode({"w": x}, parse_codec("int8-c64-k3-t8")))["w"]
    for tile, got in zip(_tiles_flat(x, 8), _tiles_flat(decoded, 8), strict=True):
        assert not got[:-3].any() and torch.allclose(got[-3:], tile[-3:], rtol=1 / 128)
        assert got[-1] == tile[-1]  # the chunk maximum is exact


def test_tiled_round_trips_are_exact_for_representable_values():
    """Per tile: one magnitude as signs (int1), two magnitudes in equal counts (2-bit quantile levels), multiples of
    max / 128 (int8 steps). Exact with tiles; with 1-D chunks (32 rows x 2 tiles each) not."""
    g = torch.Generator().manual_seed(5)
    signs = torch.where(torch.rand(128, 192, generator=g) < 0.5, -1.0, 1.0)
    scale = torch.tensor([[2.0**-i for i in range(j, j + 3)] for j in range(2)]).repeat_interleave(64, 0)
    scale = scale.repeat_interleave(64, 1)  # 2 x 3 tiles, each its own power of two
    halves = torch.cat([torch.ones(2048), torch.full((2048,), 3.0)])
    two = torch.cat([halves[torch.randperm(4096, generator=g)] for _ in range(6)])
    two = from_tile_order(two, (128, 192), 64).view(128, 192)
    steps = torch.randint(1, 129, (128, 192), generator=g).float()
    steps[::64, ::64] = 128.0  # each tile's maximum is 128 steps
    for label, x in [
        ("int1-c4096-k4096-t64", signs * scale),
        ("int2-c4096-k4096-q-t64", signs * scale * two),
        ("int8-c4096-k4096-t64", signs * scale * steps),
    ]:
        codec = parse_codec(label)
        payload = encode({"w": x}, codec)
        assert torch.equal(decode(payload)["w"], x), label
        assert encode(decode(payload), codec) == payload
        assert not torch.equal(decode(encode({"w": x}, _plain(codec)))["w"], x), label


def test_other_shapes_fall_back_to_1d_chunks():
    """Tensors that are not 2-D with both dimensions multiples of S: byte for byte the 1-D body."""
    g = torch.Generator().manual_seed(6)
    shapes = [(100, 64), (64, 100), (8192,), (64, 64, 2), (), (0, 64), (1, 4096)]
    update = {f"t{i}": torch.randn(shape, generator=g) for i, shape in enumerate(shapes)}
    for label in LABELS[:4]:
        tiled, plain = encode(update, parse_codec(label)), encode(update, _plain(parse_codec(label)))
        assert tiled == b"GLCODEC3" + plain[8:HEADER] + struct.pack("<H", parse_codec(label).tile) + plain[HEADER:]
        mixed = {**update, "w": torch.randn(128, 128, generator=g)}  # (128 x 64: a tile is 64 whole rows, as in 1-D)
        assert encode(mixed, parse_codec(label))[HEADER + 2 :] != encode(mixed, _plain(parse_codec(label)))[HEADER:]


# -- determinism, feedback, properties ------------------------------------------------------------------------------


def test_tiled_bytes_are_identical_across_processes_and_thread_counts():
    shapes = {"w": ([128, 192], 1e-3), "v": ([64, 100], 1.0), "b": ([333], 1.0)}
    labels = ["int1-c4096-k2048-r30-t64", "int2-c4096-k176-t64", "int2-c1024-k1024-q-t32"]
    assert len(get_payloads_by_process(labels, shapes)) == 1


def test_tiled_error_feedback_tracks_the_sum():
    codec = parse_codec("int1-c64-k32-r30-t8")
    update = {
        "w": torch.randn(48, 40, generator=torch.Generator().manual_seed(9)) * 1e-2,
        "b": torch.randn(130, generator=torch.Generator().manual_seed(10)),
    }
    residual, total, rounds = None, {n: torch.zeros_like(v) for n, v in update.items()}, 60
    for _ in range(rounds):
        step = compress_with_feedback(update, codec, residual)
        assert step.payload[:8] == b"GLCODEC3" and get_payload_codec(step.payload) == codec
        residual = step.residual
        for name in update:
            total[name] += step.decoded[name]
    for name, value in update.items():
        assert torch.allclose(total[name] + residual[name], rounds * value, rtol=1e-4, atol=1e-4)
        assert (total[name] / rounds - value).norm() / value.norm() < 0.3, name


@st.composite
def _tiled_cases(draw):
    """A tiled codec with a small side and an update of 2-D shapes, some multiples of the side and some not."""
    side = draw(st.integers(2, 4))
    chunk = side * side
    codec = draw_chunked_codec(draw, chunk, tile=side)
    dims = st.one_of(st.integers(0, 3).map(lambda n: n * side), st.integers(0, 13))
    return draw_exact_update(draw, dims, 3), codec


@settings(max_examples=150, deadline=None)
@given(_tiled_cases())
def test_a_tiled_payload_is_the_1d_code_of_the_tile_order(case):
    """For every tensor, the tiled payload's body is the 1-D payload's body of its values in tile order (flat, then
    given back its shape), and its decoding is that decoding put back in row-major order; the bytes are canonical."""
    update, codec = case
    payload = encode(update, codec)
    decoded = decode(payload)
    assert get_payload_codec(payload) == codec and encode(decoded, codec) == payload
    for name, x in update.items():
        assert decoded[name].shape == x.shape and decoded[name].dtype == torch.float32
        ordered = to_tile_order(x.reshape(-1), x.shape, codec.tile).reshape(x.shape)
        one_d = encode({name: ordered}, _plain(codec))
        assert (
            encode({name: x}, codec) == b"GLCODEC3" + one_d[8:HEADER] + struct.pack("<H", codec.tile) + one_d[HEADER:]
        )
        expected = from_tile_order(decode(one_d)[name].reshape(-1), x.shape, codec.tile).view(x.shape)
        assert torch.equal(decoded[name], expected)
