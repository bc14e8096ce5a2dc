"""`gradledger model export` on a real run on a real anvil.

One round of a scripted run (sim/scripted.py: the real solver and verifier code in-process, anvil time travel)
settles; its θ_1 is exported through the command line and through `export_settled_model`, loaded with
transformers, and checked against the chain: the weights are θ_1's, the logits are the protocol model's, the card
lists the run's hashes and the holders of the shares minted for round 0. A round that has not settled is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from gradledger.model_export import RoundNotSettledError, export_settled_model, open_home_store
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.hf_checkpoints import load_hf_checkpoint
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import write_manifest
from protocol.adapters.runs import get_global_state
from protocol.config import HFModelConfig, build_run_config
from protocol.export import convert_gpt2_to_gpt
from protocol.hashing import hash_to_hex
from protocol.model import build_model
from protocol.run_presets import TINY
from protocol.state import compute_state_hash
from protocol.training import get_params
from sim.scripted import start_scripted_run
from tests.chain_fixtures import events_of
from tests.cli_in_process import CliResult, run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RULES = TINY.with_run(
    max_rounds=2,
    commit_window=600,
    attest_window=500,
    challenge_window=260,
    dispute_timeout=120,
)


@pytest.fixture()
def travel_chain(deployment):
    """An anvil of its own: time travel must never reach the session chain (docs in sim/scripted.py)."""
    del deployment  # built the contracts once for the session
    with AnvilProcess() as anvil:
        yield anvil, deploy_protocol(ChainClient(anvil.rpc_url), get_devnet_account(0), build_contracts())


def _export_cli(home, rpc_url, run_id, round_index, out) -> CliResult:
    """`gradledger model export` in the test's process (tests/cli_in_process.py): the real command, no start-up."""
    args = ["model", "export", "--run", str(run_id), "--round", str(round_index), "--out", str(out)]
    return run_cli(*args, "--home", str(home), "--rpc-url", rpc_url, "--json")


def _read_back(directory, config):
    """The exported weights under the run model's names ("param/<name>")."""
    _, params = load_hf_checkpoint(directory, config.model.block_size)
    if isinstance(config.model, HFModelConfig):
        return params
    as_gpt = convert_gpt2_to_gpt({k.removeprefix("param/"): v for k, v in params.items()})
    return {"param/" + k: v for k, v in as_gpt.items()}


@pytest.mark.slow
@pytest.mark.parametrize("model_file", [None, "llama-tiny.json"], ids=["builtin-gpt", "llama"])
def test_settled_round_exports_as_a_transformers_model_with_its_chain_record(
    travel_chain, corpus, tmp_path, model_file
):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    anvil, manifest = travel_chain
    home = tmp_path / "home"
    home.mkdir()
    write_manifest(home / "manifest.json", manifest)
    model_section = None if model_file is None else json.loads((EXAMPLES / model_file).read_text())
    config = build_run_config(
        preset="tiny", run_seed="0x" + "e7" * 32, dataset_root=hash_to_hex(corpus[0].root), model=model_section
    )
    protocol = ProtocolClient(ChainClient(anvil.rpc_url, manifest))
    run = start_scripted_run(protocol, manifest, home, config, corpus, [1, 2], [5], RULES)
    try:
        assert run.play_round() == 0
        store = open_home_store(home)
        with pytest.raises(RoundNotSettledError, match=r"round 1 of run \d+ has not settled yet .*round 1"):
            export_settled_model(protocol, store, None, run.run_id, 1, tmp_path / "early")
        with pytest.raises(RoundNotSettledError, match="2 round"):
            export_settled_model(protocol, store, None, run.run_id, 2, tmp_path / "never")
        assert not (tmp_path / "early").exists() and not (tmp_path / "never").exists()

        proc = _export_cli(home, anvil.rpc_url, run.run_id, 0, tmp_path / "model")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        report = json.loads(proc.stdout)
        theta1 = protocol.theta_of(run.run_id, 1)
        assert report["theta_hash"] == hash_to_hex(theta1) and report["theta_index"] == 1

        # the weights are θ_1's (read back under the run model's names, hashed like the protocol hashes them)
        state = get_global_state(store, None, theta1)
        params = get_params(state)
        back = _read_back(tmp_path / "model", config)
        assert compute_state_hash(back) == compute_state_hash(params) == bytes.fromhex(report["weights_hash"][2:])

        # same prompt, same logits as the protocol's own model
        model = build_model(config.model, config.profile, config.seed_bytes)
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(params["param/" + name])
        loaded = AutoModelForCausalLM.from_pretrained(str(tmp_path / "model")).eval()
        tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "model"))
        prompt = tokenizer("import os\ndef ", return_tensors="pt").input_ids
        with torch.no_grad():
            assert torch.allclose(loaded(input_ids=prompt).logits, model.eval().get_logits(prompt), atol=1e-5, rtol=0)
        generated = loaded.generate(prompt, max_new_tokens=8, do_sample=False)
        assert tokenizer.decode(generated[0]).startswith("import os\ndef ")

        # the card: the run's on-chain hashes and the holders of round 0's shares
        minted: dict[str, int] = {}
        for event in events_of(protocol, "SharesMinted", run.run_id):
            assert event.args["round"] == 0
            minted[event.args["to"]] = minted.get(event.args["to"], 0) + event.args["amount"]
        assert minted, "the scripted round claims its shares"
        assert {s["holder"]: int(s["shares"]) for s in report["shares"]} == minted
        card = (tmp_path / "model" / "README.md").read_text()
        chain_record = [hash_to_hex(theta1), report["config_hash"], hash_to_hex(corpus[0].root)]
        chain_record += [str(protocol.chain.chain_id), manifest.contracts["RunRegistry"].address, run_share_token(run)]
        for text in [*chain_record, *minted]:
            assert text in card, text

        # the core function writes the same directory; a second export into it is refused
        facts = export_settled_model(protocol, store, None, run.run_id, 0, tmp_path / "again")
        assert facts.theta_hash == report["theta_hash"]
        assert (tmp_path / "again" / "model.safetensors").read_bytes() == (
            tmp_path / "model" / "model.safetensors"
        ).read_bytes()
        refused = _export_cli(home, anvil.rpc_url, run.run_id, 0, tmp_path / "model")
        assert refused.returncode == 1 and "not empty" in refused.stderr
        late = _export_cli(home, anvil.rpc_url, run.run_id, 1, tmp_path / "late")
        assert late.returncode == 1 and "has not settled yet" in late.stderr
    finally:
        run.close()


def run_share_token(run) -> str:
    return run.protocol.share_token(run.run_id)
