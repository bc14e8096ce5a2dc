"""protocol/contract_constants.py and tests/vectors/constants.json are what the contracts generate now.

Solidity is the one source of the protocol's constants (contracts/src/Constants.sol) and enums (every `enum` under
contracts/src); tests/vectors/generate_constants.py reads them from the compiler's AST. Drift either way fails here:
a value changed in Solidity only makes the regenerated text differ from the committed file, and so does a generated
file edited by hand. The fix in both cases is `make vectors` (after changing the Solidity, if that was the intent).
"""

from __future__ import annotations

import difflib
import re

import eth_abi
import pytest

from devnet.deploy import DEPLOY_ORDER, TEMPLATES, load_artifact
from protocol import constants, contract_constants, types
from tests.vectors import generate_constants
from tests.vectors.generate_constants import (
    CONTRACTS_DIR,
    ENUM_NAMES,
    JSON_PATH,
    MODULE_PATH,
    REGENERATE,
    REPO_ROOT,
    ContractAsts,
    ContractSourceError,
    ContractSources,
    compile_sources,
    get_definitions,
    read_sources,
    render_constants_json,
    render_module,
)


def _first_difference(committed: str, generated: str) -> str:
    diff = difflib.unified_diff(committed.splitlines(), generated.splitlines(), "committed", "generated", lineterm="")
    return "\n".join(list(diff)[:12])


def test_generated_files_equal_what_the_contracts_generate_now():
    for path, text in generate_constants.render_all().items():
        name = path.relative_to(REPO_ROOT)
        assert path.exists(), f"{name} is missing; run: {REGENERATE}"
        committed = path.read_text()
        assert committed == text, (
            f"{name} is not what the contracts generate now: a constant or enum changed on one side only (Solidity "
            f"is the source; never edit the generated file). Run: {REGENERATE}\n"
            f"{_first_difference(committed, text)}"
        )


def _edited(sources: ContractSources) -> ContractSources:
    """The sources changed in Solidity only: one constant's value, two new constants (one the generator cannot
    read), one enum's member order, and a new file-level enum."""
    constants_text = sources.constants.replace("JUROR_EXIT_DELAY = 2 days;", "JUROR_EXIT_DELAY = 3 days;").replace(
        "library Constants {\n",
        "library Constants {\n"
        "    int256 internal constant NEGATIVE = -(3 + 4) * 2 weeks;\n"
        "    address internal constant UNREADABLE = address(1);\n",
    )
    files = dict(sources.enum_files)
    plants = "src/interfaces/IPlants.sol"
    files[plants] = re.sub(
        r"(\s*)Normal, (//[^\n]*)\n(\s*)Planted, (//[^\n]*)\n", r"\1Planted, \4\n\3Normal, \2\n", files[plants]
    )
    files[plants] += "\nenum Stray { First } // after the enum, not its member's\n"
    assert "NEGATIVE" in constants_text and "3 days" in constants_text and "Planted, //" in files[plants]
    return ContractSources(constants_text, tuple(files.items()))


def _without_constant(asts: ContractAsts, name: str) -> ContractAsts:
    (library,) = [n for n in asts.constants["nodes"] if n.get("name") == "Constants"]
    kept = {**library, "nodes": [n for n in library["nodes"] if n.get("name") != name]}
    nodes = [kept if n is library else n for n in asts.constants["nodes"]]
    return ContractAsts(asts.sources, {**asts.constants, "nodes": nodes}, asts.enums)


