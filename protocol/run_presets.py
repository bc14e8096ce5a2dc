"""The named run terms: values of `CreationTerms` that tests, demos, benchmarks and `gradledger run create --preset`
create runs with (issue 38: presets are policy, so they live in protocol/, not in devnet plumbing).

Each preset is unbound (zero hashes: `RunTerms.bind` fixes them at creation). A preset that fixes H and k (demo,
adversarial, default, production) is priced at that round length by bench/economics.py, and a training config of
another H or k is refused when the run is created (`RunTerms.get_training_steps`); `tiny` leaves them to the config.
"""

from __future__ import annotations

import difflib

from protocol.run_terms import CreationTerms, PlantTerms, RunTerms, TermsError

__all__ = ["ADVERSARIAL", "DEFAULT", "DEMO", "ETH", "PRESETS", "PRODUCTION", "TINY", "get_preset"]

ETH = 10**18

TINY = CreationTerms(
    RunTerms(
        samples_per_commitment=2, verifiers_per_commitment=1, jury_size=3, commit_window=20, attest_window=15,
        challenge_window=10, dispute_timeout=60, solver_min_stake=10 * ETH, verifier_min_stake=10 * ETH,
        attestation_bond=ETH, challenge_bond=2 * ETH, solver_share_bps=8000, verifier_share_bps=1500,
        juror_share_bps=500, shares_per_round=1000 * ETH, revenue_release_period=3600, max_rounds=3, start_delay=0,
    ),
    PlantTerms(rate_bps=0, jackpot=ETH, penalty=5 * ETH),
    plant_pool=20 * ETH,
)  # fmt: skip
"""The tests' scripted runs (sim/scripted.py, tests/chain_fixtures.py): 3 rounds, one seat of 2 samples, juries of 3,
windows of 20/15/10 s for a 1-second devnet, H and k left to the training config. Planting off (rate 0); its jackpot,
penalty and pool are what a test that turns planting on (`TINY.with_plant(rate_bps=...)`) starts from. No start delay:
round 0 starts at creation."""

DEFAULT = TINY.with_run(inner_steps=20, steps_per_segment=5)
"""What `gradledger run create` creates without --preset: the tiny terms at H=20, k=5, the round length its windows
of 20/15/10 s were sized for on a 1-second devnet (the default model)."""

DEMO = TINY.with_run(
    inner_steps=20, steps_per_segment=5, samples_per_commitment=1, attest_window=12, challenge_bond=6 * ETH,
    start_delay=45,
).with_plant(rate_bps=1000)  # fmt: skip
"""`gradledger demo` (3 solvers, 2 verifiers, 3 rounds of H=20, k=5). One sample per seat: with two, a verifier
replaying only one of them profits (docs/economics.md, issue 37). Planting on (docs/economics.md): a solver's
commitment is planted with probability 10%; the reveal window is the first half of the challenge window. Round 0 starts
45 s after createRun: the plant terms are set before the start, so every round can be planted, from round 0, for the
solvers that anchor before it (a pass is never publicly safe without a replay), and the demo starts its nodes before it
creates the run, so 45 s covers their join and anchor on a busy 2-core machine (a solver that anchors later is unpaid
in its first two rounds)."""

ADVERSARIAL = TINY.with_run(
    inner_steps=20, steps_per_segment=5, samples_per_commitment=1, verifiers_per_commitment=2, commit_window=45,
    attest_window=35, challenge_window=25, dispute_timeout=90, challenge_bond=6 * ETH, start_delay=60,
).with_plant(rate_bps=1000)  # fmt: skip
"""`gradledger demo --adversarial`: windows sized for 8 node processes sharing 2 CPU cores: every verifier and the
whistleblower must replay its samples of the default model inside the attest and challenge windows. Round 0 starts 60 s
after createRun, so the plant terms are set before the start and every round can be planted from round 0 for the
solvers that anchor before it (docs/economics.md): the nodes start before the run is created, and 60 s covers all of
them joining and anchoring on 2 busy cores (a solver that anchors later is unpaid in its first two rounds)."""

PRODUCTION = CreationTerms(
    RunTerms(
        inner_steps=500, steps_per_segment=10, samples_per_commitment=1, verifiers_per_commitment=3, jury_size=15,
        commit_window=3600, attest_window=1800, challenge_window=1800, dispute_timeout=3600,
        solver_min_stake=200 * ETH, verifier_min_stake=10 * ETH, attestation_bond=ETH, challenge_bond=2 * ETH,
        solver_share_bps=8000, verifier_share_bps=1500, juror_share_bps=500, shares_per_round=1000 * ETH,
        revenue_release_period=3600, max_rounds=1000, start_delay=3600,
    ),
    PlantTerms(rate_bps=100, jackpot=ETH // 50, penalty=5 * ETH),
    plant_pool=10 * ETH,
)  # fmt: skip
"""The documented production preset (docs/economics.md): 3 seats of 1 sample, a 200 ETH solver stake, juries of 15,
1% of commitments planted with a 0.02 ETH jackpot and a 5 ETH penalty, for rounds of H=500 inner steps in segments of
k=10. bench/economics.py prices every strategy under it with nobody paid to watch (the seats replay 6% of the training
compute; docs/economics.md says which rows only a rule change fixes). Round 0 starts an hour after createRun: the plant
terms are set before the start, so every round can be planted from round 0 for the solvers that anchor in that hour (no
round is publicly safe for a lazy pass), and an hour lets solvers that see the run created join and anchor; one that
anchors later is unpaid in its first two rounds. Its windows need a chain of 4-second blocks or longer
(`deploy --block-seconds`, e.g. 12): on 1-second blocks the seed block's hash leaves the EVM's 256-block reach 256 s
after the commit window, long before the 900 s draw window ends (protocol/windows.py)."""

PRESETS: dict[str, CreationTerms] = {
    "tiny": TINY,
    "default": DEFAULT,
    "demo": DEMO,
    "adversarial": ADVERSARIAL,
    "production": PRODUCTION,
}


def get_preset(name: str) -> CreationTerms:
    """The preset called `name`; TermsError naming the nearest one (and every one) otherwise."""
    if name in PRESETS:
        return PRESETS[name]
    near = difflib.get_close_matches(name, list(PRESETS), n=1)
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise TermsError(f"unknown run terms preset {name!r}; {hint}choose one of {', '.join(PRESETS)}")
