"""The audit replays accepted work: a deterministic sample of accepted segments, judged as verifiers judge them.

The other checks prove that the run followed its rules; none of them proves that the work a pass accepted is the
training it claims to be. A lazy or colluding verifier can pass a cheater's faked segments, and every event, share,
slash and θ then agrees with the chain. This check replays, for every **settled** round and every **accepted**
commitment (`Round.accepted`: the Δs θ_(r+1) was made of), a sample of its segments from the solver's committed start
checkpoint and judges the replay against the committed leaf.

INVARIANT: there is one training step and one verdict. The replay and the judgement are
`protocol.verdict.check_sample` (-> `protocol.replay.replay_segment`, `judge_exact`, the tolerances), the very
function a verifier, a whistleblower and a juror ask through `node/checker.py`; this module only chooses the segments
and fetches their checkpoints (local stores first, then peers: `auditor/sources.py`). So the audit cannot disagree
with the verifiers about what honest work is: it applies their rule to segments they may not have replayed. Exact
verdicts follow the machine's golden self-check (`node/profile_check.py`, as on every node): a machine that does not
reproduce the run's execution profile judges a replay that differs by the run's tolerances against the committed end
checkpoint, never by an exact mismatch.

The sample (`choose_replay_segments`) is a pure function of the run id, the round, the solver, the round's on-chain
seed base and the audit seed (`--replay-seed`, default 0): key = keccak256(SAMPLE_DOMAIN ‖ runId (32 bytes) ‖ round
(8) ‖ solver (20) ‖ seedBase (32) ‖ auditSeed (32)); the segments are ranked by keccak256(key ‖ index (4 bytes)) and
the first N are replayed. The seed base is drawn after the commit deadline, so a solver cannot know at commit time
which segments even the default audit replays; anyone re-running the audit with the same seed replays the same ones.

A start checkpoint no store or peer holds (the solver stopped serving after settlement) is **unavailable**: a warning
naming run, round, solver and segment, not a failure. A segment that is fetched and does not replay (or whose bytes
are no canonical state) is a failure naming run, round, solver, segment and the verifier's reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from auditor.checks import (
    MAX_LISTED,
    REPLAY,
    AuditWarning,
    CheckResult,
    DocumentFacts,
    StartHashes,
    judge_document,
    make_check_result,
)
from node.logs import get_logger, log_event
from protocol.adapters.artifacts import ArtifactError
from protocol.commitment import CommitmentDoc
from protocol.config import RunConfig
from protocol.data import TokenDataset
from protocol.errors import ConfigError, GradledgerError, StateEncodingError
from protocol.hashing import keccak256, to_hash32
from protocol.history.records import RunHistory
from protocol.state import decode_state
from protocol.training import State
from protocol.verdict import TOLERANCE_PREFIX, check_sample

REPLAY_UNAVAILABLE = "replay unavailable"
SAMPLE_DOMAIN = b"gradledger/audit-replay/v1"
DEFAULT_REPLAY = 1
"""Segments replayed per accepted commitment when `--replay` is not given: one, like one verifier draw."""
ReadArtifact = Callable[[bytes | str, str], bytes]
"""`ArtifactSources.read`: the hash-checked bytes of an artifact, or an ArtifactError (missing, only corrupt copies)."""
Status = Literal["replayed", "failed", "unavailable"]
logger = get_logger("audit")


class ReplaySettingsError(ConfigError):
    """`--replay` or `--replay-seed` has a value the audit cannot use."""


@dataclass(frozen=True)
class ReplaySettings:
    """How many segments of each accepted commitment the audit replays, and with which audit seed.

    `segments` None replays every segment, 0 skips the replay; `exact` None lets the machine's golden self-check
    decide between exact and tolerance verdicts (as on every node), True or False forces one (tests)."""

    segments: int | None = DEFAULT_REPLAY
    seed: int = 0
    exact: bool | None = None

    def __post_init__(self) -> None:
        if self.segments is not None and self.segments < 0:
            raise ReplaySettingsError(f"--replay must be 'all', 'none' or a count >= 0, got {self.segments}")
        if not 0 <= self.seed < 2**256:
            raise ReplaySettingsError(f"--replay-seed must be an integer in [0, 2^256), got {self.seed}")

    @property
    def skipped(self) -> bool:
        return self.segments == 0

    def describe(self) -> str:
        return "all" if self.segments is None else str(self.segments)


def parse_replay_count(text: str) -> int | None:
    """`--replay` as given: 'all' (None: every segment), 'none' or '0' (skip), or a count of segments >= 0."""
    value = text.strip().lower()
    if value == "all":
        return None
    if value == "none":
        return 0
    try:
        count = int(value)
    except ValueError:
        raise ReplaySettingsError(f"--replay must be 'all', 'none' or a count of segments, got {text!r}") from None
    if count < 0:
        raise ReplaySettingsError(f"--replay must be 'all', 'none' or a count >= 0, got {count}")
    return count


def compute_sample_key(run_id: int, round_index: int, solver: str, seed_base: bytes, audit_seed: int) -> bytes:
    """keccak256(SAMPLE_DOMAIN ‖ runId ‖ round ‖ solver ‖ seedBase ‖ auditSeed), fixed-width big-endian fields."""
    return keccak256(
        SAMPLE_DOMAIN
        + run_id.to_bytes(32, "big")
        + round_index.to_bytes(8, "big")
        + bytes.fromhex(solver.lower().removeprefix("0x"))
        + to_hash32(seed_base, "round seed base")
        + audit_seed.to_bytes(32, "big")
    )


def choose_replay_segments(
    run_id: int, round_index: int, solver: str, seed_base: bytes, audit_seed: int, num_segments: int, count: int | None
) -> tuple[int, ...]:
    """The segments of one commitment the audit replays, ascending: all of them when `count` is None, else the
    first `count` (at most `num_segments`) by rank keccak256(key ‖ index) -- a pure function of its arguments."""
    if count is None or count >= num_segments:
        return tuple(range(num_segments))
    key = compute_sample_key(run_id, round_index, solver, seed_base, audit_seed)
    ranked = sorted(range(num_segments), key=lambda i: keccak256(key + i.to_bytes(4, "big")))
    return tuple(sorted(ranked[:count]))


@dataclass(frozen=True)
class SegmentReplay:
    """What replaying one sampled segment of an accepted commitment found."""

    round: int
    solver: str
    segment: int
    status: Status
    reason: str

    def to_json(self, history: RunHistory) -> dict[str, Any]:
        return {
            "round": self.round,
            "solver": self.solver,
            "label": history.label_of(self.solver),
            "segment": self.segment,
            "status": self.status,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class ReplayOutcome:
    """The check, the warning about unavailable segments (if any), and every segment's result."""

    check: CheckResult
    warnings: tuple[AuditWarning, ...]
    replays: tuple[SegmentReplay, ...]


