"""Entry point: ``python -m lander.run algo=ppo seed=0`` (any Hydra overrides, ``--multirun`` for sweeps)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from lander.config import ConfigError, check_override_keys, register_configs

log = logging.getLogger("lander")
register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    """Train one run in Hydra's output directory; return the final eval mean (for Hydra sweepers)."""
    from lander.train import Interrupted, train

    try:
        summary = train(cfg, Path(HydraConfig.get().runtime.output_dir))
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        sys.exit(2)
    except Interrupted as exc:
        log.error("interrupted by %s; the run directory keeps what was recorded", exc)
        sys.exit(exc.exit_code)
    return summary.get("final_eval_mean")


if __name__ == "__main__":
    try:
        check_override_keys(sys.argv[1:])
    except ConfigError as error:
        print(f"lander: invalid configuration: {error}", file=sys.stderr)
        sys.exit(2)
    main()
