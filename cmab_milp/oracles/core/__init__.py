"""The oracle core: validated queries, the :class:`Oracle` base, the certified solve, the backend registry.

Nothing here imports a solver or a backend: backends are named in the registry
as ``"module:Class"`` strings and imported on first use.
"""
