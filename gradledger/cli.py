"""The `gradledger` command: one entry point, a sub-command per role.

Errors gradledger raises on purpose (`GradledgerError`) are printed as one clear line on
stderr with exit status 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from gradledger import __version__
from protocol.errors import GradledgerError

app = typer.Typer(
    name="gradledger",
    help="Verifiable, incentivized DiLoCo training with on-chain settlement.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True)


@app.command()
def version() -> None:
    """Print the gradledger version."""
    typer.echo(__version__)


@app.command()
def demo() -> None:
    """Run the main job end to end (grows as the protocol is built; see the README)."""
    from gradledger.demo import run_demo

    raise typer.Exit(run_demo())


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except GradledgerError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(1)
