"""A planted fault on a real anvil: the lazy pass on it loses its bond and penalty with no whistleblower, the honest
fail on it earns the jackpot and its bond back, and the solver that planted it is paid and not slashed.

The scenario is the one `gradledger demo --adversarial` plays after its main run (gradledger/plant_scenario.py):
scripted, so that it can mine round 1's seed block as a block producer would until the solver's round 2 is
planted; the training, opening, replay, anchor and reveal are the protocol's and the nodes' own code.
"""

from __future__ import annotations

import pytest

from auditor.audit import audit_run, open_sources
from gradledger.plant_scenario import PLANT_ROUND, PLANT_RULES, SOLVER, check_planted_fault, play_planted_fault
from protocol.adapters.keys import get_devnet_account
from protocol.types import PlantPay
from tests.disputes.conftest import all_events, assert_balance_matches_events

pytestmark = pytest.mark.e2e


def test_lazy_pass_on_a_planted_fault_loses_its_bond_without_a_whistleblower(fresh_deployment, tmp_path):
    protocol = fresh_deployment.protocol
    outcome = play_planted_fault(protocol, tmp_path)
    assert check_planted_fault(outcome) == []
    events = [e for e in all_events(protocol) if e.args.get("runId") == outcome.run_id]
    names = [e.name for e in events]
    assert "AttestationChallenged" not in names, "no whistleblower, no dispute: the reveal alone decided"
    revealed = [e for e in events if e.name == "PlantRevealed"]
    assert [(e.args["round"], e.args["planted"]) for e in revealed] == [(PLANT_ROUND, True)]
    applied = next(e for e in events if e.name == "PlantApplied")
    assert (applied.args["overturned"], applied.args["forfeited"]) == (1, PLANT_RULES.run.attestation_bond)
    solver = get_devnet_account(SOLVER).address
    assert not any(e.name == "SolverFaultProven" for e in events), f"{solver} is never slashed for its plant"
    assert_balance_matches_events(protocol)

    # the auditor, from the chain's events and the creator's artifacts alone, finds every rule kept: the planted
    # commitment paid but its Δ not in θ, the lazy pass slashed the plant penalty, nobody else slashed
    sources = open_sources(None, [tmp_path / "plant-creator"], [])
    report = audit_run(protocol.chain, protocol.chain.manifest, outcome.run_id, sources)
    assert report.passed, [c for c in report.checks if not c.passed]
    history = report.history
    rnd = history.rounds[PLANT_ROUND]
    assert [c.solver for c in rnd.planted] == [solver] and rnd.paid == (solver,) and rnd.accepted == ()
    # nobody disputed the plant (a true one): it stands, paid as planted, its solver not slashed
    assert rnd.plant_disputes == () and rnd.disproven_plants == () and rnd.pay_of(solver) == PlantPay.PLANTED
    assert len(rnd.lazy_plant_passes) == 1 and rnd.jackpots == PLANT_RULES.plant.jackpot
    # its bond and penalty were held by Plants until settlement, then released into the pool (the plant stood)
    (lazy,) = rnd.lazy_plant_passes
    forfeit = PLANT_RULES.run.attestation_bond + PLANT_RULES.plant.penalty
    assert (lazy.forfeit, lazy.forfeit_release) == (forfeit, "pool") and rnd.forfeits_held == 0
    assert rnd.paid_commitments == 1
    assert [(x.fault, x.requested) for x in history.slashes] == [("wrong attestation", PLANT_RULES.plant.penalty)]
    assert history.plants.pool == outcome.pool_after_wei
