"""Generate Python's copy of the contracts' constants and enums from the Solidity source, their one source.

    python -m tests.vectors.generate_constants          # rewrite protocol/contract_constants.py, constants.json
    python -m tests.vectors.generate_constants --check  # exit 1 if either file is not what the contracts give now

(`make vectors` runs this with the other vectors.) The project's compiler (the npm solc that contracts/bin/solc wraps)
is asked for two ASTs in one process: contracts/src/Constants.sol fully analysed -- the type of a constant's value
expression is then `int_const <value>`, so arithmetic, subdenominations (`2 days`, `1 ether`) and `2 ** 32` need no
evaluator here -- and, parsed only, every file under contracts/src that declares an enum (members in declaration
order). The only other values a constant may hold are a string literal and `keccak256("literal")`, computed with
eth_hash; anything else is refused with a message naming the constant.

Python names of the enums come from one table, `ENUM_NAMES`: an enum declared in Solidity and missing from it (or
the reverse) fails generation, so a new enum gets its Python twin the day it is added. Member names are Solidity's in
UPPER_SNAKE_CASE (`JuryDrawn` -> `JURY_DRAWN`). tests/protocol/test_contract_constants.py regenerates both files in
memory and compares them with the committed ones, so a value changed in Solidity only, or a generated file edited by
hand, fails.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eth_hash.auto import keccak

from protocol.errors import GradledgerError

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTRACTS_DIR = REPO_ROOT / "contracts"
CONSTANTS_SOURCE = "src/Constants.sol"
CONSTANTS_LIBRARY = "Constants"
MODULE_PATH = REPO_ROOT / "protocol" / "contract_constants.py"
JSON_PATH = REPO_ROOT / "tests" / "vectors" / "constants.json"
REGENERATE = "make vectors (python -m tests.vectors.generate_constants)"

# Solidity's canonical enum name -> the Python IntEnum's name: the one place the two languages' names may differ.
ENUM_NAMES: dict[str, str] = {
    "Verification.AttestationState": "AttestationState",
    "IVerification.Resolution": "AttestationResolution",
    "IRunRegistry.Opening": "Opening",
    "RunRegistry.ClaimStatus": "ClaimStatus",
    "IRunRegistry.ClaimOutcome": "ClaimOutcome",
    "Disputes.Status": "DisputeStatus",
    "IPlants.Pay": "PlantPay",
    "IModelShares.ShareKind": "ShareKind",
    "PeerHosts.Verdict": "PeerHostVerdict",
}

_ENUM_DECLARATION = re.compile(rb"\benum\s+\w+\s*\{")
_RATIONAL = re.compile(r"t_rational_(minus_)?(\d+)_by_(\d+)")
_WRAP = 116  # comment text per line: "# " + 116 characters + indentation stays within ruff's 120

# Runs inside node: loads the npm compiler once and compiles each standard-JSON input of stdin, in order.
_COMPILE_SCRIPT = """
const solc = require(process.argv[1]);
const inputs = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(inputs.map((i) => JSON.parse(solc.compile(JSON.stringify(i))))));
"""


class ContractSourceError(GradledgerError):
    """The contracts cannot be compiled or hold a constant or enum this generator cannot carry to Python."""


@dataclass(frozen=True)
class SolidityConstant:
    """One constant of the Constants library: its value as Python holds it (int, or bytes for bytes32/string)."""

    name: str
    solidity_type: str
    value: int | bytes
    expression: str  # the value as written in Solidity
    doc: str  # its NatSpec, tags removed, on one line


@dataclass(frozen=True)
class EnumMember:
    solidity_name: str
    comment: str  # the `//` comment on the member's line, or ""

    @property
    def python_name(self) -> str:
        return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", self.solidity_name).upper()


@dataclass(frozen=True)
class SolidityEnum:
    canonical_name: str  # "Contract.Enum", as in the ABI's internalType "enum Contract.Enum"
    python_name: str
    source: str  # its file, relative to contracts/
    doc: str
    members: tuple[EnumMember, ...]


@dataclass(frozen=True)
class ContractDefinitions:
    """Everything the Python side copies from Solidity: constants in Constants.sol's order, enums in ENUM_NAMES'."""

    constants: tuple[SolidityConstant, ...]
    enums: tuple[SolidityEnum, ...]


def compile_asts(inputs: list[dict[str, Any]], contracts_dir: Path = CONTRACTS_DIR) -> list[dict[str, Any]]:
    """Compile standard-JSON `inputs` with the project's npm solc in one node process (loading it costs most).

    stdin and stdout go through files: solcjs truncates large inputs read from a pipe, and node large outputs."""
    node = shutil.which("node")
    solc = contracts_dir / "node_modules" / "solc"
    if node is None or not (solc / "soljson.js").exists():
        raise ContractSourceError(f"node and {solc} are needed to read the contracts' constants: run `make setup`")
    with tempfile.TemporaryFile("w+") as stdin, tempfile.TemporaryFile("w+") as stdout:
        json.dump(inputs, stdin)
        stdin.seek(0)
        done = subprocess.run(
            [node, "-e", _COMPILE_SCRIPT, str(solc)], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, text=True
        )
        stdout.seek(0)
        text = stdout.read()
    if done.returncode != 0:
        raise ContractSourceError(f"solc (node) failed with exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    outputs: list[dict[str, Any]] = json.loads(text)
    for output in outputs:
        errors = [e["formattedMessage"] for e in output.get("errors", []) if e.get("severity") == "error"]
        if errors:
            raise ContractSourceError("the contracts do not compile:\n" + "\n".join(errors))
    return outputs


def _standard_json(sources: dict[str, str], *, parse_only: bool) -> dict[str, Any]:
    settings: dict[str, Any] = {"outputSelection": {"*": {"": ["ast"]}}}
    if parse_only:
        settings["stopAfter"] = "parsing"
    return {"language": "Solidity", "sources": {k: {"content": v} for k, v in sources.items()}, "settings": settings}


@dataclass(frozen=True)
class ContractSources:
    """The Solidity text the definitions come from: Constants.sol, and each file declaring an enum (path, text)."""

    constants: str
    enum_files: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ContractAsts:
    """The compiler's ASTs of `ContractSources`: Constants.sol analysed, the enum files parsed."""

    sources: ContractSources
    constants: dict[str, Any]
    enums: dict[str, dict[str, Any]]  # path -> AST


