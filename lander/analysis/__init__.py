"""Analysis of runs, writing nothing: the runs of a comparison and their equal budget, statistics over runs (rliable's
estimators, tests, power), the comparison table, learning curves across seeds, and ``Comparison``."""
