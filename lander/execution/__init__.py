"""How a job runs: in a process of its own, under lander's launchers (Hydra's launcher interface) and Hydra's.

- :mod:`lander.execution.jobs`: what every launcher shares (a job, its composition and record, a stopped sweep) and
  :func:`~lander.execution.jobs.run_sweep_job`, ``lander.run``'s one entry to this layer;
- :mod:`lander.execution.isolate`: a job forked into a process of its own, its death recorded;
- one module per launcher: :mod:`~lander.execution.parallel` (lander's, the default, with seeds side by side),
  :mod:`~lander.execution.joblib`, :mod:`~lander.execution.submitit`, :mod:`~lander.execution.ray`; registered for
  Hydra in ``hydra_plugins/lander_launcher/``.
"""
