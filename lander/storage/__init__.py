"""The files of a run directory and how they are written: every path (``RunPaths``, ``SweepPaths``), the typed
``summary.json``, atomic writes, crash-safe CSV logs, the one-writer lock, replay buffers as arrays (no pickle)."""
