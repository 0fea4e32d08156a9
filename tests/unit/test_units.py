"""In-process tests of the parts that need no subprocess: the run record, run discovery, the periodic
trigger, the schema's neutral keys, re-run planning and configuration labels (statistics: test_statistics.py)."""

from __future__ import annotations

import html
import itertools
import json
import os
import re
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from helpers import REPO, composed, lander
from lander.analysis.runset import Run
from lander.config.schema import changes_nothing, labels, neutral_keys
from lander.storage.rundir import (
    RunPaths,
    RunSummary,
    Status,
    atomic_write,
    claim_directory,
    find_run_dirs,
    new_directory,
    write_json,
)
from lander.sweeps.rerun import check_same_sweep, more_seeds, plan_job, set_aside, sweep_seeds
from lander.training.callbacks import Every, StopOnPlateau


def test_every_fires_at_multiples_and_from_a_resumed_step() -> None:
    every = Every(100)
    every.start(0)
    fired = [steps for steps in range(0, 420, 16) if every(steps)]
    assert fired == [112, 208, 304, 400]  # the first step at or past each multiple
    every.start(250)  # a run resumed at 250 goes on to 300, not 350
    assert not every(299) and every(300) and not every(301)
    never = Every(0)
    never.start(0)
    assert not any(never(steps) for steps in range(0, 10_000, 7))


def test_more_seeds_are_read_from_a_sweeps_seed_override_as_hydra_sweeps_it() -> None:
    assert sweep_seeds("seed=0,1,2") == [0, 1, 2] and sweep_seeds("seed=-1,3") == [-1, 3]
    assert sweep_seeds("seed=range(3)") == [0, 1, 2] and sweep_seeds("seed=range(2, 5)") == [2, 3, 4]
    assert sweep_seeds("seed=range(0,10,4)") == [0, 4, 8]
    assert sweep_seeds("seed=choice(1,2)") is None and sweep_seeds("seed=range(1,2,0)") is None
    assert sweep_seeds("seed=--1") is None and sweep_seeds("seed=1.5") is None  # not integers (the first raised)
    assert sweep_seeds("seed=+3,1_000") == [3, 1000] and sweep_seeds("seed=007") == [7]  # as Hydra sweeps them
    assert more_seeds(["algo=a2c", "seed=range(3)"], ["seed=range(5)", "algo=a2c"]) == ("seed=range(3)", [3, 4])
    assert more_seeds(["algo=a2c", "seed=0,1"], ["algo=a2c", "seed=0,1,5"]) == ("seed=0,1", [5])
    assert more_seeds(["algo=a2c", "seed=0,1"], ["algo=a2c", "seed=1,0"]) is None  # no seed added: job order
    assert more_seeds(["algo=a2c", "seed=0,1"], ["algo=ppo", "seed=0,1,2"]) is None  # another experiment
    assert more_seeds(["seed=0,1"], None) is None


def test_run_summary_round_trip_keeps_unknown_keys_out(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path)
    summary = RunSummary(run_name="r", seed=3, total_timesteps=100, overrides=["seed=3"])
    summary.update(status=Status.FAILED, error="ValueError: x")
    summary.save(paths)
    data = json.loads(paths.summary.read_text())
    assert data["status"] == "failed" and data["seed"] == 3 and data["overrides"] == ["seed=3"]
    write_json(paths.summary, data | {"from_a_newer_version": 1})
    loaded = RunSummary.load(paths)
    assert loaded == summary and loaded.status is Status.FAILED
    with pytest.raises(AttributeError, match="no field 'final_mean'"):
        summary.update(final_mean=1.0)
    assert RunSummary.load(RunPaths(tmp_path / "nothing")) is None


def test_atomic_write_replaces_whole_files_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    write_json(target, {"v": 1})
    with pytest.raises(RuntimeError):
        atomic_write(target, lambda tmp: (tmp.write_text('{"v": 2, "half'), (_ for _ in ()).throw(RuntimeError())))
    assert json.loads(target.read_text()) == {"v": 1}  # a write that fails midway leaves the old file whole
    write_json(target, {"v": 3})
    assert json.loads(target.read_text()) == {"v": 3}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
    # a file whose temporary's name is too long: the write's own error, not a second one from the clean-up
    with pytest.raises(OSError, match="File name too long") as failed:
        write_json(tmp_path / f"{'a' * 250}.json", {"v": 4})  # its temporary: .<name>.<pid>.tmp.json, > 255 bytes
    assert failed.value.__context__ is None


