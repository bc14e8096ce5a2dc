"""Dishonest solver nodes for tests, benchmarks and the adversarial demo: never a default.

Each is a subclass of the honest `solver.node.SolverNode` that overrides one hook, so everything else
(joining, committing, claiming, crash safety) is the honest code. A solver node is one of these only
when started with `--adversary MODE`:

- `cheat` (with `--behaviour B`, any `adversary.behaviours.Behaviour`): every segment of every
  round is built by `make_dishonest_segment` on the cheater's own trajectory, so the published
  document is internally consistent (leaves chain from c_0 of θ_r, Δ = θ_r - c_H, honest token
  counts) and only a replay can tell;
- `withhold`: trains honestly and commits, but its artifact API serves nothing (no checkpoint,
  no Δ); only the commitment document is published, so the leaves are provable on-chain while
  the checkpoints they name are unavailable;
- `wrong-claim`: as coordinator, posts a wrong θ_(r+1) hash for a round's first claim (nonce 0);
  after a jury rejects it (its bond forfeited) it posts the right one, so the run goes on;
- `unopenable`: trains nothing and commits a root it cannot open, UNOPENABLE_ROOTS[r % 3] in round r
  (a random root claiming 2^64 - 1 tokens, the latest root another solver committed, its own previous
  root), so it can never open its sampled leaves and ends reported and slashed;
- `withhold-document`: trains honestly, commits and opens, but never serves its commitment document;
- `wrong-payload` (a run with a codec, protocol/payload.py): trains honestly, but its payload is the codec of
  Δ + e_r + u for an injected update u, with a document whose e_(r+1) is consistent with that payload, so only
  recomputing C(Δ + e_r) from the verified Δ tells;
- `wrong-residual` (a run with a codec): trains honestly and builds its payload honestly, but over an e_r with an
  injected update u added (`make_injected_update`) instead of the e the e-chain allows;
- `forged-moments` (a run with `train.carry_moments`): trains honestly, but from AdamW moments of its choosing (the
  carried first moments scaled by FORGED_MOMENT_SCALE, a push along its previous round's direction) instead of
  those its accepted previous round ended with; a round with nothing to carry (round 0) is honest;
- `slow-serve` (issue 37): trains, commits and opens honestly and serves its document at once, but drips every
  checkpoint its commitments name, each transfer taking SLOW_SERVE_FACTOR x the run's fetch budget
  (protocol/fetch_budget.py), so that honest verifiers' replays would miss the attest window if fetches had no
  total deadline. It does not defend its own work (no self-defence challenges).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Callable, Container, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import torch

from adversary.behaviours import Behaviour, make_dishonest_segment
from node.logs import log_event
from protocol.adapters.artifacts import ArtifactNotFoundError, ArtifactStore, BackgroundStateWriter
from protocol.adapters.runs import RunContext
from protocol.commitment import decode_commitment_doc, encode_commitment_doc
from protocol.config import RunConfig
from protocol.data import TokenDataset
from protocol.errors import ConfigError
from protocol.fetch_budget import compute_fetch_budget_s
from protocol.hashing import Hash32, hash_to_hex, to_hash32
from protocol.payload import PayloadStep
from protocol.training import (
    PARAM,
    RoundInputs,
    SegmentRecord,
    State,
    compute_param_update,
    compute_segment_record,
    make_start_checkpoint,
    train_segment,
)
from solver.decide import Action, RoundRecord
from solver.node import SolverNode, SolverSettings
from solver.round_training import SolverRoundInputs


class SolverAdversary(StrEnum):
    """Dishonest solver roles (`gradledger solver run --adversary MODE`)."""

    CHEAT = "cheat"
    WITHHOLD = "withhold"
    WRONG_CLAIM = "wrong-claim"
    MALFORMED = "malformed"
    UNOPENABLE = "unopenable"
    WITHHOLD_DOCUMENT = "withhold-document"
    WRONG_PAYLOAD = "wrong-payload"
    WRONG_RESIDUAL = "wrong-residual"
    FORGED_MOMENTS = "forged-moments"
    SLOW_SERVE = "slow-serve"


@dataclass(frozen=True)
class AdversarySettings:
    mode: SolverAdversary
    behaviour: Behaviour | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode is SolverAdversary.CHEAT and self.behaviour is None:
            raise ConfigError(f"--adversary cheat needs --behaviour, one of: {', '.join(b.value for b in Behaviour)}")

    @property
    def label(self) -> str:
        return f"{self.mode.value}:{self.behaviour.value}" if self.behaviour else self.mode.value


def train_dishonest_round(
    behaviour: Behaviour,
    config: RunConfig,
    dataset: TokenDataset,
    theta_params: Mapping[str, torch.Tensor],
    round_index: int,
    solver: str,
    save_checkpoint: Callable[[int, State], Hash32 | Future[Hash32]] | None = None,
    seed: int = 0,
    start_moments: Mapping[str, torch.Tensor] | None = None,
) -> tuple[list[SegmentRecord], State]:
    """What `protocol.training.train_round` returns, for a solver that cheats on every segment.

    Each segment starts where the cheater's previous one ended (the trajectory chains), so the
    document checks pass and the fault shows only when a sampled segment is replayed. A reused
    update needs a previous segment: segment 0 of that behaviour is trained honestly.
    """
    checkpoint = make_start_checkpoint(theta_params, start_moments)
    if save_checkpoint is not None:
        save_checkpoint(0, checkpoint)
    records: list[SegmentRecord] = []
    previous_update: State | None = None
    for index in range(config.train.num_segments):
        if behaviour is Behaviour.REUSED_UPDATE and previous_update is None:
            end, losses = train_segment(config, dataset, round_index, solver, index, checkpoint)
            record = compute_segment_record(config, index, checkpoint, end, losses)
        else:
            segment = make_dishonest_segment(
                behaviour, config, dataset, round_index, solver, index, checkpoint,
                seed=seed * 1000 + round_index * 100 + index, previous_update=previous_update,
            )  # fmt: skip
            end, record = segment.end_checkpoint, segment.record
        previous_update = compute_param_update(checkpoint, end)
        records.append(record)
        if save_checkpoint is not None:
            saved = save_checkpoint(index + 1, end)
            if isinstance(saved, Future):
                saved = saved.result()
            if saved != record.end_hash:
                raise AssertionError("stored checkpoint hash differs from the record's end hash")
        checkpoint = end
    return records, checkpoint


def make_wrong_theta(next_state: Mapping[str, torch.Tensor]) -> State:
    """A plausible-looking but wrong θ_(r+1): the first parameter tensor nudged by 1e-3."""
    wrong = {k: v.clone() for k, v in next_state.items()}
    first = sorted(k for k in wrong if k.startswith(PARAM))[0]
    wrong[first] = wrong[first] + 1e-3
    return wrong


INJECTION = 1e-2
"""What `make_injected_update` adds to the first tensor of Δ (a push on θ the solver's training never made)."""


def make_injected_update(delta: Mapping[str, torch.Tensor]) -> State:
    """Δ + u: the first tensor (by name) moved by INJECTION, the update a wrong-payload solver smuggles in."""
    injected = {k: v.clone() for k, v in delta.items()}
    first = sorted(injected)[0]
    injected[first] = injected[first] + INJECTION
    return injected


class WithholdingStore:
    """A read-only view of a store that serves nothing (a solver that withholds its checkpoints)."""

    def __init__(self, inner: ArtifactStore) -> None:
        self.inner = inner

    def has(self, digest: bytes) -> bool:
        return False

    def get(self, digest: bytes) -> bytes:
        raise ArtifactNotFoundError(f"artifact {hash_to_hex(digest)} withheld by this solver")

    def put(self, data: bytes) -> Hash32:
        raise ArtifactNotFoundError("a withholding view is read-only")

    def delete(self, digest: bytes) -> None:
        raise ArtifactNotFoundError("a withholding view is read-only")


class CheatingSolverNode(SolverNode):
    """Cheats with `behaviour` on every segment of the rounds in `rounds` (every round when None)."""

    def __init__(
        self, *args: Any, behaviour: Behaviour, rounds: Container[int] | None = None, seed: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.behaviour, self.rounds, self.seed = Behaviour(behaviour), rounds, seed

    def train_records(self, inputs: RoundInputs, writer: BackgroundStateWriter) -> tuple[list[SegmentRecord], State]:
        if self.rounds is not None and inputs.round_index not in self.rounds:
            return super().train_records(inputs, writer)
        records, end = train_dishonest_round(
            self.behaviour, inputs.config, inputs.dataset, inputs.theta, inputs.round_index, inputs.solver,
            writer.save, self.seed, inputs.start_moments,
        )  # fmt: skip
        log_event(self.log, "trained dishonestly", round=inputs.round_index, adversary=f"cheat:{self.behaviour.value}")
        return records, end


class WithholdingSolverNode(SolverNode):
    """Commits honest work but serves no checkpoint and no Δ (only its commitment document)."""

    def served_store(self) -> ArtifactStore:
        return WithholdingStore(self.store)


class WrongClaimSolverNode(SolverNode):
    """As coordinator, posts a wrong θ_(r+1) for a round's first claim, then the right one."""

    def choose_claim_state(self, next_state: State, round_index: int) -> State:
        if self.protocol.claim_of(self.run_id, round_index).nonce != 0:
            return next_state
        log_event(self.log, "posting a wrong claim", level=logging.WARNING, run=self.run_id, round=round_index)
        return make_wrong_theta(next_state)


class WithholdingDocumentSolverNode(SolverNode):
    """Trains, commits and opens honestly, serves its checkpoints, but never its commitment document."""

    def served_document(self, run_id: int, round_index: int) -> bytes | None:
        return None


class WrongPayloadSolverNode(SolverNode):
    """In a codec run: honest training, but P_r = C(Δ + e_r + u) with an injected u (`make_injected_update`)."""

    def build_payload(self, inputs: SolverRoundInputs, delta: State, residual: State) -> PayloadStep:
        log_event(self.log, "injecting an update into the payload", level=logging.WARNING, round=inputs.round_index)
        return super().build_payload(inputs, make_injected_update(delta), residual)


class WrongResidualSolverNode(SolverNode):
    """In a codec run: honest training and codec, but e_r + u carried in place of the e-chain's e_r."""

    def carried_residual(self, ctx: RunContext, r: int, theta: State) -> State:
        log_event(self.log, "injecting an update through e", level=logging.WARNING, round=r)
        return make_injected_update(super().carried_residual(ctx, r, theta))


FORGED_MOMENT_SCALE = 4.0
"""What `ForgedMomentsSolverNode` multiplies the carried first moments (exp_avg) by."""


class ForgedMomentsSolverNode(SolverNode):
    """In a run that carries AdamW moments: honest training, but from forged moments whenever it carries any."""

    def start_moments(self, ctx: RunContext, round_index: int) -> State | None:
        moments = super().start_moments(ctx, round_index)
        if moments is None:
            return None
        log_event(self.log, "starting from forged moments", level=logging.WARNING, round=round_index)
        return {k: v * FORGED_MOMENT_SCALE if k.endswith("/exp_avg") else v for k, v in moments.items()}


SLOW_SERVE_FACTOR = 4.0
"""A slow-serving solver spreads each checkpoint over this many times the run's fetch budget (a sixth of the attest
window: so over two thirds of it), far past the deadline of every verifier, whistleblower and juror."""
DRIP_PIECES = 100
"""How many pieces a dripped checkpoint is sent in, evenly spaced: each read of the fetcher returns at once, so a
per-read timeout never trips; only a total deadline stops the transfer."""


async def drip(data: bytes, seconds: float, pieces: int = DRIP_PIECES) -> AsyncIterator[bytes]:
    """`data` in `pieces` evenly spaced pieces over `seconds`. An async generator: when the fetcher gives up and
    disconnects, the server cancels it at its next pause, so nothing keeps dripping into a closed connection."""
    size = max(1, -(-len(data) // pieces))
    chunks = [data[offset : offset + size] for offset in range(0, len(data), size)] or [b""]
    pause = seconds / len(chunks)
    for chunk in chunks:
        await asyncio.sleep(pause)
        yield chunk


async def serve_at_once(data: bytes) -> AsyncIterator[bytes]:
    yield data


class DrippingStore:
    """A read-only view of a slow-serving solver's store: `get` is honest; over HTTP (`stream_artifact`, the artifact
    router's PacedArtifactStore hook) its own checkpoints are dripped, anything else (θ, the run's config and shards
    it fetched) is served at once."""

    def __init__(self, inner: ArtifactStore, node: SlowServingSolverNode) -> None:
        self.inner, self.node = inner, node

    def has(self, digest: bytes) -> bool:
        return self.inner.has(digest)

    def get(self, digest: bytes) -> bytes:
        return self.inner.get(digest)

    def stream_artifact(self, digest: bytes) -> AsyncIterator[bytes]:
        data = self.inner.get(digest)  # a missing or corrupt artifact raises here: 404 / 503, as for `get`
        if to_hash32(digest) not in self.node.own_checkpoints():
            return serve_at_once(data)
        return drip(data, self.node.drip_seconds(digest))

    def put(self, data: bytes) -> Hash32:
        raise ArtifactNotFoundError("a served view is read-only")

    def delete(self, digest: bytes) -> None:
        raise ArtifactNotFoundError("a served view is read-only")


class SlowServingSolverNode(SolverNode):
    """Trains, commits and opens honestly and serves its documents, but drips every checkpoint its commitments name
    (DrippingStore), each over SLOW_SERVE_FACTOR x the run's fetch budget. Never challenges a fail on its own work:
    a fetch of its dripped checkpoints by a juror misses the same deadline."""

    defends_own_work = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._leaves_of: dict[Hash32, frozenset[Hash32]] = {}
        self._dripping: set[Hash32] = set()

    def served_store(self) -> ArtifactStore:
        return DrippingStore(self.store, self)

    def own_checkpoints(self) -> frozenset[Hash32]:
        """Every checkpoint named by a leaf of a commitment document this solver recorded (its own training)."""
        named: set[Hash32] = set()
        for _, raw in self.state.list("round"):
            record = RoundRecord.from_json(raw)
            if record.doc_hash is None:
                continue
            if record.doc_hash not in self._leaves_of:
                doc = decode_commitment_doc(self.store.get(record.doc_hash))
                self._leaves_of[record.doc_hash] = frozenset(
                    name for leaf in doc.leaves for name in (leaf.start_hash, leaf.end_hash)
                )
            named |= self._leaves_of[record.doc_hash]
        return frozenset(named)

    def drip_seconds(self, digest: bytes) -> float:
        """How long one transfer of an own checkpoint takes: SLOW_SERVE_FACTOR x the run's fetch budget."""
        seconds = SLOW_SERVE_FACTOR * compute_fetch_budget_s(self.load().terms.attest_window)
        name = to_hash32(digest)
        if name not in self._dripping:  # said once per checkpoint
            self._dripping.add(name)
            log_event(
                self.log, "serving a checkpoint slowly", level=logging.WARNING, artifact=hash_to_hex(name),
                seconds=seconds, adversary=SolverAdversary.SLOW_SERVE.value,
            )  # fmt: skip
        return seconds


UNOPENABLE_ROOTS = ("random-root", "copied-root", "previous-root")
"""What `UnopenableSolverNode` commits in round r: UNOPENABLE_ROOTS[r % 3] (random when nothing to copy)."""


class UnopenableSolverNode(SolverNode):
    """Commits a root that no leaf of (run, round, this solver) is under, without training."""

    def _do_train(self, action: Action) -> None:
        ctx, r = self.load(), action.round
        kind = UNOPENABLE_ROOTS[r % len(UNOPENABLE_ROOTS)]
        rng = random.Random(f"{self.address}:{r}")
        root, delta, tokens = to_hash32(rng.randbytes(32)), to_hash32(rng.randbytes(32)), 2**64 - 1
        for event in reversed(self.chain.get_events(ctx.created_block, names=["Committed"])):
            a = event.args
            mine = a["solver"].lower() == self.address.lower()
            if (kind == "copied-root" and not mine) or (kind == "previous-root" and mine):
                root, delta, tokens = to_hash32(bytes(a["root"])), to_hash32(bytes(a["deltaHash"])), a["tokens"]
                break
        theta_hash = self.protocol.theta_of(ctx.run_id, r)
        self.save_record(RoundRecord(ctx.run_id, r, "trained", theta_hash, root, delta, tokens, None))
        log_event(self.log, "committing an unopenable root", level=logging.WARNING, round=r, kind=kind)


MALFORMATIONS = ("garbage-document", "other-run-document", "short-document", "corrupt-checkpoints")
"""What `MalformedSolverNode` does in round r: MALFORMATIONS[r % 4]."""


class MalformedSolverNode(SolverNode):
    """Feeds verifiers and whistleblowers malformed input, a different kind each round (MALFORMATIONS):

    - short-document: commits (and serves) the root of a document with only its first leaf;
    - other-run-document: commits honestly but serves the document of another run id;
    - garbage-document: commits honestly but serves bytes that are no document;
    - corrupt-checkpoints: commits honestly but serves checkpoints whose bytes do not hash to their names.
    Honest nodes must turn each into a verdict (or an abstention) and keep running.
    """

    def malformation(self, round_index: int) -> str:
        return MALFORMATIONS[round_index % len(MALFORMATIONS)]

    def train_records(self, inputs: RoundInputs, writer: BackgroundStateWriter) -> tuple[list[SegmentRecord], State]:
        records, end = super().train_records(inputs, writer)
        if self.malformation(inputs.round_index) == "short-document":
            return records[:1], end
        return records, end

    def served_document(self, run_id: int, round_index: int) -> bytes | None:
        document = super().served_document(run_id, round_index)
        if document is None:
            return None
        kind = self.malformation(round_index)
        if kind == "garbage-document":
            return b"\x00\x01 this is not a commitment document \xff"
        if kind == "other-run-document":
            doc = decode_commitment_doc(document)
            other = replace(doc, run_id=doc.run_id + 1000)
            leaves = tuple(replace(leaf, run_id=other.run_id) for leaf in doc.leaves)
            return encode_commitment_doc(replace(other, leaves=leaves))
        return document

    def served_store(self) -> ArtifactStore:
        return CorruptingStore(self.store, self)


class CorruptingStore:
    """Serves a malformed solver's store, flipping a byte of every checkpoint of a corrupt-checkpoints round."""

    def __init__(self, inner: ArtifactStore, node: MalformedSolverNode) -> None:
        self.inner, self.node = inner, node

    def has(self, digest: bytes) -> bool:
        return self.inner.has(digest)

    def get(self, digest: bytes) -> bytes:
        data = self.inner.get(digest)
        times = self.node.protocol.round_times(self.node.run_id)
        if self.node.malformation(times.round) == "corrupt-checkpoints" and len(data) > 1024:
            return data[:-1] + bytes([data[-1] ^ 0xFF])
        return data

    def put(self, data: bytes) -> Hash32:
        raise ArtifactNotFoundError("a served view is read-only")

    def delete(self, digest: bytes) -> None:
        raise ArtifactNotFoundError("a served view is read-only")


def make_solver_node(
    settings: SolverSettings, adversary: AdversarySettings | None, *args: Any, **kwargs: Any
) -> SolverNode:
    """The node a `solver run` command starts: honest, or the dishonest subclass `adversary` names."""
    if adversary is None:
        return SolverNode(settings, *args, **kwargs)
    if adversary.mode is SolverAdversary.CHEAT:
        if adversary.behaviour is None:
            raise ConfigError("--adversary cheat needs --behaviour")
        return CheatingSolverNode(settings, *args, behaviour=adversary.behaviour, seed=adversary.seed, **kwargs)
    if adversary.mode is SolverAdversary.WITHHOLD:
        return WithholdingSolverNode(settings, *args, **kwargs)
    if adversary.mode is SolverAdversary.MALFORMED:
        return MalformedSolverNode(settings, *args, **kwargs)
    if adversary.mode is SolverAdversary.UNOPENABLE:
        return UnopenableSolverNode(settings, *args, **kwargs)
    if adversary.mode is SolverAdversary.WITHHOLD_DOCUMENT:
        return WithholdingDocumentSolverNode(settings, *args, **kwargs)
    if adversary.mode is SolverAdversary.WRONG_PAYLOAD:
        return WrongPayloadSolverNode(settings, *args, **kwargs)
    if adversary.mode is SolverAdversary.WRONG_RESIDUAL:
        return WrongResidualSolverNode(settings, *args, **kwargs)
    if adversary.mode is SolverAdversary.FORGED_MOMENTS:
        return ForgedMomentsSolverNode(settings, *args, **kwargs)
    if adversary.mode is SolverAdversary.SLOW_SERVE:
        return SlowServingSolverNode(settings, *args, **kwargs)
    return WrongClaimSolverNode(settings, *args, **kwargs)
