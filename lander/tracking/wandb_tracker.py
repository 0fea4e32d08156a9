"""Weights & Biases: start a run, log metrics and files, always finish it.

``wandb`` is imported only here and only when a run starts a :class:`WandbTracker` (``logger=wandb``).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any, Literal

from omegaconf import OmegaConf

from lander.config.checks import wandb_mode
from lander.config.schema import chosen_wandb_mode
from lander.storage.rundir import RunPaths, RunSummary
from lander.tracking.base import TrackedRun, Tracker

log = logging.getLogger(__name__)


def keep_offline(wandb: Any, mode: str) -> None:
    """Make W&B's process-wide mode ``mode`` unless it is online.

    ``wandb.init(mode="offline")`` alone leaves the process-wide settings online, and W&B 0.31 then
    still starts OpenTelemetry exporters of its own usage metrics that post to api.wandb.ai.
    """
    if mode != "online":
        wandb.setup(wandb.Settings(mode=mode))


class WandbTracker(Tracker):
    """Weights & Biases (``logger=wandb``, the default): one W&B run per lander run, a resumed run continuing its
    own (its id is in ``summary.json`` from the moment it starts). Offline by default: no account, no network.

    :param mode: offline, online (needs WANDB_API_KEY or `wandb login`), or disabled; None: W&B's ``WANDB_MODE``
        where it is set, else offline
    :param project: the W&B project
    :param entity: the W&B team or user; None: your default entity
    :param group: the W&B group; None: none for a single run, the sweep's id for a sweep's jobs
    :param job_type: the W&B job type; None: the algorithm's name
    :param tags: extra tags besides the algorithm's and the env's names
    :param log_model: upload ``model.zip`` (and ``eval.json``) as a W&B artifact
    :param offline_fallback: online and W&B cannot be reached: False stops before training, True goes on offline
    :param connect_timeout: seconds to wait for the W&B server before that decision
    """

    def __init__(
        self,
        mode: Literal["offline", "online", "disabled"] | None = None,
        project: str = "lander",
        entity: str | None = None,
        group: str | None = None,
        job_type: str | None = None,
        tags: list[str] | None = None,
        log_model: bool = True,
        offline_fallback: bool = False,
        connect_timeout: float = 5,
    ) -> None:
        self.mode, self.project, self.entity, self.group, self.job_type = mode, project, entity, group, job_type
        self.tags, self.log_model = list(tags or []), log_model
        self.offline_fallback, self.connect_timeout = offline_fallback, connect_timeout  # read by check_trackers

    durable = False  # wandb-core writes the offline file in blocks: a kill -9 loses the rows it had not written

    def start(self, run: TrackedRun) -> None:
        import wandb  # 0.4 s: only where this tracker starts (a run with logger=none imports none of W&B)

        self.wandb = wandb
        mode = wandb_mode(chosen_wandb_mode(self.mode), self.offline_fallback, self.connect_timeout)
        self.mode = mode  # type: ignore[assignment]  # one of WANDB_MODES: checked before the run
        keep_offline(wandb, mode)
        config: dict[str, Any] = OmegaConf.to_container(run.cfg, resolve=True)  # type: ignore[assignment]
        run_id = run.summary.wandb_run_id
        self.run = wandb.init(
            project=self.project,
            entity=self.entity,
            group=self.group or run.group,
            job_type=self.job_type or run.cfg.algo.name,
            tags=[run.cfg.algo.name, run.cfg.env.name, *self.tags],
            name=run.name,
            config=config,
            dir=str(run.paths.root),
            mode=self.mode,
            id=run_id,
            resume="allow" if run_id else None,
            # a run of its own also where this process trains other seeds beside it (seeds_per_process): W&B's
            # default would hand each later seed the first seed's run
            settings=wandb.Settings(init_timeout=60, console="off", x_disable_stats=False, reinit="create_new"),
        )
        self.run.define_metric("global_step")
        self.run.define_metric("*", step_metric="global_step")
        if self.mode == "disabled":  # W&B's stand-in run: nothing is recorded, nowhere
            log.info("W&B disabled (logger.wandb.mode, or WANDB_MODE): no W&B run is recorded")
            return
        run.summary.wandb_run_id = self.run.id
        run.summary.save(run.paths)  # at once: a run killed from now on resumes into the same W&B run
        log.info("W&B run %s (%s mode) in %s", run.name, self.mode, self.run.dir)

    def log(self, metrics: dict[str, Any], step: int) -> None:
        self.run.log({**metrics, "global_step": step})

    def log_files(self, paths: RunPaths, summary: RunSummary) -> None:
        """The final evaluation summary, the plot, the video, the report and (optionally) the model artifact."""
        if self.mode == "disabled":  # W&B's stand-in run: the model's copy (the artifact's) would be all it left
            return
        wandb = self.wandb
        log.info("W&B: logging the run's files and summary (%s mode) ...", self.run.settings.mode)
        record = summary.to_dict()
        for key, value in record.items():
            if isinstance(value, (int, float, str, bool)) or value is None:
                self.run.summary[key] = value
        media: dict[str, Any] = {}
        if paths.learning_curve.is_file():
            media["plots/learning_curve"] = wandb.Image(str(paths.learning_curve))
        if paths.video.is_file():
            media["media/video"] = wandb.Video(str(paths.video), format="mp4")
        if paths.report.is_file():
            media["report"] = wandb.Html(str(paths.report), inject=False)  # as written: no stylesheet fetched
        if media:
            self.run.log(media)
        if self.log_model and paths.model.is_file():
            self.run.log_artifact(self.model_artifact(paths, record))

    def model_artifact(self, paths: RunPaths, summary: dict[str, Any]) -> Any:
        """``model.zip`` and ``eval.json`` as a W&B artifact whose bytes stay in the run directory.

        W&B would copy them to a staging folder under the home directory and record that path, so a run
        directory copied elsewhere could not be synced. They are copied to ``wandb/artifact_files/`` instead
        (a later resume may overwrite ``model.zip``; the copy stays as logged), and an offline run records them
        relative to the run directory: ``cd <run dir> && wandb sync wandb/offline-run-*`` works wherever the
        directory is.
        """
        name = f"model-{self.run.id}"
        folder = paths.root / "wandb" / "artifact_files" / f"{name}_{summary.get('timesteps', 0)}"
        folder.mkdir(parents=True, exist_ok=True)
        artifact = self.wandb.Artifact(name, type="model", metadata=summary)
        for source in (paths.model, paths.eval_json):
            if source.is_file():
                copy = Path(shutil.copy2(source, folder / source.name))
                entry = artifact.add_file(str(copy), policy="immutable")
                if self.run.settings.mode != "online":  # uploaded by `wandb sync`, run in the run directory
                    entry.local_path = copy.relative_to(paths.root).as_posix()
        return artifact

    def finish(self, exit_code: int) -> None:
        if hasattr(self, "run"):
            self.run.finish(exit_code=exit_code)
