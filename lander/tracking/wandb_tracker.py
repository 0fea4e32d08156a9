"""Weights & Biases: start a run, log metrics and files, always finish it.

``wandb`` is imported only here and only when ``logger.backend=wandb``.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.logger import KVWriter

from lander.storage.rundir import RunPaths
from lander.tracking.base import real_numbers

log = logging.getLogger(__name__)


def keep_offline(wandb: Any, mode: str) -> None:
    """Make W&B's process-wide mode ``mode`` unless it is online.

    ``wandb.init(mode="offline")`` alone leaves the process-wide settings online, and W&B 0.31 then
    still starts OpenTelemetry exporters of its own usage metrics that post to api.wandb.ai.
    """
    if mode != "online":
        wandb.setup(wandb.Settings(mode=mode))


class WandbRun:
    """A started W&B run; ``log`` takes flat ``{"prefix/key": value}`` dicts with the env step."""

    def __init__(
        self, cfg: DictConfig, run_dir: Path, name: str, group: str | None = None, run_id: str | None = None
    ) -> None:
        """:param run_id: the id of a run to continue (a resumed run), else a new run"""
        import wandb

        self.wandb = wandb
        keep_offline(wandb, cfg.logger.mode)
        config: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
        self.run = wandb.init(
            project=cfg.logger.project,
            entity=cfg.logger.entity,
            group=cfg.logger.group or group,
            job_type=cfg.logger.job_type or cfg.algo.name,
            tags=[cfg.algo.name, cfg.env.name, *cfg.logger.tags],
            name=name,
            config=config,
            dir=str(run_dir),
            mode=cfg.logger.mode,
            id=run_id,
            resume="allow" if run_id else None,
            settings=wandb.Settings(init_timeout=60, console="off", x_disable_stats=False),
        )
        self.run.define_metric("global_step")
        self.run.define_metric("*", step_metric="global_step")
        log.info("W&B run %s (%s mode) in %s", name, cfg.logger.mode, self.run.dir)

    def log(self, metrics: dict[str, Any], step: int) -> None:
        self.run.log({**metrics, "global_step": step})

    def log_files(self, paths: RunPaths, summary: dict[str, Any], log_model: bool) -> None:
        """The final evaluation summary, the plot, the video, the report and (optionally) the model artifact."""
        wandb = self.wandb
        for key, value in summary.items():
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
        if log_model and paths.model.is_file():
            self.run.log_artifact(self.model_artifact(paths, summary))

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
        self.run.finish(exit_code=exit_code)


class WandbWriter(KVWriter):
    """Forwards SB3's logger records (``train/loss``, ``time/fps``, ``rollout/...``) to W&B.

    Every real number goes, numpy scalars included (SB3 logs ``train/approx_kl`` and others as ``np.float32``).
    """

    def __init__(self, run: WandbRun) -> None:
        self.run = run

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        values = real_numbers(key_values)
        if values:
            self.run.log(values, step)

    def close(self) -> None:
        pass
