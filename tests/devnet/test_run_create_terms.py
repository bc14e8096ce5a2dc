"""`gradledger run create --preset NAME` and `--rules FILE` (issue 38): the production preset creates a run whose
on-chain terms are the preset's (real anvil, the real command, a deployment of 12-second blocks as the production
windows need), the terms are printed before sending in the shape --rules reads, and a bad terms file or preset is
refused before anything is read or sent (in-process)."""

from __future__ import annotations

import json
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from gradledger.cli import app
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import write_manifest
from protocol.adapters.runs import load_run_terms
from protocol.run_presets import PRODUCTION
from protocol.run_terms import ZERO_HASH, CreationTerms, TermsError
from tests.chain_fixtures import Deployment
from tests.forked_nodes import run_gradledger

BLOCK_SECONDS = 12
"""The production windows need blocks of 4 s or longer (protocol/run_presets.py PRODUCTION)."""


def _refusal(tmp_path: Path, *args: str) -> str:
    """`run create` in-process with a home that has no deployment: the terms are refused before it is looked for."""
    result = CliRunner().invoke(app, ["run", "create", "--home", str(tmp_path / "home"), *args])
    assert isinstance(result.exception, TermsError), (result.exception, result.output)
    assert not (tmp_path / "home").exists(), "nothing was written"
    return " ".join(str(result.exception).split())


def test_run_create_refuses_a_terms_file_with_unknown_keys_naming_the_nearest(tmp_path):
    rules = tmp_path / "terms.json"
    rules.write_text(json.dumps({"run": {"max_rounds": 10, "commit_window_s": 600}}))
    message = _refusal(tmp_path, "--preset", "production", "--rules", str(rules))
    assert f"--rules {rules}: unknown key 'commit_window_s' in [run]; did you mean 'commit_window'?" in message
    rules.write_text(json.dumps({"max_rounds": 10}))
    assert "did you mean 'run.max_rounds'?" in _refusal(tmp_path, "--rules", str(rules))
    toml = tmp_path / "terms.toml"
    toml.write_text("[run]\nconfig_hash = 1\n")
    assert "config_hash is not a term to choose" in _refusal(tmp_path, "--rules", str(toml))
    toml.write_text("[run\nmax_rounds = 1\n")
    assert f"--rules {toml}: not valid TOML" in _refusal(tmp_path, "--rules", str(toml))
    assert "cannot read it" in _refusal(tmp_path, "--rules", str(tmp_path / "missing.json"))


def test_run_create_refuses_an_unknown_preset_and_h_unlike_the_presets(tmp_path):
    assert "did you mean 'production'?" in _refusal(tmp_path, "--preset", "prodution")
    message = _refusal(tmp_path, "--preset", "production", "--inner-steps", "20")
    assert "the run terms fix H=500 (inner_steps) but the training config has H=20" in message


@pytest.fixture(scope="module")
def twelve_second_chain(tmp_path_factory) -> Iterator[Deployment]:
    """An automining anvil with the contracts deployed declaring 12-second blocks (creation only: no round is
    played, so the chain's own block stamps do not matter)."""
    directory = tmp_path_factory.mktemp("production")
    with AnvilProcess() as anvil:
        manifest = deploy_protocol(
            ChainClient(anvil.rpc_url), get_devnet_account(0), build_contracts(), block_seconds=BLOCK_SECONDS
        )
        write_manifest(directory / "manifest.json", manifest)
        yield Deployment(anvil, directory / "manifest.json", ProtocolClient(ChainClient(anvil.rpc_url, manifest)))


def _create(deployment: Deployment, home: Path, *args: str) -> subprocess.CompletedProcess:
    home.mkdir(parents=True, exist_ok=True)
    (home / "manifest.json").write_text(deployment.manifest_path.read_text())
    command = ["run", "create", "--config-preset", "tiny", *args]
    command += ["--home", str(home), "--rpc-url", deployment.protocol.chain.rpc_url]
    result = run_gradledger(command, timeout=300)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result
    return result


def _on_chain(protocol: ProtocolClient, run_id: int) -> CreationTerms:
    """The run's terms read back through the ProtocolClient, hashes cleared to compare with an unbound preset."""
    terms, _, _ = load_run_terms(protocol, run_id)
    assert terms.is_bound
    unbound = replace(terms, config_hash=ZERO_HASH, dataset_root=ZERO_HASH, theta0_hash=ZERO_HASH)
    return CreationTerms(unbound, protocol.plant_terms(run_id), protocol.plant_pool(run_id))