def read_sources(contracts_dir: Path = CONTRACTS_DIR) -> ContractSources:
    """Constants.sol's text, and the text of every file under src/ that declares an enum."""
    enum_files = tuple(
        (path.relative_to(contracts_dir).as_posix(), path.read_text())
        for path in sorted((contracts_dir / "src").rglob("*.sol"))
        if _ENUM_DECLARATION.search(path.read_bytes())
    )
    return ContractSources((contracts_dir / CONSTANTS_SOURCE).read_text(), enum_files)


@functools.lru_cache(maxsize=4)
def compile_sources(sources: ContractSources) -> ContractAsts:
    """Both ASTs in one compiler process (loading solcjs is most of the ~2 s); cached per distinct source text, so
    the tests that read the committed contracts compile them once per process."""
    constants_ast, enums_ast = compile_asts(
        [
            _standard_json({CONSTANTS_SOURCE: sources.constants}, parse_only=False),
            _standard_json(dict(sources.enum_files), parse_only=True),
        ]
    )
    enums = {path: output["ast"] for path, output in enums_ast["sources"].items()}
    return ContractAsts(sources, constants_ast["sources"][CONSTANTS_SOURCE]["ast"], enums)


def get_definitions(asts: ContractAsts, enum_names: Mapping[str, str] = ENUM_NAMES) -> ContractDefinitions:
    """The constants and enums of compiled sources; every enum declared must have a Python name in `enum_names`
    and every name there an enum, else ContractSourceError."""
    constants = _read_constants(asts.constants, asts.sources.constants.encode())
    found = {name: (path, node) for path, ast in asts.enums.items() for name, node in _enums(ast)}
    unnamed, gone = sorted(set(found) - set(enum_names)), sorted(set(enum_names) - set(found))
    if unnamed or gone:
        raise ContractSourceError(
            f"enums declared in contracts/src but missing from ENUM_NAMES: {unnamed}; in ENUM_NAMES but no longer "
            f"declared: {gone}. Give each its Python name in tests/vectors/generate_constants.py (ENUM_NAMES)."
        )
    texts = dict(asts.sources.enum_files)
    enums = tuple(
        _read_enum(canonical, python, *found[canonical], texts[found[canonical][0]].encode())
        for canonical, python in enum_names.items()
    )
    return ContractDefinitions(constants, enums)


