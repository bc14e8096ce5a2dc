"""`gradledger data prepare`: text, JSONL and Parquet in, a deterministic prepared dataset out, bad input refused.

The determinism test runs the command in two processes (at 1 and 2 tokenizer threads) and compares every byte
written; the error cases run in-process (typer's CliRunner), one through the entry point's error handling
(tests/cli_in_process.py) to see the one-line error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow
import pyarrow.parquet as parquet
import pytest
from typer.testing import CliRunner

from gradledger.cli import app
from protocol.adapters.prepared_data import DATASET_FILE, load_prepared_dataset
from protocol.adapters.text_sources import SourceError
from protocol.data import DatasetTooSmallError, VocabularyMismatchError
from protocol.hashing import compute_content_hash, hash_to_hex
from protocol.tokenization import TokenizerError, train_bpe_tokenizer
from tests.cli_in_process import run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LLAMA_TINY = EXAMPLES / "llama-tiny.json"


def _make_inputs(root: Path, repeat: int = 30) -> list[Path]:
    """A directory of text files, a JSONL file and a Parquet file: a few tens of kB of varied text."""
    texts = root / "texts"
    texts.mkdir(parents=True)
    for i in range(4):
        lines = [
            f"Chapter {i}, paragraph {j}: the river ran past mill {j % 7} and the miller sang.\n" for j in range(repeat)
        ]
        (texts / f"chapter{i}.txt").write_text("".join(lines))
    (texts / "README.md").write_text("# Notes\n\nSome *markdown* text, ünïcödé included. ✓\n" * repeat)
    records = root / "records.jsonl"
    records.write_text("".join(json.dumps({"id": i, "text": f"Record {i}: a short note about item {i % 13}."}) + "\n"
                               for i in range(repeat * 4)))  # fmt: skip
    table = root / "table.parquet"
    parquet.write_table(
        pyarrow.table({"text": [f"Row {i} of the table says {i * 7 % 11}." for i in range(repeat * 4)]}), table
    )
    return [texts, records, table]


def _invoke(*args: str):
    return CliRunner().invoke(app, ["data", "prepare", *args])


def _artifacts(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_prepare_is_deterministic_across_processes_and_thread_counts(tmp_path):
    inputs = [str(p) for p in _make_inputs(tmp_path / "in")]
    runs = []
    for threads in ("1", "2"):  # both processes at once: the machine's two cores, half the wall time
        out = tmp_path / f"out{threads}"
        command = [sys.executable, "-m", "gradledger", "data", "prepare", *inputs, "--out", str(out)]
        command += ["--tokenizer", "train", "--vocab-size", "400", "--json"]
        env = {**os.environ, "RAYON_NUM_THREADS": threads, "PYTHONHASHSEED": threads}
        runs.append(
            (out, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        )
    summaries = []
    for _, process in runs:
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        summaries.append(json.loads(stdout))
    (out1, _), (out2, _) = runs
    assert summaries[0] == summaries[1]
    assert _artifacts(out1) == _artifacts(out2)  # every shard, the manifest, the tokenizer and dataset.json
    summary = summaries[0]
    loaded = load_prepared_dataset(out1)
    assert hash_to_hex(loaded.manifest.root) == summary["root"]
    assert summary["tokenizer"] == hash_to_hex(compute_content_hash(loaded.tokenizer_json))
    assert summary["token_width"] == 2 and 257 <= summary["vocab_size"] <= 400 and summary["shard_count"] == 10
    assert [Path(f["path"]).name for f in summary["inputs"]] == [
        "README.md", "chapter0.txt", "chapter1.txt", "chapter2.txt", "chapter3.txt", "records.jsonl", "table.parquet"
    ]  # fmt: skip
    # the same in this process, at its default thread count: the same tokenizer and root
    result = _invoke(*inputs, "--out", str(tmp_path / "here"), "--tokenizer", "train", "--vocab-size", "400", "--json")
    assert result.exit_code == 0, result.output
    assert _artifacts(tmp_path / "here") == _artifacts(out1)


def test_bad_input_exits_1_with_one_line_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"body": "no text field"}\n')
    out = tmp_path / "out"
    result = run_cli("data", "prepare", str(bad), "--out", str(out))
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and "line 2 has no field 'text'" in " ".join(result.stderr.split())
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_byte_level_by_default_and_json_summary(tmp_path):
    inputs = [str(p) for p in _make_inputs(tmp_path / "in", repeat=5)]
    out = tmp_path / "out"
    result = _invoke(*inputs, "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary == json.loads((out / DATASET_FILE).read_text())
    assert summary["tokenizer"] is None and summary["token_width"] == 1 and summary["vocab_size"] == 256
    assert summary["options"]["tokenizer"] == "bytes" and summary["separator"] == [10]
    assert load_prepared_dataset(out).tokenizer_json is None
    plain = _invoke(*inputs, "--out", str(out))  # a second run replaces the earlier dataset, same root
    assert plain.exit_code == 0 and f"dataset root: {summary['root']}" in plain.stdout


def test_a_tokenizer_file_is_published_as_given_and_its_eos_separates_documents(tmp_path):
    inputs = [str(p) for p in _make_inputs(tmp_path / "in", repeat=5)]
    tokenizer_file = tmp_path / "tokenizer.json"
    tokenizer_file.write_bytes(train_bpe_tokenizer(["some text to train on", "and more text"] * 5, 300))
    out = tmp_path / "out"
    result = _invoke(*inputs, "--out", str(out), "--tokenizer", str(tokenizer_file), "--json")
    assert result.exit_code == 0, result.output
    loaded = load_prepared_dataset(out)
    assert loaded.tokenizer_json == tokenizer_file.read_bytes()
    assert loaded.manifest.tokens.tokenizer == compute_content_hash(tokenizer_file.read_bytes())
    assert json.loads((out / DATASET_FILE).read_text())["separator"] == [0]


def test_model_config_checks_vocabulary_before_reading_and_size_after(tmp_path):
    out = tmp_path / "out"
    missing = str(tmp_path / "not-read-yet.txt")
    result = _invoke(missing, "--out", str(out), "--tokenizer", "train", "--vocab-size", "600", "--model-config",
                     str(LLAMA_TINY))  # fmt: skip
    assert isinstance(result.exception, VocabularyMismatchError)
    assert "--vocab-size needs 600 ids but the model" in str(result.exception)
    assert "--tokenizer train --vocab-size 512" in str(result.exception)  # what to do
    gpt = tmp_path / "gpt.json"
    gpt.write_text(json.dumps({"architecture": "gpt", "vocab_size": 256, "block_size": 32}))
    result = _invoke(missing, "--out", str(out), "--tokenizer", "train", "--model-config", str(gpt))
    assert isinstance(result.exception, VocabularyMismatchError) and "vocab_size 256" in str(result.exception)
    small = [str(p) for p in _make_inputs(tmp_path / "small", repeat=1)]
    result = _invoke(*small, "--out", str(out), "--tokenizer", "train", "--model-config", str(LLAMA_TINY))
    assert isinstance(result.exception, DatasetTooSmallError), result.output
    assert "the last shard is 1/10 of the tokens" in str(result.exception)
    assert not out.exists()
    enough = [str(p) for p in _make_inputs(tmp_path / "enough", repeat=30)]
    result = _invoke(*enough, "--out", str(out), "--tokenizer", "train", "--model-config", str(LLAMA_TINY), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads((out / DATASET_FILE).read_text())["options"]["model_config"] == str(LLAMA_TINY)


@pytest.mark.parametrize(
    ("setup", "args", "error", "message"),
    [
        (lambda d: d / "missing.txt", [], SourceError, "does not exist"),
        (lambda d: _write(d / "x.csv", b"a,b"), [], SourceError, "unknown file type '.csv'"),
        (lambda d: _write(d / "e.txt", b""), [], SourceError, "is empty"),
        (lambda d: _write(d / "l.txt", b"caf\xe9"), [], SourceError, "l.txt is not UTF-8 text: byte offset 3"),
        (lambda d: _write(d / "j.jsonl", b"{oops\n"), [], SourceError, "line 1 is not JSON"),
        (lambda d: _write(d / "j.jsonl", b'{"text": 1}\n'), [], SourceError, "is a JSON int, not a string"),
        (lambda d: _write(d / "j.jsonl", b'{"t": "x"}\n'), ["--text-field", "body"], SourceError, "no field 'body'"),
        (lambda d: _parquet(d / "p.parquet", body=["x"]), [], SourceError, "has no column 'text'"),
        (lambda d: _parquet(d / "p.parquet", text=[1.5]), [], SourceError, "holds double, not strings"),
        (lambda d: _write(d / "t.txt", b"hello"), ["--tokenizer", "nope.json"], TokenizerError, "no such file"),
        (lambda d: _write(d / "t.txt", b"hi"), ["--shard-tokens", "100"], Exception, "one shard to train on"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_before_anything_is_written(tmp_path, setup, args, error, message):
    source = setup(tmp_path)
    out = tmp_path / "out"
    result = _invoke(str(source), "--out", str(out), *args)
    assert isinstance(result.exception, error) and message in str(result.exception), result.output
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_a_file_that_is_not_a_tokenizer_is_refused(tmp_path):
    text = _write(tmp_path / "t.txt", b"hello world")
    fake = _write(tmp_path / "tokenizer.json", b'{"model": "none"}')
    result = _invoke(str(text), "--out", str(tmp_path / "out"), "--tokenizer", str(fake))
    assert isinstance(result.exception, TokenizerError)
    assert "not a valid Hugging Face tokenizers JSON" in str(result.exception)
    result = _invoke(str(text), "--out", str(tmp_path / "out"), "--vocab-size", "300")
    assert result.exit_code == 2 and "--vocab-size is for --tokenizer train only" in result.output


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _parquet(path: Path, **columns) -> Path:
    parquet.write_table(pyarrow.table(columns), path)
    return path
