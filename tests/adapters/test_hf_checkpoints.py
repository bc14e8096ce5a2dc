"""Local Hugging Face model directories: θ0 read from a checkpoint, θ written as one that transformers loads.

Every model is built here, tiny, and saved to tmp_path: nothing is downloaded.
"""

from __future__ import annotations

import json

import pytest
import torch

from protocol.adapters.hf_checkpoints import (
    CheckpointMismatchError,
    CheckpointNotFoundError,
    HFCheckpointError,
    RemoteCodeError,
    load_hf_checkpoint,
    write_hf_model_dir,
)
from protocol.config import build_run_config
from protocol.errors import ConfigError
from protocol.export import build_byte_tokenizer_json
from protocol.model import build_model
from protocol.state import compute_state_hash, is_same_state
from protocol.training import get_param_state, get_params, train_round, verify_params_fit_model
from tests.conftest import RUN_SEED, SOLVER_A

ROOT = "0x" + "11" * 32
LLAMA_HF = {
    "model_type": "llama", "vocab_size": 256, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64, "tie_word_embeddings": False,
}  # fmt: skip
GPT2_HF = {
    "model_type": "gpt2", "vocab_size": 256, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64,
    "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0, "bos_token_id": 1, "eos_token_id": 2,
}  # fmt: skip


