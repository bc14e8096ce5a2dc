"""Write the cross-language test vectors that pytest and forge both read.

    python -m tests.vectors.generate          # rewrite tests/vectors/*.json (`make vectors`, with generate_bls)
    python -m tests.vectors.generate --check  # exit 1 if the files are stale

The vectors are built from fixed inputs with the Python implementation; forge checks that
Solidity computes the same leaves, roots, proofs, seeds, seat seeds, seat verifier draws and
samples, plant chains and plant draws, and that createRun accepts and refuses the same windows for a
chain's block time (windows.json, contracts/test/Windows.t.sol), and pytest checks that
the committed files equal what Python produces now. Together they keep the two languages from
drifting apart. It also regenerates the one file set whose source is Solidity: the contracts' constants and enums
(protocol/contract_constants.py and constants.json, tests/vectors/generate_constants.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from protocol.hashing import hash_to_hex, keccak256
from protocol.merkle import SegmentLeaf, build_merkle_tree, compute_leaf_hash, get_merkle_proof_at
from protocol.planting import (
    compute_chain_seed,
    compute_plant_draw,
    compute_secret_chain,
    get_plant_anchor,
    get_reveal_end,
    get_round_secret,
    is_in_reveal_window,
    is_reveal_overdue,
)
from protocol.sampling import (
    compute_sampled_segments,
    compute_sampling_seed,
    compute_seat_seed,
    compute_seat_verifier_indices,
)
from protocol.types import RoundTimes
from protocol.windows import (
    get_attest_window_bounds,
    get_block_time_problem,
    get_challenge_window_problem,
    get_shortest_challenge_window,
)
from tests.vectors import generate_constants

VECTORS_DIR = Path(__file__).resolve().parent
TREE_SIZES = (1, 2, 3, 5, 8)
SOLVERS = (
    "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
)
SEAT_SLOTS = (0, 1, 2, 7)
SEAT_VERIFIER_COUNTS = (1, 3, 30, 256)
WINDOW_BLOCK_SECONDS = (1, 2, 5, 12, 60)
NAMED_WINDOWS = (  # (commit, attest): the presets and the tests' windows (docs/contracts.md, "Windows and block time")
    (3600, 1800),  # protocol.run_presets.PRODUCTION
    (20, 12),  # protocol.run_presets.DEMO
    (45, 35),  # protocol.run_presets.ADVERSARIAL
    (60, 60),  # gradledger.plant_scenario.PLANT_RULES
    (20, 15),  # protocol.run_presets.TINY and DEFAULT (`gradledger run create`'s default)
    (300, 300),  # tests' driven-devnet windows
    (600, 600),  # a window whose attest half outlasts 256 one-second blocks
    (3600, 3600),  # the forge Fixture's windows
    (0, 100),  # not positive
    (100, 0),
)


def _h(label: str) -> bytes:
    return keccak256(label.encode())


def build_merkle_vectors() -> dict:
    trees = []
    for size in TREE_SIZES:
        run_id, round_index, solver = 7 + size, 3 * size, SOLVERS[size % 2]
        leaves = [
            SegmentLeaf(
                run_id=run_id,
                round=round_index,
                solver=solver,
                index=i,
                start_hash=_h(f"state {size}/{i}"),
                end_hash=_h(f"state {size}/{i + 1}"),
                sketch_hash=_h(f"sketch {size}/{i}"),
                tokens=4096 * (i + 1),
            )
            for i in range(size)
        ]
        hashes = [compute_leaf_hash(leaf) for leaf in leaves]
        tree = build_merkle_tree(hashes)
        trees.append(
            {
                "count": size,
                "leaves": [
                    {
                        "runId": leaf.run_id,
                        "round": leaf.round,
                        "solver": leaf.solver,
                        "index": leaf.index,
                        "startHash": hash_to_hex(leaf.start_hash),
                        "endHash": hash_to_hex(leaf.end_hash),
                        "sketchHash": hash_to_hex(leaf.sketch_hash),
                        "tokens": leaf.tokens,
                    }
                    for leaf in leaves
                ],
                "leafHashes": [hash_to_hex(h) for h in hashes],
                "root": hash_to_hex(tree.root),
                "proofs": [[hash_to_hex(p) for p in get_merkle_proof_at(tree, i)] for i in range(size)],
            }
        )
    return {"treeCount": len(trees), "trees": trees}


def build_sampling_vectors() -> dict:
    cases = []
    for i, (num_segments, samples) in enumerate(((1, 1), (5, 3), (10, 4), (1000, 16))):
        block_hash = _h(f"block {i}")
        run_id, round_index, solver = 1 + i, 2 * i, SOLVERS[i % 2]
        seed = compute_sampling_seed(block_hash, run_id, round_index, solver)
        cases.append(
            {
                "blockHash": hash_to_hex(block_hash),
                "runId": run_id,
                "round": round_index,
                "solver": solver,
                "seed": hash_to_hex(seed),
                "numSegments": num_segments,
                "samples": list(compute_sampled_segments(seed, num_segments, samples)),
            }
        )
    seat_cases = []
    for i, (num_segments, samples) in enumerate(((8, 4), (10, 4), (1000, 8))):
        # on chain the seed base is a block hash cut to 12 bytes and zero-padded; case 0 uses that form
        block_hash = _h(f"seat block {i}")
        if i == 0:
            block_hash = block_hash[:12] + bytes(20)
        run_id, round_index, solver = 3 + i, 5 * i, SOLVERS[i % 2]
        seed = compute_sampling_seed(block_hash, run_id, round_index, solver)
        for slot in SEAT_SLOTS:
            seat_seed = compute_seat_seed(seed, slot)
            seat_cases.append(
                {
                    "blockHash": hash_to_hex(block_hash),
                    "runId": run_id,
                    "round": round_index,
                    "solver": solver,
                    "seed": hash_to_hex(seed),
                    "slot": slot,
                    "seatSeed": hash_to_hex(seat_seed),
                    "verifierCounts": list(SEAT_VERIFIER_COUNTS),
                    # seat `slot`'s verifier index for each count (0 where the list is too short for the seat)
                    "verifierIndices": [
                        compute_seat_verifier_indices(seed, slot + 1, n)[slot] if slot < n else 0
                        for n in SEAT_VERIFIER_COUNTS
                    ],
                    "numSegments": num_segments,
                    "samples": list(compute_sampled_segments(seat_seed, num_segments, samples)),
                }
            )
    return {"caseCount": len(cases), "cases": cases, "seatCaseCount": len(seat_cases), "seatCases": seat_cases}


def build_planting_vectors() -> dict:
    """A solver's chain of round secrets and plant draws (protocol/planting.py = libraries/Planting.sol)."""
    max_rounds = 6
    chain = compute_secret_chain(compute_chain_seed(_h("account key"), 4), max_rounds)
    secrets = [hash_to_hex(get_round_secret(chain, r)) for r in range(max_rounds)]
    draws = []
    for i, r in enumerate((2, 3, 5)):
        base = _h(f"seed base {i}")[:12] + bytes(20)  # on chain a seed base is 12 bytes, zero-padded
        solver = SOLVERS[i % 2]
        secret = get_round_secret(chain, r)
        draws.append(
            {
                "round": r,
                "runId": 4,
                "solver": solver,
                "secret": hash_to_hex(secret),
                "previousSeedBase": hash_to_hex(base),
                "draw": compute_plant_draw(secret, 4, r, solver, base),
            }
        )
    windows = [_reveal_window_case(attest_end, challenge_end) for attest_end, challenge_end in REVEAL_WINDOWS]
    return {
        "maxRounds": max_rounds,
        "anchor": hash_to_hex(get_plant_anchor(chain)),
        "secrets": secrets,
        "drawCount": len(draws),
        "draws": draws,
        "revealWindowCount": len(windows),
        "revealWindows": windows,
    }


