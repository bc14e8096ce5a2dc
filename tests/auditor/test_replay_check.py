"""auditor.replay_check: the audit replays accepted segments with the verifiers' one verdict (no chain).

Real tiny training (the tiny preset: 3 segments of 2 steps), real checkpoints in a real LocalArtifactStore read
through ArtifactSources, a history folded from hand-built events whose commitments carry the real roots and Δ hashes.
SOLVER_A is honest; SOLVER_B cheats in its last segment only (an update scaled by 0.9, adversary/behaviours.py) and a
lazy verifier accepted it: both commitments are accepted, so every other check of the audit passes on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from adversary.behaviours import Behaviour, make_dishonest_segment
from auditor.checks import CHECK_ORDER, REPLAY, DocumentFacts
from auditor.replay_check import (
    REPLAY_UNAVAILABLE,
    ReplaySettings,
    ReplaySettingsError,
    check_replays,
    choose_replay_segments,
    parse_replay_count,
)
from auditor.sources import ArtifactSources
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.commitment import CommitmentDoc, decode_commitment_doc, encode_commitment_doc
from protocol.hashing import hash_to_hex, to_hash32
from protocol.history.fold import fold_run_history
from protocol.history.records import RunHistory
from protocol.outer import get_initial_global_state
from protocol.state import compute_state_hash, encode_state
from protocol.training import State, compute_pseudo_gradient, get_params, make_start_checkpoint, train_round
from tests.history_builder import ETH, SOLVER_A, SOLVER_B, RunEvents, with_args

RUN_ID = 1
CHEATED_SEGMENT = 2
SEED_BASE = "0x" + "55" * 12 + "00" * 20  # what RunEvents.seed draws


@dataclass
class Trained:
    """What the two solvers committed and where their checkpoints are."""

    docs: dict[str, CommitmentDoc]
    theta_hash: bytes
    start_hash: str
    store_dir: Path


def _commit_doc(config, theta_hash: bytes, params: State, solver: str, records, end: State) -> CommitmentDoc:
    delta_hash = compute_state_hash(compute_pseudo_gradient(params, end))
    leaves = tuple(r.to_leaf(RUN_ID, 0, solver) for r in records)
    doc = CommitmentDoc(RUN_ID, 0, solver, theta_hash, delta_hash, leaves)
    return decode_commitment_doc(encode_commitment_doc(doc))  # canonical, as a store serves it


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread, as `gradledger audit` runs by default: tiny tensors, no thread-pool wake-ups (docs/audit.md,
    Cost); the results are the same at any count."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def trained(tiny_config, dataset, tmp_path_factory) -> Trained:
    """Round 0 of both solvers from θ0, every checkpoint stored by hash (the cheater's forged end included)."""
    store_dir = tmp_path_factory.mktemp("replay") / "store"
    store = LocalArtifactStore(store_dir)

    def save(_index: int, state: State) -> bytes:
        return store.put(encode_state(state))

    theta = get_initial_global_state(tiny_config)
    params = get_params(theta)
    theta_hash = compute_state_hash(theta)
    records_a, end_a = train_round(tiny_config, dataset, params, 0, SOLVER_A, save_checkpoint=save)
    kept: dict[int, State] = {}

    def keep(index: int, state: State) -> bytes:
        kept[index] = state
        return save(index, state)

    records_b, _ = train_round(tiny_config, dataset, params, 0, SOLVER_B, save_checkpoint=keep)
    forged = make_dishonest_segment(
        Behaviour.SCALED_UPDATE, tiny_config, dataset, 0, SOLVER_B, CHEATED_SEGMENT, kept[CHEATED_SEGMENT]
    )
    assert len(records_b) - 1 == CHEATED_SEGMENT, "the last segment: the leaves still chain"
    save(CHEATED_SEGMENT + 1, forged.end_checkpoint)
    records_b[CHEATED_SEGMENT] = forged.record
    docs = {
        SOLVER_A: _commit_doc(tiny_config, theta_hash, params, SOLVER_A, records_a, end_a),
        SOLVER_B: _commit_doc(tiny_config, theta_hash, params, SOLVER_B, records_b, forged.end_checkpoint),
    }
    start_hash = hash_to_hex(compute_state_hash(make_start_checkpoint(params)))
    return Trained(docs, theta_hash, start_hash, store_dir)


def _history(trained: Trained, solvers: tuple[str, ...]) -> RunHistory:
    """One settled round in which every solver of `solvers` committed its document and was passed."""
    ev = RunEvents(RUN_ID, theta0Hash=trained.theta_hash, maxRounds=1)
    for solver in solvers:
        ev.deposit(solver, 1)
    ev.create()
    for solver in solvers:
        doc = trained.docs[solver]
        ev.commit(0, solver)
        ev.events[-1] = with_args(ev.events[-1], root=doc.root, deltaHash=doc.delta_hash, tokens=doc.tokens)
    ev.seed(0)
    for solver in solvers:
        ev.attest(0, solver)
        ev.finalize(0, solver)
    ev.claim_theta(0)
    ev.settle(0, released=5 * ETH)
    history = fold_run_history(ev.events, ev.run_id, ev.timestamps)
    assert history.rounds[0].accepted == tuple(sorted(solvers, key=lambda a: bytes.fromhex(a[2:])))
    return history


def _replay(trained, tiny_config, dataset, history, settings, sources=None):
    docs = {(0, s): DocumentFacts(0, s, trained.docs[s], "test store", "") for s in history.rounds[0].accepted}
    starts = {key: trained.start_hash for key in docs}
    sources = sources or ArtifactSources([trained.store_dir])
    return check_replays(history, docs, starts, tiny_config, dataset, sources.read, settings)


# -- the check ---------------------------------------------------------------------------------------


def test_honest_accepted_work_replays(trained, tiny_config, dataset):
    history = _history(trained, (SOLVER_A,))
    outcome = _replay(trained, tiny_config, dataset, history, ReplaySettings(None, exact=True))
    assert outcome.check.name == REPLAY and outcome.check.passed, outcome.check.detail
    assert [(r.segment, r.status) for r in outcome.replays] == [(0, "replayed"), (1, "replayed"), (2, "replayed")]
    assert outcome.check.detail.startswith("3 sampled segment(s) of 1 accepted commitment(s) replayed (exact")
    assert outcome.warnings == () and outcome.check.evidence["not_replayed"] == []


def test_accepted_segment_that_does_not_replay_fails_naming_run_round_solver_segment(trained, tiny_config, dataset):
    history = _history(trained, (SOLVER_A, SOLVER_B))
    outcome = _replay(trained, tiny_config, dataset, history, ReplaySettings(None, exact=True))
    assert not outcome.check.passed
    label = history.label_of(SOLVER_B)
    expected = (
        f"run {RUN_ID} round 0 {label} ({SOLVER_B}) segment {CHEATED_SEGMENT}: "
        "replayed end state differs from the committed end hash"
    )
    assert outcome.check.evidence["problems"] == [expected]
    assert outcome.check.detail == expected
    failed = [(r.solver, r.segment) for r in outcome.replays if r.status == "failed"]
    assert failed == [(SOLVER_B, CHEATED_SEGMENT)]
    assert outcome.check.evidence["segments_replayed"] == 5  # A's three, B's two honest ones


def test_tolerance_verdicts_fail_the_forged_segment_and_pass_honest_ones(trained, tiny_config, dataset):
    """A machine that does not reproduce the profile judges by the run's tolerances against the committed end."""
    history = _history(trained, (SOLVER_A, SOLVER_B))
    outcome = _replay(trained, tiny_config, dataset, history, ReplaySettings(None, exact=False))
    assert outcome.check.evidence["verdicts"] == "tolerance"
    statuses = {(r.solver, r.segment): r.status for r in outcome.replays}
    assert statuses.pop((SOLVER_B, CHEATED_SEGMENT)) == "failed" and set(statuses.values()) == {"replayed"}
    (problem,) = outcome.check.evidence["problems"]
    assert f"segment {CHEATED_SEGMENT}: tolerance verdict" in problem


def test_the_default_sample_is_deterministic_and_catches_the_fake_only_when_drawn(trained, tiny_config, dataset):
    history = _history(trained, (SOLVER_A, SOLVER_B))
    seed_base = to_hash32(SEED_BASE)
    drawn = {s: choose_replay_segments(RUN_ID, 0, SOLVER_B, seed_base, s, 3, 1) for s in range(40)}
    caught = next(s for s, segments in drawn.items() if segments == (CHEATED_SEGMENT,))
    missed = next(s for s, segments in drawn.items() if segments != (CHEATED_SEGMENT,))
    hit = _replay(trained, tiny_config, dataset, history, ReplaySettings(1, caught, exact=True))
    assert not hit.check.passed and f"segment {CHEATED_SEGMENT}:" in hit.check.detail
    assert hit.check.evidence["audit_seed"] == caught and hit.check.evidence["replay"] == "1"
    miss = _replay(trained, tiny_config, dataset, history, ReplaySettings(1, missed, exact=True))
    assert miss.check.passed and len(miss.replays) == 2  # one segment of each accepted commitment
    again = _replay(trained, tiny_config, dataset, history, ReplaySettings(1, missed, exact=True))
    assert again.replays == miss.replays


def test_replay_none_skips_and_says_so(trained, tiny_config, dataset):
    history = _history(trained, (SOLVER_A, SOLVER_B))
    outcome = _replay(trained, tiny_config, dataset, history, ReplaySettings(0))
    assert outcome.check.passed and outcome.replays == ()
    assert outcome.check.detail == "skipped (--replay 0): no accepted segment was replayed"
    assert outcome.check.evidence["skipped"] is True


def test_an_unavailable_checkpoint_is_a_warning_naming_it_not_a_failure(trained, tiny_config, dataset, tmp_path):
    """A solver may stop serving after settlement: what no store or peer holds is reported, not failed."""
    history = _history(trained, (SOLVER_A,))
    leaf = trained.docs[SOLVER_A].leaves[1]
    copy = tmp_path / "store"
    store = LocalArtifactStore(copy)
    source = LocalArtifactStore(trained.store_dir)
    for digest in source.list_digests():
        if digest != leaf.start_hash:
            store.put(source.get(digest))
    outcome = _replay(trained, tiny_config, dataset, history, ReplaySettings(None, exact=True), ArtifactSources([copy]))
    assert outcome.check.passed, outcome.check.detail
    assert [(r.segment, r.status) for r in outcome.replays] == [(0, "replayed"), (1, "unavailable"), (2, "replayed")]
    assert "1 unavailable (warning)" in outcome.check.detail
    (warning,) = outcome.warnings
    label = history.label_of(SOLVER_A)
    assert warning.name == REPLAY_UNAVAILABLE
    assert f"run {RUN_ID} round 0 {label} ({SOLVER_A}) segment 1: start checkpoint of segment 1" in warning.detail
    assert "is missing" in warning.detail


def test_no_config_fails_and_no_accepted_work_passes(trained, tiny_config, dataset):
    history = _history(trained, (SOLVER_A,))
    docs = {(0, SOLVER_A): DocumentFacts(0, SOLVER_A, trained.docs[SOLVER_A], "test store", "")}
    read = ArtifactSources([trained.store_dir]).read
    blind = check_replays(history, docs, {}, None, None, read, ReplaySettings())
    assert not blind.check.passed and "run config or dataset unavailable" in blind.check.detail
    ev = RunEvents(RUN_ID, maxRounds=1)
    ev.create()
    ev.claim_theta(0)
    ev.settle(0)
    idle = fold_run_history(ev.events, RUN_ID, ev.timestamps)
    nothing = check_replays(idle, {}, {}, tiny_config, dataset, read, ReplaySettings())
    assert nothing.check.passed and nothing.check.detail == "no settled round accepted work: nothing to replay"


def test_a_commitment_without_a_valid_document_is_left_to_the_documents_check(trained, tiny_config, dataset):
    history = _history(trained, (SOLVER_A,))
    docs = {(0, SOLVER_A): DocumentFacts(0, SOLVER_A, trained.docs[SOLVER_B], "test store", "")}  # B's, not A's
    read = ArtifactSources([trained.store_dir]).read
    outcome = check_replays(history, docs, {(0, SOLVER_A): trained.start_hash}, tiny_config, dataset, read,
                            ReplaySettings(exact=True))  # fmt: skip
    assert outcome.check.passed and outcome.replays == ()
    (line,) = outcome.check.evidence["not_replayed"]
    assert line.startswith(f"round 0 {history.label_of(SOLVER_A)} ({SOLVER_A}): ")


# -- the sample and the flag -------------------------------------------------------------------------


def test_the_sample_is_a_pure_function_of_run_round_solver_seed_base_and_audit_seed():
    base = to_hash32(SEED_BASE)
    one = choose_replay_segments(1, 0, SOLVER_A, base, 0, 10, 3)
    assert one == choose_replay_segments(1, 0, SOLVER_A.lower(), base, 0, 10, 3)
    assert len(one) == 3 and list(one) == sorted(set(one)) and all(0 <= s < 10 for s in one)
    others = {
        choose_replay_segments(*args, 10, 3)
        for args in [(2, 0, SOLVER_A, base, 0), (1, 1, SOLVER_A, base, 0), (1, 0, SOLVER_B, base, 0),
                     (1, 0, SOLVER_A, bytes(32), 0), (1, 0, SOLVER_A, base, 1)]
    }  # fmt: skip
    assert others - {one}, "each input moves the sample"
    assert choose_replay_segments(1, 0, SOLVER_A, base, 0, 10, None) == tuple(range(10))
    assert choose_replay_segments(1, 0, SOLVER_A, base, 0, 3, 7) == (0, 1, 2)
    assert choose_replay_segments(1, 0, SOLVER_A, base, 0, 3, 0) == ()
    assert set(choose_replay_segments(1, 0, SOLVER_A, base, 0, 10, 4)) >= set(one), "a larger sample extends it"


def test_replay_flag_values():
    assert parse_replay_count("all") is None and parse_replay_count("ALL") is None
    assert parse_replay_count("none") == 0 and parse_replay_count("0") == 0 and parse_replay_count("3") == 3
    for bad in ("-1", "some", ""):
        with pytest.raises(ReplaySettingsError):
            parse_replay_count(bad)
    with pytest.raises(ReplaySettingsError):
        ReplaySettings(seed=-1)
    assert ReplaySettings().segments == 1 and ReplaySettings(None).describe() == "all"
    assert CHECK_ORDER.index(REPLAY) == CHECK_ORDER.index("checkpoints") + 1
