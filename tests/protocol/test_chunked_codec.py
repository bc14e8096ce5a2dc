"""Chunked top-k with low-bit values (SparseLoCo-style, b"GLCODEC2", protocol/chunked_codec.py): per-chunk bounds and
canonical bytes, exact sizes, quantile and int1 levels, tie rules, error feedback, the same bytes in any process and
thread count, and every malformed or non-canonical payload rejected."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

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
from tests.fresh_processes import get_outputs_at_thread_counts


def _update(seed: int = 0) -> dict[str, torch.Tensor]:
    """A bias, a matrix and a scalar at different scales (the same shapes as test_compression.py's)."""
    g = torch.Generator().manual_seed(seed)
    return {
        "param/b": torch.randn(130, generator=g) * 1e-3,
        "param/w": torch.randn(48, 40, generator=g) * 1e-2,
        "param/s": torch.randn((), generator=g),
    }


CHUNKED = [
    Codec(ValueFormat.INT2, block=64, chunk_keep=4),
    Codec(ValueFormat.INT4, block=100, chunk_keep=30),
    Codec(ValueFormat.INT8, block=16, chunk_keep=16),
    Codec(ValueFormat.INT2, block=4096, chunk_keep=64),
    Codec(ValueFormat.INT1, block=64, chunk_keep=64),
    Codec(ValueFormat.INT1, block=100, chunk_keep=30),
    Codec(ValueFormat.INT1, block=64, chunk_keep=32, rank_pct=40),
    Codec(ValueFormat.INT2, block=64, chunk_keep=64, quantile=True),
    Codec(ValueFormat.INT4, block=100, chunk_keep=100, quantile=True),
    Codec(ValueFormat.INT8, block=16, chunk_keep=16, quantile=True),
]


def _chunk_rows(flat: torch.Tensor, chunk: int) -> list[torch.Tensor]:
    return [flat[i : i + chunk] for i in range(0, flat.numel(), chunk)]


def _check_chunked_bounds(update: dict[str, torch.Tensor], codec: Codec) -> None:
    """Per chunk: exactly k non-zeros at the k largest |x|, each within the quantization bound (int1: each the
    chunk's median kept magnitude with x's sign)."""
    bits = {ValueFormat.INT1: 1, ValueFormat.INT2: 2, ValueFormat.INT4: 4, ValueFormat.INT8: 8}[codec.values]
    levels = 1 << (bits - 1)
    payload = encode(update, codec)
    decoded = decode(payload)
    assert sorted(decoded) == sorted(update)
    assert encode(decoded, codec) == payload  # canonical: decoding and re-encoding gives the same bytes
    if bits == 1:
        _check_sign_chunks(update, decoded, codec)
        return
    if codec.quantile:
        _check_quantile_chunks(update, decoded, codec, levels)
        return
    for name, value in update.items():
        assert decoded[name].shape == value.shape and decoded[name].dtype == torch.float32
        rows = _chunk_rows(value.reshape(-1), codec.block)
        for x, y in zip(rows, _chunk_rows(decoded[name].reshape(-1), codec.block), strict=True):
            keep = min(x.numel(), max(1, -(-codec.chunk_keep * x.numel() // codec.block)))
            kept = torch.sort(x.abs(), descending=True, stable=True).indices[:keep]
            mask = torch.zeros(x.numel(), dtype=torch.bool)
            mask[kept] = True
            assert not y[~mask].any()  # zeros outside the kept positions
            scale = x[mask].abs().max() / levels
            if scale == 0:
                assert not y.any()
                continue
            assert int((y != 0).sum()) == keep
            error = (y[mask] - x[mask]).abs()
            big = x[mask].abs() >= scale / 2
            assert torch.all(error[big] <= scale / 2 * (1 + 1e-6)), (name, error.max(), scale)
            assert torch.all(error <= scale * (1 + 1e-6))
            assert y[mask].abs().max() == x[mask].abs().max()  # the chunk maximum is exact
            assert torch.all(torch.sign(y[mask][x[mask] != 0]) == torch.sign(x[mask][x[mask] != 0]))


def _check_sign_chunks(update: dict[str, torch.Tensor], decoded: dict[str, torch.Tensor], codec: Codec) -> None:
    for name, value in update.items():
        rows = _chunk_rows(value.reshape(-1), codec.block)
        for x, y in zip(rows, _chunk_rows(decoded[name].reshape(-1), codec.block), strict=True):
            keep = min(x.numel(), max(1, -(-codec.chunk_keep * x.numel() // codec.block)))
            kept = torch.sort(x.abs(), descending=True, stable=True).indices[:keep]
            median = torch.sort(x[kept].abs(), descending=True, stable=True).values[keep * codec.rank_pct // 100]
            if median == 0:
                assert not y.any()
                continue
            mask = torch.zeros(x.numel(), dtype=torch.bool)
            mask[kept] = True
            assert not y[~mask].any()
            assert torch.equal(y[mask], torch.where(x[mask] < 0, -median, median))


def _check_quantile_chunks(
    update: dict[str, torch.Tensor], decoded: dict[str, torch.Tensor], codec: Codec, levels: int
) -> None:
    """Per chunk: at most L magnitudes, each value's decoded magnitude is one of its own rank bin's magnitudes, the
    code is monotone (larger |x|, no smaller |y|) and keeps signs."""
    for name, value in update.items():
        for x, y in zip(
            _chunk_rows(value.reshape(-1), codec.block),
            _chunk_rows(decoded[name].reshape(-1), codec.block),
            strict=True,
        ):
            n = x.numel()
            ranked = torch.sort(x.abs(), descending=True, stable=True)
            assert len(set(y.abs().tolist())) <= levels
            for rank, position in enumerate(ranked.indices.tolist()):
                b = rank * levels // n
                members = ranked.values[-(-b * n // levels) : -(-(b + 1) * n // levels)]
                assert y[position].abs() in members, (name, rank, y[position], members)
            y_by_rank = y.abs()[ranked.indices]
            assert torch.all(y_by_rank[:-1] >= y_by_rank[1:])
            both = (y != 0) & (x != 0)
            assert torch.equal(torch.sign(y[both]), torch.sign(x[both]))
            assert torch.all(y[x == 0] >= 0) and not torch.any(torch.signbit(y[y == 0]))  # a 0 decodes to +level


def test_quantile_levels_are_the_middle_magnitudes_of_equal_count_bins():
    # magnitudes by rank 8, 4, 3, 2, 1, 0.5 (positions 5, 1, 3, 4, 0, 2); 2 bins of 3: middles rank 1 (4), 4 (1)
    update = {"w": torch.tensor([1.0, -4.0, 0.5, -3.0, 2.0, 8.0])}
    assert decode(encode(update, parse_codec("int2-c6-k6-q")))["w"].tolist() == [1.0, -4.0, 1.0, -4.0, 1.0, 4.0]
    # 4 bins of 2 over 8 values (int4 has 8 levels: bins of 1, the middle of each is the value itself)
    exact = torch.tensor([5.0, -1.0, 0.25, 7.0, -2.0, 3.0, 0.0, -6.0])
    assert torch.equal(decode(encode({"w": exact}, parse_codec("int4-c8-k8-q")))["w"], exact)
    # a bin whose level is 0 decodes to +0 whatever the sign; equal levels share the lower index
    # (ranks 1, 0, 0 | 0, 0, 0: both middles are 0)
    zeros = {"w": torch.tensor([0.0, -0.0, -1.0, 0.0, 0.0, 0.0])}
    payload = encode(zeros, parse_codec("int2-c6-k6-q"))
    assert decode(payload)["w"].tolist() == [0.0] * 6
    assert not any(torch.signbit(decode(payload)["w"]).tolist())
    assert payload == encode({"w": torch.zeros(6)}, parse_codec("int2-c6-k6-q"))
    # size: header, name, shape, 2 f32 levels, index kind, 4096 x 2 code bits
    assert (
        len(encode({"w": torch.randn(4096)}, parse_codec("int2-c4096-k4096-q")))
        == 8 + 14 + 2 + 1 + 1 + 8 + 8 + 1 + 1024
    )


def test_quantile_levels_beat_max_steps_on_flat_magnitudes():
    """Why the quantile code exists: on Adam-like updates (flat magnitudes, a few large) its 2-bit error is well
    below the max / L steps' (whose lower level, max / 2, overshoots most values)."""
    g = torch.Generator().manual_seed(3)
    flat = torch.sign(torch.randn(40960, generator=g)) * (0.5 + torch.rand(40960, generator=g))
    flat[::997] *= 8.0  # the few large ones
    update = {"w": flat}

    def error(label: str) -> float:
        return float((decode(encode(update, parse_codec(label)))["w"] - flat).norm() / flat.norm())

    assert error("int2-c4096-k4096-q") < 0.5 * error("int2-c4096-k4096")
    assert error("int2-c4096-k4096-q") < error("int1-c4096-k4096")


def test_int1_is_a_sign_scaled_by_the_median_kept_magnitude():
    update = {"w": torch.tensor([0.5, -4.0, 0.0, 1.0, -2.0, 8.0])}
    # dense: magnitudes by rank 8, 4, 2, 1, 0.5, 0 -> median (rank 3) 1.0; the kept 0 decodes to +1
    assert decode(encode(update, parse_codec("int1-c6-k6")))["w"].tolist() == [1.0, -1.0, 1.0, 1.0, -1.0, 1.0]
    # top 3 (8, -4, -2), median rank 1 -> 4
    assert decode(encode(update, parse_codec("int1-c6-k3")))["w"].tolist() == [0.0, -4.0, 0.0, 0.0, -4.0, 4.0]
    # more than half zeros: the median is 0, the chunk decodes to zeros in the all-zero canonical form
    sparse = {"w": torch.tensor([0.0, 0.0, 0.0, -3.0])}
    payload = encode(sparse, parse_codec("int1-c4-k4"))
    assert payload == encode({"w": torch.zeros(4)}, parse_codec("int1-c4-k4"))
    assert not decode(payload)["w"].any()
    assert (
        len(encode({"w": torch.randn(4096)}, parse_codec("int1-c4096-k4096"))) == 8 + 14 + 2 + 1 + 1 + 8 + 4 + 1 + 512
    )
    # another rank: floor(6 x 25 / 100) = 1 -> 4; rank 40% of the top 4 (8, -4, -2, 1) = rank 1 -> 4
    assert decode(encode(update, parse_codec("int1-c6-k6-r25")))["w"].tolist() == [4.0, -4.0, 4.0, 4.0, -4.0, 4.0]
    assert decode(encode(update, parse_codec("int1-c6-k4-r40")))["w"].tolist() == [0.0, -4.0, 0.0, 4.0, -4.0, 4.0]
    assert encode(update, parse_codec("int1-c6-k4-r40"))[9] == 40  # the rank is in the header


@pytest.mark.parametrize("codec", CHUNKED, ids=lambda c: c.name)
def test_chunked_round_trip_bounds_and_canonical_bytes(codec):
    update = {**_update(7), "zeros": torch.zeros(200), "empty": torch.zeros(0, 3)}
    _check_chunked_bounds(update, codec)
    assert get_payload_codec(encode(update, codec)) == codec
    assert parse_codec(codec.name) == codec


def test_chunked_size_is_exact_and_picks_the_smaller_index():
    update = {"w": torch.arange(1.0, 4097.0)}  # one chunk; the top 64 are the last 64 positions
    header = 8 + 14 + 2 + 1 + 1 + 8
    payload = encode(update, parse_codec("int2-c4096-k64"))
    # Rice (parameter 5): first gap 4032 -> 126 ones + 0, then 63 zero gaps -> 63 zeros; 64 x 5 remainder bits.
    assert len(payload) == header + 4 + 1 + 4 + math.ceil((127 + 63) / 8) + 64 * 5 // 8 + 64 * 2 // 8
    dense_ish = encode(update, parse_codec("int2-c4096-k2048"))
    assert dense_ish[header + 4] == 0  # bitmap: 512 bytes beat Rice codes here
    assert len(dense_ish) == header + 4 + 1 + 512 + 2048 * 2 // 8
    assert decode(encode(update, parse_codec("int8-c4096-k4096")))["w"][-1] == 4096.0


def test_chunked_quantization_levels_round_half_to_even():
    # Scale 4 / 2 = 2: |x| / 2 -> 0.5 rounds to 0 -> level 1 (clamped), 1.5 -> 2, 1.0 -> 1.
    update = {"w": torch.tensor([4.0, -3.0, 1.0, 2.0])}
    decoded = decode(encode(update, parse_codec("int2-c4-k4")))["w"]
    assert torch.equal(decoded, torch.tensor([4.0, -4.0, 2.0, 2.0]))


def test_chunked_ties_go_to_the_lower_position():
    update = {"w": torch.tensor([1.0, -1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0])}
    decoded = decode(encode(update, parse_codec("int2-c4-k2")))["w"]
    assert torch.equal(decoded, torch.tensor([1.0, -1.0, 0, 0, 0, 1.0, 1.0, 0]))


def test_chunked_error_feedback_tracks_the_sum():
    codec = parse_codec("int2-c256-k8")
    update = _update(9)
    residual, total, rounds = None, {n: torch.zeros_like(v) for n, v in update.items()}, 60
    for _ in range(rounds):
        step = compress_with_feedback(update, codec, residual)
        residual = step.residual
        for name in update:
            total[name] += step.decoded[name]
    for name, value in update.items():
        assert torch.allclose(total[name] + residual[name], rounds * value, rtol=1e-4, atol=1e-4)
        assert (total[name] / rounds - value).norm() / value.norm() < 0.3, name


_LABELS = [
    "int2-c4096-k64",
    "int4-c512-k200",
    "int1-c4096-k4096",
    "int2-c4096-k4096-q",
    "int4-c512-k512-q",
    "int1-c4096-k2048-r40",
]
_SUBPROCESS = """
import json, sys, torch
torch.set_num_threads(int(sys.argv[1]))
from protocol.compression import encode, parse_codec
g = torch.Generator().manual_seed(11)
update = {name: torch.randn(shape, generator=g) * scale for name, (shape, scale) in json.loads(sys.argv[2]).items()}
sys.stdout.write(" ".join(encode(update, parse_codec(label)).hex() for label in sys.argv[3:]))
"""


def get_payloads_by_process(labels: list[str], shapes: dict[str, tuple[list[int], float]]) -> set[str]:
    """The payloads (hex, space-separated) of a seeded update of `shapes` (name -> (shape, scale of a standard normal))
    under each of `labels`, from fresh processes at 1 and 2 torch threads and from this one: one element when all
    three agree byte for byte. Shared by the tiled codec's tests (tests/protocol/test_tiled_codec.py)."""
    import json

    outputs = get_outputs_at_thread_counts(_SUBPROCESS, json.dumps(shapes), *labels)
    g = torch.Generator().manual_seed(11)
    update = {name: torch.randn(shape, generator=g) * scale for name, (shape, scale) in shapes.items()}
    return outputs | {" ".join(encode(update, parse_codec(label)).hex() for label in labels)}


def test_chunked_bytes_are_identical_across_processes_and_thread_counts():
    assert len(get_payloads_by_process(_LABELS, {"a": ([96, 700], 1e-3), "b": ([333], 1.0)})) == 1


def test_chunked_codecs_are_validated():
    with pytest.raises(CompressionError, match="chunked top-k"):
        Codec(ValueFormat.INT2)
    with pytest.raises(CompressionError, match="1 <= k <= chunk"):
        parse_codec("int2-c64-k65")
    with pytest.raises(CompressionError, match="1 <= k <= chunk"):
        Codec(ValueFormat.FP16, block=64, chunk_keep=4)
    for label in ("int1-c64-k64-q", "int2-c64-k8-q"):
        with pytest.raises(CompressionError, match="quantile levels need"):
            parse_codec(label)
    with pytest.raises(CompressionError, match="chunked codec only"):
        parse_codec("int8-b256-q")
    for label in ("int2-c64-k4-r40", "int8-b256-r40"):
        with pytest.raises(CompressionError, match="chunked int1 codecs only"):
            parse_codec(label)
    for label in ("int1-c64-k64-r0", "int1-c64-k64-r100"):
        with pytest.raises(CompressionError, match=r"1\.\.99 percent"):
            parse_codec(label)


def test_bad_chunked_payloads_are_rejected():
    update = {"w": torch.arange(1.0, 4097.0), "b": torch.randn(50, generator=torch.Generator().manual_seed(2))}
    payload = encode(update, parse_codec("int2-c4096-k64"))
    with pytest.raises(CompressionError, match="truncated"):
        decode(payload[:-1])
    with pytest.raises(CompressionError, match="trailing"):
        decode(payload + b"\0")
    odd = encode({"w": torch.tensor([3.0, -1.0, 2.0])}, parse_codec("int2-c4-k3"))  # 6 code bits, 2 padding
    with pytest.raises(CompressionError, match="padding"):
        decode(odd[:-1] + bytes([odd[-1] | 0x80]))
    bad_header = bytearray(payload)
    bad_header[9] = 2  # an unknown level kind
    with pytest.raises(CompressionError, match="level kind"):
        decode(bytes(bad_header))
    bad_header[9] = 1  # quantile levels on a top-k payload
    with pytest.raises(CompressionError, match="quantile levels with"):
        decode(bytes(bad_header))
    signs = bytearray(encode(update, parse_codec("int1-c4096-k4096")))
    for rank in (0, 100):  # int1's level byte is the scale rank, 1..99
        signs[9] = rank
        with pytest.raises(CompressionError, match="level kind"):
            decode(bytes(signs))
    # A chunk whose codes never reach the top level cannot come from the encoder.
    dense = bytearray(encode({"w": torch.tensor([4.0, 2.0, 2.0, 2.0])}, parse_codec("int2-c4-k4")))
    dense[-1] = 0  # every code -> level 0, sign +
    with pytest.raises(CompressionError, match="non-canonical"):
        decode(bytes(dense))
    # A negative chunk scale.
    scaled = bytearray(encode({"w": torch.tensor([4.0, 2.0, 2.0, 2.0])}, parse_codec("int2-c4-k4")))
    scaled[8 + 14 + 2 + 1 + 1 + 8 + 3] |= 0x80
    with pytest.raises(CompressionError, match="scale"):
        decode(bytes(scaled))


def test_non_canonical_quantile_payloads_are_rejected():
    levels_at = 8 + 14 + 2 + 1 + 1 + 8  # header, name "w", rank, one dim
    payload = encode({"w": torch.tensor([3.0, -1.0, 2.0, 0.5])}, parse_codec("int2-c4-k4-q"))  # levels 1, 3
    decreasing = bytearray(payload)
    decreasing[levels_at : levels_at + 8] = torch.tensor([3.0, 1.0]).numpy().astype("<f4").tobytes()
    with pytest.raises(CompressionError, match="decrease"):
        decode(bytes(decreasing))
    # every value at the upper level (codes 01 11 01 01): not two equal-count bins, so not what encode emits
    unequal = bytearray(payload)
    unequal[-1] = 0b01011101
    with pytest.raises(CompressionError, match="canonical"):
        decode(bytes(unequal))
    # equal levels: only the lower index is canonical
    tied = encode({"w": torch.tensor([1.0, 1.0, 1.0, 1.0])}, parse_codec("int2-c4-k4-q"))
    assert tied[-1] == 0  # all four codes at index 0
    higher = bytearray(tied)
    higher[-1] = 0b01010101
    with pytest.raises(CompressionError, match="canonical"):
        decode(bytes(higher))


def draw_chunked_codec(draw, chunk: int, tile: int = 0) -> Codec:
    """A chunked codec of `chunk` (and `tile`): any value bits, a drawn k, rank or quantile levels."""
    bits = draw(st.sampled_from([ValueFormat.INT1, ValueFormat.INT2, ValueFormat.INT4, ValueFormat.INT8]))
    if bits is ValueFormat.INT1:
        keep, rank = draw(st.integers(1, chunk)), draw(st.integers(1, 99))
        return Codec(bits, block=chunk, chunk_keep=keep, rank_pct=rank, tile=tile)
    if draw(st.booleans()):
        return Codec(bits, block=chunk, chunk_keep=chunk, quantile=True, tile=tile)
    return Codec(bits, block=chunk, chunk_keep=draw(st.integers(1, chunk)), tile=tile)


def draw_exact_update(draw, dims, max_rank: int) -> dict[str, torch.Tensor]:
    """1-3 tensors of shapes from `dims`, with values (ties, zeros, mixed scales) of few significant digits."""
    update = {}
    for index in range(draw(st.integers(1, 3))):
        shape = tuple(draw(st.lists(dims, min_size=0, max_size=max_rank)))
        numel = math.prod(shape)
        digits = draw(st.lists(st.integers(-20, 20), min_size=numel, max_size=numel))
        exponent = draw(st.integers(-8, 3))
        update[f"t{index}"] = (torch.tensor(digits, dtype=torch.float32) * 10.0**exponent).reshape(shape)
    return update


@st.composite
def _chunked_cases(draw):
    """A small update (ties, zeros, mixed scales) and a chunked codec small enough to cover edge cases."""
    codec = draw_chunked_codec(draw, draw(st.integers(1, 40)))
    return draw_exact_update(draw, st.integers(0, 9), 2), codec


@settings(max_examples=150, deadline=None)
@given(_chunked_cases())
def test_chunked_properties(case):
    update, codec = case
    _check_chunked_bounds(update, codec)


_FLIP_UPDATE = {"a": torch.randn(40, 50, generator=torch.Generator().manual_seed(0)), "z": torch.zeros(9)}


@settings(max_examples=450, deadline=None)
@given(
    st.sampled_from(
        [
            "int2-c64-k4",
            "int2-c64-k40",
            "int4-c100-k30",
            "int8-c16-k16",
            "int1-c64-k64",
            "int1-c64-k9",
            "int1-c64-k32-r40",
            "int2-c64-k64-q",
            "int4-c100-k100-q",
            "int2-c100-k10-t10",  # 2-D tiles (GLCODEC3): "a" is 40 x 50, tiled by 10 and by 5
            "int1-c100-k50-r30-t10",
            "int2-c100-k100-q-t10",
            "int4-c25-k5-t5",
        ]
    ),
    st.data(),
)
def test_a_flipped_bit_is_rejected_or_still_canonical(label, data):
    """One update, one payload: any accepted byte string is exactly what `encode` emits for its decoding."""
    payload = bytearray(encode(_FLIP_UPDATE, parse_codec(label)))
    position = data.draw(st.integers(0, len(payload) - 1))
    payload[position] ^= 1 << data.draw(st.integers(0, 7))
    try:
        decoded = decode(bytes(payload))
    except CompressionError:
        return
    assert encode(decoded, get_payload_codec(bytes(payload))) == bytes(payload)
