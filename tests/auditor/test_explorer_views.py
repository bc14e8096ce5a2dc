"""auditor/explorer/views.py: what the explorer's pages show, from a run's folded history (no chain, no browser)."""

from __future__ import annotations

from auditor.explorer.views import build_account_history, build_run_view, with_wei_strings
from protocol.history.fold import fold_run_history
from tests.history_builder import planted_run
from tests.history_events import SOLVER_A, SOLVER_C, VERIFIER, time_of


def test_build_run_view_lists_statuses_slashes_shares_and_losses():
    history = fold_run_history(planted_run().events, 1)
    view = build_run_view(history, time_of(10_000), 99, {0: 5.0, 1: 4.5}, None)
    assert view["run"]["phase"] == "finished" and view["block"] == 99
    assert [x["loss"] for x in view["losses"]] == [5.0, 4.5] and view["rounds"][0]["loss_after"] == 4.5
    round_2 = {c["solver"]: c["status"] for c in view["rounds"][2]["commitments"]}
    assert round_2[SOLVER_A] == "planted" and round_2[SOLVER_C] == "failed"
    # VERIFIER's pass on the planted commitment was wrong by construction; SOLVER_C never revealed
    assert [(s["account"], s["reason"]) for s in view["slashes"]] == [
        (VERIFIER, "wrong attestation"),
        (SOLVER_C, "unrevealed plant"),
    ]
    shares = {a["address"]: int(a["shares"]) for a in view["accounts"]}
    assert shares == {h: b for h, b in history.balances.items()} | {a: 0 for a in shares if a not in history.balances}
    assert sum(shares.values()) == int(view["run"]["total_shares"]) == history.total_supply
    mine = build_account_history([history], SOLVER_C)
    assert [(x["round"], x["status"]) for x in mine[0]["commitments"]] == [(2, "failed")]
    assert mine[0]["slashes"][0]["reason"] == "unrevealed plant"


def test_with_wei_strings_makes_every_amount_exact_for_a_browser():
    big = 10**24 + 1  # beyond 2^53: a JSON number would round it
    view = {
        "wallet_wei": big,
        "stake": {"solver": {"bonded_wei": big, "withdrawable": True}},
        "credits_wei": {"X": big},
    }
    view["runs"] = [{"run": 1, "shares": big, "solver_member": True}]
    out = with_wei_strings(view)
    assert out["wallet_wei"] == out["stake"]["solver"]["bonded_wei"] == out["credits_wei"]["X"] == str(big)
    assert out["runs"] == [{"run": 1, "shares": str(big), "solver_member": True}]
    assert out["stake"]["solver"]["withdrawable"] is True
