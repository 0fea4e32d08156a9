"""``hydra/sweeper=adastop``: a sweep that decides how many seeds it needs (AdaStop, :mod:`lander.analysis.sequential`).

The configurations are the sweep's parameters (``algo=ppo,a2c``, ``gamma=0.99,0.999``, a preset's); the sweeper
owns the seeds. At interim k (k = 0 .. K-1) every configuration still in an undecided comparison is launched with
the seeds ``k*n .. (k+1)*n - 1``, through whichever launcher is configured (lander's, joblib, submitit, Ray:
``seeds_per_process=n`` trains each configuration's interim in one process); then the test decides what it can.
After each interim, ``<sweep>/comparison/adastop.json`` holds the scores, the decisions and the seeds used; the
sweep's comparison (the callback) then reports them beside its tables.

A re-run of the same command into the same directory re-reads the completed jobs (nothing is trained twice), so it
makes the same decisions and continues from the interim it reached; a finished one launches nothing new.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from lander.errors import RunSetError
from lander.storage.rundir import SweepPaths

log = logging.getLogger("lander")


def configurations(arguments: list[str]) -> list[list[str]]:
    """Each configuration of the sweep: the Cartesian product of its swept values (as Hydra's basic sweeper makes
    it), without ``seed``."""
    parsed = OverridesParser.create().parse_overrides([a for a in arguments if a.split("=", 1)[0] != "seed"])
    (batch,) = BasicSweeper.split_arguments(parsed, None)
    return [list(job) for job in batch]


def baseline_index(baseline: str | None, configs: list[list[str]]) -> int | None:
    """The configuration ``baseline`` names (its overrides, space-separated, all among the configuration's), or
    None for every pair; ValueError if it names none or several."""
    if baseline is None:
        return None
    wanted = set(baseline.split())
    matching = [i for i, config in enumerate(configs) if wanted <= set(config)]
    if len(matching) != 1:
        listed = "; ".join(" ".join(c) for c in configs)
        raise ValueError(f"hydra.sweeper.baseline={baseline!r} names {len(matching)} configurations of: {listed}")
    return matching[0]


def job_directory(result: JobReturn) -> Path:
    """A launched job's run directory: its ``hydra.sweep.dir``/``hydra.sweep.subdir``, as its config resolves them
    (Hydra's joblib launcher records the process's working directory as ``working_dir``, not the job's)."""
    config = result.hydra_cfg
    sweep = OmegaConf.select(config, "hydra.sweep.dir") if config is not None else None
    subdir = OmegaConf.select(config, "hydra.sweep.subdir") if config is not None else None
    if sweep is None or subdir is None:
        return Path(str(result.working_dir))
    return Path(str(sweep)) / str(subdir)


class AdaStopSweeper(Sweeper):
    """Hydra's sweeper interface; AdaStop's own names for its keys.

    :param n: seeds per configuration per interim (at least 2)
    :param K: interims at most (at least 1)
    :param alpha: the family-wise error over all comparisons and interims, in (0, 1)
    :param B: random permutations (at least 1,000)
    :param baseline: compare each configuration with this one (its overrides, e.g. ``algo=ppo``); null: all pairs
    :param score: a run's score: ``final_mean`` (its final evaluation mean, the comparison's), ``success_rate``,
        ``auc``
    :param seed: the permutations' random seed
    :param params: sweep parameters as Hydra's basic sweeper takes them (a preset's), a ``seed`` among them ignored
    """

    def __init__(
        self,
        n: int = 5,
        K: int = 3,
        alpha: float = 0.05,
        B: int = 10000,
        baseline: str | None = None,
        score: str = "final_mean",
        seed: int = 0,
        params: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.n, self.K, self.alpha, self.B = int(n), int(K), float(alpha), int(B)
        self.baseline, self.score, self.seed = baseline, score, int(seed)
        self.params = dict(params or {})
        self.config: DictConfig | None = None
        self.launcher: Launcher | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> Any:
        # Hydra imports every sweeper plugin in every run: the test (adastop, matplotlib) and the analysis (pandas)
        # take 1.0 s (measured, time.perf_counter around `import hydra_plugins.lander_launcher`), only a sweep needs
        from lander.analysis.sequential import SequentialTest, run_scores, write_record

        assert self.config is not None and self.launcher is not None
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, SweepPaths(sweep_dir).multirun)
        configs = configurations([f"{k}={v}" for k, v in self.params.items()] + list(arguments))
        test = SequentialTest(
            configs, self.n, self.K, self.alpha, self.B, baseline_index(self.baseline, configs), self.seed, self.score
        )
        if not test.can_decide():
            log.warning(
                "AdaStop: with n=%d, K=%d and alpha=%g no interim can decide (too few permutations of so few seeds): "
                "every comparison will end undecided; raise n or K",
                self.n,
                self.K,
                self.alpha,
            )
        out = SweepPaths(sweep_dir).comparison / "adastop.json"
        directories: dict[int, list[Path]] = {i: [] for i in range(len(configs))}
        returns: list[Sequence[Any]] = []
        job = 0
        while not test.finished:
            active, seeds = test.active(), test.seeds()
            batch = [[*configs[i], f"seed={s}"] for i in active for s in seeds]
            log.info(
                "AdaStop interim %d of at most %d: seeds %d-%d of %s",
                test.interims + 1,
                self.K,
                seeds[0],
                seeds[-1],
                ", ".join(test.labels[i] for i in active),
            )
            results = self.launcher.launch(batch, initial_job_idx=job)
            returns.append(results)
            job += len(batch)
            for number, result in enumerate(results):
                directories[active[number // len(seeds)]].append(job_directory(result))
            try:
                found, why = run_scores([d for ds in directories.values() for d in ds], self.score)
            except RunSetError as exc:  # a completed run whose evaluations cannot be read: no score for any
                found, why = {}, {d: str(exc) for ds in directories.values() for d in ds}
            missing = {
                test.labels[i]: [f"{d}: {why.get(d, 'no score')}" for d in directories[i] if d not in found]
                for i in active
            }
            missing = {label: lacks for label, lacks in missing.items() if lacks}
            if missing:
                write_record(out, test.record("incomplete", missing))
                for label, lacks in missing.items():
                    log.error("AdaStop: configuration %s lacks data: %s", label, "; ".join(lacks))
                log.error("AdaStop stopped at interim %d: re-run the command to complete it", test.interims + 1)
                break
            test.add({i: [found[d] for d in directories[i][-len(seeds) :]] for i in active})
            record = test.record("finished" if test.finished else "running")
            write_record(out, record)
            for entry in record["decisions"]:
                log.info("AdaStop: %s vs %s: %s", entry["a"], entry["b"], entry["decision"])
        return returns
