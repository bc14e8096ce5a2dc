"""Gas of one transaction of each settlement operation, measured on a fresh anvil.

    .venv/bin/python bench/gas.py

Builds the contracts (forge, offline), starts a fresh anvil (devnet.anvil.AnvilProcess), deploys the
protocol with web3 and plays two runs through a full round: solvers join, commit and open, verifiers
attest pass and fail, whistleblowers challenge, juries of 5 and 21 sign verdicts with py_ecc BLS keys
(the same keys and signatures the Python nodes produce), disputes are executed, the round is claimed
and settled, shares are minted, revenue is paid and withdrawn. Every number is `gasUsed` of a mined
transaction receipt. A table of all measured transactions goes to stdout; the last line is ONE JSON
object with the gas of `commit`, `open`, `attest`, `challenge`, `verdict_jury5`, `verdict_jury21`, `settle`,
`pay_revenue` and `withdraw_revenue`.

A busy machine slows anvil down but cannot change a gas number, so the bench must only outlast it: the chain clock
and mining go through ChainClient (answers checked; the seed-block gap mined in bounded chunks counted against the
block number, issue 38), reads are retried, and transactions, which must not be sent twice, get a long HTTP timeout.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eth_utils import to_checksum_address
from web3 import Web3

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from devnet.anvil import AnvilProcess
from devnet.deploy import DEPLOY_ORDER, build_contracts, get_constructor_args, get_create_address, load_artifact
from protocol import bls
from protocol.adapters.chain import ChainClient
from protocol.hashing import keccak256
from protocol.jury import (
    JurorEntry,
    Jury,
    assemble_verdict,
    compute_jury_seed,
    compute_vote,
    draw_jury,
)
from protocol.merkle import SegmentLeaf, build_merkle_tree, compute_leaf_hash, get_merkle_proof_at
from protocol.sampling import compute_sample, compute_sampling_seed, compute_seat_seed
from protocol.types import get_randao_block

UNBONDING_DELAY = 7 * 24 * 3600
WINDOW = 3600
BLOCK_SECONDS = 12
ETHER = 10**18
ROLE_SOLVER, ROLE_VERIFIER = 1, 2
KIND_ATTESTATION = 1
JURORS = 24
SEND_TIMEOUT_S = 300
"""HTTP timeout of a transaction (automined: the answer waits for its block). Never retried, so it is long: a
loaded machine once made anvil take over 30 s (web3's default) for one call."""
SEGMENTS = 8
SAMPLES = 2
TARGETS = {
    "commit": 50_000,
    "open": 80_000,
    "attest": 70_000,
    "challenge": 90_000,
    "verdict_jury21": 250_000,
    "settle": 120_000,
    "withdraw_revenue": 60_000,
}
REPORTED = (
    "commit",
    "open",
    "attest",
    "challenge",
    "verdict_jury5",
    "verdict_jury21",
    "settle",
    "pay_revenue",
    "withdraw_revenue",
)


@dataclass
class Bench:
    """A deployment on anvil plus the gas of every transaction sent through it."""

    w3: Web3
    chain: ChainClient
    """The same anvil through the one chain client: retried reads, checked devnet calls, chunked mining."""
    contracts: dict[str, Any]
    artifacts: Path
    """forge's out/ directory (ABIs of contracts deployed on the way, such as a run's share token)."""
    gas: dict[str, int] = field(default_factory=dict)

    def send(self, label: str | None, sender: str, fn: Any, value: int = 0) -> Any:
        """Send a transaction from an anvil dev account, fail loudly on revert, record its gas under `label`."""
        tx_hash = fn.transact({"from": sender, "value": value, "gas": 5_000_000})
        receipt = self.w3.eth.wait_for_transaction_receipt(tx_hash)
        if receipt["status"] != 1:
            raise RuntimeError(f"{label or fn.fn_name} reverted (tx {tx_hash.hex()})")
        if label is not None:
            self.gas[label] = int(receipt["gasUsed"])
        return receipt

    def call(self, contract: str, function: str, *args: Any) -> Any:
        """Read a view function (retried on a timeout: a read can run twice)."""
        if not self.chain.has_contract(contract):
            self.chain.add_contract(contract, self.contracts[contract].address, self.contracts[contract].abi)
        return self.chain.call(contract, function, *args)

    def fn(self, contract: str, function: str, *args: Any) -> Any:
        """A bound contract function, ready to transact."""
        return self.contracts[contract].functions[function](*args)

    def advance(self, seconds: int) -> None:
        """Move the chain clock forward and mine a block (windows are in block timestamps)."""
        self.chain.increase_time(seconds)

    def mine_past(self, block: int) -> None:
        """Mine empty blocks (0 s apart) until the chain is past `block` (a round's RANDAO block): hundreds of
        them, in bounded chunks (ChainClient.mine_blocks)."""
        self.chain.mine_blocks(block - self.chain.block_number() + 1, interval_s=0)

    def mine(self) -> None:
        """Mine one empty block."""
        self.chain.mine()

    def header(self, block: int) -> bytes:
        """Block `block`'s RLP-encoded header, checked against its hash: drawSeed proves its RANDAO value with it."""
        return self.chain.get_block_header_rlp(block)


def deploy(w3: Web3, deployer: str, artifacts: Path) -> dict[str, Any]:
    """Deploy the contracts in ProtocolDeployer's order, each with its peers' predicted addresses (forge's
    `artifacts` directory)."""
    nonce = w3.eth.get_transaction_count(to_checksum_address(deployer))
    addr = {name: get_create_address(deployer, nonce + i) for i, name in enumerate(DEPLOY_ORDER)}
    # 12-second blocks: the hour-long windows fit a 12-second chain's seed horizon (RunRegistry._validateWindows), and
    # mine_past mines the seed block's 300 blocks without moving the clock
    args = get_constructor_args(addr, UNBONDING_DELAY, block_seconds=BLOCK_SECONDS)
    contracts = {}
    for name in DEPLOY_ORDER:
        abi, bytecode = load_artifact(artifacts, name)
        tx = w3.eth.contract(abi=abi, bytecode=bytecode).constructor(*args[name]).transact({"from": deployer})
        receipt = w3.eth.wait_for_transaction_receipt(tx)
        if receipt["contractAddress"] != addr[name]:
            raise RuntimeError(f"{name} deployed at {receipt['contractAddress']}, expected {addr[name]}")
        contracts[name] = w3.eth.contract(address=to_checksum_address(addr[name]), abi=abi)
    return contracts


def run_config(jury_size: int) -> tuple:
    """RunConfig tuple in Types.sol order."""
    return (
        keccak256(b"bench config"),
        keccak256(b"bench dataset"),
        keccak256(b"bench theta0"),
        16,  # innerSteps
        2,  # stepsPerSegment -> 8 segments
        SAMPLES,  # samplesPerCommitment
        1,  # verifiersPerCommitment
        jury_size,
        WINDOW,
        WINDOW,
        WINDOW,
        WINDOW,
        10 * ETHER,  # solverMinStake
        5 * ETHER,  # verifierMinStake
        ETHER,  # attestationBond
        2 * ETHER,  # challengeBond
        6000,
        3000,
        1000,
        1000 * ETHER,  # sharesPerRound
        30 * 24 * 3600,  # revenueReleasePeriod
        10,  # maxRounds
        0,  # startDelay
    )


@dataclass
class Commitment:
    run_id: int
    round: int
    solver: str
    leaves: list[SegmentLeaf]

    @property
    def tree(self) -> Any:
        """The Merkle tree of the leaves (protocol.merkle)."""
        return build_merkle_tree([compute_leaf_hash(leaf) for leaf in self.leaves])

    @property
    def data(self) -> tuple:
        """The CommitmentData tuple the contracts take."""
        return (self.tree.root, keccak256(f"delta {self.solver}".encode()), sum(leaf.tokens for leaf in self.leaves))

    def leaf_and_proof(self, index: int) -> tuple[tuple, list[bytes]]:
        """LeafData tuple and Merkle proof of segment `index`."""
        leaf = self.leaves[index]
        return (leaf.start_hash, leaf.end_hash, leaf.sketch_hash, leaf.tokens), list(
            get_merkle_proof_at(self.tree, index)
        )


def make_commitment(run_id: int, round_index: int, solver: str) -> Commitment:
    """A solver's SEGMENTS leaves for a round, with distinct made-up state hashes."""
    leaves = [
        SegmentLeaf(
            run_id=run_id,
            round=round_index,
            solver=solver,
            index=i,
            start_hash=keccak256(f"state {solver} {i}".encode()),
            end_hash=keccak256(f"state {solver} {i + 1}".encode()),
            sketch_hash=keccak256(f"sketch {solver} {i}".encode()),
            tokens=4096,
        )
        for i in range(SEGMENTS)
    ]
    return Commitment(run_id, round_index, solver, leaves)


@dataclass(frozen=True)
class Juror:
    address: str
    key: bls.BlsKeyPair
    g1: bytes


class Scenario:
    """The walk-through whose transactions are measured."""

    def __init__(self, bench: Bench, accounts: list[str]) -> None:
        """Split anvil's dev accounts into the roles of the scenario."""
        self.b = bench
        self.creator, self.challenger, self.payer = accounts[0], accounts[1], accounts[2]
        self.solvers = accounts[3:8]
        self.verifiers = accounts[8:10]
        self.unopened_solver = accounts[10]  # commits in run B and never opens
        self.juror_accounts = accounts[11 : 11 + JURORS]
        self.jurors: list[Juror] = []
        self.chain_id = bench.chain.chain_id

    def setup_jurors(self) -> None:
        """Stake and register JURORS jurors with py_ecc keys and proofs of possession."""
        for i, account in enumerate(self.juror_accounts):
            key = bls.compute_key_pair(keccak256(f"bench juror {i}".encode()))
            registration = bls.compute_juror_registration(key, account)
            self.b.send(None, account, self.b.fn("StakeManager", "deposit", ROLE_VERIFIER), value=ETHER)
            label = "register_juror" if i == 0 else None
            self.b.send(
                label,
                account,
                self.b.fn(
                    "JurorRegistry", "registerJuror", registration.public_key_g1, registration.proof_of_possession_g2
                ),
            )
            self.jurors.append(Juror(account, key, registration.public_key_g1))

    def create_run(self, jury_size: int, label: str | None) -> int:
        """Create a run with a 100 ETH reward pool; returns its id."""
        receipt = self.b.send(
            label, self.creator, self.b.fn("RunRegistry", "createRun", run_config(jury_size)), value=100 * ETHER
        )
        del receipt
        return self.b.call("RunRegistry", "runCount")

    def join(self, run_id: int, solver: str, label: str | None) -> None:
        """Stake a solver and join it to the run."""
        self.b.send(None, solver, self.b.fn("StakeManager", "deposit", ROLE_SOLVER), value=10 * ETHER)
        self.b.send(label, solver, self.b.fn("RunRegistry", "join", run_id))

    def register_verifier(self, run_id: int, verifier: str, label: str | None) -> None:
        """Stake (if needed) and register a verifier in the run."""
        if self.b.call("StakeManager", "bondedOf", verifier, ROLE_VERIFIER) < 5 * ETHER:
            self.b.send(None, verifier, self.b.fn("StakeManager", "deposit", ROLE_VERIFIER), value=5 * ETHER)
        self.b.send(label, verifier, self.b.fn("VerifierRegistry", "register", run_id))

    def commit(self, run_id: int, solver: str, label: str | None) -> Commitment:
        """Build and commit a solver's round-0 commitment."""
        c = make_commitment(run_id, 0, solver)
        root, delta, tokens = c.data
        self.b.send(label, solver, self.b.fn("RunRegistry", "commit", run_id, 0, root, delta, tokens))
        return c

    def sample(self, c: Commitment, sample_index: int, slot: int = 0) -> int:
        """Segment of seat `slot`'s draw `sample_index`, computed in Python from the on-chain seed base."""
        base = self.b.call("Verification", "seedOf", c.run_id, c.round)[1]
        seed = compute_sampling_seed(base, c.run_id, c.round, c.solver)
        return compute_sample(compute_seat_seed(seed, slot), sample_index, SEGMENTS)

    def open(self, c: Commitment, label: str | None) -> None:
        """Open a commitment: the leaf and proof of both draws of its one seat (RunRegistry.open)."""
        entries = [c.leaf_and_proof(self.sample(c, j)) for j in range(SAMPLES)]
        leaves, proofs = [leaf for leaf, _ in entries], [proof for _, proof in entries]
        self.b.send(
            label, c.solver, self.b.fn("RunRegistry", "open", c.run_id, c.round, c.solver, c.data, leaves, proofs)
        )

    def attest_pass(self, c: Commitment, verifier: str, label: str | None) -> tuple:
        """Attest pass on seat 0."""
        ref = (c.run_id, c.round, c.solver, 0)
        self.b.send(label, verifier, self.b.fn("Verification", "attestPass", ref, c.data), value=ETHER)
        return ref

    def attest_fail(self, c: Commitment, verifier: str, label: str | None) -> tuple:
        """Attest fail on seat 0 naming draw 1, with the leaf and its proof."""
        ref = (c.run_id, c.round, c.solver, 0)
        leaf, proof = c.leaf_and_proof(self.sample(c, 1))
        self.b.send(label, verifier, self.b.fn("Verification", "attestFail", ref, c.data, 1, leaf, proof), value=ETHER)
        return ref

    def challenge(self, c: Commitment, label: str | None) -> tuple:
        """Challenge seat 0's attestation over draw 0; returns the dispute subject."""
        ref = (c.run_id, c.round, c.solver, 0)
        leaf, proof = c.leaf_and_proof(self.sample(c, 0))
        self.b.send(
            label,
            self.challenger,
            self.b.fn("Disputes", "challengeAttestation", ref, c.data, 0, leaf, proof),
            value=2 * ETHER,
        )
        return (KIND_ATTESTATION, c.run_id, c.round, c.solver, 0, 0)

    def _registry(self) -> list[JurorEntry]:
        """The juror registry in registration order (what JurorRegistered events replay to)."""
        return [JurorEntry(i, j.address, j.g1) for i, j in enumerate(self.jurors)]

    def _jury(self, subject: tuple) -> tuple[bytes, Jury]:
        """(dispute id, the jury protocol.jury draws for it from the registry and the seed block's hash)."""
        dispute_id = self.b.call("Disputes", "disputeIdOf", subject)
        opened_block = self.b.call("Disputes", "disputeOf", dispute_id)[2]
        seed = compute_jury_seed(self.b.chain.get_block(opened_block + 1)["hash"], dispute_id)
        jury_size = self.b.call("RunRegistry", "runParams", subject[1])[6]
        appeals = self.b.call("Disputes", "disputeOf", dispute_id)[5]
        return dispute_id, draw_jury(self._registry(), seed, jury_size, [self.challenger, subject[3]], appeals)

    def draw_jury(self, subject: tuple, label: str | None) -> None:
        """Mine the seed block, draw the jury from the registry (protocol.jury), send its pool's keys."""
        self.b.mine()  # the jury seed is the hash of the block after the challenge
        _, jury = self._jury(subject)
        keys = [e.public_key_g1 for e in jury.pool]
        self.b.send(label, self.creator, self.b.fn("Disputes", "drawJury", subject, keys))

    def verdict(self, subject: tuple, signer_count: int, label: str) -> None:
        """Sign "challenger wins" with the first `signer_count` jurors (py_ecc) and submit the aggregate."""
        dispute_id, jury = self._jury(subject)
        pool = jury.pool
        eligible = self.b.call("Disputes", "disputeOf", dispute_id)[8]  # Dispute.eligible
        if eligible != jury.eligible:
            raise RuntimeError(f"jury on chain {eligible:#x} differs from protocol.jury's {jury.eligible:#x}")
        disputes = self.b.contracts["Disputes"].address
        votes = [
            compute_vote(self.jurors[pool[s].index].key, disputes, self.chain_id, dispute_id, s, pool[s].account, True)
            for s in jury.eligible_seats[:signer_count]
        ]
        v = assemble_verdict(jury, votes)
        if v is None:
            raise RuntimeError(f"{signer_count} of {len(pool)} jurors reach no quorum: no verdict to submit")
        self.b.send(
            label,
            self.creator,
            self.b.fn(
                "Disputes", "submitVerdict", subject, v.challenger_wins, v.signers, v.signature_g2,
                v.eligible_aggregate_g1, [list(n) for n in v.non_signers],
            ),
        )  # fmt: skip

    def play(self) -> None:
        """The measured walk-through: two runs (juries of 5 and 21) through a full round."""
        b = self.b
        self.setup_jurors()
        run_a = self.create_run(5, "create_run")
        run_b = self.create_run(21, None)
        a1, a2, a3 = self.solvers[:3]
        b1, b2 = self.solvers[3:5]
        self.join(run_a, a1, "join")
        for solver in (a2, a3):
            self.join(run_a, solver, None)
        for solver in (b1, b2, self.unopened_solver):
            self.join(run_b, solver, None)
        self.register_verifier(run_a, self.verifiers[0], "register_verifier")
        self.register_verifier(run_b, self.verifiers[1], None)
        ca1 = self.commit(run_a, a1, "commit")
        ca2 = self.commit(run_a, a2, None)
        ca3 = self.commit(run_a, a3, None)
        cb1 = self.commit(run_b, b1, None)
        cb2 = self.commit(run_b, b2, None)
        self.commit(run_b, self.unopened_solver, None)

        b.advance(WINDOW)  # attestation window
        seed_blocks = [b.call("RunRegistry", "roundTimes", run)[6] for run in (run_a, run_b)]  # seedBlock
        randao_blocks = [get_randao_block(block) for block in seed_blocks]  # drawSeed proves the next block's mixHash
        b.mine_past(max(randao_blocks))
        headers = [b.header(block) for block in randao_blocks]
        b.send("draw_seed", self.creator, b.fn("Verification", "drawSeed", run_a, 0, headers[0]))
        b.send(None, self.creator, b.fn("Verification", "drawSeed", run_b, 0, headers[1]))
        self.open(ca1, "open")
        for c in (ca2, ca3, cb1, cb2):
            self.open(c, None)
        self.attest_pass(ca1, self.verifiers[0], "attest")
        self.attest_fail(ca2, self.verifiers[0], "attest_fail")
        ref_a3 = self.attest_pass(ca3, self.verifiers[0], None)
        self.attest_pass(cb1, self.verifiers[1], None)
        self.attest_pass(cb2, self.verifiers[1], None)

        b.advance(WINDOW // 2)  # the opening deadline (commitEnd + attestWindow / 2) has passed
        b.send("report_unopened", self.creator, b.fn("RunRegistry", "reportUnopened", run_b, 0, self.unopened_solver))
        sub_a = self.challenge(ca1, "challenge")
        sub_b1 = self.challenge(cb1, None)
        sub_b2 = self.challenge(cb2, None)
        self.draw_jury(sub_a, "draw_jury_jury5")
        self.draw_jury(sub_b1, "draw_jury_jury21")
        self.draw_jury(sub_b2, None)
        self.verdict(sub_a, 5, "verdict_jury5")
        self.verdict(sub_b1, 21, "verdict_jury21")
        self.verdict(sub_b2, 14, "verdict_jury21_quorum")
        b.send("execute", self.creator, b.fn("Disputes", "execute", sub_a))

        b.advance(2 * WINDOW)  # the attestation challenge window has closed
        b.send("finalize_fail", self.creator, b.fn("Verification", "finalize", (run_a, 0, a2, 0)))
        b.send("finalize", self.creator, b.fn("Verification", "finalize", ref_a3))
        b.send("post_claim", a3, b.fn("RunRegistry", "postClaim", run_a, 0, keccak256(b"theta 1")), value=2 * ETHER)
        b.advance(WINDOW)
        b.send("settle", self.creator, b.fn("RunRegistry", "settle", run_a, 0))
        b.send("claim_solver_shares", self.creator, b.fn("Verification", "claimSolverShares", run_a, 0, a3))
        b.send("claim_verifier_shares", self.creator, b.fn("Verification", "claimVerifierShares", ref_a3))

        b.send("pay_revenue", self.payer, b.fn("ModelShares", "payRevenue", run_a), value=10 * ETHER)
        b.advance(24 * 3600)
        token_address = b.call("ModelShares", "shareToken", run_a)
        token_abi, _ = load_artifact(b.artifacts, "RunShares")
        b.contracts["RunShares"] = b.w3.eth.contract(address=token_address, abi=token_abi)
        b.send("withdraw_revenue", a3, b.fn("RunShares", "withdrawRevenue"))
        b.send("share_transfer", a3, b.fn("RunShares", "transfer", self.payer, 10 * ETHER))
        b.advance(24 * 3600)
        b.send(None, a3, b.fn("RunShares", "withdrawRevenue"))


def main() -> int:
    """Deploy on a fresh anvil, play the scenario, print the table and the JSON line."""
    artifacts = build_contracts()  # forge build (offline), one at a time per checkout
    with AnvilProcess(accounts=11 + JURORS) as anvil:
        w3 = Web3(Web3.HTTPProvider(anvil.rpc_url, request_kwargs={"timeout": SEND_TIMEOUT_S}))
        chain = ChainClient(anvil.rpc_url)
        accounts: list[str] = [to_checksum_address(a) for a in w3.eth.accounts]
        bench = Bench(w3=w3, chain=chain, contracts=deploy(w3, accounts[0], artifacts), artifacts=artifacts)
        Scenario(bench, accounts).play()
    width = max(len(k) for k in bench.gas)
    print(f"{'transaction'.ljust(width)}  gas      target")
    for label, gas in bench.gas.items():
        target = TARGETS.get(label)
        verdict = "" if target is None else f"<= {target:,} {'ok' if gas <= target else 'OVER'}"
        print(f"{label.ljust(width)}  {gas:>7,}  {verdict}")
    print(json.dumps({key: bench.gas[key] for key in REPORTED}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
