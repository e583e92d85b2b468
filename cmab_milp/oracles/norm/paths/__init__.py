"""s-t paths of graphs with cycles: LP branch and bound, its LP, rows, chord bound and local search."""
