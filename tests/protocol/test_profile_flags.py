"""`set_deterministic_algorithms` sets torch's flag both ways without loading the inductor compiler, and keeps the
compiler's flag equal once something else loaded it (protocol/profile.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_PROBE = """
import json, sys
import torch
from protocol.profile import set_deterministic_algorithms
seen = []
for wanted in (True, False, True):
    set_deterministic_algorithms(wanted)
    seen.append(torch.are_deterministic_algorithms_enabled())
loaded = "torch._inductor" in sys.modules
import torch._inductor.config as inductor_config
set_deterministic_algorithms(False)
after = [torch.are_deterministic_algorithms_enabled(), inductor_config.deterministic]
set_deterministic_algorithms(True)
after += [torch.are_deterministic_algorithms_enabled(), inductor_config.deterministic]
print(json.dumps({"seen": seen, "inductor_loaded": loaded, "after": after}))
"""


@pytest.fixture(scope="module")
def probe() -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_set_deterministic_algorithms_sets_the_kernels_flag_each_way_succeeds(probe):
    assert probe["seen"] == [True, False, True]


def test_set_deterministic_algorithms_without_the_compiler_loaded_leaves_it_unloaded_succeeds(probe):
    assert probe["inductor_loaded"] is False


def test_set_deterministic_algorithms_with_the_compiler_loaded_sets_both_flags_succeeds(probe):
    assert probe["after"] == [False, False, True, True]
