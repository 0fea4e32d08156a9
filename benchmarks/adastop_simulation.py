"""The sequential comparison (``hydra/sweeper=adastop``) on simulated experiments: its family-wise error when every
configuration is the same, and its power and the seeds it uses when they differ, against the fixed design of n*K
seeds per configuration.

Each experiment draws a configuration's scores from a normal distribution (standard deviation 1) and runs the test
exactly as the sweeper does (:class:`lander.analysis.sequential.SequentialTest`: each interim, the next n scores of
the configurations still in an undecided comparison). The error rate's interval is Wilson's 95% interval over the
experiments.

    python benchmarks/adastop_simulation.py [--null 2000] [--experiments 1000] [--n 5] [--K 3] [--alpha 0.05]
        [--B 10000] [--workers 2] [--only 2 3]
"""

from __future__ import annotations

import argparse
import math
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from lander.analysis.sequential import SequentialTest


class AsThePackage(SequentialTest):
    """The package as its own docstring uses it: each pair once (lander hands it both orientations)."""

    @property
    def oriented(self) -> list[tuple[int, int]]:
        return list(self.comparisons)


def experiment(args: tuple[list[float], int, int, float, int, int, bool]) -> tuple[int, int, bool]:
    """One simulated sweep: ``(configurations' means, n, K, alpha, B, seed, as the package)`` -> (interims, runs
    used, whether any comparison was decided ``larger``/``smaller``)."""
    means, n, K, alpha, B, seed, package = args
    rng = np.random.default_rng(seed)
    scores = [rng.normal(mean, 1.0, n * K) for mean in means]
    kind = AsThePackage if package else SequentialTest
    test = kind([[f"c={i}"] for i in range(len(means))], n, K, alpha, B, None, seed=seed)
    while not test.finished:
        test.add({i: list(scores[i][test.interims * n : (test.interims + 1) * n]) for i in test.active()})
    record = test.record("finished")
    decided = any(d["decision"] in ("larger", "smaller") for d in record["decisions"])
    return test.interims, record["runs_used"], decided


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95% interval of a proportion."""
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return centre - half, centre + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--null", type=int, default=2000, help="experiments with every configuration the same")
    parser.add_argument("--experiments", type=int, default=1000, help="experiments per difference")
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--K", type=int, default=3)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--B", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", nargs="*", help="these settings (by number, 1-6) only")
    args = parser.parse_args()
    settings = [
        (
            "2 configurations, equal: the adastop package as its docstring uses it (each pair once)",
            [0.0, 0.0],
            args.null,
        ),
        ("2 configurations, equal", [0.0, 0.0], args.null),
        ("3 configurations, equal", [0.0, 0.0, 0.0], args.null),
        ("2 configurations, 0.5 sd apart", [0.0, 0.5], args.experiments),
        ("2 configurations, 1 sd apart", [0.0, 1.0], args.experiments),
        ("2 configurations, 2 sd apart", [0.0, 2.0], args.experiments),
    ]
    if args.only:
        settings = [settings[int(number) - 1] for number in args.only]
    print(f"n={args.n} K={args.K} alpha={args.alpha} B={args.B}; the fixed design: n*K={args.n * args.K} seeds each")
    print()
    print("| setting | experiments | rejected (error or power) [95% CI] | mean interims | mean seeds per "
          "configuration | / n*K |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    with ProcessPoolExecutor(args.workers) as pool:
        for name, means, count in settings:
            package = "package" in name
            jobs = [(means, args.n, args.K, args.alpha, args.B, seed, package) for seed in range(count)]
            results = list(pool.map(experiment, jobs, chunksize=16))
            rejected = sum(decided for _, _, decided in results)
            low, high = wilson(rejected, count)
            interims = np.mean([k for k, _, _ in results])
            seeds = np.mean([used for _, used, _ in results]) / len(means)
            print(
                f"| {name} | {count} | {rejected / count:.3f} [{low:.3f}, {high:.3f}] | {interims:.2f} | "
                f"{seeds:.2f} | {seeds / (args.n * args.K):.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