def test_run_discovery_orders_jobs_by_number_and_skips_the_comparison_and_reproductions(tmp_path: Path) -> None:
    for job in ("10", "2", "1", "comparison/0", "2.reproduce-1"):
        (tmp_path / job / ".hydra").mkdir(parents=True)
        (tmp_path / job / ".hydra" / "config.yaml").write_text("seed: 0\n")
    assert [p.name for p in find_run_dirs([tmp_path])] == ["1", "2", "10"]  # a reproduction is no other seed
    assert find_run_dirs([tmp_path / "2", tmp_path]) == [tmp_path / "2", tmp_path / "1", tmp_path / "10"]
    assert find_run_dirs([tmp_path / "2.reproduce-1"]) == [tmp_path / "2.reproduce-1"]  # unless named


def test_neutral_keys_are_declared_on_the_schema() -> None:
    keys = neutral_keys()
    assert {
        "checkpoint_freq",
        "checkpoint_keep",
        "monitor_freq",
        "torch_fast_paths",
        "vec_env",  # subproc gives dummy's metrics and weights (tests/e2e/test_faults.py)
        "progress_bar",
        "logger",
        "video",
    } <= set(keys)
    assert not {"torch_threads", "seed", "gamma", "eval", "callbacks", "device"} & set(keys)
    assert changes_nothing("video.fps=10") and changes_nothing("logger=none") and changes_nothing("seed=1,2")
    assert changes_nothing("checkpoint_keep=0") and changes_nothing("vec_env=subproc")
    assert not changes_nothing("experiment=gamma_sweep")  # a preset may set any key: a sweep over presets compares them
    assert not changes_nothing("gamma=0.98") and not changes_nothing("torch_threads=2")
    assert not changes_nothing("video_budget=1")  # a prefix of a key is not that key


def test_configuration_labels_name_what_differs() -> None:
    run = Run(
        path=Path("x"),
        overrides=["gamma=0.98", "seed=1", "checkpoint_keep=1", "algo=ppo"],
        seed=1,
        env="lunar_lander",
        status="completed",
    )
    assert run.key == ("algo=ppo", "gamma=0.98")
    names = labels([run.key, ("algo=ppo", "gamma=0.99")])
    assert list(names.values()) == ["gamma=0.98", "gamma=0.99"]
    # runs of other commands compared (lander.compare of two sweeps, the dashboard's Compare selected)
    names = labels([("algo=ppo",), ("algo=ppo", "gamma=0.9"), ("algo=ppo", "gamma=0.8")])
    assert list(names.values()) == ["default", "gamma=0.9", "gamma=0.8"]
    assert list(labels([("algo=ppo", "gamma=0.9")]).values()) == ["algo=ppo gamma=0.9"]  # alone: all of it


def _job(tmp_path: Path, status: str | None, checkpoint: bool = False) -> RunPaths:
    paths = RunPaths(tmp_path / (status or "new"))
    paths.hydra.mkdir(parents=True)
    paths.config.write_text("seed: 0\n")
    if status is not None:
        RunSummary(status=Status(status)).save(paths)
    if checkpoint:
        paths.checkpoints.mkdir()
        (paths.checkpoints / "model_512_steps.zip").write_bytes(b"zip")
    return paths


@pytest.mark.parametrize(
    ("status", "checkpoint", "plan"),
    [
        (None, False, "fresh"),
        ("completed", True, "skip"),
        ("running", True, "resume"),
        ("interrupted", True, "resume"),
        ("running", False, "retry"),
        ("failed", True, "retry"),
    ],
)
def test_plan_of_a_job_found_in_a_rerun_sweep(tmp_path: Path, status: str | None, checkpoint: bool, plan: str) -> None:
    assert plan_job(_job(tmp_path, status, checkpoint)) == plan


def test_a_retried_job_keeps_its_earlier_attempts(tmp_path: Path) -> None:
    paths = _job(tmp_path, "failed", checkpoint=True)
    (paths.root / "run.log").write_text("first attempt\n")
    first = set_aside(paths)
    assert first == paths.root / "attempts" / "1"
    assert (first / "summary.json").is_file() and (first / "checkpoints" / "model_512_steps.zip").is_file()
    assert sorted(os.listdir(paths.root)) == [".hydra", "attempts", "run.log"]
    RunSummary(status=Status.FAILED).save(paths)
    assert set_aside(paths).name == "2" and (paths.root / "attempts" / "1" / "summary.json").is_file()


def test_a_retried_job_moves_only_what_a_run_wrote(tmp_path: Path) -> None:
    """A user's own files in a failed run's directory (notes, a folder) stay where they are when the attempt is set
    aside: only what a run writes moves (``RUN_ENTRIES``)."""
    paths = _job(tmp_path, "failed", checkpoint=True)
    (paths.root / "notes.md").write_text("mine\n")
    (paths.root / "analysis").mkdir()
    (paths.root / "analysis" / "plot.py").write_text("print(1)\n")
    first = set_aside(paths)
    assert sorted(os.listdir(paths.root)) == [".hydra", "analysis", "attempts", "notes.md"]
    assert sorted(os.listdir(first)) == ["checkpoints", "summary.json"]
    assert (paths.root / "notes.md").read_text() == "mine\n" and (paths.root / "analysis" / "plot.py").is_file()


