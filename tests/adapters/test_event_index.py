"""protocol/adapters/event_index.py: the SQLite index of a deployment's events, incremental and reorg-safe, against a
real anvil; and its args codec, by which a fold over indexed events equals the fold over the events themselves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devnet.anvil import AnvilProcess
from devnet.deploy import build_contracts, deploy_protocol
from protocol.adapters.chain import ChainClient
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.event_index import EventIndex, decode_args, encode_args
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.run_events import RunEventReader
from protocol.history.fold import fold_run_history
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER
from tests.chain_fixtures import FAST_RULES, prepare_run
from tests.history_builder import planted_run

ETH = 10**18


@pytest.fixture
def chain() -> Iterator[ProtocolClient]:
    with AnvilProcess() as anvil:
        manifest = deploy_protocol(ChainClient(anvil.rpc_url), get_devnet_account(0), build_contracts())
        yield ProtocolClient(ChainClient(anvil.rpc_url, manifest))


def _key(events) -> list[tuple]:
    return [(e.block_number, e.log_index, e.contract, e.name, encode_args(e.args)) for e in events]


def _all(protocol: ProtocolClient):
    return protocol.chain.get_events(protocol.chain.deployment.deployed_block)


def test_sync_indexes_what_the_chain_holds_and_only_new_blocks_after(chain, tmp_path):
    for i in (1, 2, 3):
        chain.deposit_stake(get_devnet_account(i), ROLE_SOLVER, i * ETH)
    chain.announce_peer(get_devnet_account(1), "http://127.0.0.1:9")
    index = EventIndex(tmp_path / "events.sqlite", ChainClient(chain.chain.rpc_url, chain.chain.deployment))
    assert index.sync().new == len(_all(chain)) > 0
    assert _key(index.events()) == _key(_all(chain))
    assert set(index.timestamps()) == {e.block_number for e in _all(chain)}
    assert index.sync().new == 0  # nothing new: nothing stored again

    chain.deposit_stake(get_devnet_account(4), ROLE_VERIFIER, ETH)
    logs_before = index.chain.provider.requests["eth_getLogs"]
    assert index.sync().new == 1 and _key(index.events()) == _key(_all(chain))
    assert index.chain.provider.requests["eth_getLogs"] - logs_before == 1  # one span: the new block only
    deposits = index.events(names=["StakeDeposited"])
    assert [e.args["account"] for e in deposits][-1] == get_devnet_account(4).address

    # a new process opens the file: everything is there, and nothing old is read again
    reopened = EventIndex(tmp_path / "events.sqlite", ChainClient(chain.chain.rpc_url, chain.chain.deployment))
    assert _key(reopened.events()) == _key(_all(chain)) and reopened.sync().new == 0
    assert reopened.chain.provider.requests["eth_getLogs"] == 0


def test_sync_after_a_reorg_drops_the_orphaned_events_and_reads_the_new_branch(chain, tmp_path):
    chain.deposit_stake(get_devnet_account(1), ROLE_SOLVER, ETH)
    index = EventIndex(tmp_path / "events.sqlite", ChainClient(chain.chain.rpc_url, chain.chain.deployment))
    index.sync()
    snapshot = chain.chain.devnet_call("evm_snapshot", [])
    chain.deposit_stake(get_devnet_account(2), ROLE_SOLVER, 2 * ETH)  # to be orphaned
    index.sync()
    assert get_devnet_account(2).address in [e.args["account"] for e in index.events(names=["StakeDeposited"])]
    chain.chain.devnet_call("evm_revert", [snapshot])
    chain.chain.mine(3)
    chain.deposit_stake(get_devnet_account(3), ROLE_SOLVER, 3 * ETH)  # the new branch, longer than the old
    report = index.sync()
    assert report.dropped >= 1 and _key(index.events()) == _key(_all(chain))
    accounts = [e.args["account"] for e in index.events(names=["StakeDeposited"])]
    assert get_devnet_account(2).address not in accounts and get_devnet_account(3).address in accounts


def test_an_index_file_of_another_deployment_is_rebuilt_not_mixed(chain, tmp_path):
    chain.deposit_stake(get_devnet_account(1), ROLE_SOLVER, ETH)
    EventIndex(tmp_path / "events.sqlite", ChainClient(chain.chain.rpc_url, chain.chain.deployment)).sync()
    with AnvilProcess(extra_args=("--timestamp", "1900000000")) as other_anvil:
        other = deploy_protocol(ChainClient(other_anvil.rpc_url), get_devnet_account(0), build_contracts())
        index = EventIndex(tmp_path / "events.sqlite", ChainClient(other_anvil.rpc_url, other))
        assert index.events() == []
        index.sync()
        assert _key(index.events()) == _key(ChainClient(other_anvil.rpc_url, other).get_events(other.deployed_block))


def test_a_run_s_events_and_its_share_token_are_indexed_by_run(deployment, corpus, tmp_path):
    setup = prepare_run(deployment, corpus, tmp_path / "home", [], [], FAST_RULES)
    run_id = setup.create(wait_for_nodes=False)
    setup.creator_server.stop()
    index = EventIndex(":memory:", ChainClient(deployment.protocol.chain.rpc_url, deployment.protocol.chain.deployment))
    index.sync()
    names = {e.name for e in index.events(run_id=run_id)}
    assert {"RunCreated", "RoundStarted"} <= names
    assert index.chain.has_contract(f"RunShares#{run_id}")  # its events decode from now on
    history = fold_run_history(index.events(run_id=run_id), run_id)
    assert history.run_id == run_id and history.terms.max_rounds == FAST_RULES.run.max_rounds


def test_encode_args_round_trips_every_event_of_a_run_and_the_fold_is_unchanged():
    events = planted_run(dispute="false plant").events
    again = [type(e)(e.contract, e.name, decode_args(encode_args(e.args)), e.block_number, e.log_index,
                     e.transaction_hash) for e in events]  # fmt: skip
    assert [decode_args(encode_args(e.args)) == e.args for e in events] == [True] * len(events)
    assert fold_run_history(again, 1) == fold_run_history(events, 1)


def test_encode_args_tags_bytes_so_hex_strings_stay_strings(tmp_path: Path):
    value = {"a": b"\x01\x02", "b": "0x0102", "c": [b"", {"d": 2**200}], "e": True}
    assert decode_args(encode_args(value)) == {"a": b"\x01\x02", "b": "0x0102", "c": [b"", {"d": 2**200}], "e": True}


def test_a_reorg_that_orphans_no_event_still_says_the_index_was_rewound(chain, tmp_path):
    chain.deposit_stake(get_devnet_account(1), ROLE_SOLVER, ETH)
    index = EventIndex(tmp_path / "events.sqlite", ChainClient(chain.chain.rpc_url, chain.chain.deployment))
    index.sync()
    snapshot = chain.chain.devnet_call("evm_snapshot", [])
    chain.chain.mine(2)  # blocks without events, to be orphaned
    assert not index.sync().reorganised
    chain.chain.devnet_call("evm_revert", [snapshot])
    chain.deposit_stake(get_devnet_account(2), ROLE_SOLVER, 2 * ETH)  # an event below the old head
    chain.chain.mine(3)
    report = index.sync()
    assert report.reorganised and report.dropped == 0  # a reader taking "the blocks after mine" would miss it
    assert _key(index.events()) == _key(_all(chain))


def test_a_node_s_run_reader_hands_each_event_out_once_from_its_file_and_all_again_after_a_reorg(
    deployment, corpus, tmp_path
):
    setup = prepare_run(deployment, corpus, tmp_path / "home", [], [], FAST_RULES)
    run_id = setup.create(wait_for_nodes=False)
    setup.creator_server.stop()
    rpc, manifest = deployment.protocol.chain.rpc_url, deployment.protocol.chain.deployment
    created = next(
        e.block_number for e in _all(deployment.protocol) if e.name == "RunCreated" and e.args["runId"] == run_id
    )
    path = tmp_path / "node" / "events.sqlite"
    reader = RunEventReader(ProtocolClient(ChainClient(rpc, manifest)), run_id, created, path)
    first = reader.read_new()
    assert not first.reorganised and {"RunCreated", "RoundStarted"} <= {e.name for e in first.new}
    assert all(e.block_number >= created for e in first.new) and set(reader.timestamps) >= {
        e.block_number for e in first.new
    }
    assert reader.read_new().new == []  # nothing new: nothing handed out twice
    snapshot = deployment.protocol.chain.devnet_call("evm_snapshot", [])
    deployment.protocol.deposit_stake(get_devnet_account(5), ROLE_SOLVER, ETH)
    assert [e.name for e in reader.read_new().new] == ["StakeDeposited"]

    # the node restarts: its file holds the run, only the blocks after it are read from the chain
    client = ChainClient(rpc, manifest)
    restarted = RunEventReader(ProtocolClient(client), run_id, created, path)
    assert _key(restarted.read_new().new) == _key(
        [*first.new, *reader.index.events(names=["StakeDeposited"], from_block=created)]
    )
    assert client.provider.requests["eth_getLogs"] == 0

    deployment.protocol.chain.devnet_call("evm_revert", [snapshot])  # the deposit is orphaned
    deployment.protocol.chain.mine(3)
    again = restarted.read_new()
    assert again.reorganised and "StakeDeposited" not in {e.name for e in again.new}
    assert _key(again.new) == _key(first.new)
