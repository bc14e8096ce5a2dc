"""The local simulation's benchmark extensions: compression, thinned eval, states, baselines."""

from __future__ import annotations

import pytest

from protocol.compression import FP32, Codec, ValueFormat
from sim.simulate import Compression, get_simulated_solver, run_continuous_training, run_simulation


def _simulate(config, corpus, **kwargs):
    manifest, shards = corpus
    return run_simulation(config, manifest, shards, solvers=2, rounds=2, processes=1, **kwargs)


@pytest.mark.slow
def test_lossless_codec_gives_the_uncompressed_trajectory(tiny_config, corpus):
    plain = _simulate(tiny_config, corpus)
    lossless = _simulate(tiny_config, corpus, compression=Compression(FP32, FP32))
    assert lossless.theta_hashes == plain.theta_hashes
    assert plain.syncs == 2 and plain.bytes_communicated == 2 * 2 * 2 * 4 * plain.parameters
    assert lossless.bytes_up > 2 * 2 * 4 * plain.parameters  # payload headers are counted


def test_compressed_simulation_counts_payload_bytes(tiny_config, corpus):
    setup = Compression(Codec(ValueFormat.INT8, block=64), Codec(ValueFormat.INT8, block=64))
    seen = []
    result = _simulate(tiny_config, corpus, compression=setup, eval_every=2, on_state=lambda r, s: seen.append(r))
    assert seen == [0, 1, 2]
    assert result.eval_rounds == [0, 2] and len(result.eval_loss) == 2
    assert result.bytes_up == result.bytes_down  # same codec both ways, one download per solver
    assert result.bytes_communicated < 2 * 2 * 2 * 4 * result.parameters / 3
    assert result.compression == "up int8-b64, down int8-b64"
    assert result.eval_loss[-1] < result.eval_loss[0]


def test_continuous_training_is_deterministic_and_evaluated(tiny_config, dataset):
    runs = [
        run_continuous_training(tiny_config, dataset, 5, get_simulated_solver(0), tiny_config, 2, "lone")
        for _ in range(2)
    ]
    assert runs[0].steps == [0, 2, 4, 5]
    assert runs[0].eval_loss == runs[1].eval_loss
    assert runs[0].eval_loss[-1] < runs[0].eval_loss[0]
