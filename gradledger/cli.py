"""The `gradledger` command: one entry point, a sub-command per role.

Errors gradledger raises on purpose (`GradledgerError`) are printed as one clear line on
stderr with exit status 1; anything else is a bug and keeps its traceback.

INVARIANT: importing this module, and printing any command's `--help`, loads no torch, web3, eth_account,
transformers or role package (tests/gradledger/test_cli_imports.py): a command imports what it needs inside the
function that runs, and options are declared with light types only, so the start-up every `gradledger` process pays
stays well under a second of CPU (issue 38; bench/cli_startup.py, docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console

from gradledger import __version__
from gradledger.commands import account as account_cli
from gradledger.commands import audit as audit_cli
from gradledger.commands import calibrate as calibrate_cli
from gradledger.commands import data as data_cli
from gradledger.commands import devnet as devnet_cli
from gradledger.commands import explorer as explorer_cli
from gradledger.commands import model as model_cli
from gradledger.commands import profile as profile_cli
from gradledger.commands import run as devnet_commands
from gradledger.commands import run_status as run_status_cli
from gradledger.commands import solver as solver_cli
from gradledger.commands import verifier as verifier_cli
from gradledger.commands import whistleblower as whistleblower_cli
from node.logs import configure_logging, get_logger, log_event
from protocol.errors import ConfigError, GradledgerError

app = typer.Typer(
    name="gradledger",
    help="Verifiable, incentivized DiLoCo training with on-chain settlement.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(devnet_cli.app, name="devnet")
app.command("deploy")(devnet_commands.deploy_command)
app.add_typer(devnet_commands.run_app, name="run")
devnet_commands.run_app.command("list")(run_status_cli.list_command)
devnet_commands.run_app.command("status")(run_status_cli.status_command)
app.add_typer(devnet_commands.artifacts_app, name="artifacts")
app.add_typer(solver_cli.app, name="solver")
app.add_typer(verifier_cli.app, name="verifier")
app.add_typer(whistleblower_cli.app, name="whistleblower")
app.command("audit")(audit_cli.audit_command)
app.command("explorer")(explorer_cli.explorer_command)
app.add_typer(data_cli.app, name="data")
app.add_typer(model_cli.app, name="model")
app.add_typer(profile_cli.app, name="profile")
app.command("calibrate")(calibrate_cli.calibrate_command)
app.command("account")(account_cli.account_command)
app.command("unbond")(account_cli.unbond_command)
app.command("withdraw")(account_cli.withdraw_command)
app.command("leave")(account_cli.leave_command)
err_console = Console(stderr=True)
logger = get_logger("cli")


@app.command()
def version() -> None:
    """Print the gradledger version."""
    typer.echo(__version__)


@app.command()
def simulate(
    solvers: int = typer.Option(4, min=1, max=64, help="number of simulated solvers (one process each)"),
    inner_steps: int = typer.Option(25, min=1, help="H: inner AdamW steps per round"),
    rounds: int = typer.Option(20, min=1, help="DiLoCo rounds to run"),
    steps_per_segment: int = typer.Option(5, min=1, help="k: inner steps per checkpointed segment"),
    preset: str = typer.Option("default", help="config preset: tiny, default or large"),
    data: Path | None = typer.Option(None, help="directory of text files (default: the Python stdlib sources)"),
    seed: str = typer.Option("0x" + "00" * 31 + "01", help="run seed, 32 bytes as 0x-hex"),
    json_out: Path = typer.Option(Path("runs/simulate.json"), "--json", help="where to write the JSON summary"),
    plot: Path = typer.Option(Path("runs/simulate.png"), help="where to write the PNG loss plot"),
) -> None:
    """Train with DiLoCo locally (no chain): loss per round, bytes communicated, JSON + PNG."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from protocol.adapters.corpus import describe_corpus, load_corpus_shards
    from protocol.config import build_run_config
    from protocol.data import verify_dataset_fits_config
    from protocol.hashing import hash_to_hex
    from sim.simulate import run_simulation, write_simulation_outputs

    configure_logging()
    if inner_steps % steps_per_segment:
        raise ConfigError(
            f"--inner-steps ({inner_steps}) must be a multiple of --steps-per-segment ({steps_per_segment})"
        )
    manifest, shards = load_corpus_shards(data)
    config = build_run_config(
        preset=preset,
        run_seed=seed,
        dataset_root=hash_to_hex(manifest.root),
        overrides={"train": {"inner_steps": inner_steps, "steps_per_segment": steps_per_segment}},
    )
    verify_dataset_fits_config(manifest, config, where=describe_corpus(data))
    with Progress(
        TextColumn("[bold]simulate"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[status]}"), console=err_console,
    ) as progress:  # fmt: skip
        task = progress.add_task("rounds", total=rounds, status=f"loss {'':>6}")

        def on_round(index: int, result) -> None:
            progress.update(task, advance=1, status=f"loss {result.eval_loss[-1]:.4f}")
            log_event(
                logger, "round", round=index, eval_loss=round(result.eval_loss[-1], 5),
                train_loss=round(result.train_loss[-1], 5), bytes=result.bytes_communicated,
            )  # fmt: skip

        result = run_simulation(config, manifest, shards, solvers, rounds, on_round)
    write_simulation_outputs(result, json_out, plot)
    typer.echo(f"eval loss: {result.eval_loss[0]:.4f} (θ0) -> {result.eval_loss[-1]:.4f} after {rounds} rounds")
    typer.echo(f"bytes communicated: {result.bytes_communicated:,} ({result.parameters:,} parameters)")
    typer.echo(f"wrote {json_out} and {plot}")


