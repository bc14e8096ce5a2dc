"""Typed calls of planted faults (Plants): terms and pool, anchors, the run seed, reveals, reports, pay, forfeits."""

from __future__ import annotations

from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from protocol.adapters.chain import TxResult
from protocol.adapters.contracts.base import ContractCalls
from protocol.hashing import Hash32, to_hash32
from protocol.types import AttestationRef, PlantForfeit, PlantPay, PlantStatus, PlantTerms, RunSeed, decode_struct


class PlantCalls(ContractCalls):
    """Plants."""

    def set_plant_terms(self, account: LocalAccount, run_id: int, terms: PlantTerms, pool_wei: int) -> TxResult:
        """Plants.setTerms (the run's creator, in round 0), funding the plant pool with `pool_wei`."""
        return self.chain.send(
            account, "Plants", "setTerms", run_id, terms.rate_bps, terms.jackpot, terms.penalty, value=pool_wei
        )

    def plant_terms(self, run_id: int) -> PlantTerms:
        return decode_struct(PlantTerms, self.chain.call_fields("Plants", "termsOf", run_id))

    def plant_pool(self, run_id: int) -> int:
        return self.chain.call("Plants", "pool", run_id)

    def fund_plant_pool(self, account: LocalAccount, run_id: int, amount_wei: int) -> TxResult:
        """Plants.fundPool: add `amount_wei` to a run's plant pool (anyone, any time)."""
        return self.chain.send(account, "Plants", "fundPool", run_id, value=amount_wei)

    def is_pay_blocked(self, run_id: int, round_index: int, solver: str) -> bool:
        """Plants.isPayBlocked: the commitment is unpaid whatever happens to it (planting on, the round plantable,
        no plant anchor old enough)."""
        return self.chain.call("Plants", "isPayBlocked", run_id, round_index, to_checksum_address(solver))

    def forfeit_of(self, ref: AttestationRef) -> PlantForfeit:
        """Plants.forfeitOf: the bond and penalty of a pass on a planted commitment held until the round settles."""
        return decode_struct(PlantForfeit, self.chain.call_fields("Plants", "forfeitOf", ref.to_abi()))

    def release_forfeit(self, account: LocalAccount, ref: AttestationRef) -> TxResult:
        """Plants.releaseForfeit (anyone, once the round is settled): the held forfeit of seat `ref` joins the plant
        pool, or is credited back to its verifier when a jury disproved the plant."""
        return self.chain.send(account, "Plants", "releaseForfeit", ref.to_abi())

    def set_plant_anchor(self, account: LocalAccount, run_id: int, anchor: Hash32) -> TxResult:
        return self.chain.send(account, "Plants", "setAnchor", run_id, anchor)

    def run_seed(self, run_id: int) -> RunSeed:
        """Plants.runSeedOf: the run seed block (0: the terms were set after the start), whether round 0's plant seed
        was drawn, and its value (zero until drawn)."""
        fields = self.chain.call_fields("Plants", "runSeedOf", run_id)
        return RunSeed(int(fields["seedBlock"]), bool(fields["drawn"]), to_hash32(fields["seedBase"]))

    def draw_run_seed(self, account: LocalAccount, run_id: int) -> TxResult:
        """Plants.drawRunSeed with the header of the block after the run seed block (anyone, once, in the 256 blocks
        after that block)."""
        header = self.chain.get_block_header_rlp(self.run_seed(run_id).randao_block)
        return self.chain.send(account, "Plants", "drawRunSeed", run_id, header)

    def plant_anchor_round(self, run_id: int, solver: str) -> int | None:
        """The round the solver registered its anchor in (None: no anchor)."""
        chain = self.chain.call_fields("Plants", "chainOf", run_id, to_checksum_address(solver))
        return chain["anchorRound"] if chain["set"] else None

    def reveal_plant(self, account: LocalAccount, run_id: int, round_index: int, secret: Hash32) -> TxResult:
        return self.chain.send(account, "Plants", "reveal", run_id, round_index, secret)

    def report_unrevealed(self, account: LocalAccount, run_id: int, round_index: int, solver: str) -> TxResult:
        return self.chain.send(account, "Plants", "reportUnrevealed", run_id, round_index, to_checksum_address(solver))

    def plant_of(self, run_id: int, round_index: int, solver: str) -> PlantStatus:
        fields = self.chain.call_fields("Plants", "plantOf", run_id, round_index, to_checksum_address(solver))
        return decode_struct(PlantStatus, fields)

    def plant_pay(self, run_id: int, round_index: int, solver: str) -> PlantPay:
        return PlantPay(self.chain.call("Plants", "payOf", run_id, round_index, to_checksum_address(solver)))

    def plant_secret_of(self, run_id: int, round_index: int, solver: str, from_block: int) -> Hash32 | None:
        """The secret a solver revealed for a round (its PlantRevealed event), None if it did not reveal it."""
        for event in self.chain.get_events(from_block, names=["PlantRevealed"], contracts=["Plants"]):
            a = event.args
            if a["runId"] == run_id and a["round"] == round_index and a["solver"].lower() == solver.lower():
                return to_hash32(a["secret"])
        return None

    def is_challenge_blocked(self, run_id: int, round_index: int, solver: str) -> bool:
        """Whether the commitment's attestations cannot be challenged (its plant may be pending, or it was planted)."""
        return self.chain.call("Plants", "isChallengeBlocked", run_id, round_index, to_checksum_address(solver))
