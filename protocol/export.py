"""A run's θ as a Hugging Face model: the built-in GPT as GPT-2, the byte-level tokenizer, the model card.

Pure: tensors and dicts in, tensors, dicts, bytes and text out; protocol/adapters/hf_checkpoints.py writes them.

The built-in GPT (protocol/model.py) is GPT-2's architecture with two spellings changed for exact replay, so
its parameters map one to one onto `transformers`' `GPT2LMHeadModel`:
- GPT-2 stores its projections (`c_attn`, `c_proj`, `c_fc`) as `Conv1D`, whose weight is the transpose of the
  `nn.Linear` weight the GPT uses; every such weight is transposed, biases are not;
- the GPT's MLP uses exact GELU (`F.gelu`): activation_function "gelu", not GPT-2's default "gelu_new";
- LayerNorm eps 1e-5, the output head tied to the token embedding (GPT-2's default), no dropout;
- the names gain GPT2LMHeadModel's "transformer." prefix.
The conversion is exact (transposes only), so `convert_gpt2_to_gpt(convert_gpt_to_gpt2(p)) == p` bit for bit.

The byte-level tokenizer's ids ARE the byte values: a `tokenizers` BPE with no merges whose vocabulary maps
GPT-2's printable stand-in of byte b (`get_bytes_to_unicode`) to b, behind a ByteLevel pre-tokenizer and decoder.
Encoding text gives its UTF-8 bytes; decoding ids gives the text back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from protocol.config import ModelConfig
from protocol.errors import GradledgerError
from protocol.tokenization import EOS_TOKENS

GPT2_PREFIX = "transformer."
_TRANSPOSED = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
_SPECIAL_TOKENS = ("bos", "eos", "pad", "unk")


class ExportError(GradledgerError):
    """θ cannot be expressed as the requested Hugging Face model or tokenizer."""


# -- the built-in GPT as GPT-2 ---------------------------------------------------------------------


def get_gpt2_config(config: ModelConfig) -> dict[str, Any]:
    """`GPT2Config` keyword arguments of the model that computes exactly what the built-in GPT computes."""
    return {
        "vocab_size": config.vocab_size,
        "n_positions": config.block_size,
        "n_embd": config.n_embd,
        "n_layer": config.n_layer,
        "n_head": config.n_head,
        "n_inner": 4 * config.n_embd,
        "activation_function": "gelu",
        "layer_norm_epsilon": 1e-5,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "scale_attn_weights": True,
        "tie_word_embeddings": True,
        "bos_token_id": None,  # byte-level: no special tokens (GPT-2's default 50256 is outside the vocabulary)
        "eos_token_id": None,
        "use_cache": True,
    }


def _is_transposed(name: str) -> bool:
    return name.endswith(_TRANSPOSED)


def convert_gpt_to_gpt2(params: Mapping[str, torch.Tensor], n_layer: int) -> dict[str, torch.Tensor]:
    """The GPT's parameters (its own names, no "param/") as a GPT2LMHeadModel state dict (tied head omitted)."""
    expected = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"}
    for i in range(n_layer):
        for part in ("ln_1", "ln_2", "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
            expected |= {f"h.{i}.{part}.weight", f"h.{i}.{part}.bias"}
    if set(params) != expected:
        missing, extra = sorted(expected - set(params)), sorted(set(params) - expected)
        raise ExportError(f"not the built-in GPT's parameters: missing {missing[:3]}, unexpected {extra[:3]}")
    return {
        GPT2_PREFIX + name: (value.t() if _is_transposed(name) else value).contiguous()
        for name, value in params.items()
    }


def convert_gpt2_to_gpt(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The inverse of `convert_gpt_to_gpt2`: a GPT2LMHeadModel state dict as the GPT's parameters."""
    out = {}
    for name, value in state.items():
        if name == "lm_head.weight":
            continue  # tied to transformer.wte.weight
        if not name.startswith(GPT2_PREFIX):
            raise ExportError(f"{name} is not a GPT2LMHeadModel parameter (expected the {GPT2_PREFIX!r} prefix)")
        short = name.removeprefix(GPT2_PREFIX)
        out[short] = (value.t() if _is_transposed(short) else value).contiguous()
    return out


# -- tokenizers ------------------------------------------------------------------------------------


def get_bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable characters (the ByteLevel pre-tokenizer's alphabet)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars, strict=True)}


def build_byte_tokenizer_json() -> bytes:
    """The byte-level tokenizer as `tokenizers` JSON: token id b is byte b, for every byte."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    table = get_bytes_to_unicode()
    tokenizer = Tokenizer(models.BPE(vocab={table[b]: b for b in range(256)}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer.to_str().encode("utf-8")


def _parse_tokenizer(data: bytes) -> Any:
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_str(data.decode("utf-8"))
    except Exception as exc:  # tokenizers raises a bare Exception on bad JSON; UnicodeDecodeError too
        raise ExportError(f"the tokenizer artifact is not a `tokenizers` JSON file ({exc})") from None


def get_tokenizer_vocab_size(data: bytes) -> int:
    """Ids the tokenizer can produce (added tokens included): must not exceed the model's vocabulary."""
    return int(_parse_tokenizer(data).get_vocab_size(with_added_tokens=True))


def get_tokenizer_config(data: bytes, hf_config: Mapping[str, Any], block_size: int) -> dict[str, Any]:
    """tokenizer_config.json for `AutoTokenizer.from_pretrained`: the fast tokenizer class, the context length,
    and the model config's bos/eos/pad/unk ids named as tokens when the tokenizer declares them special; without an
    eos id, the tokenizer's special end-of-text token (the document separator of `gradledger data prepare`) if any."""
    document = json.loads(data.decode("utf-8"))
    special = {int(t["id"]): t["content"] for t in document.get("added_tokens") or [] if t.get("special")}
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": block_size,
        "clean_up_tokenization_spaces": False,
    }
    for role in _SPECIAL_TOKENS:
        token_id = hf_config.get(f"{role}_token_id")
        if isinstance(token_id, int) and token_id in special:
            config[f"{role}_token"] = special[token_id]
    if "eos_token" not in config:  # the dataset's document separator (protocol/tokenization.py) ends a text
        found = [name for name in EOS_TOKENS if name in special.values()]
        if found:
            config["eos_token"] = found[0]
    return config


# -- ownership and the model card ------------------------------------------------------------------


@dataclass(frozen=True)
class ShareMinted:
    """One `SharesMinted` event of the run: `amount` share units to `holder` for work in `round`."""

    round: int
    holder: str
    amount: int


@dataclass(frozen=True)
class ShareHolding:
    """Share units a holder was minted for work in the rounds that made θ, and its fraction of all of them."""

    holder: str
    shares: int
    total: int

    @property
    def fraction(self) -> str:
        """shares / total as a decimal with 6 places, from integers (no float rounding surprises)."""
        if self.total == 0:
            return "0.000000"
        millionths = (self.shares * 1_000_000 * 2 + self.total) // (2 * self.total)  # round half up
        return f"{millionths // 1_000_000}.{millionths % 1_000_000:06d}"


def compute_share_holdings(mints: Iterable[ShareMinted], through_round: int) -> tuple[ShareHolding, ...]:
    """Per holder, the shares minted for rounds 0..through_round, largest first (then by address)."""
    totals: dict[str, int] = {}
    for mint in mints:
        if mint.round <= through_round and mint.amount > 0:
            key = mint.holder
            totals[key] = totals.get(key, 0) + mint.amount
    total = sum(totals.values())
    ordered = sorted(totals.items(), key=lambda item: (-item[1], item[0].lower()))
    return tuple(ShareHolding(holder, amount, total) for holder, amount in ordered)


@dataclass(frozen=True)
class ModelCardFacts:
    """Everything the model card states; each hash and address can be checked against the chain."""

    run_id: int
    round: int
    theta_hash: str
    weights_hash: str
    config_hash: str
    dataset_root: str
    tokenizer_hash: str | None
    chain_id: int
    contracts: tuple[tuple[str, str], ...]
    architecture: str
    parameters: int
    block_size: int
    vocab_size: int
    shares: tuple[ShareHolding, ...]
    shares_block: int

    @property
    def theta_index(self) -> int:
        """θ_(R+1): the state round R settled (round R trains from θ_R)."""
        return self.round + 1


def _table(rows: Iterable[tuple[str, str]]) -> list[str]:
    return ["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]


def render_model_card(facts: ModelCardFacts) -> str:
    """README.md of an exported model: Hugging Face front matter, the on-chain record, the ownership shares."""
    tokenizer = (
        f"`{facts.tokenizer_hash}` (the dataset's tokenizer artifact, tokenizer.json)"
        if facts.tokenizer_hash
        else "byte-level, built in: token id = byte value (tokenizer.json written by gradledger, not an artifact)"
    )
    lines = [
        "---",
        "library_name: transformers",
        "pipeline_tag: text-generation",
        "tags:",
        "- gradledger",
        "---",
        f"# gradledger run {facts.run_id}, after round {facts.round}",
        "",
        f"θ_{facts.theta_index}: the model as round {facts.round} of run {facts.run_id} settled it on chain "
        f"{facts.chain_id} (rounds 0..{facts.round} of verified decentralized training). "
        f"{facts.architecture}, {facts.parameters:,} parameters, context {facts.block_size} tokens, vocabulary "
        f"{facts.vocab_size:,}.",
        "",
        "## On-chain record",
        "",
        *_table(
            [
                ("run", str(facts.run_id)),
                ("round settled", str(facts.round)),
                (f"θ_{facts.theta_index} state hash", f"`{facts.theta_hash}`"),
                ("weights hash", f"`{facts.weights_hash}`"),
                ("config hash", f"`{facts.config_hash}`"),
                ("dataset root", f"`{facts.dataset_root}`"),
                ("tokenizer", tokenizer),
                ("chain id", str(facts.chain_id)),
                *((name, f"`{address}`") for name, address in facts.contracts),
            ]
        ),
        "",
        f"The θ state hash is `RunRegistry.thetaOf({facts.run_id}, {facts.theta_index})`: SHA-256 of the canonical "
        "state (parameters and outer momentum, protocol/state.py), fetchable from any node by that hash. The weights "
        'hash is the same hash over the parameters alone ("param/<name>"), what these weights hash to when read '
        "back with gradledger (docs/export.md).",
        "",
        "## Ownership shares",
        "",
        f"Shares of the run's share token minted for work in rounds 0..{facts.round} (ModelShares `SharesMinted` "
        f"events, read at block {facts.shares_block}), per holder, as a fraction of all of them. Contributors who "
        "had not claimed their shares yet by that block are not listed; later transfers of the token are not "
        "reflected.",
        "",
    ]
    if facts.shares:
        lines += ["| holder | shares (base units) | fraction |", "|---|---:|---:|"]
        lines += [f"| `{s.holder}` | {s.shares} | {s.fraction} |" for s in facts.shares]
    else:
        lines.append("No shares were minted for these rounds by that block.")
    lines += [
        "",
        "## Use",
        "",
        "```python",
        "from transformers import AutoModelForCausalLM, AutoTokenizer",
        "model = AutoModelForCausalLM.from_pretrained(DIR)",
        "tokenizer = AutoTokenizer.from_pretrained(DIR)",
        "```",
        "",
    ]
    return "\n".join(lines)
