"""Hostile and bad input: planted pickles, zip bombs and malformed model files, out-of-range values, edited
configs, odd paths, an unreachable W&B server. Each ends in one clear line, a non-zero exit, and no change."""

from __future__ import annotations

import json
import os
import pickle
import resource
import shutil
import signal
import subprocess
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from helpers import lander, lander_env, read_json, run_lander, start_lander, tiny

RUN = tiny("ppo", 512, n_steps=128, eval_every=256, episodes=2, checkpoints=256, video=False)


class Payload:
    """Unpickling this creates the file named: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def snapshot(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory) -> Path:
    """A run stopped by SIGTERM after its first checkpoint, with its replay buffer (DQN)."""
    run_dir = tmp_path_factory.mktemp("stopped") / "run"
    proc = run_lander(
        run_dir,
        *tiny("dqn", 600, eval_every=300, episodes=2, checkpoints=200, video=False),
        "algo.model.learning_starts=100",
        "algo.model.buffer_size=2000",
        "checkpoint_replay_buffer=true",
        env=lander_env(LANDER_FAULT="write:model_@2:TERM"),
    )
    assert proc.returncode == 143, proc.stderr[-3000:]
    return run_dir


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    assert run_lander(run_dir, *RUN).returncode == 0
    return run_dir


def test_a_planted_replay_buffer_pickle_is_never_loaded(stopped_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(stopped_run, run_dir)
    marker = tmp_path / "pwned"
    for npz in (run_dir / "checkpoints").glob("replay_buffer_*.npz"):  # the old format's name, beside each
        npz.with_suffix(".pkl").write_bytes(pickle.dumps(Payload(marker)))
    proc = lander(f"resume={run_dir}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not marker.exists()
    assert read_json(run_dir / "summary.json")["status"] == "completed"


@pytest.mark.parametrize("kind", ["symlink to /dev/zero", "fifo", "fifo replay buffer"])
def test_a_checkpoint_that_is_no_regular_file_is_passed_over_without_reading_it(stopped_run, tmp_path, kind):
    """A newest "checkpoint" that is a symlink to /dev/zero (read until memory ran out) or a FIFO (opening it waits
    forever): resume names it, passes over it to the real newest checkpoint and ends at the budget, in seconds."""
    run_dir = tmp_path / "run"
    shutil.copytree(stopped_run, run_dir)
    planted = run_dir / "checkpoints" / "model_99999_steps.zip"
    replay = run_dir / "checkpoints" / "replay_buffer_99999_steps.npz"
    if kind == "fifo replay buffer":  # the newest real checkpoint's buffer
        planted = max((run_dir / "checkpoints").glob("model_*_steps.zip"), key=lambda p: int(p.name.split("_")[1]))
        replay = planted.with_name(planted.name.replace("model_", "replay_buffer_").replace(".zip", ".npz"))
        replay.unlink()
        os.mkfifo(replay)
    elif kind == "fifo":
        os.mkfifo(planted)
        os.mkfifo(replay)
    else:
        planted.symlink_to("/dev/zero")
        replay.symlink_to("/dev/zero")
    proc = lander(f"resume={run_dir}", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    output = proc.stdout + proc.stderr + (run_dir / "run.log").read_text()
    assert f"checkpoint {planted.name} not used" in output and ("FIFO" if "fifo" in kind else "a symlink") in output
    assert read_json(run_dir / "summary.json")["status"] == "completed"


def test_a_replay_buffer_holding_objects_stops_resume_and_changes_nothing(stopped_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(stopped_run, run_dir)
    for npz in (run_dir / "checkpoints").glob("replay_buffer_*.npz"):
        with npz.open("wb") as handle:  # an object array: loading it would unpickle
            np.savez(handle, meta=np.array([Payload(tmp_path / "pwned")], dtype=object))
    before = snapshot(run_dir)
    proc = lander(f"resume={run_dir}")
    assert proc.returncode == 1
    output = proc.stdout + proc.stderr
    error = [line for line in output.splitlines() if "cannot continue" in line]
    assert len(error) == 1 and "replay_buffer_" in error[0] and "Traceback" not in output, output[-3000:]
    assert not (tmp_path / "pwned").exists()
    bookkeeping = (".log", ".lander.storage.lock")  # its log line, and the lock it held while it checked
    after = snapshot(run_dir)
    assert {k: v for k, v in after.items() if not k.endswith(bookkeeping)} == {
        k: v for k, v in before.items() if not k.endswith(bookkeeping)
    }


def rewrite_zip(source: Path, target: Path, replace: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as new:
        for item in old.infolist():
            new.writestr(item.filename, replace.get(item.filename, old.read(item.filename)))
    return target


def evaluate(run_dir: Path, model: str) -> subprocess.CompletedProcess:
    return lander(f"run={run_dir}", f"model={model}", "n_episodes=2", module="lander.evaluate", timeout=300)


@pytest.mark.parametrize(
    ("planted", "code", "said"),
    [
        ({"policy_kwargs": {"net_arch": [12000, 12000]}}, 0, "mean"),  # 3.1 GB of networks before: now the config's
        ({"n_steps": 10**12}, 0, "mean"),  # a rollout buffer of 10**12 rows: MemoryError before
        ({"num_timesteps": "abc"}, 1, "num_timesteps='abc' in its data, not a count"),
    ],
    ids=["net_arch", "n_steps", "num_timesteps"],
)
def test_a_models_sizes_come_from_the_run_config_never_from_the_file(finished_run, tmp_path, planted, code, said):
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    with zipfile.ZipFile(finished_run / "model.zip") as archive:
        data = json.loads(archive.read("data"))
    rewrite_zip(finished_run / "model.zip", run_dir / "model.zip", {"data": json.dumps(data | planted).encode()})
    proc = evaluate(run_dir, "model.zip")
    assert proc.returncode == code and said in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr


def test_a_zip_bomb_is_refused_without_inflating_it(finished_run, tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(finished_run / "model.zip") as old, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as new:
        for item in old.infolist():
            if item.filename != "data":
                new.writestr(item.filename, old.read(item.filename))
        with new.open("data", "w") as handle:  # 300 MiB of zeros, about 300 kB compressed
            for _ in range(300):
                handle.write(bytes(2**20))
    shutil.copy(bomb, finished_run / "bomb.zip")
    proc = evaluate(finished_run, "bomb.zip")
    assert proc.returncode == 1 and "would inflate to" in proc.stderr and "Traceback" not in proc.stderr
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 1_000_000  # KiB: nothing near 300 MiB + copies


@pytest.mark.parametrize(
    "entry, content, message",
    [
        ("policy.pth", pickle.dumps(Payload(Path("/tmp/lander-pwned-by-pth"))), "objects other than tensors"),
        ("data", b"[1, 2, 3]", "is a JSON list"),
        ("data", b"{not json", "not a readable SB3 model file"),
        ("evil.py", b"import os", "not part of an SB3 model"),
    ],
)
def test_a_malformed_or_hostile_model_file_is_one_clear_error(finished_run, tmp_path, entry, content, message):
    Path("/tmp/lander-pwned-by-pth").unlink(missing_ok=True)
    name = f"bad_{entry.replace('.', '_')}_{abs(hash(content))}.zip"
    rewrite_zip(finished_run / "model.zip", finished_run / name, {entry: content})
    if entry == "evil.py":
        with zipfile.ZipFile(finished_run / name, "a") as archive:
            archive.writestr("evil.py", content)
    proc = evaluate(finished_run, name)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert message in proc.stderr and "Traceback" not in proc.stderr and "weights_only=False" not in proc.stderr
    assert not Path("/tmp/lander-pwned-by-pth").exists()
    assert not list((finished_run / "evaluations").glob(f"{Path(name).stem}*"))


@pytest.mark.parametrize(
    "override, key",
    [
        ("seed=-1", "seed"),
        ("eval.seed=-1", "eval.seed"),
        ("video.seed=-1", "video.seed"),
        ("video.fps=0", "video.fps"),
        ("video.fps=-5", "video.fps"),
        ("algo.model.n_steps=0", "algo.model.n_steps"),
        ("algo.model.batch_size=0", "algo.model.batch_size"),
        ("algo.model.learning_rate=-1", "algo.model.learning_rate"),
        ("device=cuda:7", "device"),
    ],
)
def test_an_out_of_range_value_is_refused_before_any_directory_exists(tmp_path, override, key):
    run_dir = tmp_path / "run"
    proc = run_lander(run_dir, override, timeout=120)
    assert proc.returncode == 2 and f"{key}=" in proc.stderr and "must be" in proc.stderr, proc.stderr[-2000:]
    assert not run_dir.exists()


def test_a_folder_of_other_files_is_refused_as_a_run_or_sweep_directory_and_left_as_it_was(tmp_path):
    """``hydra.run.dir=/etc``, found by hand: the first command wrote a run among /etc's files and failed on its
    ``environment`` file; the same command again took that for a failed attempt and moved all of /etc into
    ``/etc/attempts/1/``. A folder of other files shaped like it (a file named ``environment``, a folder, a dotfile)
    is refused as ``hydra.run.dir`` and as ``hydra.sweep.dir``, twice in a row: one line, exit 2, the folder exactly
    as it was."""
    folder = tmp_path / "etc"
    (folder / "ssh").mkdir(parents=True)
    (folder / "ssh" / "ssh_config").write_text("Host *\n")
    (folder / "environment").write_text("")
    (folder / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (folder / ".pwd.lock").write_text("")
    listing, before = sorted(folder.rglob("*")), snapshot(folder)
    commands = {  # what each names: a file named environment is one a run writes (a folder, there), not a sweep
        "hydra.run.dir": ([*RUN, f"hydra.run.dir={folder}"], ".pwd.lock, passwd, ssh"),
        "hydra.sweep.dir": (
            ["--multirun", *RUN, "seed=0,1", f"hydra.sweep.dir={folder}"],
            ".pwd.lock, environment, passwd and 1 more",
        ),
    }
    for _ in range(2):
        for key, (command, named) in commands.items():
            proc = lander(*command, timeout=120)
            assert proc.returncode == 2, proc.stderr[-3000:]
            assert f"{key}={folder} holds files of its own ({named}) and is not a lander" in proc.stderr
            assert "Traceback" not in proc.stderr
            assert sorted(folder.rglob("*")) == listing and snapshot(folder) == before


def test_another_command_into_a_runs_directory_is_refused_and_the_run_keeps_its_config(finished_run, tmp_path):
    """``hydra.run.dir=<a completed run>`` with other overrides: before, the run was "already completed, skipped"
    (exit 0) after Hydra had written the new command's config over the run's, so the run's record named a
    configuration it never trained. Now it is refused in one line, exit 2, every file as it was; the run's own
    command (its overrides in another order) still finds it completed."""
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    before = snapshot(run)
    proc = lander(*RUN, "seed=7", f"hydra.run.dir={run}", timeout=120)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert f"hydra.run.dir={run} holds a run of other overrides (" in proc.stderr and "now: " in proc.stderr
    assert "Traceback" not in proc.stderr and snapshot(run) == before
    proc = lander(*reversed(RUN), f"hydra.run.dir={run}", timeout=120)
    assert proc.returncode == 0 and "already completed, skipped" in proc.stdout + proc.stderr, proc.stderr[-3000:]
    for name in (".hydra/config.yaml", "summary.json", "model.zip"):
        assert (run / name).read_bytes() == before[name], name
    assert sorted((run / ".hydra/overrides.yaml").read_text().splitlines()) == sorted(
        before[".hydra/overrides.yaml"].decode().splitlines()
    )  # Hydra writes them in the order given


def test_a_bad_sweep_value_or_launcher_setting_is_refused_before_the_sweep_starts(tmp_path):
    for args, key in ((["seed=0,-1"], "seed"), (["seed=0,1", "hydra.launcher.n_jobs=0"], "hydra.launcher.n_jobs")):
        proc = lander("--multirun", *args, f"hydra.sweep.dir={tmp_path / 'sweep'}", timeout=120)
        assert proc.returncode == 2 and f"{key}=" in proc.stderr, proc.stderr[-2000:]
        assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize(
    "edit, message",
    [("surprise: 1\n", "surprise"), ("seed: abc\n", "seed"), ("eval:\n  episodes: 0\n", "eval.episodes")],
)
def test_an_edited_saved_config_is_validated_on_resume(stopped_run, tmp_path, edit, message):
    run_dir = tmp_path / "run"
    shutil.copytree(stopped_run, run_dir)
    config = run_dir / ".hydra/config.yaml"
    import yaml

    saved = yaml.safe_load(config.read_text())
    saved |= yaml.safe_load(edit) if "eval" not in edit else {"eval": saved["eval"] | {"episodes": 0}}
    config.write_text(yaml.safe_dump(saved))
    before = (run_dir / "summary.json").read_bytes()
    proc = lander(f"resume={run_dir}", timeout=120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2 and message in output and "Traceback" not in output, output[-2000:]
    assert (run_dir / "summary.json").read_bytes() == before


def test_a_copied_runs_config_runs_no_code_on_resume(stopped_run, tmp_path):
    """``resume=`` of a run from elsewhere builds what its saved config names, as ``lander.evaluate`` and
    ``lander.reproduce`` do: a wrapper whose argument is a ``_target_`` Hydra instantiates first (``shutil.copyfile``
    passes Hydra 1.3.8's blocklist) wrote over any file of yours (before: the file was written by the run's checks,
    then "invalid configuration"). Refused in one line naming the key and how to allow it, the run unchanged; an
    allowed prefix (a wrapper of your own) resumes."""
    import yaml

    run_dir = tmp_path / "copied"
    shutil.copytree(stopped_run, run_dir)
    marker = tmp_path / "written"
    config = yaml.safe_load((run_dir / ".hydra/config.yaml").read_text())
    copy = {"_target_": "shutil.copyfile", "src": str(run_dir / "run.log"), "dst": str(marker)}
    config["env"]["wrappers"] = [{"_target_": "gymnasium.wrappers.TimeLimit", "max_episode_steps": copy}]
    (run_dir / ".hydra/config.yaml").write_text(yaml.safe_dump(config))
    before = snapshot(run_dir)
    proc = lander(f"resume={run_dir}", timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert ".hydra/config.yaml: env.wrappers.0 imports 'gymnasium.wrappers.TimeLimit'" in proc.stderr
    assert "allow it with allow_target=[gymnasium.wrappers.TimeLimit]" in proc.stderr
    proc = lander(f"resume={run_dir}", "allow_target=[gymnasium.wrappers.TimeLimit]", timeout=120)
    assert proc.returncode == 2 and "env.wrappers.0.max_episode_steps imports 'shutil.copyfile'" in proc.stderr
    assert not marker.exists() and snapshot(run_dir) == before
    config["env"]["wrappers"] = [{"_target_": "gymnasium.wrappers.TimeLimit", "max_episode_steps": 1000}]
    (run_dir / ".hydra/config.yaml").write_text(yaml.safe_dump(config))
    proc = lander(f"resume={run_dir}", "allow_target=[gymnasium.wrappers]", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_json(run_dir / "summary.json")["status"] == "completed"


def test_a_run_directory_with_any_characters_resumes(stopped_run, tmp_path):
    run_dir = tmp_path / "a,b 'c' \"d\" [e] {f} =g 😀"
    shutil.copytree(stopped_run, run_dir)
    proc = lander(f"resume={run_dir}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_json(run_dir / "summary.json")["status"] == "completed"


def test_online_wandb_that_cannot_be_reached_fails_in_seconds_or_falls_back(tmp_path):
    unreachable = lander_env(WANDB_API_KEY="x" * 40, WANDB_BASE_URL="http://127.0.0.1:9")
    proc = run_lander(tmp_path / "run", *RUN, "logger=wandb", "logger.wandb.mode=online", env=unreachable, timeout=60)
    assert proc.returncode == 2 and "cannot be reached" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists()
    run_dir = tmp_path / "fallback"
    proc = run_lander(
        run_dir,
        *RUN,
        "logger=wandb",
        "logger.wandb.mode=online",
        "logger.wandb.offline_fallback=true",
        env=unreachable,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "logging offline instead" in (run_dir / "run.log").read_text()
    assert list((run_dir / "wandb").glob("offline-run-*"))


def test_sigint_to_a_sweep_stops_every_job_once_with_a_checkpoint(tmp_path):
    sweep = tmp_path / "sweep"
    cmd = [
        "--multirun",
        "seed=0,1",
        *RUN,
        "total_timesteps=100000",
        "hydra/launcher=basic",
        f"hydra.sweep.dir={sweep}",
    ]
    proc = start_lander(*cmd, session=True)
    deadline = time.monotonic() + 120
    while not list((sweep / "0/checkpoints").glob("model_*.zip")):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the launcher and the job both get it
    assert proc.wait(timeout=120) == 130
    summary = json.loads((sweep / "0/summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["error"] == "Interrupted: SIGINT"
    assert not (sweep / "1").exists()
    said = proc.stdout + proc.stderr  # how to go on: the same command into the same sweep directory
    assert "continue: python -m lander.run --multirun seed=0,1" in said and f"hydra.sweep.dir={sweep}" in said
