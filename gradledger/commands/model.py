"""`gradledger model`: the trained model out of a run, as a Hugging Face model directory.

`gradledger model export --run ID --round R --out DIR` writes θ_(R+1), the state round R settled; a round that has not
settled is refused (its θ is not final). The work is in gradledger/model_export.py (`export_settled_model`,
docs/export.md), imported inside the command with torch, transformers and the chain adapters, so `gradledger --help`
loads none of them (issue 38).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from gradledger.context import (
    HomeOption,
    ManifestOption,
    PeerOption,
    RpcOption,
    resolve_home,
    resolve_manifest,
    resolve_peers,
    resolve_rpc_url,
)
from node.logs import configure_logging, get_logger, log_event

app = typer.Typer(help="Export a run's settled model.", no_args_is_help=True)
logger = get_logger("model")


@app.callback()
def model_group() -> None:
    """Export a run's settled model as a Hugging Face model directory."""


@app.command("export")
def export_command(
    run: int = typer.Option(..., "--run", min=1, help="the run whose model to export"),
    round_index: int = typer.Option(
        ..., "--round", min=0, help="a settled round R: exports θ_(R+1), the state R's settlement fixed"
    ),
    out: Path = typer.Option(..., "--out", help="new (or empty) directory to write the Hugging Face model to"),
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    peer: list[str] = PeerOption,
    artifacts: list[Path] = typer.Option(
        [], "--artifacts", help="an artifact store directory to read too (repeatable); the stores under --home are read"
    ),
    json_out: bool = typer.Option(False, "--json", help="print what was exported as JSON on stdout"),
) -> None:
    """Write a run's settled θ as a Hugging Face model directory (config, safetensors, tokenizer, model card)."""
    from transformers.utils import logging as hf_logging

    from gradledger.model_export import export_settled_model, facts_to_json, open_home_store
    from protocol.adapters.chain import ChainClient
    from protocol.adapters.contracts import ProtocolClient
    from protocol.adapters.http import PeerSet

    configure_logging()
    hf_logging.disable_progress_bar()
    root = resolve_home(home)
    deployment = resolve_manifest(root, manifest)
    protocol = ProtocolClient(ChainClient(resolve_rpc_url(root, rpc_url, deployment), deployment))
    urls = resolve_peers(root, peer)
    peers = PeerSet(urls) if urls else None
    facts = export_settled_model(protocol, open_home_store(root, artifacts), peers, run, round_index, out)
    log_event(
        logger, "model exported", run=run, round=round_index, out=str(out), theta=facts.theta_hash,
        holders=len(facts.shares),
    )  # fmt: skip
    if json_out:
        sys.stdout.write(json.dumps(facts_to_json(facts, out), indent=2) + "\n")
        return
    typer.echo(f"wrote θ_{facts.theta_index} of run {run} (round {round_index} settled) to {out}")
    typer.echo(f"  θ state hash {facts.theta_hash}  weights hash {facts.weights_hash}")
    typer.echo(f"  {len(facts.shares)} share holder(s) at block {facts.shares_block}; see {out / 'README.md'}")
