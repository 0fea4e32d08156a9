"""Attacks and faults a new user and an attacker found, each tried in-process on the real code: the service's app
(FastAPI behind its guard, through Starlette's test client: no socket, milliseconds a case), the config checks, the
readers of run files. Every test here failed on the code before its fix."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from hydra.errors import HydraException
from omegaconf import OmegaConf

from helpers import REPO, composed
from lander.api import load_run
from lander.config import catalog
from lander.config.checks import validate
from lander.config.precheck import check_command, hydra_message
from lander.config.schema import load_saved
from lander.errors import ConfigError
from lander.process import signals
from lander.service import store
from lander.service.app import create_app
from lander.service.files import Unreadable, check_contained
from lander.service.launcher import alive
from lander.storage.lock import RunLock, owner_process
from lander.storage.rundir import remove_unstarted
from lander.storage.yamlfile import MAX_NODES, YamlBomb, safe_yaml

PORT = 8765
TOKEN = "t0ken-of-the-test"
# ten levels of ten aliases: 10**10 nodes in 370 bytes (what PyYAML builds as shared references in a millisecond)
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(9)
)


def client(root: Path, max_jobs: int = 100, max_running: int = 1) -> TestClient:
    app = create_app(root, TOKEN, PORT, ["127.0.0.1"], max_running, max_jobs)  # as serve.py: the bound address
    return TestClient(app, base_url=f"http://127.0.0.1:{PORT}", headers={"Authorization": f"Bearer {TOKEN}"})


def answered_within(seconds: float, call):
    """``call()``'s result (or its exception) if it ends within ``seconds`` (in a thread: one that spins is left)."""
    found: list = []

    def attempt() -> None:
        try:
            found.append((call(), None))
        except Exception as exc:
            found.append((None, exc))

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(seconds)
    assert found, f"no answer within {seconds} s"
    result, error = found[0]
    if error is not None:
        raise error
    return result


def planted_run(root: Path, name: str = "run", status: str = "interrupted") -> Path:
    run = root / "outputs" / name
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text(OmegaConf.to_yaml(composed("algo=ppo")))
    (run / ".hydra" / "overrides.yaml").write_text("- algo=ppo\n")
    (run / "summary.json").write_text(json.dumps({"status": status, "algo": "ppo", "timesteps": 0}))
    return run


def test_a_yaml_alias_bomb_is_one_line_wherever_lander_reads_yaml(tmp_path):
    """A 370-byte file standing for 10**10 nodes: refused by its count, in a run's files, a saved config, a preset;
    the service answers about such a run (before: a 4 GiB allocation killed it, or a thread spun forever)."""
    with pytest.raises(YamlBomb, match=f"expand past {MAX_NODES:,} nodes"):
        answered_within(10, lambda: safe_yaml(BOMB, "x.yaml"))
    assert safe_yaml("a: &x {b: 1}\nc: *x\n", "ok.yaml") == {
        "a": {"b": 1},
        "c": {"b": 1},
    }  # aliases themselves are fine
    (tmp_path / "bomb.yaml").write_text(BOMB)
    with pytest.raises(ConfigError, match="expand past"):
        answered_within(10, lambda: load_saved(tmp_path / "bomb.yaml"))
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "bomb.yaml").write_text(BOMB)
    listed = answered_within(10, lambda: catalog.presets(tmp_path / "conf"))
    assert "expand past" in next(p for p in listed if p["name"] == "bomb")["error"]
    for name in ("overrides.yaml", "config.yaml"):
        run = planted_run(tmp_path, f"bomb-{name}")
        (run / ".hydra" / name).write_text(BOMB)
        with client(tmp_path) as http:
            answer = answered_within(20, lambda run=run: http.get(f"/api/runs/{store.to_id(tmp_path, run)}"))
            assert answer.status_code == 200
            if name == "config.yaml":  # the Resume button: refused in one line (a planted overrides.yaml would resume)
                resume = f"/api/runs/{store.to_id(tmp_path, run)}/resume"
                refused = answered_within(20, lambda resume=resume: http.post(resume, json={}))
                assert refused.status_code == 422 and "expand past" in refused.json()["error"]
    bombed = load_run(tmp_path / "outputs" / "bomb-config.yaml")  # the notebook API (before: OmegaConf.load, no bound)
    with pytest.raises(YamlBomb, match="expand past"):
        answered_within(10, lambda: bombed.config)


def test_a_reports_config_resolves_no_resolver_that_reads_the_machine(tmp_path, monkeypatch):
    """``python -m lander.report`` of a downloaded run: the report is a file to share, and its config section
    resolved ``${oc.env:...}`` (before: ``note: hunter2``, the environment's value, written into report.html); a
    config's own ``${key}`` interpolations still resolve, as the service shows them (``resolve_trusted``)."""
    monkeypatch.setenv("LANDER_TEST_SECRET", "hunter2")
    run = planted_run(tmp_path)
    config = run / ".hydra" / "config.yaml"
    config.write_text(config.read_text() + "note: ${oc.env:LANDER_TEST_SECRET}\n")
    written = load_run(run).report().read_text()
    assert "hunter2" not in written and "note: ${oc.env:LANDER_TEST_SECRET}" in written
    config.write_text(config.read_text().replace("note: ${oc.env:LANDER_TEST_SECRET}", "note: ${algo.name}"))
    assert "note: ppo" in load_run(run).report().read_text()


