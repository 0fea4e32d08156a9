"""``python -m lander.evaluate`` and safe loading: saved models re-evaluated, unsafe files refused."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import signal
import subprocess
import time
import zipfile
from pathlib import Path

import cloudpickle
import imageio.v3 as iio
import pytest
import yaml

from helpers import lander, read_json, start_lander, tiny_run


def evaluate(*args: str) -> subprocess.CompletedProcess:
    return lander(*args, module="lander.evaluate")


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("eval_cli") / "run"
    tiny_run(run_dir, "ppo", "logger=none")
    return run_dir


def digest(run_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in run_dir.rglob("*")
        if p.is_file() and "evaluations" not in p.parts
    }


def test_evaluate_a_run_writes_beside_it_and_touches_nothing(ppo_run):
    before = digest(ppo_run)
    proc = evaluate(f"run={ppo_run}", "n_episodes=4", "video=true", "deterministic=false", "n_envs=2")
    assert proc.returncode == 0, proc.stderr
    assert digest(ppo_run) == before  # the run's own results are untouched
    out = ppo_run / "evaluations" / "model_4ep_stochastic_seed-1000000.json"
    record = read_json(out)
    assert record["n"] == 4 and [e["seed"] for e in record["episodes"]] == [1000000, 1000001, 1000002, 1000003]
    assert record["deterministic"] is False and record["timesteps"] > 0
    assert iio.imread(out.with_suffix(".mp4"), index=None).shape[0] == record["video"]["frames"] > 1
    # deterministic on the run's eval seeds reproduces the run's own final evaluation
    proc = evaluate(f"run={ppo_run}", "n_episodes=3")
    assert proc.returncode == 0, proc.stderr
    again = read_json(ppo_run / "evaluations" / "model_3ep_deterministic_seed-1000000.json")
    assert [e["return"] for e in again["episodes"]] == [
        e["return"] for e in read_json(ppo_run / "eval.json")["episodes"]
    ]


def test_bad_arguments_are_named(ppo_run, tmp_path):
    proc = evaluate(f"run={ppo_run}", "n_episodes=zero")
    assert proc.returncode == 2 and "n_episodes" in proc.stderr
    proc = evaluate(f"run={ppo_run}", "episodes=3")
    assert proc.returncode == 2 and "episodes" in proc.stderr
    proc = evaluate(f"run={tmp_path}")
    assert proc.returncode == 2 and "holds no lander run" in proc.stderr
    proc = evaluate(f"run={ppo_run},{tmp_path}")  # two runs: Hydra's advice was --multirun, which evaluate refuses
    said = "lander.evaluate takes one value a key (a sweep directory as run= evaluates every job in it"
    assert proc.returncode == 2 and said in proc.stderr and "--multirun" not in proc.stderr, proc.stderr


def test_an_output_name_stays_inside_the_run(ppo_run, tmp_path):
    """``name=`` names a file under ``<run>/evaluations/``: a path there would overwrite the run's own files or
    write anywhere; a name too long for a file was a traceback once the evaluation had run."""
    before = digest(ppo_run)
    outside = tmp_path / "x"
    for name in ("../summary", f"../../../{outside.name}", str(outside), ".hidden", "a/b", "a" * 300):
        proc = evaluate(f"run={ppo_run}", f"name={name}", "n_episodes=1")
        assert proc.returncode == 2 and "name=" in proc.stderr, (name, proc.stderr[-1000:])
    assert digest(ppo_run) == before and not list(tmp_path.glob("x*"))
    assert not list((ppo_run / "evaluations").glob("*summary*"))


def test_truncated_zip_is_a_clear_error(ppo_run, tmp_path):
    broken = tmp_path / "broken.zip"
    broken.write_bytes((ppo_run / "model.zip").read_bytes()[:300])
    proc = evaluate(f"run={ppo_run}", f"model={broken}", "n_episodes=1")
    assert proc.returncode == 1 and "is not a readable SB3 model file" in proc.stderr


def test_model_that_does_not_fit_the_env_is_a_clear_error(ppo_run, tmp_path):
    other = tmp_path / "continuous"
    shutil.copytree(ppo_run, other)
    config = yaml.safe_load((other / ".hydra/config.yaml").read_text())
    config["env"] |= {
        "name": "lunar_lander_continuous",
        "id": "LunarLanderContinuous-v3",
        "action_space": "continuous",
        "kwargs": {"continuous": True},
    }
    (other / ".hydra/config.yaml").write_text(yaml.safe_dump(config))
    proc = evaluate(f"run={other}", "n_episodes=1")
    assert proc.returncode == 1 and "does not fit LunarLanderContinuous-v3" in proc.stderr


class Payload:
    """Unpickling this creates a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def with_payload(source: Path, target: Path, key: str, marker: Path) -> Path:
    """A copy of ``source`` whose ``data`` entry ``key`` is a pickle that would create ``marker``."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
        for item in zin.infolist():
            content = zin.read(item.filename)
            if item.filename == "data":
                data = json.loads(content)
                data[key] = {
                    ":type:": "<class 'Payload'>",
                    ":serialized:": base64.b64encode(cloudpickle.dumps(Payload(marker))).decode(),
                }
                content = json.dumps(data).encode()
            zout.writestr(item, content)
    return target


def test_a_pickled_payload_never_runs(ppo_run, tmp_path):
    marker = tmp_path / "pwned"
    unknown = with_payload(ppo_run / "model.zip", tmp_path / "unknown_key.zip", "surprise", marker)
    proc = evaluate(f"run={ppo_run}", f"model={unknown}", "n_episodes=1")
    assert proc.returncode == 1 and "refusing to unpickle them" in proc.stderr and "surprise" in proc.stderr
    known = with_payload(ppo_run / "model.zip", tmp_path / "known_key.zip", "observation_space", marker)
    proc = evaluate(f"run={ppo_run}", f"model={known}", "n_episodes=1", "name=known")
    assert proc.returncode == 0, proc.stderr  # the space comes from the run's config; the pickle is never read
    assert not marker.exists()
    # the payload is real: plain SB3 loading would have run it
    from stable_baselines3 import PPO

    with pytest.raises(Exception):  # noqa: B017 - whatever the payload raises after running
        PPO.load(known, device="cpu")
    assert marker.exists()


def test_a_copied_runs_config_runs_no_code_when_its_model_is_evaluated(ppo_run, tmp_path):
    """The model is never unpickled (above), and the config beside it names what is built: a wrapper whose
    argument is a ``_target_`` Hydra instantiates first, here ``shutil.copyfile`` (Hydra 1.3.8's blocklist lets it
    through: any file of yours written over, ``~/.bashrc`` from a file of the run). Refused in one line naming the
    key and how to allow it, as ``lander.reproduce`` refuses it (before: the file was written, then a traceback)."""
    run = tmp_path / "copied"
    shutil.copytree(ppo_run, run, ignore=shutil.ignore_patterns("evaluations"))  # the tests before evaluated it
    marker = tmp_path / "written"
    config = yaml.safe_load((run / ".hydra" / "config.yaml").read_text())
    copy = {"_target_": "shutil.copyfile", "src": str(run / "run.log"), "dst": str(marker)}
    config["env"]["wrappers"] = [{"_target_": "gymnasium.wrappers.TimeLimit", "max_episode_steps": copy}]
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    proc = evaluate(f"run={run}", "n_episodes=1")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert ".hydra/config.yaml: env.wrappers.0 imports 'gymnasium.wrappers.TimeLimit'" in proc.stderr
    assert "allow it with allow_target=[gymnasium.wrappers.TimeLimit]" in proc.stderr
    allowed = evaluate(f"run={run}", "n_episodes=1", "allow_target=[gymnasium.wrappers.TimeLimit]")
    assert allowed.returncode == 2 and "env.wrappers.0.max_episode_steps imports 'shutil.copyfile'" in allowed.stderr
    assert not marker.exists() and not (run / "evaluations").exists()
    config["env"]["wrappers"] = []  # what an evaluation does not build needs no allowing: the run's own callbacks
    config["callbacks"] = {"mine": {"_target_": "my_callbacks.Mine"}}
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    assert evaluate(f"run={run}", "n_episodes=1").returncode == 0


def test_ctrl_c_during_an_evaluation_is_one_line_and_leaves_no_file(ppo_run, tmp_path):
    """Ctrl-C on a long evaluation (here 100,000 episodes): exit 130 and one line, no traceback (before: 40 lines
    of torch's traceback), and no file of the evaluation under way, whole or partial."""
    run = tmp_path / "run"
    shutil.copytree(ppo_run, run, ignore=shutil.ignore_patterns("evaluations"))
    proc = start_lander(f"run={run}", "n_episodes=100000", "video=true", module="lander.evaluate")
    deadline = time.monotonic() + 240
    while "evaluating" not in proc.stderr and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert f"evaluating {run}: model.zip, 100000 episodes" in proc.stderr, proc.stderr[-3000:]
    proc.send_signal(signal.SIGINT)
    done = proc.completed(120)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "lander.evaluate: interrupted" in done.stderr
    assert not (run / "evaluations").exists() or not any((run / "evaluations").iterdir())


def test_a_model_from_outside_the_run_leaves_the_runs_own_evaluation(ppo_run, tmp_path):
    """``model=<another run's model.zip>`` was written as ``<run>/evaluations/model_1ep_...json``, replacing the
    evaluation of the run's own ``model.zip`` on the same episodes (its ``model`` then named the other file). Now one
    line, exit 2, before evaluating; with ``name=`` it is written beside it; the run's own file given by its
    absolute path is the run's own."""
    assert evaluate(f"run={ppo_run}", "n_episodes=1").returncode == 0
    (written,) = (ppo_run / "evaluations").glob("model_1ep_*.json")
    before = written.read_bytes()
    other = tmp_path / "other" / "model.zip"
    other.parent.mkdir()
    shutil.copy(ppo_run / "model.zip", other)
    refused = evaluate(f"run={ppo_run}", f"model={other}", "n_episodes=1")
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert f"would be written to {written}, which holds the evaluation of model.zip: give name=" in refused.stderr
    assert written.read_bytes() == before
    beside = evaluate(f"run={ppo_run}", f"model={other}", "n_episodes=1", "name=other")
    assert beside.returncode == 0 and json.loads((ppo_run / "evaluations/other.json").read_text())["model"] == str(
        other.resolve()
    )
    again = evaluate(f"run={ppo_run}", f"model={ppo_run.resolve() / 'model.zip'}", "n_episodes=1")
    assert again.returncode == 0 and written.read_bytes() == before, again.stderr[-2000:]
