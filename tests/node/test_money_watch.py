"""A node's log, `/metrics` and `/health` name what touched its money, on a real HTTP server (no chain).

The report comes from hand-built contract events through the pure fold (tests/history_builder.py); the chain
reading side is covered end to end in tests/devnet/test_operator_visibility.py.
"""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import httpx
from prometheus_client import CollectorRegistry, generate_latest

from node.bootstrap import RunNode
from node.logs import get_logger
from node.money_watch import MoneyCollector, MoneyWatch
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.http import PeerSet, make_node_app, serve_in_thread
from protocol.history.fold import fold_run_history
from protocol.money_events import compute_money_report
from tests.history_builder import ETH, SOLVER_A, SOLVER_B, VERIFIER, RunEvents
from tests.log_capture import LogRecords


def _slashed_then_missing() -> RunEvents:
    """SOLVER_B is failed and slashed in round 0, then commits nothing in round 1 (it was a member all along)."""
    ev = RunEvents()
    ev.deposit(SOLVER_B, 1)
    ev.create()
    ev.join(SOLVER_A)
    ev.join(SOLVER_B)
    ev.register(VERIFIER)
    ev.commit(0, SOLVER_A)
    ev.commit(0, SOLVER_B)
    ev.seed(0)
    ev.open(0, SOLVER_A)
    ev.open(0, SOLVER_B)
    ev.attest(0, SOLVER_A)
    ev.attest(0, SOLVER_B, fail=True)
    ev.finalize(0, SOLVER_A)
    ev.finalize(0, SOLVER_B, fail=True)
    ev.claim_theta(0)
    ev.settle(0)
    ev.commit(1, SOLVER_A)
    return ev


def _watch(tmp_path) -> tuple[MoneyWatch, LogRecords]:
    log = get_logger(f"test-money-{tmp_path.name}")
    lines = LogRecords()
    log.addHandler(lines)
    log.setLevel(logging.INFO)  # as configure_logging sets it for a node
    watch = MoneyWatch(None, PeerSet(()), 1, SOLVER_B, log)  # type: ignore[arg-type]  (publish reads no chain)
    ev = _slashed_then_missing()
    history = fold_run_history(ev.events, ev.run_id, ev.timestamps)
    watch.publish(watch.reporter.update(ev.events, ev.timestamps, history, {}, (), 10**10))  # what refresh() does
    assert watch.report == compute_money_report(ev.events, ev.run_id, SOLVER_B, ev.timestamps, (), 10**10)
    return watch, lines


def test_each_money_event_is_logged_once_and_slashes_and_misses_at_warning(tmp_path):
    watch, lines = _watch(tmp_path)
    watch.publish(watch.report.events)  # a second refresh logs nothing again
    by_event = {}
    for record in lines.records:
        by_event.setdefault(record.getMessage(), []).append(record)
    (slash,) = by_event["money: slashed"]
    assert slash.levelno == logging.WARNING
    assert slash.fields["amount_wei"] == 10 * ETH and slash.fields["by"] == "Verification.SolverFaultProven"
    assert "fail attestation" in slash.fields["reason"]
    (missed,) = by_event["money: missed"]
    assert (
        missed.levelno == logging.WARNING and missed.fields["what"] == "commit window" and missed.fields["round"] == 1
    )
    (failed,) = by_event["money: failed"]
    assert failed.fields["by"] == VERIFIER
    assert [r.fields["round"] for r in by_event["money: committed"]] == [0]


def test_metrics_name_the_slash_with_its_amount_and_the_missed_window(tmp_path):
    watch, _ = _watch(tmp_path)
    registry = CollectorRegistry()
    registry.register(MoneyCollector(watch))
    text = generate_latest(registry).decode()
    slash_line = next(line for line in text.splitlines() if line.startswith("gradledger_slashed_wei{"))
    assert 'fault="solver fault"' in slash_line and 'by="Verification.SolverFaultProven"' in slash_line
    assert 'round="0"' in slash_line and "fail attestation" in slash_line and slash_line.endswith(" 1e+19")
    assert 'gradledger_missed_window{reason="no commitment' in text and 'window="commit window"' in text
    assert 'gradledger_money_events_total{kind="slashed"} 1.0' in text
    assert "gradledger_money_unhealthy 1.0" in text


def test_health_is_503_with_the_missed_window_as_its_reason_while_the_worker_runs(tmp_path):
    watch, _ = _watch(tmp_path)
    release = threading.Event()
    worker = threading.Thread(target=release.wait, daemon=True)
    worker.start()
    node = SimpleNamespace(
        finished=False, run_id=1, skips=0, last_error="", get_activity=lambda: {"idle": True, "block": 1},
        loop_thread=worker, money=watch, get_profile_health=lambda: None,
    )  # fmt: skip
    registry = CollectorRegistry()
    registry.register(MoneyCollector(watch))
    app = make_node_app(
        "solver", SOLVER_B, LocalArtifactStore(tmp_path / "store"), lambda: RunNode.get_health(node),  # type: ignore[arg-type]
        lambda: generate_latest(registry),
    )  # fmt: skip
    server = serve_in_thread(app)
    try:
        health = httpx.get(f"{server.url}/health", timeout=10)
        metrics = httpx.get(f"{server.url}/metrics", timeout=10)
    finally:
        server.stop()
        release.set()
    body = health.json()
    assert health.status_code == 503 and body["status"] == "unhealthy" and body["worker"] == "running"
    assert len(body["reasons"]) == 1 and body["reasons"][0].startswith("missed the commit window of round 1")
    (slash,) = body["money"]["slashed"]
    assert slash["amount_wei"] == 10 * ETH and slash["round"] == 0 and "fail attestation" in slash["reason"]
    assert body["money"]["slashed_wei"] == 10 * ETH
    assert metrics.status_code == 200 and "gradledger_slashed_wei{" in metrics.text


def test_pending_credits_are_logged_when_they_change(tmp_path):
    watch, lines = _watch(tmp_path)
    for credits in ({"Verification": 0}, {"Verification": ETH}, {"Verification": ETH}, {"Verification": 0}):
        watch._note_credits(credits)
    logged = [r.fields for r in lines.records if r.getMessage() == "money: credits pending"]
    assert logged == [
        {"run": 1, "total_wei": ETH, "contracts": f"Verification={ETH}"},
        {"run": 1, "total_wei": 0, "contracts": "none"},
    ]
