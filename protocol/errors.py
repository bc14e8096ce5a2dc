"""Typed errors of gradledger.

Every error raised on purpose derives from `GradledgerError`, so a command line or a
service can catch one root type and print a clear message instead of a traceback.
Messages name what is wrong and what to do about it.
"""

from __future__ import annotations


class GradledgerError(Exception):
    """Root of every error gradledger raises on purpose."""


class StateEncodingError(GradledgerError):
    """A model state cannot be serialized canonically, or bytes are not a canonical state."""


class SketchError(GradledgerError):
    """An update sketch cannot be computed or two sketches cannot be compared."""


class MerkleError(GradledgerError):
    """A Merkle tree or proof cannot be built or is malformed."""


class LeafNotFoundError(MerkleError):
    """A proof was requested for a leaf that is not in the tree."""


class SeedError(GradledgerError):
    """A seed, hash or sampling parameter has the wrong form."""


class ConfigError(GradledgerError):
    """A configuration value is missing, malformed or inconsistent."""