def read_definitions(contracts_dir: Path = CONTRACTS_DIR) -> ContractDefinitions:
    """The constants and enums of the contracts as they are on disk now."""
    return get_definitions(compile_sources(read_sources(contracts_dir)))


def _enums(ast: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A parsed file's enums by canonical name ("Contract.Enum", or "Enum" at file level): the name the ABI's
    internalType uses (a parse-only AST has no canonicalName; enums are declared at file or contract level only)."""
    found = []
    for node in ast["nodes"]:
        if node.get("nodeType") == "EnumDefinition":
            found.append((node["name"], node))
        elif node.get("nodeType") == "ContractDefinition":
            found += [
                (f"{node['name']}.{n['name']}", n) for n in node["nodes"] if n.get("nodeType") == "EnumDefinition"
            ]
    return found


def _source_text(src: str, text: bytes) -> str:
    start, length, _ = (int(part) for part in src.split(":"))
    return text[start : start + length].decode()


def _natspec(node: dict[str, Any]) -> str:
    documentation = node.get("documentation") or {}
    words = re.sub(r"@(notice|dev|title)\b", "", documentation.get("text", "")).split()
    return " ".join(words)


def _read_constants(ast: dict[str, Any], text: bytes) -> tuple[SolidityConstant, ...]:
    libraries = [
        n for n in ast["nodes"] if n.get("nodeType") == "ContractDefinition" and n["name"] == CONSTANTS_LIBRARY
    ]
    if len(libraries) != 1:
        raise ContractSourceError(f"{CONSTANTS_SOURCE} must declare one library {CONSTANTS_LIBRARY}")
    return tuple(
        SolidityConstant(
            name=node["name"],
            solidity_type=node["typeDescriptions"]["typeString"],
            value=_constant_value(node),
            expression=_source_text(node["value"]["src"], text),
            doc=_natspec(node),
        )
        for node in libraries[0]["nodes"]
        if node.get("nodeType") == "VariableDeclaration" and node.get("constant")
    )


def _constant_value(node: dict[str, Any]) -> int | bytes:
    """The value of a constant's initialiser: a rational the compiler folded (typeIdentifier t_rational_N_by_1, the
    full number; the typeString abbreviates long ones), a string literal, or keccak256 of a string literal."""
    value = node["value"]
    type_string: str = value["typeDescriptions"]["typeString"]
    if type_string.startswith("int_const"):
        rational = _RATIONAL.fullmatch(value["typeDescriptions"]["typeIdentifier"])
        if rational is None or rational.group(3) != "1":
            raise ContractSourceError(f"{node['name']}: {type_string} is not an integer")
        return -int(rational.group(2)) if rational.group(1) else int(rational.group(2))
    if value["nodeType"] == "Literal" and value.get("kind") == "string":
        return bytes.fromhex(value["hexValue"])
    arguments = value.get("arguments", [])
    if (
        value["nodeType"] == "FunctionCall"
        and value["expression"].get("name") == "keccak256"
        and len(arguments) == 1
        and arguments[0]["nodeType"] == "Literal"
        and arguments[0].get("kind") == "string"
    ):
        return keccak(bytes.fromhex(arguments[0]["hexValue"]))
    raise ContractSourceError(
        f"{CONSTANTS_SOURCE}: {node['name']} is neither a compile-time number, a string literal nor "
        'keccak256("literal"); teach tests/vectors/generate_constants.py (_constant_value) its form'
    )


def _read_enum(canonical: str, python: str, path: str, node: dict[str, Any], text: bytes) -> SolidityEnum:
    members = []
    for member in node["members"]:
        start, length, _ = (int(part) for part in member["src"].split(":"))
        rest_of_line = text[start + length :].split(b"\n", 1)[0].decode()
        comment = re.match(r"\s*,?\s*//(.*)", rest_of_line)  # not the comment after a closing brace
        members.append(EnumMember(member["name"], comment.group(1).strip() if comment else ""))
    return SolidityEnum(canonical, python, path, _natspec(node), tuple(members))


def _comment(text: str, indent: str = "") -> list[str]:
    return [f"{indent}# {line}" for line in textwrap.wrap(text, _WRAP - len(indent))]


def _python_literal(constant: SolidityConstant) -> str:
    value = constant.value
    if isinstance(value, int):
        plain = constant.expression.strip()
        return plain if re.fullmatch(r"\d[\d_]*", plain) else f"{value:_}"
    if all(0x20 <= b < 0x7F and b not in b'"\\' for b in value) and constant.solidity_type == "string":
        return f'b"{value.decode()}"'
    return f'bytes.fromhex("{value.hex()}")'


def render_module(definitions: ContractDefinitions) -> str:
    """protocol/contract_constants.py: each constant under its NatSpec, then CONSTANT_NAMES, then the IntEnums."""
    names = [c.name for c in definitions.constants] + ["CONSTANT_NAMES"] + [e.python_name for e in definitions.enums]
    names.sort(key=lambda name: (not name.isupper(), name))  # ruff's order (RUF022): constants, then classes
    lines = [
        '"""The contracts\' constants and enums, GENERATED from contracts/src: do not edit this file.',
        "",
        f"Written by {REGENERATE}.",
        f"Each constant is contracts/{CONSTANTS_SOURCE}'s, under its NatSpec (with the Solidity expression where",
        "the value is spelt otherwise); each IntEnum is a Solidity enum, members in declaration order (Python's names:",
        "ENUM_NAMES in tests/vectors/generate_constants.py).",
        "protocol/constants.py re-exports the constants beside the rules Python derives from them;",
        "tests/protocol/test_contract_constants.py fails when this file is not what the contracts generate now.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from enum import IntEnum",
        "",
        "__all__ = [",
        *(f'    "{name}",' for name in names),
        "]",
    ]
    for constant in definitions.constants:
        literal = _python_literal(constant)
        assignment = f"{constant.name} = {literal}"
        expression = " ".join(constant.expression.split())
        spelt_alike = expression in (literal, literal.removeprefix("b"))
        note = "" if spelt_alike else f"Constants.sol: {expression}"
        comment = constant.doc
        if note and len(f"{assignment}  # {note}") <= _WRAP + 2:
            assignment, note = f"{assignment}  # {note}", ""
        lines += ["", *_comment(comment), *_comment(note), assignment]
    lines += ["", "# Every constant above by its Solidity name, in Constants.sol's order.", "CONSTANT_NAMES = ("]
    lines += [f'    "{c.name}",' for c in definitions.constants] + [")"]
    for enum in definitions.enums:
        doc = f"{enum.canonical_name} ({enum.source}): {enum.doc}" if enum.doc else f"{enum.canonical_name}."
        wrapped = textwrap.wrap(doc, _WRAP - 4)
        lines += ["", "", f"class {enum.python_name}(IntEnum):"]
        if len(wrapped) == 1:
            lines.append(f'    """{wrapped[0]}"""')
        else:
            lines += [f'    """{wrapped[0]}', *(f"    {line}" for line in wrapped[1:]), '    """']
        lines.append("")
        for value, member in enumerate(enum.members):
            assignment = f"    {member.python_name} = {value}"
            if member.comment and len(f"{assignment}  # {member.comment}") <= _WRAP + 4:
                lines.append(f"{assignment}  # {member.comment}")
            else:
                lines += [*_comment(member.comment, "    "), assignment]
    return "\n".join(lines) + "\n"


def render_constants_json(definitions: ContractDefinitions) -> str:
    """tests/vectors/constants.json (read by contracts/test/Constants.t.sol): numbers, and bytes as 0x-hex."""
    values = {c.name: "0x" + c.value.hex() if isinstance(c.value, bytes) else c.value for c in definitions.constants}
    return json.dumps(values, indent=1) + "\n"


def render_all(contracts_dir: Path = CONTRACTS_DIR) -> dict[Path, str]:
    """Generated file -> its exact text, from the contracts as they are on disk now."""
    definitions = read_definitions(contracts_dir)
    return {MODULE_PATH: render_module(definitions), JSON_PATH: render_constants_json(definitions)}


def get_stale_files(contracts_dir: Path = CONTRACTS_DIR) -> list[str]:
    """The generated files (relative to the repository) whose committed text is not what the contracts give now."""
    return [
        path.relative_to(REPO_ROOT).as_posix()
        for path, text in render_all(contracts_dir).items()
        if not path.exists() or path.read_text() != text
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the files are current")
    args = parser.parse_args()
    if args.check:
        stale = get_stale_files()
        if stale:
            print(f"stale generated files: {', '.join(stale)}; run: {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    for path, text in render_all().items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
