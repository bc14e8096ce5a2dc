"""`gradledger demo`: a real training run, verified and paid for on a local chain.

Starts anvil (state kept in <home>/devnet), deploys the contracts, creates a run, stakes 3
solvers and 2 verifiers from devnet accounts, runs them as separate processes for 3 rounds end
to end (train, commit, replay, attest, claim θ(r+1), settle, mint shares), prints a summary and
stops everything it started. The chain's state stays on disk: `gradledger devnet up` brings the
same chain back for inspection or audit.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from devnet.lifecycle import get_home, start_devnet, stop_devnet
from devnet.runs import ETH
from protocol.errors import GradledgerError
from protocol.run_presets import DEMO
from protocol.run_terms import CreationTerms

DEMO_MARKER = ".gradledger-demo"


class DemoError(GradledgerError):
    """The demo could not run to completion."""


@dataclass(frozen=True)
class Participant:
    label: str
    account: int
    role: str
    honest: bool = True


PARTICIPANTS = (
    Participant("solver-1", 1, "solver"),
    Participant("solver-2", 2, "solver"),
    Participant("solver-3", 3, "solver"),
    Participant("verifier-1", 4, "verifier"),
    Participant("verifier-2", 5, "verifier"),
)


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def prepare_home(home: Path) -> None:
    """Start from a clean demo home; refuse to wipe a home that holds a non-demo deployment."""
    if (home / "manifest.json").exists() and not (home / DEMO_MARKER).exists():
        raise DemoError(
            f"{home} holds a deployment that the demo did not create; run the demo with another --home "
            "(or GRADLEDGER_HOME) or move that directory away"
        )
    stop_devnet(home)
    for name in ("devnet", "solvers", "verifiers", "creator", "logs", "audit"):
        shutil.rmtree(home / name, ignore_errors=True)
    for name in ("manifest.json", "peers.txt", "demo.json", "labels.json"):
        (home / name).unlink(missing_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    (home / DEMO_MARKER).write_text("this directory was created by `gradledger demo`\n")


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gradledger", *args]


@dataclass(frozen=True)
class Scenario:
    """What differs between the demos: who takes part, how each node is started, the run's rules.

    Solvers stake 2x the run's solver minimum and verifiers/jurors 2x the verifier minimum before
    the run exists (the nodes join or register themselves once it does), so a slash leaves
    something to show; other roles (a whistleblower) stake nothing.
    """

    participants: tuple[Participant, ...]
    rules: CreationTerms
    run_seed: str
    command: Callable[[Participant, int, int], list[str]]
    announcement: str
    extra_summary: Callable[[Any, int], dict] | None = None
    stale_dirs: tuple[str, ...] = ()
    check: Callable[[dict], list[str]] | None = None
    """What this scenario must show besides `check_demo_summary` (e.g. the cheaters slashed): problems, one each."""


DEVNET_NODE_FLAGS = ("--allow-private-peers",)
"""What every node the demos start on this machine passes: its peers announce 127.0.0.1 URLs (docs/nodes.md)."""


def _honest_command(p: Participant, run_id: int, port: int) -> list[str]:
    common = ["--run", str(run_id), "--devnet-account", str(p.account), "--port", str(port), *DEVNET_NODE_FLAGS]
    if p.role == "solver":
        return _cli("solver", "run", *common, "--no-progress", *(["--coordinator"] if p.label == "solver-1" else []))
    return _cli("verifier", "serve", *common, "--exit-when-done")


HONEST_SCENARIO = Scenario(
    PARTICIPANTS, DEMO, "0x" + "00" * 31 + "2a", _honest_command, "3 solvers and 2 verifiers staked and running"
)


def run_demo(
    home: Path | None = None,
    json_path: Path | None = None,
    console: Console | None = None,
    model_config: Path | None = None,
    dataset: Path | None = None,
    settings: list[str] | None = None,
) -> dict:
    """Run the whole demo; returns the summary (also written to `json_path`), whose `problems` list every way the run
    fell short (`gradledger.demo_summary.check_demo_summary`; empty: it trained, verified and paid every round). With
    `model_config` (e.g. examples/llama-tiny.json) the run trains that model, with `dataset` (a `gradledger data
    prepare` directory) on that data; the defaults are the built-in GPT on the default corpus."""
    from auditor.report import print_summary
    from gradledger.demo_summary import print_demo_summary

    console = console or Console(stderr=True)
    summary, audit, audit_paths = play_scenario(
        HONEST_SCENARIO, home, json_path, console, model_config, dataset, settings or []
    )
    print_demo_summary(summary, console)
    print_summary(audit, console, compact=True)
    console.print(f"audit report: {audit_paths['html']} (JSON: {audit_paths['json']})", highlight=False, soft_wrap=True)
    return summary


def play_scenario(
    scenario: Scenario,
    home: Path | None,
    json_path: Path | None,
    console: Console,
    model_config: Path | None = None,
    dataset: Path | None = None,
    settings: list[str] | None = None,
):
    """Fresh devnet, deploy, stake, start the nodes, create the run, wait, summarise, audit, stop.

    The run's model and data are resolved as `gradledger run create` resolves them (gradledger/run_inputs.py),
    with `settings` ("train.codec=...", as `run create --set`) over the demo's config; H and k are the scenario's.

    Returns (summary, audit report, audit paths); the summary is also written to `json_path`.
    # INVARIANT: every process and the devnet this starts are stopped before it returns or raises.
    """
    from devnet.deploy import deploy
    from devnet.runs import create_run
    from gradledger.demo_summary import build_summary, check_demo_summary
    from gradledger.run_inputs import parse_settings_but_h_and_k, resolve_run_inputs
    from protocol.adapters.artifacts import LocalArtifactStore
    from protocol.adapters.chain import ChainClient
    from protocol.adapters.contracts import ProtocolClient
    from protocol.adapters.http import make_node_app, serve_in_thread
    from protocol.adapters.keys import get_devnet_account
    from protocol.types import ROLE_SOLVER, ROLE_VERIFIER

    root = get_home(home)
    started = time.monotonic()
    preset = scenario.rules.run
    overrides = parse_settings_but_h_and_k(settings or [], "the demo's H and k are its scenario's; leave them out")
    train = {**overrides.get("train", {}), "inner_steps": preset.inner_steps}
    train["steps_per_segment"] = preset.steps_per_segment
    inputs = resolve_run_inputs(
        preset="default", seed=scenario.run_seed, dataset=dataset, model_config=model_config,
        overrides={**overrides, "train": train},
    )  # fmt: skip
    config = inputs.config
    rules = fit_terms_to_machine(scenario, inputs, console)  # measured before any node starts
    prepare_home(root)
    for name in scenario.stale_dirs:
        shutil.rmtree(root / name, ignore_errors=True)
    info, _ = start_devnet(root, port=0)
    processes: list[tuple[Participant, subprocess.Popen]] = []
    server = None
    try:
        console.print(f"devnet at {info.rpc_url}; deploying contracts")
        manifest = deploy(info.rpc_url, get_devnet_account(0), root / "manifest.json")
        protocol = ProtocolClient(ChainClient(info.rpc_url, manifest))
        creator_store = LocalArtifactStore(root / "creator" / "artifacts")
        for p in scenario.participants:
            if p.role == "solver":
                protocol.deposit_stake(get_devnet_account(p.account), ROLE_SOLVER, 2 * rules.run.solver_min_stake)
            elif p.role in ("verifier", "juror"):
                protocol.deposit_stake(get_devnet_account(p.account), ROLE_VERIFIER, 2 * rules.run.verifier_min_stake)
        run_id = protocol.chain.call("RunRegistry", "runCount") + 1
        ports = _free_ports(len(scenario.participants))
        server = serve_in_thread(make_node_app("creator", get_devnet_account(0).address, creator_store))
        urls = [server.url] + [f"http://127.0.0.1:{port}" for port in ports]
        (root / "peers.txt").write_text("\n".join(urls) + "\n")
        logs = root / "logs"
        logs.mkdir(exist_ok=True)
        env = {**os.environ, "GRADLEDGER_HOME": str(root)}
        for p, port in zip(scenario.participants, ports, strict=True):
            log = open(logs / f"{p.label}.log", "wb")  # noqa: SIM115 (closed when the process ends)
            args = scenario.command(p, run_id, port)
            processes.append((p, subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)))
        _wait_healthy(urls[1:], processes)
        created, _terms = create_run(
            protocol, get_devnet_account(0), creator_store, config, inputs.manifest, inputs.shards, rules, 30 * ETH,
            tokenizer_json=inputs.tokenizer_json,
        )  # fmt: skip
        if created != run_id:
            raise DemoError(f"expected to create run {run_id}, created {created}")
        console.print(f"run {run_id} created; {scenario.announcement}")
        terms = rules.run
        round_s = terms.commit_window + terms.attest_window + terms.challenge_window
        limit_s = 300 + terms.start_delay + 2 * terms.max_rounds * round_s  # twice the windows, and 5 minutes to exit
        _wait_for_run(protocol, run_id, terms.max_rounds, processes, console, limit_s)
        evaluated = f"θ_0..θ_{rules.run.max_rounds}"
        console.print(f"every node exited; evaluating {evaluated} on the held-out data", highlight=False)
        summary = build_summary(protocol, run_id, rules.run.max_rounds, config, creator_store, root, processes)
        summary["terms"] = rules.to_mapping()
        if scenario.extra_summary is not None:
            summary.update(scenario.extra_summary(protocol, run_id))
        # the devnet is still up: audit the run from its events and the nodes' stores (docs/audit.md)
        console.print(f"auditing run {run_id} from the chain and the nodes' artifacts (gradledger audit)")
        audit, audit_paths = audit_demo_run(root, info.rpc_url, manifest, run_id, scenario.participants)
        summary["audit"] = {"passed": audit.passed, "failed": [c.name for c in audit.failed], **audit_paths}
        summary["seconds"] = round(time.monotonic() - started, 1)
        summary["problems"] = check_demo_summary(summary) + (scenario.check(summary) if scenario.check else [])
    finally:
        for _, process in processes:
            if process.poll() is None:
                process.terminate()
        for _, process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        if server is not None:
            server.stop()
        stop_devnet(root)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = json_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(summary, indent=1) + "\n")
        tmp.replace(json_path)
    return summary, audit, audit_paths


def fit_terms_to_machine(scenario: Scenario, inputs, console: Console, block_seconds: int = 1) -> CreationTerms:
    """The scenario's terms with every window (and the start delay) at least as long as this machine needs.

    The preset's windows are a floor: the pace of the run's model is measured here (node/pace.py, as `gradledger run
    create` measures it), with each verifier's seats counted (`compute_seats_per_verifier`), and a window shorter than
    its work is lengthened (`protocol.windows.compute_fitting_windows`). The start delay holds the nodes' own start
    (fetch the run, measure the pace, join, anchor), which is less work than a round's training: at least the commit
    window. Issue 39: fixed 20/12/10 s windows on a busy machine left every round with nothing accepted.
    """
    from node.pace import measure_window_needs
    from protocol.windows import (
        compute_fitting_windows,
        compute_seats_per_verifier,
        verify_challenge_window,
        verify_windows_fit_chain,
    )

    run = scenario.rules.run
    roles = [p.role for p in scenario.participants]
    seats = compute_seats_per_verifier(roles.count("solver"), roles.count("verifier"), run.verifiers_per_commitment)
    console.print(f"measuring this machine's pace on the run's model ({seats} seat(s) per verifier)", highlight=False)
    needs = measure_window_needs(inputs.config, inputs.manifest, inputs.shards, run.samples_per_commitment * seats)
    commit, attest, challenge = compute_fitting_windows(
        needs, run.commit_window, run.attest_window, run.challenge_window, block_seconds
    )
    start_delay = max(run.start_delay, commit)
    verify_windows_fit_chain(commit, attest, block_seconds, start_delay)
    verify_challenge_window(attest, challenge, block_seconds)
    console.print(
        f"a round's training measured at {needs.round_training_ms / 1000:.2f} s, a verifier's replays at "
        f"{needs.seat_replay_ms / 1000:.2f} s: windows commit {commit} s, attest {attest} s, challenge {challenge} s "
        f"(preset {run.commit_window}/{run.attest_window}/{run.challenge_window} s), start delay {start_delay} s",
        highlight=False,
    )
    return scenario.rules.with_run(
        commit_window=commit, attest_window=attest, challenge_window=challenge, start_delay=start_delay
    )


def audit_demo_run(root: Path, rpc_url: str, manifest, run_id: int, participants=PARTICIPANTS):
    """`gradledger audit` of a demo's run (participants named as in the demo); writes <home>/audit/."""
    from auditor.audit import audit_run, open_sources
    from auditor.report import write_outputs
    from protocol.adapters.chain import ChainClient
    from protocol.adapters.keys import get_devnet_account

    labels: dict[str, str] = {get_devnet_account(p.account).address: p.label for p in participants}
    labels[get_devnet_account(0).address] = "creator"
    (root / "labels.json").write_text(json.dumps(labels, indent=1) + "\n")  # later `gradledger audit` runs use it
    report = audit_run(ChainClient(rpc_url, manifest), manifest, run_id, open_sources(root, [], []), labels)
    paths = {"html": root / "audit" / f"run-{run_id}.html", "json": root / "audit" / f"run-{run_id}.json"}
    write_outputs(report, paths["json"], paths["html"])
    return report, {k: str(v) for k, v in paths.items()}


