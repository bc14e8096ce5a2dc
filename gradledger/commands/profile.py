"""`gradledger profile`: does this machine reproduce the execution profile's bits?

`gradledger profile check` trains the profile's golden segments (protocol/goldens.py) here, under the pins every
`gradledger` process sets before torch loads, and compares their hashes with the committed ones
(protocol/goldens.json). Run it before staking: a solver on a machine that does not reproduce them will have its
work failed by verifiers that do, and a verifier on such a machine never gives an exact fail. Exit status: 0 when
this machine reproduces the profile, 3 when it does not, 1 on an error.

`gradledger profile regenerate` rewrites the goldens of a profile from this machine (`make goldens`), for a new
profile or after a deliberate change of the training code; it refuses a process whose pins did not take effect.
Heavy imports stay inside the commands, so `gradledger --help` does not load torch for them.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from protocol.execution_pins import CURRENT_PROFILE

app = typer.Typer(help="Check that this machine reproduces the execution profile.", no_args_is_help=True)
EXIT_NOT_REPRODUCED = 3


@app.callback()
def profile_group() -> None:
    """Check (or regenerate) the execution profile's golden hashes on this machine."""


def _process_group_trainer(nproc: int, threads: int, profile: str):
    """Train `gpt-micro` with an `nproc`-process gloo group (the path of `solver run --nproc`), the rest here."""
    from protocol.goldens import GOLDEN_SOLVER, build_golden_config, build_golden_dataset, compute_golden_hash
    from protocol.hashing import hash_to_hex
    from protocol.outer import get_initial_global_state
    from protocol.state import compute_state_hash
    from protocol.training import get_params
    from solver.process_group import start_local_group

    dataset = build_golden_dataset()

    def train(golden) -> str:
        if golden.micro_batches < nproc or golden.micro_batches % nproc:
            return hash_to_hex(compute_golden_hash(golden, dataset, profile))
        config = build_golden_config(golden, dataset, profile)
        group = start_local_group(nproc, threads)
        try:
            theta = get_params(get_initial_global_state(config))
            _, end = group.train_round(config, dataset, theta, 0, GOLDEN_SOLVER)
            if group.exchanger is None:
                raise typer.BadParameter("the process group lost a worker: the segment was not trained by the group")
        finally:
            group.close()
        return hash_to_hex(compute_state_hash(end))

    return train


@app.command("check")
def check_command(
    profile: str = typer.Option(CURRENT_PROFILE, help="execution profile to check (a run's config names its own)"),
    threads: int = typer.Option(1, min=1, max=1024, help="torch threads to train the golden segments with"),
    nproc: int = typer.Option(
        1, min=1, max=64, help="also train the micro-batch golden with an N-process group (as `solver run --nproc`)"
    ),
    goldens: Path | None = typer.Option(
        None, help="golden hashes file (default: GRADLEDGER_GOLDENS, else the committed protocol/goldens.json)"
    ),
    cache: bool = typer.Option(True, help="reuse this machine's cached answer for the very same setting"),
    deterministic: bool = typer.Option(
        True, help="torch.use_deterministic_algorithms while training (the profile's setting; off must change no bit)"
    ),
    json_output: bool = typer.Option(False, "--json", help="print the full report as JSON on stdout"),
) -> None:
    """Train the golden segments here and say plainly whether this machine reproduces them (exit 0, else 3)."""
    from node.logs import configure_logging
    from node.profile_check import check_reproduction

    configure_logging()
    trainer = _process_group_trainer(nproc, threads, profile) if nproc > 1 else None
    report = check_reproduction(
        profile, threads, goldens_path=goldens, use_cache=cache, train_segment=trainer, deterministic=deterministic
    )
    if json_output:
        typer.echo(json.dumps(report.as_dict(), indent=1))
    else:
        env = report.environment
        group = f", {nproc} processes" if nproc > 1 else ""
        typer.echo(
            f"profile {report.profile}: kernels {env.aten_capability}, MKL {env.mkl_mode}, "
            f"{env.cpu_vendor} {env.cpu_model}, {threads} thread(s){group}"
        )
        for name, got in report.computed.items():
            expected = report.expected.get(name)
            mark = "ok      " if got == expected else "DIFFERS "
            typer.echo(f"  {mark}{name:<12} {got}" + ("" if got == expected else f" (golden {expected})"))
        if report.reproduces:
            typer.echo(f"REPRODUCES: {report.reason}. This machine gives exact verdicts under {report.profile}.")
        else:
            typer.echo(
                f"DOES NOT REPRODUCE: {report.reason}. A verifier here judges differing replays by the run's "
                "tolerances and never attests an exact fail; a solver here risks its stake (docs/determinism.md)."
            )
    if not report.reproduces:
        raise typer.Exit(EXIT_NOT_REPRODUCED)


@app.command("regenerate")
def regenerate_command(
    profile: str = typer.Option(CURRENT_PROFILE, help="execution profile whose goldens to rewrite"),
    threads: int = typer.Option(1, min=1, max=1024, help="torch threads to train the golden segments with"),
    goldens: Path | None = typer.Option(None, help="file to write (default: the committed protocol/goldens.json)"),
) -> None:
    """Rewrite a profile's golden hashes from this machine (`make goldens`; the reference machine only)."""
    import torch

    from node.logs import configure_logging
    from protocol.adapters.execution_env import read_execution_environment
    from protocol.adapters.goldens import write_goldens
    from protocol.errors import ConfigError
    from protocol.execution_pins import explain_environment_mismatch
    from protocol.goldens import GOLDEN_SEGMENTS, GOLDEN_STEPS, build_golden_dataset, compute_golden_hash
    from protocol.hashing import hash_to_hex
    from protocol.profile import get_transformers_version, set_deterministic_algorithms

    configure_logging()
    torch.set_num_threads(threads)
    set_deterministic_algorithms(True)
    env = read_execution_environment()
    problem = explain_environment_mismatch(profile, env)
    if problem is not None:
        raise ConfigError(f"refusing to write goldens for {profile}: {problem}")
    dataset = build_golden_dataset()
    segments = {g.name: hash_to_hex(compute_golden_hash(g, dataset, profile)) for g in GOLDEN_SEGMENTS}
    measured_on = {
        **{k: v for k, v in env.as_dict().items() if k not in ("pinned",)},
        "mkl_mode": env.mkl_mode,
        "transformers": get_transformers_version(),
        "threads": threads,
        "steps": GOLDEN_STEPS,
    }
    where = write_goldens(profile, segments, measured_on, goldens)
    typer.echo(f"wrote {len(segments)} golden hashes of {profile} to {where}")
