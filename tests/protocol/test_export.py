"""protocol/export.py: the built-in GPT as GPT-2 (same logits), the byte tokenizer, shares and the model card."""

from __future__ import annotations

import json

import pytest
import torch

from protocol.config import build_run_config
from protocol.export import (
    ExportError,
    ModelCardFacts,
    ShareHolding,
    ShareMinted,
    build_byte_tokenizer_json,
    compute_share_holdings,
    convert_gpt2_to_gpt,
    convert_gpt_to_gpt2,
    get_bytes_to_unicode,
    get_gpt2_config,
    get_tokenizer_config,
    get_tokenizer_vocab_size,
    render_model_card,
)
from protocol.model import build_model
from protocol.training import get_param_state

ROOT = "0x" + "11" * 32
SEED = "0x" + "5e" * 32


def _gpt():
    config = build_run_config(preset="tiny", run_seed=SEED, dataset_root=ROOT)
    model = build_model(config.model, config.profile, config.seed_bytes)
    with torch.no_grad():  # break the symmetric init (zero biases, unit gains) so every tensor matters
        generator = torch.Generator().manual_seed(7)
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=generator))
    return config, model


def test_gpt_as_gpt2_gives_the_same_logits():
    from transformers import GPT2Config, GPT2LMHeadModel

    config, model = _gpt()
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    gpt2 = GPT2LMHeadModel(GPT2Config(**get_gpt2_config(config.model))).eval()
    state = convert_gpt_to_gpt2(params, config.model.n_layer)
    missing, unexpected = gpt2.load_state_dict(state, strict=False)
    assert unexpected == [] and set(missing) <= {"lm_head.weight"}
    idx = torch.randint(
        0, config.model.vocab_size, (3, config.model.block_size), generator=torch.Generator().manual_seed(1)
    )
    with torch.no_grad():
        ours = model.get_logits(idx)
        theirs = gpt2(input_ids=idx).logits
    assert torch.allclose(ours, theirs, atol=1e-5, rtol=0), (ours - theirs).abs().max()


def test_gpt_conversion_round_trips_bit_for_bit_and_refuses_other_models():
    config, model = _gpt()
    params = {k.removeprefix("param/"): v for k, v in get_param_state(model).items()}
    back = convert_gpt2_to_gpt(convert_gpt_to_gpt2(params, config.model.n_layer))
    assert set(back) == set(params) and all(torch.equal(back[k], params[k]) for k in params)
    with pytest.raises(ExportError, match="missing"):
        convert_gpt_to_gpt2({k: v for k, v in params.items() if k != "wpe.weight"}, config.model.n_layer)
    with pytest.raises(ExportError, match="prefix"):
        convert_gpt2_to_gpt({"h.0.ln_1.weight": torch.ones(2)})


def test_byte_tokenizer_ids_are_the_bytes_and_round_trip():
    from tokenizers import Tokenizer

    data = build_byte_tokenizer_json()
    tokenizer = Tokenizer.from_str(data.decode())
    assert get_tokenizer_vocab_size(data) == 256
    table = get_bytes_to_unicode()
    assert len(set(table.values())) == 256
    for b in range(256):
        assert tokenizer.token_to_id(table[b]) == b and tokenizer.id_to_token(b) == table[b]
    every_byte = bytes(range(256))
    assert tokenizer.decode(list(every_byte))  # every id decodes (invalid UTF-8 becomes U+FFFD)
    for text in ["", "hello", "  two  spaces\n\ttab", "héllo wörld ✓ 日本語 🙂", "\x00\x01\x7f", "a" * 1000]:
        ids = tokenizer.encode(text).ids
        assert ids == list(text.encode("utf-8")), text
        assert tokenizer.decode(ids) == text
    assert build_byte_tokenizer_json() == data  # deterministic bytes


def test_tokenizer_config_names_special_tokens_only_when_declared():
    plain = get_tokenizer_config(build_byte_tokenizer_json(), {"eos_token_id": 2}, 64)
    assert plain["model_max_length"] == 64 and "eos_token" not in plain
    document = json.loads(build_byte_tokenizer_json())
    document["added_tokens"] = [
        {"id": 256, "content": "<eos>", "special": True, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False},
    ]  # fmt: skip
    named = get_tokenizer_config(json.dumps(document).encode(), {"eos_token_id": 256, "bos_token_id": 3}, 64)
    assert named["eos_token"] == "<eos>" and "bos_token" not in named
    document["added_tokens"][0]["content"] = "<|endoftext|>"  # a `data prepare` tokenizer's separator
    assert get_tokenizer_config(json.dumps(document).encode(), {}, 64)["eos_token"] == "<|endoftext|>"
    with pytest.raises(ExportError, match="tokenizers"):
        get_tokenizer_vocab_size(b"not json")


def test_share_holdings_count_rounds_through_r_and_fractions_sum_to_one():
    a, b, c = "0x" + "aa" * 20, "0x" + "bb" * 20, "0x" + "cc" * 20
    mints = [ShareMinted(0, a, 200), ShareMinted(0, b, 100), ShareMinted(1, a, 100), ShareMinted(2, c, 999)]
    holdings = compute_share_holdings(mints, through_round=1)
    assert [(h.holder, h.shares, h.total) for h in holdings] == [(a, 300, 400), (b, 100, 400)]
    assert [h.fraction for h in holdings] == ["0.750000", "0.250000"]
    assert ShareHolding(a, 1, 3).fraction == "0.333333" and ShareHolding(a, 2, 3).fraction == "0.666667"
    assert ShareHolding(a, 0, 0).fraction == "0.000000"
    assert compute_share_holdings(mints, through_round=-1) == ()


def test_model_card_lists_the_run_hashes_contracts_and_shares():
    facts = ModelCardFacts(
        run_id=3, round=1, theta_hash="0x" + "01" * 32, weights_hash="0x" + "02" * 32, config_hash="0x" + "03" * 32,
        dataset_root="0x" + "04" * 32, tokenizer_hash=None, chain_id=31337,
        contracts=(("RunRegistry", "0x" + "0a" * 20), ("share token", "0x" + "0b" * 20)), architecture="llama",
        parameters=1234, block_size=64, vocab_size=256,
        shares=(ShareHolding("0x" + "aa" * 20, 3, 4), ShareHolding("0x" + "bb" * 20, 1, 4)), shares_block=99,
    )  # fmt: skip
    card = render_model_card(facts)
    assert card.startswith("---\nlibrary_name: transformers")
    for text in ["run 3, after round 1", "θ_2", "0x" + "01" * 32, "0x" + "02" * 32, "0x" + "03" * 32,
                 "0x" + "04" * 32, "byte-level", "31337", "RunRegistry", "0x" + "0b" * 20, "block 99",
                 f"| `0x{'aa' * 20}` | 3 | 0.750000 |", "rounds 0..1"]:  # fmt: skip
        assert text in card, text
    empty = render_model_card(ModelCardFacts(**{**facts.__dict__, "shares": (), "tokenizer_hash": "0x" + "05" * 32}))
    assert "No shares were minted" in empty and "0x" + "05" * 32 in empty
