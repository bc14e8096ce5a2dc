"""The event index's cost per new block at round 10 and at round 1,000 of a 16-solver run, its catch-up, the fold.

    .venv/bin/python bench/index.py [--quick] [--rounds N] [--solvers S]

A scripted run (the contracts' events, field for field, as `tests/history_builder.RunEvents` writes them: deposits,
joins, 16 commitments, a seed, 16 attestations, 16 finalizations, a θ claim, the settlement and 32 share claims per
round, one block per step) of `--rounds` rounds (default 1,000; `--quick` 100) is fed block by block to the SQLite
`EventStore` that `protocol/adapters/event_index.py` keeps, as `EventIndex.sync` would after each new block: store the
block's events in one transaction, then read the run's events of that block back (an incremental reader asks only for
the blocks after those it has). Measured there, per block, the median over the blocks of round 10 and of the last
round: `per_block_ms_round_10`, `per_block_ms_round_1000` (named for the default; `rounds` says which round it is).
No chain is involved in that part: the RPC side of a sync is one `eth_getLogs` span per new block whatever the run's
length (tests/adapters/test_event_index.py counts it), and what is measured is what grows with the run.

Also measured, on the whole run: `catch_up_s`, an empty index filled in spans of 2,000 blocks (a node, the explorer or
the audit starting late) and read back; `audit_s`, the chain half of `gradledger audit` over the indexed events (fold
the run's history, the ledger of ETH, the run's status; artifacts and replays are not part of it); and
`fold_per_block_ms_round_10` / `fold_per_block_ms_round_1000`, a kept `HistoryFolder` fed one block and frozen, which
is what the money watch does on each new block (`node/money_watch.py`), against `fold_ms_round_10` /
`fold_ms_last_round`, one full fold of the history at those rounds, what it did before.

At the end, `bench/rpc_budget_realtime.py` and `bench/rpc_budget.py` run in processes of their own (a real anvil, a
solver, a verifier and a whistleblower as processes, each behind a counting JSON-RPC proxy) and their figures are
copied: `rpc_requests_per_node_per_block` (an idle node's requests per new block of a chain that mines every second,
everything counted, the most of any node), `rpc_requests_per_node_per_block_driven` (the same on the driven devnet,
whose blocks come as soon as the nodes are idle), `rpc_requests_per_node_per_block_without_head_polls` and
`rpc_requests_per_node_per_block_round` (over a whole round, driven); `--no-rpc-budget` leaves them out.

The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # bench/ is not installed; the scripted events come from the tests' builder

from protocol.adapters.event_index import EventStore
from protocol.finality import ReadProgress
from protocol.history.events import ChainEvent
from protocol.history.fold import HistoryFolder, fold_run_history
from protocol.history.status import get_run_status
from protocol.ledger import compute_ledger
from protocol.money_events import compute_money_report
from protocol.money_reporter import MoneyReporter
from tests.history_builder import RunEvents
from tests.history_events import ETH, VERIFIER, time_of

SPAN_BLOCKS = 2000
"""Blocks per catch-up span: `ChainClient.get_events`'s chunk."""


def solver_address(i: int) -> str:
    return "0x" + f"{0x5000 + i:040x}"


def play(rounds: int, solvers: int) -> RunEvents:
    """A run of `rounds` rounds in which every one of `solvers` solvers commits, is attested pass and is paid."""
    ev = RunEvents(maxRounds=rounds)
    accounts = [solver_address(i) for i in range(solvers)]
    for account in accounts:
        ev.deposit(account, 1)
    ev.deposit(VERIFIER, 2, 10 * ETH * solvers)
    ev.create()
    for account in accounts:
        ev.join(account)
    ev.register(VERIFIER)
    for r in range(rounds):
        for account in accounts:
            ev.commit(r, account)
        ev.seed(r)
        for account in accounts:
            ev.attest(r, account)
        for account in accounts:
            ev.finalize(r, account)
        ev.claim_theta(r, claimer=accounts[0])
        ev.settle(r, claimer=accounts[0])
        for account in accounts:
            ev.claim_solver(r, account, 50 * ETH)
            ev.claim_verifier(r, account, 9 * ETH)
    return ev


