"""A verifier that abstains in the last round still takes all its money out of the contracts, round by round.

Real anvil (driven clock, tests/clock.py), a real coordinating solver process and a real verifier worker with its
HTTP service in this process: it attests round 0 and abstains in round 1 (the last), as the field's verifier did
when its ticks kept failing. Before the fix it withdrew only at the very end of a tick in which everything else had
succeeded and the run was done; now every node withdraws whatever is credited to it once a round settles (and
whenever its records change), and before it exits.
"""

from __future__ import annotations

import threading

import pytest

from devnet.deploy import build_contracts
from node.credits import CREDIT_CONTRACTS
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import load_manifest
from tests.chain_fixtures import (
    FAST_RULES,
    driven_deployment,
    events_of,
    prepare_run,
    read_log,
    start_node,
    stop,
    wait_until,
)
from verifier.metrics import VerifierMetrics
from verifier.service import start_verifier_service
from verifier.worker import VerifierWorker

pytestmark = pytest.mark.e2e

SOLVER, VERIFIER = 1, 2


class AbstainingVerifierWorker(VerifierWorker):
    """Attests round 0; in every later round it does not attest anything (it abstains)."""

    def _attest_round(self, round_index: int, past_open_end: bool) -> None:
        if round_index == 0:
            super()._attest_round(round_index, past_open_end)


class ThreadHandle:
    """What the clock driver needs of a node (`poll()`), for a worker running in a thread of this process."""

    def __init__(self, thread: threading.Thread) -> None:
        self.thread = thread

    def poll(self) -> int | None:
        return None if self.thread.is_alive() else 0


def _spent_by(chain, address: str, first_block: int, last_block: int) -> int:
    """ETH `address` sent in transactions (value + gas) in [first_block, last_block]."""
    spent = 0
    for number in range(first_block, last_block + 1):
        for tx in chain.w3.eth.get_block(number, full_transactions=True)["transactions"]:
            if tx["from"].lower() != address.lower():
                continue
            receipt = chain.w3.eth.get_transaction_receipt(tx["hash"])
            spent += tx["value"] + receipt["gasUsed"] * receipt["effectiveGasPrice"]
    return spent


def test_an_abstaining_verifier_withdraws_every_credit(tmp_path, corpus):
    with driven_deployment(build_contracts(), tmp_path / "chain") as deployment:
        setup = prepare_run(deployment, corpus, tmp_path / "home", [SOLVER], [VERIFIER], FAST_RULES)
        protocol, run_id, chain = setup.protocol, setup.run_id, setup.protocol.chain
        address = get_devnet_account(VERIFIER).address
        worker = AbstainingVerifierWorker(
            run_id, setup.home, get_devnet_account(VERIFIER), chain.rpc_url, load_manifest(deployment.manifest_path),
            tuple((setup.home / "peers.txt").read_text().split()), VerifierMetrics(), allow_private_peers=True,
        )  # fmt: skip
        start_block, start_balance = chain.block_number(), chain.get_balance(address)
        handle, thread = start_verifier_service(worker, "127.0.0.1", setup.ports[VERIFIER])
        solver = start_node(setup, "solver", SOLVER, "--coordinator")
        try:
            setup.create()
            nodes = [(setup.ports[SOLVER], solver), (setup.ports[VERIFIER], ThreadHandle(thread))]
            with setup.drive(lambda: nodes):
                wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
                wait_until(lambda: not thread.is_alive(), 300, "the verifier to be done and exit")
        finally:
            worker.stop.set()
            thread.join(timeout=30)
            handle.stop()
            stop(solver)
            setup.creator_server.stop()
        log = read_log(setup, "solver", SOLVER)
        end_block = chain.block_number()

        passes = events_of(protocol, "PassAttested", run_id)
        assert [e.args["round"] for e in passes if e.args["verifier"] == address] == [0], log
        assert len(events_of(protocol, "Committed", run_id)) == 2, (
            "the solver committed in round 1: a seat to abstain on"
        )

        # everything credited to it -- round 0's attestation bond back, its part of round 0's release -- ...
        bond = sum(
            e.args["bond"] for e in events_of(protocol, "AttestationFinalized", run_id) if e.args["verifier"] == address
        )
        release = sum(
            e.args["amount"] for e in events_of(protocol, "RoundRewardCredited", run_id) if e.args["to"] == address
        )
        assert bond == FAST_RULES.run.attestation_bond and release > 0
        # ... was withdrawn, and nothing is left in any contract
        withdrawn = [e for e in chain.get_events(start_block, names=["Withdrawn"]) if e.args["account"] == address]
        assert sum(e.args["amount"] for e in withdrawn) == bond + release
        assert {e.contract for e in withdrawn} == {"Verification", "ModelShares"}
        assert {c: protocol.credits_of(c, address) for c in CREDIT_CONTRACTS} == dict.fromkeys(CREDIT_CONTRACTS, 0)
        # round 0's money left the contracts while round 1 was still running, not only when the node was done
        [last_settled] = [e for e in events_of(protocol, "RoundSettled", run_id) if e.args["round"] == 1]
        assert all(e.block_number < last_settled.block_number for e in withdrawn)
        # and its balance is up by exactly what it withdrew (less the bond and gas its own transactions cost)
        spent = _spent_by(chain, address, start_block + 1, end_block)
        assert chain.get_balance(address) == start_balance - spent + bond + release
