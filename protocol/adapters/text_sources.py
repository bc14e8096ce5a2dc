"""Reading a user's text, JSONL and Parquet files into an ordered list of documents (`gradledger data prepare`).

Inputs are files or directories, read in the order given; a directory contributes its files with a known suffix
(`SUFFIXES`), recursively, sorted by their POSIX path relative to it (hidden files and directories skipped), so
the same inputs give the same documents in the same order on every machine. A file named twice is read once.

- `.txt`, `.md`: one document per file (its whole text).
- `.jsonl`: one document per non-blank line, the string in `text_field` of the line's JSON object.
- `.parquet`: one document per row, the string column `text_field`.

Everything is checked before a single token is made, and the first problem is a `SourceError` that names the
file and where in it (line, row or byte offset) and what to do: a missing path, an unknown suffix, a file with no
text, bytes that are not UTF-8, a JSONL line that is not a JSON object with a string field, a Parquet file
without the column or whose column is not strings.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from protocol.data import DataError
from protocol.hashing import compute_content_hash

TEXT_SUFFIXES = (".txt", ".md")
JSONL_SUFFIXES = (".jsonl",)
PARQUET_SUFFIXES = (".parquet",)
SUFFIXES = TEXT_SUFFIXES + JSONL_SUFFIXES + PARQUET_SUFFIXES
DEFAULT_TEXT_FIELD = "text"


class SourceError(DataError):
    """An input file cannot be read as documents: missing, unknown kind, empty, not UTF-8, or the wrong shape."""


@dataclass(frozen=True)
class SourceFile:
    """One input file as the prepared dataset's summary lists it."""

    path: str
    size: int
    sha256: str
    documents: int


@dataclass(frozen=True)
class TextSources:
    """The documents of all inputs in order, the files they came from, and directory entries passed over."""

    documents: tuple[str, ...]
    files: tuple[SourceFile, ...]
    skipped: tuple[str, ...]


def _is_hidden(name: str) -> bool:
    return name.startswith(".")


def list_source_files(inputs: list[Path]) -> tuple[list[Path], list[str]]:
    """(files to read in order, directory entries skipped for their suffix). Explicit files must have a known
    suffix; directories are walked and sorted by relative POSIX path."""
    if not inputs:
        raise SourceError("no inputs given; name text (.txt, .md), .jsonl or .parquet files or directories of them")
    files: list[Path] = []
    skipped: list[str] = []
    for given in inputs:
        if given.is_dir():
            found: list[tuple[str, Path]] = []
            for root, dirs, names in os.walk(given):
                dirs[:] = [d for d in dirs if not _is_hidden(d)]
                for name in names:
                    path = Path(root) / name
                    relative = path.relative_to(given).as_posix()
                    if _is_hidden(name):
                        continue
                    if path.suffix.lower() in SUFFIXES:
                        found.append((relative, path))
                    else:
                        skipped.append(path.as_posix())
            if not found:
                raise SourceError(
                    f"directory {given} holds no {', '.join(SUFFIXES)} files; add some or name the files directly"
                )
            files.extend(path for _, path in sorted(found))
        elif given.is_file():
            if given.suffix.lower() not in SUFFIXES:
                raise SourceError(
                    f"{given}: unknown file type {given.suffix or '(no suffix)'!r}; give .txt or .md (text), .jsonl "
                    "(one JSON object per line) or .parquet files"
                )
            files.append(given)
        else:
            raise SourceError(f"input {given} does not exist; give existing files or directories")
    unique: list[Path] = []
    seen: set[Path] = set()
    for path in files:
        if path.resolve() not in seen:
            seen.add(path.resolve())
            unique.append(path)
    return unique, sorted(skipped)


