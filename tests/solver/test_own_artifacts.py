"""A solver whose own stored checkpoint goes corrupt: never served, named in an ERROR, re-created, work goes on.

Real anvil, real run, a real `SolverNode` in this process (so the test can reach its disk between steps), its real
artifact server over HTTP. Before the fix the server answered 500 with a traceback and the log said nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging

import httpx
import pytest

from devnet.deploy import build_contracts
from node.logs import get_logger
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import load_manifest
from protocol.commitment import decode_commitment_doc
from protocol.hashing import hash_to_hex
from protocol.payload import decode_payload_doc
from solver.decide import Action
from solver.node import SolverNode, SolverSettings
from tests.chain_fixtures import FAST_RULES, driven_deployment, events_of, prepare_run
from tests.log_capture import LogRecords

pytestmark = pytest.mark.e2e

SOLVER = 1


class Records(LogRecords):
    def find(self, event: str) -> list[dict]:
        return [r.fields for r in self.records if r.getMessage() == event]  # type: ignore[attr-defined]


class DriftingSolverNode(SolverNode):
    """Trains differently once `drift` is set: as if restarted under another execution profile."""

    drift = False

    def train_records(self, inputs, writer):
        if self.drift:
            inputs = dataclasses.replace(inputs, theta={k: v + 1e-3 for k, v in inputs.theta.items()})
        return super().train_records(inputs, writer)


@contextlib.contextmanager
def _running_solver(tmp_path, corpus, overrides=None):
    with driven_deployment(build_contracts(), tmp_path / "chain") as deployment:
        setup = prepare_run(deployment, corpus, tmp_path / "home", [SOLVER], [], FAST_RULES, overrides)
        setup.create(wait_for_nodes=False)
        peers = tuple((setup.home / "peers.txt").read_text().split())
        node = DriftingSolverNode(
            SolverSettings(setup.run_id, setup.home, peers=peers, allow_private_peers=True), get_devnet_account(SOLVER),
            deployment.protocol.chain.rpc_url, load_manifest(deployment.manifest_path),
        )  # fmt: skip
        log = Records()
        get_logger("solver").addHandler(log)
        get_logger("solver").setLevel(logging.INFO)
        try:
            assert node.start()
            url = node.start_server()
            yield node, url, log, setup
        finally:
            get_logger("solver").removeHandler(log)
            if node.server is not None:
                node.server.stop()
            setup.creator_server.stop()


@pytest.fixture
def solver(tmp_path, corpus):
    with _running_solver(tmp_path, corpus) as running:
        yield running


@pytest.fixture
def codec_solver(tmp_path, corpus):
    with _running_solver(tmp_path, corpus, {"train": {"codec": "int2-c64-k8"}}) as running:
        yield running


def _path(node: SolverNode, digest: bytes):
    return node.store.root / digest.hex()[:2] / digest.hex()


def test_a_corrupt_checkpoint_is_refused_named_recreated_and_the_round_committed(solver):
    node, url, log, setup = solver
    node.act(Action("train", 0))
    record = node.record_of(setup.run_id, 0)
    doc = decode_commitment_doc(node.store.get(record.doc_hash))
    end = doc.leaves[-1].end_hash
    good = node.store.get(end)
    _path(node, end).write_bytes(good[:-1] + bytes([good[-1] ^ 1]))  # one flipped bit

    response = httpx.get(f"{url}/artifacts/{hash_to_hex(end)}")
    assert response.status_code == 503, response.text
    assert "is corrupt on this node" in response.json()["detail"] and "Traceback" not in response.text

    [error] = log.find("own artifact corrupt: not served")
    assert error["artifact"] == hash_to_hex(end)
    assert error["what"] == f"the end checkpoint of segment {doc.leaves[-1].index} of round 0"
    assert "re-creating it by retraining round 0" in error["consequence"]
    assert "slashed 10 ETH" in error["consequence"]
    assert [r.levelno for r in log.records if r.getMessage() == "own artifact corrupt: not served"] == [logging.ERROR]
    assert list((node.store.root.parent / "artifacts-quarantine").iterdir()), "the bad copy is kept aside"

    node.tick()  # re-creates first, then goes on with the round: commits

    assert log.find("own artifacts re-created") and node.own_artifacts.recreated == [0]
    assert httpx.get(f"{url}/artifacts/{hash_to_hex(end)}").content == good
    assert [e.args["solver"] for e in events_of(setup.protocol, "Committed", setup.run_id)] == [node.address]


def test_a_corrupt_document_is_a_503_and_a_round_that_cannot_be_recreated_is_refused_loudly(solver):
    node, url, log, setup = solver
    node.act(Action("train", 0))
    record = node.record_of(setup.run_id, 0)
    document = node.store.get(record.doc_hash)
    _path(node, record.doc_hash).write_bytes(document.replace(b"0x", b"0X", 1))
    node.drift = True  # retraining no longer gives the committed bytes

    response = httpx.get(f"{url}/commitments/{setup.run_id}/0")
    assert response.status_code == 503 and "retry later" in response.json()["detail"]
    [error] = log.find("own artifact corrupt: not served")
    assert error["what"] == "the commitment document of round 0"

    node.own_artifacts.run_queued()

    [refusal] = log.find("cannot re-create own artifacts")
    assert "slashed 10 ETH unless a good copy is put back" in refusal["consequence"]
    assert [r.levelno for r in log.records if r.getMessage() == "cannot re-create own artifacts"] == [logging.ERROR]
    assert not node.store.has(record.doc_hash), "bytes that do not match their name are never put back"
    assert httpx.get(f"{url}/commitments/{setup.run_id}/0").status_code == 503
    node.own_artifacts.run_queued()
    assert len(log.find("re-creating own artifacts")) == 1, "a round that cannot be re-created is not retried"


def test_before_opening_a_codec_round_its_corrupt_payload_is_found_and_recreated(codec_solver):
    """In a codec run verifiers also fetch P_r, e_r and e_(r+1), which the payload document (the commitment's Δ hash)
    names: a corrupt P_r is caught before the opening and the round re-created, not opened unservable."""
    node, url, log, setup = codec_solver
    node.act(Action("train", 0))
    record = node.record_of(setup.run_id, 0)
    doc = decode_commitment_doc(node.store.get(record.doc_hash))
    payload_doc = decode_payload_doc(node.store.get(doc.delta_hash))
    good = node.store.get(payload_doc.payload_hash)
    _path(node, payload_doc.payload_hash).write_bytes(good[:-1] + bytes([good[-1] ^ 1]))

    assert node.own_artifacts.ensure_served(record, doc, [0])

    [missing] = log.find("own artifacts missing before opening")
    assert hash_to_hex(payload_doc.payload_hash)[:18] in missing["artifacts"]
    assert node.own_artifacts.recreated == [0]
    assert httpx.get(f"{url}/artifacts/{hash_to_hex(payload_doc.payload_hash)}").content == good
