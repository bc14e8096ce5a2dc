"""`gradledger demo --adversarial`: the demo with a cheating solver and a lazy verifier, caught and paid for.

The same 3-round run as `gradledger demo` (fresh devnet, real training, separate processes), with:

| label | account | role |
|---|---|---|
| solver-1 | 1 | honest solver, coordinator |
| solver-2 | 2 | honest solver |
| solver-3 | 3 | DISHONEST: cheats on every segment (`--adversary cheat --behaviour scaled-update`) |
| verifier-1 | 4 | honest verifier and juror |
| verifier-2 | 5 | DISHONEST: lazy, approves without replaying (`--adversary lazy`) |
| juror-1, juror-2 | 6, 7 | juror-only verifiers (staked, BLS key registered, not in the run's list) |
| whistleblower | 8 | re-checks every attestation and claim |
| solver-4 | 9 | DISHONEST: commits roots it cannot open (`--adversary unopenable`: random, copied, its own earlier) |

Rules: verifiersPerCommitment = 2 with 2 run verifiers (both attest every commitment), jury size 3
(quorum 2). What happens: in round 0 verifier-1 fails the cheater and the lazy verifier passes it;
the whistleblower challenges the pass; the jury (verifier-1 and the two jurors, BLS votes exchanged
over HTTP, one aggregate on-chain) overturns it: the lazy verifier loses its attestation bond and
its stake and leaves the run, the cheater its stake; the whistleblower and the signing jurors are
paid. The cheater is failed again in round 1 (slashed again) and cannot commit in round 2 (stake
gone). solver-4 trains nothing and commits a root it cannot open: it never opens by the opening deadline,
nobody can attest it, the verifiers and the whistleblower report it and it is slashed (all to the pool),
in round 0 and again in round 1, after which its stake is gone. The honest solvers' work is accepted every
round and they split the solver shares. Planting is on (10% of commitments from round 2, docs/planted-faults.md):
the solvers register their anchors in round 0 and reveal after each attestation window.

Then, on the same devnet, a planted fault is played in a second run (gradledger/plant_scenario.py): a solver's
round 2 is planted, a lazy verifier passes it without replaying and an honest one fails it; the solver's reveal
alone overturns the lazy pass (its bond and the plant penalty are held until the round settles, then released into
the plant pool; it leaves the run's list) with no whistleblower and no dispute, the honest fail earns the jackpot,
the solver is paid and not slashed.

The summary is the honest demo's (`run_id`, `rounds_settled`, `loss`, `attestations`,
`participants` with `honest`, `shares`, `contract_balance_wei`, `owed_wei`) plus `slashed`
(`address`, `role`, `label`, `amount_wei`), `challenges` (`challenger`, `target`, `outcome`),
`unopened` (`round`, `label`, `slashed`: commitments reported unopened) and `payouts` (who was paid what,
from the events) and `planted_fault` (gradledger.plant_scenario.PlantOutcome).
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from devnet.lifecycle import get_home
from devnet.runs import ETH
from gradledger.demo import DEVNET_NODE_FLAGS, Participant, Scenario, _cli, play_scenario
from protocol.run_presets import ADVERSARIAL

PARTICIPANTS = (
    Participant("solver-1", 1, "solver"),
    Participant("solver-2", 2, "solver"),
    Participant("solver-3", 3, "solver", honest=False),
    Participant("verifier-1", 4, "verifier"),
    Participant("verifier-2", 5, "verifier", honest=False),
    Participant("juror-1", 6, "juror"),
    Participant("juror-2", 7, "juror"),
    Participant("whistleblower", 8, "whistleblower"),
    Participant("solver-4", 9, "solver", honest=False),
)
ADVERSARIES = {
    "solver-3": ("--adversary", "cheat", "--behaviour", "scaled-update"),
    "verifier-2": ("--adversary", "lazy"),
    "solver-4": ("--adversary", "unopenable"),
}
ROLE_NAMES = {1: "solver", 2: "verifier"}


def _command(p: Participant, run_id: int, port: int) -> list[str]:
    common = ["--run", str(run_id), "--devnet-account", str(p.account), "--port", str(port), *DEVNET_NODE_FLAGS]
    extra = list(ADVERSARIES.get(p.label, ()))
    if p.role == "solver":
        return _cli("solver", "run", *common, "--no-progress", *(["--coordinator"] if p.label == "solver-1" else []),
                    *extra)  # fmt: skip
    if p.role == "whistleblower":
        return _cli("whistleblower", "watch", *common, "--exit-when-done")
    juror_only = ["--juror-only"] if p.role == "juror" else []
    return _cli("verifier", "serve", *common, "--exit-when-done", *juror_only, *extra)


def run_adversarial_demo(home: Path | None = None, json_path: Path | None = None, console: Console | None = None):
    """Run the adversarial demo; returns the summary (also written to `json_path`)."""
    console = console or Console(stderr=True)
    scenario = Scenario(
        PARTICIPANTS, ADVERSARIAL, "0x" + "00" * 31 + "2b", _command,
        "4 solvers (solver-3 cheats, solver-4 commits unopenable roots), 2 verifiers (verifier-2 is lazy), "
        "2 jurors and a whistleblower running",
        extra_summary=lambda protocol, run_id: _dispute_and_plant_summary(protocol, run_id, get_home(home), console),
        stale_dirs=("whistleblowers",),
        check=check_adversarial_summary,
    )  # fmt: skip
    summary, _audit, _paths = play_scenario(scenario, home, json_path, console)
    print_adversarial_summary(summary, console)
    return summary


def _dispute_and_plant_summary(protocol, run_id: int, root: Path, console: Console) -> dict:
    """The main run's disputes, then a planted fault played on the same devnet (gradledger/plant_scenario.py): a
    lazy pass on it loses its bond and penalty without any whistleblower. Each of its steps is printed as it
    starts: it trains and replays a round, and the demo was silent for minutes after its progress bar."""
    from gradledger.plant_scenario import play_planted_fault

    summary = build_dispute_summary(protocol, run_id)
    console.print("planted fault, played on the same devnet:", highlight=False)
    started = time.monotonic()

    def report(step: str) -> None:
        console.print(f"  [dim]{time.monotonic() - started:5.0f} s[/] {step}", highlight=False)

    summary["planted_fault"] = play_planted_fault(protocol, root, report).to_json()
    report("done")
    return summary


def build_dispute_summary(protocol, run_id: int) -> dict:
    """Slashes, challenges and payouts of the run, from the chain's events only."""
    from protocol.adapters.keys import get_devnet_account
    from protocol.types import ROLE_VERIFIER

    labels: dict[str, str] = {get_devnet_account(p.account).address: p.label for p in PARTICIPANTS}
    chain = protocol.chain
    events = chain.get_events(chain.manifest.deployed_block)
    attesters: dict[tuple, str] = {}
    slashed: dict[tuple[str, int], int] = {}
    challenges: dict[bytes, dict] = {}
    payouts: list[dict] = []
    unopened: list[dict] = []
    late: dict[str, int] = {}
    for e in events:
        a = e.args
        if e.name == "CommitmentUnopened" and a["runId"] == run_id:
            unopened.append(
                {"round": a["round"], "label": labels.get(a["solver"], a["solver"]), "slashed": a["slashed"]}
            )
        elif e.name in ("PassAttested", "FailAttested") and a["runId"] == run_id:
            attesters[(a["round"], a["solver"], a["slot"])] = a["verifier"]
        elif e.name == "AbstentionReported" and a["runId"] == run_id and a["taken"] > 0:
            late[a["verifier"]] = late.get(a["verifier"], 0) + a["taken"]
        elif e.name == "StakeSlashed" and a["taken"] > 0:
            key = (a["account"], a["role"])
            slashed[key] = slashed.get(key, 0) + a["taken"]
        elif e.name == "AttestationChallenged" and a["runId"] == run_id:
            target = attesters.get((a["round"], a["solver"], a["slot"]), "")
            kind = "fail" if a["attestation"]["isFail"] else "pass"
            challenges[a["disputeId"]] = {
                "challenger": a["challenger"], "target": target, "outcome": "open", "round": a["round"],
                "subject": f"{kind} attestation of {labels.get(a['solver'], a['solver'])} by "
                f"{labels.get(target, target)}",
            }  # fmt: skip
        elif e.name == "ClaimChallenged" and a["runId"] == run_id:
            challenges[a["disputeId"]] = {
                "challenger": a["challenger"], "target": a["claimer"], "outcome": "open", "round": a["round"],
                "subject": f"θ claim of round {a['round']} by {labels.get(a['claimer'], a['claimer'])}",
            }  # fmt: skip
        elif e.name == "DisputeExecuted" and a["disputeId"] in challenges:
            challenges[a["disputeId"]]["outcome"] = "challenger won" if a["challengerWins"] else "challenger lost"
            payouts.append(
                {"address": a["winner"], "label": labels.get(a["winner"], ""), "why": "dispute winner",
                 "amount_wei": a["toWinner"]}
            )  # fmt: skip
        elif e.name == "DisputeExpired" and a["disputeId"] in challenges:
            challenges[a["disputeId"]]["outcome"] = "unresolved (no quorum after every appeal)"
        elif e.name == "JurorRewardClaimed" and a["disputeId"] in challenges:
            payouts.append(
                {"address": a["juror"], "label": labels.get(a["juror"], ""), "why": "juror reward",
                 "amount_wei": a["reward"]}
            )  # fmt: skip
        elif e.name == "FaultRewardClaimed" and a["runId"] == run_id and a["amount"] > 0:
            payouts.append(
                {"address": a["prover"], "label": labels.get(a["prover"], ""), "why": "proved a solver's fault (one "
                 f"of {a['provers']} equal shares)", "amount_wei": a["amount"]}
            )  # fmt: skip
    # an abstention fee is a verifier's stake taken for a seat it left unattested (late or silent), not a proven fault
    for account, fee in late.items():
        slashed[(account, ROLE_VERIFIER)] = slashed.get((account, ROLE_VERIFIER), 0) - fee
    return {
        "slashed": [
            {
                "address": account,
                "role": ROLE_NAMES.get(role, str(role)),
                "label": labels.get(account, ""),
                "amount_wei": amount,
            }
            for (account, role), amount in slashed.items()
            if amount > 0
        ],
        "abstention_fees": [
            {"address": account, "label": labels.get(account, ""), "amount_wei": fee} for account, fee in late.items()
        ],
        "challenges": [{k: v for k, v in c.items()} for c in challenges.values()],
        "unopened": unopened,
        "payouts": payouts,
        "stakes": {
            labels[get_devnet_account(p.account).address]: _stake(protocol, p)
            for p in PARTICIPANTS
            if p.role != "whistleblower"
        },
    }


