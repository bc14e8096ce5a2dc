"""What a demo run did, read back from the chain and the artifacts, and whether it did what a demo must.

A demo that trained nothing must not look like a success (issue 39: `make demo` printed "3 rounds settled" and
exited 0 with no commitment accepted in any round). So the summary counts, per round, the commitments the chain
accepted (`accepted_per_round`) and those of the honest solvers (`honest_accepted_per_round`), and
`check_demo_summary` lists every way the run fell short: a round with no honest work accepted, fewer rounds
settled than the run's terms, contracts holding other than what they owe, a failed audit. The demo command exits
non-zero, printing each reason, when the list is not empty.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table


def count_accepted(run_id: int, rounds: int, events, honest: set[str]) -> tuple[list[int], list[int], list[int]]:
    """(accepted commitments per round, accepted commitments of `honest` solvers per round, planted commitments per
    round) for rounds 0..rounds-1, from the run's history folded from its events (`Round.accepted`, as the audit
    counts them: Verification keeps only each solver's latest round, so the chain's status cannot answer for a past
    round). A planted commitment (docs/planted-faults.md) is honest work the protocol itself withholds from θ to test
    the verifiers: its solver is paid, its Δ is not accepted."""
    from protocol.history.fold import fold_run_history

    history = fold_run_history(events, run_id)
    rows = [(list(r.accepted), sum(1 for c in r.commitments if c.planted)) for r in history.rounds[:rounds]]
    rows += [([], 0) for _ in range(rounds - len(rows))]  # rounds never opened accepted nothing
    return (
        [len(a) for a, _ in rows],
        [sum(1 for s in a if s in honest) for a, _ in rows],
        [planted for _, planted in rows],
    )


def build_summary(protocol, run_id: int, rounds: int, config, store, root: Path, processes) -> dict:
    """Loss per round, accepted work per round, attestations, participants, shares and balances, read from chain +
    artifacts."""
    from protocol.adapters.artifacts import LocalArtifactStore
    from protocol.adapters.keys import get_devnet_account
    from protocol.adapters.runs import get_global_state, load_run_context
    from protocol.ledger import compute_ledger
    from protocol.training import evaluate_params, get_params

    ctx = load_run_context(protocol, store, None, run_id)
    losses = []
    stores = [store] + [LocalArtifactStore(d / "artifacts") for d in sorted((root / "solvers").iterdir())]
    settled = protocol.round_times(run_id).round
    for r in range(min(rounds, settled) + 1):
        theta_hash = protocol.theta_of(run_id, r)
        source = next(s for s in stores if s.has(theta_hash))
        losses.append(
            round(evaluate_params(get_params(get_global_state(source, None, theta_hash)), ctx.dataset, config), 5)
        )
    protocol.chain.add_contract(
        f"RunShares#{run_id}", ctx.share_token, protocol.chain.manifest.contracts["RunShares"].abi
    )
    events = protocol.chain.get_events(protocol.chain.manifest.deployed_block)
    attestations = sum(1 for e in events if e.name in ("PassAttested", "FailAttested"))
    participants = [
        {"label": p.label, "address": get_devnet_account(p.account).address, "role": p.role, "honest": p.honest}
        for p, _ in processes
    ]
    honest = {p["address"] for p in participants if p["role"] == "solver" and p["honest"]}
    accepted, honest_accepted, planted = count_accepted(run_id, rounds, events, honest)
    shares = {entry["address"]: protocol.shares_of(run_id, entry["address"]) for entry in participants}
    shares = {address: amount for address, amount in shares.items() if amount}
    contracts = [rec.address for name, rec in protocol.chain.manifest.contracts.items() if name != "RunShares"]
    balance = sum(protocol.chain.get_balance(a) for a in [*contracts, ctx.share_token])
    model = config.model
    return {
        "run_id": run_id,
        "model": model.hf_config["model_type"] if model.architecture == "hf" else "gpt (built-in)",
        "rounds": rounds,
        "rounds_settled": settled,
        "loss": losses,
        "accepted_per_round": accepted,
        "honest_accepted_per_round": honest_accepted,
        "planted_per_round": planted,
        "attestations": attestations,
        "participants": participants,
        "shares": shares,
        "contract_balance_wei": balance,
        "owed_wei": compute_ledger(events).implied_balance,
    }


def check_demo_summary(summary: dict) -> list[str]:
    """Every way the run fell short of what a demo must show, one sentence each; empty when it did it all."""
    problems = []
    if summary["rounds_settled"] < summary["rounds"]:
        problems.append(f"only {summary['rounds_settled']} of {summary['rounds']} rounds settled")
    planted = summary.get("planted_per_round", [0] * len(summary["honest_accepted_per_round"]))
    empty = [r for r, n in enumerate(summary["honest_accepted_per_round"]) if n == 0 and not planted[r]]
    if empty:
        problems.append(
            f"no honest solver's work was accepted in round(s) {', '.join(map(str, empty))} (accepted per round: "
            f"{summary['accepted_per_round']}); the solvers' and verifiers' logs under <home>/logs say why (a missed "
            "window names the window and the pace the node measured)"
        )
    if summary["contract_balance_wei"] != summary["owed_wei"]:
        problems.append(
            f"the contracts hold {summary['contract_balance_wei']} wei but their events say they owe "
            f"{summary['owed_wei']} wei"
        )
    if "audit" in summary and not summary["audit"]["passed"]:
        problems.append(f"the audit failed: {', '.join(summary['audit']['failed'])}; see {summary['audit']['html']}")
    return problems


def print_demo_summary(summary: dict, console: Console) -> None:
    console.print(
        f"run {summary['run_id']} ({summary['model']} model): {summary['rounds_settled']} rounds settled in "
        f"{summary['seconds']} s"
    )
    table = Table(title="held-out loss per round")
    table.add_column("round")
    table.add_column("held-out loss of θ_r", justify="right")
    table.add_column("commitments accepted in round r", justify="right")
    accepted = summary["accepted_per_round"]
    for r, loss in enumerate(summary["loss"]):
        planted = summary["planted_per_round"][r] if r < len(accepted) else 0
        count = (str(accepted[r]) + (f" (+{planted} planted)" if planted else "")) if r < len(accepted) else ""
        table.add_row(str(r), f"{loss:.4f}", count)
    console.print(table)
    holders = Table(title=f"ownership shares ({summary['attestations']} attestations)")
    holders.add_column("participant")
    holders.add_column("address")
    holders.add_column("shares", justify="right")
    for p in summary["participants"]:
        holders.add_row(p["label"], p["address"], f"{summary['shares'].get(p['address'], 0) / 1e18:,.2f}")
    console.print(holders)
    console.print(
        f"contracts hold {summary['contract_balance_wei'] / 1e18:.6f} ETH; events say they owe "
        f"{summary['owed_wei'] / 1e18:.6f} ETH"
    )
