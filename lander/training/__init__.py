"""One training run, from a composed config to a complete run directory: the loop (``train``), the budget, torch's
fast paths, resuming, lander's SB3 callbacks (one ``callbacks.py``), the environment snapshot and the final record."""
