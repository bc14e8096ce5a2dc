"""A verifier on a machine that does not reproduce the profile never fails honest work on an exact mismatch.

On a real anvil: one honest solver, one verifier holding both draws of its seat. The verifier runs in a deliberately
broken environment: the pins switched off and torch asked for its portable kernels (`ATEN_CPU_CAPABILITY=default`),
so its replays are not bit-identical to the solver's AVX2 ones, as on an honest machine with another CPU or BLAS. Its
golden self-check at start says so (log, /health, /metrics), and it judges the differing replays by the run's
tolerances against the solver's committed end checkpoints: it attests a pass, the solver is paid and nobody is
slashed. Before the self-check, the same verifier attested an exact fail on the honest solver (docs/determinism.md).
"""

from __future__ import annotations

import os

import httpx
import pytest

from node.profile_check import check_reproduction
from protocol.adapters.execution_env import get_unpinned_environment
from protocol.execution_pins import CURRENT_PROFILE
from protocol.run_presets import TINY
from tests.chain_fixtures import prepare_run, wait_until
from tests.disputes.conftest import address, all_events, logs, nodes_running, slashed, start

pytestmark = pytest.mark.e2e

RULES = TINY.with_run(
    max_rounds=1, samples_per_commitment=2, verifiers_per_commitment=1, jury_size=3, commit_window=300,
    attest_window=300, challenge_window=300, dispute_timeout=600,
)  # fmt: skip
HONEST, VERIFIER = 1, 2


def _broken_environment() -> dict[str, str]:
    """The pins off and torch's portable kernels asked for (a replacement environment, not additions)."""
    return get_unpinned_environment(os.environ, ATEN_CPU_CAPABILITY="default")


def _profile_health(port: int) -> dict | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json().get("profile")
    except (httpx.HTTPError, ValueError):
        return None


def test_unreproducing_verifier_judges_by_tolerance_and_passes_honest_work(fresh_deployment, corpus, tmp_path):
    setup = prepare_run(fresh_deployment, corpus, tmp_path / "home", [HONEST], [VERIFIER], RULES)
    protocol, run_id = setup.protocol, setup.run_id
    nodes = [
        start(setup, "honest", ["solver", "run", "--no-progress"], HONEST, "--coordinator"),
        start(setup, "verifier", ["verifier", "serve"], VERIFIER, "--no-jury", env=_broken_environment()),
    ]
    port = setup.ports[VERIFIER]
    with nodes_running(setup, nodes):
        setup.create()
        with setup.drive(lambda: [(setup.ports[n.account], n.process) for n in nodes]):
            wait_until(lambda: _profile_health(port) is not None, 300, "the verifier's golden self-check")
            profile = _profile_health(port)
            assert profile is not None
            assert profile["name"] == CURRENT_PROFILE and profile["reproduces"] is False
            assert profile["verdicts"] == "tolerance" and "pins are switched off" in profile["reason"]
            assert profile["aten_capability"] == "DEFAULT"
            metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            assert f'gradledger_profile_reproduced{{profile="{CURRENT_PROFILE}"}} 0.0' in metrics
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
            wait_until(lambda: protocol.shares_of(run_id, address(HONEST)) > 0, 300, "the honest solver's shares")
            attestations = httpx.get(f"http://127.0.0.1:{port}/attestations", timeout=5).json()
        assert [a["kind"] for a in attestations] == ["pass"], logs(setup, nodes)
        assert "within the run's tolerances" in attestations[0]["reason"], "its replays differed from the solver's"
        assert not slashed(all_events(protocol)), "nobody is slashed: the work was honest"
        text = logs(setup, nodes)
        assert "execution profile NOT reproduced" in text and "never attests an exact fail" in text
        # the pinned solver says what this (pinned) test process's own self-check says of this machine
        here = check_reproduction(CURRENT_PROFILE, 1)
        said = "execution profile reproduced" if here.reproduces else "execution profile NOT reproduced"
        assert said in (setup.home / "honest.log").read_text()
