"""`gradledger data`: turn a user's text, JSONL or Parquet files into a run's content-addressed token shards.

`gradledger data prepare INPUT... --out DIR` reads the inputs (protocol/adapters/text_sources.py), tokenizes them
byte level, with a given tokenizer.json or with a byte-level BPE tokenizer trained on them (protocol/tokenization.py)
and writes a prepared dataset directory (protocol/adapters/prepared_data.py) that `gradledger run create --dataset
DIR` publishes. Every input problem is refused before anything is written; see docs/data.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

app = typer.Typer(help="Prepare datasets: token shards, manifest and tokenizer, named by hash.", no_args_is_help=True)

_CHECK_SEED = "0x" + "00" * 32
"""The run seed of the config `--model-config` is checked with: the fit does not depend on it."""


def _resolve_tokenizer(choice: str, vocab_size: int | None) -> tuple[str, bytes | None, int]:
    """(kind, tokenizer JSON of a file, vocabulary to check against the model before any work): kind is bytes,
    train or file."""
    from protocol.data import BYTE_VOCAB_SIZE
    from protocol.tokenization import DEFAULT_TRAIN_VOCAB, TokenizerError, get_tokenizer_vocab_size, load_tokenizer

    if choice != "train" and vocab_size is not None:
        raise typer.BadParameter("--vocab-size is for --tokenizer train only", param_hint="'--vocab-size'")
    if choice == "bytes":
        return "bytes", None, BYTE_VOCAB_SIZE
    if choice == "train":
        return "train", None, vocab_size if vocab_size is not None else DEFAULT_TRAIN_VOCAB
    path = Path(choice)
    if not path.is_file():
        raise TokenizerError(
            f"--tokenizer {choice}: no such file; give bytes, train, or the path of a tokenizers tokenizer.json"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TokenizerError(f"--tokenizer {choice}: cannot read it ({exc.strerror or exc})") from None
    return "file", data, get_tokenizer_vocab_size(load_tokenizer(data, where=f"--tokenizer {choice}"))


def _check_vocabulary_fits(vocab: int, model: dict[str, Any], model_config: Path, kind: str) -> None:
    """Refuse a tokenizer with more ids than the model's embedding before reading or training anything."""
    from protocol.config import HFModelConfig, ModelConfig
    from protocol.data import VocabularyMismatchError
    from protocol.tokenization import MIN_TRAIN_VOCAB

    parsed = (
        HFModelConfig.model_validate(model) if model.get("architecture") == "hf" else ModelConfig.model_validate(model)
    )
    if vocab > parsed.vocab_size:
        what = {"bytes": "byte-level tokens", "train": "--vocab-size", "file": "the tokenizer"}[kind]
        fix = f"give a model config whose vocab_size is >= {vocab:,}"
        if parsed.vocab_size >= MIN_TRAIN_VOCAB:
            fix = f"train a smaller tokenizer (--tokenizer train --vocab-size {parsed.vocab_size}), or {fix}"
        raise VocabularyMismatchError(
            f"{what} need{'s' if kind != 'bytes' else ''} {vocab:,} ids but the model of --model-config "
            f"{model_config} has vocab_size {parsed.vocab_size:,}: {fix}"
        )


