"""A false plant is disputed by the honest verifier whose pass it overturned, with no whistleblower watching
(issue 37, node/plant_checks.py); a true plant over the same seat is checked and left alone.

Real anvil (driven clock, tests/clock.py), real node objects in this process, each serving its real HTTP API: the
solver (solver/node.py; the false planter overrides only `train_records`), the honest verifier
(verifier/worker.py, with its PlantDefence) and three juror-only verifiers that vote, exchange their votes over
HTTP and submit the verdict. The test plays the block producer and the clock as gradledger/plant_scenario.py does:
rounds 0 and 1 pass with no commitment, round 1's seed block is re-mined until the solver's round 2 is planted,
and the windows are moved on with `mine_at`; every other step is a node's own `tick()` or `act()`.

- False plant: the solver is drawn to plant round 2 but trains it honestly (the committed batch order) and reveals the
  plant. The honest verifier's replay passes it, the reveal overturns that pass (bond and penalty held by Plants),
  and the verifier's next tick replays its seat's sampled segments with the revealed secret, finds one that is not
  the planted training and disputes the plant over it. The jury disproves the plant: the solver is slashed and not
  paid, and once the round settles the verifier's node releases the held forfeit back to itself.
- True plant: the solver trains the planted round. The honest verifier's replay fails it (the jackpot), its plant
  check finds every segment of its seat planted, and nobody disputes anything: the solver is paid, not slashed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace

import pytest

from gradledger.plant_scenario import (
    PLANT_ROUND,
    PLANT_RULES,
    SOLVER,
    mine_planting_seed_block,
    settle_round,
    to_draw_window,
)
from protocol.adapters.artifacts import BackgroundStateWriter
from protocol.adapters.http import serve_in_thread
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.manifest import load_manifest
from protocol.constants import JUROR_MIN_STAKE
from protocol.jury import get_plant_subject
from protocol.training import RoundInputs, SegmentRecord, State, train_round_inputs
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER, AttestationRef, AttestationState, DisputeStatus
from solver.decide import Action
from solver.node import SolverNode, SolverSettings
from tests.chain_fixtures import Deployment, prepare_run
from tests.disputes.conftest import address, all_events, assert_balance_matches_events
from verifier.metrics import VerifierMetrics
from verifier.service import make_verifier_app
from verifier.worker import VerifierWorker

pytestmark = pytest.mark.e2e

RULES = PLANT_RULES.with_run(
    verifiers_per_commitment=1, commit_window=300, attest_window=300, challenge_window=300, dispute_timeout=600
)
"""The planted-fault scenario's terms, with one seat (the honest verifier's) and the other dispute tests' windows (chain
seconds of a driven devnet; the seat's fetch budget is a sixth of the attest window, in wall-clock seconds)."""
HONEST = 13
JURORS = (1, 2, 3)
CHALLENGES = ("AttestationChallenged", "PlantChallenged", "ClaimChallenged")
MAX_DISPUTE_PASSES = 12
"""Passes over every node's tick to bring the plant dispute to an executed verdict (one usually does it: the jury is
drawn, the jurors vote and exchange their votes over HTTP, a quorum's verdict is submitted and executed); none waits."""


class FalsePlanter(SolverNode):
    """A solver drawn to plant that trains the round honestly anyway (the committed batch order, as if it had not been
    drawn) and reveals the plant: honest passes on it are overturned, and it is paid as planted unless somebody checks
    the plant. Everything else -- anchor, commit, open, reveal, serving -- is the honest node's code."""

    def train_records(self, inputs: RoundInputs, writer: BackgroundStateWriter) -> tuple[list[SegmentRecord], State]:
        assert inputs.plant_secret is not None, "drawn to plant"
        return train_round_inputs(
            replace(inputs, plant_secret=None), save_checkpoint=writer.save, in_background=writer.submit
        )


@dataclass
class PlantRound:
    """Round 2 of a 3-round planting run, committed, opened and attested by the honest verifier, then revealed."""

    deployment: Deployment
    run_id: int
    solver: SolverNode
    verifier: VerifierWorker
    jurors: list[VerifierWorker]
    ref: AttestationRef
    """The honest verifier's seat on the planted commitment."""

    @property
    def protocol(self):
        return self.deployment.protocol

    def tick_all(self) -> None:
        for node in (self.verifier, *self.jurors):
            node.tick()

    def seat_segments(self) -> set[int]:
        return {self.protocol.sampled_segment(self.ref, j) for j in range(RULES.run.samples_per_commitment)}

    def settle(self) -> None:
        """Close the challenge window, let the verifier finalize, settle the round (θ_3 = θ_2: no Δ is accepted), and
        let every node do what follows settlement (release the forfeit, claim, withdraw); the solver claims."""
        times = self.protocol.round_times(self.run_id)
        self.protocol.chain.mine_at(max(times.challenge_end, self.protocol.chain.get_block()["timestamp"] + 1))
        self.tick_all()
        settle_round(self.protocol, self.run_id)
        assert self.protocol.round_times(self.run_id).finished
        self.tick_all()
        self.solver.act(Action("claim_shares", PLANT_ROUND))

    def events(self) -> list:
        """Every event of the deployment (fresh for each test: this run's, and the disputes', slashes' and
        withdrawals' that name no run)."""
        return all_events(self.protocol)


