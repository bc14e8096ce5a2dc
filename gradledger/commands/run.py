"""`gradledger deploy`, `gradledger run create` and `gradledger artifacts serve`."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import typer

from gradledger.context import (
    HomeOption,
    KeystoreOption,
    ManifestOption,
    RpcOption,
    eth_to_wei,
    resolve_account,
    resolve_home,
    resolve_manifest,
    resolve_rpc_url,
)
from node.logs import configure_logging

run_app = typer.Typer(help="Create and inspect runs.", no_args_is_help=True)
artifacts_app = typer.Typer(help="Serve an artifact store over HTTP.", no_args_is_help=True)


def deploy_command(
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    keystore: Path | None = KeystoreOption,
    devnet_account: int | None = typer.Option(0, "--devnet-account", help="deployer: anvil account N (devnet)"),
    unbonding_delay: int = typer.Option(7 * 24 * 3600, min=1, help="StakeManager unbonding delay in seconds"),
    json_out: bool = typer.Option(False, "--json", help="print the manifest summary as JSON"),
) -> None:
    """Build the contracts with forge, deploy them, write <home>/manifest.json."""
    from devnet.deploy import deploy
    from protocol.adapters.chain import ChainClient

    configure_logging()
    root = resolve_home(home)
    url = resolve_rpc_url(root, rpc_url)
    chain_id = ChainClient(url).chain_id
    account = resolve_account(keystore, None if keystore else devnet_account, chain_id)
    manifest = deploy(url, account, root / "manifest.json", unbonding_delay)
    summary = {
        "manifest": str(root / "manifest.json"),
        "chain_id": manifest.chain_id,
        "block": manifest.deployed_block,
        "contracts": {name: rec.address for name, rec in manifest.contracts.items()},
    }
    typer.echo(json.dumps(summary) if json_out else "\n".join(f"{k}: {v}" for k, v in summary["contracts"].items()))


@run_app.command()
def create(
    preset: str = typer.Option("default", help="config preset: tiny, default or large"),
    rounds: int = typer.Option(3, min=1, help="rounds in the run"),
    inner_steps: int = typer.Option(20, min=1, help="H: inner steps per round"),
    steps_per_segment: int = typer.Option(5, min=1, help="k: steps per segment"),
    samples: int = typer.Option(2, min=1, help="segments each verifier replays per commitment"),
    commit_window: int = typer.Option(20, min=1, help="seconds for solvers to train and commit"),
    attest_window: int = typer.Option(15, min=1, help="seconds for verifiers to attest"),
    challenge_window: int = typer.Option(6, min=1, help="seconds to challenge attestations and claims"),
    reward_pool: float = typer.Option(30.0, min=0, help="ETH paid out to share holders across the run"),
    data: Path | None = typer.Option(None, help="directory of text files (default: the Python stdlib sources)"),
    seed: str = typer.Option("0x" + "00" * 31 + "2a", help="run seed, 32 bytes as 0x-hex"),
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    keystore: Path | None = KeystoreOption,
    devnet_account: int | None = typer.Option(0, "--devnet-account", help="creator: anvil account N (devnet)"),
    json_out: bool = typer.Option(False, "--json", help="print the run as JSON"),
) -> None:
    """Publish a run's config, dataset and θ0 to <home>/creator/artifacts and create it on-chain."""
    from devnet.runs import RunRules, create_run
    from protocol.adapters.artifacts import LocalArtifactStore
    from protocol.adapters.chain import ChainClient
    from protocol.adapters.contracts import ProtocolClient
    from protocol.adapters.corpus import load_corpus_shards
    from protocol.config import build_run_config
    from protocol.hashing import hash_to_hex

    configure_logging()
    root = resolve_home(home)
    deployment = resolve_manifest(root, manifest)
    client = ProtocolClient(ChainClient(resolve_rpc_url(root, rpc_url, deployment), deployment))
    account = resolve_account(keystore, None if keystore else devnet_account, deployment.chain_id)
    dataset_manifest, shards = load_corpus_shards(data)
    config = build_run_config(
        preset=preset, run_seed=seed, dataset_root=hash_to_hex(dataset_manifest.root),
        overrides={"train": {"inner_steps": inner_steps, "steps_per_segment": steps_per_segment}},
    )  # fmt: skip
    rules = RunRules(
        rounds=rounds, samples_per_commitment=samples, commit_window_s=commit_window,
        attest_window_s=attest_window, challenge_window_s=challenge_window,
    )  # fmt: skip
    store = LocalArtifactStore(root / "creator" / "artifacts")
    run_id, terms = create_run(client, account, store, config, dataset_manifest, shards, rules, eth_to_wei(reward_pool))
    out = {"run_id": run_id, "config_hash": hash_to_hex(terms.config_hash), "theta0": hash_to_hex(terms.theta0_hash)}
    typer.echo(json.dumps(out) if json_out else f"created run {run_id} (config {out['config_hash']})")


@artifacts_app.command()
def serve(
    directory: Path = typer.Argument(..., help="artifact store directory to serve read-only"),
    host: str = typer.Option("127.0.0.1", help="interface to listen on"),
    port: int = typer.Option(0, min=0, max=65535, help="port (0 = any free port)"),
) -> None:
    """Serve a local artifact store at GET /artifacts/{hash} until interrupted."""
    from fastapi import FastAPI

    from protocol.adapters.artifacts import LocalArtifactStore, make_artifact_router
    from protocol.adapters.http import serve_in_thread

    app = FastAPI(title="gradledger artifacts")
    app.include_router(make_artifact_router(LocalArtifactStore(directory)))
    handle = serve_in_thread(app, host, port)
    typer.echo(json.dumps({"event": "serving", "url": handle.url}), err=True)
    threading.Event().wait()