@pytest.mark.e2e
def test_run_create_preset_production_creates_a_run_with_the_production_terms(twelve_second_chain, tmp_path):
    protocol = twelve_second_chain.protocol
    created = _create(twelve_second_chain, tmp_path / "home", "--preset", "production")
    printed, last = created.stdout.strip().rsplit("\n", 1)
    assert last.startswith("created run ") and "after a start delay of 3600 s" in last, created.stdout
    run_id = int(last.split()[2])
    assert tomllib.loads(printed) == PRODUCTION.to_mapping(), printed  # printed before sending, as --rules reads
    assert _on_chain(protocol, run_id) == PRODUCTION

    # the printed terms saved as a --rules file over another preset create a run with the same terms
    rules = tmp_path / "production.toml"
    rules.write_text(printed)
    again = _create(twelve_second_chain, tmp_path / "home", "--preset", "tiny", "--rules", str(rules), "--json")
    out = json.loads(again.stdout.strip().splitlines()[-1])
    assert (out["preset"], out["rules_file"], out["terms"]) == ("tiny", str(rules), PRODUCTION.to_mapping())
    assert out["run_id"] == run_id + 1 and _on_chain(protocol, out["run_id"]) == PRODUCTION


def _refused_before_sending(deployment: Deployment, home: Path, *args: str) -> str:
    """`run create` in-process against a real deployment: refused with a ConfigError, no transaction, no run."""
    from protocol.errors import ConfigError

    protocol, creator = deployment.protocol, get_devnet_account(0).address
    runs, nonce = protocol.chain.call("RunRegistry", "runCount"), protocol.chain.w3.eth.get_transaction_count(creator)
    home.mkdir(parents=True, exist_ok=True)
    (home / "manifest.json").write_text(deployment.manifest_path.read_text())
    command = ["run", "create", "--preset", "production", "--config-preset", "tiny", "--home", str(home)]
    command += ["--rpc-url", protocol.chain.rpc_url]
    result = CliRunner().invoke(app, [*command, *args])
    assert isinstance(result.exception, ConfigError), (result.exception, result.output)
    assert protocol.chain.call("RunRegistry", "runCount") == runs, "no run was created"
    assert protocol.chain.w3.eth.get_transaction_count(creator) == nonce, "the creator sent no transaction"
    assert not (home / "creator").exists(), "nothing was published"
    return " ".join(str(result.exception).split())


@pytest.mark.e2e
def test_run_create_refuses_unknown_config_keys_naming_the_nearest_before_sending(twelve_second_chain, tmp_path):
    home = tmp_path / "home"
    message = _refused_before_sending(twelve_second_chain, home, "--set", "model.n_layr=2")
    assert "model.gpt.n_layr: unknown key (did you mean 'n_layer'?)" in message, message
    message = _refused_before_sending(twelve_second_chain, home, "--set", "train.lr=0.001")
    assert "train.lr: unknown key (valid keys here: batch_size," in message and "inner_lr" in message, message
    assert "write it as SECTION.KEY=VALUE" in _refused_before_sending(twelve_second_chain, home, "--set", "train")
    assert "H and k are run terms" in _refused_before_sending(twelve_second_chain, home, "--set", "train.inner_steps=9")
    # issue 39: a typo inside hf_config built transformers' default 32-layer Llama and locked the pool
    model = json.loads((Path(__file__).parents[2] / "examples" / "llama-tiny.json").read_text())
    model["hf_config"]["num_hiden_layers"] = model["hf_config"].pop("num_hidden_layers")
    (tmp_path / "llama-typo.json").write_text(json.dumps(model))
    message = _refused_before_sending(twelve_second_chain, home, "--model-config", str(tmp_path / "llama-typo.json"))
    assert "'num_hiden_layers' (did you mean 'num_hidden_layers'?)" in message, message


@pytest.mark.e2e
def test_run_create_set_publishes_a_config_with_the_settings(twelve_second_chain, tmp_path):
    from protocol.adapters.artifacts import LocalArtifactStore
    from protocol.config import parse_run_config
    from protocol.hashing import to_hash32

    home = tmp_path / "home"
    settings = ["--set", "train.inner_lr=0.00125", "--set", "model.n_layer=1"]
    created = _create(twelve_second_chain, home, "--preset", "production", "--json", *settings)
    out = json.loads(created.stdout.strip().splitlines()[-1])
    config = parse_run_config(LocalArtifactStore(home / "creator" / "artifacts").get(to_hash32(out["config_hash"])))
    assert (config.train.inner_lr, config.model.n_layer, config.train.inner_steps) == (0.00125, 1, 500)
