"""What the explorer's pages show, as JSON-able dicts: pure functions of a run's folded history, its status at the
chain's time and the losses evaluated so far.

One function per page (`build_runs_view`, `build_run_view`, `build_account_history`), so the page's script only lays
out what it is given and a test can compare the served JSON with the contracts without a browser. Amounts are wei as
integers (JSON numbers are exact up to 2^53 in a browser, so every wei amount is also sent as a decimal string
`*_wei` where it can exceed that: the page shows ETH from the string), times are chain seconds, addresses checksummed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from protocol.history.records import RunHistory, RunSummary, Slash
from protocol.history.rounds import Attestation, Dispute, Round
from protocol.history.status import RunStatus, get_commitment_status, get_run_status


def wei(amount: int) -> str:
    """A wei amount as the page receives it: a decimal string (exact beyond 2^53, which JSON numbers are not)."""
    return str(amount)


def with_wei_strings(value: Any) -> Any:
    """`value` with every amount (a key ending in `_wei`, or `shares`) an exact decimal string, recursively, for a
    view built elsewhere with integer amounts (`node/account_view.py`)."""
    if isinstance(value, dict):
        return {
            k: (
                {c: wei(v) for c, v in item.items()}
                if k == "credits_wei" and isinstance(item, dict)
                else wei(item)
                if (k.endswith("_wei") or k == "shares") and isinstance(item, int) and not isinstance(item, bool)
                else with_wei_strings(item)
            )
            for k, item in value.items()
        }
    if isinstance(value, list):
        return [with_wei_strings(v) for v in value]
    return value


def build_runs_view(runs: Sequence[RunSummary], block: int, now: int) -> dict[str, Any]:
    """The front page: every run of the deployment and how far it got."""
    return {
        "block": block,
        "now": now,
        "runs": [
            {
                "run_id": r.run_id,
                "creator": r.creator,
                "created_block": r.created_block,
                "max_rounds": r.max_rounds,
                "rounds_settled": r.rounds_settled,
                "finished": r.finished,
            }
            for r in runs
        ],
    }


def _attestation_view(history: RunHistory, a: Attestation) -> dict[str, Any]:
    label = history.label_of
    return {
        "verifier": a.verifier, "label": label(a.verifier), "solver": a.solver, "solver_label": label(a.solver),
        "slot": a.slot, "kind": a.kind, "state": a.state, "planted": a.planted, "block": a.block,
    }  # fmt: skip


def _dispute_view(history: RunHistory, d: Dispute) -> dict[str, Any]:
    return {
        "dispute_id": d.dispute_id, "kind": d.kind, "status": d.status, "challenger": d.challenger,
        "challenger_label": history.label_of(d.challenger), "solver": d.solver, "slot": d.slot,
        "verdict": None if d.challenger_wins is None else ("challenger wins" if d.challenger_wins else "upheld"),
        "jury_size": d.jury_size, "to_winner_wei": wei(d.to_winner),
    }  # fmt: skip


def _slash_view(history: RunHistory, s: Slash) -> dict[str, Any]:
    return {
        "account": s.account, "label": history.label_of(s.account), "role": s.role, "amount_wei": wei(s.amount),
        "reason": s.fault, "round": s.round, "solver": s.solver, "block": s.block,
    }  # fmt: skip


def _round_view(history: RunHistory, rnd: Round, status: RunStatus, losses: Mapping[int, float]) -> dict[str, Any]:
    row = status.rounds[rnd.index]
    label = history.label_of
    commitments = []
    for c in rnd.commitments:
        passes, fails = 0, 0
        for a in rnd.attestations_of(c.solver):
            if a.standing:
                fails += a.is_fail
                passes += not a.is_fail
        commitments.append({
            "solver": c.solver, "label": label(c.solver), "status": get_commitment_status(rnd, c), "root": c.root,
            "delta_hash": c.delta_hash, "tokens": c.tokens, "passes": passes, "fails": fails, "block": c.block,
        })  # fmt: skip
    attestations = [_attestation_view(history, a) for a in rnd.attestations]
    disputes = [_dispute_view(history, d) for d in rnd.disputes]
    return {
        "round": rnd.index, "phase": row.phase, "start": row.start, "commit_end": row.commit_end,
        "attest_end": row.attest_end, "challenge_end": row.challenge_end, "settled": rnd.settled,
        "theta": rnd.theta_hash, "next_theta": rnd.next_theta_hash, "loss": losses.get(rnd.index),
        "loss_after": losses.get(rnd.index + 1) if rnd.settled else None, "accepted": row.accepted,
        "commitments": commitments, "attestations": attestations, "disputes": disputes,
    }  # fmt: skip


def _accounts_view(history: RunHistory) -> list[dict[str, Any]]:
    """Shares (the token's balances after the last event) and ETH per account: round rewards credited, slashed."""
    balances = history.balances
    earned: dict[str, int] = {}
    for flow in history.revenue:
        if flow.kind == "round reward" and flow.account:
            earned[flow.account] = earned.get(flow.account, 0) + flow.amount
    slashed: dict[str, int] = {}
    for s in history.slashes:
        slashed[s.account] = slashed.get(s.account, 0) + s.amount
    accounts = {p.address for p in history.participants} | set(balances) | set(earned) | set(slashed)
    out = []
    for a in sorted(accounts, key=lambda a: (-balances.get(a, 0), a)):
        out.append({
            "address": a, "label": history.label_of(a), "role": history.role_of(a), "shares": wei(balances.get(a, 0)),
            "share_fraction": balances.get(a, 0) / history.total_supply if history.total_supply else 0.0,
            "earned_wei": wei(earned.get(a, 0)), "slashed_wei": wei(slashed.get(a, 0)),
        })  # fmt: skip
    return out


def build_run_view(
    history: RunHistory, now: int, block: int, losses: Mapping[int, float], loss_note: str | None = None
) -> dict[str, Any]:
    """One run's page: its state now, every round (phase, deadlines, loss of θ_r, commitments with their status,
    attestations, disputes and verdicts), slashes with their reasons, shares and ETH per account. `loss_note` says
    why losses are missing (the run's artifacts not reachable), if they are."""
    status = get_run_status(history, now)
    run = {
        "run_id": history.run_id, "creator": history.creator, "share_token": history.share_token,
        "reward_pool_wei": wei(history.reward_pool), "max_rounds": status.max_rounds,
        "current_round": status.current_round, "phase": status.phase, "finished": status.finished, "now": now,
        "total_shares": wei(history.total_supply), "slashed_wei": wei(status.slashed_wei),
    }  # fmt: skip
    return {
        "block": block,
        "run": run,
        "losses": [{"round": r, "loss": losses[r]} for r in sorted(losses)],
        "loss_note": loss_note,
        "rounds": [_round_view(history, rnd, status, losses) for rnd in history.rounds],
        "slashes": [_slash_view(history, s) for s in history.slashes],
        "accounts": _accounts_view(history),
    }


def build_account_history(histories: Sequence[RunHistory], address: str) -> list[dict[str, Any]]:
    """An account's part in each run, from the events: its commitments with their status, its attestations, the
    slashes it took (the account page adds what the contracts hold now, `node/account_view.py`)."""
    out = []
    for h in histories:
        commitments = [
            {"round": rnd.index, "status": get_commitment_status(rnd, c), "root": c.root}
            for rnd in h.rounds
            for c in rnd.commitments
            if c.solver == address
        ]
        attestations = [
            {"round": rnd.index, "solver": a.solver, "slot": a.slot, "kind": a.kind, "state": a.state}
            for rnd in h.rounds
            for a in rnd.attestations
            if a.verifier == address
        ]
        slashes = [
            {"round": s.round, "role": s.role, "amount_wei": wei(s.amount), "reason": s.fault}
            for s in h.slashes
            if s.account == address
        ]
        if commitments or attestations or slashes or h.balances.get(address):
            out.append({
                "run_id": h.run_id, "label": h.label_of(address), "shares": wei(h.balances.get(address, 0)),
                "commitments": commitments, "attestations": attestations, "slashes": slashes,
            })  # fmt: skip
    return out
