"""Reporting a run: summary, tables, figures and the solver-swap comparison."""