def test_every_default_is_written_once_in_the_yaml() -> None:
    """Run-level schema fields hold no default (``MISSING``): the YAML is the one place, and it sets them all."""
    from dataclasses import MISSING as NO_DEFAULT
    from dataclasses import fields

    from omegaconf import MISSING, OmegaConf

    from lander.config.schema import LanderConfig

    with_defaults = [f.name for f in fields(LanderConfig) if f.default not in (MISSING, NO_DEFAULT)]
    assert with_defaults == []  # the groups (algo, env, eval, ...) are default_factory nodes of MISSING fields
    assert OmegaConf.missing_keys(composed()) == set()


def test_a_plus_before_experiment_is_accepted(tmp_path: Path) -> None:
    out = lander("+experiment=gamma_sweep", "--cfg", "hydra", cwd=tmp_path, timeout=120)
    assert out.returncode == 0 and "gamma: 0.98,0.99,0.999" in out.stdout, out.stderr


@pytest.mark.parametrize(
    ("algo", "seed", "label"),
    [("ppo", 0, "ppo_lunar_lander_seed-0"), ("../../etc", 0, "run"), ("a/b", 1, "run"), ("x y", 2, "run")],
)
def test_a_service_run_is_named_as_from_a_terminal_and_never_by_a_path(algo, seed, label):
    from omegaconf import OmegaConf

    from lander.service.overrides import run_label

    cfg = OmegaConf.create({"algo": {"name": algo}, "env": {"name": "lunar_lander"}, "seed": seed})
    assert run_label(cfg) == label


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[]", "a JSON list, not the object a run writes"),
        ('{"timesteps": "x"}', "timesteps='x', where a run writes int"),
        ('{"status": 5}', "status=5, where a run writes str"),
        ('{"status": "weird"}', "status='weird' is not a status lander writes"),
        ('{"wall_seconds": [1]}', "wall_seconds=[1], where a run writes number or null"),
        ("{not json", "not readable JSON"),
    ],
)
def test_a_summary_that_is_not_a_runs_is_named_in_one_line_and_its_report_says_so(tmp_path, text, said):
    from lander.errors import RunFileError
    from lander.reports.run_report import write_run_report

    paths = RunPaths(tmp_path / "run")
    paths.metrics.mkdir(parents=True)
    paths.summary.write_text(text)
    with pytest.raises(RunFileError, match=re.escape(said)):
        RunSummary.load(paths)
    page = write_run_report(paths.root).read_text()  # the report of such a run says what is wrong
    assert "unreadable" in page and html.escape(said) in page


def test_the_report_of_a_run_killed_before_its_first_summary_says_what_it_trains(tmp_path):
    """A run with its saved config and no ``summary.json`` (killed before its first): its report's header said
    "? on ?, seed ?, gamma ?"; now what the config says."""
    from omegaconf import OmegaConf

    from helpers import composed
    from lander.reports.run_report import write_run_report

    paths = RunPaths(tmp_path / "run")
    paths.hydra.mkdir(parents=True)
    paths.config.write_text(OmegaConf.to_yaml(composed("algo=a2c", "seed=3")))
    page = write_run_report(paths.root).read_text()
    assert "a2c on LunarLander-v3, seed 3, gamma 0.99" in page and "Not finished" in page


def test_the_snapshot_lists_the_packages_as_pip_freeze_does(tmp_path: Path) -> None:
    """The snapshot's package list is read in-process; real ``pip freeze`` (from a directory holding no package
    metadata of its own) lists the same packages and versions, and as many editable installs (pip names one from a
    git checkout by its remote and commit, the snapshot by its directory: versions.json has the commit)."""
    import subprocess
    import sys

    from lander.training.snapshot import freeze

    def run(*args: str) -> list[str]:  # both with one sys.path: a directory of the user's, not the repository
        out = subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, check=True)
        return [line for line in out.stdout.splitlines() if not line.startswith("#")]

    pip = run("-m", "pip", "freeze")
    listed = run("-c", f"import {freeze.__module__} as m; print(m.freeze(), end='')")

    def editable(lines: list[str]) -> tuple[list[str], int]:  # the other lines, and how many editable installs
        return [line for line in lines if not line.startswith("-e ")], sum(line.startswith("-e ") for line in lines)

    assert editable(listed) == editable(pip)
    assert any(line.startswith("-e ") for line in listed) and any(line.startswith("torch==") for line in listed)


