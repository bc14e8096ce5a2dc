"""Reading text / JSONL / Parquet inputs, and writing and loading a prepared dataset directory (every hash checked)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow
import pyarrow.parquet as parquet
import pytest

from protocol.adapters.corpus import load_corpus_shards
from protocol.adapters.prepared_data import (
    ARTIFACTS_DIR,
    DATASET_FILE,
    PreparedDataset,
    load_prepared_dataset,
    write_prepared_dataset,
)
from protocol.adapters.text_sources import SourceError, read_text_sources
from protocol.config import build_run_config, parse_model_config
from protocol.data import DataError, build_token_dataset, verify_dataset_fits_config
from protocol.hashing import compute_content_hash, hash_to_hex
from protocol.tokenization import tokenize_documents, train_bpe_tokenizer
from tests.conftest import RUN_SEED

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _write_parquet(path: Path, **columns) -> Path:
    parquet.write_table(pyarrow.table(columns), path)
    return path


def _prepared(documents: list[str], tokenizer_json: bytes | None = None, **kwargs) -> PreparedDataset:
    tokenized = tokenize_documents(documents, tokenizer_json, **kwargs)
    shards = dict(zip((r.hash for r in tokenized.manifest.shards), tokenized.shards, strict=True))
    return PreparedDataset(tokenized.manifest, shards, tokenized.tokenizer_json)


def _error(inputs: list[Path], text_field: str = "text") -> str:
    with pytest.raises(SourceError) as caught:
        read_text_sources(inputs, text_field)
    return str(caught.value)


# --- reading inputs ---------------------------------------------------------------------------------------------


def test_documents_come_in_input_order_and_directories_sorted_by_relative_path(tmp_path):
    data = tmp_path / "data"
    (data / "b").mkdir(parents=True)
    (data / "b" / "z.txt").write_text("bz")
    (data / "a.md").write_text("a")
    (data / "c.jsonl").write_text('{"text": "c1"}\n\n{"text": "c2", "n": 1}\n')
    _write_parquet(data / "b" / "p.parquet", text=["p1", "p2"])
    (data / ".hidden.txt").write_text("never")
    (data / "notes.csv").write_text("skipped")
    first = tmp_path / "first.txt"
    first.write_text("first")
    sources = read_text_sources([first, data, data / "a.md"])  # a.md named twice: read once
    assert sources.documents == ("first", "a", "p1", "p2", "bz", "c1", "c2")
    assert [Path(f.path).name for f in sources.files] == ["first.txt", "a.md", "p.parquet", "z.txt", "c.jsonl"]
    assert sources.files[0].size == 5 and sources.files[0].sha256 == compute_content_hash(b"first").hex()
    assert sources.skipped == ((data / "notes.csv").as_posix(),)


def test_jsonl_and_parquet_read_the_named_field(tmp_path):
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text('{"body": "x"}\r\n{"body": "y\u2028z\x85"}\n', newline="")  # raw U+2028 is valid in JSON
    table = _write_parquet(tmp_path / "t.parquet", body=pyarrow.array(["u", "v"], type=pyarrow.large_string()))
    assert read_text_sources([jsonl, table], text_field="body").documents == ("x", "y\u2028z\x85", "u", "v")


def test_missing_path_unknown_suffix_and_empty_inputs_are_refused(tmp_path):
    assert "does not exist" in _error([tmp_path / "nope.txt"])
    (tmp_path / "data.csv").write_text("a,b")
    assert "unknown file type '.csv'" in _error([tmp_path / "data.csv"])
    (tmp_path / "empty.txt").write_bytes(b"")
    assert "empty.txt is empty (0 bytes)" in _error([tmp_path / "empty.txt"])
    (tmp_path / "blank.md").write_text("  \n\n")
    assert "blank.md is empty (no text in it)" in _error([tmp_path / "blank.md"])
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.csv").write_text("a")
    assert "holds no .txt, .md, .jsonl, .parquet files" in _error([tmp_path / "sub"])
    assert "no inputs given" in _error([])


def test_non_utf8_text_names_the_file_and_byte_offset(tmp_path):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"first line\ncaf\xe9 au lait")
    message = _error([bad])
    assert "latin1.txt is not UTF-8 text: byte offset 14 (line 2)" in message and "iconv" in message
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_bytes(b'{"text": "ok"}\n{"text": "\xff"}\n')
    assert "bad.jsonl is not UTF-8 text: byte offset 25 (line 2)" in _error([jsonl])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"text": "ok"}\nnot json\n', "line 2 is not JSON"),
        ('{"text": "ok"}\n[1, 2]\n', "line 2 is a JSON list, not an object"),
        ('{"text": "ok"}\n{"body": "x"}\n', "line 2 has no field 'text' (its fields: body); name the field"),
        ('{"text": 3}\n', "line 1: field 'text' is a JSON int, not a string"),
        ('{"text": ""}\n\n', "holds no text"),
        ("\n\n", "holds no text"),
    ],
)
def test_bad_jsonl_is_refused_with_its_line(tmp_path, content, message):
    path = tmp_path / "records.jsonl"
    path.write_text(content)
    assert message in _error([path])


def test_bad_parquet_is_refused(tmp_path):
    missing = _write_parquet(tmp_path / "m.parquet", body=["x"])
    assert "m.parquet has no column 'text' (its columns: body)" in _error([missing])
    numbers = _write_parquet(tmp_path / "n.parquet", text=[1, 2])
    assert "column 'text' holds int64, not strings" in _error([numbers])
    binary = _write_parquet(tmp_path / "b.parquet", text=[b"x"])
    assert "holds binary, not strings" in _error([binary])
    nulls = _write_parquet(tmp_path / "null.parquet", text=["x", None])
    assert "row 1 of column 'text' is null" in _error([nulls])
    not_parquet = tmp_path / "fake.parquet"
    not_parquet.write_text("hello")
    assert "fake.parquet is not a readable Parquet file" in _error([not_parquet])


# --- byte level as today ----------------------------------------------------------------------------------------


def test_byte_level_dataset_of_text_files_has_the_root_of_the_corpus_reader(tmp_path):
    for name, text in [("b.txt", "second file\n" * 50), ("a.txt", "first file, ünïcödé\n" * 40)]:
        (tmp_path / name).write_text(text)
    sources = read_text_sources([tmp_path])
    tokenized = tokenize_documents(sources.documents, None, shard_tokens=100)
    manifest, shards = load_corpus_shards(tmp_path, shard_bytes=100)
    assert tokenized.manifest == manifest
    assert list(tokenized.shards) == [shards[r.hash] for r in manifest.shards]


# --- writing and loading ----------------------------------------------------------------------------------------

DOCUMENTS = [f"record {i}: some words that repeat, words that repeat {i % 5}" for i in range(60)]


@pytest.fixture(scope="module")
def trained() -> bytes:
    return train_bpe_tokenizer(DOCUMENTS, 320)


def test_a_written_dataset_loads_back_with_every_hash_checked(tmp_path, trained):
    prepared = _prepared(DOCUMENTS, trained)
    out = tmp_path / "ds"
    write_prepared_dataset(out, prepared, {"documents": len(DOCUMENTS), "eval_shards": 1})
    loaded = load_prepared_dataset(out)
    assert loaded == prepared
    summary = json.loads((out / DATASET_FILE).read_text())
    assert summary["root"] == hash_to_hex(prepared.manifest.root)
    assert summary["tokenizer"] == hash_to_hex(compute_content_hash(trained)) and summary["token_width"] == 2
    assert summary["shard_count"] == len(prepared.manifest.shards) >= 2 and summary["documents"] == len(DOCUMENTS)
    assert summary["train_tokens"] + summary["eval_tokens"] == summary["tokens"]
    assert summary["eval_tokens"] == prepared.manifest.shards[-1].size // 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # no temp directory left next to it
    artifacts = {p.name for p in (out / ARTIFACTS_DIR).rglob("*") if p.is_file()}
    assert hash_to_hex(prepared.manifest.root)[2:] in artifacts and len(artifacts) == len(prepared.shards) + 2


def test_a_loaded_dataset_serves_a_run_of_the_tiny_llama(tmp_path, trained):
    out = tmp_path / "ds"
    write_prepared_dataset(out, _prepared(DOCUMENTS * 20, trained), {})
    loaded = load_prepared_dataset(out)
    model = parse_model_config(json.loads((EXAMPLES / "llama-tiny.json").read_text()))
    config = build_run_config(
        preset="tiny", run_seed=RUN_SEED, dataset_root=hash_to_hex(loaded.manifest.root), model=model
    )
    verify_dataset_fits_config(loaded.manifest, config)
    dataset = build_token_dataset(loaded.manifest, loaded.shards, config.data.eval_shards)
    assert int(dataset.train.max()) < loaded.manifest.tokens.vocab_size <= config.model.vocab_size


def test_a_byte_level_dataset_has_no_tokenizer(tmp_path):
    out = tmp_path / "ds"
    write_prepared_dataset(out, _prepared(DOCUMENTS), {})
    loaded = load_prepared_dataset(out)
    assert loaded.tokenizer_json is None and loaded.manifest.tokens.is_bytes
    assert json.loads((out / DATASET_FILE).read_text())["tokenizer"] is None


def _artifact(out: Path, digest: bytes) -> Path:
    name = digest.hex()
    return out / ARTIFACTS_DIR / name[:2] / name


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda out, p: _artifact(out, p.manifest.shards[1].hash).write_bytes(b"x"), "shard 1 .* does not match"),
        (lambda out, p: _artifact(out, p.manifest.shards[0].hash).unlink(), "shard 0 .* is missing"),
        (lambda out, p: _artifact(out, p.manifest.root).write_bytes(b"GLDATA2"), "the manifest .* does not match"),
        (lambda out, p: _artifact(out, p.manifest.tokens.tokenizer).unlink(), "the tokenizer .* is missing"),
        (lambda out, p: (out / DATASET_FILE).unlink(), "is not a prepared dataset \\(no dataset.json\\)"),
        (lambda out, p: (out / DATASET_FILE).write_text("{"), "is not readable JSON"),
    ],
)
def test_a_damaged_dataset_is_refused_naming_what_is_wrong(tmp_path, trained, damage, message):
    prepared = _prepared(DOCUMENTS, trained)
    out = tmp_path / "ds"
    write_prepared_dataset(out, prepared, {})
    damage(out, prepared)
    with pytest.raises(DataError, match=message):
        load_prepared_dataset(out)
    assert _artifact(out, prepared.manifest.root).parent.exists()  # a read-only load moves nothing aside
    assert not (out / f"{ARTIFACTS_DIR}-quarantine").exists()


def test_a_summary_that_disagrees_with_its_manifest_is_refused(tmp_path):
    out = tmp_path / "ds"
    write_prepared_dataset(out, _prepared(DOCUMENTS), {})
    summary = json.loads((out / DATASET_FILE).read_text())
    (out / DATASET_FILE).write_text(json.dumps({**summary, "vocab_size": 512, "shard_count": 1}))
    with pytest.raises(DataError, match="disagrees with the manifest it names on shard_count, vocab_size"):
        load_prepared_dataset(out)
    with pytest.raises(DataError, match="not a directory"):
        load_prepared_dataset(tmp_path / "nothing")


def test_writing_is_all_or_nothing_and_replaces_only_a_prepared_dataset(tmp_path, trained):
    good = _prepared(DOCUMENTS, trained)
    broken = PreparedDataset(good.manifest, dict(list(good.shards.items())[:-1]), good.tokenizer_json)
    out = tmp_path / "ds"
    with pytest.raises(DataError, match="is missing or does not match"):
        write_prepared_dataset(out, broken, {})
    assert list(tmp_path.iterdir()) == []  # nothing under the name, no temp directory left
    write_prepared_dataset(out, _prepared(DOCUMENTS), {})
    with pytest.raises(DataError, match="is missing or does not match"):
        write_prepared_dataset(out, broken, {})
    assert load_prepared_dataset(out).tokenizer_json is None  # the earlier dataset is untouched
    write_prepared_dataset(out, good, {})
    assert load_prepared_dataset(out) == good and sorted(p.name for p in tmp_path.iterdir()) == ["ds"]
    other = tmp_path / "home"
    other.mkdir()
    (other / "precious.txt").write_text("keep me")
    with pytest.raises(DataError, match=r"is not a prepared dataset .* not replaced"):
        write_prepared_dataset(other, good, {})
    assert (other / "precious.txt").read_text() == "keep me"