@contextmanager
def plant_round(deployment: Deployment, corpus, tmp_path, solver_class: type[SolverNode]) -> Iterator[PlantRound]:
    """Create the run, start every node in this process (each serving its HTTP API), play rounds 0 and 1 with no
    commitment while mining round 1's seed block until round 2 is planted, then play round 2 up to the reveal."""
    protocol = deployment.protocol
    setup = prepare_run(deployment, corpus, tmp_path / "home", [SOLVER], [HONEST, *JURORS], RULES)
    run_id = setup.create(wait_for_nodes=False)
    manifest, rpc_url = load_manifest(deployment.manifest_path), protocol.chain.rpc_url
    peers = tuple((setup.home / "peers.txt").read_text().split())  # the creator's and every node's URL
    with ExitStack() as stack:
        stack.callback(setup.creator_server.stop)
        settings = SolverSettings(run_id, setup.home, port=setup.ports[SOLVER], peers=peers, allow_private_peers=True)
        solver = solver_class(settings, get_devnet_account(SOLVER), rpc_url, manifest)
        stack.callback(solver.state.close)
        solver.start_server()
        stack.callback(solver.server.stop)
        workers = {}
        for account in (HONEST, *JURORS):
            worker = VerifierWorker(
                run_id, setup.home, get_devnet_account(account), rpc_url, manifest, peers, VerifierMetrics(),
                juror_only=account != HONEST, allow_private_peers=True,
            )  # fmt: skip
            stack.callback(worker.state.close)
            stack.callback(serve_in_thread(make_verifier_app(worker), "127.0.0.1", setup.ports[account]).stop)
            workers[account] = worker
        solver.load()
        solver.ensure_joined()
        solver.ensure_plant_anchor(protocol.round_times(run_id))  # in round 0: it may plant from round 2
        for worker in workers.values():
            worker.load()
            worker.ensure_registered()  # jurors in the registry; the honest verifier also on the run's list

        to_draw_window(protocol, run_id)  # round 0: nobody commits
        settle_round(protocol, run_id)
        mine_planting_seed_block(protocol, solver.load())  # round 1's seed base plants the solver's round 2
        to_draw_window(protocol, run_id)
        settle_round(protocol, run_id)
        assert protocol.round_times(run_id).round == PLANT_ROUND

        solver.act(Action("train", PLANT_ROUND))
        solver.act(Action("commit", PLANT_ROUND))
        to_draw_window(protocol, run_id)
        solver.act(Action("open", PLANT_ROUND))
        verifier = workers[HONEST]
        verifier.tick()  # replays its seat's sampled segments and attests
        (record,) = verifier.list_attestations()
        ref = AttestationRef(run_id, PLANT_ROUND, record["solver"], record["slot"])
        assert ref.solver == address(SOLVER)

        protocol.chain.mine_at(protocol.round_times(run_id).attest_end)
        solver.act(Action("reveal", PLANT_ROUND))
        revealed = protocol.chain.get_events(protocol.chain.manifest.deployed_block, names=["PlantRevealed"])
        assert [(e.args["runId"], e.args["round"], e.args["planted"]) for e in revealed] == [
            (run_id, PLANT_ROUND, True)
        ]
        yield PlantRound(deployment, run_id, solver, verifier, [workers[a] for a in JURORS], ref)