def _stake(protocol, p: Participant) -> int:
    from protocol.adapters.keys import get_devnet_account
    from protocol.types import ROLE_SOLVER, ROLE_VERIFIER

    role = ROLE_SOLVER if p.role == "solver" else ROLE_VERIFIER
    return protocol.bonded_of(get_devnet_account(p.account).address, role)


def check_adversarial_summary(summary: dict) -> list[str]:
    """What the adversarial demo must show besides `check_demo_summary` (honest work accepted every round, every round
    settled, balances, audit); an empty list when it did."""
    problems = []
    by_label = {p["label"]: p for p in summary["participants"]}
    slashed = {s["label"] for s in summary["slashed"]}
    for label in ("solver-3", "verifier-2", "solver-4"):
        if label not in slashed:
            problems.append(f"{label} (dishonest) was not slashed")
    if not any(u["label"] == "solver-4" and u["slashed"] for u in summary.get("unopened", [])):
        problems.append("solver-4 was not slashed for leaving its commitment unopened")
    for label in slashed:
        if by_label.get(label, {}).get("honest", False):
            problems.append(f"honest {label} was slashed")
    if not any(c["outcome"] == "challenger won" for c in summary["challenges"]):
        problems.append("no challenge was won")
    for label in ("solver-1", "solver-2"):
        if summary["shares"].get(by_label[label]["address"], 0) == 0:
            problems.append(f"honest {label} holds no shares")
    for label in ("solver-3", "solver-4"):
        if summary["shares"].get(by_label[label]["address"], 0):
            problems.append(f"the cheater {label} holds shares")
    if "planted_fault" in summary:
        from gradledger.plant_scenario import PlantOutcome, check_planted_fault

        problems += [f"planted fault: {p}" for p in check_planted_fault(PlantOutcome(**summary["planted_fault"]))]
    else:
        problems.append("the planted-fault scenario did not run")
    return problems