def decide_exact(config: RunConfig, settings: ReplaySettings) -> tuple[bool, str]:
    """(exact verdicts?, why): the settings' choice, else this machine's golden self-check, as on every node."""
    if settings.exact is not None:
        return settings.exact, "set by the caller"
    import torch

    from node.profile_check import check_reproduction

    try:
        report = check_reproduction(config.profile.name, torch.get_num_threads())
    except GradledgerError as exc:  # e.g. no goldens for this profile: judge by tolerances, as a node would
        return False, f"profile self-check failed: {exc}"
    return report.reproduces, report.reason


def _where(history: RunHistory, round_index: int, solver: str, segment: int) -> str:
    return f"run {history.run_id} round {round_index} {history.label_of(solver)} ({solver}) segment {segment}"


def _read_state(read: ReadArtifact, digest: bytes, what: str) -> tuple[State | None, str, bool]:
    """(state, problem, available): an ArtifactError is unavailable; bytes that are no state are the solver's fault."""
    try:
        data = read(digest, what)
    except ArtifactError as exc:
        return None, str(exc), False
    try:
        return decode_state(data), "", True
    except StateEncodingError as exc:
        return None, f"not a canonical state: {exc}", True


def replay_segment_sample(
    config: RunConfig,
    dataset: TokenDataset,
    doc: CommitmentDoc,
    segment: int,
    read: ReadArtifact,
    exact: bool,
) -> tuple[Status, str]:
    """Fetch segment `segment`'s committed start checkpoint (and, judging by tolerances, its end checkpoint) and
    judge the replay with `protocol.verdict.check_sample`; (status, reason)."""
    leaf = doc.leaves[segment]
    what = f"start checkpoint of segment {segment} (round {doc.round}, {doc.solver})"
    start, problem, available = _read_state(read, leaf.start_hash, what)
    if not available:
        return "unavailable", problem
    end, end_problem, end_available = None, "", True
    if not exact and start is not None:
        what = f"end checkpoint of segment {segment} (round {doc.round}, {doc.solver})"
        end, end_problem, end_available = _read_state(read, leaf.end_hash, what)
    check = check_sample(
        config, dataset, doc, 0, segment, start, problem, exact=exact, end_checkpoint=end, end_problem=end_problem
    )
    if check.accepted:
        return "replayed", check.reason
    if not end_available and check.reason.startswith(f"{TOLERANCE_PREFIX}: end checkpoint"):
        return "unavailable", end_problem  # the replay differs here; only the committed end could decide
    return "failed", check.reason


