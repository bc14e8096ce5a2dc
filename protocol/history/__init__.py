"""A run's history folded from the contracts' events: event names, records, the fold."""
