"""Sign -1 by piecewise secants over the quadratic form."""