def decode_utf8(data: bytes, where: str) -> str:
    """The text of `data`; a SourceError naming the file, byte offset and line of the first non-UTF-8 byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceError(
            f"{where} is not UTF-8 text: byte offset {exc.start} (line {line}) holds {data[exc.start : exc.end]!r}; "
            "convert the file to UTF-8 (e.g. iconv -t UTF-8) or leave it out"
        ) from None


def read_text_documents(data: bytes, where: str) -> list[str]:
    """A .txt / .md file: one document, its whole text."""
    text = decode_utf8(data, where)
    if not text.strip():
        raise SourceError(f"{where} is empty (no text in it); remove it from the inputs or add text")
    return [text]


def read_jsonl_documents(data: bytes, where: str, text_field: str) -> list[str]:
    """A .jsonl file: the string `text_field` of each non-blank line's JSON object."""
    text = decode_utf8(data, where)
    documents: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines: U+2028 may sit in a string
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceError(
                f"{where} line {number} is not JSON ({exc.msg}); each line must be one JSON object"
            ) from None
        if not isinstance(record, dict):
            raise SourceError(f"{where} line {number} is a JSON {type(record).__name__}, not an object with a "
                              f"{text_field!r} field")  # fmt: skip
        if text_field not in record:
            keys = ", ".join(sorted(record)[:10]) or "none"
            raise SourceError(
                f"{where} line {number} has no field {text_field!r} (its fields: {keys}); name the field that holds "
                "the text with --text-field"
            )
        value = record[text_field]
        if not isinstance(value, str):
            raise SourceError(
                f"{where} line {number}: field {text_field!r} is a JSON {type(value).__name__}, not a string; "
                "name a field that holds the text with --text-field"
            )
        documents.append(value)
    if not any(doc.strip() for doc in documents):
        raise SourceError(f"{where} holds no text (no non-blank {text_field!r} values); remove it or add records")
    return documents


def read_parquet_documents(data: bytes, where: str, text_field: str) -> list[str]:
    """A .parquet file: the string column `text_field`, one document per row."""
    import pyarrow
    import pyarrow.parquet as parquet

    try:
        table = parquet.read_table(pyarrow.BufferReader(data))
    except (pyarrow.ArrowException, OSError) as exc:
        raise SourceError(f"{where} is not a readable Parquet file ({exc}); check the file") from None
    if text_field not in table.column_names:
        columns = ", ".join(table.column_names[:20]) or "none"
        raise SourceError(
            f"{where} has no column {text_field!r} (its columns: {columns}); name the text column with --text-field"
        )
    column = table.column(text_field)
    kind = column.type
    is_string = pyarrow.types.is_string(kind) or pyarrow.types.is_large_string(kind)
    if not is_string and hasattr(pyarrow.types, "is_string_view"):
        is_string = pyarrow.types.is_string_view(kind)
    if not is_string:
        raise SourceError(
            f"{where}: column {text_field!r} holds {kind}, not strings; name a string column with --text-field"
        )
    try:
        values = column.to_pylist()
    except UnicodeDecodeError as exc:
        raise SourceError(f"{where}: column {text_field!r} holds bytes that are not UTF-8 ({exc.reason})") from None
    for row, value in enumerate(values):
        if value is None:
            raise SourceError(f"{where}: row {row} of column {text_field!r} is null; drop or fill the null rows")
    if not any(value.strip() for value in values):
        raise SourceError(f"{where} holds no text ({len(values)} rows, none with text in {text_field!r})")
    return values


def read_source_file(path: Path, text_field: str = DEFAULT_TEXT_FIELD) -> tuple[list[str], SourceFile]:
    """The documents of one file (by its suffix) and its summary entry (size, sha256)."""
    where = path.as_posix()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read {where}: {exc.strerror or exc}") from None
    suffix = path.suffix.lower()
    if not data:
        raise SourceError(f"{where} is empty (0 bytes); remove it from the inputs or add text")
    if suffix in TEXT_SUFFIXES:
        documents = read_text_documents(data, where)
    elif suffix in JSONL_SUFFIXES:
        documents = read_jsonl_documents(data, where, text_field)
    elif suffix in PARQUET_SUFFIXES:
        documents = read_parquet_documents(data, where, text_field)
    else:
        raise SourceError(f"{where}: unknown file type {suffix!r}; give .txt, .md, .jsonl or .parquet files")
    entry = SourceFile(where, len(data), compute_content_hash(data).hex(), len(documents))
    return documents, entry


def read_text_sources(inputs: list[Path], text_field: str = DEFAULT_TEXT_FIELD) -> TextSources:
    """Every input's documents, in order (see the module docstring); a SourceError at the first bad file."""
    if not text_field:
        raise SourceError("--text-field must not be empty")
    files, skipped = list_source_files(inputs)
    documents: list[str] = []
    entries: list[SourceFile] = []
    for path in files:
        docs, entry = read_source_file(path, text_field)
        documents.extend(docs)
        entries.append(entry)
    return TextSources(tuple(documents), tuple(entries), tuple(skipped))
