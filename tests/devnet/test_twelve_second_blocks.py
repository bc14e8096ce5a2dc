"""A run on an anvil with 12-second blocks settles its rounds and slashes a cheater (issue 36, finding 4).

Before the deployment declared its block time, the seed block was counted in 1-second blocks whatever the chain:
on a 12-second chain a round with default windows drew its seed ~12x too late, every `drawSeed` reverted, every
round was void and no cheater was ever slashed. Here the deployment declares `blockSeconds = 12`, the run's
windows fit it (protocol/windows.py, RunRegistry._validateWindows), and real nodes play two rounds.

The chain: anvil mines on an interval (`--block-time`), every block stamped exactly 12 s after its parent
(`anvil_setBlockTimestampInterval`), starting far ahead of the wall clock. Nodes go by the chain's time
(`node.bootstrap.get_chain_now`: the later of the wall clock and the latest block), and a node never mines on a
chain that mines by itself (`node.opening.draw_round_seed`), so the chain is a 12-second chain in everything the
contracts and the nodes see -- only its blocks come every BLOCK_WALL_S of wall time instead of 12 s, so that two
rounds take minutes, not an hour. Unlike the driven devnet of the other end-to-end tests (tests/clock.py), time
moves whether or not the nodes are done, as on a real chain: the windows are sized in wall time (WALL_WINDOWS_S)
with room for a loaded 2-core machine, and converted to chain seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from node.opening import draw_round_seed
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import load_manifest, write_manifest
from protocol.constants import ROLE_SOLVER
from protocol.run_presets import TINY
from protocol.types import RoundTimes, get_randao_block
from protocol.windows import get_block_time_problem
from tests.chain_fixtures import Deployment, events_of, prepare_run, wait_until
from tests.clock import DRIVEN_GENESIS
from tests.disputes.conftest import address, all_events, assert_balance_matches_events, logs, slashed, start, stop_all

BLOCK_SECONDS = 12
"""The chain's block time: every block's timestamp is its parent's + 12, and the deployment declares 12."""
BLOCK_WALL_S = 0.5
"""Wall seconds between blocks: chain time runs BLOCK_SECONDS / BLOCK_WALL_S = 24 times the wall clock."""
WALL_WINDOWS_S = {"commit": 30, "attest": 30, "challenge": 20}
"""Wall time per window. Each phase's work takes 1 to 2 s here (a solver trains the tiny preset's round and commits,
the seed is drawn and both commitments opened, the verifier replays 2 samples of each): the windows leave 7x that
or more for a loaded machine; the challenge window must cover half the attest window and 2 blocks (issue 37). A
round lasts commit + attest + challenge + the claim's challenge window: 100 s."""


def _chain_s(wall_s: float) -> int:
    return round(wall_s * BLOCK_SECONDS / BLOCK_WALL_S)


RULES = TINY.with_run(
    max_rounds=2, samples_per_commitment=2, verifiers_per_commitment=1,
    commit_window=_chain_s(WALL_WINDOWS_S["commit"]), attest_window=_chain_s(WALL_WINDOWS_S["attest"]),
    challenge_window=_chain_s(WALL_WINDOWS_S["challenge"]), dispute_timeout=_chain_s(60),
)  # fmt: skip
HONEST, CHEATER, VERIFIER = 1, 2, 3


@contextmanager
def twelve_second_deployment(directory: Path) -> Iterator[Deployment]:
    """An interval-mining anvil stamping 12-second blocks, with the contracts deployed declaring 12-second blocks."""
    args = ("--block-time", str(BLOCK_WALL_S), "--timestamp", str(DRIVEN_GENESIS))
    with AnvilProcess(extra_args=args) as anvil:
        chain = ChainClient(anvil.rpc_url)
        chain.set_block_timestamp_interval(BLOCK_SECONDS)
        assert not chain.is_automining(), "interval mining: blocks come on their own, not with transactions"
        manifest = deploy_protocol(chain, get_devnet_account(0), build_contracts(), block_seconds=BLOCK_SECONDS)
        write_manifest(directory / "manifest.json", manifest)
        assert load_manifest(directory / "manifest.json").block_seconds == BLOCK_SECONDS
        protocol = ProtocolClient(ChainClient(anvil.rpc_url, manifest))
        assert protocol.block_seconds() == BLOCK_SECONDS
        yield Deployment(anvil, directory / "manifest.json", protocol)


def test_the_rules_fit_twelve_second_blocks_and_not_one_second_blocks():
    assert get_block_time_problem(RULES.run.commit_window, RULES.run.attest_window, BLOCK_SECONDS) is None
    # the same draw window on 1-second blocks outlasts the seed block's 256-block horizon
    assert get_block_time_problem(RULES.run.commit_window, RULES.run.attest_window, 1) is not None


def test_no_node_mines_on_a_chain_that_mines_by_itself():
    """draw_round_seed mines the blocks up to the seed block only on an automining devnet; on one mining on an
    interval (or only on request) it waits for the chain, which would otherwise move a block time per block mined."""
    far = RoundTimes(round=0, start=0, commit_end=0, attest_end=0, challenge_end=0, finished=False, seed_block=10**6)
    with AnvilProcess(extra_args=("--no-mining",)) as anvil:
        protocol = ProtocolClient(ChainClient(anvil.rpc_url))
        assert not protocol.chain.is_automining()
        before = protocol.chain.block_number()
        assert draw_round_seed(protocol, get_devnet_account(0), 1, far) is False
        assert protocol.chain.block_number() == before, "nothing mined"
    with AnvilProcess() as anvil:
        assert ChainClient(anvil.rpc_url).is_automining()


