"""The ETH ledger (protocol/ledger.py) against a real anvil's balances for a run's plant pool (issue 36, finding 9).

The attack: anyone calls `Plants.fundPool` before the creator's `setTerms`. `PlantTermsSet` used to report only the
pool after the call -- the earlier fund included -- and the ledger added it on top of the fund's own
`PlantPoolFunded`: the fund was counted twice and every later audit's balance check failed by its amount. The event
now names what the call brought in (`funded`, msg.value), and that is what the ledger adds.
"""

from __future__ import annotations

from devnet.runs import ETH, build_run_terms
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.keys import get_devnet_account
from protocol.config import build_run_config
from protocol.ledger import compute_ledger
from protocol.run_presets import TINY
from protocol.types import PlantTerms

RULES = TINY.with_run(max_rounds=2, commit_window=30, attest_window=30, challenge_window=30)


def _held(protocol: ProtocolClient) -> int:
    """ETH held by every protocol contract and every run's share token now."""
    chain = protocol.chain
    contracts = [r.address for r in chain.deployment.contracts.values() if r.address.lower() != "0x" + "00" * 20]
    runs = chain.call("RunRegistry", "runCount")
    tokens = [protocol.share_token(run) for run in range(1, runs + 1)]
    return sum(chain.w3.eth.get_balance(a) for a in {*contracts, *tokens})


def _implied(protocol: ProtocolClient) -> int:
    chain = protocol.chain
    return compute_ledger(chain.get_events(chain.deployment.deployed_block, chain.block_number())).implied_balance


def test_fund_pool_before_set_terms_is_counted_once(deployment):
    protocol = deployment.protocol
    creator, funder = get_devnet_account(0), get_devnet_account(7)
    held_before, implied_before = _held(protocol), _implied(protocol)
    config = build_run_config(preset="tiny", run_seed="0x" + "9f" * 32, dataset_root="0x" + "00" * 32)
    terms = build_run_terms(bytes(32), bytes(32), bytes(32), config, RULES.run)
    run_id, _ = protocol.create_run(creator, terms, 3 * ETH)

    protocol.fund_plant_pool(funder, run_id, 2 * ETH)  # before the terms exist
    result = protocol.set_plant_terms(creator, run_id, PlantTerms(100, ETH // 50, ETH), 5 * ETH)

    (event,) = [e for e in result.events if e.name == "PlantTermsSet"]
    assert (event.args["funded"], event.args["pool"]) == (5 * ETH, 7 * ETH)
    assert protocol.plant_pool(run_id) == 7 * ETH
    # the run brought in 3 + 2 + 5 ETH, each wei once, in the events as in the balances
    assert _held(protocol) - held_before == 10 * ETH
    assert _implied(protocol) - implied_before == 10 * ETH