def test_a_downloaded_conf_is_read_with_bounds_before_a_launch_composes_it(tmp_path, monkeypatch):
    """The documented start, ``python -m lander.serve`` in the folder it serves: a planted tuned config (composed
    for every PPO run on LunarLander) standing for 10**10 nodes is refused in one line, naming it (before: Hydra
    composed it, holding the request and the composition lock until memory ran out); a root's file that is not
    YAML is not a reason to refuse what does not compose it."""
    (tmp_path / "conf" / "tuned").mkdir(parents=True)
    (tmp_path / "conf" / "tuned" / "ppo_lunar_lander.yaml").write_text("# @package _global_\n" + BOMB)
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "draft.yaml").write_text("a: [1,\n")
    monkeypatch.chdir(tmp_path)
    bare = client(tmp_path)  # not entered: a request still composing does not hold the test at the block's end
    answer = answered_within(20, lambda: bare.post("/api/runs", json={"overrides": ["algo=ppo"]}))
    assert answer.status_code == 422, answer.text
    bomb = f"its aliases expand past {MAX_NODES:,} nodes (a YAML alias bomb?): not read"
    assert answer.json()["error"] == f"conf/tuned/ppo_lunar_lander.yaml: {bomb}"
    (tmp_path / "conf" / "tuned" / "ppo_lunar_lander.yaml").unlink()
    (tmp_path / "elsewhere").mkdir()  # the same, in a folder linked in from outside conf/: Hydra's search follows it
    (tmp_path / "elsewhere" / "ppo_lunar_lander.yaml").write_text("# @package _global_\n" + BOMB)
    (tmp_path / "conf" / "tuned").rmdir()
    (tmp_path / "conf" / "tuned").symlink_to(tmp_path / "elsewhere")
    linked = answered_within(20, lambda: bare.post("/api/runs", json={"overrides": ["algo=ppo"]}))
    assert linked.status_code == 422 and linked.json()["error"] == "conf/tuned is a link out of conf/: not read"
    (tmp_path / "conf" / "tuned").unlink()
    with client(tmp_path) as http:
        refused = http.post("/api/runs", json={"overrides": ["algo=ppo", "gamma=2"]})  # composed, then checked
        assert refused.status_code == 422 and "gamma=2.0 is not allowed" in refused.json()["error"], refused.text
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize(
    "plant,said",
    [
        (
            lambda conf: (conf / "tuned/ppo_lunar_lander.yaml").symlink_to(conf.parent / "mine.yaml"),
            "tuned/ppo_lunar_lander.yaml is a link out of conf/",
        ),
        (
            lambda conf: (conf / "tuned/big.yaml").write_text("a: " + "x" * 1_000_000),
            "tuned/big.yaml: 1,000,003 bytes, past 1,000,000",
        ),
        (
            lambda conf: [(conf / f"tuned/{i}.yaml").write_text("a: 1") for i in range(1001)],
            "holds more than 1000 YAML files",
        ),
    ],
    ids=["file-link-out", "too-large", "too-many"],
)
def test_a_roots_conf_is_read_within_its_bounds_or_refused(tmp_path, plant, said):
    """The service's bounds on the root's ``conf/`` beyond the alias bomb and a linked folder (above), each refused
    in one line before Hydra composes anything: a YAML file linked to one of yours, one past 1 MB, a folder of more
    than 1,000 (the checks no test reached: coverage)."""
    from lander.service.overrides import Refused, check_conf

    (tmp_path / "conf" / "tuned").mkdir(parents=True)
    (tmp_path / "mine.yaml").write_text("secret: 1")
    plant(tmp_path / "conf")
    with pytest.raises(Refused, match=re.escape(said)):
        check_conf(tmp_path / "conf")


def test_a_command_reads_its_own_conf_with_the_bound_before_hydra_composes_it(tmp_path, monkeypatch):
    """``python -m lander.run`` in a folder whose ``conf/`` (a cloned course repository's) holds the bomb above,
    in a tuned config composed for every PPO run, or in a folder linked in: one line naming the file, before any
    composition (before: Hydra composed it for five minutes, 1m45 of system time allocating, then an IndexError
    from an empty message: a traceback, no line). A file that is not YAML blocks nothing; links are followed (they
    are your own files), a loop of them once."""
    (tmp_path / "conf" / "tuned").mkdir(parents=True)
    (tmp_path / "conf" / "tuned" / "ppo_lunar_lander.yaml").write_text("# @package _global_\n" + BOMB)
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "draft.yaml").write_text("a: [1,\n")
    (tmp_path / "conf" / "experiment" / "loop").symlink_to("..")
    monkeypatch.chdir(tmp_path)
    bomb = f"its aliases expand past {MAX_NODES:,} nodes (a YAML alias bomb?): not read"
    with pytest.raises(ConfigError) as refused:
        answered_within(20, lambda: check_command(["algo=ppo"]))
    assert str(refused.value) == f"conf/tuned/ppo_lunar_lander.yaml: {bomb}"
    (tmp_path / "conf" / "tuned" / "ppo_lunar_lander.yaml").unlink()
    (tmp_path / "conf" / "tuned").rmdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "ppo_lunar_lander.yaml").write_text("# @package _global_\n" + BOMB)
    (tmp_path / "conf" / "tuned").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ConfigError, match=f"conf/tuned/ppo_lunar_lander.yaml: {re.escape(bomb)}"):
        answered_within(20, lambda: check_command(["algo=ppo"]))
    given = f"hydra.searchpath=['file://{tmp_path / 'elsewhere'}']"  # the folders Hydra composes: those given
    with pytest.raises(ConfigError, match=f"elsewhere/ppo_lunar_lander.yaml: {re.escape(bomb)}"):
        answered_within(20, lambda: check_command(["algo=ppo", given]))
    (tmp_path / "conf" / "tuned").unlink()
    assert answered_within(60, lambda: check_command(["algo=ppo", "total_timesteps=1000"])) == [
        "algo=ppo",
        "total_timesteps=1000",
    ]
    (tmp_path / "conf" / "tuned").symlink_to(tmp_path / "elsewhere")  # ./conf not on the given search path: not read
    (tmp_path / "other").mkdir()  # (the service gives its root's conf/ so, and runs in a directory of its own)
    other = f"hydra.searchpath=['file://{tmp_path / 'other'}']"
    assert answered_within(60, lambda: check_command(["algo=ppo", "total_timesteps=1000", other]))[-1] == other
    assert not (tmp_path / "outputs").exists()


def test_hydras_error_without_words_is_named_by_its_cause():
    """An error Hydra raises with an empty message (a MemoryError while composing) is still one line: its cause's
    type (before: an IndexError in the message's making, a traceback)."""
    try:
        try:
            raise MemoryError
        except MemoryError as cause:
            raise HydraException("") from cause
    except HydraException as exc:
        assert hydra_message(exc) == "MemoryError"


