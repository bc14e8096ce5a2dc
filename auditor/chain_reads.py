"""The audit's chain reads: a deployment's events, their block times and the contracts' state, pinned at one block.

Pinning: everything is read at the latest block B of the moment the audit starts (events up to B, calls and
balances *at B*), so a run in progress is audited as one consistent snapshot. Contract calls live here and nowhere
else in the auditor; what they return is checked by auditor/checks.py (`check_public_state`, `check_balance`).
An RPC that drops mid-read raises ChainUnavailableError (protocol/adapters/chain.py): no half-read snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from auditor.checks import PublicState
from protocol.adapters.chain import ChainClient, ChainEvent
from protocol.adapters.event_index import EventIndex
from protocol.adapters.manifest import DeploymentManifest
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex
from protocol.history.events import find_missing_event_fields, share_token_contract
from protocol.history.fold import list_runs
from protocol.history.records import RunHistory, RunSummary

TEMPLATE_ADDRESS = "0x" + "00" * 20


class AuditError(GradledgerError):
    """The audit could not be completed (wrong inputs, contracts this auditor cannot read)."""


@dataclass(frozen=True)
class ChainSnapshot:
    """Everything read from the chain, pinned at one block."""

    block: int
    block_time: int
    chain_id: int
    events: tuple[ChainEvent, ...]
    timestamps: Mapping[int, int]
    runs: tuple[RunSummary, ...]
    share_tokens: Mapping[int, str]
    contract_balances: Mapping[str, int]


def list_abi_event_fields(manifest: DeploymentManifest) -> dict[str, list[str]]:
    """Event name -> its field names (tuple components as `field.component`) in the deployed ABIs."""
    events: dict[str, list[str]] = {}
    for record in manifest.contracts.values():
        for item in record.abi:
            if item.get("type") == "event":
                fields = events.setdefault(item["name"], [])
                for field_ in item.get("inputs", []):
                    fields.append(field_["name"])
                    fields.extend(f"{field_['name']}.{c['name']}" for c in field_.get("components", []))
    return events


def read_chain(chain: ChainClient, manifest: DeploymentManifest, index: EventIndex | None = None) -> ChainSnapshot:
    """Every event up to the latest block B, their block timestamps and the contracts' balances at B.

    With `index` (the deployment's event index, `<home>/index/events.sqlite`), the events come from it after one
    `sync()`, which reads only the blocks it has not indexed: an audit run again, or after `run status` or the
    explorer, reads the chain's logs of the new blocks only. B is then the index's last block (the last final block:
    a reorg-checked read), so the events and the calls at B stay one snapshot."""
    missing = find_missing_event_fields(list_abi_event_fields(manifest))
    if missing:
        raise AuditError(
            "the deployed contracts' ABIs lack events or fields the audit reads: "
            f"{', '.join(missing[:8])}; the contracts changed -- update EVENT_FIELDS in protocol/history/events.py "
            "and the handlers in protocol/history/ (registry.py, disputes.py, accounts.py, plants.py) to match"
        )
    if index is not None:
        block = index.sync().next_block - 1
        events = tuple(index.events())
        tokens = {int(e.args["runId"]): str(e.args["shareToken"]) for e in events if e.name == "RunCreated"}
        timestamps: Mapping[int, int] = index.timestamps()
    else:
        block = chain.block_number()
        base = chain.get_events(manifest.deployed_block, block, contracts=list(manifest.contracts))
        tokens = {int(e.args["runId"]): str(e.args["shareToken"]) for e in base if e.name == "RunCreated"}
        template = manifest.contracts["RunShares"].abi
        for run_id, token in tokens.items():
            chain.add_contract(share_token_contract(run_id), token, template)
        token_events = (
            chain.get_events(manifest.deployed_block, block, contracts=[share_token_contract(r) for r in tokens])
            if tokens
            else []
        )
        events = tuple(sorted([*base, *token_events], key=lambda e: (e.block_number, e.log_index)))
        timestamps = chain.get_block_timestamps({e.block_number for e in events})
    block_time = int(chain.get_block(block)["timestamp"])
    balances = {
        name: chain.get_balance(record.address, block)
        for name, record in sorted(manifest.contracts.items())
        if record.address.lower() != TEMPLATE_ADDRESS
    }
    for run_id, token in sorted(tokens.items()):
        balances[share_token_contract(run_id)] = chain.get_balance(token, block)
    return ChainSnapshot(block, block_time, chain.chain_id, events, timestamps, list_runs(events), tokens, balances)


def read_public_state(chain: ChainClient, history: RunHistory, block: int) -> PublicState:
    """The contracts' public state at `block` that the events must agree with (contract calls in one place)."""
    run = history.run_id
    times = chain.call_fields("RunRegistry", "roundTimes", run, block=block)
    current, finished = int(times["round"]), bool(times["finished"])
    theta_of = {r: hash_to_hex(chain.call("RunRegistry", "thetaOf", run, r, block=block)) for r in range(current + 1)}
    statuses, tallies, votes, minted = {}, {}, {}, {}
    for rnd in history.rounds:
        for c in rnd.commitments:
            status = chain.call_fields("Verification", "commitmentStatusOf", run, rnd.index, c.solver, block=block)
            statuses[(rnd.index, c.solver)] = {name: int(value) for name, value in status.items()}
        if rnd.seed is not None:
            tally = chain.call_fields("Verification", "roundTally", run, rnd.index, block=block)
            tallies[rnd.index] = (int(tally["totalChecks"]), int(tally["paidCommitments"]))
        votes[rnd.index] = int(chain.call("Disputes", "jurorVotes", run, rnd.index, block=block))
        minted[rnd.index] = int(chain.call("ModelShares", "mintedInRound", run, rnd.index, block=block))
    role_ids = {"solver": 1, "verifier": 2}
    stakes = {}
    for account, role in sorted({(p.account, p.role) for p in history.stakes}):
        stake = chain.call_fields("StakeManager", "stakeOf", account, role_ids[role], block=block)
        stakes[(account, role)] = (int(stake["bonded"]), int(stake["unbonding"]))
    token = share_token_contract(run)
    holders = {h for h, _ in history.share_balances} | {m.holder for m in history.mints}
    balances = {h: int(chain.call(token, "balanceOf", h, block=block)) for h in sorted(holders)}
    supply = int(chain.call(token, "totalSupply", block=block))
    return PublicState(
        current,
        finished,
        theta_of,
        statuses,
        tallies,
        votes,
        minted,
        stakes,
        {h: b for h, b in balances.items() if b},
        supply,
    )


def list_deployment_runs(chain: ChainClient, manifest: DeploymentManifest) -> tuple[RunSummary, ...]:
    """The runs of a deployment (for `gradledger audit` without --run)."""
    return list_runs(chain.get_events(manifest.deployed_block, names=["RunCreated", "RoundSettled", "RunFinished"]))
