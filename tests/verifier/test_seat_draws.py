"""A seat's draws as the verifier computes them (one read of the round's seed + protocol/sampling.py) are the chain's.

The checker (node/checker.py) no longer asks Verification.sampledSegment once per draw: it reads the round's seed
once (`ProtocolClient.round_draw`) and computes every draw with `protocol.sampling.compute_seat_samples`. On a real
anvil, after drawSeed, those draws equal the contract's view for every seat and draw, for committed and uncommitted
solvers alike, and the solver's opening (`opened_segments`, seat-major) lists the same segments.
"""

from __future__ import annotations

import pytest

from devnet.deploy import build_contracts
from devnet.runs import ETH, build_run_terms
from node.checker import CommitmentChecker
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.http import PeerSet
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.runs import RunContext
from protocol.config import build_run_config
from protocol.errors import SeedError
from protocol.run_presets import TINY
from protocol.sampling import compute_seat_samples
from protocol.types import ROLE_VERIFIER, AttestationRef
from tests.chain_fixtures import driven_deployment

RULES = TINY.with_run(
    max_rounds=1, samples_per_commitment=3, verifiers_per_commitment=3, commit_window=30, attest_window=30,
    challenge_window=30,
)  # fmt: skip
SOLVERS = [get_devnet_account(i).address for i in (1, 2)]


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """A run with three verifiers whose round 0 seed is drawn (no commitment is needed to draw it)."""
    with driven_deployment(build_contracts(), tmp_path_factory.mktemp("seat-draws")) as deployed:
        protocol = deployed.protocol
        creator = get_devnet_account(0)
        config = build_run_config(preset="tiny", run_seed="0x" + "5e" * 32, dataset_root="0x" + "00" * 32)
        terms = build_run_terms(bytes(32), bytes(32), bytes(32), config, RULES.run)
        run_id, _ = protocol.create_run(creator, terms, ETH)
        for i in (3, 4, 5):
            verifier = get_devnet_account(i)
            protocol.deposit_stake(verifier, ROLE_VERIFIER, RULES.run.verifier_min_stake)
            protocol.register_verifier(verifier, run_id)
        before = protocol.round_draw(run_id, 0)
        times = protocol.round_times(run_id)
        protocol.chain.mine_blocks(times.seed_block - protocol.chain.block_number())
        protocol.chain.mine_at(max(times.commit_end, protocol.chain.get_block()["timestamp"] + 1))
        protocol.draw_seed(creator, run_id, 0)
        ctx = RunContext(run_id, terms, config, None, "", 0)  # type: ignore[arg-type]
        yield protocol, ctx, before


def test_round_draw_is_the_seed_base_and_the_runs_sampling_terms(drawn):
    protocol, ctx, before = drawn
    assert not before.drawn, "nothing to draw from before drawSeed"
    draw = protocol.round_draw(ctx.run_id, 0)
    assert draw.drawn and draw.seed_base == protocol.seed_base(ctx.run_id, 0) != bytes(32)
    assert (draw.samples, draw.num_segments) == (ctx.terms.samples_per_commitment, ctx.terms.num_segments)
    with pytest.raises(SeedError, match="not drawn yet"):
        compute_seat_samples(before, ctx.run_id, 0, SOLVERS[0], 0)


def test_the_checkers_draws_equal_verification_sampled_segment_for_every_seat(drawn, tmp_path):
    protocol, ctx, _ = drawn
    checker = CommitmentChecker(ctx, LocalArtifactStore(tmp_path), PeerSet([]), protocol)
    samples = ctx.terms.samples_per_commitment
    seats = protocol.seat_count(ctx.run_id, 0)
    assert seats == 3
    for solver in SOLVERS:
        opened = protocol.opened_segments(ctx.run_id, 0, solver)
        assert len(opened) == seats * samples
        for slot in range(seats):
            ref = AttestationRef(ctx.run_id, 0, solver, slot)
            on_chain = [protocol.sampled_segment(ref, j) for j in range(samples)]
            assert checker.get_samples(ref) == list(enumerate(on_chain)), f"seat {ref.id}"
            assert list(opened[slot * samples : (slot + 1) * samples]) == on_chain, "the opening is seat-major"
