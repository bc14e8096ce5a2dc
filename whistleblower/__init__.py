"""Whistleblower: re-check attestations, challenge wrong ones, collect rewards."""
