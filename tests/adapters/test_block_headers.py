"""Block headers as the contracts take them (protocol/adapters/chain.py, contracts/src/BlockRandomness.sol).

The vectors (tests/vectors/block_headers.json, real anvil blocks of several hardforks; forge reads them too, in
contracts/test/BlockRandomness.t.sol) rebuild from their fields and decode to their mixHash. On a real anvil,
drawSeed stores the first 12 bytes of the seed block's RANDAO value (its header's mixHash), not of its hash: the
block's builder can grind the hash, not the RANDAO value.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import rlp
from hexbytes import HexBytes

from devnet.deploy import build_contracts
from devnet.runs import ETH, build_run_terms
from protocol.adapters.block_headers import HEADER_FIELDS, encode_block_header
from protocol.adapters.chain import ChainError, ContractRevertError, UnknownHeaderLayoutError
from protocol.adapters.keys import get_devnet_account
from protocol.config import build_run_config
from protocol.hashing import keccak256
from protocol.run_presets import TINY
from protocol.types import get_randao_block
from tests.chain_fixtures import driven_deployment
from tests.vectors.generate import VECTORS_DIR

VECTORS = json.loads((VECTORS_DIR / "block_headers.json").read_text())["vectors"]
MIX_INDEX = HEADER_FIELDS.index("mixHash")  # 13: the 14th item, where BlockRandomness.randaoOf reads it
RULES = TINY.with_run(max_rounds=1, commit_window=30, attest_window=30, challenge_window=30)


def _bytes(hex_text: str) -> bytes:
    return bytes(HexBytes(hex_text))


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_encode_block_header_vector_fields_rebuild_rlp_and_hash_succeeds(vector: dict[str, Any]):
    header = encode_block_header(vector["fields"])
    assert header == _bytes(vector["rlp"])
    assert keccak256(header) == _bytes(vector["hash"])


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_decode_block_header_vector_item14_is_mix_hash_succeeds(vector: dict[str, Any]):
    items = rlp.decode(_bytes(vector["rlp"]))
    assert items[MIX_INDEX] == _bytes(vector["mixHash"])
    assert int.from_bytes(items[HEADER_FIELDS.index("number")], "big") == vector["number"]


def test_encode_block_header_rpc_hex_quantities_same_rlp_succeeds():
    """Raw JSON-RPC quantities (0x-hex strings) encode as web3's decoded integers do."""
    vector = VECTORS[1]
    raw = {k: hex(v) if isinstance(v, int) else v for k, v in vector["fields"].items()}
    assert encode_block_header(raw) == _bytes(vector["rlp"])


@pytest.mark.parametrize("length", [1, 31, 32, 56, 300])
def test_encode_block_header_non_empty_extra_data_mix_still_item14_succeeds(length: int):
    """anvil cannot set extraData, so every vector's is empty; a real chain's is up to 32 bytes (and the contract takes
    any length): the mixHash stays the 14th item whatever extraData's encoding (short or long string)."""
    fields = dict(VECTORS[1]["fields"], extraData="0x" + "ee" * length)
    items = rlp.decode(encode_block_header(fields))
    assert items[HEADER_FIELDS.index("extraData")] == b"\xee" * length
    assert items[MIX_INDEX] == _bytes(VECTORS[1]["mixHash"])


def test_encode_block_header_missing_field_reverts():
    fields = {k: v for k, v in VECTORS[1]["fields"].items() if k != "mixHash"}
    with pytest.raises(UnknownHeaderLayoutError, match=r"no header field\(s\) \['mixHash'\]"):
        encode_block_header(fields)


# -- on a real anvil ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    with driven_deployment(build_contracts(), tmp_path_factory.mktemp("randao")) as deployed:
        yield deployed.protocol


def _run_at_seed_draw(protocol) -> tuple[int, int]:
    """A fresh run (no commitment needed to draw), mined past its seed block and at its commitEnd (one block more: the
    block after the seed block, whose mixHash is the seed); returns the run and its seed block."""
    creator = get_devnet_account(0)
    config = build_run_config(preset="tiny", run_seed="0x" + "cd" * 32, dataset_root="0x" + "00" * 32)
    run_id, _ = protocol.create_run(creator, build_run_terms(bytes(32), bytes(32), bytes(32), config, RULES.run), ETH)
    times = protocol.round_times(run_id)
    protocol.chain.mine_blocks(times.seed_block - protocol.chain.block_number())
    protocol.chain.mine_at(max(times.commit_end, protocol.chain.get_block()["timestamp"] + 1))
    return run_id, times.seed_block


def test_get_block_header_rlp_anvil_blocks_hash_to_block_hash_succeeds(chain):
    previous = chain.chain.block_number() - 1  # blockhash serves the 256 blocks before the current one
    for number in (0, previous):
        header = chain.chain.get_block_header_rlp(number)
        block = chain.chain.get_block(number)
        assert keccak256(header) == bytes(block["hash"])
        assert rlp.decode(header)[MIX_INDEX] == bytes(block["mixHash"])
    header = chain.chain.get_block_header_rlp(previous)
    mix = bytes(chain.chain.get_block(previous)["mixHash"])
    assert chain.chain.call("BlockRandomness", "randaoOf", previous, header) == mix


def test_get_block_header_rlp_future_block_reverts(chain):
    with pytest.raises(ChainError, match="not available"):
        chain.chain.get_block_header_rlp(chain.chain.block_number() + 1000)


def test_draw_seed_stores_randao_of_seed_block_not_its_hash_succeeds(chain):
    protocol = chain
    run_id, seed_block = _run_at_seed_draw(protocol)
    # the RANDAO value revealed in the seed block: the mixHash of the block after it (RANDAO_LAG_BLOCKS)
    block = protocol.chain.get_block(get_randao_block(seed_block))
    mix, block_hash = bytes(block["mixHash"]), bytes(block["hash"])
    assert mix != bytes(32), "anvil mixes a RANDAO value into every block"
    own_mix = bytes(protocol.chain.get_block(seed_block)["mixHash"])
    result = protocol.draw_seed(get_devnet_account(5), run_id, 0)
    base = protocol.seed_base(run_id, 0)
    assert base == mix[:12] + bytes(20), "bytes12 of the RANDAO value revealed in the seed block, zero-padded"
    assert base != own_mix[:12] + bytes(20), "not the seed block's own mixHash (its predecessor's proposer knew it)"
    assert base != block_hash[:12] + bytes(20), "no longer bytes12(blockhash(seedBlock))"
    (drawn,) = [e for e in result.events if e.name == "SeedDrawn"]
    assert drawn.args["randao"] == mix and drawn.args["blockNumber"] == seed_block
    assert drawn.args["seedBase"] == base


def test_draw_seed_forged_header_reverts(chain):
    protocol = chain
    run_id, seed_block = _run_at_seed_draw(protocol)
    header = protocol.chain.get_block_header_rlp(get_randao_block(seed_block))
    items = rlp.decode(header)
    items[MIX_INDEX] = keccak256(b"a RANDAO value of my choice")
    forged = rlp.encode(items)
    with pytest.raises(ContractRevertError) as caught:
        protocol.chain.send(get_devnet_account(5), "Verification", "drawSeed", run_id, 0, forged)
    assert caught.value.error == "HeaderMismatch"
    assert caught.value.args_["got"] == keccak256(forged)
    assert protocol.seed_base(run_id, 0) == bytes(32), "nothing drawn"
