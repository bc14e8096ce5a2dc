"""Creating a run: publish its artifacts, then `createRun` on-chain with its terms.

The run creator stores the canonical config, the dataset manifest and shards, and θ0 in its
artifact store (served to peers over HTTP), and sends the hashes plus the on-chain terms
(windows, stakes, bonds, share split, rounds, reward pool) to RunRegistry, then the plant terms
to Plants. The terms are a `protocol.run_terms.CreationTerms`, e.g. a preset of protocol/run_presets.py.
"""

from __future__ import annotations

from eth_account.signers.local import LocalAccount

from protocol.adapters.artifacts import ArtifactStore
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.manifest import ManifestError
from protocol.adapters.runs import publish_run_artifacts
from protocol.config import RunConfig
from protocol.data import DatasetManifest, verify_dataset_fits_config
from protocol.outer import get_initial_global_state, make_global_state
from protocol.run_presets import ETH
from protocol.run_terms import CreationTerms, RunTerms
from protocol.training import State, verify_params_fit_model
from protocol.windows import verify_challenge_window, verify_windows_fit_chain

__all__ = ["ETH", "build_run_terms", "create_run", "verify_terms_fit_deployment"]


def verify_terms_fit_deployment(protocol: ProtocolClient, terms: RunTerms) -> int:
    """The deployment's block time, read from RunRegistry (the chain is the source of truth; a manifest that says
    otherwise is refused), once the terms' windows and start delay are checked to fit it: WindowsUnfitForChainError
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
    verify_windows_fit_chain(terms.commit_window, terms.attest_window, block_seconds, terms.start_delay)
    verify_challenge_window(terms.attest_window, terms.challenge_window, block_seconds)
    return block_seconds


def build_run_terms(
    config_hash: bytes, dataset_root: bytes, theta0: bytes, config: RunConfig, terms: RunTerms
) -> RunTerms:
    """`terms` bound to one run: the published hashes and the config's H and k (TermsError when the terms fix other
    ones: `RunTerms.bind`)."""
    return terms.bind(
        config_hash=config_hash, dataset_root=dataset_root, theta0_hash=theta0, inner_steps=config.train.inner_steps,
        steps_per_segment=config.train.steps_per_segment,
    )  # fmt: skip


def create_run(
    protocol: ProtocolClient,
    creator: LocalAccount,
    store: ArtifactStore,
    config: RunConfig,
    manifest: DatasetManifest,
    shards: dict[bytes, bytes],
    terms: CreationTerms,
    reward_pool_wei: int,
    tokenizer_json: bytes | None = None,
    theta0_params: State | None = None,
) -> tuple[int, RunTerms]:
    """Publish the run's artifacts and create it on-chain with `terms` (then Plants.setTerms when they plant: before
    round 0 when the terms have a start delay); returns (run id, the run's bound RunTerms).

    θ0 is the config's seeded init, or `theta0_params` (e.g. a local Hugging Face checkpoint, continued training),
    checked to fit the run's model exactly. Refused before anything is published or sent: a dataset too small for the
    config (a run that can never train would lock its reward pool), terms that fix another H or k than the config's
    (TermsError), and windows that do not fit the deployment's block time (`verify_terms_fit_deployment`: createRun
    would revert)."""
    verify_dataset_fits_config(manifest, config)
    build_run_terms(bytes(32), bytes(32), bytes(32), config, terms.run)  # H and k, checked before publishing
    verify_terms_fit_deployment(protocol, terms.run)
    if theta0_params is None:
        global_state = get_initial_global_state(config)
    else:
        verify_params_fit_model(config, theta0_params)
        global_state = make_global_state(theta0_params)
    config_hash, dataset_root, theta0 = publish_run_artifacts(
        store, config, manifest, shards, global_state, tokenizer_json
    )
    bound = build_run_terms(config_hash, dataset_root, theta0, config, terms.run)
    run_id, _ = protocol.create_run(creator, bound, reward_pool_wei)
    if terms.plants:
        protocol.set_plant_terms(creator, run_id, terms.plant, terms.plant_pool)
    return run_id, bound
