"""Shared fixtures: the default corpus and small run configs (tiny preset, seconds per test)."""

from __future__ import annotations

from protocol.adapters.execution_env import pin_execution_environment

pin_execution_environment()  # before anything loads torch: the suite runs under the profile's pins

import pytest

from protocol.adapters.corpus import load_corpus_shards
from protocol.config import RunConfig, build_run_config
from protocol.data import DatasetManifest, TokenDataset, build_token_dataset
from protocol.hashing import hash_to_hex
from tests.chain_fixtures import deployment  # noqa: F401  (session fixture: anvil + deployed contracts)
from tests.object_store_fixtures import s3_bucket, s3_server  # noqa: F401  (a local S3 server and a bucket per test)
from tests.xdist_scheduling import pytest_collection_modifyitems  # noqa: F401  (a module's shared run on one worker)

SOLVER_A = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
SOLVER_B = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
RUN_SEED = "0x" + "5e" * 32


@pytest.fixture(scope="session")
def corpus() -> tuple[DatasetManifest, dict[bytes, bytes]]:
    return load_corpus_shards()


@pytest.fixture(scope="session")
def tiny_config(corpus) -> RunConfig:
    manifest, _ = corpus
    return build_run_config(preset="tiny", run_seed=RUN_SEED, dataset_root=hash_to_hex(manifest.root))


@pytest.fixture(scope="session")
def dataset(corpus, tiny_config) -> TokenDataset:
    manifest, shards = corpus
    return build_token_dataset(manifest, shards, tiny_config.data.eval_shards)
