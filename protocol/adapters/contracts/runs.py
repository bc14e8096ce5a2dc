"""Typed calls of a run's life outside verification: stakes (StakeManager), the run itself, its members, rounds,
commitments and θ claims (RunRegistry), and announced peers (PeerDirectory). Amounts are integers in wei."""

from __future__ import annotations

from typing import Any

from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from protocol.adapters.chain import TxResult
from protocol.adapters.contracts.base import ContractCalls
from protocol.hashing import Hash32, to_hash32
from protocol.stake_actions import StakeState
from protocol.types import Claim, Commitment, RoundTimes, RunTerms, decode_struct

LEFT_MARKER = 2
"""RunRegistry.LEFT: the commitment hash of a solver that left a run."""


class RunCalls(ContractCalls):
    """StakeManager, RunRegistry and PeerDirectory."""

    # -- stakes ----------------------------------------------------------------------------

    def deposit_stake(self, account: LocalAccount, role: int, amount_wei: int) -> TxResult:
        return self.chain.send(account, "StakeManager", "deposit", role, value=amount_wei)

    def bonded_of(self, address: str, role: int) -> int:
        return self.chain.call("StakeManager", "bondedOf", to_checksum_address(address), role)

    def stake_of(self, address: str, role: int) -> tuple[int, int, int, int]:
        """(bonded, unbonding, release time, reserved by open obligations)."""
        f = self.chain.call_fields("StakeManager", "stakeOf", to_checksum_address(address), role)
        return (f["bonded"], f["unbonding"], f["releaseTime"], f["reserved"])

    def is_covered(self, address: str, role: int) -> bool:
        """Whether the account's bonded stake covers everything it reserved (StakeManager.isCovered): attestPass,
        attestFail and commit revert StakeNotCovered otherwise. An overturned verifier keeps its reservation through
        its exit delay while the slash took its stake, so it is uncovered until it tops up (issue 36, finding 7)."""
        return self.chain.call("StakeManager", "isCovered", to_checksum_address(address), role)

    def stake_state(self, address: str, role: int) -> StakeState:
        """StakeManager.stakeOf as a StakeState (protocol/stake_actions.py decides what may be done with it)."""
        bonded, unbonding, release_time, reserved = self.stake_of(address, role)
        return StakeState(bonded, unbonding, release_time, reserved)

    def request_unbond(self, account: LocalAccount, role: int, amount_wei: int) -> TxResult:
        """StakeManager.requestUnbond: `amount_wei` of free bonded stake starts the unbonding delay (which restarts for
        everything unbonding in the role)."""
        return self.chain.send(account, "StakeManager", "requestUnbond", role, amount_wei)

    def withdraw_stake(self, account: LocalAccount, role: int) -> TxResult:
        """StakeManager.withdraw: the role's unbonding stake, once its delay is over, to the account."""
        return self.chain.send(account, "StakeManager", "withdraw", role)

    def unbonding_delay(self) -> int:
        """Seconds between the last requestUnbond of a role and when its unbonding stake may be withdrawn."""
        return self.chain.call("StakeManager", "unbondingDelay")

    def free_stake_of(self, address: str, role: int) -> int:
        """Bonded stake not reserved by an obligation: what a new join or registration can reserve."""
        bonded, _, _, reserved = self.stake_of(address, role)
        return max(bonded - reserved, 0)

    # -- runs ------------------------------------------------------------------------------

    def block_seconds(self) -> int:
        """The chain's block time the deployment declared (RunRegistry.blockSeconds): every run's windows fit it."""
        return self.chain.call("RunRegistry", "blockSeconds")

    def create_run(self, account: LocalAccount, terms: RunTerms, reward_pool_wei: int) -> tuple[int, TxResult]:
        result = self.chain.send(account, "RunRegistry", "createRun", terms.to_abi(), value=reward_pool_wei)
        created = [e for e in result.events if e.name == "RunCreated"]
        return created[0].args["runId"], result

    def join_run(self, account: LocalAccount, run_id: int) -> TxResult:
        return self.chain.send(account, "RunRegistry", "join", run_id)

    def has_joined(self, run_id: int, solver: str) -> bool:
        """Whether `solver` ever joined the run (it stays true after `leaveRun`)."""
        return self.chain.call("RunRegistry", "hasJoined", run_id, to_checksum_address(solver))

    def creator_of(self, run_id: int) -> str:
        return self.chain.call("RunRegistry", "creatorOf", run_id)

    def run_participants(self, run_id: int, from_block: int, to_block: int) -> tuple[str, ...]:
        """Who a node of the run may need to reach, in chain order: its creator (who serves the run's config,
        dataset and θ0), then the solvers that joined it, the verifiers registered for it and the jurors that
        registered in blocks [from_block, to_block]."""
        found = [self.creator_of(run_id)]
        for event in self.chain.get_events(
            from_block, to_block, names=["SolverJoined", "VerifierRegistered", "JurorRegistered"],
            contracts=["RunRegistry", "VerifierRegistry", "JurorRegistry"],
        ):  # fmt: skip
            if event.name == "JurorRegistered" or event.args["runId"] == run_id:
                found.append(str(event.args.get("solver") or event.args.get("verifier") or event.args["juror"]))
        return tuple(dict.fromkeys(to_checksum_address(a) for a in found))

    def peer_url_of(self, account: str) -> str:
        """The URL `account` announced in PeerDirectory ("" if none)."""
        return self.chain.call("PeerDirectory", "urlOf", to_checksum_address(account))

    def announce_peer(self, account: LocalAccount, url: str) -> TxResult:
        return self.chain.send(account, "PeerDirectory", "announce", url)

    def withdraw_peer(self, account: LocalAccount) -> TxResult:
        """Remove `account`'s announced URL (PeerDirectory.withdraw; reverts NothingToWithdraw when none)."""
        return self.chain.send(account, "PeerDirectory", "withdraw")

    def is_member(self, run_id: int, solver: str) -> bool:
        """Whether `solver` joined the run and has not left it (its solverMinStake is reserved)."""
        f = self.chain.call_fields("RunRegistry", "commitmentOf", run_id, to_checksum_address(solver))
        return int.from_bytes(bytes(f["hash"]), "big") not in (0, LEFT_MARKER)

    def has_committed(self, run_id: int, round_index: int, solver: str) -> bool:
        """Whether the chain holds `solver`'s commitment of `round_index` now (state at the head, not events: a node
        checks its own commit after a reorg before sending it again)."""
        f = self.chain.call_fields("RunRegistry", "commitmentOf", run_id, to_checksum_address(solver))
        return bool(f["committed"]) and int(f["round"]) == round_index

    def leave_run(self, account: LocalAccount, run_id: int) -> TxResult:
        """Leave a run whose last commitment of this solver has settled: releases its reserved solverMinStake."""
        return self.chain.send(account, "RunRegistry", "leaveRun", run_id)

    def round_times(self, run_id: int) -> RoundTimes:
        return decode_struct(RoundTimes, self.chain.call_fields("RunRegistry", "roundTimes", run_id))

    def theta0_hash(self, run_id: int) -> Hash32:
        return to_hash32(self.chain.call("RunRegistry", "theta0Hash", run_id))

    def theta_of(self, run_id: int, round_index: int) -> Hash32:
        """θ_round's hash (θ0 for round 0; the settled claim of round-1 after that)."""
        return to_hash32(self.chain.call("RunRegistry", "thetaOf", run_id, round_index))

    def commit(self, account: LocalAccount, run_id: int, round_index: int, commitment: Commitment) -> TxResult:
        return self.chain.send(
            account,
            "RunRegistry",
            "commit",
            run_id,
            round_index,
            commitment.root,
            commitment.delta_hash,
            commitment.tokens,
        )

    def claim_of(self, run_id: int, round_index: int) -> Claim:
        return decode_struct(Claim, self.chain.call_fields("RunRegistry", "claimOf", run_id, round_index))

    def withdraw_claim_bond(self, account: LocalAccount, run_id: int, round_index: int) -> TxResult:
        return self.chain.send(account, "RunRegistry", "withdrawClaimBond", run_id, round_index)

    def post_claim(
        self, account: LocalAccount, run_id: int, round_index: int, theta_hash: bytes, bond_wei: int
    ) -> TxResult:
        return self.chain.send(account, "RunRegistry", "postClaim", run_id, round_index, theta_hash, value=bond_wei)

    def settle(self, account: LocalAccount, run_id: int, round_index: int) -> TxResult:
        return self.chain.send(account, "RunRegistry", "settle", run_id, round_index)

    def is_settled(self, run_id: int, round_index: int) -> bool:
        return self.chain.call("RunRegistry", "isSettled", run_id, round_index)

    def open_disputes(self, run_id: int) -> int:
        return self.chain.call_fields("RunRegistry", "runState", run_id)["openDisputes"]

    def get_commitments(self, run_id: int, round_index: int, from_block: int) -> dict[str, Commitment]:
        """Solver address -> commitment, from the `Committed` events of (run, round)."""
        found = {}
        for event in self.chain.get_events(from_block, names=["Committed"]):
            if event.args["runId"] == run_id and event.args["round"] == round_index:
                found[event.args["solver"]] = Commitment(
                    to_hash32(event.args["root"]), to_hash32(event.args["deltaHash"]), event.args["tokens"]
                )
        return found

    def run_params(self, run_id: int) -> dict[str, Any]:
        return self.chain.call_fields("RunRegistry", "runParams", run_id)
