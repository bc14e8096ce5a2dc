"""Canonical serialization of a model state and its exact hash.

A *state* is a flat mapping from names to tensors: a model's parameters and, for a
checkpoint, the inner optimizer's state as well (replay needs both). Its canonical bytes are
a pure function of the values, so two parties holding equal states always compute the same
`compute_state_hash`:

    magic  b"GLSTATE1"
    count  u32
    for each entry, in increasing order of the UTF-8 bytes of its name:
        name_len u16, name (UTF-8)
        dtype    u8   (DTYPE_CODES)
        ndim     u8,  dims u64 x ndim
        data     numel x itemsize bytes, row-major, little-endian

All integers are little-endian. No pickle, no `torch.save`: those are neither canonical nor
safe to load from a peer. `decode_state` accepts exactly the bytes `encode_state` produces
(INVARIANT: decode(encode(s)) == s and encode(decode(b)) == b for every accepted b).
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterator, Mapping

import torch

from protocol.errors import StateEncodingError
from protocol.hashing import Hash32, new_content_hasher

STATE_MAGIC = b"GLSTATE1"
MAX_NAME_BYTES = 0xFFFF
MAX_NDIM = 0xFF

DTYPE_CODES: dict[torch.dtype, int] = {
    torch.float32: 1,
    torch.float64: 2,
    torch.float16: 3,
    torch.bfloat16: 4,
    torch.int64: 5,
    torch.int32: 6,
    torch.int16: 7,
    torch.int8: 8,
    torch.uint8: 9,
    torch.bool: 10,
}
CODE_DTYPES: dict[int, torch.dtype] = {code: dtype for dtype, code in DTYPE_CODES.items()}

State = Mapping[str, torch.Tensor]


def _require_little_endian() -> None:
    if sys.byteorder != "little":
        raise StateEncodingError(
            "canonical states are little-endian and this host is big-endian; "
            "run gradledger on a little-endian machine (x86-64, arm64)"
        )


def _sorted_entries(state: State) -> list[tuple[bytes, torch.Tensor]]:
    """Validate every entry and return (UTF-8 name, contiguous CPU tensor) sorted by name."""
    if not isinstance(state, Mapping):
        raise StateEncodingError(f"a state must be a mapping of names to tensors, got {type(state).__name__}")
    entries: list[tuple[bytes, torch.Tensor]] = []
    for name, value in state.items():
        if not isinstance(name, str) or not name:
            raise StateEncodingError(f"state names must be non-empty strings, got {name!r}")
        raw_name = name.encode("utf-8")
        if len(raw_name) > MAX_NAME_BYTES:
            raise StateEncodingError(f"state name {name[:40]!r}... is longer than 65535 bytes")
        if not isinstance(value, torch.Tensor):
            raise StateEncodingError(
                f"state entry {name!r} is a {type(value).__name__}, not a tensor; "
                "convert scalars (e.g. an optimizer step count) to tensors before hashing"
            )
        if value.layout != torch.strided:
            raise StateEncodingError(f"state entry {name!r} is {value.layout}; only dense tensors")
        if value.dtype not in DTYPE_CODES:
            supported = ", ".join(str(d).removeprefix("torch.") for d in DTYPE_CODES)
            raise StateEncodingError(f"state entry {name!r} has dtype {value.dtype}; supported: {supported}")
        if value.dim() > MAX_NDIM:
            raise StateEncodingError(f"state entry {name!r} has more than 255 dimensions")
        entries.append((raw_name, value.detach().to("cpu").contiguous()))
    entries.sort(key=lambda entry: entry[0])
    return entries


def _tensor_bytes(tensor: torch.Tensor) -> memoryview:
    """The tensor's storage bytes, row-major, without copying."""
    if tensor.numel() == 0:
        return memoryview(b"")
    return tensor.reshape(-1).view(torch.uint8).numpy().data


