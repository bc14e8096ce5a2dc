"""Reading text corpora from disk into content-addressed shards.

The default corpus exists on every machine without a download: the Python standard library's
own `.py` sources (about 11 MB on CPython 3.11, without its test suites, idlelib and lib2to3).
It differs between Python versions, which is why a run pins the dataset root and peers fetch
shards by hash. Users can point a run at their own directory of text files instead.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

from protocol.data import SHARD_BYTES, DataError, DatasetManifest, build_manifest, split_into_shards

DEFAULT_SUFFIXES = (".py",)
TEXT_SUFFIXES = (".txt", ".md", ".rst", ".py", ".json", ".csv", ".html", ".tex")
_EXCLUDED_STDLIB_PARTS = frozenset({"site-packages", "test", "tests", "idlelib", "lib2to3", "__pycache__"})


def get_stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def list_corpus_files(directory: Path, suffixes: tuple[str, ...], excluded: frozenset[str] = frozenset()) -> list[Path]:
    """Files under `directory` with one of `suffixes`, sorted by their POSIX relative path."""
    if not directory.is_dir():
        raise DataError(f"corpus directory {directory} does not exist or is not a directory")
    files: list[Path] = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = [d for d in dirs if d not in excluded]  # prune, do not descend
        files.extend(Path(root) / n for n in names if Path(n).suffix in suffixes)
    return sorted(files, key=lambda p: p.relative_to(directory).as_posix())


def read_corpus(
    directory: Path, suffixes: tuple[str, ...] = TEXT_SUFFIXES, excluded: frozenset[str] = frozenset()
) -> bytes:
    """Concatenate the files (sorted by relative path), each followed by a newline."""
    files = list_corpus_files(directory, suffixes, excluded)
    if not files:
        raise DataError(f"no files with suffixes {', '.join(suffixes)} under {directory}; add text files")
    return b"".join(p.read_bytes() + b"\n" for p in files)


def load_corpus_shards(
    directory: Path | None = None, shard_bytes: int = SHARD_BYTES
) -> tuple[DatasetManifest, dict[bytes, bytes]]:
    """Shards and manifest of a user directory, or of the stdlib default corpus when None."""
    if directory is None:
        corpus = read_corpus(get_stdlib_dir(), DEFAULT_SUFFIXES, _EXCLUDED_STDLIB_PARTS)
    else:
        corpus = read_corpus(directory)
    shards = split_into_shards(corpus, shard_bytes)
    manifest = build_manifest(shards)
    return manifest, {ref.hash: data for ref, data in zip(manifest.shards, shards, strict=True)}


def describe_corpus(directory: Path | None) -> str:
    """The corpus `load_corpus_shards(directory)` reads, as error messages name it (where to add text)."""
    if directory is None:
        return f"the default corpus (the Python standard library's sources under {get_stdlib_dir()}; pass --data DIR)"
    return str(directory)
