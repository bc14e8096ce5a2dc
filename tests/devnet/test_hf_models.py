"""Bring your own model: tiny Llama- and GPT-2-style transformers models train a DiLoCo round on a real anvil.

Real node processes (2 solvers, 1 verifier) train, commit, replay and attest one round of each committed example
config (examples/*.json); the coordinator claims θ_1, the round settles, and `gradledger audit` re-derives every θ
from the chain and the nodes' artifacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protocol.config import parse_model_config
from protocol.outer import make_global_state
from protocol.state import compute_state_hash
from tests.chain_fixtures import FAST_RULES, events_of, prepare_run, read_log, run_audit, run_to_the_end, start_node

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SOLVERS, VERIFIER = [14, 15], 16


def _save_tiny_llama(directory: Path) -> None:
    """A local Hugging Face checkpoint made by transformers itself (its own init), as a user would have one."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=True,
    )  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(directory)


@pytest.mark.parametrize("example", ["llama-tiny.json", "gpt2-tiny.json", "checkpoint"])
def test_hf_model_trains_one_round_with_real_nodes_and_the_audit_rederives_theta(deployment, corpus, tmp_path, example):
    """For "checkpoint" the run continues training a local Hugging Face model directory: θ0 is its weights."""
    theta0 = None
    if example == "checkpoint":
        from protocol.adapters.hf_checkpoints import load_hf_checkpoint

        _save_tiny_llama(tmp_path / "llama")
        model, theta0 = load_hf_checkpoint(tmp_path / "llama", block_size=32)
    else:
        model = parse_model_config(json.loads((EXAMPLES / example).read_text()), example)
    rules = FAST_RULES.with_run(max_rounds=1)
    setup = prepare_run(deployment, corpus, tmp_path / "home", SOLVERS, [VERIFIER], rules, model=model)
    protocol, run_id = setup.protocol, setup.run_id
    processes = [
        start_node(setup, "solver", SOLVERS[0], "--coordinator"),
        start_node(setup, "solver", SOLVERS[1]),
        start_node(setup, "verifier", VERIFIER, "--exit-when-done"),
    ]
    run_to_the_end(setup, list(zip([*SOLVERS, VERIFIER], processes, strict=True)), theta0_params=theta0)
    if theta0 is not None:
        assert protocol.theta_of(run_id, 0) == compute_state_hash(make_global_state(theta0))
    logs = {a: read_log(setup, role, a) for role, a in (("solver", 14), ("solver", 15), ("verifier", 16))}
    assert all(p.returncode == 0 for p in processes), logs
    assert len(events_of(protocol, "Committed", run_id)) == 2
    assert len(events_of(protocol, "PassAttested", run_id)) == 2 and not events_of(protocol, "FailAttested", run_id)
    assert protocol.is_settled(run_id, 0), logs

    out = tmp_path / "audit"
    report = run_audit(setup, out / "audit.json", "--html", str(out / "audit.html"))
    assert all(c["passed"] for c in report["checks"]), [c for c in report["checks"] if not c["passed"]]
