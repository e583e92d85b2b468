"""The pair-unit steps of the scheduled elimination (Algorithm 4, SROQ-C).

Algorithm, theorem, lemma and equation numbers are those of Kim, Vojnović and Oh,
*Oracle-Efficient Combinatorial Semi-Bandits*, NeurIPS 2025 (arXiv:2510.21431).

:class:`PairSteps` is a mixin of
:class:`~cmab_milp.policies.schedules.ScheduledElimination`: with pair units,
step 3 of an epoch keeps the pairs of surviving arms whose representative's UCB
reaches the max LCB, and with the constant ``prune`` the pair representatives
whose answers are already known are not asked (:meth:`PairSteps.pair_plan`).
It reads the schedule's ``active``, ``active_pairs``, ``forbidden``, ``cover``
and its ``_ask_upper`` / ``_ucb`` / ``_unseen``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PairSteps"]


class PairSteps:
    """Pair representatives: which to ask (``prune``), and step 3's pair elimination."""

    def pair_plan(
        self, eliminated: tuple[int, ...], arm_reps: dict[int, np.ndarray | None]
    ) -> tuple[dict[tuple[int, int], np.ndarray | None], list[tuple[int, int]]]:
        """Which pair representatives ``prune`` knows without asking, and which it asks.

        For each pair of ``active_pairs`` whose arms both survived this
        epoch's arm elimination (step 3 looks at no other pair), the answer is
        known when

        * an arm representative of this epoch holds both arms: ``rep_i``
          maximises the UCB over the actions of ``A_{tau-1}`` holding ``i``, a
          superset of those holding ``i`` and ``j``, and lies in the smaller
          set, so it is that query's answer too (within the oracle's
          tolerance). Only when no arm the restriction allows is unobserved
          (then every representative is a UCB answer);
        * the warm-up's cover (one action per pair some action holds) has no
          action holding both: no action of ``A``, hence of ``A_{tau-1}``,
          does (answer ``None``).

        Returns the known answers by pair and the pairs to ask, in
        ``active_pairs`` order.
        """
        together = None if self.cover is None else (self.cover.T.astype(np.int64) @ self.cover) > 0
        covering = not self._unseen(eliminated).any()
        known: dict[tuple[int, int], np.ndarray | None] = {}
        ask: list[tuple[int, int]] = []
        for i, j in self.active_pairs:
            if not (self.active[i] and self.active[j]):
                continue
            if together is not None and not together[i, j]:
                known[(i, j)] = None
                continue
            rep = next((r for r in (arm_reps.get(i), arm_reps.get(j)) if r is not None and r[i] and r[j]), None)
            if covering and rep is not None:
                known[(i, j)] = rep
            else:
                ask.append((i, j))
        return known, ask

    def _pruned_pairs(
        self,
        T: int,
        eliminated: tuple[int, ...],
        forbid: tuple[tuple[int, int], ...],
        arm_reps: dict[int, np.ndarray | None],
    ) -> tuple[list[np.ndarray | None], int, int]:
        """Pair representatives aligned with ``active_pairs`` (``None`` where unused), asked in one batch."""
        known, ask = self.pair_plan(eliminated, arm_reps)
        skipped = len(known)
        if ask:
            answers = self._ask_upper(T, [(pair, eliminated) for pair in ask], forbid)
            known.update(zip(ask, answers, strict=True))
        return [known.get(pair) for pair in self.active_pairs], len(ask), skipped

    def _eliminate_pairs(self, reps: list[np.ndarray | None], floor: float) -> list[np.ndarray]:
        """Step 3 of Algorithm 4: keep the pairs of surviving arms whose representative's UCB reaches ``floor``.

        ``floor`` is the max LCB over the surviving arms' actions: the max-LCB
        action keeps its arms, so its LCB is that maximum (no second query).
        """
        kept, cycle = [], []
        for (i, j), rep in zip(self.active_pairs, reps, strict=True):
            if not (self.active[i] and self.active[j]) or rep is None:
                continue
            if self._ucb(rep) >= floor:
                kept.append((i, j))
                cycle.append(rep)
            else:
                self.forbidden.append((i, j))
        self.active_pairs = kept
        self.forbidden = [(i, j) for i, j in self.forbidden if self.active[i] and self.active[j]]
        return cycle
