"""Branch and bound on the linear oracle, both signs, bounded by Frank-Wolfe steps (+1: a concave overestimator)."""
