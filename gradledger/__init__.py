"""gradledger: verifiable, incentivized DiLoCo training with on-chain settlement.

This package holds only the `gradledger` command line; the protocol lives in `protocol/`
and each role in its own package (`solver/`, `verifier/`, `whistleblower/`, `devnet/`).
"""

__version__ = "0.1.0"
