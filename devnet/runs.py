"""Creating a run: publish its artifacts, then `createRun` on-chain with its rules.

The run creator stores the canonical config, the dataset manifest and shards, and θ0 in its
artifact store (served to peers over HTTP), and sends the hashes plus the on-chain rules
(windows, stakes, bonds, share split, rounds, reward pool) to RunRegistry.
"""

from __future__ import annotations

from dataclasses import dataclass

from eth_account.signers.local import LocalAccount

from protocol.adapters.artifacts import ArtifactStore
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.manifest import ManifestError
from protocol.adapters.runs import publish_run_artifacts
from protocol.config import RunConfig
from protocol.data import DatasetManifest, verify_dataset_fits_config
from protocol.outer import get_initial_global_state, make_global_state
from protocol.training import State, verify_params_fit_model
from protocol.types import PlantTerms, RunTerms
from protocol.windows import verify_challenge_window, verify_windows_fit_chain

ETH = 10**18


@dataclass(frozen=True)
class RunRules:
    """The on-chain rules of a run (everything in RunTerms that is not a hash or H/k)."""

    rounds: int = 3
    samples_per_commitment: int = 2
    verifiers_per_commitment: int = 1
    jury_size: int = 3
    commit_window_s: int = 20
    attest_window_s: int = 15
    challenge_window_s: int = 10
    dispute_timeout_s: int = 60
    solver_min_stake_wei: int = 10 * ETH
    verifier_min_stake_wei: int = 10 * ETH
    attestation_bond_wei: int = ETH
    challenge_bond_wei: int = 2 * ETH
    solver_share_bps: int = 8000
    verifier_share_bps: int = 1500
    juror_share_bps: int = 500
    shares_per_round: int = 1000 * ETH
    revenue_release_period_s: int = 3600
    plant_rate_bps: int = 0
    """Planted faults per 10,000 commitments (docs/planted-faults.md); 0 (the default of the tests' scripted runs)
    turns planting off. The demos and the production preset plant (docs/economics.md)."""
    plant_jackpot_wei: int = ETH
    plant_penalty_wei: int = 5 * ETH
    plant_pool_wei: int = 20 * ETH
    start_delay_s: int = 0
    """Seconds from createRun to round 0's start (RunConfig.startDelay, at most MAX_START_DELAY): nodes started after
    the run is created still make round 0, and solvers register their plant anchors before it. 0: round 0 starts at
    creation."""

    def get_plant_terms(self) -> PlantTerms:
        return PlantTerms(rate_bps=self.plant_rate_bps, jackpot=self.plant_jackpot_wei, penalty=self.plant_penalty_wei)


def verify_rules_fit_deployment(protocol: ProtocolClient, rules: RunRules) -> int:
    """The deployment's block time, read from RunRegistry (the chain is the source of truth; a manifest that says
    otherwise is refused), once the rules' windows and start delay are checked to fit it: WindowsUnfitForChainError
    (StartDelayError for a delay above MAX_START_DELAY), with createRun's own reason, before anything is published or
    sent."""
    block_seconds = protocol.block_seconds()
    manifest = protocol.chain.manifest
    if manifest is not None and manifest.block_seconds != block_seconds:
        raise ManifestError(
            f"the deployment manifest says {manifest.block_seconds}-second blocks but RunRegistry "
            f"{manifest.contracts['RunRegistry'].address} was deployed with blockSeconds = {block_seconds}: the "
            "manifest is not this deployment's (pass the right --manifest, or deploy again)"
        )
    verify_windows_fit_chain(rules.commit_window_s, rules.attest_window_s, block_seconds, rules.start_delay_s)
    verify_challenge_window(rules.attest_window_s, rules.challenge_window_s, block_seconds)
    return block_seconds