def iter_state_chunks(state: State) -> Iterator[bytes | memoryview]:
    """Yield the canonical encoding of `state` piece by piece (tensor data is not copied)."""
    _require_little_endian()
    entries = _sorted_entries(state)
    yield STATE_MAGIC + struct.pack("<I", len(entries))
    for raw_name, tensor in entries:
        header = struct.pack("<H", len(raw_name)) + raw_name
        header += struct.pack("<BB", DTYPE_CODES[tensor.dtype], tensor.dim())
        header += struct.pack(f"<{tensor.dim()}Q", *tensor.shape)
        yield header
        yield _tensor_bytes(tensor)


def encode_state(state: State) -> bytes:
    """The canonical bytes of `state` (see the module docstring for the layout)."""
    return b"".join(bytes(chunk) for chunk in iter_state_chunks(state))


def compute_state_hash(state: State) -> Hash32:
    """SHA-256 of the canonical bytes of `state`, streamed without building them."""
    hasher = new_content_hasher()
    for chunk in iter_state_chunks(state):
        hasher.update(chunk)
    return Hash32(hasher.digest())


class _Reader:
    """Bounds-checked cursor over canonical bytes; every overrun is a StateEncodingError."""

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self.view = memoryview(data)
        self.pos = 0

    def take(self, size: int, what: str) -> memoryview:
        end = self.pos + size
        if end > len(self.view):
            raise StateEncodingError(
                f"not a canonical state: truncated while reading {what} at byte {self.pos} "
                f"(need {size} bytes, {len(self.view) - self.pos} left)"
            )
        chunk = self.view[self.pos : end]
        self.pos = end
        return chunk

    def unpack(self, fmt: str, what: str) -> tuple[int, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))


def decode_state(data: bytes | bytearray | memoryview) -> dict[str, torch.Tensor]:
    """Parse canonical bytes back into a state; reject anything `encode_state` would not emit.

    The returned tensors own their memory (they do not alias `data`).
    """
    _require_little_endian()
    reader = _Reader(data)
    if bytes(reader.take(len(STATE_MAGIC), "the magic header")) != STATE_MAGIC:
        raise StateEncodingError(
            "not a canonical state: the file does not start with b'GLSTATE1' "
            "(is it a torch.save/pickle file or another artifact?)"
        )
    (count,) = reader.unpack("<I", "the entry count")
    state: dict[str, torch.Tensor] = {}
    previous: bytes | None = None
    for index in range(count):
        (name_len,) = reader.unpack("<H", f"entry {index} name length")
        raw_name = bytes(reader.take(name_len, f"entry {index} name"))
        if not raw_name:
            raise StateEncodingError(f"not a canonical state: entry {index} has an empty name")
        if previous is not None and raw_name <= previous:
            raise StateEncodingError(f"not a canonical state: entry names are not strictly increasing at {raw_name!r}")
        previous = raw_name
        try:
            name = raw_name.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StateEncodingError(f"not a canonical state: name {raw_name!r} is not UTF-8") from exc
        code, ndim = reader.unpack("<BB", f"entry {name!r} dtype and rank")
        if code not in CODE_DTYPES:
            raise StateEncodingError(f"not a canonical state: entry {name!r} has dtype code {code}")
        dtype = CODE_DTYPES[code]
        shape = reader.unpack(f"<{ndim}Q", f"entry {name!r} shape")
        numel = 1
        for dim in shape:
            numel *= dim
        itemsize = torch.empty((), dtype=dtype).element_size()
        raw = reader.take(numel * itemsize, f"entry {name!r} data")
        tensor = torch.empty(shape, dtype=dtype)
        if numel:
            tensor.reshape(-1).view(torch.uint8).numpy()[:] = raw
        state[name] = tensor
    if reader.pos != len(reader.view):
        raise StateEncodingError(
            f"not a canonical state: {len(reader.view) - reader.pos} trailing bytes after the last entry"
        )
    return state


def is_same_state(a: State, b: State) -> bool:
    """True when both states have the same names, dtypes, shapes and bit-identical values.

    Compares bytes, not values: NaN payloads and the sign of zero count, as they do in the
    state hash.
    """
    if set(a) != set(b):
        return False
    for name in a:
        x, y = a[name].detach().cpu(), b[name].detach().cpu()
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if x.numel() and not torch.equal(
            x.contiguous().reshape(-1).view(torch.uint8), y.contiguous().reshape(-1).view(torch.uint8)
        ):
            return False
    return True
