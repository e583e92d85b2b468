"""Correlated feedback: the paper's random covariance and a bounded Gaussian-copula environment.

:func:`paper_covariance` builds the covariance of the paper's Figure 3
(``Sigma = A A^T + I`` with a random Gaussian ``A``, then normalised); pair it
with :class:`~cmab_milp.environments.basic.GaussianNoise`, whose outcomes are
unbounded (outside the paper's [0, 1] model: allowed, and said so there).

:class:`CopulaNoise` keeps outcomes inside [0, 1] with exact means: a latent
``z ~ N(0, R)`` (``R`` a correlation matrix) is mapped through the standard
normal CDF to correlated uniforms ``u_i = Phi(z_i)`` and then through each
arm's marginal quantile function: uniform on ``[mu_i - w_i, mu_i + w_i]`` or
``Beta(kappa mu_i, kappa (1 - mu_i))``. Its true covariance is exact for
uniform marginals and computed by Gauss-Hermite quadrature for Beta ones.

Example
-------
>>> import numpy as np
>>> sigma = paper_covariance(4, seed=0)
>>> np.allclose(np.diag(sigma), 1.0), bool(np.linalg.eigvalsh(sigma).min() > 0)
(True, True)
>>> env = CopulaNoise([0.2, 0.5, 0.8, 0.6], sigma, marginal="beta", concentration=20, seed=0)
>>> y = env.sample([1, 1, 0, 1])
>>> bool(((y[[0, 1, 3]] >= 0) & (y[[0, 1, 3]] <= 1)).all()), bool(np.isnan(y[2]))
(True, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from ..described import ParameterError
from ..portable import matmul
from .base import Environment, SquareRoots, check_means
from .basic import GaussianNoise

__all__ = ["NORMALISATIONS", "CopulaNoise", "PaperGaussianNoise", "paper_covariance"]

#: How :func:`paper_covariance` normalises ``A A^T + I``.
NORMALISATIONS = ("correlation", "max", "trace")


def paper_covariance(d: int, seed: int | None = None, normalise: str = "correlation", scale: float = 1.0) -> np.ndarray:
    """The paper's random covariance ``Sigma = A A^T + I``, normalised, times ``scale``.

    ``A`` has i.i.d. standard normal entries drawn from ``numpy.random.default_rng(seed)``.
    The paper says only "with normalization"; the choices are

    * ``"correlation"`` (default): ``D^{-1/2} Sigma D^{-1/2}``, unit diagonal
      (every arm has variance ``scale``);
    * ``"max"``: divided by its largest entry (the largest variance becomes ``scale``);
    * ``"trace"``: divided by ``trace / d`` (average variance ``scale``).

    The result is symmetric positive definite (smallest eigenvalue > 0).

    >>> paper_covariance(3, seed=1, normalise="max").max().round(12)
    np.float64(1.0)
    """
    d = int(d)
    if d < 1:
        raise ValueError(f"d must be a positive number of arms, got {d}")
    if normalise not in NORMALISATIONS:
        raise ParameterError("normalise", f"normalise must be one of {NORMALISATIONS}, got {normalise!r}")
    scale = float(scale)
    if not np.isfinite(scale) or scale <= 0:
        raise ParameterError("scale", f"scale must be a finite number > 0, got {scale}")
    a = np.random.default_rng(seed).standard_normal((d, d))
    sigma = matmul(a, a.T) + np.eye(d)  # fixed-order sums: the same matrix on every machine
    if normalise == "correlation":
        inv_sd = 1.0 / np.sqrt(np.diag(sigma))
        sigma = sigma * np.outer(inv_sd, inv_sd)
        sigma[np.diag_indices(d)] = 1.0
    elif normalise == "max":
        sigma = sigma / sigma.max()
    else:
        sigma = sigma * (d / np.trace(sigma))
    return scale * 0.5 * (sigma + sigma.T)


class PaperGaussianNoise(GaussianNoise):
    """Gaussian feedback with the paper's random covariance (Figure 3): ``GaussianNoise(means, paper_covariance(...))``.

    Unbounded outcomes, outside the paper's [0, 1] model (as in its Figure 3).
    The covariance is ``paper_covariance(d, cov_seed, normalise, scale)``, so a
    problem file can state it in three numbers.

    Parameters
    ----------
    means : array of shape (d,)
    cov_seed : int
        Seed of the random matrix ``A``.
    normalise : str
        See :func:`paper_covariance` (default ``"correlation"``).
    scale : float > 0
        Multiplies the normalised covariance (default 1).
    seed : int or None

    >>> env = PaperGaussianNoise([0.1, 0.5, 0.9], cov_seed=3, normalise="max", scale=0.25)
    >>> float(env.cov.max())
    0.25
    """

    def __init__(
        self,
        means: Any,
        cov_seed: int = 0,
        normalise: str = "correlation",
        scale: float = 1.0,
        seed: int | None = None,
    ):
        d = check_means(means, unit=False).size
        if isinstance(cov_seed, bool) or not isinstance(cov_seed, (int, np.integer)) or cov_seed < 0:
            raise ParameterError("cov_seed", f"cov_seed must be an integer >= 0, got {cov_seed!r}")
        super().__init__(means, paper_covariance(d, int(cov_seed), normalise, scale), seed=seed)
        self.cov_seed, self.normalise, self.scale = int(cov_seed), normalise, float(scale)

    def __repr__(self) -> str:
        args = f"cov_seed={self.cov_seed}, normalise={self.normalise!r}, scale={self.scale}"
        return f"PaperGaussianNoise(d={self.d}, {args})"


def _check_correlation(corr: Any, d: int) -> np.ndarray:
    if corr is None:
        return np.eye(d)
    r = np.asarray(corr, dtype=float)
    if r.shape != (d, d):
        raise ParameterError("corr", f"corr must have shape ({d}, {d}), got {r.shape}")
    if not np.isfinite(r).all():
        raise ParameterError("corr", "corr must be finite")
    if np.abs(r - r.T).max() > 1e-9:
        raise ParameterError("corr", "corr must be symmetric")
    if np.abs(np.diag(r) - 1.0).max() > 1e-9:
        raise ParameterError(
            "corr",
            "corr must be a correlation matrix (unit diagonal); "
            "normalise a covariance with paper_covariance(..., normalise='correlation')",
        )
    low = float(np.linalg.eigvalsh(r).min())
    if low < -1e-9:
        raise ParameterError("corr", f"corr must be positive semidefinite; its smallest eigenvalue is {low:.3g}")
    r = 0.5 * (r + r.T)
    r[np.diag_indices(d)] = 1.0
    return r


class CopulaNoise(Environment):
    """Bounded correlated outcomes in [0, 1] with exact means (Gaussian copula).

    Each round draws ``z ~ N(0, corr)`` and sets ``y_i = F_i^{-1}(Phi(z_i))``,
    so arm ``i`` has exactly the marginal ``F_i`` (mean ``means[i]``) and the
    arms are dependent through ``corr``:

    * ``marginal="uniform"``: ``F_i`` uniform on ``[mu_i - w_i, mu_i + w_i]``,
      ``w_i = min(width, mu_i, 1 - mu_i)`` (as :class:`UniformNoise`, which is the
      special case ``corr = I``); variance ``w_i^2 / 3``;
    * ``marginal="beta"``: ``F_i = Beta(kappa mu_i, kappa (1 - mu_i))`` with
      ``kappa = concentration``; variance ``mu_i (1 - mu_i) / (kappa + 1)``;
      means must lie strictly inside (0, 1).

    Low-variance noise (small ``width``, large ``concentration``) is where the
    covariance-adaptive policies gain over worst-case confidence bounds.

    Parameters
    ----------
    means : array of shape (d,), values in [0, 1]
    corr : array of shape (d, d) or None
        Correlation matrix of the latent Gaussian (``None``: independent arms,
        unless ``corr_seed`` is given).
    corr_seed : int or None
        Use ``paper_covariance(d, seed=corr_seed)`` (unit diagonal) as ``corr``.
    marginal : ``"uniform"`` or ``"beta"``
    width : float in [0, 0.5]
        Half-width of the uniform marginals.
    concentration : float > 0
        ``kappa`` of the Beta marginals.
    seed : int or None

    >>> env = CopulaNoise([0.5, 0.5], [[1.0, 0.9], [0.9, 1.0]], width=0.3, seed=0)
    >>> env.covariance().round(4).tolist()
    [[0.03, 0.0267], [0.0267, 0.03]]
    """

    MARGINALS = ("uniform", "beta")

    def __init__(
        self,
        means: Any,
        corr: Any = None,
        marginal: str = "uniform",
        width: float = 0.5,
        concentration: float = 10.0,
        corr_seed: int | None = None,
        seed: int | None = None,
    ):
        mu = check_means(means, unit=True)
        d = mu.size
        if corr_seed is not None:
            if corr is not None:
                raise ParameterError("corr", "give corr or corr_seed, not both")
            if isinstance(corr_seed, bool) or not isinstance(corr_seed, (int, np.integer)) or corr_seed < 0:
                raise ParameterError("corr_seed", f"corr_seed must be an integer >= 0, got {corr_seed!r}")
            corr = paper_covariance(d, seed=int(corr_seed))
        if marginal not in self.MARGINALS:
            raise ParameterError("marginal", f"marginal must be one of {self.MARGINALS}, got {marginal!r}")
        width, concentration = float(width), float(concentration)
        if not np.isfinite(width) or not 0 <= width <= 0.5:
            raise ParameterError("width", f"width must lie in [0, 0.5], got {width}")
        if not np.isfinite(concentration) or concentration <= 0:
            raise ParameterError("concentration", f"concentration must be a finite number > 0, got {concentration}")
        if marginal == "beta" and ((mu <= 0).any() or (mu >= 1).any()):
            bad = int(np.flatnonzero((mu <= 0) | (mu >= 1))[0])
            raise ParameterError("means", f"Beta marginals need means strictly inside (0, 1); means[{bad}] = {mu[bad]}")
        super().__init__(d, seed)
        self._means = mu
        self.corr = _check_correlation(corr, d)
        self.marginal = marginal
        self.width = width
        self.concentration = concentration
        self.half_widths = np.minimum(width, np.minimum(mu, 1.0 - mu))
        self._alpha = concentration * mu
        self._beta = concentration * (1.0 - mu)
        #: ``L`` with ``L @ L.T = corr[arms][:, arms]``, per arm set.
        self._factor = SquareRoots(self.corr)

    # ------------------------------------------------------------- sampling

    def _base_draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.standard_normal(size)

    def _outcomes(self, arms: np.ndarray, draws: np.ndarray) -> np.ndarray:
        uniforms = special.ndtr(matmul(draws, self._factor(arms).T))
        return self._quantile(arms, uniforms)

    def _quantile(self, arms: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
        if self.marginal == "uniform":
            return self._means[arms] + self.half_widths[arms] * (2.0 * uniforms - 1.0)
        return special.betaincinv(self._alpha[arms], self._beta[arms], uniforms)

    # ---------------------------------------------------------------- truth
    def variances(self) -> np.ndarray:
        """Exact variance of each arm's outcome."""
        if self.marginal == "uniform":
            return self.half_widths**2 / 3.0
        return self._means * (1.0 - self._means) / (self.concentration + 1.0)

    def covariance(self, nodes: int = 64) -> np.ndarray:
        """The true covariance of the outcome vector.

        Uniform marginals: exact, ``w_i w_j (2 / pi) arcsin(rho_ij / 2)``
        (Spearman's rho of the Gaussian copula). Beta marginals: exact
        variances, covariances by Gauss-Hermite quadrature with ``nodes``
        points per axis.
        """
        if self.marginal == "uniform":
            cov = np.outer(self.half_widths, self.half_widths) * (2.0 / np.pi) * np.arcsin(self.corr / 2.0)
        else:
            cov = self._quadrature_covariance(int(nodes))
        cov[np.diag_indices(self.d)] = self.variances()
        return cov

    def _quadrature_covariance(self, nodes: int) -> np.ndarray:
        x, w = np.polynomial.hermite_e.hermegauss(nodes)
        w = w / w.sum()
        z1, z2 = np.meshgrid(x, x, indexing="ij")
        weights = np.outer(w, w)
        cov = np.zeros((self.d, self.d))
        for i in range(self.d):
            yi = self._quantile(np.array([i]), special.ndtr(z1)[..., None])[..., 0]
            for j in range(i + 1, self.d):
                rho = self.corr[i, j]
                zj = rho * z1 + np.sqrt(max(1.0 - rho * rho, 0.0)) * z2
                yj = self._quantile(np.array([j]), special.ndtr(zj)[..., None])[..., 0]
                value = float((weights * (yi - self._means[i]) * (yj - self._means[j])).sum())
                cov[i, j] = cov[j, i] = value
        return cov

    def __repr__(self) -> str:
        return f"CopulaNoise(d={self.d}, marginal={self.marginal!r})"
