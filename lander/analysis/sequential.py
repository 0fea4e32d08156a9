"""A sequential comparison of configurations that decides how many seeds it needs: AdaStop (Mathieu et al., 2023,
"AdaStop: sequential testing for efficient and reliable comparisons of Deep RL Agents", arXiv 2306.10882), through
its authors' ``adastop`` package (:class:`adastop.MultipleAgentsComparator`), not a re-implementation.

At each interim every configuration still in an undecided comparison gets ``n`` more seeds (the same seeds for
each); the test then decides the comparisons it can, with the family-wise error of all comparisons and all looks at
most ``alpha``. After ``K`` interims a comparison not decided is ``undecided`` (AdaStop itself calls it ``equal``:
no difference was found at level ``alpha``, which is not evidence that there is none).

A run's score is one number: by default its final evaluation mean at the sweep's common budget, the number the
comparison reports (:func:`lander.analysis.runset.select`). :class:`SequentialTest` holds the test and its record
(``comparison/adastop.json``); :mod:`lander.sweeps.adastop` runs it as a Hydra sweeper.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lander.analysis.runset import Run, read_run, select
from lander.config.precheck import ADASTOP_SCORES
from lander.config.schema import labels
from lander.errors import RunSetError
from lander.storage.rundir import write_json

WORDS = ("larger", "smaller", "equal", "undecided")  # a decision: a is larger than b, smaller, equal, or not decided


def score_of(run: Run, score: str) -> float:
    """``run``'s score as it stood at its compared budget: ``final_mean`` (its final evaluation mean),
    ``success_rate``, or ``auc`` (the mean of its evaluations' means up to the budget: the area under its learning
    curve over the budget, which rewards learning early)."""
    if score not in ADASTOP_SCORES:
        raise ValueError(f"score={score!r}: one of {', '.join(ADASTOP_SCORES)}")
    if score == "final_mean":
        return run.final_mean
    if score == "success_rate":
        return run.final_success
    assert run.eval is not None
    return float(run.eval["mean"].mean())


def run_scores(directories: list[Path], score: str) -> tuple[dict[Path, float], dict[Path, str]]:
    """The score of each completed run among ``directories`` at their common budget, and why each other one has
    none (failed, not finished, not evaluated at the budget).

    :return: ``(run directory -> score, run directory -> why not)``
    """
    runs: list[Run] = []
    missing: dict[Path, str] = {}
    for directory in directories:  # these directories alone (not what lies below them)
        if not (directory / ".hydra" / "config.yaml").is_file():
            missing[directory] = "no run there (its job did not start)"
            continue
        try:
            runs.append(read_run(directory))
        except RunSetError as exc:
            missing[directory] = str(exc)
    done = any(r.status == "completed" for r in runs)
    compared, failed, unfinished, unevaluated = select(runs, None) if done else ([], runs, [], [])
    found = {run.path: score_of(run, score) for run in compared}
    missing |= {run.path: str(run.summary.get("error") or run.status) for run in failed + unfinished}
    missing |= {run.path: f"no evaluation at its common budget of {run.timesteps:,}" for run in unevaluated}
    return found, {path: str(why) for path, why in missing.items()}


@dataclass
class SequentialTest:
    """AdaStop over the sweep's configurations, one interim at a time.

    :param configurations: each configuration's overrides (the sweep's other parameters, without the seed)
    :param n: seeds per configuration per interim
    :param K: interims at most
    :param alpha: the family-wise error of all comparisons over all interims
    :param B: random permutations (AdaStop's Monte-Carlo approximation of the permutation distribution)
    :param baseline: None: every pair of configurations; else the index of the configuration the others are
        compared with
    :param seed: the permutations' random seed (the same seed, the same decisions on the same scores)
    :param score: what a run's score is (:func:`score_of`), recorded
    """

    configurations: list[list[str]]
    n: int
    K: int
    alpha: float
    B: int
    baseline: int | None = None
    seed: int = 0
    score: str = "final_mean"
    scores: list[list[float]] = field(default_factory=list)  # per configuration, in seed order
    decided_at: dict[tuple[int, int], int] = field(default_factory=dict)  # a comparison -> the interim deciding it
    interims: int = 0

    def __post_init__(self) -> None:
        if not self.scores:
            self.scores = [[] for _ in self.configurations]
        self.comparisons = (
            [(i, j) for i in range(len(self.configurations)) for j in range(i + 1, len(self.configurations))]
            if self.baseline is None
            else [(self.baseline, j) for j in range(len(self.configurations)) if j != self.baseline]
        )
        # adastop imports matplotlib.pyplot (0.7 s, python -X importtime): only the sweeper's test needs it, not
        # what reads its record (the comparison, the report, the API)
        from adastop import MultipleAgentsComparator

        self.test = MultipleAgentsComparator(
            n=self.n, K=self.K, B=self.B, comparisons=np.array(self.oriented), alpha=self.alpha, seed=self.seed
        )

    @property
    def oriented(self) -> list[tuple[int, int]]:
        """The comparisons as handed to the package: each pair in both orientations, ``(a, b)`` and ``(b, a)``.

        AdaStop's statistic is the largest *absolute* difference of means over the comparisons, and ``adastop``
        0.1.3 decides on it (``larger`` or ``smaller``), but builds its permutation distribution from the *signed*
        differences, a one-sided quantile: at its own ``alpha`` its error with two equal configurations is 0.107,
        not 0.05 (1,000 simulated experiments, ``benchmarks/adastop_simulation.py``). With both orientations the
        signed maximum over the comparisons is the absolute one, so the package's distribution is the statistic's
        own, at every interim (halving its ``alpha`` instead held one interim but not several: 0.057 with three).
        """
        return [pair for a, b in self.comparisons for pair in ((a, b), (b, a))]

    def can_decide(self) -> bool:
        """Whether any interim can decide at all: a permutation test's smallest p-value is one over its number of
        permutations (``C(2n, n)`` to the power of the interims, at most ``B``), and interim k may spend
        ``alpha * k / K`` of the error. With n = 2 and K = 2 (6 and then 36 permutations), nothing can be decided."""
        return any(
            1 / min(self.B, math.comb(2 * self.n, self.n) ** k) <= self.alpha * k / self.K for k in range(1, self.K + 1)
        )

    @property
    def labels(self) -> list[str]:
        """Each configuration's label, as the comparison names it (the overrides in which it differs)."""
        keys = [tuple(sorted(c)) for c in self.configurations]
        named = labels(keys)
        return [named[k] for k in keys]

    @property
    def finished(self) -> bool:
        """Every comparison decided, or K interims done."""
        return bool(self.test.is_finished) or self.interims >= self.K

    def active(self) -> list[int]:
        """The configurations that take part in a comparison not decided yet (all of them before the first)."""
        if self.interims == 0:
            return list(range(len(self.configurations)))
        undecided = [c for c in self.comparisons if self.decision(c, adastop=True) == "continue"]
        return sorted({i for pair in undecided for i in pair})

    def seeds(self) -> list[int]:
        """The seeds of the next interim, the same for every active configuration: ``k*n .. (k+1)*n - 1``."""
        return list(range(self.interims * self.n, (self.interims + 1) * self.n))

    def add(self, new: dict[int, list[float]]) -> None:
        """One interim's scores (configuration index -> its ``n`` new scores, in seed order) and the test on
        everything so far."""
        for index, values in new.items():
            if len(values) != self.n:
                raise RunSetError(f"configuration {self.labels[index]!r}: {len(values)} scores, not n={self.n}")
            self.scores[index] += [float(v) for v in values]
        given = {label: np.array(values, dtype=float) for label, values in zip(self.labels, self.scores, strict=True)}
        before = {c: self.decision(c, adastop=True) for c in self.comparisons}
        self.test.partial_compare(given, verbose=False)
        self.interims += 1
        for c in self.comparisons:
            if before[c] == "continue" and self.decision(c, adastop=True) in ("larger", "smaller"):
                self.decided_at[c] = self.interims - 1

    def decision(self, comparison: tuple[int, int], adastop: bool = False) -> str:
        """The decision on ``comparison`` ``(a, b)``: ``larger`` (a's scores larger than b's), ``smaller``,
        ``undecided`` (K interims and no difference found; AdaStop's ``equal``), or before its end ``continue``.

        :param adastop: AdaStop's own word (``equal`` where lander says ``undecided``)
        """
        if not self.interims:
            return "continue"
        a, b = comparison
        word = str(self.test.decisions[str(np.array((a, b)))])
        reverse = str(self.test.decisions.get(str(np.array((b, a))), ""))  # the same pair, the other way round
        if word not in ("larger", "smaller") and reverse in ("larger", "smaller"):
            word = OPPOSITE[reverse]
        if adastop or word != "equal" or comparison in self.decided_at:
            return word
        return "undecided"

    def record(self, status: str, missing: dict[str, list[str]] | None = None) -> dict[str, Any]:
        """What ``comparison/adastop.json`` holds (:func:`write_record`)."""
        names = self.labels
        decisions = []
        for a, b in self.comparisons:
            decisions.append(
                {
                    "a": names[a],
                    "b": names[b],
                    "decision": self.decision((a, b)),
                    "adastop_decision": self.decision((a, b), adastop=True),
                    "interim": self.decided_at.get((a, b)),
                    "mean_a": float(np.mean(self.scores[a])) if self.scores[a] else None,
                    "mean_b": float(np.mean(self.scores[b])) if self.scores[b] else None,
                }
            )
        used = sum(len(s) for s in self.scores)
        return {
            "test": "AdaStop (adastop.MultipleAgentsComparator)",
            "status": status,
            "n": self.n,
            "K": self.K,
            "alpha": self.alpha,
            "comparisons_given_to_adastop": [list(pair) for pair in self.oriented],
            "B": self.B,
            "seed": self.seed,
            "score": self.score,
            "baseline": None if self.baseline is None else names[self.baseline],
            "configurations": dict(zip(names, self.configurations, strict=True)),
            "interims": self.interims,
            "scores": dict(zip(names, self.scores, strict=True)),
            "seeds": {name: list(range(len(s))) for name, s in zip(names, self.scores, strict=True)},
            "decisions": decisions,
            "runs_used": used,
            "fixed_design": self.n * self.K * len(self.configurations),
            "missing": missing or {},
        }


def write_record(path: Path, record: dict[str, Any]) -> Path:
    """Write ``record`` (:meth:`SequentialTest.record`) to ``path`` (``comparison/adastop.json``), whole or not at
    all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_json(path, record)


def read_record(path: Path) -> dict[str, Any] | None:
    """``comparison/adastop.json`` if the sweep was sequential (None if there is none, it cannot be read, or it is
    not the shape :meth:`SequentialTest.record` writes: a copied or edited file is left out, not a traceback)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("decisions"), list):
        return None
    scores = record.get("scores")
    numbers = isinstance(scores, dict) and all(
        isinstance(v, list) and all(isinstance(x, int | float) and not isinstance(x, bool) for x in v)
        for v in scores.values()
    )
    return record if numbers and all(isinstance(d, dict) for d in record["decisions"]) else None