@app.command()
def demo(
    home: Path | None = typer.Option(None, "--home", help="data directory (default $GRADLEDGER_HOME or ./.gradledger)"),
    json_out: Path | None = typer.Option(None, "--json", help="also write the summary as JSON to this file"),
    adversarial: bool = typer.Option(
        False, "--adversarial", help="with a cheating solver, a lazy verifier, jurors and a whistleblower"
    ),
    model_config: Path | None = typer.Option(
        None, "--model-config", help="train this model instead of the built-in GPT (e.g. examples/llama-tiny.json)"
    ),
    dataset: Path | None = typer.Option(
        None, help="train on a dataset directory written by `gradledger data prepare` (default: the stdlib corpus)"
    ),
    settings: list[str] = typer.Option(
        [],
        "--set",
        metavar="KEY=VALUE",
        help="a run-config setting, repeatable, as for `run create` (e.g. train.codec=int1-c4096-k56-r30 "
        "train.aggregate=senders); H and k are the demo's",
    ),
) -> None:
    """Train, verify, settle and pay a 3-round run on a local chain; print the summary.

    Exits 1, naming each reason, when the run fell short: a round with no honest work accepted, a round not settled,
    contracts holding other than they owe, a failed audit (`gradledger.demo_summary.check_demo_summary`); the
    reasons are also the JSON summary's `problems`. The windows are sized from this machine's measured pace."""
    configure_logging()
    if adversarial and (model_config is not None or dataset is not None or settings):
        raise typer.BadParameter("--adversarial runs the built-in model and config only", param_hint="'--model-config'")
    if adversarial:
        from gradledger.adversarial_demo import run_adversarial_demo

        summary = run_adversarial_demo(home, json_out, err_console)
    else:
        from gradledger.demo import run_demo

        summary = run_demo(home, json_out, err_console, model_config, dataset, settings)
    if summary["problems"]:
        for problem in summary["problems"]:
            err_console.print(f"[bold red]demo failed:[/] {problem}", highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    planted = summary.get("planted_per_round") or []
    why_fewer = (
        f"; {planted} planted by the protocol to test its verifiers, who failed them as they should"
        if any(planted)
        else ""
    )
    err_console.print(
        f"demo passed: honest work accepted in every round ({summary['accepted_per_round']} commitments accepted"
        f"{why_fewer})",
        highlight=False,
    )


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point; `argv` (default: the process's arguments) lets a test run a command in its own
    process with the same error handling, instead of paying a new interpreter's start-up per bad input."""
    try:
        app(args=argv)
    except GradledgerError as exc:
        # soft_wrap: the message is never broken inside a path or a value; the terminal wraps long lines itself
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(1)
