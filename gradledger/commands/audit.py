"""`gradledger audit --run ID [--json FILE] [--html FILE]`: audit a run from the chain and artifacts.

Exit status: 0 when every check passed, 1 when a check failed (the reports are still written,
they say which and why) -- an accepted segment that does not replay included, 2 when the audit could not be
completed -- unreachable or dropping RPC, missing manifest, unknown run, a bad `--replay` -- in which case nothing
is written, and 3, only with `--strict`, when every check passed but the report carries a warning (e.g. a run that
accepted no work, or accepted segments nobody serves any more so they could not be replayed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from gradledger.context import HomeOption, ManifestOption, PeerOption, RpcOption, resolve_home, resolve_peers
from node.logs import configure_logging, get_logger, log_event
from protocol.errors import GradledgerError

LABELS_FILE = "labels.json"
EXIT_FAILED_CHECK = 1
EXIT_INCOMPLETE = 2
EXIT_WARNING = 3
logger = get_logger("audit")


def audit_command(
    run: int | None = typer.Option(None, "--run", min=1, help="run id to audit (omit to list the deployment's runs)"),
    json_out: Path | None = typer.Option(None, "--json", help="write the JSON report to this file"),
    html_out: Path | None = typer.Option(None, "--html", help="write the self-contained HTML report to this file"),
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    artifacts: list[str] = typer.Option(
        [],
        "--artifacts",
        help="an artifact store to read: a directory or s3://BUCKET/PREFIX (AWS_* environment for the endpoint and "
        "credentials); repeatable, added to the stores under --home",
    ),
    peer: list[str] = PeerOption,
    home_stores: bool = typer.Option(
        True,
        help="also read the creator, solver and verifier stores under --home (--no-home-stores: only "
        "--artifacts and peers)",
    ),
    rpc_retries: int = typer.Option(6, min=0, max=20, help="retries (with backoff) when the RPC connection drops"),
    threads: int = typer.Option(1, min=1, help="torch threads for re-deriving θ and evaluating loss (same results)"),
    strict: bool = typer.Option(
        False,
        "--strict",
        help=f"exit {EXIT_WARNING} when every check passed but a warning stands (e.g. a run that accepted no work)",
    ),
    replay: str | None = typer.Option(
        None,
        "--replay",
        metavar="N|all|none",
        help="segments of every accepted commitment of a settled round to replay from the solver's committed "
        "checkpoints and judge as verifiers do: a count (default 1), 'all', or 'none'/0 to skip (the report says so); "
        f"a segment that does not replay fails the audit (exit {EXIT_FAILED_CHECK}), one nobody serves is a warning",
    ),
    use_index: bool = typer.Option(
        True,
        "--index/--no-index",
        help="read the chain's events through the deployment's event index under --home (index/events.sqlite, shared "
        "with `run status` and the explorer: only blocks it lacks are read); --no-index reads them all from the RPC",
    ),
    replay_seed: int = typer.Option(
        0,
        "--replay-seed",
        min=0,
        help="audit seed of the replay sample: the segments are a pure function of run, round, solver, the round's "
        "on-chain seed and this seed (docs/audit.md); the same seed replays the same segments, another draws anew",
    ),
) -> None:
    """Rebuild a run from chain events and artifacts alone, re-derive every θ, replay a sample of the accepted
    segments, check shares, slashes and ETH."""
    import torch

    from auditor.audit import audit_run, open_sources
    from auditor.chain_reads import list_deployment_runs
    from auditor.replay_check import ReplaySettings, ReplaySettingsError, parse_replay_count
    from auditor.report import get_report_model, print_summary, write_outputs
    from gradledger.context import resolve_manifest, resolve_rpc_url
    from protocol.adapters.chain import ChainClient
    from protocol.adapters.event_index import EventIndex

    try:  # the default sample size is auditor/replay_check.py DEFAULT_REPLAY
        settings = (
            ReplaySettings(seed=replay_seed)
            if replay is None
            else ReplaySettings(parse_replay_count(replay), replay_seed)
        )
    except ReplaySettingsError as exc:
        raise typer.BadParameter(str(exc), param_hint="--replay") from None
    configure_logging()
    torch.set_num_threads(threads)  # small tensors: one thread is fastest (no pool wake-ups), results are equal
    out = Console(width=None if sys.stdout.isatty() else 140)
    err = Console(stderr=True)
    try:
        root = resolve_home(home)
        deployment = resolve_manifest(root, manifest)
        url = resolve_rpc_url(root, rpc_url, deployment)
        chain = ChainClient(url, deployment, max_retries=rpc_retries)
        if run is None:
            print_runs(list_deployment_runs(chain, deployment), out)
            return
        sources = open_sources(root, artifacts, resolve_peers(root, peer), include_home=home_stores)
        index = EventIndex(root / "index" / "events.sqlite", chain) if use_index else None
        report = audit_run(chain, deployment, run, sources, read_labels(root), replay=settings, index=index)
        model = get_report_model(report)  # derived once, rendered by each output
        print_summary(model, out)
        write_outputs(model, json_out, html_out)
    except GradledgerError as exc:
        err.print(f"[bold red]audit incomplete:[/] {exc}", highlight=False, soft_wrap=True)
        err.print("nothing was written; fix the cause and run the audit again", highlight=False)
        log_event(logger, "audit incomplete", run=run, error=str(exc))
        raise typer.Exit(EXIT_INCOMPLETE) from None
    for path in (json_out, html_out):
        if path is not None:
            out.print(f"wrote {path}", highlight=False)
    log_event(
        logger,
        "audited",
        run=run,
        passed=report.passed,
        failed=[c.name for c in report.failed],
        warnings=[w.name for w in report.warnings],
        block=report.block,
        seconds=report.timings.get("total"),
    )
    if not report.passed:
        sys.stdout.flush()
        raise typer.Exit(EXIT_FAILED_CHECK)
    if strict and report.warnings:
        sys.stdout.flush()
        raise typer.Exit(EXIT_WARNING)


def read_labels(home: Path) -> dict[str, str]:
    """Participant names from `<home>/labels.json` (address -> name; the demo writes it), if present."""
    path = home / LABELS_FILE
    if not path.exists():
        return {}
    try:
        labels = json.loads(path.read_text())
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            raise ValueError("expected an object mapping addresses to names")
        return {str(k): v for k, v in labels.items()}
    except ValueError as exc:
        raise GradledgerError(f"{path} is not a valid labels file ({exc}); fix or remove it") from None


def print_runs(runs, console: Console, title: str = "runs (audit one with --run ID)") -> None:
    """The deployment's runs as a table (`gradledger audit` without --run, `gradledger run list`)."""
    if not runs:
        console.print("no runs in this deployment")
        return
    table = Table(title=title, title_justify="left")
    for column in ("run", "creator", "created at block", "rounds settled", "finished"):
        table.add_column(column)
    for r in runs:
        table.add_row(
            str(r.run_id),
            r.creator,
            str(r.created_block),
            f"{r.rounds_settled}/{r.max_rounds}",
            "yes" if r.finished else "no",
        )
    console.print(table)