def round_of_blocks(events: list[ChainEvent]) -> dict[int, int]:
    """Block -> the round open when it was mined (RoundStarted moves it on)."""
    out, current = {}, 0
    for e in events:
        if e.name == "RoundStarted":
            current = e.args["round"]
        out[e.block_number] = current
    return out


def measure_per_block(events: list[ChainEvent], path: Path) -> dict[int, list[float]]:
    """Feed the events block by block; the ms each block's store + incremental read took, by round."""
    by_block: dict[int, list[ChainEvent]] = defaultdict(list)
    for e in events:
        by_block[e.block_number].append(e)
    rounds = round_of_blocks(events)
    first = min(by_block)
    store = EventStore(path, "bench", first)
    progress = ReadProgress.starting_at(first)
    out: dict[int, list[float]] = defaultdict(list)
    for block in sorted(by_block):
        new = by_block[block]
        start = time.perf_counter()
        progress = ReadProgress(first, block + 1, ())
        store.store(new, {block: time_of(block)}, progress)
        got = store.events(run_id=1, from_block=block)
        out[rounds[block]].append((time.perf_counter() - start) * 1000)
        if len(got) != sum(1 for e in new if e.contract != "StakeManager"):
            raise SystemExit(f"block {block}: read back {len(got)} events of the run")
    store.close()
    return out


def measure_catch_up(events: list[ChainEvent], path: Path) -> float:
    first, last = events[0].block_number, events[-1].block_number
    start = time.perf_counter()
    store = EventStore(path, "bench", first)
    for lo in range(first, last + 1, SPAN_BLOCKS):
        span = [e for e in events if lo <= e.block_number < lo + SPAN_BLOCKS]
        times = {e.block_number: time_of(e.block_number) for e in span}
        store.store(span, times, ReadProgress(first, lo + SPAN_BLOCKS, ()))
    read = store.events(run_id=1)
    store.close()
    if len(read) != sum(1 for e in events if e.contract != "StakeManager"):
        raise SystemExit("the caught-up index lost events")
    return time.perf_counter() - start


def measure_incremental_fold(events: list[ChainEvent], wanted: set[int]) -> tuple[dict[int, list[float]], ...]:
    """Per block of the rounds in `wanted`: the ms to fold that block's events into a kept `HistoryFolder` and freeze
    the history, and the ms of the whole money watch's work on that block (node/money_watch.py without its RPC: the
    fold, the freeze and the verifier's kept `MoneyReporter` updated, the account with the most money events: an
    attestation per solver per round)."""
    by_block: dict[int, list[ChainEvent]] = defaultdict(list)
    for e in events:
        by_block[e.block_number].append(e)
    rounds = round_of_blocks(events)
    folder, reporter, times = HistoryFolder(1), MoneyReporter(1, VERIFIER), {}
    fold_ms: dict[int, list[float]] = defaultdict(list)
    watch_ms: dict[int, list[float]] = defaultdict(list)
    for block in sorted(by_block):
        start = time.perf_counter()
        times[block] = time_of(block)
        folder.add(by_block[block], {block: times[block]})
        if folder.state.created is None:
            continue  # deposits before the run exists: nothing to freeze yet
        history = folder.history()
        folded = time.perf_counter()
        reporter.update(by_block[block], times, history, {}, (), times[block])
        if rounds[block] in wanted:
            fold_ms[rounds[block]].append((folded - start) * 1000)
            watch_ms[rounds[block]].append((time.perf_counter() - start) * 1000)
    report = reporter.report()
    start = time.perf_counter()
    full = compute_money_report(events, 1, VERIFIER, times, (), time_of(events[-1].block_number), history)
    full_ms = (time.perf_counter() - start) * 1000
    if report != full:
        raise SystemExit("the kept money report differs from the full one")
    return fold_ms, watch_ms, {0: [full_ms]}


def measure_fold_ms(events: list[ChainEvent], upto_round: int) -> float:
    rounds = round_of_blocks(events)
    prefix = [e for e in events if rounds[e.block_number] <= upto_round]
    start = time.perf_counter()
    fold_run_history(prefix, 1)
    return (time.perf_counter() - start) * 1000