@app.command("prepare")
def prepare_command(
    inputs: list[Path] = typer.Argument(
        ..., help="text (.txt, .md), .jsonl or .parquet files, or directories of them (read in this order)"
    ),
    out: Path = typer.Option(..., "--out", help="directory to write the prepared dataset to (replaced atomically)"),
    tokenizer: str = typer.Option(
        "bytes",
        "--tokenizer",
        help="bytes (byte level, 256 ids), train (byte-level BPE trained on the inputs) or PATH to a tokenizer.json",
    ),
    vocab_size: int | None = typer.Option(
        None, "--vocab-size", min=2, help="ids of the trained tokenizer, incl. 256 bytes + <|endoftext|> (default 512)"
    ),
    text_field: str = typer.Option("text", "--text-field", help="the JSONL field / Parquet column holding the text"),
    shard_tokens: int | None = typer.Option(
        None, "--shard-tokens", min=1, help="tokens per shard (default: ~1 MiB shards, smaller for small data)"
    ),
    min_shards: int = typer.Option(
        10,
        "--min-shards",
        min=2,
        help="without --shard-tokens, data under this many 1 MiB shards is cut into this many; the run holds out "
        "the last (data.eval_shards=1): ~1/N of the tokens",
    ),
    model_config: Path | None = typer.Option(
        None, "--model-config", help="check the data fits this model (vocabulary, one training + one eval batch)"
    ),
    preset: str = typer.Option(
        "default", help="with --model-config: the run preset the fit check assumes (batch size, eval shards)"
    ),
    json_out: bool = typer.Option(False, "--json", help="print the summary (dataset.json) as JSON"),
) -> None:
    """Turn text, JSONL or Parquet files into content-addressed token shards + manifest (+ tokenizer) in --out.

    Deterministic: the same inputs and options give the same shards and dataset root. Every input is checked
    before anything is written; the first problem is one line naming the file and what to do."""
    from rich.console import Console

    from gradledger.run_inputs import read_model_config_file
    from node.logs import configure_logging, get_logger, log_event
    from protocol.adapters.prepared_data import (
        PreparedDataset,
        describe_manifest,
        verify_output_directory,
        write_prepared_dataset,
    )
    from protocol.adapters.text_sources import read_text_sources
    from protocol.config import build_run_config
    from protocol.data import DatasetTooSmallError, verify_dataset_fits_config
    from protocol.hashing import hash_to_hex
    from protocol.tokenization import DEFAULT_TRAIN_VOCAB, train_bpe_tokenizer

    configure_logging()
    logger = get_logger("data")
    console = Console(stderr=True)
    verify_output_directory(out)
    kind, tokenizer_json, vocab = _resolve_tokenizer(tokenizer, vocab_size)
    model = read_model_config_file(model_config) if model_config is not None else None
    if model is not None and model_config is not None:
        _check_vocabulary_fits(vocab, model, model_config, kind)
    sources = read_text_sources(list(inputs), text_field)
    log_event(logger, "inputs read", files=len(sources.files), documents=len(sources.documents))
    if kind == "train":
        with console.status(f"training a {vocab}-id byte-level BPE tokenizer on {len(sources.documents):,} documents"):
            tokenizer_json = train_bpe_tokenizer(sources.documents, vocab)
    tokenized = _tokenize_with_progress(console, sources.documents, tokenizer_json, shard_tokens, min_shards)
    manifest = tokenized.manifest
    eval_shards = 1
    if model is not None:
        config = build_run_config(
            preset=preset, run_seed=_CHECK_SEED, dataset_root=hash_to_hex(manifest.root), model=model
        )
        per_shard = manifest.shards[0].size if manifest.shards else 1
        where = ", ".join(str(p) for p in inputs)
        try:
            verify_dataset_fits_config(manifest, config, where=where, shard_bytes=per_shard)
        except DatasetTooSmallError as exc:
            if shard_tokens is not None:
                raise
            raise DatasetTooSmallError(
                f"{exc} (here the last shard is 1/{len(manifest.shards)} of the tokens: a smaller --min-shards, at "
                "least 2, makes it larger)"
            ) from None
        eval_shards = config.data.eval_shards
    summary = {
        **describe_manifest(manifest, eval_shards),
        "documents": tokenized.documents,
        "separator": list(tokenized.separator),
        "inputs": [vars(entry) for entry in sources.files],
        "skipped": list(sources.skipped),
        "options": {
            "tokenizer": tokenizer,
            "vocab_size": (vocab_size or DEFAULT_TRAIN_VOCAB) if kind == "train" else None,
            "text_field": text_field,
            "shard_tokens": shard_tokens,
            "min_shards": min_shards,
            "model_config": str(model_config) if model_config is not None else None,
            "preset": preset if model_config is not None else None,
        },
    }
    prepared = PreparedDataset(manifest, dict(zip((r.hash for r in manifest.shards), tokenized.shards, strict=True)),
                               tokenized.tokenizer_json)  # fmt: skip
    write_prepared_dataset(out, prepared, summary)
    log_event(logger, "dataset prepared", root=summary["root"], shards=summary["shard_count"], out=str(out))
    if json_out:
        typer.echo(json.dumps(summary, sort_keys=True))
        return
    typer.echo(f"dataset root: {summary['root']}")
    typer.echo(
        f"{summary['tokens']:,} tokens of {summary['token_width']} byte(s) in {summary['shard_count']} shards "
        f"({summary['train_tokens']:,} train, {summary['eval_tokens']:,} held out in the last {eval_shards})"
    )
    tokenizer_line = "byte level (256 ids)" if summary["tokenizer"] is None else f"{summary['tokenizer']}"
    typer.echo(f"tokenizer: {tokenizer_line}, vocab_size {summary['vocab_size']:,}")
    typer.echo(f"from {len(sources.files)} file(s), {tokenized.documents:,} documents; wrote {out}")
    typer.echo(f"use it: gradledger run create --dataset {out} ...")


def _tokenize_with_progress(console, documents, tokenizer_json, shard_tokens, min_shards):
    """`tokenize_documents` with a progress bar on stderr while documents are encoded."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from protocol.tokenization import tokenize_documents

    with Progress(
        TextColumn("[bold]tokenize"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True, disable=not console.is_terminal,
    ) as progress:  # fmt: skip
        task = progress.add_task("documents", total=len(documents))
        return tokenize_documents(
            documents, tokenizer_json, shard_tokens=shard_tokens, min_shards=min_shards,
            on_progress=lambda done, _total: progress.update(task, completed=done),
        )  # fmt: skip
