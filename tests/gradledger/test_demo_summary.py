"""gradledger/demo_summary.py: a demo that accepted no honest work in some round is reported as failed, with why."""

from __future__ import annotations

from gradledger.demo_summary import check_demo_summary


def _summary(**changes) -> dict:
    summary = {
        "run_id": 1, "rounds": 3, "rounds_settled": 3, "accepted_per_round": [3, 3, 3],
        "honest_accepted_per_round": [3, 3, 3], "contract_balance_wei": 10, "owed_wei": 10,
        "audit": {"passed": True, "failed": [], "html": "a.html", "json": "a.json"},
    }  # fmt: skip
    return {**summary, **changes}


def test_check_demo_summary_of_a_run_that_trained_every_round_succeeds():
    assert check_demo_summary(_summary()) == []


def test_check_demo_summary_of_a_run_that_trained_nothing_names_every_empty_round():
    # issue 39: "3 rounds settled", exit 0, with 0 commitments in every round
    problems = check_demo_summary(_summary(accepted_per_round=[0, 0, 0], honest_accepted_per_round=[0, 0, 0]))
    assert len(problems) == 1 and "round(s) 0, 1, 2" in problems[0] and "<home>/logs" in problems[0]


def test_check_demo_summary_counts_only_honest_work():
    # a cheater's commitment accepted in round 1 does not make up for no honest work in it
    problems = check_demo_summary(_summary(accepted_per_round=[2, 1, 2], honest_accepted_per_round=[2, 0, 2]))
    assert len(problems) == 1 and "round(s) 1 " in problems[0]


def test_check_demo_summary_reports_unsettled_rounds_unbalanced_contracts_and_a_failed_audit():
    audit = {"passed": False, "failed": ["payouts"], "html": "run-1.html", "json": "run-1.json"}
    problems = check_demo_summary(_summary(rounds_settled=1, contract_balance_wei=11, audit=audit))
    assert [p.split(" ")[0:2] for p in problems] == [["only", "1"], ["the", "contracts"], ["the", "audit"]]
    assert "payouts" in problems[2] and "run-1.html" in problems[2]


def test_count_accepted_counts_every_past_round_from_the_history():
    # Verification keeps only a solver's latest status: the demo read rounds 0 and 1 as empty from it ([0, 0, 3])
    # while the audit, folding the events, counted 3 in each; the count now comes from the same fold as the audit
    from gradledger.demo_summary import count_accepted
    from tests.history_builder import SOLVER_A, SOLVER_B, honest_two_rounds

    events = honest_two_rounds().events
    assert count_accepted(1, 2, events, {SOLVER_A}) == ([2, 2], [1, 1], [0, 0])
    assert count_accepted(1, 3, events, {SOLVER_A, SOLVER_B}) == ([2, 2, 0], [2, 2, 0], [0, 0, 0])  # round 2: none
    summary = _summary(rounds=3, accepted_per_round=[2, 2, 0], honest_accepted_per_round=[2, 2, 0])
    assert "round(s) 2 " in check_demo_summary(summary)[0]


def test_a_round_whose_only_honest_commitment_was_planted_is_not_a_failure():
    # a planted commitment is the protocol's own test of the verifiers: paid, its Δ kept out of θ on purpose
    summary = _summary(accepted_per_round=[0, 1, 1], honest_accepted_per_round=[0, 1, 1], planted_per_round=[1, 0, 0])
    assert check_demo_summary(summary) == []
    assert check_demo_summary({**summary, "planted_per_round": [0, 0, 0]})[0].startswith("no honest solver's work")


def test_count_accepted_counts_planted_commitments():
    from gradledger.demo_summary import count_accepted
    from tests.history_builder import SOLVER_A, SOLVER_B, planted_run

    events = planted_run().events
    accepted, honest, planted = count_accepted(1, 3, events, {SOLVER_A, SOLVER_B})
    assert sum(planted) >= 1 and all(a >= h for a, h in zip(accepted, honest, strict=True))
