"""The auditor role: rebuild a run from chain events and artifacts alone, re-derive it and report."""
