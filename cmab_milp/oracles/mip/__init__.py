"""MIP tuning: solver option tables, MIP starts, root and cover cuts, side-row starts and the s-t path starts.

Each part speeds a MILP solve up and never changes which action is optimal (the tie rule holds: each depends on
the query and the space only).
"""
