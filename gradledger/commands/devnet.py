"""`gradledger devnet ...`: run a local chain whose state survives restarts."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer

from devnet.lifecycle import DEFAULT_PORT, get_home, read_devnet_info, start_devnet, stop_devnet

app = typer.Typer(help="Start, stop and inspect the local anvil devnet.", no_args_is_help=True)

HomeOption = typer.Option(None, "--home", help="gradledger data directory (default $GRADLEDGER_HOME or ./.gradledger)")


@app.command()
def up(
    home: Path | None = HomeOption,
    port: int | None = typer.Option(
        None,
        min=0,
        max=65535,
        help=f"RPC port on 127.0.0.1 (0 = any free port); default: the port this chain had, else {DEFAULT_PORT}",
    ),
    json_out: bool = typer.Option(False, "--json", help="print the devnet record as JSON"),
) -> None:
    """Start anvil (chain id 31337) with its state in <home>/devnet; a restart resumes the chain on its port."""
    info, started = start_devnet(get_home(home), port)
    if json_out:
        typer.echo(json.dumps({**asdict(info), "started": started}))
    else:
        verb = "started" if started else "already running"
        typer.echo(f"devnet {verb}: {info.rpc_url} (pid {info.pid}, state {info.state_path})")


@app.command()
def down(home: Path | None = HomeOption) -> None:
    """Stop the devnet cleanly (its state is saved for the next `up`)."""
    info = stop_devnet(get_home(home))
    typer.echo("no devnet was running" if info is None else f"devnet stopped (pid {info.pid}); state kept")


@app.command()
def status(
    home: Path | None = HomeOption,
    json_out: bool = typer.Option(False, "--json", help="print status as JSON"),
) -> None:
    """Whether the devnet runs, and its chain id and block height. Exit 1 when it is down."""
    from protocol.adapters.chain import ChainClient

    info = read_devnet_info(get_home(home))
    if info is None:
        typer.echo(json.dumps({"running": False}) if json_out else "devnet is not running")
        raise typer.Exit(1)
    client = ChainClient(info.rpc_url, expected_chain_id=info.chain_id, max_retries=2)
    status_ = {"running": True, **asdict(info), "block_number": client.block_number()}
    if json_out:
        typer.echo(json.dumps(status_))
    else:
        typer.echo(f"devnet running at {info.rpc_url}: chain {client.chain_id}, block {status_['block_number']}")
