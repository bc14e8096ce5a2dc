"""Pseudo-gradient codecs, the dense and top-k family (b"GLCODEC1"): exact byte counts, bounded loss, determinism,
error feedback, bad input. The chunked low-bit family is tests/protocol/test_chunked_codec.py."""

from __future__ import annotations

import math

import pytest
import torch

from protocol.compression import (
    FP32,
    Codec,
    CompressionError,
    ValueFormat,
    compress_with_feedback,
    decode,
    encode,
    get_payload_codec,
    parse_codec,
)

CODECS = [
    FP32,
    Codec(ValueFormat.FP16),
    Codec(ValueFormat.BF16),
    Codec(ValueFormat.INT8),
    Codec(ValueFormat.INT8, block=64),
    Codec(ValueFormat.INT8, block=64, keep_ppm=100_000),
    Codec(ValueFormat.FP16, keep_ppm=10_000),
]


def _update(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "param/b": torch.randn(130, generator=g) * 1e-3,
        "param/w": torch.randn(48, 40, generator=g) * 1e-2,
        "param/s": torch.randn((), generator=g),
    }


def _header_bytes(update: dict[str, torch.Tensor]) -> int:
    per_tensor = sum(2 + len(n.encode()) + 1 + 8 * t.dim() + 8 for n, t in update.items())
    return 8 + 13 + per_tensor


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_round_trip_keeps_names_shapes_and_bounds_the_error(codec):
    update = _update()
    decoded = decode(encode(update, codec))
    assert sorted(decoded) == sorted(update)
    for name, value in update.items():
        assert decoded[name].shape == value.shape and decoded[name].dtype == torch.float32
        error = (decoded[name] - value).norm() / value.norm()
        if codec.is_lossless:
            assert torch.equal(decoded[name], value)
        elif not codec.keep_ppm:
            assert error < 0.02, (name, error)


@pytest.mark.parametrize(
    ("codec", "value_bytes"),
    [(FP32, 4), (Codec(ValueFormat.FP16), 2), (Codec(ValueFormat.BF16), 2), (Codec(ValueFormat.INT8), 1)],
    ids=lambda x: x.name if isinstance(x, Codec) else str(x),
)
def test_dense_payload_size_is_exact(codec, value_bytes):
    update = _update()
    numel = sum(t.numel() for t in update.values())
    scales = 4 * len(update) if codec.values is ValueFormat.INT8 else 0
    assert len(encode(update, codec)) == _header_bytes(update) + value_bytes * numel + scales


def test_int8_block_scales_and_top_k_sizes_are_exact():
    update = {"w": torch.randn(1000, generator=torch.Generator().manual_seed(1))}
    header = _header_bytes(update)
    assert len(encode(update, Codec(ValueFormat.INT8, block=256))) == header + 4 * 4 + 1000
    # 10% of 1000 kept: bitmap (125 bytes) beats a u32 list (400 bytes); 4 bytes of kind+scale
    assert len(encode(update, Codec(ValueFormat.INT8, keep_ppm=100_000))) == header + 1 + 125 + 4 + 100
    # 1% kept: 10 u32 indices (40 bytes) beat the bitmap
    assert len(encode(update, Codec(ValueFormat.FP16, keep_ppm=10_000))) == header + 1 + 40 + 2 * 10


def test_top_k_keeps_the_largest_magnitudes_and_zeroes_the_rest():
    update = {"w": torch.tensor([0.1, -5.0, 0.2, 3.0, -0.3, 0.0, 4.0, 0.05, 1.0, -2.0])}
    decoded = decode(encode(update, Codec(ValueFormat.FP32, keep_ppm=300_000)))["w"]
    assert torch.equal(decoded, torch.tensor([0.0, -5.0, 0, 3.0, 0, 0, 4.0, 0, 0, 0]))


def test_top_k_ties_are_broken_by_index_deterministically():
    update = {"w": torch.tensor([1.0, -1.0, 1.0, 1.0])}
    decoded = decode(encode(update, Codec(ValueFormat.FP32, keep_ppm=500_000)))["w"]
    assert torch.equal(decoded, torch.tensor([1.0, -1.0, 0.0, 0.0]))


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_encoding_is_deterministic(codec):
    assert encode(_update(3), codec) == encode(_update(3), codec)


def test_names_are_canonically_ordered():
    update = _update()
    reordered = dict(reversed(list(update.items())))
    assert encode(update, Codec()) == encode(reordered, Codec())


def test_int8_rounds_to_the_nearest_level_of_its_block_scale():
    update = {"w": torch.tensor([127.0, 63.4, -63.6, 0.5, 1.5, 0.0])}
    decoded = decode(encode(update, Codec(ValueFormat.INT8)))["w"]
    assert torch.equal(decoded, torch.tensor([127.0, 63.0, -64.0, 0.0, 2.0, 0.0]))  # half to even


def test_all_zero_tensor_survives_int8():
    update = {"w": torch.zeros(10)}
    assert torch.equal(decode(encode(update, Codec(ValueFormat.INT8, block=4)))["w"], torch.zeros(10))


def test_error_feedback_carries_what_the_codec_dropped():
    codec = Codec(ValueFormat.INT8, keep_ppm=100_000)
    update = _update(5)
    step = compress_with_feedback(update, codec)
    for name in update:
        assert torch.allclose(step.decoded[name] + step.residual[name], update[name], atol=1e-7)
    # Over many rounds of the same update, the decoded sum tracks the true sum: nothing is lost.
    residual, total = None, {n: torch.zeros_like(v) for n, v in update.items()}
    rounds = 100
    for _ in range(rounds):
        step = compress_with_feedback(update, codec, residual)
        residual = step.residual
        for name in update:
            total[name] += step.decoded[name]
    for name, value in update.items():
        assert torch.allclose(total[name] + residual[name], rounds * value, rtol=1e-4, atol=1e-5)
        with_feedback = (total[name] / rounds - value).norm() / value.norm()
        without = (decode(encode({name: value}, codec))[name] - value).norm() / value.norm()
        assert with_feedback < 0.15, (name, with_feedback)
        if value.numel() >= 10:  # top-10% drops most of a tensor without feedback
            assert without > 0.5, (name, without)


def test_parse_codec_inverts_name():
    for codec in [*CODECS, Codec(ValueFormat.INT8, block=256, keep_ppm=250_000)]:
        assert parse_codec(codec.name) == codec
        assert get_payload_codec(encode(_update(), codec)) == codec


def test_bad_codecs_and_updates_are_rejected():
    with pytest.raises(CompressionError, match="only applies to int8"):
        Codec(ValueFormat.FP16, block=64)
    with pytest.raises(CompressionError, match="keep_ppm"):
        Codec(ValueFormat.INT8, keep_ppm=2_000_000)
    with pytest.raises(CompressionError, match="unknown codec"):
        parse_codec("int3")
    with pytest.raises(CompressionError, match="NaN"):
        encode({"w": torch.tensor([1.0, math.nan])}, Codec())
    with pytest.raises(CompressionError, match="not a floating-point"):
        encode({"w": torch.tensor([1, 2])}, Codec())
    with pytest.raises(CompressionError, match="empty"):
        encode({}, Codec())


def test_bad_payloads_are_rejected():
    payload = encode(_update(), Codec(ValueFormat.INT8, block=64, keep_ppm=100_000))
    with pytest.raises(CompressionError, match="header"):
        decode(b"GLSTATE1" + payload[8:])
    with pytest.raises(CompressionError, match="truncated"):
        decode(payload[:-1])
    with pytest.raises(CompressionError, match="trailing"):
        decode(payload + b"\0")
