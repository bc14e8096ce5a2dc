"""How long `gradledger audit` takes to read and check a 20-round run.

    python bench/audit.py [--rounds 20] [--preset tiny] [--reps 3] [--keep DIR]

Plays a run on a fresh anvil with the in-process solver and verifier nodes and devnet time travel
(sim/scripted.py): 3 solvers and 1 verifier, one solver cheating in round 1 (so the audit meets
a fail attestation and a slash), every round settled and its shares claimed. Then runs
`gradledger audit --run 1 --json FILE --html FILE` as its own process (default --threads 1 for
torch; the chain and the artifact reads use the other core), --reps times, and reports medians:

- audit_s: the audit itself, from the first RPC read to the last check (the report's `total`):
  events, block timestamps, public state and balances, artifacts, θ re-derivation of every round,
  loss of every θ, documents, checkpoints, shares, slashes, ETH -- split into read_chain_s,
  read_artifacts_and_rederive_s and checks_s;
- process_s: the command's wall time, Python start, imports and writing the reports included.

Target (issue 7): audit_s under 30 s on 2 cores. The last line printed is one JSON object; `audit_s_spread` is the
min, quartiles and max of audit_s over the repetitions (on a busy machine, the spread says how far the median holds).
The chain is driven through ChainClient (its devnet calls checked, big mining in bounded chunks: issue 38).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from protocol.adapters.execution_env import pin_execution_environment

pin_execution_environment()  # before torch loads: the execution profile's kernels (docs/determinism.md)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ is not installed: import it as `bench`

from bench.interleaved import compute_spread
from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.corpus import load_corpus_shards
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import write_manifest
from protocol.config import build_run_config
from protocol.hashing import hash_to_hex
from protocol.run_presets import TINY
from sim.scripted import start_scripted_run

RULES_WINDOWS = {"commit_window": 600, "attest_window": 500, "challenge_window": 260, "dispute_timeout": 120}
"""On the 1-second-block devnet: the attest window's first half ends within the seed block's 256-block horizon."""


def play(home: Path, rpc_url: str, rounds: int, preset: str) -> tuple[int, float]:
    """Deploy and play the run; returns (run id, seconds)."""
    manifest = deploy_protocol(ChainClient(rpc_url), get_devnet_account(0), build_contracts())
    write_manifest(home / "manifest.json", manifest)
    protocol = ProtocolClient(ChainClient(rpc_url, manifest))
    corpus = load_corpus_shards()
    config = build_run_config(preset=preset, run_seed="0x" + "3c" * 32, dataset_root=hash_to_hex(corpus[0].root))
    started = time.perf_counter()
    run = start_scripted_run(
        protocol,
        manifest,
        home,
        config,
        corpus,
        [1, 2, 3],
        [4],
        TINY.with_run(max_rounds=rounds, **RULES_WINDOWS),
        cheats={(3, 1): "noise-10pct"},
    )
    try:
        run.play()
    finally:
        run.close()
    return run.run_id, time.perf_counter() - started


def audit_once(home: Path, rpc_url: str, run_id: int, out: Path) -> dict:
    args = [
        "audit",
        "--run",
        str(run_id),
        "--home",
        str(home),
        "--rpc-url",
        rpc_url,
        "--json",
        str(out / "audit.json"),
        "--html",
        str(out / "audit.html"),
    ]
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gradledger", *args], capture_output=True, text=True, timeout=600)
    process_s = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"audit exited with {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    report = json.loads((out / "audit.json").read_text())
    return {"process_s": process_s, **{f"{k}_s": v for k, v in report["timings_s"].items()}, "report": report}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--preset", default="tiny", choices=("tiny", "default"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="keep the run's home (and reports) in this directory")
    args = parser.parse_args()
    home = args.keep or Path(tempfile.mkdtemp(prefix="gradledger-bench-audit-"))
    home.mkdir(parents=True, exist_ok=True)
    with AnvilProcess() as anvil:
        run_id, play_s = play(home, anvil.rpc_url, args.rounds, args.preset)
        print(f"played {args.rounds} rounds in {play_s:.1f} s", file=sys.stderr)
        samples = [audit_once(home, anvil.rpc_url, run_id, home / f"audit-{i}") for i in range(args.reps)]
    report = samples[-1]["report"]
    result = {
        "rounds": args.rounds,
        "preset": args.preset,
        "cores": os.cpu_count(),
        "audit_threads": 1,
        "commitments": sum(len(r["commitments"]) for r in report["rounds"]),
        "attestations": sum(len(r["attestations"]) for r in report["rounds"]),
        "slashed": len(report["slashed"]),
        "passed": report["passed"],
        "play_s": round(play_s, 1),
        "reps": args.reps,
    }
    for key in ("audit_s", "read_chain_s", "read_artifacts_and_rederive_s", "checks_s", "process_s"):
        source = "total_s" if key == "audit_s" else key
        result[key] = round(statistics.median(s[source] for s in samples), 2)
    result["audit_s_spread"] = compute_spread([s["total_s"] for s in samples]).as_json(2)
    result["under_30_s"] = result["audit_s"] < 30
    print(json.dumps(result))


if __name__ == "__main__":
    main()