def test_false_plant_is_disputed_by_the_verifier_it_overturned(fresh_deployment, corpus, tmp_path):
    with plant_round(fresh_deployment, corpus, tmp_path, FalsePlanter) as game:
        protocol, run_id, verifier, solver = game.protocol, game.run_id, game.verifier, address(SOLVER)
        honest = address(HONEST)
        # its replay passed the honestly trained round; the reveal overturned that pass and holds its bond + penalty
        assert verifier.get_attestation(game.ref.id)["kind"] == "pass"
        assert protocol.attestation_of(game.ref).state == AttestationState.OVERTURNED
        forfeit = RULES.run.attestation_bond + RULES.plant.penalty
        assert protocol.forfeit_of(game.ref).amount == forfeit
        assert not [e for e in game.events() if e.name in CHALLENGES], "nobody disputed anything before the check"

        # the verifier's own tick checks the plant over its seat and disputes it; nobody else is watching
        verifier.tick()
        challenges = [e for e in game.events() if e.name in CHALLENGES]
        assert [(e.name, e.args["challenger"], e.args["solver"]) for e in challenges] == [
            ("PlantChallenged", honest, solver)
        ]
        segment = challenges[0].args["segmentIndex"]
        assert segment in game.seat_segments(), "the disputed segment is one its seat sampled"
        dispute_id = get_plant_subject(run_id, PLANT_ROUND, solver, segment).dispute_id
        assert challenges[0].args["disputeId"] == dispute_id
        check = verifier.state.get("plant_defence", f"plant-seat:{run_id}:{PLANT_ROUND}:{solver}")
        assert check["status"] == "challenged", check

        # the jurors (and the verifier, driving its own dispute) bring it to a verdict
        for _ in range(MAX_DISPUTE_PASSES):
            game.tick_all()
            if protocol.dispute_of(dispute_id).status == DisputeStatus.EXECUTED:
                break
        assert protocol.dispute_of(dispute_id).status == DisputeStatus.EXECUTED, protocol.dispute_of(dispute_id)
        game.settle()

        events = game.events()
        executed = [e for e in events if e.name == "DisputeExecuted"]
        assert [(e.args["disputeId"], e.args["challengerWins"], e.args["winner"]) for e in executed] == [
            (dispute_id, True, honest)
        ]
        assert [(e.args["round"], e.args["solver"]) for e in events if e.name == "PlantDisproven"] == [
            (PLANT_ROUND, solver)
        ]
        # the solver: slashed its stake, and not paid for the round it claimed was planted
        slashes = [(e.args["account"], e.args["role"], e.args["taken"]) for e in events if e.name == "StakeSlashed"]
        assert (solver, ROLE_SOLVER, RULES.run.solver_min_stake) in slashes
        assert protocol.bonded_of(solver, ROLE_SOLVER) == 0
        assert not protocol.is_paid(run_id, PLANT_ROUND, solver) and protocol.shares_of(run_id, solver) == 0
        assert not [e for e in events if e.name == "SolverSharesClaimed"]
        # the verifier: the held forfeit of its overturned pass came back to it once the round settled (its node
        # released it), and it withdrew it; it won the dispute
        released = [e for e in events if e.name == "PlantForfeitReleased"]
        assert [(e.args["verifier"], e.args["amount"], e.args["returned"]) for e in released] == [
            (honest, forfeit, True)
        ]
        assert protocol.forfeit_of(game.ref).amount == 0
        assert verifier.get_attestation(game.ref.id)["status"] == "done"
        assert protocol.credits_of("Plants", honest) == 0
        withdrawn = [e for e in events if e.name == "Withdrawn" and e.args["account"] == honest]
        assert forfeit in [e.args["amount"] for e in withdrawn if e.contract == "Plants"], withdrawn
        (challenge,) = [value for _, value in verifier.state.list("challenge")]
        assert (challenge["kind"], challenge["status"], challenge["outcome"]) == ("plant", "closed", "won")
        # slashed: the solver, and the verifier's plant penalty while its pass stood overturned (returned since)
        assert {(a, r) for a, r, _ in slashes} == {(solver, ROLE_SOLVER), (honest, ROLE_VERIFIER)}, slashes
        assert protocol.bonded_of(honest, ROLE_VERIFIER) == (
            RULES.run.verifier_min_stake + JUROR_MIN_STAKE - RULES.plant.penalty
        )
        assert_balance_matches_events(protocol)


def test_true_plant_is_checked_and_left_alone(fresh_deployment, corpus, tmp_path):
    with plant_round(fresh_deployment, corpus, tmp_path, SolverNode) as game:
        protocol, run_id, verifier, solver = game.protocol, game.run_id, game.verifier, address(SOLVER)
        # its replay failed the planted round (rightly): the fail stands and earns the jackpot
        assert verifier.get_attestation(game.ref.id)["kind"] == "fail"
        verifier.tick()
        check = verifier.state.get("plant_defence", f"plant-seat:{run_id}:{PLANT_ROUND}:{solver}")
        assert check is not None and check["status"] == "right", check
        assert f"{len(game.seat_segments())} segment(s) replay as the planted training" == check["finding"]
        game.settle()

        events = game.events()
        assert not [e for e in events if e.name in CHALLENGES], "the true plant was left alone"
        assert not [e for e in events if e.name in ("PlantDisproven", "StakeSlashed")]
        assert verifier.state.list("challenge") == []
        assert protocol.is_paid(run_id, PLANT_ROUND, solver) and protocol.shares_of(run_id, solver) > 0
        assert protocol.bonded_of(solver, ROLE_SOLVER) == RULES.run.solver_min_stake
        assert protocol.attestation_of(game.ref).state == AttestationState.FINALIZED
        assert verifier.get_attestation(game.ref.id)["status"] == "done"
        honest = address(HONEST)
        withdrawn = [e for e in events if e.name == "Withdrawn" and e.args["account"] == honest]
        assert [e.args["amount"] for e in withdrawn if e.contract == "Plants"] == [RULES.plant.jackpot], withdrawn
        assert_balance_matches_events(protocol)
