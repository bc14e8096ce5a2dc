"""An idle node's JSON-RPC requests per new block on a chain that mines on its own, every second (issue 39).

    .venv/bin/python bench/rpc_budget_realtime.py [--blocks N]

bench/rpc_budget.py moves a driven devnet one block at a time once every node is idle, so its blocks come as fast as
the nodes are done: right for counting what a block costs, not for what an idle node costs per block of a real chain,
whose blocks come on a cadence whatever the nodes do. Here: a real anvil in real time, the contracts deployed, a run of
the tiny preset created with a start delay of `START_DELAY_S` (round 0 far ahead), then the chain switched to mining a
block every second (`evm_setIntervalMining`, the devnet's 1-second blocks), and the run's solver, verifier and
whistleblower started as processes through the CLI, each behind its own counting proxy (bench/rpc_budget.py
`CountingProxy`). Once every node reports on `/health` that it is idle (joined or registered, waiting for round 0),
`--blocks` blocks (default 30) are counted: each node's requests over them / the blocks.

The last line of output is one JSON object: `rpc_requests_per_node_per_block_idle_realtime` (the most of any node),
`idle_per_role`, `rpc_requests_by_method` (per block, summed over the nodes) and `seconds_per_block`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rpc_budget import (
    CREATOR,
    SOLVER,
    VERIFIER,
    WHISTLEBLOWER,
    CountingProxy,
    Node,
    close_nodes,
    counts,
    get_free_port,
    per_block,
    stake,
    start_nodes,
    subtract,
    wait_for,
)
from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from devnet.runs import create_run
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.corpus import load_corpus_shards
from protocol.adapters.http import make_node_app, serve_in_thread
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import write_manifest
from protocol.config import build_run_config
from protocol.constants import JUROR_MIN_STAKE
from protocol.hashing import hash_to_hex
from protocol.run_presets import ETH, TINY

START_DELAY_S = 900
"""Round 0 opens this long after the run's creation: the nodes wait, idle, through the whole measurement."""
BLOCK_S = 1
"""Seconds between blocks once the chain mines on its own (the devnet's block time, the manifest's `block_seconds`)."""


def measure(blocks: int, home: Path) -> dict:
    rules = TINY.with_run(max_rounds=1, start_delay=START_DELAY_S)
    corpus_manifest, shards = load_corpus_shards()
    with AnvilProcess() as anvil:
        manifest = deploy_protocol(ChainClient(anvil.rpc_url), get_devnet_account(CREATOR), build_contracts())
        write_manifest(home / "manifest.json", manifest)
        protocol = ProtocolClient(ChainClient(anvil.rpc_url, manifest))
        stake(protocol, rules.run.solver_min_stake, rules.run.verifier_min_stake + JUROR_MIN_STAKE)
        config = build_run_config(
            preset="tiny", run_seed="0x" + os.urandom(32).hex(), dataset_root=hash_to_hex(corpus_manifest.root)
        )
        store = LocalArtifactStore(home / "creator" / "artifacts")
        creator_server = serve_in_thread(make_node_app("creator", get_devnet_account(CREATOR).address, store))
        creator = get_devnet_account(CREATOR)
        run_id, _ = create_run(protocol, creator, store, config, corpus_manifest, shards, rules, 10 * ETH)
        protocol.chain.devnet_call("evm_setIntervalMining", [BLOCK_S])
        nodes = [
            Node(role, account, get_free_port(), CountingProxy(anvil.rpc_url))
            for role, account in (("solver", SOLVER), ("verifier", VERIFIER), ("whistleblower", WHISTLEBLOWER))
        ]
        urls = [creator_server.url] + [f"http://127.0.0.1:{n.port}" for n in nodes]
        (home / "peers.txt").write_text("\n".join(urls) + "\n")
        try:
            start_nodes(nodes, run_id, home)
            wait_for(lambda: all(n.idle_block() is not None for n in nodes), 300, "every node to be idle")
            start_head, start, started = protocol.chain.block_number(), counts(nodes), time.monotonic()
            wait_for(lambda: protocol.chain.block_number() >= start_head + blocks, 10 * blocks, f"{blocks} blocks")
            counted, elapsed = subtract(counts(nodes), start), time.monotonic() - started
            mined = protocol.chain.block_number() - start_head
            if not all(n.is_alive() for n in nodes):
                raise SystemExit(f"a node exited during the measurement; logs in {home}")
        finally:
            close_nodes(nodes)
            creator_server.stop()
    idle = per_block(counted, mined)
    methods: Counter[str] = Counter()
    for c in counted.values():
        methods.update(c)
    return {
        "rpc_requests_per_node_per_block_idle_realtime": max(idle.values()),
        "idle_per_role": idle,
        "rpc_requests_by_method": {m: round(n / mined, 3) for m, n in methods.most_common()},
        "blocks": mined,
        "seconds_per_block": round(elapsed / mined, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=30, help="blocks counted with every node idle (default 30)")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gradledger-rpc-realtime-") as tmp:
        result = measure(args.blocks, Path(tmp))
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
