"""A run's history, folded from the contracts' decoded events alone.

`fold_run_history(events, run_id, timestamps)` turns the chain-ordered events of a deployment
into a typed, frozen `RunHistory`: the run's on-chain rules, every round (start, θ_r, commitments,
seed, attestations and how each ended, challenges and verdicts, θ claims, settlement), the
ownership shares claimed and minted (per holder, round and kind), the share balances, revenue
paid, released and withdrawn, the stakes of every participant over time and every slash with
its cause. Pure: no I/O, no clock; the auditor (auditor/audit.py) reads the events and block
timestamps through the chain adapter and hands them in.

The event names and fields read live in `protocol/history/events.py` (a renamed event or field is one
edit there; `find_missing_event_fields` compares them with the deployed ABIs), the typed records in
`protocol/history/records.py`; `protocol/ledger.py` only sums ETH flows. This module folds the run
registry's and verification's events; the dispute handlers are in `protocol/history/disputes.py`,
the stake, slash, ETH and share handlers in `protocol/history/accounts.py` (mixed into one fold).

Which events belong to the run: those carrying its `runId`; dispute events through the dispute
ids its challenges opened; the run's share token through its contract name
(`share_token_contract(run_id)`, which the auditor registers the token under); stake events of
every account that takes part in the run; slashes through their fault keys, recomputed as the
contracts compute them (keccak256(abi.encode(FAULT_SOLVER, runId, round, solver)) and
keccak256(abi.encode(FAULT_ATTESTATION, runId, round, solver, slot))).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from protocol.history.accounts import AccountEventsFold
from protocol.history.disputes import DisputeEventsFold
from protocol.history.events import (
    ATTESTATION_STATES,
    CLAIM_STATUSES,
    RUN_CONFIG_FIELDS,
    EventLike,
    HistoryError,
    compute_attestation_fault_key,
    compute_solver_fault_key,
    get_tx_hash,
    share_token_contract,
    to_address,
    to_hash_hex,
)
from protocol.history.records import (
    Attestation,
    Commitment,
    Participant,
    RevenueFlow,
    Round,
    RunHistory,
    RunSettings,
    RunSummary,
    Seed,
    ShareClaim,
    ThetaClaim,
)

# ---------------------------------------------------------------------------------------------
# Helpers.


def _get(struct: Any, name: str, index: int) -> Any:
    """A struct field decoded as a mapping (web3 with component names) or as a tuple."""
    if isinstance(struct, Mapping):
        return struct[name]
    return list(struct)[index]


def parse_run_settings(config: Any) -> RunSettings:
    """RunConfig (mapping by Solidity field name, or tuple in field order) -> RunSettings."""
    values = {}
    for index, (solidity, attribute) in enumerate(RUN_CONFIG_FIELDS.items()):
        value = _get(config, solidity, index)
        values[attribute] = to_hash_hex(value) if attribute.endswith(("_hash", "_root")) else int(value)
    return RunSettings(**values)


def list_runs(events: Iterable[EventLike]) -> tuple[RunSummary, ...]:
    """Every run of a deployment with how far it got, from RunCreated / RoundSettled / RunFinished."""
    runs: dict[int, dict[str, Any]] = {}
    for event in events:
        a = event.args
        if event.name == "RunCreated":
            settings = parse_run_settings(a["config"])
            runs[a["runId"]] = {
                "creator": to_address(a["creator"]),
                "block": event.block_number,
                "max": settings.max_rounds,
                "settled": 0,
                "finished": False,
            }
        elif event.name == "RoundSettled" and a["runId"] in runs:
            runs[a["runId"]]["settled"] += 1
        elif event.name == "RunFinished" and a["runId"] in runs:
            runs[a["runId"]]["finished"] = True
    return tuple(
        RunSummary(run_id, r["creator"], r["block"], r["max"], r["settled"], r["finished"])
        for run_id, r in sorted(runs.items())
    )


# ---------------------------------------------------------------------------------------------
# The fold.


@dataclass
class _RoundBuilder:
    index: int
    start_time: int
    start_block: int
    theta_hash: str
    commitments: list[Commitment] = field(default_factory=list)
    seed: Seed | None = None
    attestations: dict[tuple[str, int], Attestation] = field(default_factory=dict)
    disputes: list[str] = field(default_factory=list)
    claims: dict[int, ThetaClaim] = field(default_factory=dict)
    settled: bool = False
    next_theta_hash: str | None = None
    settled_block: int | None = None
    settled_time: int | None = None
    claimer: str | None = None
    pool_released: int = 0


class _Fold(DisputeEventsFold, AccountEventsFold):
    """One pass over the events; `build()` freezes the result."""

    def __init__(self, run_id: int, timestamps: Mapping[int, int]) -> None:
        self.run_id = run_id
        self.timestamps = timestamps
        self.created: dict[str, Any] | None = None
        self.token_contract = share_token_contract(run_id)
        self.rounds: dict[int, _RoundBuilder] = {}
        self.finished = False
        self.claims: list[ShareClaim] = []
        self.fault_keys: dict[str, tuple[str, int, str, int | None]] = {}
        self.init_disputes()
        self.init_accounts()
        self.roles: dict[str, list[str]] = {}
        self.order: dict[str, list[str]] = {"solver": [], "verifier": [], "juror": []}
        self.last_block = 0

    # -- small helpers ---------------------------------------------------------------------------

    def time(self, block: int) -> int | None:
        return self.timestamps.get(block)

    def role(self, address: str, role: str) -> None:
        roles = self.roles.setdefault(address, [])
        if role not in roles:
            roles.append(role)
        if role in self.order and address not in self.order[role]:
            self.order[role].append(address)

    def round(self, index: int) -> _RoundBuilder:
        if index not in self.rounds:
            raise HistoryError(f"run {self.run_id}: event for round {index} before that round started")
        return self.rounds[index]

    def ours(self, args: Mapping[str, Any]) -> bool:
        return args.get("runId") == self.run_id and self.created is not None

    def set_attestation(self, index: int, solver: str, slot: int, **changes: Any) -> Attestation:
        rnd = self.round(index)
        key = (solver, slot)
        if key not in rnd.attestations:
            raise HistoryError(f"run {self.run_id} round {index}: seat {solver}/{slot} changed before it attested")
        rnd.attestations[key] = replace(rnd.attestations[key], **changes)
        return rnd.attestations[key]

    # -- dispatch --------------------------------------------------------------------------------

    def apply(self, event: EventLike) -> None:
        self.last_block = max(self.last_block, event.block_number)
        handler = getattr(self, f"on_{event.name}", None)
        if handler is not None:
            handler(event, event.args)

    # RunRegistry ----------------------------------------------------------------------------------

    def on_RunCreated(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if a["runId"] != self.run_id:
            return
        self.created = {
            "creator": to_address(a["creator"]),
            "token": to_address(a["shareToken"]),
            "pool": int(a["rewardPool"]),
            "settings": parse_run_settings(a["config"]),
            "block": e.block_number,
        }
        self.role(self.created["creator"], "creator")
        self.revenue.append(
            RevenueFlow(
                "reward pool",
                int(a["rewardPool"]),
                self.created["creator"],
                None,
                e.block_number,
                self.time(e.block_number),
            )
        )

    def on_RoundStarted(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            index = int(a["round"])
            self.rounds[index] = _RoundBuilder(index, int(a["start"]), e.block_number, to_hash_hex(a["thetaHash"]))

    def on_SolverJoined(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            self.role(to_address(a["solver"]), "solver")

    def on_Committed(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if not self.ours(a):
            return
        index, solver = int(a["round"]), to_address(a["solver"])
        self.round(index).commitments.append(
            Commitment(
                index,
                solver,
                to_hash_hex(a["root"]),
                to_hash_hex(a["deltaHash"]),
                int(a["tokens"]),
                int(a["numSegments"]),
                e.block_number,
                self.time(e.block_number),
            )
        )
        self.role(solver, "solver")
        self.fault_keys[compute_solver_fault_key(self.run_id, index, solver)] = ("solver fault", index, solver, None)

    def on_ThetaClaimed(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if not self.ours(a):
            return
        index, claimer = int(a["round"]), to_address(a["claimer"])
        self.round(index).claims[int(a["nonce"])] = ThetaClaim(
            index,
            int(a["nonce"]),
            claimer,
            to_hash_hex(a["thetaHash"]),
            int(a["bond"]),
            e.block_number,
            self.time(e.block_number),
            "posted",
        )
        self.role(claimer, "claimer")

    def on_ClaimResolved(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if not self.ours(a):
            return
        rnd, nonce = self.round(int(a["round"])), int(a["nonce"])
        status = CLAIM_STATUSES[int(a["status"])]
        if nonce in rnd.claims:
            rnd.claims[nonce] = replace(rnd.claims[nonce], status="upheld" if status == "upheld" else "rejected")

    def on_RoundSettled(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if not self.ours(a):
            return
        rnd = self.round(int(a["round"]))
        rnd.settled, rnd.next_theta_hash = True, to_hash_hex(a["thetaHash"])
        rnd.settled_block, rnd.settled_time, rnd.claimer = (
            e.block_number,
            self.time(e.block_number),
            to_address(a["claimer"]),
        )
        nonce = int(a["nonce"])
        if nonce in rnd.claims:
            rnd.claims[nonce] = replace(rnd.claims[nonce], status="settled")

    def on_RunFinished(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            self.finished = True

    def on_ClaimBondWithdrawn(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if not self.ours(a):
            return
        rnd = self.round(int(a["round"]))
        for nonce, claim in rnd.claims.items():
            if claim.status == "settled":
                rnd.claims[nonce] = replace(claim, bond_withdrawn=True)

    # Verification ---------------------------------------------------------------------------------

    def on_VerifierRegistered(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            self.role(to_address(a["verifier"]), "verifier")

    def on_SeedDrawn(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            self.round(int(a["round"])).seed = Seed(
                to_hash_hex(a["seedBase"]),
                int(a["blockNumber"]),
                int(a["verifierCount"]),
                e.block_number,
                self.time(e.block_number),
            )

    def _attested(self, e: EventLike, a: Mapping[str, Any], is_fail: bool) -> None:
        index, solver, slot, verifier = (
            int(a["round"]),
            to_address(a["solver"]),
            int(a["slot"]),
            to_address(a["verifier"]),
        )
        sample = int(a["sampleIndex"]) if is_fail else None
        segment = int(a["segmentIndex"]) if is_fail else None
        self.round(index).attestations[(solver, slot)] = Attestation(
            index,
            solver,
            slot,
            verifier,
            is_fail,
            sample,
            segment,
            e.block_number,
            self.time(e.block_number),
            "attested",
        )
        self.role(verifier, "verifier")
        key = compute_attestation_fault_key(self.run_id, index, solver, slot)
        self.fault_keys[key] = ("wrong attestation", index, solver, slot)

    def on_PassAttested(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            self._attested(e, a, False)

    def on_FailAttested(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            self._attested(e, a, True)

    def on_AttestationFinalized(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            self.set_attestation(
                int(a["round"]),
                to_address(a["solver"]),
                int(a["slot"]),
                state="finalized",
                ended_block=e.block_number,
                bond_returned=int(a["bond"]),
            )

    def on_AttestationResolved(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if not self.ours(a):
            return
        state = ATTESTATION_STATES[int(a["state"])]
        bond = int(a["bond"])
        changes = {"bond_forfeited": bond} if state == "overturned" else {"bond_returned": bond}
        self.set_attestation(
            int(a["round"]), to_address(a["solver"]), int(a["slot"]), state=state, ended_block=e.block_number, **changes
        )

    def on_VerifierSharesClaimed(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            solver, slot = to_address(a["solver"]), int(a["slot"])
            self.claims.append(
                ShareClaim(
                    int(a["round"]),
                    "verifier",
                    to_address(a["verifier"]),
                    int(a["shares"]),
                    f"attestation {solver} slot {slot}",
                    e.block_number,
                    get_tx_hash(e),
                    solver=solver,
                    slot=slot,
                )
            )

    def on_SolverSharesClaimed(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            solver = to_address(a["solver"])
            self.claims.append(
                ShareClaim(
                    int(a["round"]),
                    "solver",
                    solver,
                    int(a["shares"]),
                    f"commitment of {solver}",
                    e.block_number,
                    get_tx_hash(e),
                    solver=solver,
                )
            )

    # -- freeze ----------------------------------------------------------------------------------

    def build(self, labels: Mapping[str, str]) -> RunHistory:
        if self.created is None:
            raise HistoryError(f"run {self.run_id} does not exist in these events (no RunCreated for it)")
        rounds = []
        for index in sorted(self.rounds):
            b = self.rounds[index]
            rounds.append(
                Round(
                    b.index,
                    b.start_time,
                    b.start_block,
                    b.theta_hash,
                    tuple(b.commitments),
                    b.seed,
                    tuple(sorted(b.attestations.values(), key=lambda x: (x.block, x.solver, x.slot))),
                    tuple(self.disputes[d] for d in b.disputes),
                    tuple(b.claims[n] for n in sorted(b.claims)),
                    b.settled,
                    b.next_theta_hash,
                    b.settled_block,
                    b.settled_time,
                    b.claimer,
                    b.pool_released,
                )
            )
        participants = self._participants(labels)
        members = {p.address for p in participants}
        return RunHistory(
            run_id=self.run_id,
            creator=self.created["creator"],
            share_token=self.created["token"],
            reward_pool=self.created["pool"],
            settings=self.created["settings"],
            created_block=self.created["block"],
            created_time=self.time(self.created["block"]),
            rounds=tuple(rounds),
            finished=self.finished,
            share_claims=tuple(self.claims),
            mints=tuple(self.mints),
            share_balances=tuple(sorted((h, b) for h, b in self.balances.items() if b)),
            total_supply=self.supply,
            stakes=tuple(s for s in self.stakes if s.account in members),
            slashes=tuple(self.slashes),
            revenue=tuple(self.revenue),
            participants=participants,
            last_block=self.last_block,
        )

    def _participants(self, labels: Mapping[str, str]) -> tuple[Participant, ...]:
        given = {to_address(k): v for k, v in labels.items()}
        derived: dict[str, str] = {}
        for role in ("solver", "verifier", "juror"):
            for n, address in enumerate(self.order[role], start=1):
                derived.setdefault(address, f"{role}-{n}")
        out = []
        others: dict[str, int] = {}
        for address, roles in self.roles.items():
            label = given.get(address) or derived.get(address)
            if label is None:
                others[roles[0]] = others.get(roles[0], 0) + 1
                label = "creator" if roles[0] == "creator" else f"{roles[0]}-{others[roles[0]]}"
            out.append(Participant(address, label, tuple(roles)))
        return tuple(out)


def fold_run_history(
    events: Iterable[EventLike],
    run_id: int,
    timestamps: Mapping[int, int] | None = None,
    labels: Mapping[str, str] | None = None,
) -> RunHistory:
    """The history of run `run_id` from a deployment's chain-ordered events.

    `timestamps` maps block numbers to block timestamps (missing blocks give `time=None`);
    `labels` names participants (address -> label), else they are numbered per role in the order
    they joined the run ("solver-1", "verifier-2", ...).
    """
    fold = _Fold(run_id, timestamps or {})
    for event in sorted(events, key=lambda e: (e.block_number, e.log_index)):
        fold.apply(event)
    return fold.build(labels or {})


def get_round_phase(history: RunHistory, index: int, now: int) -> str:
    """Where round `index` stands at time `now`: settled, or the window or step it waits in."""
    if index >= len(history.rounds):
        return "not started"
    rnd, s = history.rounds[index], history.settings
    if rnd.settled:
        return "settled"
    commit_end = rnd.start_time + s.commit_window
    attest_end = commit_end + s.attest_window
    challenge_end = attest_end + s.challenge_window
    if any(d.status in ("open", "jury drawn", "decided") for d in rnd.disputes):
        return "dispute open"
    if now < commit_end:
        return "commit window"
    if now < attest_end:
        return "attest window"
    if now < challenge_end:
        return "challenge window"
    live = [c for c in rnd.claims if c.status in ("posted", "challenged", "upheld")]
    if not live:
        return "awaiting θ claim"
    claim = live[-1]
    if claim.status == "posted" and claim.time is not None and now < claim.time + s.challenge_window:
        return "claim window"
    return "awaiting settlement"
