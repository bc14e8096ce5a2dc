"""`gradledger run create` with a model, data and θ0 of the user's own (real anvil, the real command).

A tiny Llama-style model on a dataset whose tokenizer was trained by `gradledger data prepare` is created and its
tokenizer published with it; continued training publishes a local Hugging Face checkpoint as θ0. A model that
cannot take the data's token ids, a model config asking for remote code and a missing checkpoint are refused
before any transaction, with nothing published: those refusals run in the test's process (tests/cli_in_process.py,
no interpreter start-up each: issue 38)."""

from __future__ import annotations

import json
import subprocess
import sysconfig
from pathlib import Path

import pytest

from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.hf_checkpoints import load_hf_checkpoint
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.prepared_data import load_prepared_dataset
from protocol.config import HFModelConfig, parse_run_config
from protocol.hashing import to_hash32
from protocol.outer import make_global_state
from protocol.state import compute_state_hash
from tests.chain_fixtures import Deployment
from tests.cli_in_process import run_cli
from tests.forked_nodes import run_gradledger

pytestmark = pytest.mark.e2e
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return run_gradledger(list(args), timeout=300, cwd=cwd)


def _home(deployment: Deployment, home: Path) -> list[str]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "manifest.json").write_text(deployment.manifest_path.read_text())
    return ["--home", str(home), "--rpc-url", deployment.protocol.chain.rpc_url]


@pytest.fixture(scope="module")
def my_dataset(tmp_path_factory) -> Path:
    """A dataset of a few standard-library modules as text, with a 512-id BPE tokenizer trained on them."""
    root = tmp_path_factory.mktemp("own-data")
    (root / "text").mkdir()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("textwrap.py", "string.py", "calendar.py"):
        (root / "text" / name.replace(".py", ".txt")).write_bytes((stdlib / name).read_bytes())
    done = _cli("data", "prepare", str(root / "text"), "--tokenizer", "train", "--vocab-size", "512",
                "--out", str(root / "dataset"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return root / "dataset"


def _nothing_sent(deployment: Deployment, home: Path, before: tuple[int, int]) -> None:
    protocol, creator = deployment.protocol, get_devnet_account(0).address
    after = protocol.chain.call("RunRegistry", "runCount"), protocol.chain.w3.eth.get_transaction_count(creator)
    assert after == before, "no run was created and the creator sent no transaction"
    assert not (home / "creator" / "artifacts").exists(), "nothing was published"


def _before(deployment: Deployment) -> tuple[int, int]:
    protocol, creator = deployment.protocol, get_devnet_account(0).address
    return protocol.chain.call("RunRegistry", "runCount"), protocol.chain.w3.eth.get_transaction_count(creator)


def test_run_create_own_model_and_dataset_publishes_config_dataset_and_tokenizer(deployment, my_dataset, tmp_path):
    home = tmp_path / "home"
    done = _cli("run", "create", "--preset", "tiny", "--model-config", str(EXAMPLES / "llama-tiny.json"),
                "--dataset", str(my_dataset), "--json", *_home(deployment, home))  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    store = LocalArtifactStore(home / "creator" / "artifacts")
    config = parse_run_config(store.get(to_hash32(out["config_hash"])))
    assert isinstance(config.model, HFModelConfig) and config.model.hf_config["model_type"] == "llama"
    prepared = load_prepared_dataset(my_dataset)
    assert deployment.protocol.chain.call("RunRegistry", "runCount") == out["run_id"]
    assert to_hash32(config.data.dataset_root) == prepared.manifest.root
    assert prepared.manifest.tokens.tokenizer is not None and prepared.tokenizer_json is not None
    assert store.get(prepared.manifest.tokens.tokenizer) == prepared.tokenizer_json, "the tokenizer is published"


def test_run_create_model_vocabulary_smaller_than_the_tokenizer_is_refused_before_any_transaction(
    deployment, my_dataset, tmp_path
):
    small = json.loads((EXAMPLES / "llama-tiny.json").read_text())
    small["hf_config"]["vocab_size"] = 256
    (tmp_path / "small.json").write_text(json.dumps(small))
    home, before = tmp_path / "home", _before(deployment)
    done = run_cli("run", "create", "--preset", "tiny", "--model-config", str(tmp_path / "small.json"),
                   "--dataset", str(my_dataset), *_home(deployment, home))  # fmt: skip
    message = " ".join(done.stderr.split())
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "ids but the model's vocabulary holds 256" in message and "vocab_size >=" in message, message
    _nothing_sent(deployment, home, before)


def test_run_create_model_config_with_remote_code_is_refused_before_any_transaction(deployment, tmp_path):
    remote = json.loads((EXAMPLES / "llama-tiny.json").read_text())
    remote["hf_config"]["auto_map"] = {"AutoModelForCausalLM": "evil.Model"}
    (tmp_path / "remote.json").write_text(json.dumps(remote))
    home, before = tmp_path / "home", _before(deployment)
    done = run_cli("run", "create", "--preset", "tiny", "--model-config", str(tmp_path / "remote.json"),
                   *_home(deployment, home))  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "remote code" in done.stderr and str(tmp_path / "remote.json") in " ".join(done.stderr.split())
    _nothing_sent(deployment, home, before)


def test_run_create_init_from_checkpoint_publishes_its_weights_as_theta0(deployment, tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    LlamaForCausalLM(
        LlamaConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, max_position_embeddings=64)
    ).save_pretrained(tmp_path / "llama")  # fmt: skip
    home = tmp_path / "home"
    done = _cli("run", "create", "--preset", "tiny", "--init-from", str(tmp_path / "llama"), "--json",
                *_home(deployment, home))  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    _, params = load_hf_checkpoint(tmp_path / "llama")
    assert to_hash32(out["theta0"]) == compute_state_hash(make_global_state(params))
    assert deployment.protocol.theta_of(out["run_id"], 0) == to_hash32(out["theta0"])


def test_run_create_init_from_missing_directory_is_refused_before_any_transaction(deployment, tmp_path):
    home, before = tmp_path / "home", _before(deployment)
    where = _home(deployment, home)
    done = run_cli("run", "create", "--preset", "tiny", "--init-from", str(tmp_path / "nowhere"), *where)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(tmp_path / "nowhere") in " ".join(done.stderr.split())
    _nothing_sent(deployment, home, before)
