"""Outer approximation of the norm by tangents, both signs."""