OPPOSITE = {"larger": "smaller", "smaller": "larger", "equal": "equal", "undecided": "undecided"}


def decision_matrix(record: dict[str, Any]) -> pd.DataFrame:
    """The decisions of ``record`` (``adastop.json``) as a matrix ``[configurations x configurations]``: the cell
    of row a and column b says how a's scores compare with b's (``larger``, ``smaller``, ``undecided``), with the
    interim that decided it; empty where the pair was not compared (a baseline design) and on the diagonal."""
    names = list(record.get("scores") or {})
    matrix = pd.DataFrame("", index=names, columns=names)
    for entry in record["decisions"]:
        a, b, word = str(entry.get("a")), str(entry.get("b")), str(entry.get("decision"))
        if a not in matrix.index or b not in matrix.index:
            continue
        when = f" (interim {int(entry['interim']) + 1})" if isinstance(entry.get("interim"), int) else ""
        matrix.loc[a, b] = word + when
        matrix.loc[b, a] = OPPOSITE.get(word, word) + when
    matrix.index.name = "a \\ b"
    return matrix


def seeds_table(record: dict[str, Any]) -> pd.DataFrame:
    """Per configuration ``[configurations x 3]``: the seeds it used, against the fixed design's ``n*K``, and the
    mean of its scores."""
    fixed = int(record.get("n", 0)) * int(record.get("K", 0))
    rows = [
        {"config": name, "seeds": len(values), "fixed design": fixed, "mean score": float(np.mean(values))}
        for name, values in (record.get("scores") or {}).items()
        if isinstance(values, list) and values
    ]
    return pd.DataFrame(rows, columns=["config", "seeds", "fixed design", "mean score"])
