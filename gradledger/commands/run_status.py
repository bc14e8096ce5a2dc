"""`gradledger run list` and `gradledger run status [--watch]`: the runs of a deployment, and where one stands.

Read-only: no key is needed. Both fold the chain's events (`protocol.history`) as the deployment's event index holds
them (<home>/index/events.sqlite, `protocol/adapters/event_index.py`: only blocks not indexed yet are read), the
same record the audit reads, so what they print agrees with it: `run list` is the deployment's runs and how far each
got; `run status` the current round, its phase and deadlines, and per round the commitments, accepted work,
attestations, disputes and θ (`protocol.history.status.get_run_status`). `--watch` prints again on every new block
until the run finishes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.console import Console, Group
from rich.table import Table

from gradledger.context import HomeOption, ManifestOption, RpcOption
from node.logs import configure_logging

JsonOption = typer.Option(False, "--json", help="print the result as JSON (times in chain seconds, amounts in wei)")


def _connect(home: Path | None, rpc_url: str | None, manifest: Path | None):
    """The deployment's event index, kept in <home>/index/events.sqlite (protocol/adapters/event_index.py): a
    command run again, or `--watch` on each new block, reads only the blocks it has not indexed yet."""
    from gradledger.context import resolve_home, resolve_manifest, resolve_rpc_url
    from protocol.adapters.chain import ChainClient
    from protocol.adapters.event_index import EventIndex

    root = resolve_home(home)
    deployment = resolve_manifest(root, manifest)
    return EventIndex(
        root / "index" / "events.sqlite", ChainClient(resolve_rpc_url(root, rpc_url, deployment), deployment)
    )


def list_command(
    json_out: bool = JsonOption,
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
) -> None:
    """List the deployment's runs: creator, creation block, rounds settled of the run's rounds, finished."""
    from dataclasses import asdict

    from gradledger.commands.audit import print_runs
    from protocol.history.fold import list_runs

    configure_logging()
    index = _connect(home, rpc_url, manifest)
    index.sync()
    runs = list_runs(index.events(names=["RunCreated", "RoundSettled", "RunFinished"]))
    if json_out:
        typer.echo(json.dumps([asdict(r) for r in runs], indent=1))
    else:
        print_runs(runs, Console(), "runs (show one with `gradledger run status --run ID`)")


def read_run_status(index, run_id: int, losses=None):
    """The run's status now, folded from the deployment's indexed events (synced first); RunNotFoundError for a run
    that does not exist. `losses` (an `auditor.explorer.losses.LossBook`): the held-out loss of each θ, evaluated here
    once per θ (the audit's loss), else none."""
    from node.bootstrap import get_chain_now
    from protocol.adapters.runs import RunNotFoundError
    from protocol.history.fold import fold_run_history, list_runs
    from protocol.history.status import get_run_status

    index.sync()
    events = index.events()
    if run_id not in {r.run_id for r in list_runs(events)}:
        known = ", ".join(str(r.run_id) for r in list_runs(events)) or "none"
        raise RunNotFoundError(
            f"run {run_id} does not exist in this deployment (runs: {known}); see `gradledger run list`"
        )
    history = fold_run_history(events, run_id, index.timestamps())
    evaluated = losses.losses_of(history, wait=True).losses if losses is not None else None
    return get_run_status(history, get_chain_now(index.chain), evaluated)


def _utc(ts: int) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(ts))


def render_run_status(status) -> Group:
    """The status as a headline and a table of rounds (the current round's deadlines in its phase column)."""
    if status.finished:
        head = f"run {status.run_id}: finished ({status.max_rounds} rounds)"
    else:
        head = f"run {status.run_id}: round {status.current_round} of {status.max_rounds}, {status.phase}"
    head += f"; chain time {_utc(status.now)} UTC"
    table = Table(title_justify="left")
    columns = ("round", "phase", "windows close (UTC)", "commitments", "accepted", "pass/fail", "disputes", "θ_(r+1)")
    for column in (*columns, "loss of θ_r"):
        table.add_column(column)
    for r in status.rounds:
        windows = f"commit {_utc(r.commit_end)}, attest {_utc(r.attest_end)}, challenge {_utc(r.challenge_end)}"
        disputes = f"{r.disputes}" + (f" ({r.disputes_open} open)" if r.disputes_open else "")
        theta = (r.next_theta or "")[:12]
        table.add_row(
            str(r.round),
            r.phase,
            windows,
            str(r.commitments),
            str(r.accepted),
            f"{r.passes}/{r.fails}",
            disputes,
            theta,
            "-" if r.loss is None else f"{r.loss:.4f}",
        )
    parts: list = [head, table]
    if status.final_loss is not None:
        parts.append(f"loss of the final θ: {status.final_loss:.4f}")
    if status.slashed_wei:
        parts.append(f"slashed in this run: {status.slashed_wei / 1e18:g} ETH")
    return Group(*parts)


def status_command(
    run: int = typer.Option(..., "--run", min=1, help="the run to show (`gradledger run list` lists them)"),
    watch: bool = typer.Option(False, "--watch", help="print again on every new block until the run finishes"),
    json_out: bool = JsonOption,
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    loss: bool = typer.Option(
        True,
        help="evaluate each θ's held-out loss from the artifact stores under --home (the audit's loss; once per θ)",
    ),
) -> None:
    """Show a run's round, phase, window deadlines, commitments, accepted work, attestations, disputes, θ and loss."""
    from rich.live import Live

    configure_logging()
    index = _connect(home, rpc_url, manifest)
    losses = _loss_book(home) if loss else None
    status = read_run_status(index, run, losses)
    if json_out:  # one JSON object, or with --watch one per line per new block
        for update in [status, *(_updates(index, run, status, losses) if watch else [])]:
            typer.echo(json.dumps(update.to_json(), indent=None if watch else 1))
        return
    if not watch:
        Console().print(render_run_status(status))
        return
    with Live(render_run_status(status), console=Console(), auto_refresh=False) as live:
        for update in _updates(index, run, status, losses):
            live.update(render_run_status(update), refresh=True)


def _loss_book(home: Path | None):
    """The θ losses of `run status`: read from the home's artifact stores (the creator's, the solvers'), each θ once."""
    from auditor.audit import open_sources
    from auditor.explorer.losses import LossBook
    from gradledger.context import resolve_home, resolve_peers

    root = resolve_home(home)
    return LossBook(open_sources(root, [], resolve_peers(root, [])), lambda: None)


def _updates(index, run: int, status, losses):
    """The run's status again at every new block (one `eth_blockNumber` a second meanwhile), until it finishes."""
    chain = index.chain
    seen = chain.block_number()
    while not status.finished:
        time.sleep(1.0)
        head = chain.block_number()
        if head == seen:
            continue  # no block since the last read: no event can have come either
        seen, status = head, read_run_status(index, run, losses)
        yield status
