"""gradledger: verifiable, incentivized DiLoCo training with on-chain settlement.

This package holds only the `gradledger` command line; the protocol lives in `protocol/`
and each role in its own package (`solver/`, `verifier/`, `whistleblower/`, `devnet/`).
"""

from protocol.adapters.execution_env import pin_execution_environment

# INVARIANT: first thing in every process the command starts (`gradledger ...`, `python -m gradledger`, torchrun
# ranks, the nodes the demo starts): the execution profile's kernels are chosen before torch loads
# (protocol/execution_pins.py, docs/determinism.md).
pin_execution_environment()

__version__ = "0.1.0"