def _save_llama(directory, dtype=torch.float32, **overrides):
    """A tiny Llama made by transformers itself (random weights), saved with save_pretrained."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**{**LLAMA_HF, **overrides})).eval()
    model.to(dtype).save_pretrained(str(directory), safe_serialization=True)
    return model


def _config(model_section, root=ROOT):
    return build_run_config(preset="tiny", run_seed=RUN_SEED, dataset_root=root, model=model_section)


def _perturbed_params(config):
    """θ as after some training: the seeded init plus noise (so zero biases and unit gains are exercised)."""
    params = get_param_state(build_model(config.model, config.profile, config.seed_bytes))
    generator = torch.Generator().manual_seed(3)
    return {k: v + 0.05 * torch.randn(v.shape, generator=generator) for k, v in params.items()}


def _logits_of_params(config, params, idx):
    model = build_model(config.model, config.profile, config.seed_bytes)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(params["param/" + name])
        return model.eval().get_logits(idx)


def _tokens(config, batch=2):
    generator = torch.Generator().manual_seed(5)
    return torch.randint(0, config.model.vocab_size, (batch, config.model.block_size), generator=generator)


# -- reading: θ0 from a local checkpoint -----------------------------------------------------------


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_saved_llama_loads_as_theta0_the_run_model_accepts_with_equal_logits(tmp_path, tied):
    source = _save_llama(tmp_path / "llama", tie_word_embeddings=tied)
    section, params = load_hf_checkpoint(tmp_path / "llama")
    assert section["architecture"] == "hf" and section["block_size"] == 64  # min(128, max_position_embeddings)
    for key in ("architectures", "dtype", "transformers_version", "_name_or_path"):
        assert key not in section["hf_config"], key
    config = _config(section)
    verify_params_fit_model(config, params)
    model = build_model(config.model, config.profile, config.seed_bytes)
    assert sorted(params) == sorted("param/" + n for n, _ in model.named_parameters())
    assert ("param/lm_head.weight" in params) is not tied
    idx = _tokens(config)
    with torch.no_grad():
        expected = source(input_ids=idx).logits
    assert torch.allclose(_logits_of_params(config, params, idx), expected, atol=1e-5, rtol=0)


def test_block_size_override_and_half_precision_widened_exactly(tmp_path):
    source = _save_llama(tmp_path / "llama", dtype=torch.bfloat16)
    section, params = load_hf_checkpoint(tmp_path / "llama", block_size=16)
    assert section["block_size"] == 16
    assert all(v.dtype == torch.float32 for v in params.values())
    assert torch.equal(params["param/model.embed_tokens.weight"], source.model.embed_tokens.weight.float())
    with pytest.raises(ConfigError, match="block_size 65 exceeds"):
        load_hf_checkpoint(tmp_path / "llama", block_size=65)


def test_sharded_checkpoint_loads_the_same(tmp_path):
    source = _save_llama(tmp_path / "whole")
    source.save_pretrained(str(tmp_path / "sharded"), safe_serialization=True, max_shard_size="20KB")
    assert (tmp_path / "sharded" / "model.safetensors.index.json").exists()
    _, whole = load_hf_checkpoint(tmp_path / "whole")
    _, sharded = load_hf_checkpoint(tmp_path / "sharded")
    assert is_same_state(whole, sharded)


def test_continued_training_from_a_local_checkpoint_as_theta0(tmp_path, corpus, dataset):
    _save_llama(tmp_path / "llama")
    section, theta0 = load_hf_checkpoint(tmp_path / "llama", block_size=32)
    manifest, _ = corpus
    config = _config(section, root="0x" + manifest.root.hex())
    records, end = train_round(config, dataset, theta0, 0, SOLVER_A)
    assert len(records) == config.train.num_segments
    assert set(get_params(end)) == set(theta0)
    assert not is_same_state(get_params(end), theta0)  # it trained from the checkpoint's weights


def test_legacy_layouts_load_gpt2_without_prefix_and_a_tied_head_stored_under_its_alias(tmp_path):
    from safetensors.torch import load_file, save_file
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(**{k: v for k, v in GPT2_HF.items() if k != "model_type"}))
    legacy = {k: v.contiguous() for k, v in gpt2.transformer.state_dict().items()}  # "h.0...", as GPT2Model saves
    legacy["h.0.attn.bias"] = torch.tril(torch.ones(1, 1, 64, 64))  # the causal mask old checkpoints carry
    (tmp_path / "gpt2").mkdir()
    save_file(legacy, str(tmp_path / "gpt2" / "model.safetensors"))
    (tmp_path / "gpt2" / "config.json").write_text(json.dumps(gpt2.config.to_dict()))
    _, params = load_hf_checkpoint(tmp_path / "gpt2")
    assert torch.equal(params["param/transformer.wte.weight"], gpt2.transformer.wte.weight)
    assert "param/lm_head.weight" not in params

    source = _save_llama(tmp_path / "llama", tie_word_embeddings=True)
    path = tmp_path / "llama" / "model.safetensors"
    tensors = load_file(str(path))
    tensors["lm_head.weight"] = tensors.pop("model.embed_tokens.weight")
    save_file(tensors, str(path))
    _, params = load_hf_checkpoint(tmp_path / "llama")
    assert torch.equal(params["param/model.embed_tokens.weight"], source.model.embed_tokens.weight)


def test_bad_directories_are_refused_clearly(tmp_path):
    with pytest.raises(CheckpointNotFoundError, match="not a directory"):
        load_hf_checkpoint(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointNotFoundError, match=r"no config\.json"):
        load_hf_checkpoint(tmp_path / "empty")
    _save_llama(tmp_path / "llama")
    config_json = json.loads((tmp_path / "llama" / "config.json").read_text())

    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_text(json.dumps(config_json))
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04 not loaded")
    with pytest.raises(CheckpointNotFoundError, match="pickle checkpoints are never loaded"):
        load_hf_checkpoint(pickled)

    (tmp_path / "llama" / "config.json").write_text(json.dumps({**config_json, "auto_map": {"AutoModel": "x.Y"}}))
    with pytest.raises(RemoteCodeError, match="never loads"):
        load_hf_checkpoint(tmp_path / "llama")

    (tmp_path / "llama" / "config.json").write_text(json.dumps({**config_json, "hidden_size": 64, "head_dim": 16}))
    with pytest.raises(CheckpointMismatchError, match="has shape"):
        load_hf_checkpoint(tmp_path / "llama")

    (tmp_path / "llama" / "config.json").write_text(json.dumps({**config_json, "num_hidden_layers": 3}))
    with pytest.raises(CheckpointMismatchError, match="lacks"):
        load_hf_checkpoint(tmp_path / "llama")

    (tmp_path / "llama" / "config.json").write_text(json.dumps({**config_json, "num_hidden_layers": 1}))
    with pytest.raises(CheckpointMismatchError, match="does not have"):
        load_hf_checkpoint(tmp_path / "llama")

    (tmp_path / "llama" / "config.json").write_text("{not json")
    with pytest.raises(HFCheckpointError, match="not valid JSON"):
        load_hf_checkpoint(tmp_path / "llama")

    (tmp_path / "llama" / "config.json").write_text(json.dumps(config_json))
    (tmp_path / "llama" / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(HFCheckpointError, match="not a readable safetensors"):
        load_hf_checkpoint(tmp_path / "llama")


# -- writing: θ as a model directory ---------------------------------------------------------------


@pytest.mark.parametrize("hf_config", [LLAMA_HF, GPT2_HF], ids=["llama", "gpt2"])
def test_hf_run_model_export_loads_with_transformers_same_logits_same_weights_hash(tmp_path, hf_config):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = _config({"architecture": "hf", "block_size": 32, "hf_config": hf_config})
    params = _perturbed_params(config)
    out = tmp_path / "out"
    write_hf_model_dir(out, config, params, None, "# card\n")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["README.md", "config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
         "tokenizer_config.json"]
    )  # fmt: skip
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary directory left behind
    loaded = AutoModelForCausalLM.from_pretrained(str(out)).eval()
    idx = _tokens(config)
    with torch.no_grad():
        theirs = loaded(input_ids=idx).logits
    assert torch.allclose(theirs, _logits_of_params(config, params, idx), atol=1e-5, rtol=0)
    _, read_back = load_hf_checkpoint(out, config.model.block_size)
    assert compute_state_hash(read_back) == compute_state_hash(params)
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    prompt = tokenizer("def f(x):", return_tensors="pt").input_ids
    assert prompt.tolist() == [list(b"def f(x):")]
    generated = loaded.generate(prompt, max_new_tokens=4, do_sample=False)
    assert generated.shape == (1, prompt.shape[1] + 4)
    assert isinstance(tokenizer.decode(generated[0]), str)


def test_builtin_gpt_exports_as_gpt2_with_equal_logits_and_generates(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    config = build_run_config(preset="tiny", run_seed=RUN_SEED, dataset_root=ROOT)
    params = _perturbed_params(config)
    write_hf_model_dir(tmp_path / "gpt", config, params, None, "# card\n")
    saved = json.loads((tmp_path / "gpt" / "config.json").read_text())
    assert saved["model_type"] == "gpt2" and saved["activation_function"] == "gelu"
    loaded = AutoModelForCausalLM.from_pretrained(str(tmp_path / "gpt")).eval()
    idx = _tokens(config, batch=3)
    with torch.no_grad():
        theirs = loaded(input_ids=idx).logits
    assert torch.allclose(theirs, _logits_of_params(config, params, idx), atol=1e-5, rtol=0)
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "gpt"))
    prompt = tokenizer("import ", return_tensors="pt").input_ids
    generated = loaded.generate(prompt, max_new_tokens=5, do_sample=False)
    assert generated.shape == (1, prompt.shape[1] + 5)
    assert tokenizer.decode(generated[0]).startswith("import ")


def test_dataset_tokenizer_is_written_and_one_too_large_is_refused(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoTokenizer

    config = _config({"architecture": "hf", "block_size": 32, "hf_config": {**LLAMA_HF, "eos_token_id": 2}})
    params = _perturbed_params(config)
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{chr(97 + i): 3 + i for i in range(26)}}
    trained = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    trained.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    trained.add_special_tokens(["<unk>", "<s>", "</s>"])
    data = trained.to_str().encode()
    write_hf_model_dir(tmp_path / "ok", config, params, data, "# card\n")
    assert (tmp_path / "ok" / "tokenizer.json").read_bytes() == data
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "ok"))
    assert tokenizer.eos_token == "</s>" and tokenizer("abc").input_ids == [3, 4, 5]

    big = Tokenizer(models.WordLevel(vocab={f"w{i}": i for i in range(300)}, unk_token="w0"))
    with pytest.raises(HFCheckpointError, match="300 ids"):
        write_hf_model_dir(tmp_path / "big", config, params, big.to_str().encode(), "# card\n")
    assert not (tmp_path / "big").exists()


def test_write_refuses_a_non_empty_directory_and_leaves_nothing_on_failure(tmp_path):
    config = build_run_config(preset="tiny", run_seed=RUN_SEED, dataset_root=ROOT)
    params = _perturbed_params(config)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(HFCheckpointError, match="not empty"):
        write_hf_model_dir(tmp_path / "taken", config, params, None, "# card\n")
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["keep.txt"]
    broken = {k: v for k, v in params.items() if k != "param/wpe.weight"}
    with pytest.raises(HFCheckpointError):
        write_hf_model_dir(tmp_path / "new", config, broken, None, "# card\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    (tmp_path / "empty").mkdir()  # an empty directory is fine (e.g. made by the caller)
    write_hf_model_dir(tmp_path / "empty", config, params, build_byte_tokenizer_json(), "# card\n")
    assert (tmp_path / "empty" / "model.safetensors").exists()