@pytest.mark.parametrize(
    "direct_url",
    [
        {"url": "file:///wheels/fake-1.0-py3-none-any.whl", "archive_info": {"hash": f"sha256={'a' * 64}",
                                                                              "hashes": {"sha256": "a" * 64}}},
        {"url": "https://example.org/fake-1.0.tar.gz", "archive_info": {"hashes": {"sha256": "b" * 64}}},
        {"url": "https://example.org/fake.git", "vcs_info": {"vcs": "git", "commit_id": "c" * 40},
         "subdirectory": "python/fake"},
        {"url": "file:///src/fake", "dir_info": {}, "subdirectory": "sub"},
        {"url": "file:///src/fake", "dir_info": {}},
    ],
    ids=["wheel-file-with-hash", "archive-hashes-only", "git-subdirectory", "directory-subdirectory", "directory"],
)  # fmt: skip
def test_the_snapshot_lists_a_package_from_a_url_as_pip_freeze_does(
    tmp_path: Path, direct_url: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package installed from a URL (a wheel file, an archive, a git commit, a directory; a hash, a subdirectory)
    is listed by the snapshot as real ``pip freeze`` lists it: the package's metadata in a folder of its own, on
    the snapshot's ``sys.path`` and pip's ``--path``."""
    import subprocess
    import sys

    from lander.training.snapshot import freeze

    site = tmp_path / "site"
    info = site / "fake-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake\nVersion: 1.0\n")
    (info / "direct_url.json").write_text(json.dumps(direct_url))
    (info / "RECORD").write_text("")
    freeze_args = [sys.executable, "-m", "pip", "freeze", "--path", str(site)]
    pip = subprocess.run(freeze_args, cwd=tmp_path, capture_output=True, text=True, check=True).stdout.splitlines()
    monkeypatch.syspath_prepend(str(site))
    listed = [line for line in freeze().splitlines() if line.startswith(("fake ", "fake=="))]
    assert len(pip) == 1 and listed == pip


def test_a_rerun_with_the_overrides_in_another_order_numbers_its_jobs_as_before(tmp_path: Path) -> None:
    """Hydra numbers a sweep's jobs in the order of its overrides; a re-run that gives them in another order gets
    the saved order back, so that job N is the configuration in directory N. Other values are still refused."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    from lander.errors import ConfigError

    saved = ["algo=ppo,a2c", "seed=0,1"]
    (tmp_path / "multirun.yaml").write_text(f"hydra:\n  overrides:\n    task: {saved}\n  sweeper:\n    params: null\n")

    def rerun(task: list[str]) -> list[list[str]]:
        config = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path)}, "overrides": {"task": task}}})
        check_same_sweep(config)
        parsed = OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
        return BasicSweeper.split_arguments(parsed, None)[0]

    assert rerun(["seed=0,1", "algo=ppo,a2c"]) == rerun(saved)
    assert rerun(saved)[1] == ["algo=ppo", "seed=1"]
    for other in (["algo=ppo,a2c", "seed=1,0"], ["seed=0,1", "algo=ppo,a2c", "seed=0,1"]):
        with pytest.raises(ConfigError, match="other overrides"):
            rerun(other)


@pytest.mark.parametrize(
    ("min_improvement", "means", "stops_after"),
    [
        (0.0, [100, 103, 102, 101], 4),  # 103 is a new best: patience counts 102 and 101
        (5.0, [100, 103, 104.9], 3),  # neither 103 nor 104.9 beats 100 by more than 5
        (5.0, [100, 105.5, 106, 107], 4),  # 105.5 does; then 106 and 107 do not beat it by 5
    ],
)
def test_a_plateau_counts_only_means_that_beat_the_best_by_more_than_min_improvement(
    min_improvement, means, stops_after
):
    rule = StopOnPlateau(patience=2, min_improvement=min_improvement)
    rule.parent = SimpleNamespace(best_mean=float("-inf"), last_mean=float("-inf"))  # PeriodicEval's two numbers
    rule._init_callback()
    for count, mean in enumerate(means, 1):
        rule.parent.last_mean = mean
        going_on = rule._on_step()
        assert going_on == (count < stops_after), (count, rule.stop_reason)
    assert rule.stop_reason.startswith("no new best eval mean")


