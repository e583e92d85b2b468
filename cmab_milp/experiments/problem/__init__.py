"""Reading and checking a problem file: its schema, limits, kinds, graphs, matrices and rules."""
