"""Protocol constants: the contracts' own, and the rules Python derives from them.

Every constant of contracts/src/Constants.sol has one source, the Solidity library: `make vectors` generates
protocol/contract_constants.py (values, NatSpec, and the contracts' enums) and tests/vectors/constants.json from the
compiler's AST (tests/vectors/generate_constants.py), and tests/protocol/test_contract_constants.py fails when
either file is not what the contracts generate now. This module re-exports the generated constants under the import
path the code base uses (`from protocol.constants import MAX_APPEALS`) and holds what only Python computes from them.
To change a value, change Constants.sol and run `make vectors`; why each value is what it is: docs/contracts.md.

Round seeds, for the constants that bound them: a round starting in block B takes its seed from block
B + ceil(commitWindow / blockSeconds) (`roundTimes(run).seedBlock`), blockSeconds being the deployment's declared
block time in [MIN_BLOCK_SECONDS, MAX_BLOCK_SECONDS]; `drawSeed` works only in the SEED_HORIZON_BLOCKS blocks after
it, and createRun refuses windows that do not leave room for it (protocol/windows.py, RunRegistry._validateWindows).
"""

from __future__ import annotations

from protocol import contract_constants as _contract
from protocol.contract_constants import *  # noqa: F403 -- every generated constant, under this module's name
from protocol.contract_constants import CONSTANT_NAMES, MAX_APPEALS, MAX_JURY_SIZE, QUORUM_DENOMINATOR, QUORUM_NUMERATOR


def get_quorum(seats: int, appeals: int) -> int:
    """Signers a verdict needs from a jury of `seats` drawn seats at appeal level `appeals`, as `Disputes.quorum`
    computes it: ceil(seats * 2 / 3) before the last level, a simple majority (seats // 2 + 1) at the last
    (appeals == MAX_APPEALS), so a minority of the last jury cannot block every verdict."""
    if appeals >= MAX_APPEALS:
        return seats // 2 + 1
    return -(-seats * QUORUM_NUMERATOR // QUORUM_DENOMINATOR)


def get_appeal_jury_size(jury_size: int, appeals: int) -> int:
    """The jury size after `appeals` replacements: the run's, then min(2 * previous + 1, MAX_JURY_SIZE)."""
    for _ in range(appeals):
        jury_size = min(2 * jury_size + 1, MAX_JURY_SIZE)
    return jury_size


def get_constants() -> dict[str, int | str]:
    """Every constant of Constants.sol by its Solidity name, in its order; bytes as 0x-hex (constants.json's form)."""
    values: dict[str, int | bytes] = {name: getattr(_contract, name) for name in CONSTANT_NAMES}
    return {name: "0x" + value.hex() if isinstance(value, bytes) else value for name, value in values.items()}