def test_a_module_in_the_root_is_not_imported_and_the_refusal_says_why(tmp_path, monkeypatch):
    """An env of the root's ``conf/`` naming a module beside it (``my_envs.py``), allowed with ``--allow-target``:
    not imported (the service takes its root off ``sys.path``), refused with why and what to do; it said only "No
    module named 'my_envs'", after the user had done what the trust check advised."""
    (tmp_path / "my_envs.py").write_text(f"open({str(tmp_path / 'imported.txt')!r}, 'w').close()\n")
    (tmp_path / "conf" / "env").mkdir(parents=True)
    mine = "defaults:\n  - cartpole\nname: mine\nid: my_envs:Corridor-v0\n"
    (tmp_path / "conf" / "env" / "mine.yaml").write_text(mine)
    monkeypatch.chdir(tmp_path)  # as lander.serve runs, started in its root: that root off sys.path
    monkeypatch.setattr(sys, "path", [e for e in sys.path if e and Path(e).resolve() != tmp_path.resolve()])
    app = create_app(tmp_path, TOKEN, PORT, ["127.0.0.1"], 1, 100, ["my_envs"])
    with TestClient(app, base_url=f"http://127.0.0.1:{PORT}", headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        answer = http.post("/api/runs", json={"overrides": ["env=mine", "video.enabled=false"]})
    assert answer.status_code == 422, answer.text
    assert (
        "the module 'my_envs' cannot be imported (No module named 'my_envs'); my_envs is in the working "
        in (answer.json()["error"])
    )
    assert "install it as a package (pip install -e <its project>)" in answer.json()["error"]
    assert not (tmp_path / "imported.txt").exists() and not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("key", ["run_name", "algo.name", "env.name"])
@pytest.mark.parametrize("value", ["../../../../tmp/x", "/tmp/x", "..", "a/b", "a\\b"])
def test_values_that_become_paths_are_plain_names(tmp_path, key, value):
    """``run_name='../../x'`` wrote TensorBoard's files wherever the user could write: now refused in one line,
    by the command line's checks (exit 2, nothing made) and by the service (422)."""
    cfg = composed(f"{key}='{value}'")
    with pytest.raises(ConfigError, match=f"{key}=.* a plain name"):
        validate(cfg)
    validate(composed(f"{key}='a..b'"))  # dots inside a name do not climb
    if key == "run_name" and value == "../../../../tmp/x":
        with client(tmp_path) as http:
            answer = http.post("/api/runs", json={"overrides": [f"run_name='{value}'"]})
        assert answer.status_code == 422 and "plain name" in answer.json()["error"]
        assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("sweep", ["range(0,10,0.0)", "range(0,10,-1)", "range(0,inf)", "range(0,nan)"])
def test_ranges_without_values_are_refused_in_one_line(tmp_path, sweep):
    """Before: 201 then a Hydra traceback in the sweep, an empty sweep, or a 500; on the command line a traceback."""
    with pytest.raises(ConfigError, match=r"range\("):
        check_command(["--multirun", f"seed={sweep}"])
    with client(tmp_path) as http:
        answer = http.post("/api/sweeps", json={"overrides": [f"seed={sweep}"]})
    assert answer.status_code == 422, answer.text
    assert not (tmp_path / "multirun").exists()


def test_a_search_counts_its_trials_against_max_jobs(tmp_path):
    """``hparams_search=ppo_optuna`` is 20 trials of 1M steps: refused by a service started with ``--max-jobs 3``."""
    with client(tmp_path, max_jobs=3) as http:
        answer = http.post("/api/sweeps", json={"overrides": ["hparams_search=ppo_optuna"]})
        assert answer.status_code == 422 and "20 jobs" in answer.json()["error"], answer.text
    assert not (tmp_path / "multirun").exists() and not (tmp_path / "outputs").exists()


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        (
            ["hparams_search=ppo_optuna"],
            "hparams_search=ppo_optuna is a search (its preset runs Optuna's trials): POST",
        ),
        (["experiment=gamma_sweep", "gamma=0.99"], "experiment=gamma_sweep is a sweep (seed=0,1,2): POST /api/sweeps"),
    ],
)
def test_a_search_or_a_sweep_preset_is_not_launched_as_a_run(tmp_path, overrides, said):
    """``POST /api/runs`` of ``hparams_search=ppo_optuna`` was 201: its preset's ``hydra.mode: MULTIRUN`` ran the
    whole search in the service's working directory (a temporary one, outside the root: the dashboard never showed
    its trials) while the run's directory stayed "created". A search or a sweep preset is a sweep's request."""
    with client(tmp_path, max_jobs=100) as http:
        answer = http.post("/api/runs", json={"overrides": [*overrides, "total_timesteps=512"]})
        assert answer.status_code == 422 and said in answer.json()["error"], answer.text
        assert "nothing was started" in answer.json()["error"]
    assert not (tmp_path / "multirun").exists() and not (tmp_path / "outputs").exists()


@pytest.mark.parametrize(
    "host",
    [f"127.0.0.1:{PORT + 1}", f"127.0.0.1:{PORT}.evil.example", f"127.0.0.1:{PORT}@evil.example", "evil.example"],
)
def test_the_host_header_names_this_service_on_its_own_port(tmp_path, host):
    with client(tmp_path) as http:
        assert http.get("/api/runs", headers={"Host": host}).status_code == 403
        assert http.get("/api/runs", headers={"Host": f"127.0.0.1:{PORT}"}).status_code == 200