@pytest.mark.parametrize("before", [0, 2**20 - 20, 2**20 + 5, 3 * 2**20 + 1000])
def test_restating_a_result_changes_its_cell_only_wherever_it_lies_in_the_report(tmp_path: Path, before: int) -> None:
    """``restate_result`` copies ``report.html`` a megabyte at a time: a cell anywhere (across two reads too) is
    rewritten, every other byte kept, the UTF-8 of Plotly's script (characters beyond Latin-1) included."""
    from lander.reports.run_report import restate_result

    paths = RunPaths(tmp_path)
    filler = ("é—\ufffd" * (before // 8 + 1)).encode()[:before]  # multi-byte characters, cut anywhere
    after = ("x" * 2**20).encode()
    paths.report.write_bytes(filler + b"<tr><th>peak memory (MB)</th><td>480.2</td></tr>" + after)
    restate_result(paths, "peak_rss_mb", 512.5)
    assert paths.report.read_bytes() == filler + b"<tr><th>peak memory (MB)</th><td>512.5</td></tr>" + after
    paths.report.write_bytes(filler + after)  # a report without the cell (a run that recorded none): as it was
    restate_result(paths, "peak_rss_mb", 512.5)
    assert paths.report.read_bytes() == filler + after


@pytest.mark.parametrize(
    "rate,said", [(1 / 3, "success rate 0.33"), (None, "success rate none (the env has no reward_threshold)")]
)
def test_the_closing_block_says_the_success_rate_in_two_decimals(tmp_path, rate, said):
    """A run of 3 evaluation episodes closed with "success rate 0.3333333333333333", an env without a
    reward_threshold with "success rate None"."""
    from lander.storage.rundir import RunPaths, RunSummary, Status
    from lander.training.finish import run_closing

    summary = RunSummary(status=Status.COMPLETED, final_eval_mean=10.0, final_eval_sem=1.0)
    summary.final_eval_success_rate = rate
    line = next(x for x in run_closing(summary, RunPaths(tmp_path)).splitlines() if "final evaluation" in x)
    assert line.endswith(said), line


def test_the_commands_a_run_prints_work_pasted_into_a_shell_whatever_its_directory_is_called(tmp_path):
    """``hydra.run.dir`` may hold spaces, ``$`` and quotes: the printed ``W&B upload: cd <dir> && wandb sync`` and
    ``continue: python -m lander.run resume=<dir>`` were not quoted, so pasted they went elsewhere (``$x`` expanded).
    A run with TensorBoard's files says how to open them, as one with W&B's says how to upload them."""
    import shlex
    import subprocess

    from lander.training.finish import run_closing

    root = tmp_path / 'a b$x"q'
    (root / "wandb" / "offline-run-1").mkdir(parents=True)
    paths = RunPaths(root)
    line = next(x for x in run_closing(RunSummary(status=Status.COMPLETED), paths).splitlines() if "W&B" in x)
    command = line.split(": ", 1)[1].replace("wandb sync wandb/offline-run-*", "ls -d wandb/offline-run-*")
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env={"x": "elsewhere"}, check=True)
    assert done.stdout == "wandb/offline-run-1\n"
    (root / "tensorboard" / "run-name").mkdir(parents=True)  # logger=tensorboard: the command that shows its curves
    line = next(x for x in run_closing(RunSummary(status=Status.COMPLETED), paths).splitlines() if "TensorBoard" in x)
    assert shlex.split(line.split(": ", 1)[1]) == ["tensorboard", "--logdir", str(root / "tensorboard")]
    from lander.reports.run_report import header  # the report's "continue:" line, as HTML

    shown = html.unescape(re.sub(r"<[^>]+>", "", header({"status": "interrupted", "error": "x"}, paths, False)))
    assert shlex.split(shown.split("continue: ", 1)[1]) == ["python", "-m", "lander.run", f"resume={root}"]


@pytest.mark.parametrize("trials", [2, 6, 20])
def test_the_final_scores_labels_of_long_configurations_do_not_overlap(tmp_path, monkeypatch, trials: int) -> None:
    """An Optuna search's configurations are three keys of twenty-digit values each: side by side on one line they
    ran into one another (two trials were unreadable). A few stand side by side, one key a line; many are rows, one
    label a line (numbers to 6 digits): every label's box on the drawn figure is clear of its neighbour's and
    inside the figure, and the plot keeps its room."""
    import matplotlib.pyplot as plt

    from lander.reports import plots

    drawn = []
    monkeypatch.setattr(plots, "finish", lambda fig, ax, path: (fig.tight_layout(), drawn.append(fig)))
    rng = np.random.default_rng(0)
    groups = {}
    for i in range(trials):
        label = " ".join(f"algo.model.{k}={rng.random() / 100}" for k in ("ent_coef", "gae_lambda", "learning_rate"))
        groups[label] = [Run(path=Path(f"{i}/{s}"), overrides=[], seed=s, env="lunar_lander", status="completed",
                             final_mean=float(rng.normal())) for s in range(2)]  # fmt: skip
    plots.plot_final_scores(groups, "lunar_lander", tmp_path / "scores.png")
    (fig,) = drawn
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    ax = fig.axes[0]
    rows = trials > 2  # two stand side by side
    labels_drawn = ax.get_yticklabels() if rows else ax.get_xticklabels()
    assert len(labels_drawn) == trials
    boxes = [t.get_window_extent(renderer) for t in labels_drawn]
    if rows:  # top to bottom
        assert all(below.y1 < above.y0 for above, below in itertools.pairwise(boxes)), boxes
    else:
        assert all(left.x1 < right.x0 for left, right in itertools.pairwise(boxes)), boxes
    figure = fig.bbox
    assert all(box.x0 >= figure.x0 and box.x1 <= figure.x1 for box in boxes), (boxes, figure)
    assert ax.get_window_extent(renderer).width >= 0.3 * figure.width  # the plot is not squeezed by its labels
    assert fig.get_size_inches()[0] <= plots.MAX_WIDTH
    plt.close(fig)


LONG_LABEL = (  # a sweep with a callback of one's own: one configuration, 250 characters
    "+callbacks.stop={_target_:stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes,max_episodes:3} "
    "algo.model.batch_size=64 algo.model.n_steps=128 eval.episodes=2 eval.freq=512 eval.n_envs=2 n_envs=2 "
    "seeds_per_process=2 total_timesteps=4096"
)


@pytest.mark.parametrize("trials", [2, 20, 1])
def test_a_legend_of_long_configurations_stays_off_the_plot_and_inside_the_figure(tmp_path, monkeypatch, trials):
    """The performance profile's legend of two Optuna trials was wider than the plot: it covered the curves and
    ran off the figure's left edge. Many or long entries go under the plot, inside the figure, each wrapped to its
    width (one label of 250 characters ran off both sides, and tight_layout squeezed the plot to a strip, warning
    "Tight layout not applied" on the console)."""
    import matplotlib.pyplot as plt

    from lander.reports import plots

    drawn = []
    real_finish = plots.finish
    monkeypatch.setattr(plots, "finish", lambda fig, ax, path: (real_finish(fig, ax, path), drawn.append(fig)))
    monkeypatch.setattr(plt, "close", lambda fig: None)  # kept open to be measured
    rng = np.random.default_rng(1)
    groups = {}
    for i in range(trials):
        label = " ".join(f"algo.model.{k}={rng.random() / 100}" for k in ("ent_coef", "gae_lambda", "learning_rate"))
        groups[LONG_LABEL if trials == 1 else label] = [
            Run(path=Path(f"{i}/{s}"), overrides=[], seed=s, env="lunar_lander", status="completed",
                final_mean=float(rng.normal() * 50)) for s in range(3)
        ]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "Tight layout not applied"
        plots.plot_profile(groups, "lunar_lander", tmp_path / "profile.png")
    (fig,) = drawn
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    ax = fig.axes[0]
    legend, plot, figure = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer), fig.bbox
    assert legend.x0 >= figure.x0 and legend.x1 <= figure.x1 and legend.y0 >= figure.y0, (legend, figure)
    assert not legend.overlaps(plot), (legend, plot)
    assert plot.width >= 0.5 * figure.width, (plot, figure)
    assert len(ax.get_legend().get_texts()) == trials
    monkeypatch.undo()
    plt.close(fig)