def print_adversarial_summary(summary: dict, console: Console) -> None:
    from gradledger.demo_summary import print_demo_summary

    print_demo_summary(summary, console)
    labels = {p["address"]: p["label"] for p in summary["participants"]}
    honesty = Table(title="participants")
    for column in ("participant", "role", "honest", "stake left (ETH)"):
        honesty.add_column(column)
    for p in summary["participants"]:
        stake = summary["stakes"].get(p["label"])
        honesty.add_row(
            p["label"],
            p["role"],
            "yes" if p["honest"] else "[bold red]NO[/]",
            "-" if stake is None else f"{stake / ETH:g}",
        )
    console.print(honesty)
    slashes = Table(title="slashed")
    for column in ("participant", "role", "amount (ETH)"):
        slashes.add_column(column)
    for s in summary["slashed"]:
        slashes.add_row(s["label"] or s["address"], s["role"], f"{s['amount_wei'] / ETH:g}")
    console.print(slashes)
    if summary.get("abstention_fees"):
        fees = Table(title="abstention fees (seats left unattested by attestEnd: late or silent, no proven fault)")
        for column in ("participant", "amount (ETH)"):
            fees.add_column(column)
        for f in summary["abstention_fees"]:
            fees.add_row(f["label"] or f["address"], f"{f['amount_wei'] / ETH:g}")
        console.print(fees)
    disputes = Table(title="challenges")
    for column in ("round", "challenger", "what", "outcome"):
        disputes.add_column(column)
    for c in summary["challenges"]:
        disputes.add_row(str(c["round"]), labels.get(c["challenger"], c["challenger"]), c["subject"], c["outcome"])
    console.print(disputes)
    unopened = Table(title="commitments never opened (reported after the opening deadline)")
    for column in ("round", "solver", "slashed"):
        unopened.add_column(column)
    for u in summary.get("unopened", []):
        unopened.add_row(str(u["round"]), u["label"], "yes" if u["slashed"] else "no (seed never drawn)")
    console.print(unopened)
    paid = Table(title="paid from slashes and forfeited bonds")
    for column in ("participant", "why", "amount (ETH)"):
        paid.add_column(column)
    for p in summary["payouts"]:
        paid.add_row(p["label"] or p["address"], p["why"], f"{p['amount_wei'] / ETH:g}")
    console.print(paid)
    if "planted_fault" in summary:
        plant = summary["planted_fault"]
        planted = Table(title=f"a planted fault, no whistleblower (run {plant['run_id']}, round 2)")
        for column in ("who", "what happened"):
            planted.add_column(column)
        planted.add_row(
            "lazy verifier",
            f"pass {plant['lazy_state']}; lost its bond and "
            f"{plant['lazy_stake_lost_wei'] / ETH:g} ETH of stake; left the run: {plant['lazy_left_list']}",
        )
        planted.add_row(
            "honest verifier",
            f"fail stands; jackpot {plant['jackpot_wei'] / ETH:g} ETH, bond back, "
            f"{plant['honest_shares'] / ETH:g} shares",
        )
        planted.add_row(
            "planting solver",
            f"paid {plant['solver_paid_shares'] / ETH:g} shares, slashed "
            f"{plant['solver_stake_lost_wei'] / ETH:g} ETH; its Δ accepted: {plant['delta_accepted']}",
        )
        console.print(planted)
    if "audit" in summary:
        verdict = "passed" if summary["audit"]["passed"] else "FAILED: " + ", ".join(summary["audit"]["failed"])
        console.print(f"audit of the run (gradledger audit): {verdict}; report {summary['audit']['html']}")
    if not summary["problems"]:
        console.print("[bold green]ok:[/] every dishonest participant was caught; honest solvers' shares untouched")