def test_the_bearer_scheme_is_case_insensitive_and_the_token_still_required(tmp_path):
    with client(tmp_path) as http:
        for scheme in ("bearer", "BEARER", "Bearer"):
            assert http.get("/api/runs", headers={"Authorization": f"{scheme} {TOKEN}"}).status_code == 200
        assert http.get("/api/runs", headers={"Authorization": "bearer wrong"}).status_code == 401
        assert http.get("/api/runs", headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401


def test_jupyters_token_scheme_is_taken_as_the_bearer_is(tmp_path):
    """``Authorization: token <token>``, the form Jupyter Server's docs give, works as ``Bearer`` does, for a GET
    and a POST, and only with the token (before: 401 for the right token)."""
    with client(tmp_path) as http:
        http.headers.pop("Authorization")
        assert http.get("/api/runs", headers={"Authorization": f"token {TOKEN}"}).status_code == 200
        assert http.get("/api/runs", headers={"Authorization": "token wrong"}).status_code == 401
        stop = {"Authorization": f"token {TOKEN}", "Content-Type": "application/json"}
        assert http.post("/api/runs/none/stop", content=b"{}", headers=stop).status_code == 404  # past the guard
        stop["Authorization"] = "token wrong"
        assert http.post("/api/runs/none/stop", content=b"{}", headers=stop).status_code == 401


def test_a_chunked_body_is_refused_before_it_is_read(tmp_path):
    """``Transfer-Encoding: chunked`` beside ``Content-Length: 20``: a 20 MB body was parsed past the 64 kB bound."""
    sent = []

    def body():
        for _ in range(20 * 16):  # 20 MB in 64 kB chunks; the guard answers without reading them
            sent.append(1)
            yield b" " * 65536

    with client(tmp_path) as http:
        answer = http.post(
            "/api/runs",
            content=body(),
            headers={"Content-Type": "application/json", "Content-Length": "20", "Transfer-Encoding": "chunked"},
        )
    assert answer.status_code == 411, answer.text
    assert not (tmp_path / "outputs").exists()


def test_a_pause_stops_the_training_clock_for_as_long_as_it_holds():
    """What the pause guarantees, whatever the machine's load: the run's clock advances by the time it ran, less
    every second it was held (here at least ``held`` seconds: released only that long after it began)."""
    held = 0.3
    signals._pause["requested"] = True
    released = []

    def on_pause(paused: bool) -> None:
        if paused:  # the pause has begun: release it no sooner than `held` seconds from now
            release = threading.Timer(held, lambda: (released.append(1), signals._handle_pause(signal.SIGUSR2, None)))
            release.start()

    clock, wall = signals.training_clock(), time.perf_counter()
    with signals.pausing(on_pause):
        signals.hold_while_paused()
    clock, wall = signals.training_clock() - clock, time.perf_counter() - wall
    assert released and wall - clock >= held


def test_a_stray_byte_in_a_metrics_file_keeps_its_rows(tmp_path):
    """One byte that is not UTF-8 made the whole file 404 (the run's curve vanished); now it is replaced."""
    path = tmp_path / "eval.csv"
    path.write_bytes(b"timesteps,mean\n100,1.5\n200,2\xff\n300,3.5\n")
    found = store.rows(tmp_path, path, "timesteps")
    assert [r["timesteps"] for r in found] == [100, 200, 300] and found[2]["mean"] == 3.5


def test_a_run_that_ends_while_it_is_read_is_not_shown_stopped(tmp_path, monkeypatch):
    """The run's process writes ``completed`` and then lets its lock go: read in between (its summary first, the
    lock after), a run that completed was listed ``stopped`` (killed, no process holds it), the CI's poll of a
    dashboard-launched run caught so once. Here its process ends just after each summary is read; the lock is read
    first, so the run is shown as it was, running, or as it ended."""
    from lander.reports import run_report
    from lander.storage.rundir import RunSummary

    run = planted_run(tmp_path, "0", "running")
    lock = RunLock(run).acquire()

    def ends_after(read):
        def reading(*args, **kwargs):
            found = read(*args, **kwargs)
            (run / "summary.json").write_text(json.dumps({"status": "completed", "algo": "ppo", "timesteps": 0}))
            lock.release()  # the process ends
            return found

        return reading

    def shown(reader: str) -> str:
        (run / "summary.json").write_text(json.dumps({"status": "running", "algo": "ppo", "timesteps": 0}))
        lock.acquire()
        if reader == "report":
            with monkeypatch.context() as patch:
                patch.setattr(RunSummary, "load", ends_after(RunSummary.load))
                page = run_report.write_run_report(run).read_text()
            return re.search(r'<span class="status (\w+)">', page).group(1)
        with monkeypatch.context() as patch:
            patch.setattr(store, "summary_of", ends_after(store.summary_of))
            if reader == "listing":
                return store.run_info(tmp_path, run)["status"]
            return "".join(store.job_statuses(tmp_path, run.parent))

    try:
        assert {reader: shown(reader) for reader in ("listing", "sweep", "report")} == dict.fromkeys(
            ("listing", "sweep", "report"), "running"
        )
    finally:
        lock.release()


def test_a_sweep_that_ends_while_it_is_listed_is_not_shown_ended(tmp_path, monkeypatch):
    """A sweep started elsewhere writes its comparison and then lets its lock go: read in between (its table first,
    the lock after), it was listed ``ended`` with its jobs' statuses as the error. Here it ends just after its table
    is looked for; the lock is read first, so it is still sweeping."""
    from lander.storage.lock import SweepLock

    sweep = tmp_path / "multirun" / "s"
    sweep.mkdir(parents=True)
    planted_run(tmp_path, "0", "completed").rename(sweep / "0")  # its one job, completed
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    lock = SweepLock(sweep).acquire()
    servable = store.servable

    def looked_for(root, path):
        found = servable(root, path)
        if path.name == "table.csv":  # the sweep writes its comparison and ends
            path.parent.mkdir(exist_ok=True)
            path.write_text("algo,mean\n")
            lock.release()
        return found

    monkeypatch.setattr(store, "servable", looked_for)
    try:
        listed = store.list_sweeps(tmp_path)
    finally:
        lock.release()
    assert [(s["path"], s["state"], s.get("error")) for s in listed] == [("multirun/s", "sweeping", None)]


def test_no_signal_goes_to_a_process_the_lock_file_names_but_did_not_write_it(tmp_path):
    """A run whose lock is held, but whose lock file names another pid: its pause went to that process as SIGUSR1
    and killed it; now refused (409) and the other process lives on."""
    run = planted_run(tmp_path, status="running")
    lock = RunLock(run).acquire()
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = json.loads(lock.path.read_text())
        assert owner_process(run) == os.getpid()
        lock.path.write_text(json.dumps(owner | {"pid": bystander.pid}))  # the flock stays on the file
        assert owner_process(run) is None
        with client(tmp_path) as http:
            for action in ("pause", "stop"):
                answer = http.post(f"/api/runs/{store.to_id(tmp_path, run)}/{action}", json={})
                assert answer.status_code == 409 and "no signal was sent" in answer.json()["error"], answer.text
        time.sleep(0.2)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
        lock.release()


def test_a_launched_process_is_known_by_its_creation_time_not_by_its_pid(tmp_path):
    """``alive()`` took any lander process newer than the record for the one it started."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "lander.run"])
    try:
        time.sleep(0.2)
        assert not alive(other.pid, time.time() - 100)  # a record of another process that had this pid
        assert not alive(other.pid, None)  # a record without a creation time
        import psutil

        assert alive(other.pid, psutil.Process(other.pid).create_time())
    finally:
        other.kill()
        other.wait()


def test_a_process_is_still_itself_after_the_clock_is_set(tmp_path, monkeypatch):
    """psutil's creation time is the kernel's boot time (``/proc/stat``'s btime: the wall clock less the time since
    boot, in whole seconds) plus the process's start: a clock set forward by a few milliseconds near a second's end
    moves it by a second. A process recorded before was then no longer itself: the dashboard listed a launched run
    that had not yet taken its lock ``stopped`` (the CI caught it so, twice, with nothing yet in its service.log),
    and pause and stop were refused as "not the process holding the run". Here btime moves a second forward after
    the records are made; both still name their process."""
    import psutil

    from lander.service.launcher import created

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "lander.run"])
    lock = RunLock(tmp_path).acquire()
    try:
        time.sleep(0.2)
        recorded, before = created(other.pid), psutil.Process(other.pid).create_time()  # as the service records it
        platform = psutil._psplatform  # type: ignore[attr-defined]
        booted = platform.boot_time
        monkeypatch.setattr(platform, "boot_time", lambda: booted() + 1)  # the clock, set forward
        assert psutil.Process(other.pid).create_time() == pytest.approx(before + 1, abs=0.001)  # as psutil sees it
        assert alive(other.pid, recorded) and owner_process(tmp_path) == os.getpid()
    finally:
        lock.release()
        other.kill()
        other.wait()


def test_a_run_taking_its_lock_is_not_listed_stopped_nor_refused_by_a_reader(tmp_path):
    """A run takes its lock by creating the file, locking it and writing its owner there; the dashboard's poll reads
    whether it is locked and then who wrote it. Read in between (not locked yet, its owner written by then), a
    starting run without a summary was listed ``stopped`` (the CI caught it, and a loop of the test under load
    did, 2 runs in 6). And a reader's check takes the lock for a moment: a run that took it just then was refused
    as "in use by another process". Here the file names a live process that holds no lock yet, and a reader holds
    the lock for 0.1 s as the run takes it."""
    import fcntl
    import socket as sockets
    import threading as threads

    from lander.storage.lock import NAME, process_created

    run = planted_run(tmp_path, "starting")
    (run / "summary.json").unlink()  # no summary yet
    owner = {"pid": os.getpid(), "host": sockets.gethostname(), "since": time.time()}
    (run / NAME).write_text(json.dumps(owner | {"created": process_created(os.getpid())}))
    assert store.run_info(tmp_path, run)["status"] == "created"
    with (run / NAME).open() as probe:  # a reader's busy(), held longer than it is
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        threads.Timer(0.1, lambda: fcntl.flock(probe, fcntl.LOCK_UN)).start()
        lock = RunLock(run).acquire()
    lock.release()


def test_wandbs_own_links_do_not_stop_a_resume_and_other_links_out_still_do(tmp_path):
    """W&B 0.31 links ``wandb/offline-run-*/logs/debug-core.log`` to ``~/.cache/wandb``: every default run was
    refused by the dashboard's Resume (422 "links out of its run directory")."""
    run = planted_run(tmp_path)
    outside = tmp_path / "elsewhere.log"
    outside.write_text("")
    logs = run / "wandb" / "offline-run-20261125_115626-0zrvjc99" / "logs"
    logs.mkdir(parents=True)
    (logs / "debug-core.log").symlink_to(outside)
    (logs / "debug.log").write_text("")
    (run / "wandb" / "latest-run").symlink_to("offline-run-20261125_115626-0zrvjc99")
    (run / "wandb" / "debug.log").symlink_to("offline-run-20261125_115626-0zrvjc99/logs/debug.log")
    check_contained(tmp_path, run)
    (logs.parent / "files").mkdir()
    (logs.parent / "files" / "output.log").symlink_to(outside)  # not one of W&B's: the run might write through it
    with pytest.raises(Unreadable, match=r"output\.log: links out of its run directory"):
        check_contained(tmp_path, run)


def test_a_refused_new_run_leaves_no_directory_and_a_started_one_is_kept(tmp_path):
    run = planted_run(tmp_path)
    (run / "summary.json").unlink()
    (run / "run.log").write_text("invalid configuration\n")
    held = RunLock(run).acquire()  # another process's run that has not trained yet: a refused command's Hydra
    assert not remove_unstarted(run) and (run / ".hydra").is_dir()  # had it for its own (they shared its name)
    held.release()
    assert remove_unstarted(run) and not run.exists()
    kept = planted_run(tmp_path, "kept")  # it has a summary.json: a run that started
    assert not remove_unstarted(kept) and (kept / "summary.json").is_file()


def test_hydra_node_of_a_preset_is_trust_checked(tmp_path):
    """A preset under the root's ``conf/`` can set Hydra's callbacks, which Hydra instantiates at a run's start."""
    from lander.config.trust import check_trusted

    cfg = yaml.safe_load(OmegaConf.to_yaml(composed("algo=ppo")))
    cfg["hydra"] = {"callbacks": {"x": {"_target_": "os.system", "command": "true"}}}
    with pytest.raises(ConfigError, match=r"hydra\.callbacks\.x makes Hydra import 'os\.system'"):
        check_trusted(cfg, [])
    cfg["hydra"] = {"sweeper": {"_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"}}
    check_trusted(cfg, [])


HOLDER = """
import signal, sys, time
from pathlib import Path
from lander.storage.lock import RunLock
locks = [RunLock(Path(p)).acquire() for p in sys.argv[1:]]  # as a process of seeds side by side holds each seed's
signal.signal(signal.SIGUSR1, lambda *_: Path(sys.argv[1], "paused.txt").write_text("paused"))
print("ready", flush=True)
time.sleep(60)
"""


def test_a_signal_to_one_seed_of_a_process_is_refused_unless_meant_for_all_of_them(tmp_path):
    """Seeds side by side (``seeds_per_process``) share a process: a pause of one seed paused all of them silently.
    Now the API lists the seeds that share the run's process, refuses a signal to one of them (409, naming the
    others, nothing sent), and sends it with ``{"group": true}``, saying which runs it reaches."""
    seeds = []
    for job in ("0", "1"):
        run = planted_run(tmp_path, job, status="running")
        sweep_job = tmp_path / "multirun" / "sweep" / job
        sweep_job.parent.mkdir(parents=True, exist_ok=True)
        run.rename(sweep_job)
        seeds.append(sweep_job)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, *map(str, seeds)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        ids = [store.to_id(tmp_path, s) for s in seeds]
        with client(tmp_path) as http:
            listed = {r["id"]: r for r in http.get("/api/runs").json()}
            assert listed[ids[0]]["process_group"] == ["multirun/sweep/0", "multirun/sweep/1"]
            one = http.post(f"/api/runs/{ids[0]}/pause", json={})
            assert one.status_code == 409 and "side by side with 1 other seed" in one.json()["error"], one.text
            time.sleep(0.3)
            assert not (seeds[0] / "paused.txt").exists() and holder.poll() is None
            both = http.post(f"/api/runs/{ids[0]}/pause", json={"group": True})
            assert both.status_code == 200, both.text
            assert both.json()["group"] == ["multirun/sweep/0", "multirun/sweep/1"]
        for _ in range(50):
            if (seeds[0] / "paused.txt").exists():
                break
            time.sleep(0.1)
        assert (seeds[0] / "paused.txt").read_text() == "paused"
    finally:
        holder.kill()
        holder.wait()


def test_request_and_response_bodies_are_documented_in_the_openapi_schema(tmp_path):
    with client(tmp_path) as http:
        schema = http.get("/openapi.json").json()
    models = schema["components"]["schemas"]
    assert {"Launch", "Compare", "Signal", "Launched", "Signalled"} <= set(models)
    assert models["Launch"]["properties"]["overrides"]["type"] == "array"
    assert models["Signal"]["properties"]["group"]["type"] == "boolean"
    launch = schema["paths"]["/api/runs"]["post"]
    assert launch["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/Launch")
    # the read endpoints' bodies too: each field named, typed and described
    assert {"RunInfo", "RunDetail", "SweepDetail", "ComparisonDetail", "LeftOut", "Algo", "Env", "ConfigKey"} <= set(
        models
    )
    assert {"status", "process_group", "latest_eval", "files"} <= set(models["RunInfo"]["properties"])
    assert models["LeftOut"]["required"] == ["run", "why", "detail"]
    listed = schema["paths"]["/api/runs"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert listed["items"]["$ref"].endswith("/RunInfo")


def test_the_catalog_answers_in_its_documented_shape(tmp_path):
    """What lander offers (algorithms, envs, presets: a broken one of the root's with why, config keys) passes its
    response model: every entry, not a 500 for one that has a None the model did not allow."""
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "broken.yaml").write_text("a: [1,\n")
    with client(tmp_path) as http:
        for path in ("/api/algos", "/api/envs", "/api/presets", "/api/config"):
            answer = http.get(path)
            assert answer.status_code == 200, (path, answer.text[:300])
        assert any(p["name"] == "broken" and p["error"] for p in http.get("/api/presets").json())


def test_a_run_with_odd_values_in_its_summary_is_still_listed(tmp_path):
    """The response models type what lander writes, yet a summary.json edited by hand (a seed as text, a list for a
    number) is shown as it is or left out, never a 500."""
    run = tmp_path / "outputs" / "2026-01-01" / "00-00-00"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("seed: 0\n")
    (run / "summary.json").write_text('{"status": "completed", "seed": "zero", "gamma": [1], "total_timesteps": 2.5}')
    with client(tmp_path) as http:
        listed = http.get("/api/runs")
        assert listed.status_code == 200, listed.text
        (shown,) = listed.json()
        assert shown["seed"] == "zero" and shown["gamma"] is None and shown["total_timesteps"] == 2.5
        detail = http.get(f"/api/runs/{shown['id']}")
        assert detail.status_code == 200, detail.text


LIMITED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4_000_000_000, resource.RLIM_INFINITY))
from lander.config.precheck import check_command, hydra_message
from lander.errors import ConfigError
try:
    check_command(sys.argv[1:])
