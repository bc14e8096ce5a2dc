"""What a node says while it cannot start (no chain; fakes for the chain reads): a run that does not exist yet
(`--run 99`), a solver without the stake to join, and a cause that lasts, logged once rather than every second."""

from __future__ import annotations

import logging
import threading

import pytest

from node.bootstrap import RunNode, wait_for_run
from protocol.errors import GradledgerError
from protocol.ledger import format_eth
from solver.joining import StakeNeededError, verify_stake_covers
from tests.log_capture import LogRecords

ETH = 10**18
SOLVER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


@pytest.fixture
def log():
    logger = logging.getLogger("gradledger.test-waiting")
    handler = LogRecords()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield logger, handler.records
    logger.removeHandler(handler)


class NoWait(threading.Event):
    """A stop event whose waits return at once (the loops under test poll; no test sleeps)."""

    def wait(self, timeout: float | None = None) -> bool:
        return self.is_set()


class FakeChain:
    def __init__(self, counts: list[int]) -> None:
        self.counts = counts
        self.reads = 0

    def call(self, contract: str, function: str, *args):
        assert (contract, function) == ("RunRegistry", "runCount")
        value = self.counts[min(self.reads, len(self.counts) - 1)]
        self.reads += 1
        return value


class FakeProtocol:
    def __init__(self, counts: list[int] = (), stake: tuple[int, int] = (0, 0)) -> None:
        self.chain = FakeChain(list(counts))
        self.stake = stake

    def stake_of(self, address: str, role: int) -> tuple[int, int, int, int]:
        bonded, reserved = self.stake
        return bonded, 0, 0, reserved


def test_waiting_for_a_run_that_does_not_exist_says_so_and_the_run_count(log):
    logger, records = log
    protocol = FakeProtocol(counts=[2] * 5 + [3] * 5 + [99])
    assert wait_for_run(protocol, 99, NoWait(), log=logger, log_every_s=3600)
    waiting = [r for r in records if r.getMessage() == "waiting for the run to be created"]
    assert [r.fields["run_count"] for r in waiting] == [2, 3], "once, then again when the count changes"
    assert all(r.levelno == logging.WARNING for r in waiting), "run 99 cannot be the next one: likely a wrong --run"
    why = waiting[0].fields["why"]
    assert "run 99 does not exist yet: the chain has 2 run(s), the next one created is run 3" in why
    assert "gradledger run create" in why and "check --run" in why
    assert records[-1].getMessage() == "run created" and records[-1].fields["run"] == 99


def test_waiting_for_the_next_run_is_information_and_repeats_while_it_lasts(log):
    logger, records = log
    protocol = FakeProtocol(counts=[0, 0, 0, 1])
    assert wait_for_run(protocol, 1, NoWait(), log=logger, log_every_s=0)
    waiting = [r for r in records if r.getMessage() == "waiting for the run to be created"]
    assert len(waiting) == 3 and all(r.levelno == logging.INFO for r in waiting)


def test_a_stopped_wait_returns_false_silently_when_the_run_exists_at_once(log):
    logger, records = log
    stop = NoWait()
    stop.set()
    assert not wait_for_run(FakeProtocol(counts=[0]), 1, stop, log=logger)
    assert wait_for_run(FakeProtocol(counts=[1]), 1, NoWait(), log=logger)
    assert records == []


def test_an_unstaked_solver_is_told_the_stake_and_the_command():
    with pytest.raises(StakeNeededError) as caught:
        verify_stake_covers(FakeProtocol(stake=(0, 0)), SOLVER, 7, 10 * ETH)
    message = str(caught.value)
    assert f"solver {SOLVER} cannot join run 7: it needs 10 ETH of free solver stake" in message
    assert "has 0 ETH (0 ETH bonded)" in message
    assert "`gradledger solver stake --amount 10 --run 7`" in message


def test_stake_reserved_by_other_runs_does_not_count():
    with pytest.raises(StakeNeededError) as caught:
        verify_stake_covers(FakeProtocol(stake=(15 * ETH, 10 * ETH)), SOLVER, 2, 10 * ETH)
    assert "has 5 ETH (15 ETH bonded, 10 ETH reserved by other runs)" in str(caught.value)
    assert "--amount 5 --run 2" in str(caught.value)
    verify_stake_covers(FakeProtocol(stake=(20 * ETH, 10 * ETH)), SOLVER, 2, 10 * ETH)  # covered: no error


def test_format_eth_keeps_every_digit_and_no_more():
    assert [format_eth(w) for w in (0, 10 * ETH, ETH // 2, 1, 12 * ETH + 5)] == [
        "0", "10", "0.5", "0.000000000000000001", "12.000000000000000005",
    ]  # fmt: skip


class StuckNode(RunNode):
    """A RunNode whose start fails with `causes` (one per attempt) before it succeeds; no adapters."""

    def __init__(self, causes: list[str], logger: logging.Logger) -> None:
        self.causes = causes
        self.stop = NoWait()
        self.log = logger
        self.last_error = ""
        self.public_url = None
        self.announced = False

    def load(self):
        if self.causes:
            raise GradledgerError(self.causes.pop(0))

    def on_start(self) -> None:
        pass


def test_a_lasting_cause_is_logged_once_and_each_new_cause_at_once(log):
    logger, records = log
    causes = ["no stake"] * 50 + ["cannot reach the chain"] * 50 + ["no stake"] * 3
    assert StuckNode(causes, logger).start()
    logged = [(r.getMessage(), r.fields["error"]) for r in records]
    assert logged == [
        ("cannot start yet, retrying", "no stake"),
        ("cannot start yet, retrying", "cannot reach the chain"),
        ("cannot start yet, retrying", "no stake"),
    ]
