"""First incumbents of the norm methods: hints, ascents, restarts, swaps and local search."""
