"""Solver node: stake, train rounds with DiLoCo, commit, serve checkpoints, resume after a crash."""
