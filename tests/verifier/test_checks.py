"""The shared commitment checker against every cheating behaviour, a withholding solver and honest work.

No chain: the seat's draws are every segment (draw j = segment j, given to the checker in place of the round seed's
draws), θ_r's hash comes from a stand-in, and documents come from the solver's store. What the roles do with
the verdicts on a real anvil is tested in tests/disputes/.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from adversary.behaviours import Behaviour
from adversary.solver import train_dishonest_round
from node.checker import CommitmentChecker
from protocol.adapters.artifacts import LocalArtifactStore, put_state
from protocol.adapters.http import PeerSet
from protocol.adapters.runs import RunContext
from protocol.commitment import CommitmentDoc, encode_commitment_doc
from protocol.outer import get_initial_global_state
from protocol.training import compute_pseudo_gradient, get_params, train_round
from protocol.types import AttestationRef, Commitment
from tests.conftest import SOLVER_A

RUN_ID, ROUND = 3, 0
SEAT = AttestationRef(RUN_ID, ROUND, SOLVER_A, 0)


class ChainStandIn:
    """The checker's chain read here: θ_0 is the round's θ."""

    def __init__(self, theta_hash: bytes) -> None:
        self.theta_hash = theta_hash

    def theta_of(self, run_id: int, round_index: int) -> bytes:
        return self.theta_hash


def _publish(
    tmp_path, config, dataset, behaviour: Behaviour | None, name: str, plant_secret=None, *, exact=True, trained_as=None
):
    """A published commitment and a checker of it; `trained_as` is the config the solver trained under (another
    machine's arithmetic, emulated by another kernel), `exact` False a checker off the profile."""
    store = LocalArtifactStore(tmp_path / name)
    trained_as = trained_as or config
    global_state = get_initial_global_state(config)
    theta_hash = put_state(store, global_state)
    theta = get_params(global_state)

    def save(_index, state):
        return put_state(store, state)

    if behaviour is None:
        records, end = train_round(
            trained_as, dataset, theta, ROUND, SOLVER_A, save_checkpoint=save, plant_secret=plant_secret
        )
    else:
        records, end = train_dishonest_round(behaviour, trained_as, dataset, theta, ROUND, SOLVER_A, save, seed=5)
    delta_hash = put_state(store, compute_pseudo_gradient(theta, end))
    doc = CommitmentDoc(
        RUN_ID, ROUND, SOLVER_A, theta_hash, delta_hash, tuple(r.to_leaf(RUN_ID, ROUND, SOLVER_A) for r in records)
    )
    ctx = RunContext(RUN_ID, SimpleNamespace(samples_per_commitment=config.train.num_segments), config, dataset, "", 0)
    checker = CommitmentChecker(
        ctx,
        store,
        PeerSet([]),
        ChainStandIn(theta_hash),
        fetch_document=lambda *_: encode_commitment_doc(doc),
        exact=exact,
        draw_seat=lambda _ref: range(config.train.num_segments),  # every segment sampled
    )
    return checker, store, doc, Commitment(doc.root, doc.delta_hash, doc.tokens)


def test_honest_work_passes_and_a_fail_on_it_is_wrong(tmp_path, tiny_config, dataset):
    checker, _, _, commitment = _publish(tmp_path, tiny_config, dataset, None, "honest")
    decision, _ = checker.check_commitment(SEAT, commitment)
    assert decision.kind == "pass", decision
    assert checker.is_attestation_right(SEAT, commitment, False, -1)[0]
    assert not checker.is_attestation_right(SEAT, commitment, True, 1)[0]


@pytest.mark.parametrize("behaviour", list(Behaviour))
def test_every_cheat_is_caught_and_a_pass_on_it_is_wrong(tmp_path, tiny_config, dataset, behaviour):
    checker, _, doc, commitment = _publish(tmp_path, tiny_config, dataset, behaviour, behaviour.value)
    decision, checked = checker.check_commitment(SEAT, commitment)
    assert checked is not None and checked.root == doc.root
    assert decision.kind == "fail", decision
    # The document itself is consistent (it chains and binds Δ): only a replay tells.
    assert "replay" in decision.reason or "differs" in decision.reason, decision.reason
    assert not checker.is_attestation_right(SEAT, commitment, False, -1)[0]
    assert checker.is_attestation_right(SEAT, commitment, True, decision.sample_index)[0]


def test_withheld_checkpoints_count_as_failed(tmp_path, tiny_config, dataset):
    checker, store, doc, commitment = _publish(tmp_path, tiny_config, dataset, None, "withheld")
    for leaf in doc.leaves:
        store.delete(leaf.end_hash)
    decision, _ = checker.check_commitment(SEAT, commitment)
    assert decision.kind == "fail" and "not served" in decision.reason
    assert checker.is_attestation_right(SEAT, commitment, True, 0)[0]


def test_no_document_means_fail_on_the_first_draw(tmp_path, tiny_config, dataset):
    checker, _, _, commitment = _publish(tmp_path, tiny_config, dataset, None, "nodoc")
    checker._fetch_document = lambda *_: b"not json"
    decision, doc = checker.check_commitment(SEAT, commitment)
    assert (decision.kind, decision.sample_index) == ("fail", 0) and "unavailable" in decision.reason
    assert doc is None
    assert checker.is_attestation_right(SEAT, commitment, True, 0)[0]  # a fail on it is right


def test_dishonest_verifiers_attest_without_checking():
    from adversary.verifier import VerifierAdversary, decide_dishonest_attestation

    lazy = decide_dishonest_attestation(VerifierAdversary.LAZY, [(0, 2), (1, 0)])
    assert lazy.kind == "pass" and "without replaying" in lazy.reason
    false_fail = decide_dishonest_attestation(VerifierAdversary.FAIL_HONEST, [(0, 2), (1, 0)])
    assert (false_fail.kind, false_fail.sample_index, false_fail.segment) == ("fail", 0, 2)


PLANT_SECRET = bytes.fromhex("ab" * 32)


def test_a_true_plant_replays_with_its_secret_and_fails_without(tmp_path, tiny_config, dataset):
    """The juror's and the whistleblower's question in a plant dispute (KIND_PLANT), on every segment."""
    checker, _, doc, commitment = _publish(tmp_path, tiny_config, dataset, None, "planted", PLANT_SECRET)
    for segment in range(len(doc.leaves)):
        assert checker.is_plant_true(ROUND, SOLVER_A, commitment, segment, PLANT_SECRET)[0], segment
    decision, _ = checker.check_commitment(SEAT, commitment)
    assert decision.kind == "fail", "a planted commitment fails an honest replay"
    assert not checker.is_plant_true(ROUND, SOLVER_A, commitment, 0, bytes.fromhex("cd" * 32))[0], "another secret"


@pytest.mark.parametrize("behaviour", [None, Behaviour.SCALED_UPDATE])
def test_a_false_plant_is_found_false(tmp_path, tiny_config, dataset, behaviour):
    """Honest training claimed as planted (to have honest passes overturned), or work never done claimed as
    planted (to be paid without the compute): neither replays as the planted training."""
    checker, _, _, commitment = _publish(tmp_path, tiny_config, dataset, behaviour, f"false-{behaviour}")
    true, reason = checker.is_plant_true(ROUND, SOLVER_A, commitment, 1, PLANT_SECRET)
    assert not true and reason, reason


def test_an_unserved_plant_is_false(tmp_path, tiny_config, dataset):
    checker, store, doc, commitment = _publish(tmp_path, tiny_config, dataset, None, "unserved", PLANT_SECRET)
    store.delete(doc.leaves[1].start_hash)
    true, reason = checker.is_plant_true(ROUND, SOLVER_A, commitment, 1, PLANT_SECRET)
    assert not true and "not served" in reason


def _other_machine(config):
    """Honest arithmetic that is not bit-identical to this process's: the fused LayerNorm kernel."""
    return config.model_copy(update={"profile": config.profile.model_copy(update={"layer_norm": "fused"})})


def test_honest_work_from_other_arithmetic_fails_exactly_but_passes_off_the_profile(tmp_path, tiny_config, dataset):
    """The attack on honest solvers that the golden self-check closes: an exact verifier whose bits differ fails
    honest work. Off the profile (`exact` False) the same replays are judged by the tolerances and pass."""
    other = _other_machine(tiny_config)
    exact, _, _, commitment = _publish(tmp_path, tiny_config, dataset, None, "exact", trained_as=other)
    assert exact.check_commitment(SEAT, commitment)[0].kind == "fail"
    checker, _, _, commitment = _publish(tmp_path, tiny_config, dataset, None, "off", exact=False, trained_as=other)
    decision, _ = checker.check_commitment(SEAT, commitment)
    assert decision.kind == "pass" and "within the run's tolerances" in decision.reason, decision
    assert not checker.is_attestation_right(SEAT, commitment, True, 0)[0]


@pytest.mark.parametrize("behaviour", list(Behaviour))
def test_off_the_profile_cheats_are_still_caught_by_the_tolerances(tmp_path, tiny_config, dataset, behaviour):
    checker, _, _, commitment = _publish(tmp_path, tiny_config, dataset, behaviour, behaviour.value, exact=False)
    decision, _ = checker.check_commitment(SEAT, commitment)
    assert decision.kind == "fail" and "tolerance verdict" in decision.reason, decision


def test_off_the_profile_a_withheld_end_checkpoint_is_a_fail(tmp_path, tiny_config, dataset):
    other = _other_machine(tiny_config)
    checker, store, doc, commitment = _publish(tmp_path, tiny_config, dataset, None, "w", exact=False, trained_as=other)
    store.delete(doc.leaves[0].end_hash)
    decision, _ = checker.check_commitment(SEAT, commitment)
    assert decision.kind == "fail" and "not served" in decision.reason, decision
