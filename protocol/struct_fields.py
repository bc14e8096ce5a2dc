"""Solidity structs into frozen dataclasses by field name, never by position.

Every value type of the contracts (protocol/types.py, protocol/run_terms.py) is decoded here: the chain adapter
names a struct's components from the ABI, and `decode_struct` requires exactly the dataclass's fields, so a renamed or
reordered Solidity field fails loudly instead of silently shifting values. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

from protocol.errors import GradledgerError

__all__ = ["StructError", "decode_struct", "to_snake_case"]


class StructError(GradledgerError):
    """A value from the chain does not have the fields of the struct it should be."""


def to_snake_case(name: str) -> str:
    """Solidity's camelCase field name as the Python attribute: `theta0Hash` -> `theta0_hash`."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


T = TypeVar("T")


def decode_struct(cls: type[T], values: Mapping[str, Any]) -> T:
    """Build dataclass `cls` from a mapping of Solidity field names; every field must be present, no other."""
    wanted = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    given = {to_snake_case(k): v for k, v in values.items()}
    missing, extra = sorted(set(wanted) - set(given)), sorted(set(given) - set(wanted))
    if missing or extra:
        raise StructError(
            f"{cls.__name__}: the chain returned fields {sorted(values)}; missing {missing}, unexpected {extra} "
            "(the contracts and protocol/types.py disagree: update the dataclass to the Solidity struct)"
        )
    return cls(**{name: given[name] for name in wanted})