def test_a_one_sided_change_in_solidity_fails_the_drift_check():
    """What a developer who edits only Solidity gets: a module and constants.json unlike the committed ones (the
    drift test above fails), or a refusal that names what the generator cannot carry."""
    asts = compile_sources(_edited(read_sources()))
    with pytest.raises(ContractSourceError, match="UNREADABLE is neither a compile-time number"):
        get_definitions(asts)
    asts = _without_constant(asts, "UNREADABLE")
    with pytest.raises(ContractSourceError, match="missing from ENUM_NAMES: \\['Stray'\\]"):
        get_definitions(asts)
    definitions = get_definitions(asts, {**ENUM_NAMES, "Stray": "Stray"})
    module, values = render_module(definitions), render_constants_json(definitions)
    assert module != MODULE_PATH.read_text() and values != JSON_PATH.read_text()
    assert "JUROR_EXIT_DELAY = 259_200  # Constants.sol: 3 days" in module
    assert '"JUROR_EXIT_DELAY": 259200' in values
    assert f"NEGATIVE = {-7 * 14 * 86400:_}  # Constants.sol: -(3 + 4) * 2 weeks" in module
    assert "    PLANTED = 0  # revealed planted" in module and "    NORMAL = 1  # planting off" in module
    assert "class Stray(IntEnum):" in module and "    FIRST = 0\n" in module


def test_a_hand_edit_of_a_generated_file_fails_the_drift_check():
    definitions = get_definitions(compile_sources(read_sources()))
    committed = MODULE_PATH.read_text()
    assert render_module(definitions) == committed
    edited = committed.replace("MAX_APPEALS = 2\n", "MAX_APPEALS = 3\n")
    assert edited != committed and render_module(definitions) != edited


def test_every_constant_is_checked_by_forge():
    """contracts/test/Constants.t.sol compares each constant of Constants.sol with constants.json: the compiled
    value, not the AST, so a misread expression would fail forge."""
    forge_test = (CONTRACTS_DIR / "test" / "Constants.t.sol").read_text()
    unchecked = [name for name in contract_constants.CONSTANT_NAMES if f"Constants.{name}" not in forge_test]
    assert not unchecked, f"add these to contracts/test/Constants.t.sol: {unchecked}"


def test_protocol_modules_use_the_generated_constants_and_enums():
    for name in contract_constants.CONSTANT_NAMES:
        assert getattr(constants, name) is getattr(contract_constants, name), name
    for python_name in ("AttestationState", "ClaimStatus", "DisputeStatus", "Opening", "PlantPay"):
        assert getattr(types, python_name) is getattr(contract_constants, python_name), python_name


def _abi_enums(entries: list[dict]) -> list[tuple[str, str]]:
    """(internalType's enum name, ABI type) of every enum in the entries, through tuples and arrays."""
    found = []
    for entry in entries:
        internal = entry.get("internalType", "")
        if internal.startswith("enum "):
            found.append((internal.removeprefix("enum ").removesuffix("[]"), entry["type"]))
        found += _abi_enums(entry.get("components", []))
    return found


def test_every_enum_the_contracts_return_decodes_to_its_generated_enum():
    """Each enum in a deployed contract's ABI (return values, event fields, arguments) has a generated IntEnum, and
    every member of it round-trips through the ABI's uint8 -- the way the adapters decode (`PlantPay(call(...))`)."""
    out_dir = CONTRACTS_DIR / "out"
    seen = set()
    for contract in (*DEPLOY_ORDER, *TEMPLATES):
        abi, _ = load_artifact(out_dir, contract)
        for item in abi:
            for canonical, abi_type in _abi_enums(item.get("outputs", []) + item.get("inputs", [])):
                assert canonical in ENUM_NAMES, f"{contract}.{item.get('name')}: enum {canonical} has no Python twin"
                enum = getattr(contract_constants, ENUM_NAMES[canonical])
                assert abi_type.removesuffix("[]") == "uint8", (contract, item.get("name"), abi_type)
                for member in enum:
                    (decoded,) = eth_abi.decode(["uint8"], eth_abi.encode(["uint8"], [member.value]))
                    assert enum(decoded) is member
                seen.add(canonical)
    # the enums the nodes read from views and events are among them (a renamed internalType would hide one)
    assert {"Verification.AttestationState", "IPlants.Pay", "RunRegistry.ClaimStatus", "Disputes.Status"} <= seen