except ConfigError as exc:
    print(exc)
"""


@pytest.mark.parametrize("overrides", ["eval.n_envs=20000 eval.episodes=20000", "n_envs=30000"])
def test_envs_are_counted_against_the_processs_own_address_space_limit(tmp_path, overrides):
    """Under ``ulimit -v`` (4 GB here) the estimate used the machine's free memory and left out the evaluation
    envs: ``n_envs=30000`` or 20,000 evaluation envs passed, then died in ``std::bad_alloc`` in a directory. (An
    evaluation makes one env an episode at most: ``eval.n_envs=20000`` alone, with 20 episodes, makes 20.)"""
    run_dir = tmp_path / "run"
    argv = [*overrides.split(), "total_timesteps=512", f"hydra.run.dir={run_dir}"]
    said = subprocess.run([sys.executable, "-c", LIMITED, *argv], capture_output=True, text=True, timeout=120).stdout
    assert "address-space limit (ulimit -v) leaves" in said, said
    assert not run_dir.exists()


def test_serve_help_is_whole_and_warns_that_a_token_on_the_command_line_is_visible():
    """``--help`` stopped mid-sentence ("It finds") and offered ``--token`` without a word about ``/proc``."""
    from lander.serve import parser

    text = " ".join(parser().format_help().split())
    assert "It finds" not in text and "(FastAPI, uvicorn)." in text
    assert "readable by every user of this machine in the process list (/proc/<pid>/cmdline)" in text
    assert "comparisons/" in (REPO / ".gitignore").read_text().splitlines()  # what the service writes into a root


def test_a_reproduction_from_the_service_is_refused_as_a_resume_is_and_its_verdict_listed_as_text(tmp_path):
    """``POST /api/runs/{id}/reproduce`` (the dashboard's Reproduce): refused, with nothing started, for a run a
    process holds, a run that never trained, a config lander does not trust, ``steps`` below 1; a reproduction's
    verdict is listed with the run, a value lander never writes shown as ``unfinished``."""
    held, fresh, hostile, done = (planted_run(tmp_path, n, s) for n, s in
                                  [("held", "running"), ("fresh", "created"), ("hostile", "completed"),
                                   ("done", "completed")])  # fmt: skip
    config = yaml.safe_load((hostile / ".hydra/config.yaml").read_text())
    config["algo"]["model"]["_target_"] = "os.system"
    (hostile / ".hydra/config.yaml").write_text(yaml.safe_dump(config))
    copies = [done.with_name("done.reproduce-1"), done.with_name("done.reproduce-2")]
    for copy, verdict in zip(copies, ["diverged", "<img src=x onerror=alert(1)>"], strict=True):
        copy.mkdir()
        lines = ["diverged: metrics/eval.csv row 1 (timesteps 500), mean: '1.0' in the original, '2.0' here"]
        (copy / "reproduction.json").write_text(json.dumps({"verdict": verdict, "lines": lines}))
    lock = RunLock(held).acquire()
    try:
        with client(tmp_path) as http:
            said = {
                name: http.post(f"/api/runs/{store.to_id(tmp_path, run)}/reproduce", json=body)
                for name, run, body in [
                    ("held", held, {}),
                    ("fresh", fresh, {}),
                    ("hostile", hostile, {}),
                    ("zero", done, {"steps": 0}),
                ]
            }
            listed = {r["path"]: r for r in http.get("/api/runs").json()}
    finally:
        lock.release()
    assert said["held"].status_code == 409 and "is running" in said["held"].json()["error"]
    assert said["fresh"].status_code == 409 and "has not trained a step" in said["fresh"].json()["error"]
    assert said["hostile"].status_code == 422 and "cannot be reproduced by the service" in said["hostile"].text
    assert "os.system" in said["hostile"].text
    assert said["zero"].status_code == 422 and "steps" in said["zero"].text
    assert not (tmp_path / ".lander-service" / "launched.jsonl").exists()  # nothing was started
    import psutil

    reproducing = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "lander.reproduce"])
    try:  # a reproduction of the run this service started is still alive: a second would take the same directory
        record = {"pid": reproducing.pid, "kind": "reproduce", "path": "outputs/done", "args": [], "started": 0}
        record["created"] = psutil.Process(reproducing.pid).create_time()
        (tmp_path / ".lander-service" / "launched.jsonl").parent.mkdir()
        (tmp_path / ".lander-service" / "launched.jsonl").write_text(json.dumps(record) + "\n")
        with client(tmp_path, max_running=3) as http:  # room for more: only the reproduction in course refuses
            second = http.post(f"/api/runs/{store.to_id(tmp_path, done)}/reproduce", json={})
    finally:
        reproducing.kill()
        reproducing.wait()
    assert second.status_code == 409 and "is being reproduced by process" in second.json()["error"], second.text
    assert len((tmp_path / ".lander-service" / "launched.jsonl").read_text().splitlines()) == 1
    assert [(r["path"], r["verdict"]) for r in listed["outputs/done"]["reproductions"]] == [
        ("outputs/done.reproduce-1", "diverged"),
        ("outputs/done.reproduce-2", "unfinished"),
    ]
    assert listed["outputs/done"]["reproductions"][0]["lines"][0].startswith("diverged: metrics/eval.csv row 1")
    assert "outputs/done.reproduce-1" not in listed  # a reproduction is listed with its run, not as a run


@pytest.mark.parametrize(
    "override,multirun",
    [
        ("+env.kwargs.render_mode=human", False),
        ("env.kwargs={render_mode:human}", False),
        ("+env.kwargs.render_mode=rgb_array,human", True),
    ],
)
def test_a_launch_request_cannot_make_its_run_draw_on_a_screen(override, multirun):
    """``env.kwargs.render_mode`` from a request: the service started the run, which drew every training step at 50
    a second (``lander.run`` honours it for a user at the screen)."""
    from lander.service.overrides import Refused, parse

    with pytest.raises(
        Refused, match=r"env\.kwargs\.render_mode is not accepted by the service: its runs have no scre"
    ):
        parse(override, multirun)
    assert parse("+env.kwargs.render_mode=null", False).value() is None  # Gymnasium's default, said again


def test_a_bad_query_parameter_is_named_as_one(tmp_path):
    """``?since=abc`` was answered "request body: ... at query.since; expected {"overrides": ...}"."""
    planted_run(tmp_path)
    answer = client(tmp_path).get("/api/runs/outputs~run/metrics/eval?since=abc")
    assert answer.status_code == 422
    assert (
        answer.json()["error"]
        == "query parameter since: Input should be a valid number, unable to parse string as a number"
    )
    for value in ("nan", "inf", "-inf"):  # were taken: NaN answered no rows at all, as if none were written
        answer = client(tmp_path).get(f"/api/runs/outputs~run/metrics/eval?since={value}")
        assert answer.status_code == 422, value
        assert answer.json()["error"] == "query parameter since: Input should be a finite number", value


@pytest.mark.parametrize(
    "url,body,where",
    [
        ("/api/runs", {"overides": ["algo=a2c"]}, "body.overides"),  # started a default run: PPO, 1M steps
        ("/api/comparisons", {"runs": ["outputs~a", "outputs~b"], "base": "algo=ppo"}, "body.base"),
        ("/api/runs/outputs~a/stop", {"grop": True}, "body.grop"),
    ],
)
def test_a_request_bodys_unknown_key_is_refused_not_passed_over(tmp_path, url, body, where):
    """A key a body does not have was passed over: ``{"overides": [...]}`` launched lander's default run, a
    comparison's ``baseline`` was not used (it is taken now), without a word."""
    planted_run(tmp_path, "a")
    planted_run(tmp_path, "b")
    answer = client(tmp_path).post(url, json=body)
    assert answer.status_code == 422, answer.text
    assert f"request body: Extra inputs are not permitted at {where}; expected" in answer.json()["error"]
    assert not (tmp_path / "comparisons").exists() and sorted(os.listdir(tmp_path / "outputs")) == ["a", "b"]


def test_a_run_whose_process_ended_before_its_first_summary_is_stopped(tmp_path):
    """A run the service started (or a job of a sweep it started), or one whose lock a process of this machine took
    and holds no more, killed before the run wrote its summary: it was listed ``created``, "0 / 0", for ever, with
    no Resume button. Now it is ``stopped`` (a resume trains it from the start); a run without a summary whose
    process still runs, or of which nothing is known here, stays ``created``."""
    import psutil

    def bare(path: str) -> None:  # the directory Hydra makes before the run writes anything
        (tmp_path / path / ".hydra").mkdir(parents=True)
        (tmp_path / path / ".hydra" / "config.yaml").write_text(OmegaConf.to_yaml(composed("algo=ppo")))

    for path in ("outputs/killed", "multirun/swept/0", "outputs/elsewhere", "outputs/starting", "outputs/cli"):
        bare(path)
    bare("outputs/copied")
    (tmp_path / "multirun/swept/multirun.yaml").write_text("{}\n")
    ended = subprocess.Popen([sys.executable, "-c", "pass", "lander.run"])
    ended.wait()
    # started from the command line, not by the service: its lock says a process of this machine took it and ended
    for path, host in (("outputs/cli", socket.gethostname()), ("outputs/copied", "another-host")):
        (tmp_path / path / ".lander.storage.lock").write_text(json.dumps({"pid": ended.pid, "host": host}))
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "lander.run"])
    try:
        records = [
            {"pid": ended.pid, "kind": "run", "path": "outputs/killed", "created": time.time() - 5},
            {"pid": ended.pid, "kind": "sweep", "path": "multirun/swept", "created": time.time() - 5},
            {"pid": running.pid, "kind": "run", "path": "outputs/starting"},
        ]
        records[2]["created"] = psutil.Process(running.pid).create_time()
        (tmp_path / ".lander-service").mkdir()
        (tmp_path / ".lander-service" / "launched.jsonl").write_text(
            "".join(json.dumps(r | {"args": [], "started": 0}) + "\n" for r in records)
        )
        with client(tmp_path) as http:
            runs = http.get("/api/runs").json()
            listed = {r["path"]: r["status"] for r in runs}
            one = http.get(f"/api/runs/{store.to_id(tmp_path, tmp_path / 'outputs/killed')}").json()["status"]
            jobs = http.get(f"/api/sweeps/{store.to_id(tmp_path, tmp_path / 'multirun/swept')}")
    finally:
        running.kill()
        running.wait()
    assert listed == {
        "outputs/killed": "stopped",
        "multirun/swept/0": "stopped",
        "outputs/elsewhere": "created",
        "outputs/starting": "created",
        "outputs/cli": "stopped",
        "outputs/copied": "created",  # another machine's lock: nothing known of its process here
    }
    assert one == "stopped"
    assert [j["status"] for j in jobs.json()["jobs"]] == ["stopped"], jobs.text
    # what such a run is, read from its saved config (it showed nothing, and "0 / 0")
    shown = {(r["algo"], r["env"], r["seed"], r["gamma"], r["timesteps"], r["total_timesteps"]) for r in runs}
    assert shown == {("ppo", "lunar_lander", 0, 0.999, 0, 1_000_000)}


