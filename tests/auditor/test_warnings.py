"""Audit warnings: a run that accepted no work is reported as such (a WARN row, JSON, HTML), and
`gradledger audit --strict` exits 3 on it (hand-built events, no chain)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from auditor import checks
from auditor.audit import AuditReport
from auditor.html_report import render_html
from auditor.report import build_json, print_summary
from auditor.report_model import build_report_model
from gradledger.commands.audit import EXIT_FAILED_CHECK, EXIT_WARNING
from protocol.history.fold import fold_run_history
from tests.history_builder import CREATOR, ETH, SOLVER_A, SOLVER_B, RunEvents, honest_two_rounds


def _idle_round(ev: RunEvents, r: int, released: int = 5 * ETH) -> None:
    """A round nobody committed in: the creator claims θ_r as θ_(r+1) and settles."""
    ev.seed(r)
    unchanged = ev.config["theta0Hash"]
    ev.claim_theta(r, claimer=CREATOR, value=unchanged)
    ev.settle(r, claimer=CREATOR, released=released, theta_hash=unchanged)


def empty_run() -> RunEvents:
    """Two solvers joined a 2-round run and missed every window: nothing accepted, the pool went to nobody."""
    ev = RunEvents()
    for account in (SOLVER_A, SOLVER_B):
        ev.deposit(account, 1)
    ev.create(pool=30 * ETH)
    ev.join(SOLVER_A)
    ev.join(SOLVER_B)
    _idle_round(ev, 0, released=15 * ETH)
    _idle_round(ev, 1, released=15 * ETH)
    return ev


def _report(ev: RunEvents) -> AuditReport:
    history = fold_run_history(ev.events, 1, ev.timestamps)
    return AuditReport(
        run_id=1, chain_id=31337, rpc_url="http://127.0.0.1:8545", block=ev.block, block_time=2_000_000_000,
        history=history, checks=(checks.check_balance({"ModelShares": 0}, 0, {}),), derivations=(), losses={},
        documents={}, start_hashes={}, contributions=(), pending=(), contract_balances={"ModelShares": 0},
        implied_balance=0, ledger_by_kind={}, sources="no store", warnings=checks.find_warnings(history),
    )  # fmt: skip


def test_a_run_that_accepted_nothing_is_reported_with_how_to_reclaim_its_pool():
    history = fold_run_history(empty_run().events, 1)
    (warning,) = checks.find_warnings(history)
    assert warning.name == checks.ACCEPTED_WORK
    assert "no work was accepted in any of the 2 settled round(s): θ never changed" in warning.detail
    assert "the reward pool (30.000000 ETH) went to a share token nobody holds" in warning.detail
    assert "`gradledger run reclaim --run 1`" in warning.detail
    assert warning.evidence == {"rounds": [0, 1], "settled_rounds": 2, "pool_released_wei": 30 * ETH}


def test_a_run_that_accepted_work_every_round_has_no_warning():
    assert checks.find_warnings(fold_run_history(honest_two_rounds().events, 1)) == ()


def test_rounds_that_accepted_nothing_are_named_when_others_did():
    ev = honest_two_rounds(RunEvents(maxRounds=3))
    _idle_round(ev, 2)
    (warning,) = checks.find_warnings(fold_run_history(ev.events, 1))
    assert warning.detail.startswith("round(s) 2 of 3 settled accepted no work")
    assert "reclaim" not in warning.detail, "the run has owners: nothing to reclaim"


def test_an_unsettled_run_warns_of_nothing_yet():
    ev = RunEvents()
    ev.create()
    ev.join(SOLVER_A)
    assert checks.find_warnings(fold_run_history(ev.events, 1)) == ()


def test_the_warning_shows_in_every_output_and_does_not_fail_the_audit():
    report = _report(empty_run())
    assert report.passed and len(report.warnings) == 1
    out = io.StringIO()
    print_summary(report, Console(file=out, width=200, force_terminal=False))
    text = out.getvalue()
    assert "accepted work" in text and "WARN" in text
    assert "all 1 checks passed; 1 warning(s): accepted work" in text
    data = build_json(report)
    assert data["passed"] is True
    assert [w["name"] for w in data["warnings"]] == ["accepted work"]
    assert data["warnings"][0]["evidence"]["rounds"] == [0, 1]
    page = render_html(build_report_model(report))
    assert '<td class="warn">WARN</td>' in page and "verdict warn" in page
    assert build_json(_report(honest_two_rounds()))["warnings"] == []


def test_audit_exits_0_on_a_warning_and_3_with_strict(audited):
    empty = _report(empty_run())
    plain = audited(empty)
    assert plain.exit_code == 0, plain.output
    assert "WARN" in plain.output
    strict = audited(empty, "--strict")
    assert strict.exit_code == EXIT_WARNING == 3, strict.output
    assert audited(_report(honest_two_rounds()), "--strict").exit_code == 0


def test_a_failed_check_keeps_exit_1_with_strict(audited):
    report = _report(empty_run())
    failed = AuditReport(**{**report.__dict__, "checks": (checks.check_balance({"ModelShares": 1}, 0, {}),)})
    assert audited(failed, "--strict").exit_code == EXIT_FAILED_CHECK


def test_the_json_schema_doc_names_warnings():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "audit.md").read_text()
    assert '"warnings"' in doc or "`warnings`" in doc
    assert json.dumps(checks.AuditWarning("x", "y").to_json()) == '{"name": "x", "detail": "y", "evidence": {}}'
