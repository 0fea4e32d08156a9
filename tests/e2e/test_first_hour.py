"""What a new user meets first: --help, a typo, the real budget, Ctrl-C, evaluating a stopped run, training a
finished run further, and the closing lines of a run. Real subprocess runs with tiny budgets."""

from __future__ import annotations

import signal
import time
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from helpers import REPO, lander, lander_env, read_json, run_lander, start_lander, tiny
from helpers.runs import fake_run
from helpers.wandb_reader import read_runs
from lander.storage.lock import RunLock, SweepLock

TINY = tiny("ppo", 0, eval_every=512, video=True, report=True)  # each test gives its budget


@pytest.mark.parametrize(
    "module,expected",
    [
        ("lander.run", ["python -m lander.run --multirun experiment=gamma_sweep", "algo: a2c, dqn", "experiment: "]),
        ("lander.evaluate", ["usage: python -m lander.evaluate run=DIR", "n_episodes=20"]),
        ("lander.compare", ["usage: python -m lander.compare", "--at-timesteps", "Write the comparison a sweep"]),
        ("lander.reproduce", ["usage: python -m lander.reproduce", "Does this run reproduce here? Train it again"]),
        ("lander.report", ["usage: python -m lander.report", "Write the HTML reports of runs and sweeps anew"]),
        ("lander.serve", ["usage: python -m lander.serve", "The experiment service: a dashboard and REST API"]),
    ],
)
def test_every_entry_point_has_help(module: str, expected: list[str]) -> None:
    """Each says what it does in words (compare's said only its own usage, cut at a line's end, in reST's ``); the
    first, ``lander.run``'s, names every command (it left out lander.reproduce and lander.serve)."""
    proc = lander("--help", module=module, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for text in expected:
        assert text in " ".join(proc.stdout.split())
    assert "``" not in proc.stdout
    if module == "lander.run":
        commands = {p.stem for p in (REPO / "lander").glob("*.py") if '__name__ == "__main__"' in p.read_text()}
        assert commands == {"run", "evaluate", "compare", "report", "reproduce", "serve"}
        assert {c for c in commands if f"python -m lander.{c} " not in proc.stdout} == set()


def test_a_typo_is_named_with_the_key_meant_and_leaves_no_directory(tmp_path: Path) -> None:
    proc = lander("total_timestep=3000", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and "Did you mean 'total_timesteps'?" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr and not list(tmp_path.iterdir())  # no outputs/ either


def test_the_real_budget_is_said_and_counted_and_can_be_rounded_down(tmp_path: Path) -> None:
    up = run_lander(tmp_path / "up", *TINY, "total_timesteps=1000", "logger=none", "progress_bar=true")
    assert up.returncode == 0, up.stderr[-3000:]
    said = "budget: total_timesteps=1000 becomes 1024 steps: PPO collects whole rollouts of 2 envs x 256 steps"
    assert said in up.stdout + up.stderr and "1,024/1,024" in up.stdout + up.stderr  # the bar counts to 1,024
    evals = pd.read_csv(tmp_path / "up/metrics/eval.csv")["timesteps"].tolist()
    assert evals == [512, 1000, 1024]  # 1000: the policy in effect at the budget (rollouts overshoot it)
    summary = read_json(tmp_path / "up/summary.json")  # the dashboard's progress counts to planned_timesteps (it
    assert (summary["total_timesteps"], summary["planned_timesteps"]) == (1000, 1024)  # was full at 1,000 of 1,024)
    down = run_lander(tmp_path / "down", *TINY, "total_timesteps=1000", "logger=none", "budget_rounding=down")
    assert down.returncode == 0, down.stderr[-3000:]
    assert read_json(tmp_path / "down/summary.json")["timesteps"] == 512  # one whole rollout within 1000
    assert read_json(tmp_path / "down/summary.json")["planned_timesteps"] == 512
    assert pd.read_csv(tmp_path / "down/metrics/eval.csv")["timesteps"].tolist() == [512]


@pytest.mark.parametrize(
    ("module", "fault", "said"),
    [
        ("lander.compare", "write:left_out.json", "lander.compare: interrupted: {out} holds the files written"),
        ("lander.report", "write:report.html@2", "lander.report: interrupted: the reports listed above are"),
    ],
)
def test_ctrl_c_on_compare_or_report_is_one_line(tmp_path: Path, module: str, fault: str, said: str) -> None:
    """SIGINT while a comparison or the reports are written (here as a file is written, the fault point of its
    atomic write): exit 130 and one line, no traceback (before: Python's KeyboardInterrupt traceback); every file
    is whole, none left half-written or as a temporary file."""
    for seed in range(2):
        for config in ("algo=ppo", "algo=a2c"):
            fake_run(tmp_path / "sweep", f"{config[5:]}{seed}", [config], seed, {1000: 10.0 + seed})
    stopped = lander(str(tmp_path / "sweep"), module=module, env=lander_env(LANDER_FAULT=f"{fault}:INT"))
    assert stopped.returncode == 130 and "Traceback" not in stopped.stderr, stopped.stderr[-3000:]
    assert said.format(out=tmp_path / "sweep" / "comparison") in stopped.stderr, stopped.stderr[-3000:]
    assert not [p for p in (tmp_path / "sweep").rglob("*") if ".tmp" in p.name]  # atomic_write's temporary files


def ppo_a2c_sweep(sweep: Path) -> Path:
    """``sweep``: two seeds each of ``algo=ppo`` and ``algo=a2c``, finished (fake runs, no training)."""
    for seed in range(2):
        for config in ("algo=ppo", "algo=a2c"):
            fake_run(sweep, f"{config[5:]}{seed}", [config], seed, {1000: 10.0 + seed})
    return sweep


def test_ctrl_c_on_compare_names_what_it_wrote_and_what_an_earlier_comparison_left(tmp_path: Path) -> None:
    """SIGINT before a comparison's first file is whole: it says it wrote none, and the directory it made is gone
    (before: "<out> holds the files written so far" of a directory holding nothing). SIGINT while a sweep's
    comparison is written again: the files written now are named, and the earlier comparison's left beside them
    (before: all of them passed for the new comparison's files)."""
    out = ppo_a2c_sweep(tmp_path / "sweep") / "comparison"

    def compare(fault: str | None = None) -> str:
        proc = lander(str(tmp_path / "sweep"), module="lander.compare", env=lander_env(LANDER_FAULT=fault or ""))
        assert proc.returncode == (130 if fault else 0) and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        return proc.stderr

    said = compare("write:learning_curves_lunar.png:INT")
    assert "lander.compare: interrupted before it wrote a file\n" in said and not out.exists(), said[-3000:]
    compare()
    said = compare("write:report.md:INT")  # after the plots, table.csv and table.md
    new = "final_scores_lunar.png, learning_curves_lunar.png, performance_profile_lunar.png, table.csv, table.md"
    assert (
        f"lander.compare: interrupted: {out} holds the files written so far, each whole ({new}), beside the earlier "
        "comparison's left_out.json, report.html, report.md: compare again for a whole one\n"
    ) in said, said[-3000:]


def test_reports_of_a_sweep_interrupted_are_listed_as_they_are_written(tmp_path: Path) -> None:
    """SIGINT as a sweep's second run report is written: the first, whole, is listed above the line that says "the
    reports listed above are written" (before: a sweep's reports were listed once all were written, so none was)."""
    for seed in range(2):
        fake_run(tmp_path / "sweep", f"ppo{seed}", ["algo=ppo"], seed, {1000: 10.0 + seed})
    stopped = lander(
        str(tmp_path / "sweep"), module="lander.report", env=lander_env(LANDER_FAULT="write:report.html@2:INT")
    )
    assert stopped.returncode == 130 and "the reports listed above are written" in stopped.stderr, stopped.stderr
    (listed,) = stopped.stdout.split()
    assert Path(listed).name == "report.html" and Path(listed).parent.parent == tmp_path / "sweep"
    assert Path(listed).read_text().rstrip().endswith("</html>")
    assert sorted(p.parent.name for p in (tmp_path / "sweep").rglob("report.html")) == [Path(listed).parent.name]


def test_ctrl_c_on_a_sweeps_reports_names_what_its_comparison_wrote(tmp_path: Path) -> None:
    """SIGINT while ``lander.report`` writes a sweep's comparison says what ``lander.compare`` says of it (before: only
    "the reports listed above are written", with the earlier comparison's report.html beside the new tables, or an
    empty comparison/ left behind)."""
    out = ppo_a2c_sweep(tmp_path / "sweep") / "comparison"

    def report(fault: str) -> str:
        proc = lander(str(tmp_path / "sweep"), module="lander.report", env=lander_env(LANDER_FAULT=fault))
        assert proc.returncode == (130 if fault else 0) and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        return proc.stderr

    listed = "the reports listed above are written, each whole\n"
    said = report("write:learning_curves_lunar.png:INT")
    assert f"lander.report: interrupted before it wrote a file; {listed}" in said and not out.exists(), said[-3000:]
    report("")
    said = report("write:report.md:INT")  # after the plots, table.csv and table.md
    new = "final_scores_lunar.png, learning_curves_lunar.png, performance_profile_lunar.png, table.csv, table.md"
    assert (
        f"lander.report: interrupted: {out} holds the files written so far, each whole ({new}), beside the earlier "
        f"comparison's left_out.json, report.html, report.md: compare again for a whole one; {listed}"
    ) in said, said[-3000:]


def test_ctrl_c_prints_one_block_keeps_a_curve_and_the_checkpoint_can_be_evaluated(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    cmd = [
        *TINY,
        "total_timesteps=1000000",
        "logger=none",
        "progress_bar=true",
        "checkpoint_freq=1024",
        f"hydra.run.dir={run_dir}",
    ]
    proc = start_lander(*cmd, merged=True)
    deadline = time.monotonic() + 240
    while not list((run_dir / "checkpoints").glob("model_*_steps.zip")) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    output = proc.stdout
    assert proc.returncode == 130, output[-3000:]
    assert "Traceback" not in output and "interrupted by SIGINT at" in output
    assert f"continue: python -m lander.run resume={run_dir}" in output
    assert output.rindex("it/s") < output.index("interrupted by SIGINT")  # the bar was closed first
    assert (run_dir / "learning_curve.png").stat().st_size > 10_000 and not (run_dir / "model.zip").exists()
    evaluate = lander(f"run={run_dir}", "n_episodes=2", module="lander.evaluate", timeout=300)
    assert evaluate.returncode == 0, evaluate.stderr
    assert "has no model.zip (the run stopped before its end): evaluating its newest checkpoint" in evaluate.stderr
    (record,) = (run_dir / "evaluations").glob("*.json")
    assert read_json(record)["model"].startswith("checkpoints/model_")


@pytest.mark.slow  # kept out of the default suite for its time (docs/development.md)
def test_a_finished_run_is_trained_further_in_the_same_wandb_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = run_lander(run_dir, *TINY, "total_timesteps=1024", "logger=wandb")
    assert first.returncode == 0, first.stderr[-3000:]
    output = first.stdout + first.stderr
    last = output.rstrip().splitlines()
    assert last[-1] == f"  W&B upload: cd {run_dir} && wandb sync wandb/offline-run-*"  # after W&B's own lines
    assert last[-2] == f"  report: {run_dir / 'report.html'}" and last[-3].startswith("  files: model.zip, eval.json")
    assert "done: ppo on LunarLander-v3, seed 0: 1,024 steps" in output and "final evaluation:" in output
    again = lander(f"resume={run_dir}", timeout=120)
    assert again.returncode == 2 and "to train it further, give a larger budget" in again.stderr + again.stdout
    further = lander(f"resume={run_dir}", "total_timesteps=2048", timeout=300)
    assert further.returncode == 0, further.stderr[-3000:]
    summary = read_json(run_dir / "summary.json")
    assert (summary["status"], summary["timesteps"], summary["resumed_at"]) == ("completed", 2048, [1024])
    assert pd.read_csv(run_dir / "metrics/eval.csv")["timesteps"].tolist() == [512, 1024, 1536, 2048]
    assert read_json(run_dir / "eval.json")["timesteps"] == 2048
    parts = read_runs(run_dir)
    assert len(parts) == 2 and {p["id"] for p in parts} == {summary["wandb_run_id"]}
    assert max(row["global_step"] for row in parts[1]["history"] if "global_step" in row) == 2048


def test_a_long_run_says_how_long_it_will_take(caplog: pytest.LogCaptureFixture) -> None:
    from stable_baselines3 import PPO

    from lander.training.budget import DurationForecast

    model = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
    with caplog.at_level("WARNING", logger="lander.training.budget"):
        model.learn(128, callback=DurationForecast(end=10**9, after=0.0, threshold=1.0))
    (message,) = [r.getMessage() for r in caplog.records]
    assert message.startswith("at ") and "steps/s so far, training to 1000000000 steps takes about " in message
    caplog.clear()
    with caplog.at_level("WARNING", logger="lander.training.budget"):  # a short run says nothing
        model.learn(128, callback=DurationForecast(end=256, after=0.0))
    assert not caplog.records


def held_names(root: Path, name: str, seconds: int = 120) -> list[tuple[Path, RunLock]]:
    """Every directory ``root/<date>/<time><name>`` a command started in the next ``seconds`` would be given by
    default, made and held as another process's run or sweep (its config, its lock)."""
    held, start = [], datetime.now()
    for second in range(seconds):
        moment = start + timedelta(seconds=second)
        directory = root / moment.strftime("%Y-%m-%d") / f"{moment.strftime('%H-%M-%S')}{name}"
        (directory / ".hydra").mkdir(parents=True)
        (directory / ".hydra" / "config.yaml").write_text("gamma: 0.5\n")
        (directory / "multirun.yaml").write_text("hydra: {overrides: {task: [gamma=0.5]}}\n")
        lock = SweepLock(directory) if not name else RunLock(directory)
        held.append((directory, lock.acquire()))
    return held


def own_directory(root: Path, held: list[tuple[Path, RunLock]]) -> Path:
    """The directory the command made beside the ``held`` ones: its name with ``-2`` where that name was held (the
    command started within the held seconds, as on any machine not stalled for minutes), else the name itself."""
    taken = {directory for directory, _ in held}
    (made,) = [p for p in root.glob("*/*") if p not in taken]
    assert made.name.endswith("-2") == (made.with_name(made.name.removesuffix("-2")) in taken), made
    return made


def test_runs_started_in_the_same_second_get_a_directory_each(tmp_path: Path) -> None:
    """``for g in 0.99 0.9; do python -m lander.run gamma=$g & done``: both runs were given one directory (its name
    is the second, the algorithm, the env and the seed), the second's Hydra wrote its config over the first's, and
    the second, refused ("in use"), removed the first's ``.hydra/`` and ``run.log`` as its own unstarted files:
    the first trained on with no config, neither resumable nor comparable. Now a run claims its directory: the
    name, or ``-2``, ``-3``, ... after it where another command took it."""
    held = held_names(tmp_path / "outputs", "_ppo_lunar_lander_seed-0")
    proc = lander(*tiny("ppo", 256), "gamma=0.9", cwd=tmp_path, timeout=300)
    for directory, lock in held:
        assert (directory / ".hydra" / "config.yaml").read_text() == "gamma: 0.5\n", directory
        assert sorted(p.name for p in directory.iterdir()) == [".hydra", ".lander.storage.lock", "multirun.yaml"]
        lock.release()
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = own_directory(tmp_path / "outputs", held)
    assert read_json(run / "summary.json")["status"] == "completed"
    assert "\ngamma: 0.9\n" in (run / ".hydra" / "config.yaml").read_text()


def test_sweeps_started_in_the_same_second_get_a_directory_each(tmp_path: Path) -> None:
    """Two sweeps started in the same second (a shell loop over algorithms): the second was refused, "in use by
    process ..., which runs this sweep ... then run the same command to complete the sweep", which was another
    sweep. Now a sweep claims its directory as a run does: its jobs and comparison go to ``<time>-2``."""
    held = held_names(tmp_path / "multirun", "")
    proc = lander("--multirun", "seed=0,1", *tiny("ppo", 256), cwd=tmp_path, timeout=300)
    for directory, lock in held:
        assert sorted(p.name for p in directory.iterdir()) == [".hydra", ".lander.sweep.lock", "multirun.yaml"]
        lock.release()
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = own_directory(tmp_path / "multirun", held)
    assert (sweep / "comparison" / "table.csv").is_file() and {p.name for p in sweep.glob("[0-9]")} == {"0", "1"}