def _run_bench(script: str, *argv: str) -> dict:
    """The last line of a bench script run in a process of its own (it starts anvil and node processes)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *argv], capture_output=True, text=True, timeout=3600
    )
    if done.returncode != 0:
        raise SystemExit(f"bench/{script} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_rpc_budget(quick: bool) -> dict[str, float]:
    """The RPC budget's figures: an idle node on a chain that mines every second (bench/rpc_budget_realtime.py), and
    a driven chain's idle stretch and whole round (bench/rpc_budget.py)."""
    realtime = _run_bench("rpc_budget_realtime.py", "--blocks", "20" if quick else "60")
    budget = _run_bench("rpc_budget.py", *(["--quick"] if quick else []))
    return {
        "rpc_requests_per_node_per_block": realtime["rpc_requests_per_node_per_block_idle_realtime"],
        "rpc_requests_per_node_per_block_driven": budget["rpc_requests_per_node_per_block_idle"],
        "rpc_requests_per_node_per_block_without_head_polls": max(budget["idle_per_role_without_head_polls"].values()),
        "rpc_requests_per_node_per_block_round": budget["rpc_requests_per_node_per_block_round"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 rounds instead of 1,000")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of the scripted run (default 1000)")
    parser.add_argument("--solvers", type=int, default=16, help="solvers of the scripted run")
    parser.add_argument("--no-rpc-budget", action="store_true", help="skip bench/rpc_budget.py (anvil and 3 nodes)")
    args = parser.parse_args()
    rounds = args.rounds or (100 if args.quick else 1000)
    started = time.perf_counter()
    events = play(rounds, args.solvers).events
    play_s = time.perf_counter() - started
    print(f"scripted {rounds} rounds x {args.solvers} solvers: {len(events):,} events in {play_s:.1f} s", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        per_round = measure_per_block(events, Path(tmp) / "follow.sqlite")
        catch_up_s = measure_catch_up(events, Path(tmp) / "catch-up.sqlite")
        reader = EventStore(Path(tmp) / "catch-up.sqlite", "bench", events[0].block_number)
        start = time.perf_counter()
        indexed = reader.events(run_id=1)
        history = fold_run_history(indexed, 1, reader.timestamps())
        compute_ledger(reader.events())
        status = get_run_status(history, time_of(events[-1].block_number))
        audit_s = time.perf_counter() - start
        if status.current_round != rounds or sum(r.accepted for r in status.rounds) != rounds * args.solvers:
            raise SystemExit(f"the fold of the indexed run is wrong: {status.current_round} rounds")
    early, last = min(10, rounds - 1), rounds - 1
    incremental, watch, full_report = measure_incremental_fold(events, {early, last})
    result = {
        "rounds": rounds,
        "solvers": args.solvers,
        "events": len(events),
        "last_round": last,
        "per_block_ms_round_10": round(statistics.median(per_round[early]), 4),
        "per_block_ms_round_1000": round(statistics.median(per_round[last]), 4),
        "per_block_ratio": round(statistics.median(per_round[last]) / statistics.median(per_round[early]), 3),
        "per_block_ms_spread_last_round": [round(min(per_round[last]), 4), round(max(per_round[last]), 4)],
        "catch_up_s": round(catch_up_s, 2),
        "audit_s": round(audit_s, 2),
        "fold_per_block_ms_round_10": round(statistics.median(incremental[early]), 3),
        "fold_per_block_ms_round_1000": round(statistics.median(incremental[last]), 3),
        "money_watch_per_block_ms_round_10": round(statistics.median(watch[early]), 3),
        "money_watch_per_block_ms_round_1000": round(statistics.median(watch[last]), 3),
        "money_watch_per_block_ratio": round(statistics.median(watch[last]) / statistics.median(watch[early]), 3),
        "money_report_full_ms_last_round": round(full_report[0][0], 2),
        "fold_ms_round_10": round(measure_fold_ms(events, early), 2),
        "fold_ms_last_round": round(measure_fold_ms(events, last), 2),
    }
    if not args.no_rpc_budget:
        result.update(measure_rpc_budget(args.quick))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