def _wait_healthy(urls: list[str], processes, timeout_s: float = 120) -> None:
    """Wait until every node answers /health (imports done, waiting for the run)."""
    import httpx

    deadline = time.monotonic() + timeout_s
    pending = list(urls)
    while pending and time.monotonic() < deadline:
        for p, proc in processes:
            if proc.poll() is not None:
                raise DemoError(f"{p.label} exited with status {proc.returncode} while starting")
        try:
            if httpx.get(f"{pending[0]}/health", timeout=2).status_code == 200:
                pending.pop(0)
                continue
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    if pending:
        raise DemoError(f"nodes did not start within {timeout_s:.0f} s: {pending}")


def _wait_for_run(protocol, run_id: int, rounds: int, processes, console: Console, timeout_s: float = 900) -> None:
    from node.bootstrap import get_chain_now

    deadline = time.monotonic() + timeout_s
    until = time.strftime("%H:%M:%S", time.localtime(time.time() + timeout_s))
    with Progress(
        TextColumn("[bold]rounds settled"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(), TextColumn("{task.fields[waiting]}"), console=console,
    ) as progress:  # fmt: skip
        task = progress.add_task("run", total=rounds, waiting="")
        said = ""
        while time.monotonic() < deadline:
            times = protocol.round_times(run_id)
            running = [p.label for p, proc in processes if proc.poll() is None]
            failed = [(p, proc.returncode) for p, proc in processes if proc.poll() not in (None, 0)]
            if failed:
                label, code = failed[0][0].label, failed[0][1]
                raise DemoError(f"{label} exited with status {code}; see its log under <home>/logs/{label}.log")
            if times.finished and all(proc.poll() == 0 for _, proc in processes):
                return
            if times.finished:  # the nodes still finalize, claim their shares and withdraw: say who, and until when
                what, left = f"run finished; waiting for {', '.join(running)} to claim, withdraw and exit", ""
                line = f"{what} (at most until {until})"
            else:
                now = get_chain_now(protocol.chain)
                what, end = describe_round_wait(times, now)
                left = f": {end - now} s left" if end else ""
                line = f"{what} until {time.strftime('%H:%M:%S', time.localtime(end))}" if end else what
            if what != said:  # a line per step (a narrow terminal cuts the bar's text), the countdown on the bar
                progress.console.print(f"  {line}", highlight=False)
                said = what
            progress.update(task, completed=rounds if times.finished else times.round, waiting=what + left)
            time.sleep(0.5)
    raise DemoError(f"the run did not finish within {timeout_s:.0f} s; see the logs under <home>/logs")


def describe_round_wait(times, now: int) -> tuple[str, int]:
    """What the current round waits for at chain time `now`, and the chain time its window closes (0: untimed)."""
    for end, what in (
        (times.start, "start delay: nodes join and anchor before round 0"),
        (times.commit_end, "solvers train and commit"),
        (times.open_end, "solvers open their sampled segments"),
        (times.attest_end, "verifiers replay and attest"),
        (times.challenge_end, "challenge window open"),
    ):
        if now < end:
            return f"round {times.round}: {what}", end
    return f"round {times.round}: windows closed; the coordinator claims θ_{times.round + 1} and settles", 0
