"""auditor.report and the CLI's labels file, on a hand-built audit report (no chain)."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from auditor import checks, payout_checks
from auditor.audit import AuditReport
from auditor.html_report import render_html
from auditor.report import SCHEMA, build_json, print_summary, write_atomic, write_outputs
from auditor.report_model import build_report_model
from gradledger.commands.audit import read_labels
from protocol.errors import GradledgerError
from protocol.history.fold import fold_run_history
from tests.history_builder import (
    ETH,
    SOLVER_A,
    SOLVER_B,
    VERIFIER,
    VERIFIER_2,
    RunEvents,
    honest_two_rounds,
    planted_run,
)


def _report(ev: RunEvents, failed: bool = False) -> AuditReport:
    history = fold_run_history(ev.events, 1, ev.timestamps, labels={SOLVER_A: "alice"})
    shares, contributions = payout_checks.check_shares(history)
    results = [shares, checks.check_balance({"StakeManager": 30 * ETH}, 30 * ETH + int(failed), {"x": 1})]
    return AuditReport(
        run_id=1,
        chain_id=31337,
        rpc_url="http://127.0.0.1:8545",
        block=ev.block,
        block_time=2_000_000_000,
        history=history,
        checks=tuple(results),
        derivations=(),
        losses={0: 5.5, 1: 4.25, 2: 3.5},
        documents={},
        start_hashes={},
        contributions=tuple(contributions),
        pending=("round 9: something",),
        contract_balances={"StakeManager": 30 * ETH},
        implied_balance=30 * ETH + int(failed),
        ledger_by_kind={},
        sources="1 local store(s) and 0 peer(s)",
    )


def test_json_export_has_the_documented_keys():
    data = build_json(_report(honest_two_rounds()))
    for key in (
        "schema",
        "run_id",
        "checks",
        "rounds",
        "slashed",
        "shares",
        "contract_balance_wei",
        "implied_balance_wei",
        "participants",
        "stakes",
        "revenue",
        "pending",
        "loss",
    ):
        assert key in data, key
    assert data["schema"] == SCHEMA and data["run_id"] == 1 and data["passed"]
    assert data["shares"] == {SOLVER_A: 800 * ETH, SOLVER_B: 800 * ETH, VERIFIER: 300 * ETH}
    assert [c["name"] for c in data["checks"]] == ["shares minted", "ETH balance"]
    assert {"name", "passed", "detail", "evidence"} <= set(data["checks"][0])
    first = data["rounds"][0]
    assert first["status"] == "settled" and first["loss"] == 5.5 and first["loss_after"] == 4.25
    assert first["commitments"][0]["label"] == "alice" and first["shares_minted"]["solver"] == 800 * ETH
    assert first["commitments"][0]["document"].startswith("commitment document missing")
    assert data["rounds"][1]["attestations"][-1]["state"] == "finalized"
    settings = data["run"]["settings"]  # the on-chain RunConfig, snake_case, hashes as 0x-hex
    assert list(settings)[:4] == ["config_hash", "dataset_root", "theta0_hash", "inner_steps"]
    assert len(settings) == 23 and settings["max_rounds"] == data["run"]["max_rounds"] == 2
    assert settings["start_delay"] == 0
    assert settings["theta0_hash"] == "0x" + "10" * 32 and settings["attestation_bond"] == ETH
    assert json.loads(json.dumps(data)) == data  # plain JSON types only


def test_html_is_self_contained_with_three_plots():
    ev = honest_two_rounds()
    page = render_html(build_report_model(_report(ev)))
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert page.count('src="data:image/svg+xml;base64,') == 3
    assert "all 2 checks passed" in page and "alice" in page
    failing = render_html(build_report_model(_report(ev, failed=True)))
    assert "1 of 2 checks failed: ETH balance" in failing


def test_terminal_summary_names_failures():
    out = io.StringIO()
    print_summary(_report(honest_two_rounds(), failed=True), Console(file=out, width=140))
    text = out.getvalue()
    assert "1 of 2 checks failed: ETH balance" in text and "round 9: something" in text and "alice" in text


def test_plants_are_shown_per_round_and_commitment():
    report = _report(planted_run())
    data = build_json(report)
    plants = data["run"]["plants"]
    assert (plants["rate_bps"], plants["penalty_wei"], plants["jackpots_wei"]) == (2000, 3 * ETH, {VERIFIER_2: ETH})
    planted = data["rounds"][2]
    assert planted["plants"] == {
        "planted": [SOLVER_A],
        "lazy_passes_caught": 1,
        "jackpots_wei": ETH,
        "disputed": [],
        "disproven": [],
        "forfeits_held_wei": 0,
    }
    assert planted["paid_commitments"] == 2 and plants["forfeits_held_wei"] == 0
    lazy = planted["attestations"][0]
    assert (lazy["forfeit_wei"], lazy["forfeit_release"]) == (4 * ETH, "pool")
    by_solver = {c["solver"]: c for c in planted["commitments"]}
    assert (by_solver[SOLVER_A]["pay"], by_solver[SOLVER_A]["paid"], by_solver[SOLVER_A]["accepted"]) == (
        "planted",
        True,
        False,
    )
    assert [a["planted"] for a in planted["attestations"][:2]] == [True, True]
    assert (
        data["rounds"][1]["plants"]["planted"] == []
        and build_json(_report(honest_two_rounds()))["run"]["plants"] is None
    )
    page = render_html(build_report_model(report))
    assert "planted faults" in page and "1 planted, 1 lazy pass(es) caught, jackpots 1.000000 ETH" in page
    assert "overturned (plant)" in page and "not revealed, reported" in page
    out = io.StringIO()
    print_summary(report, Console(file=out, width=200))
    assert "1 planted, 1 lazy pass(es) caught" in out.getvalue() and "plants: 20% of commitments" in out.getvalue()


def test_plant_disputes_and_disproven_plants_are_shown():
    report = _report(planted_run(claimed=(SOLVER_B,), dispute="false plant"))
    data = build_json(report)
    planted = data["rounds"][2]
    assert planted["plants"]["disputed"] == [SOLVER_A] and planted["plants"]["disproven"] == [SOLVER_A]
    (dispute,) = planted["disputes"]
    assert (dispute["kind"], dispute["solver"], dispute["segment_index"], dispute["challenger_wins"]) == (
        "plant",
        SOLVER_A,
        2,
        True,
    )
    assert dispute["total_wei"] == 10 * ETH and dispute["status"] == "executed"
    # the pass was right after all: its held forfeit went back to its verifier
    assert planted["attestations"][0]["forfeit_release"] == "returned" and planted["paid_commitments"] == 1
    by_solver = {c["solver"]: c for c in planted["commitments"]}
    assert (by_solver[SOLVER_A]["pay"], by_solver[SOLVER_A]["paid"], by_solver[SOLVER_A]["plant"]) == (
        "unpaid",
        False,
        "planted, disproven by a jury (unpaid)",
    )
    assert [(x["address"], x["fault"], x["requested_wei"]) for x in data["slashed"] if x["round"] == 2][-1] == (
        SOLVER_A,
        "solver fault",
        10 * ETH,
    )
    page = render_html(build_report_model(report))
    assert "planted, disproven by a jury (unpaid)" in page and "<td>plant</td>" in page
    assert "1 planted, 1 lazy pass(es) caught, jackpots 1.000000 ETH, 1 disputed, 1 disproven" in page
    out = io.StringIO()
    print_summary(report, Console(file=out, width=220))
    assert "1 disputed, 1 disproven" in out.getvalue()
    # a plant the jury found true: disputed, not disproven, still paid as planted
    kept = build_json(_report(planted_run(dispute="true plant")))["rounds"][2]
    assert kept["plants"]["disputed"] == [SOLVER_A] and kept["plants"]["disproven"] == []
    assert {c["solver"]: c["pay"] for c in kept["commitments"]}[SOLVER_A] == "planted"
    assert kept["disputes"][0]["winner"] == SOLVER_A and kept["disputes"][0]["challenger_wins"] is False


def test_outputs_are_written_whole_or_not_at_all(tmp_path):
    report = _report(honest_two_rounds())
    write_outputs(report, tmp_path / "a" / "audit.json", tmp_path / "a" / "audit.html")
    assert json.loads((tmp_path / "a" / "audit.json").read_text())["run_id"] == 1
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["audit.html", "audit.json"]
    blocked = tmp_path / "b" / "audit.json"
    blocked.mkdir(parents=True)  # a directory where the file should go: the rename fails
    with pytest.raises(OSError):
        write_atomic(blocked, "{}")
    assert [p.name for p in (tmp_path / "b").iterdir()] == ["audit.json"], "the temp file was removed"


def test_labels_file(tmp_path):
    assert read_labels(tmp_path) == {}
    (tmp_path / "labels.json").write_text(json.dumps({SOLVER_A: "solver-1"}))
    assert read_labels(tmp_path) == {SOLVER_A: "solver-1"}
    (tmp_path / "labels.json").write_text("[1, 2]")
    with pytest.raises(GradledgerError, match="not a valid labels file"):
        read_labels(tmp_path)


def test_abstentions_are_listed_per_round_and_held_forfeits_are_pending():
    ev = planted_run()
    ev.events = [e for e in ev.events if e.name != "PlantForfeitReleased"]
    ev.report_abstention(2, SOLVER_B, VERIFIER_2, 1, reporter=SOLVER_B)
    report = _report(ev)
    data = build_json(report)
    (x,) = data["rounds"][2]["abstentions"]
    assert (x["solver"], x["slot"], x["verifier"], x["reporter"], x["taken_wei"]) == (
        SOLVER_B,
        1,
        VERIFIER_2,
        SOLVER_B,
        ETH,
    )
    assert data["run"]["plants"]["forfeits_held_wei"] == 4 * ETH
    assert "forfeits held 4.000000 ETH" in render_html(build_report_model(report))
