"""A run's history, folded from the contracts' decoded events alone.

`fold_run_history(events, run_id, timestamps)` turns the chain-ordered events of a deployment
into a typed, frozen `RunHistory`: the run's on-chain terms, every round (start, θ_r, commitments,
seed, attestations and how each ended, challenges and verdicts, θ claims, settlement), the
ownership shares claimed and minted (per holder, round and kind), the share balances, revenue
paid, released and withdrawn, the stakes of every participant over time and every slash with
its cause. Pure: no I/O, no clock; the auditor (auditor/audit.py) reads the events and block
timestamps through the chain adapter and hands them in.

Layout of `protocol/history/`: the event names and fields read live in `events.py` (a renamed
event or field is one edit there; `find_missing_event_fields` compares them with the deployed
ABIs), the typed records in `records.py` (one round's, and the rules of which of its commitments count, in
`rounds.py`), the mutable state of one fold and its helpers in
`state.py`. The handlers are plain functions `handler(state, event, args)`, one module per event
family, each exporting `HANDLERS` (event name -> handler): `registry.py` (RunRegistry and
Verification), `disputes.py` (Disputes: attestation, claim and plant disputes), `accounts.py`
(StakeManager, ModelShares, the run's share token), `plants.py` (Plants and Verification's
PlantApplied). This module merges them, dispatches each event by name and freezes the state.
`protocol/ledger.py` only sums ETH flows.

Which events belong to the run: those carrying its `runId`; dispute events through the dispute
ids its challenges opened; the run's share token through its contract name
(`share_token_contract(run_id)`, which the auditor registers the token under); stake events of
every account that takes part in the run; slashes through their fault keys, recomputed as the
contracts compute them (keccak256(abi.encode(FAULT_SOLVER, runId, round, solver)) -- a proven
fault of the commitment, an unopened commitment, its plant disproven by a jury or left unrevealed -- and
keccak256(abi.encode(FAULT_ATTESTATION, runId, round, solver, slot)) -- a wrong attestation, a
pass on a planted commitment, or a seat left unattested and reported (an abstention)).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from protocol.history import accounts, disputes, plants, registry
from protocol.history.events import EventLike, HistoryError, decode_run_terms, to_address
from protocol.history.records import FrozenPrefix, Participant, Round, RunHistory, RunSummary
from protocol.history.state import FoldState, Handler
from protocol.planting import is_in_reveal_window
from protocol.types import RoundTimes


def _merge_handlers(*families: Mapping[str, Handler]) -> dict[str, Handler]:
    """One handler per event name across the families (an event handled twice is a bug here)."""
    merged: dict[str, Handler] = {}
    for family in families:
        for name, handler in family.items():
            if name in merged:
                raise RuntimeError(f"event {name} is handled twice ({merged[name].__module__}, {handler.__module__})")
            merged[name] = handler
    return merged


HANDLERS: dict[str, Handler] = _merge_handlers(registry.HANDLERS, disputes.HANDLERS, accounts.HANDLERS, plants.HANDLERS)


def list_runs(events: Iterable[EventLike]) -> tuple[RunSummary, ...]:
    """Every run of a deployment with how far it got, from RunCreated / RoundSettled / RunFinished."""
    runs: dict[int, dict[str, Any]] = {}
    for event in events:
        a = event.args
        if event.name == "RunCreated":
            runs[a["runId"]] = {
                "creator": to_address(a["creator"]),
                "block": event.block_number,
                "max": decode_run_terms(a["config"]).max_rounds,
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


def apply_event(state: FoldState, event: EventLike) -> None:
    """Fold one event into `state` (events no handler reads only advance `last_block`)."""
    state.last_block = max(state.last_block, event.block_number)
    handler = HANDLERS.get(event.name)
    if handler is not None:
        handler(state, event, event.args)


RoundCache = dict[str, Any]
"""What a kept fold's freezes share (`HistoryFolder`): the frozen rounds and the plant key they were frozen under."""


def _plant_key(state: FoldState) -> tuple:
    """What a round's plant eligibility and planting depend on besides its own builder (`plants.with_eligibility`)."""
    return (state.plant_terms, state.plant_seed_block, tuple(state.anchors.items()))


def _freeze_round(state: FoldState, index: int, verifiers_per_commitment: int) -> Round:
    b = state.rounds[index]
    return Round(
        b.index,
        b.start_time,
        b.start_block,
        b.theta_hash,
        plants.with_eligibility(state, index, b.commitments),
        b.seed,
        tuple(sorted(b.attestations.values(), key=lambda x: (x.block, x.solver, x.slot))),
        tuple(state.disputes[d] for d in b.disputes),
        tuple(b.claims[n] for n in sorted(b.claims)),
        b.settled,
        b.next_theta_hash,
        b.settled_block,
        b.settled_time,
        b.claimer,
        b.pool_released,
        plants.is_planting_round(state, index),
        tuple(b.abstentions),
        verifiers_per_commitment,
    )


