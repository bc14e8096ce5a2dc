"""A run with a start delay on a real anvil: round 0 starts `startDelay` seconds after createRun.

Without a delay round 0 starts when the run is created, so a node started afterwards misses (part of) it and nobody
can do anything before round 0. Here: solvers join during the delay, `commit` is refused with RoundNotStarted before
the start and accepted after it (and before the seed block, counted from the creation block); node processes started
only after the run was created all make round 0, waiting for the start without a commit attempt or a missed window;
and `gradledger run create --start-delay` sets the delay, prints it, and refuses one above MAX_START_DELAY before any
transaction. The devnet is the tests' driven one (tests/clock.py): one second per block, time moved by the test or the
ClockDriver, never by sleeping.
"""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from protocol.adapters.chain import ContractRevertError
from protocol.adapters.keys import get_devnet_account
from protocol.constants import MAX_START_DELAY
from protocol.hashing import Hash32
from protocol.history.fold import fold_run_history, get_round_phase
from protocol.types import Commitment, RunTerms, to_snake_case
from protocol.windows import START_DELAY_TOO_LONG
from tests.chain_fixtures import FAST_RULES, events_of, prepare_run, read_log, start_node, stop, wait_until
from tests.cli_in_process import run_cli

DELAY = 120
"""Chain seconds between the run's creation and round 0's start: more than the transactions nodes send while
starting (joins, registrations, announcements), each a second on the driven devnet."""
SOLVERS, VERIFIER = [14, 15], 16
COMMITMENT = Commitment(Hash32(b"\x5d" * 32), Hash32(b"\xde" * 32), 64)


def _timestamp(protocol, block: int) -> int:
    return int(protocol.chain.get_block(block)["timestamp"])


def test_run_terms_follow_the_create_run_abi(deployment):
    """RunTerms.to_abi is positional: its fields are RunConfig's, in the ABI's order, startDelay last."""
    abi = deployment.protocol.chain.manifest.contracts["RunRegistry"].abi
    create = next(item for item in abi if item.get("name") == "createRun")
    names = [to_snake_case(c["name"]) for c in create["inputs"][0]["components"]]
    assert names == [f.name for f in fields(RunTerms)] and names[-1] == "start_delay"


def test_a_delayed_run_refuses_commits_before_its_start_and_accepts_them_after(deployment, corpus, tmp_path):
    rules = FAST_RULES.with_run(start_delay=DELAY)
    setup = prepare_run(deployment, corpus, tmp_path / "home", SOLVERS, [], rules)
    protocol, chain, run_id = setup.protocol, setup.protocol.chain, setup.run_id
    setup.create(wait_for_nodes=False)

    created = events_of(protocol, "RunCreated", run_id)[0]
    created_at = _timestamp(protocol, created.block_number)
    times = protocol.round_times(run_id)
    assert times.round == 0 and times.start == created_at + DELAY, "roundTimes reports the future start"
    assert times.commit_end == times.start + rules.run.commit_window
    assert times.open_end == times.commit_end + rules.run.attest_window // 2
    # 1-second blocks: the seed block is counted from the creation block, past the delay and the commit window
    assert times.seed_block == created.block_number + DELAY + rules.run.commit_window
    assert [(e.args["round"], e.args["start"]) for e in events_of(protocol, "RoundStarted", run_id)] == [
        (0, times.start)
    ]
    assert events_of(protocol, "RunCreated", run_id)[0].args["config"]["startDelay"] == DELAY

    # the solvers join during the delay; a commitment is refused until the start
    for index in SOLVERS:
        protocol.join_run(get_devnet_account(index), run_id)
    solver = get_devnet_account(SOLVERS[0])
    with pytest.raises(ContractRevertError) as refused:
        protocol.commit(solver, run_id, 0, COMMITMENT)
    assert (refused.value.error, refused.value.args_) == ("RoundNotStarted", {"start": times.start})
    assert _timestamp(protocol, chain.block_number()) < times.start
    assert not protocol.has_committed(run_id, 0, solver.address)

    # time reaches the start (a block a second): the commitment lands inside the window, before the seed block
    chain.mine_blocks(times.start - _timestamp(protocol, chain.block_number()))
    committed = protocol.commit(solver, run_id, 0, COMMITMENT)
    assert times.start <= _timestamp(protocol, committed.block_number) < times.commit_end
    assert committed.block_number < times.seed_block
    assert protocol.has_committed(run_id, 0, solver.address)

    # the history reads round 0's start from RoundStarted, not from the creation block
    events = chain.get_events(created.block_number)
    history = fold_run_history(events, run_id, chain.get_block_timestamps({e.block_number for e in events}))
    assert history.created_time == created_at and history.rounds[0].start_time == times.start
    assert get_round_phase(history, 0, created_at) == "start delay"
    joins = events_of(protocol, "SolverJoined", run_id)
    assert len(joins) == 2 and all(_timestamp(protocol, e.block_number) < times.start for e in joins)


