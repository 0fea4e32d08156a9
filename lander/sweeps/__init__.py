"""A ``--multirun`` sweep as a controlled experiment: the Hydra callback that compares its jobs at its end, and re-runs
that complete a sweep in its own directory."""