def _freeze_rounds(state: FoldState, vpc: int, cache: RoundCache | None) -> tuple[Round, ...]:
    """Every round frozen; with `cache`, only the rounds touched since the last freeze (a builder changed through
    `FoldState.round`, a round started, a dispute of it set), unless the plant key changed (then all of them)."""
    indices = sorted(state.rounds)
    if cache is None:
        return tuple(_freeze_round(state, i, vpc) for i in indices)
    key, kept = _plant_key(state), cache.get("rounds")
    contiguous = indices == list(range(len(indices)))
    if kept is None or cache.get("plant_key") != key or not contiguous or len(kept) > len(indices):
        rounds = [_freeze_round(state, i, vpc) for i in indices]
    else:
        rounds = list(kept)
        rounds += [_freeze_round(state, i, vpc) for i in range(len(kept), len(indices))]  # rounds started since
        for i in state.touched:
            if i < len(kept):
                rounds[i] = _freeze_round(state, i, vpc)
    cache["rounds"], cache["plant_key"] = rounds, key
    state.touched.clear()
    return tuple(rounds)


def freeze(state: FoldState, labels: Mapping[str, str], cache: RoundCache | None = None) -> RunHistory:
    """The folded state as a frozen `RunHistory` (participants labelled, stakes kept for them only).

    With `cache` (a kept fold's, `HistoryFolder`), only the rounds that changed since the last freeze are frozen
    again, and the run's append-only lists (share claims, mints, revenue) are frozen as views of their current
    length (`FrozenPrefix`), not copied: a freeze then costs what changed, not a pass over the run."""
    created = state.created
    if created is None:
        raise HistoryError(f"run {state.run_id} does not exist in these events (no RunCreated for it)")
    rounds = _freeze_rounds(state, created.terms.verifiers_per_commitment, cache)
    participants = _participants(state, labels)
    members = {p.address for p in participants}
    return RunHistory(
        run_id=state.run_id,
        creator=created.creator,
        share_token=created.token,
        reward_pool=created.pool,
        terms=created.terms,
        created_block=created.block,
        created_time=state.time(created.block),
        rounds=rounds,
        finished=state.finished,
        share_claims=FrozenPrefix(state.claims) if cache is not None else tuple(state.claims),
        mints=FrozenPrefix(state.mints) if cache is not None else tuple(state.mints),
        share_balances=tuple(sorted((h, b) for h, b in state.balances.items() if b)),
        total_supply=state.supply,
        stakes=tuple(s for s in state.stakes if s.account in members),
        slashes=tuple(state.slashes),
        revenue=FrozenPrefix(state.revenue) if cache is not None else tuple(state.revenue),
        participants=participants,
        last_block=state.last_block,
        plants=plants.freeze_plants(state),
    )


ROLE_ORDER = ("creator", "solver", "verifier", "juror", "claimer", "challenger", "reporter", "holder")
"""How a participant's roles are listed (its first is its `role_of`), and participants with them."""


def _participants(state: FoldState, labels: Mapping[str, str]) -> tuple[Participant, ...]:
    """The participants, labelled and ordered the same way on every audit of the same accounts.

    Within a role, participants are numbered by address ("solver-1" is the solver with the lowest address), not by
    the order they joined or acted in: nodes race to join, so numbering by that order named another account
    "solver-1" from one run (or one audit of a restarted chain) to the next. Roles are listed in ROLE_ORDER, and
    participants by their first role, then address. `labels` (address -> name) override the derived names.
    """
    given = {to_address(k): v for k, v in labels.items()}
    rank = {role: i for i, role in enumerate(ROLE_ORDER)}

    def role_key(role: str) -> tuple[int, str]:
        return rank.get(role, len(rank)), role

    roles_of = {address: tuple(sorted(roles, key=role_key)) for address, roles in state.roles.items()}
    derived: dict[str, str] = {}
    for role in ("solver", "verifier", "juror"):
        for n, address in enumerate(sorted(state.order[role], key=str.lower), start=1):
            derived.setdefault(address, f"{role}-{n}")
    out = []
    others: dict[str, int] = {}
    for address in sorted(roles_of, key=lambda a: (role_key(roles_of[a][0]), a.lower())):
        roles = roles_of[address]
        label = given.get(address) or derived.get(address)
        if label is None:
            others[roles[0]] = others.get(roles[0], 0) + 1
            label = "creator" if roles[0] == "creator" else f"{roles[0]}-{others[roles[0]]}"
        out.append(Participant(address, label, roles))
    return tuple(out)