def test_run_create_start_delay_is_set_printed_and_bounded(deployment, tmp_path):
    """`run create` in the test's process (tests/cli_in_process.py): no node runs, so no process is started."""
    protocol = deployment.protocol
    home = tmp_path / "home"
    home.mkdir()
    (home / "manifest.json").write_text(deployment.manifest_path.read_text())
    where = ["--home", str(home), "--rpc-url", protocol.chain.rpc_url]
    creator = get_devnet_account(0).address
    runs, nonce = protocol.chain.call("RunRegistry", "runCount"), protocol.chain.w3.eth.get_transaction_count(creator)

    too_long = run_cli("run", "create", "--preset", "tiny", "--start-delay", str(MAX_START_DELAY + 1), *where)
    message = " ".join(too_long.stderr.split())
    assert too_long.returncode == 1 and "Traceback" not in too_long.stderr, too_long
    assert f'InvalidConfig("{START_DELAY_TOO_LONG}")' in message, message
    assert f"pass --start-delay {MAX_START_DELAY} or less" in message, message
    assert protocol.chain.call("RunRegistry", "runCount") == runs, "no run was created"
    assert protocol.chain.w3.eth.get_transaction_count(creator) == nonce, "the creator sent no transaction"

    created = run_cli("run", "create", "--preset", "tiny", "--force", "--json", "--start-delay", str(DELAY), *where)
    assert created.returncode == 0, created.stderr[-3000:]
    out = json.loads(created.stdout.strip().splitlines()[-1])
    block = events_of(protocol, "RunCreated", out["run_id"])[0].block_number
    assert out["start_delay_s"] == DELAY
    assert out["round0_start"] == protocol.round_times(out["run_id"]).start == _timestamp(protocol, block) + DELAY


@pytest.mark.e2e
def test_nodes_started_after_a_delayed_run_is_created_make_round_zero(deployment, corpus, tmp_path):
    """The run is created before any node runs; 2 solvers and a verifier start afterwards, join and register during
    the delay, wait for the start (the ClockDriver moves time to it once they are idle), and play round 0."""
    rules = FAST_RULES.with_run(max_rounds=1, start_delay=DELAY)
    setup = prepare_run(deployment, corpus, tmp_path / "home", SOLVERS, [VERIFIER], rules)
    protocol, run_id = setup.protocol, setup.run_id
    setup.create(wait_for_nodes=False)
    start = protocol.round_times(run_id).start
    nodes = [
        (SOLVERS[0], start_node(setup, "solver", SOLVERS[0], "--coordinator")),
        (SOLVERS[1], start_node(setup, "solver", SOLVERS[1])),
        (VERIFIER, start_node(setup, "verifier", VERIFIER, "--exit-when-done")),
    ]
    try:
        with setup.drive(lambda: [(setup.ports[account], process) for account, process in nodes]):
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
            wait_until(lambda: all(p.poll() is not None for _, p in nodes), 300, "every node to exit")
    finally:
        for _, process in nodes:
            stop(process)
    logs = {account: read_log(setup, "verifier" if account == VERIFIER else "solver", account) for account, _ in nodes}
    assert all(p.returncode == 0 for _, p in nodes), logs

    joined = events_of(protocol, "SolverJoined", run_id)
    registered = events_of(protocol, "VerifierRegistered", run_id)
    assert len(joined) == 2 and len(registered) == 1
    assert all(_timestamp(protocol, e.block_number) < start for e in [*joined, *registered]), "joined in the delay"
    committed = events_of(protocol, "Committed", run_id)
    solvers = {get_devnet_account(i).address for i in SOLVERS}
    assert {(e.args["round"], e.args["solver"]) for e in committed} == {(0, s) for s in solvers}, logs
    assert all(_timestamp(protocol, e.block_number) >= start for e in committed)
    assert [e.args["round"] for e in events_of(protocol, "RoundSettled", run_id)] == [0]
    assert events_of(protocol, "PassAttested", run_id) and not events_of(protocol, "FailAttested", run_id)
    for log in logs.values():  # waited for the start: never sent a commit early, never counted a miss or sat out
        for early in ("RoundNotStarted", "missed round", "money: missed", "joining the next round"):
            assert early not in log, (early, log[-3000:])
