"""Operators see their stake: a slashed solver and a solver that missed a window say so, on a real anvil.

Two rounds; solver A (honest, coordinator), solver B (honest, its node stopped once round 0's θ is
claimed and restarted after round 1's commit window closed), solver C (cheats: every segment a scaled update),
one verifier attesting every commitment. The verifier fails C, the fail stands and C is slashed its 10 ETH
(Verification.SolverFaultProven). With the clock held past round 1's commit window:
- C's log, `/metrics` and `/health` name the slash with its amount and reason, and the fail with the verifier;
  C never logs "shares claimed" (it was never paid);
- B's log and `/metrics` name the missed commit window of round 1, and its `/health` is 503 with that reason.
And a verifier down across round 1's attest window (while holding a seat of it) says so the same way.
"""

from __future__ import annotations

import re

import httpx
import pytest

from devnet.deploy import build_contracts
from protocol.adapters.keys import get_devnet_account
from protocol.run_presets import TINY
from protocol.types import ROLE_SOLVER, ClaimStatus
from tests.chain_fixtures import driven_deployment, prepare_run, wait_until
from tests.disputes.conftest import handles, logs, start, stop_all

pytestmark = pytest.mark.e2e

RULES = TINY.with_run(
    max_rounds=2, samples_per_commitment=2, verifiers_per_commitment=1, commit_window=300, attest_window=300,
    challenge_window=300, dispute_timeout=600,
)  # fmt: skip
HONEST, STOPPED, CHEATER, VERIFIER = 1, 2, 3, 4
TEN_ETH = 10 * 10**18


def _get(setup, account: int, path: str) -> httpx.Response | None:
    try:
        return httpx.get(f"http://127.0.0.1:{setup.ports[account]}{path}", timeout=10)
    except httpx.HTTPError:
        return None


def _claimed(protocol, run_id: int, round_index: int) -> bool:
    """θ_(r+1) is claimed: the verifier and the coordinator fetched all they needed from the solvers' nodes."""
    return protocol.claim_of(run_id, round_index).status != ClaimStatus.NONE


def _past_round_1_commit_window(protocol, run_id: int) -> bool:
    times = protocol.round_times(run_id)
    now = int(protocol.chain.get_block("latest")["timestamp"])
    return times.finished or (times.round == 1 and now >= times.commit_end)


def _log_lines(setup, label: str, event: str) -> list[str]:
    path = setup.home / f"{label}.log"
    text = path.read_text(errors="replace") if path.exists() else ""
    return [line for line in text.splitlines() if f" {event} " in line or line.endswith(f" {event}")]


def test_a_slashed_and_a_window_missing_solver_are_named_in_log_metrics_and_health(tmp_path, corpus):
    with driven_deployment(build_contracts(), tmp_path / "chain") as deployment:
        setup = prepare_run(deployment, corpus, tmp_path / "home", [HONEST, STOPPED, CHEATER], [VERIFIER], RULES)
        protocol, run_id = setup.protocol, setup.run_id
        # stake for round 1 after round 0's slash, so the cheater keeps committing (and idling) like the others
        protocol.deposit_stake(get_devnet_account(CHEATER), ROLE_SOLVER, RULES.run.solver_min_stake)
        solver = ["solver", "run", "--no-progress"]
        nodes = [
            start(setup, "honest", solver, HONEST, "--coordinator"),
            start(setup, "stopped", solver, STOPPED),
            start(setup, "cheater", solver, CHEATER, "--adversary", "cheat", "--behaviour", "scaled-update"),
            start(setup, "verifier", ["verifier", "serve"], VERIFIER),
        ]
        try:
            setup.create()
            with setup.drive(lambda: handles(setup, nodes)) as driver:
                gate = driver.pause_when(lambda: _past_round_1_commit_window(protocol, run_id))
                wait_until(lambda: _claimed(protocol, run_id, 0), 900, "round 0's θ claim")
                stop_all([nodes[1]])  # B's node is down from here until round 1's commit window has closed
                gate.wait(900, "round 1's commit window to close")
                assert not protocol.round_times(run_id).finished
                nodes[1] = start(setup, "stopped", solver, STOPPED)
                _check_cheater(setup)
                _check_stopped(setup)
                _check_verifier(setup)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{logs(setup, nodes)}") from None
        finally:
            stop_all(nodes)


def _check_cheater(setup) -> None:
    metrics = wait_until(
        lambda: (r := _get(setup, CHEATER, "/metrics")) is not None and "gradledger_slashed_wei{" in r.text and r.text,
        300, "the cheater's /metrics to show its slash",
    )  # fmt: skip
    slash = next(line for line in metrics.splitlines() if line.startswith("gradledger_slashed_wei{"))
    assert 'round="0"' in slash and 'fault="solver fault"' in slash, slash
    assert 'by="Verification.SolverFaultProven"' in slash and "fail attestation" in slash, slash
    assert float(slash.rsplit(" ", 1)[1]) == TEN_ETH, slash
    assert re.search(r'gradledger_failed\{.*verifier="' + get_devnet_account(VERIFIER).address, metrics), metrics
    health = _get(setup, CHEATER, "/health")
    assert health is not None
    (slashed,) = health.json()["money"]["slashed"]
    assert slashed["amount_wei"] == TEN_ETH and slashed["round"] == 0 and "fail attestation" in slashed["reason"]
    (line,) = _log_lines(setup, "cheater", "money: slashed")
    assert "warning" in line and f"amount_wei={TEN_ETH}" in line and "by=Verification.SolverFaultProven" in line
    assert _log_lines(setup, "cheater", "money: failed"), "the fail on its commitment is logged"
    assert not _log_lines(setup, "cheater", "shares claimed"), "no shares were ever minted to the cheater"