def fold_run_history(
    events: Iterable[EventLike],
    run_id: int,
    timestamps: Mapping[int, int] | None = None,
    labels: Mapping[str, str] | None = None,
) -> RunHistory:
    """The history of run `run_id` from a deployment's chain-ordered events.

    `timestamps` maps block numbers to block timestamps (missing blocks give `time=None`);
    `labels` names participants (address -> label), else they are numbered per role by address
    ("solver-1", "verifier-2", ...; `_participants`).
    """
    state = FoldState(run_id, timestamps or {})
    for event in sorted(events, key=lambda e: (e.block_number, e.log_index)):
        apply_event(state, event)
    return freeze(state, labels or {})


class HistoryFolder:
    """A run's fold kept between reads: each call folds only the events that arrived since the last (chain order),
    so a reader that follows the chain block by block does not fold the whole history again on every block (issue
    39: the money watch did, 6.9 s a block at round 1,000 of a 16-solver run). `history()` freezes what is folded.

    # INVARIANT: after `add(a)` then `add(b)`, `history()` equals `fold_run_history(a + b)`; a reorg (events dropped)
    # is handled by the caller with `reset()` and a fold of what stands (tests/protocol/test_history_folder.py).
    """

    def __init__(self, run_id: int, labels: Mapping[str, str] | None = None) -> None:
        self.run_id = run_id
        self.labels = labels or {}
        self.reset()

    def reset(self) -> None:
        self.timestamps: dict[int, int] = {}
        self.state = FoldState(self.run_id, self.timestamps)
        self.last: tuple[int, int] = (-1, -1)
        self.rounds: RoundCache = {}  # the frozen rounds, kept between freezes (`freeze`)

    def add(self, events: Iterable[EventLike], timestamps: Mapping[int, int] | None = None) -> None:
        """Fold `events`, which must all come after those folded already (HistoryError otherwise)."""
        self.timestamps.update(timestamps or {})
        for event in sorted(events, key=lambda e: (e.block_number, e.log_index)):
            position = (event.block_number, event.log_index)
            if position <= self.last:
                raise HistoryError(
                    f"run {self.run_id}: event {event.name} at {position} is not after the last folded {self.last}; "
                    "reset() and fold again after a reorg"
                )
            apply_event(self.state, event)
            self.last = position

    def history(self) -> RunHistory:
        return freeze(self.state, self.labels, self.rounds)


def get_round_times(history: RunHistory, index: int) -> RoundTimes:
    """RunRegistry.roundTimes of round `index` as it read while that round was open: its windows from its start and
    the run's terms (the seed block is the drawn seed's, 0 before)."""
    rnd, terms = history.rounds[index], history.terms
    commit_end = rnd.start_time + terms.commit_window
    attest_end = commit_end + terms.attest_window
    return RoundTimes(
        round=index, start=rnd.start_time, commit_end=commit_end, attest_end=attest_end,
        challenge_end=attest_end + terms.challenge_window, finished=False,
        seed_block=rnd.seed.block_number if rnd.seed is not None else 0,
        open_end=commit_end + terms.attest_window // 2,
    )  # fmt: skip


def get_round_phase(history: RunHistory, index: int, now: int) -> str:
    """Where round `index` stands at time `now`: settled, or the window or step it waits in ("start delay" before
    round 0's start, which RoundStarted announces ahead when the run has a start delay; "reveal window" for the
    challenge window's first half of a round whose pay follows the plant rules, `protocol.planting`)."""
    if index >= len(history.rounds):
        return "not started"
    rnd, s = history.rounds[index], history.terms
    if rnd.settled:
        return "settled"
    if now < rnd.start_time:
        return "start delay"  # round 0 of a run with a start delay: nothing can be committed before its start
    times = get_round_times(history, index)
    if any(d.status in ("open", "jury drawn", "decided") for d in rnd.disputes):
        return "dispute open"
    if now < times.commit_end:
        return "commit window"
    if now < times.attest_end:
        return "attest window"
    if rnd.plants_on and is_in_reveal_window(times, now):
        return "reveal window"
    if now < times.challenge_end:
        return "challenge window"
    live = [c for c in rnd.claims if c.status in ("posted", "challenged", "upheld")]
    if not live:
        return "awaiting θ claim"
    claim = live[-1]
    if claim.status == "posted" and claim.time is not None and now < claim.time + s.challenge_window:
        return "claim window"
    return "awaiting settlement"