@pytest.mark.e2e
@pytest.mark.wall
def test_a_run_on_twelve_second_blocks_settles_rounds_and_slashes_a_cheater(tmp_path, corpus):
    wall_start = time.monotonic()
    with twelve_second_deployment(tmp_path) as deployment:
        setup = prepare_run(deployment, corpus, tmp_path / "home", [HONEST, CHEATER], [VERIFIER], RULES)
        protocol, run_id = setup.protocol, setup.run_id
        # stake for round 1 after round 0's slash, so the cheater cheats in both rounds
        protocol.deposit_stake(get_devnet_account(CHEATER), ROLE_SOLVER, RULES.run.solver_min_stake)
        solver = ["solver", "run", "--no-progress"]
        nodes = [
            start(setup, "honest", solver, HONEST, "--coordinator"),
            start(setup, "cheater", solver, CHEATER, "--adversary", "cheat", "--behaviour", "scaled-update"),
            start(setup, "verifier", ["verifier", "serve"], VERIFIER),
        ]
        try:
            setup.create()
            run_start = time.monotonic()
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
            run_wall_s = time.monotonic() - run_start
            wait_until(lambda: len(_slashes_of(protocol, CHEATER)) == 2, 300, "the cheater's second slash")
            # The last round's shares are claimed a block or two after it settles (a 12 s block each): wait for
            # them rather than stopping the honest node between its settle and its claim.
            rounds = RULES.run.max_rounds
            wait_until(lambda: len(_claims_of(protocol, HONEST)) == rounds, 300, "the honest solver's claims")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{logs(setup, nodes)}") from None
        finally:
            stop_all(nodes)
        detail = logs(setup, nodes)
        chain = protocol.chain

        # Every block of the run is 12 s after its parent: a 12-second chain throughout.
        created, last = events_of(protocol, "RunCreated", run_id)[0].block_number, chain.block_number()
        stamps = chain.get_block_timestamps(range(created, last + 1))
        gaps = {stamps[b] - stamps[b - 1] for b in range(created + 1, last + 1)}
        assert gaps == {BLOCK_SECONDS}, gaps

        # Both rounds settled; each seed was drawn from the block ceil(Wc / 12) blocks after the round's start.
        settled = events_of(protocol, "RoundSettled", run_id)
        assert [e.args["round"] for e in settled] == [0, 1], detail
        starts = {e.args["round"]: e for e in events_of(protocol, "RoundStarted", run_id)}
        seeds = events_of(protocol, "SeedDrawn", run_id)
        assert [e.args["round"] for e in seeds] == [0, 1], detail
        seed_blocks = -(-RULES.run.commit_window // BLOCK_SECONDS)
        for seed in seeds:
            assert seed.args["blockNumber"] == starts[seed.args["round"]].block_number + seed_blocks, seed.args
            # from the RANDAO value revealed in the seed block (the next block's header mixHash), not a hash
            randao_block = chain.get_block(get_randao_block(seed.args["blockNumber"]))
            assert seed.args["randao"] == bytes(randao_block["mixHash"]) != bytes(randao_block["hash"]), seed.args
            assert seed.args["seedBase"] == bytes(randao_block["mixHash"])[:12] + bytes(20), seed.args

        # The cheater was failed and slashed its stake in each round (SolverFaultProven); the honest solver's work was
        # accepted and paid in both, the cheater's in neither.
        events = all_events(protocol)
        fails = sorted((e.args["round"], e.args["solver"]) for e in events if e.name == "FailAttested")
        assert fails == [(0, address(CHEATER)), (1, address(CHEATER))], detail
        proven = sorted((e.args["round"], e.args["solver"]) for e in events if e.name == "SolverFaultProven")
        assert proven == [(0, address(CHEATER)), (1, address(CHEATER))], detail
        assert slashed(events) == {(address(CHEATER), ROLE_SOLVER): 2 * RULES.run.solver_min_stake}
        assert protocol.bonded_of(address(CHEATER), ROLE_SOLVER) == 0
        paid = sorted((e.args["round"], e.args["solver"]) for e in events if e.name == "SolverSharesClaimed")
        assert paid == [(0, address(HONEST)), (1, address(HONEST))], detail
        assert protocol.shares_of(run_id, address(CHEATER)) == 0
        assert protocol.bonded_of(address(HONEST), ROLE_SOLVER) == RULES.run.solver_min_stake
        assert_balance_matches_events(protocol)
    chain_min = (stamps[last] - stamps[created]) / 60
    print(
        f"\n12-second chain: {RULES.run.max_rounds} rounds in {run_wall_s:.0f} s of wall time ({chain_min:.0f} min of "
        "chain "
        f"time); the whole test {time.monotonic() - wall_start:.0f} s"
    )


def _slashes_of(protocol: ProtocolClient, account: int) -> list:
    return [e for e in all_events(protocol) if e.name == "StakeSlashed" and e.args["account"] == address(account)]


def _claims_of(protocol: ProtocolClient, account: int) -> list:
    return [e for e in all_events(protocol) if e.name == "SolverSharesClaimed" and e.args["solver"] == address(account)]