def test_the_reports_figures_of_long_configurations_keep_their_plot_and_labels_apart() -> None:
    """The comparison's report.html (Plotly) of two Optuna trials: the legend at the plot's right took most of the
    page's width (the final scores' plot a strip, its labels slanted across the page). Long or many entries now
    stand under the plot, in a bottom margin as tall as they are, numbers to 6 digits; the final scores' labels are
    one key a line, or rows where side by side would not fit; a short sweep's figures stay as they were."""
    from lander.reports.figures import HEIGHT, LEGEND_WRAP, final_scores_figure, profile_figure

    def groups(n: int, label) -> dict[str, list[Run]]:
        rng = np.random.default_rng(n)
        return {label(i, rng): [Run(path=Path(f"{i}/{s}"), overrides=[], seed=s, env="lunar_lander",
                                    status="completed", final_mean=float(rng.normal())) for s in range(3)]
                for i in range(n)}  # fmt: skip

    def optuna(i, rng):
        return " ".join(f"algo.model.{k}={rng.random() / 100}" for k in ("ent_coef", "gae_lambda", "learning_rate"))

    two, twenty = groups(2, optuna), groups(20, optuna)
    scores = final_scores_figure(two, "lunar_lander")
    assert scores.layout.xaxis.tickangle == 0 and all(t.count("<br>") == 2 for t in scores.layout.xaxis.ticktext)
    for figure in (scores, profile_figure(two, "lunar_lander")):
        legend, names = figure.layout.legend, [t.name for t in figure.data if t.showlegend is not False]
        assert legend.yref == "container" and 0 < legend.y < 1 and legend.yanchor == "top", figure.layout.title.text
        assert figure.layout.margin.b >= 20 * len(names) and figure.layout.height > HEIGHT
        assert not any(re.search(r"\d\.\d{10,}", name) for name in names), names  # 6 digits shown, not 20
    long = groups(1, lambda i, rng: LONG_LABEL)  # one entry of 250 characters: cut off at the figure's right
    for figure in (final_scores_figure(long, "lunar_lander"), profile_figure(long, "lunar_lander")):
        names = [t.name for t in figure.data if t.showlegend is not False]
        lines = [line for name in names for line in name.split("<br>")]
        assert max(map(len, lines)) <= LEGEND_WRAP < len(LONG_LABEL), names  # wrapped at spaces, every word kept
        assert all(LONG_LABEL in n.replace("<br>", " ") for n in names if n.startswith("+callbacks")), names
        assert figure.layout.margin.b >= 20 * len(lines), (figure.layout.margin.b, lines)
    rows = final_scores_figure(twenty, "lunar_lander")
    assert list(rows.layout.yaxis.tickvals) == list(twenty) and rows.layout.showlegend is False
    assert rows.layout.height >= 28 * 20 and rows.data[0].orientation == "h"
    short = groups(2, lambda i, rng: f"gamma=0.9{i}")
    for figure in (final_scores_figure(short, "lunar_lander"), profile_figure(short, "lunar_lander")):
        assert figure.layout.legend.yref is None and figure.layout.height == HEIGHT