def check_replays(
    history: RunHistory,
    documents: Mapping[tuple[int, str], DocumentFacts],
    start_hashes: StartHashes,
    config: RunConfig | None,
    dataset: TokenDataset | None,
    read: ReadArtifact,
    settings: ReplaySettings,
) -> ReplayOutcome:
    """The check `accepted work replays`: every sampled segment of every accepted commitment of a settled round
    replays, judged as a verifier judges it; with the warning naming the segments nobody serves.

    `documents` are the accepted commitments' documents as `auditor/artifact_reads.py` read them. A commitment whose
    document is missing or fails its check (`judge_document`) is not replayed: the `commitment documents` check fails
    on it.
    """
    work = [(rnd, solver) for rnd in history.settled_rounds for solver in rnd.accepted]
    sample = {"replay": settings.describe(), "audit_seed": settings.seed, "accepted_commitments": len(work)}
    if settings.skipped:
        detail = "skipped (--replay 0): no accepted segment was replayed"
        return ReplayOutcome(CheckResult(REPLAY, True, detail, {**sample, "skipped": True}), (), ())
    if not work:
        return ReplayOutcome(
            CheckResult(REPLAY, True, "no settled round accepted work: nothing to replay", sample), (), ()
        )
    if config is None or dataset is None:
        problem = "run config or dataset unavailable (see run definition): no accepted segment could be replayed"
        return ReplayOutcome(make_check_result(REPLAY, [problem], "", sample), (), ())
    exact, why = decide_exact(config, settings)
    replays: list[SegmentReplay] = []
    not_replayed: list[str] = []
    for rnd, solver in work:
        found = documents.get((rnd.index, solver))
        reason = judge_document(history, found, start_hashes)
        if reason is not None or found is None or found.doc is None:
            not_replayed.append(f"round {rnd.index} {history.label_of(solver)} ({solver}): {reason}")
            continue
        seed_base = to_hash32(rnd.seed.seed_base) if rnd.seed is not None else bytes(32)
        chosen = choose_replay_segments(
            history.run_id, rnd.index, solver, seed_base, settings.seed, len(found.doc.leaves), settings.segments
        )
        for segment in chosen:
            status, outcome = replay_segment_sample(config, dataset, found.doc, segment, read, exact)
            replays.append(SegmentReplay(rnd.index, solver, segment, status, outcome))
    verdicts = {"verdicts": "exact" if exact else "tolerance", "verdicts_why": why}
    return _summarize(history, replays, not_replayed, {**sample, **verdicts})


def _summarize(
    history: RunHistory, replays: list[SegmentReplay], not_replayed: list[str], sample: dict[str, Any]
) -> ReplayOutcome:
    counts = {s: sum(1 for r in replays if r.status == s) for s in ("replayed", "failed", "unavailable")}
    named = {s: [f"{_where(history, r.round, r.solver, r.segment)}: {r.reason}" for r in replays if r.status == s]
             for s in ("failed", "unavailable")}  # fmt: skip
    problems, missing = named["failed"], named["unavailable"]
    evidence = {
        **sample,
        "segments_replayed": counts["replayed"],
        "segments_failed": counts["failed"],
        "segments_unavailable": counts["unavailable"],
        "replays": [r.to_json(history) for r in replays],
        "not_replayed": not_replayed,
    }
    detail = (
        f"{counts['replayed']} sampled segment(s) of {sample['accepted_commitments']} accepted commitment(s) replayed "
        f"({sample['verdicts']} verdicts; {sample['replay']} per commitment, audit seed {sample['audit_seed']})"
    )
    if missing:
        detail += f"; {len(missing)} unavailable (warning)"
    if not_replayed:
        detail += f"; {len(not_replayed)} commitment(s) not replayed: no valid document (see commitment documents)"
    warnings: tuple[AuditWarning, ...] = ()
    if missing:
        more = f"; and {len(missing) - MAX_LISTED} more" if len(missing) > MAX_LISTED else ""
        detail_missing = (
            f"{len(missing)} sampled segment(s) of accepted work could not be fetched (no store or peer serves "
            f"them), so were not replayed: {'; '.join(missing[:MAX_LISTED])}{more}"
        )
        warnings = (AuditWarning(REPLAY_UNAVAILABLE, detail_missing, {"unavailable": missing}),)
    for line in problems:
        log_event(logger, "accepted segment does not replay", level=logging.WARNING, problem=line)
    for line in missing:
        log_event(logger, "accepted segment unavailable", level=logging.WARNING, problem=line)
    log_event(
        logger, "replayed accepted work", replayed=counts["replayed"], failed=counts["failed"],
        unavailable=counts["unavailable"], verdicts=sample["verdicts"],
    )  # fmt: skip
    return ReplayOutcome(make_check_result(REPLAY, problems, detail, evidence), warnings, tuple(replays))
