"""Devnet: start/stop a local anvil, deploy the contracts, write the manifest, run the demo."""