def test_a_sweep_started_elsewhere_is_sweeping_while_its_lock_or_a_job_is_held_then_ended(tmp_path):
    """A sweep started from the command line showed ``unknown`` on the dashboard while it ran and after it ended.
    Its process holds the sweep's lock (:class:`lander.storage.lock.SweepLock`) while it runs: ``sweeping``; a job
    that outlived it (a joblib worker's) keeps it ``sweeping``; then ``ended``, its runs counted by status. A sweep
    no process of this machine held (an older lander's, a copy) stays ``unknown``."""
    from lander.service.store import list_sweeps
    from lander.storage.lock import RunLock, SweepLock

    sweep = tmp_path / "multirun" / "s"
    for job in ("0", "1"):
        RunPaths(sweep / job).hydra.mkdir(parents=True)
        RunPaths(sweep / job).config.write_text("seed: 0\n")
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    RunSummary(status=Status.INTERRUPTED, seed=0).save(RunPaths(sweep / "0"))
    RunSummary(status=Status.RUNNING, seed=1).save(RunPaths(sweep / "1"))

    def state() -> tuple[str, str | None]:
        (listed,) = list_sweeps(tmp_path)
        return listed["state"], listed.get("error")

    assert state() == ("unknown", None)
    lock, job = SweepLock(sweep), RunLock(sweep / "1")
    lock.acquire()
    job.acquire()
    assert state() == ("sweeping", None)
    lock.release()
    assert state() == ("sweeping", None)  # its job still runs
    job.release()
    ended, error = state()
    assert ended == "ended" and error is not None and error.startswith("2 run(s): 1 interrupted, 1 stopped; ")


def test_a_new_directory_is_made_as_it_is_named(tmp_path):
    """Two ``lander.compare`` of runs started in the same second (or two launches of the service) were given one
    ``comparisons/<date>/<time>``: :func:`new_directory` named a directory without making it, so a second caller
    before the first had made it got the same name, and both comparisons wrote there. Now each call makes its
    own; a default run or sweep directory (``${lander.claim:...}``) is made once a process, whoever asks again."""
    first, second = new_directory(tmp_path, "x"), new_directory(tmp_path, "x")
    assert first.is_dir() and second.is_dir() and first != second
    assert second.name in (f"{first.name}-2", *(p.name for p in second.parent.iterdir() if p != first))
    claimed = claim_directory(str(tmp_path / "run"))
    assert claimed == str(tmp_path / "run") == claim_directory(str(tmp_path / "run")) and Path(claimed).is_dir()
    (tmp_path / "taken").mkdir()
    assert claim_directory(str(tmp_path / "taken")) == str(tmp_path / "taken-2")


