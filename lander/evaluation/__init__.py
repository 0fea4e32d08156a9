"""Evaluating a policy: batched episodes on fixed seeds and their statistics, models loaded without unpickling,
videos, and re-evaluating saved runs (``python -m lander.evaluate``)."""