def _check_stopped(setup) -> None:
    health = wait_until(
        lambda: (r := _get(setup, STOPPED, "/health")) is not None and r.status_code == 503 and r,
        300, "the restarted solver's /health to say it missed round 1",
    )  # fmt: skip
    body = health.json()
    assert body["status"] == "unhealthy" and body["worker"] == "running", body
    assert any(r.startswith("missed the commit window of round 1") for r in body["reasons"]), body
    metrics = _get(setup, STOPPED, "/metrics")
    assert metrics is not None
    assert re.search(r'gradledger_missed_window\{[^}]*round="1"[^}]*window="commit window"[^}]*\} 1\.0', metrics.text)
    assert "gradledger_money_unhealthy 1.0" in metrics.text
    (line,) = _log_lines(setup, "stopped", "money: missed")
    assert "warning" in line and "round=1" in line and 'what="commit window"' in line, line
    assert [ln for ln in _log_lines(setup, "stopped", "money: committed") if "round=0" in ln]


def _check_verifier(setup) -> None:
    """The verifier's /metrics serves its replay metrics and its money alike (one endpoint per node)."""
    metrics = _get(setup, VERIFIER, "/metrics")
    assert metrics is not None and metrics.status_code == 200
    assert 'gradledger_attestations_total{result="fail"}' in metrics.text
    assert 'gradledger_paid_wei_total{what="attestation bond returned"}' in metrics.text
    assert 'gradledger_credits_pending_wei{contract="Verification"}' in metrics.text


V_RULES = TINY.with_run(
    max_rounds=2, samples_per_commitment=1, verifiers_per_commitment=2, commit_window=300, attest_window=300,
    challenge_window=300, dispute_timeout=600,
)  # fmt: skip
"""Two seats per commitment and two verifiers: seats are drawn without replacement, so each verifier holds one."""
SOLVER, ON_DUTY, PAUSED = 5, 6, 7


def _past_round_1_attest_window(protocol, run_id: int) -> bool:
    times = protocol.round_times(run_id)
    now = int(protocol.chain.get_block("latest")["timestamp"])
    return times.finished or (times.round == 1 and now >= times.attest_end)


def test_a_verifier_down_across_an_attest_window_is_named_in_log_metrics_and_health(tmp_path, corpus):
    """A verifier whose node is down from round 0's claim until round 1's attest window closed held a seat of
    round 1's commitment: once back, its log, `/metrics` and `/health` (503) name the missed attest window."""
    with driven_deployment(build_contracts(), tmp_path / "chain") as deployment:
        setup = prepare_run(deployment, corpus, tmp_path / "home", [SOLVER], [ON_DUTY, PAUSED], V_RULES)
        protocol, run_id = setup.protocol, setup.run_id
        verifier = ["verifier", "serve"]
        nodes = [
            start(setup, "solver", ["solver", "run", "--no-progress"], SOLVER, "--coordinator"),
            start(setup, "on-duty", verifier, ON_DUTY),
            start(setup, "paused", verifier, PAUSED),
        ]
        try:
            setup.create()
            with setup.drive(lambda: handles(setup, nodes)) as driver:
                gate = driver.pause_when(lambda: _past_round_1_attest_window(protocol, run_id))
                wait_until(lambda: _claimed(protocol, run_id, 0), 900, "round 0's θ claim")
                stop_all([nodes[2]])
                gate.wait(900, "round 1's attest window to close")
                assert not protocol.round_times(run_id).finished
                nodes[2] = start(setup, "paused", verifier, PAUSED)
                health = wait_until(
                    lambda: (r := _get(setup, PAUSED, "/health")) is not None and r.status_code == 503 and r,
                    300, "the restarted verifier's /health to say it missed round 1's attest window",
                )  # fmt: skip
                body = health.json()
                assert any(r.startswith("missed the attest window of round 1") for r in body["reasons"]), body
                metrics = _get(setup, PAUSED, "/metrics")
                assert metrics is not None
                assert re.search(
                    r'gradledger_missed_window\{[^}]*round="1"[^}]*window="attest window"[^}]*\} 1\.0', metrics.text
                ), metrics.text
                (line,) = _log_lines(setup, "paused", "money: missed")
                assert "warning" in line and "round=1" in line and 'what="attest window"' in line, line
                assert not _log_lines(setup, "on-duty", "money: missed"), "the verifier on duty missed nothing"
                gate.release()
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{logs(setup, nodes)}") from None
        finally:
            stop_all(nodes)