def test_a_sweep_given_for_a_run_is_named_with_its_runs(tmp_path, monkeypatch):
    """``lander.reproduce <sweep>``, ``resume=<sweep>`` and ``load_run(<sweep>)`` said only "not a lander run
    directory (no .hydra/config.yaml)" of a directory that holds runs; now they name a few and what to do."""
    from lander.api import load_run
    from lander.config.precheck import check_command
    from lander.errors import ConfigError, RunSetError
    from lander.reproduce import plan

    monkeypatch.chdir(tmp_path)
    (tmp_path / "sweep" / "multirun.yaml").parent.mkdir()
    (tmp_path / "sweep" / "multirun.yaml").write_text("hydra: {}\n")
    for job in ("0", "1", "10", "2"):
        (tmp_path / "sweep" / job / ".hydra").mkdir(parents=True)
        (tmp_path / "sweep" / job / ".hydra" / "config.yaml").write_text("seed: 0\n")
    runs = "it is a sweep's, of 4 run(s) (sweep/0, sweep/1, ...); "
    with pytest.raises(ConfigError, match=re.escape(runs + "reproduce one of them")):
        plan(Path("sweep"), None, [])
    with pytest.raises(ConfigError, match=re.escape(runs + "resume one of them, or complete the sweep: its command ")):
        check_command(["resume=sweep"])
    with pytest.raises(RunSetError, match=re.escape(runs + "load_sweep reads them all")):
        load_run("sweep")
    with pytest.raises(ConfigError, match=r"'sweep/0/.hydra' is not a lander run directory \(no .hydra/config.yaml\)$"):
        plan(Path("sweep/0/.hydra"), None, [])  # no sweep: as before


def test_a_budget_rounded_down_to_no_rollout_says_it_trains_one(caplog) -> None:
    """``budget_rounding=down`` with a budget below one rollout trains one whole rollout (none would train
    nothing); its log line said "down" beside a count rounded up, with no word of why."""
    import logging

    from stable_baselines3 import PPO

    from lander.training.budget import plan

    model = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64, device="cpu")
    with caplog.at_level(logging.INFO, logger="lander.training.budget"):
        assert (plan(model, 10, "down"), plan(model, 100, "down"), plan(model, 100, "up")) == (64, 64, 128)
    first, second, third = (record.getMessage() for record in caplog.records)
    assert first.endswith(
        "becomes 64 steps: PPO collects whole rollouts of 1 env x 64 steps "
        "(budget_rounding=down; at least one: none fits within it)"
    ), first
    assert second.endswith("(budget_rounding=down; the default, up, goes on to the first whole one past it)"), second
    assert third.endswith("(budget_rounding=up; budget_rounding=down stops at the last whole one within it)"), third


SIGNIFICANT = [  # (value, digits, written): %.4g / %.2g wrote 1.3e+02, 1.235e+04
    (130.4, 2, "130"),
    (12345.6, 4, "12350"),
    (229.7, 4, "229.7"),
    (9.33333, 4, "9.333"),
    (-170.94, 4, "-170.9"),
    (0.012345, 2, "0.012"),
    (24.5, 4, "24.5"),
    (0.0, 2, "0"),
    (3.1e-7, 2, "3.1e-07"),
    (2.5e12, 2, "2.5e+12"),
]


def test_numbers_are_written_out_to_their_significant_digits_in_python_and_on_the_dashboard(tmp_path):
    """A standard error of 130 read "+- 1.3e+02" in the run's log and closing block and "± 1.4e+2" on the
    dashboard, a HalfCheetah mean of 12,345 "1.235e+04" in the comparison: written out now, in Python
    (:func:`lander.numbers.significant`) and in the dashboard's JavaScript (``num``, run here in Chromium)."""
    import json

    from helpers.browser import open_page
    from lander.numbers import significant
    from lander.storage.rundir import RunPaths, RunSummary, Status
    from lander.training.finish import run_closing

    assert [significant(v, d) for v, d, _ in SIGNIFICANT] == [w for _, _, w in SIGNIFICANT]
    assert significant(160.24, plus=True) == "+160.2" and significant(-3.0, plus=True) == "-3"
    summary = RunSummary(status=Status.COMPLETED, final_eval_mean=12345.6, final_eval_sem=130.4)
    assert "final evaluation: 12350 +- 130 (s.e.)" in run_closing(summary, RunPaths(tmp_path))
    import pandas as pd

    from lander.reports.html import table
    from lander.reports.markdown import markdown_table

    frame = pd.DataFrame({"config": ["sac"], "final_mean": [12345.6], "sem": [130.4]})
    assert markdown_table(frame).splitlines()[2] == "| sac      |        12350 | 130.4 |"  # numbers to the right
    assert "<td>12350</td>" in table(frame) and "e+0" not in table(frame)  # report.html's tables
    script = (REPO / "lander" / "service" / "dashboard.js").read_text()
    num = script[script.index("function num(") : script.index("\n}\n", script.index("function num(")) + 2]
    page_file = tmp_path / "num.html"
    page_file.write_text("<html><body></body></html>")
    with open_page(page_file) as (page, _):
        cases = json.dumps([[v, d] for v, d, _ in SIGNIFICANT])
        shown = page.evaluate(f"(() => {{ {num}; return {cases}.map(([v, d]) => num(v, d)); }})()")
    assert shown == [w.replace("e-07", "e-7") for _, _, w in SIGNIFICANT]  # JavaScript's exponent: e-7
