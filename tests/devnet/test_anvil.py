"""devnet/anvil.py: an anvil leaves nothing behind on disk once stopped.

anvil spills historical states to disk as blocks accumulate (about 300 MB per 2,000 blocks; the driven test
clock mines one block per chain second) and by default puts them under ~/.foundry/anvil/tmp, which it never
cleans: a test suite used to leave tens of GB there. AnvilProcess gives each anvil its own cache directory
and removes it on stop.
"""

from __future__ import annotations

import httpx

from devnet.anvil import AnvilProcess

DEV_ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


def test_spilled_states_stay_in_the_process_directory_and_go_with_it():
    with AnvilProcess() as anvil:
        for _ in range(4):  # 1,200 blocks: enough for anvil to spill states to disk
            httpx.post(anvil.rpc_url, json={"jsonrpc": "2.0", "id": 1, "method": "anvil_mine", "params": ["0x12c"]})
        states = anvil.states_dir
        spilled = [f for f in states.rglob("*") if f.is_file()]
        assert spilled, "anvil spilled no state to its own cache directory (so it went to ~/.foundry)"
        old = httpx.post(
            anvil.rpc_url,
            json={"jsonrpc": "2.0", "id": 1, "method": "eth_getBalance", "params": [DEV_ACCOUNT, "0x5"]},
        ).json()
        assert "result" in old, old  # historical reads still work from the spilled states
    assert not states.exists()
