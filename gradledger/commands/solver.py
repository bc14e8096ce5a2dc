"""`gradledger solver stake|run`."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import typer

from gradledger.context import (
    AllowPrivatePeersOption,
    DevnetAccountOption,
    HomeOption,
    KeystoreOption,
    ManifestOption,
    PeerOption,
    PublicUrlOption,
    RpcOption,
    StoreOption,
    check_eth_amount,
    connect_protocol,
    eth_to_wei,
    require_something_to_do,
    resolve_node,
    resolve_peers,
    with_chain_options,
)
from node.logs import configure_logging

app = typer.Typer(help="Stake as a solver and run a solver node.", no_args_is_help=True)


@app.command()
@with_chain_options
def stake(
    amount: float = typer.Option(
        ..., min=0, callback=check_eth_amount, help="ETH to deposit as solver stake (0: none, only --run)"
    ),
    run: int | None = typer.Option(None, "--run", min=1, help="also join this run (needs at least its min stake)"),
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    keystore: Path | None = KeystoreOption,
    devnet_account: int | None = DevnetAccountOption,
    json_out: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Deposit solver stake (and join a run). Exit 0 only when both succeeded."""
    from protocol.types import ROLE_SOLVER

    configure_logging()
    wei = eth_to_wei(amount)
    require_something_to_do(wei, run, "join")
    client, account = connect_protocol(home, rpc_url, manifest, keystore, devnet_account)
    if wei:
        client.deposit_stake(account, ROLE_SOLVER, wei)
    if run is not None and not client.has_joined(run, account.address):
        client.join_run(account, run)
    bonded = client.bonded_of(account.address, ROLE_SOLVER)
    result = {"address": account.address, "bonded_wei": bonded, "run": run}
    typer.echo(json.dumps(result) if json_out else f"{account.address}: {bonded / 1e18:g} ETH bonded as solver")


@app.command("run")
@with_chain_options
def run_node(
    run: int = typer.Option(..., "--run", min=1, help="run id to train in (waits, saying so, until it exists)"),
    coordinator: bool = typer.Option(False, help="also finalize attestations, post θ(r+1) claims and settle rounds"),
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    keystore: Path | None = KeystoreOption,
    devnet_account: int | None = DevnetAccountOption,
    peer: list[str] = PeerOption,
    allow_private_peers: bool | None = AllowPrivatePeersOption,
    public_url: str | None = PublicUrlOption,
    store: str | None = StoreOption,
    host: str = typer.Option("127.0.0.1", help="interface the artifact API listens on"),
    port: int = typer.Option(0, min=0, max=65535, help="artifact API port (0 = any free port)"),
    threads: int = typer.Option(1, min=1, help="torch threads for training (results do not depend on it)"),
    nproc: int = typer.Option(
        1,
        "--nproc",
        min=1,
        help=(
            "train each round data-parallel in N processes on this machine (torch.distributed, gloo); N must divide "
            "the run's train.micro_batches. Checkpoints are the same bits as with 1 (docs/training.md)"
        ),
    ),
    progress: bool = typer.Option(True, help="show a progress bar while training"),
    adversary: str | None = typer.Option(
        None,
        "--adversary",
        help=(
            "DISHONEST role for tests and demos: cheat, withhold, withhold-document, slow-serve, wrong-claim, "
            "malformed, unopenable, wrong-payload, wrong-residual or forged-moments (never default)"
        ),
    ),
    behaviour: str | None = typer.Option(
        None, "--behaviour", help="with --adversary cheat: how to cheat (adversary.behaviours.Behaviour value)"
    ),
) -> None:
    """Train every round of a run, commit, serve checkpoints; resumes after a crash."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from adversary.solver import make_solver_node
    from solver.node import SolverSettings
    from solver.process_group import is_torchrun_worker, join_torchrun_group, run_torchrun_worker, start_local_group

    configure_logging()
    if is_torchrun_worker():  # under torchrun, ranks other than 0 only train (rank 0 is the node)
        run_torchrun_worker(threads)
        return
    target = resolve_node(home, rpc_url, manifest, keystore, devnet_account)
    account = target.account
    dishonest = parse_solver_adversary(adversary, behaviour)
    settings = SolverSettings(
        run, target.home, coordinator, resolve_peers(target.home, peer), host, port, threads, store=store,
        allow_private_peers=allow_private_peers,
    )  # fmt: skip
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), disable=not progress)
    task = bar.add_task("waiting", total=1)
    node = make_solver_node(
        settings, dishonest, account, target.rpc_url, target.deployment,
        on_progress=lambda label, done, total: bar.update(task, description=label, completed=done, total=total),
    )  # fmt: skip
    served = node.start_server()
    from node.peers import verify_public_url

    node.public_url = verify_public_url(public_url or served)
    typer.echo(json.dumps({"event": "serving", "url": served, "address": account.address}), err=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    node.group = start_local_group(nproc, threads, node.log) if nproc > 1 else join_torchrun_group(node.log)
    try:
        with bar:
            node.run(stop)
    finally:
        if node.group is not None:
            node.group.close()  # the workers exit with rank 0


def parse_solver_adversary(adversary: str | None, behaviour: str | None):
    """`--adversary` / `--behaviour` as AdversarySettings (None: an honest node)."""
    from adversary.behaviours import Behaviour
    from adversary.solver import AdversarySettings, SolverAdversary
    from protocol.errors import ConfigError

    if adversary is None:
        if behaviour is not None:
            raise ConfigError("--behaviour only makes sense with --adversary cheat")
        return None
    try:
        mode = SolverAdversary(adversary)
        chosen = Behaviour(behaviour) if behaviour is not None else None
    except ValueError:
        raise ConfigError(
            f"unknown --adversary {adversary!r} or --behaviour {behaviour!r}; adversaries: "
            f"{', '.join(m.value for m in SolverAdversary)}; behaviours: {', '.join(b.value for b in Behaviour)}"
        ) from None
    return AdversarySettings(mode, chosen)