def test_an_optuna_search_is_a_sweep_on_the_dashboard(tmp_path):
    """An Optuna search (``hparams_search=...``) writes no ``multirun.yaml`` (Hydra's basic sweeper does): its
    directory, its trials and its comparison were missing from the service's sweeps. Its ``optuna.db`` makes it a
    sweep there, listed, opened and its report served, as any sweep is."""
    from helpers.runs import fake_run

    search = tmp_path / "multirun" / "2026-11-28" / "19-31-40"
    for i, mean in enumerate((-493.0, -165.9)):
        fake_run(search, f"2026-11-28_19-31-4{i}_{i}", [f"algo.model.ent_coef=0.00{i + 1}"], 0, {4096: mean})
    (search / "optuna.db").write_bytes(b"SQLite format 3\x00")
    (search / "comparison").mkdir()
    (search / "comparison" / "table.csv").write_text("config,env\n")
    (search / "comparison" / "report.html").write_text("<html>the search's comparison</html>")
    with client(tmp_path) as http:
        sweeps = http.get("/api/sweeps").json()
        assert [(s["path"], s["jobs"], s["state"]) for s in sweeps] == [("multirun/2026-11-28/19-31-40", 2, "compared")]
        detail = http.get(f"/api/sweeps/{sweeps[0]['id']}")
        assert detail.status_code == 200 and len(detail.json()["jobs"]) == 2, detail.text
        report = http.get(detail.json()["report"])
        assert report.status_code == 200 and "the search's comparison" in report.text


def test_a_run_whose_name_holds_the_ids_separator_is_itself_not_another_run(tmp_path):
    """A run id is its path with ``/`` as ``~``: ``outputs/my~run`` was listed as ``outputs~my~run``, which named
    ``outputs/my/run``, so its page showed, and Stop, Resume or Reproduce acted on, another run (or a 404 where
    there was none). A ``~`` (and a ``%``) in a name is escaped in its id (the dashboard, through uvicorn:
    tests/e2e/test_service_security.py)."""
    names = ["my~run", "my/run", "50%~done", "a#b?c d", "%7E", "%25"]
    paths = [tmp_path / "outputs" / name for name in names]
    for path in paths:
        path.mkdir(parents=True)
    ids = [store.to_id(tmp_path, path) for path in paths]
    assert len(set(ids)) == len(names) and ids[1] == "outputs~my~run"
    assert [store.inside(tmp_path, id_) for id_ in ids] == [path.resolve() for path in paths]
    for bad in ("outputs~my%7", "outputs~my%41run", "outputs~%2E%2E", "outputs~%"):
        with pytest.raises(store.NotFound):
            store.inside(tmp_path, bad)
