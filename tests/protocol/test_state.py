"""Canonical state serialization and hashing."""

from __future__ import annotations

import pickle

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import GradledgerError, StateEncodingError
from protocol.state import (
    DTYPE_CODES,
    compute_state_hash,
    decode_state,
    encode_state,
    is_same_state,
)

names = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FF), min_size=1, max_size=12)
shapes = st.lists(st.integers(min_value=0, max_value=4), min_size=0, max_size=3)
dtypes = st.sampled_from(sorted(DTYPE_CODES, key=str))


@st.composite
def tensors(draw):
    shape = draw(shapes)
    dtype = draw(dtypes)
    seed = draw(st.integers(0, 2**31))
    generator = torch.Generator().manual_seed(seed)
    raw = torch.randint(-100, 100, shape, generator=generator)
    return raw.to(dtype) / 3 if dtype.is_floating_point else raw.to(dtype)


states = st.dictionaries(names, tensors(), min_size=0, max_size=5)


@settings(max_examples=150, deadline=None)
@given(states)
def test_encode_decode_roundtrip_is_exact(state):
    encoded = encode_state(state)
    decoded = decode_state(encoded)
    assert is_same_state(decoded, state)
    assert encode_state(decoded) == encoded
    assert compute_state_hash(decoded) == compute_state_hash(state)


@settings(max_examples=60, deadline=None)
@given(states)
def test_hash_ignores_insertion_order(state):
    reversed_state = dict(reversed(list(state.items())))
    assert compute_state_hash(reversed_state) == compute_state_hash(state)


def test_hash_sees_one_bit_dtype_shape_and_name_changes():
    base = {"w": torch.ones(2, 3), "b": torch.zeros(3)}
    h = compute_state_hash(base)
    flipped = base["w"].clone()
    flipped.view(torch.int32)[0, 0] ^= 1
    variants = [
        {"w": flipped, "b": base["b"]},
        {"w": base["w"].double(), "b": base["b"]},
        {"w": base["w"].reshape(3, 2), "b": base["b"]},
        {"W": base["w"], "b": base["b"]},
        {"w": base["w"], "b": base["b"], "c": torch.zeros(0)},
        {"w": base["w"], "b": -base["b"]},  # -0.0 differs from 0.0 bitwise
    ]
    hashes = {compute_state_hash(v) for v in variants}
    assert h not in hashes and len(hashes) == len(variants)


def test_non_contiguous_and_grad_tensors_hash_like_their_values():
    w = torch.arange(12.0).reshape(3, 4)
    assert compute_state_hash({"w": w.t()}) == compute_state_hash({"w": w.t().contiguous()})
    p = torch.nn.Parameter(w.clone())
    assert compute_state_hash({"w": p}) == compute_state_hash({"w": w})


def test_known_encoding_layout():
    encoded = encode_state({"a": torch.tensor([1.0], dtype=torch.float32)})
    expected = b"GLSTATE1" + (1).to_bytes(4, "little") + (1).to_bytes(2, "little") + b"a"
    expected += bytes([1, 1]) + (1).to_bytes(8, "little") + bytes.fromhex("0000803f")
    assert encoded == expected


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"w": [1.0, 2.0]}, "is a list, not a tensor"),
        ({"step": 3}, "is a int, not a tensor"),
        ({"": torch.zeros(1)}, "non-empty strings"),
        ({"z": torch.zeros(2, dtype=torch.complex64)}, "dtype torch.complex64"),
        ([("w", torch.zeros(1))], "must be a mapping"),
    ],
)
def test_bad_states_raise_clear_errors(state, message):
    with pytest.raises(StateEncodingError, match=message):
        compute_state_hash(state)


def test_decode_rejects_pickle_truncation_and_trailing_bytes():
    good = encode_state({"w": torch.ones(4)})
    with pytest.raises(StateEncodingError, match=r"torch\.save/pickle"):
        decode_state(pickle.dumps({"w": [1.0]}))
    with pytest.raises(StateEncodingError, match="truncated"):
        decode_state(good[:-1])
    with pytest.raises(StateEncodingError, match="trailing bytes"):
        decode_state(good + b"\0")
    unsorted = encode_state({"b": torch.ones(1)}).replace(b"\x01\x00b", b"\x01\x00a")
    two = encode_state({"a": torch.ones(1), "b": torch.ones(1)})
    swapped = two[:12] + two[12 + len(unsorted) - 12 :] + two[12 : 12 + len(unsorted) - 12]
    with pytest.raises(StateEncodingError, match="strictly increasing"):
        decode_state(swapped)


def test_errors_share_one_root():
    assert issubclass(StateEncodingError, GradledgerError)


def test_decoded_tensors_do_not_alias_input():
    buffer = bytearray(encode_state({"w": torch.ones(3)}))
    state = decode_state(buffer)
    buffer[-4:] = b"\0\0\0\0"
    assert state["w"].tolist() == [1.0, 1.0, 1.0]