PRODUCTION_RULES = RunRules(
    rounds=1000, samples_per_commitment=1, verifiers_per_commitment=3, jury_size=15, commit_window_s=3600,
    attest_window_s=1800, challenge_window_s=1800, dispute_timeout_s=3600, solver_min_stake_wei=200 * ETH,
    verifier_min_stake_wei=10 * ETH, attestation_bond_wei=ETH, challenge_bond_wei=2 * ETH, plant_rate_bps=100,
    plant_jackpot_wei=ETH // 50, plant_penalty_wei=5 * ETH, plant_pool_wei=10 * ETH, start_delay_s=3600,
)  # fmt: skip
"""The documented production preset (docs/economics.md): 3 seats of 1 sample, a 200 ETH solver stake, juries of 15,
1% of commitments planted with a 0.02 ETH jackpot and a 5 ETH penalty, for rounds of PRODUCTION_INNER_STEPS inner
steps in segments of PRODUCTION_STEPS_PER_SEGMENT. bench/economics.py prices every strategy under it with nobody paid
to watch (the seats replay 6% of the training compute; docs/economics.md says which rows only a rule change fixes).
Round 0 starts an hour after createRun: the plant terms are set before the start, so every round can be planted
from round 0 for the solvers that anchor in that hour (no round is publicly safe for a lazy pass), and an hour lets
solvers that see the run created join and anchor; one that anchors later is unpaid in its first two rounds. Its
windows need a chain of 4-second blocks or longer (`deploy --block-seconds`, e.g. 12): on 1-second blocks the
seed block's hash leaves the EVM's 256-block reach 256 s after the commit window, long before the 900 s draw window
ends (protocol/windows.py)."""
PRODUCTION_INNER_STEPS = 500
PRODUCTION_STEPS_PER_SEGMENT = 10


def build_run_terms(
    config_hash: bytes, dataset_root: bytes, theta0: bytes, config: RunConfig, rules: RunRules
) -> RunTerms:
    return RunTerms(
        config_hash=config_hash,
        dataset_root=dataset_root,
        theta0_hash=theta0,
        inner_steps=config.train.inner_steps,
        steps_per_segment=config.train.steps_per_segment,
        samples_per_commitment=rules.samples_per_commitment,
        verifiers_per_commitment=rules.verifiers_per_commitment,
        jury_size=rules.jury_size,
        commit_window=rules.commit_window_s,
        attest_window=rules.attest_window_s,
        challenge_window=rules.challenge_window_s,
        dispute_timeout=rules.dispute_timeout_s,
        solver_min_stake=rules.solver_min_stake_wei,
        verifier_min_stake=rules.verifier_min_stake_wei,
        attestation_bond=rules.attestation_bond_wei,
        challenge_bond=rules.challenge_bond_wei,
        solver_share_bps=rules.solver_share_bps,
        verifier_share_bps=rules.verifier_share_bps,
        juror_share_bps=rules.juror_share_bps,
        shares_per_round=rules.shares_per_round,
        revenue_release_period=rules.revenue_release_period_s,
        max_rounds=rules.rounds,
        start_delay=rules.start_delay_s,
    )


def create_run(
    protocol: ProtocolClient,
    creator: LocalAccount,
    store: ArtifactStore,
    config: RunConfig,
    manifest: DatasetManifest,
    shards: dict[bytes, bytes],
    rules: RunRules,
    reward_pool_wei: int,
    tokenizer_json: bytes | None = None,
    theta0_params: State | None = None,
) -> tuple[int, RunTerms]:
    """Publish the run's artifacts and create it on-chain; returns (run id, terms).

    θ0 is the config's seeded init, or `theta0_params` (e.g. a local Hugging Face checkpoint, continued training),
    checked to fit the run's model exactly. A dataset too small for the config is refused before anything is
    published or sent (a run that can never train would lock its reward pool), and so are windows that do not fit
    the deployment's block time (`verify_rules_fit_deployment`: createRun would revert)."""
    verify_dataset_fits_config(manifest, config)
    verify_rules_fit_deployment(protocol, rules)
    if theta0_params is None:
        global_state = get_initial_global_state(config)
    else:
        verify_params_fit_model(config, theta0_params)
        global_state = make_global_state(theta0_params)
    config_hash, dataset_root, theta0 = publish_run_artifacts(
        store, config, manifest, shards, global_state, tokenizer_json
    )
    terms = build_run_terms(config_hash, dataset_root, theta0, config, rules)
    run_id, _ = protocol.create_run(creator, terms, reward_pool_wei)
    if rules.plant_rate_bps > 0:
        protocol.set_plant_terms(creator, run_id, rules.get_plant_terms(), rules.plant_pool_wei)
    return run_id, terms
