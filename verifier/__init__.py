"""Verifier service: watch commitments, replay sampled segments, attest, sit on juries."""