REVEAL_WINDOWS = (  # (attestEnd, challengeEnd): empty, odd and even challenge windows, preset lengths, large times
    (1000, 1000),
    (1000, 1001),
    (1000, 1003),
    (1000, 1060),
    (1_700_000_000, 1_700_003_600),  # a production-length challenge window
    (4_000_000_000, 4_000_000_061),  # past uint32 seconds (2106)
)


def _reveal_window_case(attest_end: int, challenge_end: int) -> dict:
    """A round's reveal window (protocol.planting = Plants._revealEnd) and whether a reveal counts, or a missing one
    can be reported, at each boundary: one second before the window, its first and last second, its end and the
    challenge window's end."""
    end = get_reveal_end(attest_end, challenge_end)
    times = RoundTimes(0, 0, 0, attest_end, challenge_end, False)
    probes = sorted({attest_end - 1, attest_end, max(end - 1, attest_end), end, challenge_end})
    return {
        "attestEnd": attest_end,
        "challengeEnd": challenge_end,
        "revealEnd": end,
        "probeCount": len(probes),
        "probes": [
            {"now": now, "open": is_in_reveal_window(times, now), "overdue": is_reveal_overdue(times, now)}
            for now in probes
        ],
    }


def build_windows_vectors() -> dict:
    """Windows against block times: each rule's boundary on both sides, and the named windows on every block time."""
    pairs: list[tuple[int, int, int]] = []
    for t in WINDOW_BLOCK_SECONDS:
        for commit in sorted({max(2 * t - 1, 1), 2 * t, 2 * t + 1, 7 * t - 1, 300, 3600}):
            if commit < 2 * t:
                pairs.append((t, commit, 1000))
                continue
            shortest, longest = get_attest_window_bounds(commit, t)
            for attest in (shortest - 1, shortest, longest, longest + 1):
                if attest > 0:
                    pairs.append((t, commit, attest))
        pairs += [(t, commit, attest) for commit, attest in NAMED_WINDOWS]
    cases = []
    for t, commit, attest in dict.fromkeys(pairs):  # first occurrence of each, in order
        reason = get_block_time_problem(commit, attest, t)
        cases.append(
            {
                "blockSeconds": t,
                "commitWindow": commit,
                "attestWindow": attest,
                "accepted": reason is None,
                "reason": reason or "",
            }
        )
    challenge_cases = []
    for t in WINDOW_BLOCK_SECONDS:
        for attest in (4 * t, 4 * t + 1, 300, 1800):
            if get_block_time_problem(2 * t, attest, t) is not None:
                continue  # refused before the challenge window is looked at
            shortest = get_shortest_challenge_window(attest, t)
            for challenge in (shortest - 1, shortest, shortest + 1):
                reason = get_challenge_window_problem(attest, challenge, t)
                challenge_cases.append(
                    {"blockSeconds": t, "commitWindow": 2 * t, "attestWindow": attest, "challengeWindow": challenge,
                     "accepted": reason is None, "reason": reason or ""}
                )  # fmt: skip
    return {"caseCount": len(cases), "blockSecondsCount": len(WINDOW_BLOCK_SECONDS),
            "blockSeconds": list(WINDOW_BLOCK_SECONDS), "cases": cases,
            "challengeCaseCount": len(challenge_cases), "challengeCases": challenge_cases}  # fmt: skip


def render_all() -> dict[str, str]:
    """File name -> exact JSON text."""
    return {
        "merkle.json": json.dumps(build_merkle_vectors(), indent=1) + "\n",
        "sampling.json": json.dumps(build_sampling_vectors(), indent=1) + "\n",
        "planting.json": json.dumps(build_planting_vectors(), indent=1) + "\n",
        "windows.json": json.dumps(build_windows_vectors(), indent=1) + "\n",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the files are current")
    args = parser.parse_args()
    stale = []
    for name, text in render_all().items():
        path = VECTORS_DIR / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if args.check:
        stale += generate_constants.get_stale_files()
    else:
        for path, text in generate_constants.render_all().items():
            path.write_text(text)
    if stale:
        print(f"stale vectors: {', '.join(stale)}; run: python -m tests.vectors.generate", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
