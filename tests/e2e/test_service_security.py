"""Attacks on ``python -m lander.serve``, each tried for real (uvicorn in a subprocess, httpx, headless Chromium)
and each answered without running code, acting or leaking: requests that smuggle interpolations, DNS rebinding,
cross-site requests, hostile HTML in a copied run directory, planted configs, symlinks out of the root, and
requests too large or too many. Every test here failed on the service before these defences."""

from __future__ import annotations

import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from omegaconf import OmegaConf

from helpers import REPO, composed, fake_run, lander, lander_env
from helpers.browser import open_page
from helpers.service import LONG, TINY, Service, free_port, service

SECRET = "s3cr3t-of-the-service-environment"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, Path]]:
    """The service with its default settings over a root that holds planted directories."""
    root = tmp_path_factory.mktemp("attacked")
    with service(root, env=lander_env(LANDER_TEST_SECRET=SECRET)) as svc:
        yield svc, root


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def launched(svc: Service) -> int:
    """How many processes the service has started so far."""
    return len(svc.get("/api/launched").json())


def plant_run(root: Path, name: str, status: str = "interrupted", **config: object) -> Path:
    """A run directory copied from elsewhere: a real run's config with ``config`` merged in, and its summary."""
    run = root / "outputs" / name
    (run / ".hydra").mkdir(parents=True)
    cfg = OmegaConf.to_container(composed("algo=ppo", *TINY))
    merged = OmegaConf.merge(OmegaConf.create(cfg), OmegaConf.create(config))
    (run / ".hydra" / "config.yaml").write_text(OmegaConf.to_yaml(merged))
    (run / ".hydra" / "overrides.yaml").write_text("- algo=ppo\n")
    (run / "summary.json").write_text(json.dumps({"status": status, "algo": "ppo", "timesteps": 0}))
    return run


def test_overrides_that_smuggle_an_interpolation_are_refused_and_never_run(served):
    svc, root = served
    count = launched(svc)
    pwned = root / "pwned.txt"
    decode = [  # oc.decode of a string that spells _target_ only once resolved: builtins.open(pwned, "w")
        "logger.wandb.job_type=et_",
        rf"logger.wandb.group=\{{_targ$\{{logger.wandb.job_type\}}\: builtins.open\, _args_\: \[{pwned}\, w\]\}}",
        r"+callbacks.x=$\{oc.decode\:$\{logger.wandb.group\}\}",
    ]
    cases = [
        decode,
        [r"logger.wandb.project=$\{oc.env\:LANDER_TEST_SECRET\}"],  # escaped: no "${" in the request
        [r"logger.wandb.project=x$\{oc.env\:LANDER_TEST_SECRET\}"],
        [r"logger.wandb.project='\${oc.env:LANDER_TEST_SECRET}'"],
        [r"logger.wandb.tags=[a,$\{oc.env\:LANDER_TEST_SECRET\}]"],
        [r"+algo.model.policy_kwargs={net_arch:[8],x:$\{oc.create\:1\}}"],
    ]
    before = tree(root)
    for overrides in cases:
        response = svc.post("/api/runs", json={"overrides": [*overrides, *TINY, "logger=none"]})
        assert response.status_code == 422, (overrides, response.text)
        assert "interpolation" in response.json()["error"], response.text
    response = svc.post("/api/sweeps", json={"overrides": ["seed=0,1", r"logger.wandb.project=$\{oc.env\:HOME\}"]})
    assert response.status_code == 422 and "interpolation" in response.json()["error"], response.text
    for key in (
        "+callbacks.x._target_=builtins.print",
        "+algo.model.policy_kwargs={_target_:builtins.print}",
        "env.wrappers=[{_target_:builtins.print}]",
        "+algo.model.policy_kwargs={_args_:[1]}",
    ):
        response = svc.post("/api/runs", json={"overrides": [key]})
        assert response.status_code == 422 and "_target_" in response.json()["error"], (key, response.text)
    assert launched(svc) == count and tree(root) == before and not pwned.exists()


def test_a_launched_run_imports_nothing_from_the_root(served):
    """A module planted in the root (here a Hydra plugin, which Hydra imports at start) is never imported by the
    processes the service starts: they do not run with the root on ``sys.path``."""
    svc, root = served
    plugin = root / "hydra_plugins" / "planted_plugin"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(f"open({str(root / 'imported.txt')!r}, 'w').close()\n")
    started = svc.post("/api/runs", json={"overrides": ["algo=ppo", *TINY, "logger=none", "video.enabled=false"]})
    assert started.status_code == 201, started.text
    run = svc.wait_for(f"/api/runs/{started.json()['id']}", lambda r: r["status"] != "created" and not r["active"])
    assert run["status"] == "completed", (root / run["path"] / "service.log").read_text()[-3000:]
    assert not (root / "imported.txt").exists()


def test_a_downloaded_folder_runs_no_code_in_the_service_itself(tmp_path):
    """The documented default, ``python -m lander.serve`` started in the folder it serves: a planted Hydra plugin
    (``hydra_plugins/``, which Hydra's discovery imports) and a planted tuned config naming ``env.id: evil:...``
    beside ``evil.py``. Before: the service process imported both (the working directory was first on its
    ``sys.path``, and its validation imported the env's module before the trust check). Now: neither, and the
    planted config is refused (422) by the trust check."""
    root = tmp_path / "downloaded"
    (root / "hydra_plugins" / "planted").mkdir(parents=True)
    (root / "hydra_plugins" / "planted" / "__init__.py").write_text(f"open({str(tmp_path / 'plugin.txt')!r}, 'w')\n")
    (root / "evil.py").write_text(f"open({str(tmp_path / 'evil.txt')!r}, 'w')\n")
    (root / "conf" / "tuned").mkdir(parents=True)
    (root / "conf" / "tuned" / "ppo_lunar_lander.yaml").write_text(
        "# @package _global_\nenv:\n  id: evil:CartPole-v1\n"
    )
    with service(root, cwd=root) as svc:
        planted = svc.post("/api/runs", json={"overrides": ["algo=ppo", "env=lunar_lander", *TINY]})
        assert planted.status_code == 422 and "evil" in planted.json()["error"], planted.text
        other = svc.post("/api/runs", json={"overrides": ["algo=a2c", "env=cartpole", *TINY, "logger=none"]})
        assert other.status_code == 201, other.text
    assert not (tmp_path / "plugin.txt").exists() and not (tmp_path / "evil.txt").exists()


def test_a_rebinding_host_is_refused(served):
    svc, _root = served
    count = launched(svc)
    for path in ("/api/runs", "/", "/openapi.json"):
        response = svc.get(path, headers={"Host": "rebind.test"})
        assert response.status_code == 403 and "Host" in response.json()["error"], (path, response.text)
    response = svc.post("/api/runs", json={"overrides": TINY}, headers={"Host": f"rebind.test:{svc.port}"})
    assert response.status_code == 403
    assert svc.get("/api/runs", headers={"Host": f"localhost:{svc.port}"}).status_code == 200
    assert launched(svc) == count


def test_a_page_served_by_a_rebound_name_reaches_nothing(served, tmp_path):
    """Chromium at ``http://rebind.test:<port>/`` (resolving to 127.0.0.1): the page's same-origin requests reach
    the service and are refused."""
    svc, _root = served
    count = launched(svc)
    attack = f"""<html><body><script>
      (async () => {{
        const out = {{}};
        for (const [name, init] of [["list", {{}}], ["launch", {{method: "POST", headers: {{"Content-Type":
            "application/json"}}, body: JSON.stringify({{overrides: {json.dumps(TINY)}}})}}]]) {{
          const url = name === "list" ? "/api/runs" : "/api/runs";
          try {{ const r = await fetch(url, init); out[name] = r.status; }} catch (e) {{ out[name] = String(e); }}
        }}
        document.title = JSON.stringify(out);
      }})();
    </script></body></html>"""
    origin = f"http://rebind.test:{svc.port}"

    def route(route):  # type: ignore[no-untyped-def]  # the attacker's server gave the page, then DNS moved
        if route.request.url == origin + "/attack.html":
            route.fulfill(status=200, content_type="text/html", body=attack)
        else:
            route.continue_()

    # Chromium's own Private Network Access checks would also stop this page; Firefox and Safari have none, so
    # they are off here, leaving the service's Host check alone between the page and the API
    pna = "PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks"
    args = ("--host-resolver-rules=MAP rebind.test 127.0.0.1", f"--disable-features={pna}")
    with open_page("about:blank", offline=False, args=args) as (page, _visit):
        page.route("**/*", route)
        page.goto(origin + "/attack.html")
        page.wait_for_function("document.title.length > 0", timeout=30000)
        result = json.loads(page.title())
    assert result == {"list": 403, "launch": 403}, result
    assert launched(svc) == count


@contextmanager
def attacker_site(html: str) -> Iterator[str]:
    """Another origin on this machine (127.0.0.2) serving one page: ``http://127.0.0.2:<port>/``."""
    directory = Path(os.environ.get("TMPDIR", "/tmp"))
    port = free_port("127.0.0.2")
    page = f"attack-{port}.html"
    (directory / page).write_text(html)
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.2", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.2:{port}/{page}"
    finally:
        server.shutdown()
        (directory / page).unlink()


def test_a_cross_site_page_cannot_launch_or_stop(tmp_path):
    """A page of another origin sends the requests a browser lets any page send (``no-cors`` POSTs, a form): the
    service refuses them all; a run it trains keeps training. The user has the service's cookie in the browser."""
    with service(tmp_path) as svc:
        started = svc.post("/api/runs", json={"overrides": LONG})
        run_id = started.json()["id"]
        svc.wait_for(f"/api/runs/{run_id}", lambda r: r["status"] == "running")
        target = svc.url
        attack = f"""<html><body>
          <form id="f" method="POST" action="{target}/api/runs" enctype="text/plain">
            <input name='{{"overrides": ["seed' value='1"]}}'></form>
          <script>
          (async () => {{
            const send = async (url, init) => {{ try {{ await fetch(url, init); }} catch (e) {{}} }};
            await send("{target}/api/runs/{run_id}/stop", {{method: "POST", mode: "no-cors"}});
            await send("{target}/api/runs/{run_id}/stop", {{method: "POST", mode: "no-cors", credentials: "include",
                       headers: {{"Content-Type": "text/plain"}}, body: "{{}}"}});
            await send("{target}/api/runs", {{method: "POST", mode: "no-cors", credentials: "include",
                       headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{overrides: ["seed=1"]}})}});
            document.title = "sent";
          }})();
          </script></body></html>"""
        with attacker_site(attack) as url, open_page(svc.printed_url, offline=False) as (page, _visit):
            page.wait_for_selector("#runs tr", timeout=30000)  # the user's dashboard: the cookie is set
            attacker = page.context.new_page()
            attacker.goto(url)
            attacker.wait_for_function("document.title === 'sent'", timeout=30000)
            with attacker.expect_navigation():
                attacker.evaluate("document.getElementById('f').submit()")  # a cross-site form POST
        time.sleep(2)
        (launched,) = svc.get("/api/launched").json()  # the one run the test started, nothing else
        assert launched["alive"]
        run = svc.get(f"/api/runs/{run_id}").json()
        assert run["status"] == "running", run
        assert svc.post(f"/api/runs/{run_id}/stop", json={}).status_code == 200
        svc.wait_for(f"/api/runs/{run_id}", lambda r: r["status"] == "interrupted")


HOSTILE_REPORT = """<html><body><h1>report</h1><script>
(async () => {
  const out = {};
  try { out.cookie = document.cookie; } catch (e) { out.cookie = "blocked"; }  // throws in a sandbox
  try { out.origin = window.origin; } catch (e) { out.origin = String(e); }
  try { const r = await fetch("/api/runs"); out.list = r.status; } catch (e) { out.list = "blocked"; }
  try {
    const r = await fetch("/api/runs", {method: "POST", headers: {"Content-Type": "application/json"},
                                       body: JSON.stringify({overrides: ["seed=7"]})});
    out.launch = r.status;
  } catch (e) { out.launch = "blocked"; }
  try {
    await fetch("/api/runs", {method: "POST", mode: "no-cors", body: JSON.stringify({overrides: ["seed=8"]})});
    out.nocors = "sent";
  } catch (e) { out.nocors = "blocked"; }
  document.body.setAttribute("data-result", JSON.stringify(out));
})();
</script></body></html>"""


def test_a_hostile_report_opened_through_the_service_cannot_call_it(served):
    svc, root = served
    count = launched(svc)
    run = plant_run(root, "copied_from_a_colleague")
    (run / "report.html").write_text(HOSTILE_REPORT)
    run_id = "outputs~copied_from_a_colleague"
    response = svc.get(f"/api/runs/{run_id}/files/report.html")
    assert "sandbox" in response.headers["content-security-policy"]
    with open_page(svc.printed_url, offline=False) as (page, _visit):
        page.wait_for_selector(f"#runs tr[data-id='{run_id}'] a:text('report.html')", timeout=30000)
        with page.context.expect_page() as opened:
            page.click(f"#runs tr[data-id='{run_id}'] a:text('report.html')")
        report = opened.value
        report.wait_for_selector("body[data-result]", timeout=30000)
        result = json.loads(report.get_attribute("body", "data-result"))
        report.wait_for_timeout(1000)
    assert result["cookie"] in ("", "blocked") and result["origin"] == "null", result  # opaque origin, no cookie
    assert result["list"] == "blocked" and result["launch"] == "blocked", result
    assert launched(svc) == count  # the no-cors POST started nothing


def test_a_planted_config_is_not_instantiated_on_resume(served):
    svc, root = served
    count = launched(svc)
    pwned = root / "pwned-by-resume.txt"
    plant_run(root, "planted_callback", callbacks={"x": {"_target_": "builtins.open", "_args_": [str(pwned), "w"]}})
    plant_run(root, "planted_model", algo={"model": {"_target_": "planted_module.Model"}})
    plant_run(
        root,
        "planted_class",
        algo={
            "model": {
                "policy_kwargs": {
                    "activation_fn": {"_target_": "hydra.utils.get_class", "path": "planted_module.Activation"}
                }
            }
        },
    )
    plant_run(root, "planted_decode", callbacks={"x": "${oc.decode:'{a: 1}'}"})
    plant_run(root, "planted_env", env={"id": "planted_module:Env-v0"})
    (plant_run(root, "planted_log") / "run.log").symlink_to(root / "appended-by-resume.txt")  # a file of yours
    expected = {
        "planted_log": "run.log: links out",
        "planted_callback": "builtins.open",
        "planted_model": "planted_module.Model",
        "planted_class": "planted_module.Activation",
        "planted_decode": "oc.decode",
        "planted_env": "planted_module",
    }
    for name, words in expected.items():
        response = svc.post(f"/api/runs/outputs~{name}/resume", json={})
        assert response.status_code == 422, (name, response.text)
        assert words in response.json()["error"], response.text
        assert name == "planted_log" or "--allow-target" in response.json()["error"], response.text
    assert launched(svc) == count and not pwned.exists() and not (root / "appended-by-resume.txt").exists()


def test_a_run_started_for_the_service_checks_its_saved_config_itself(tmp_path):
    """The check is in ``lander.run`` too (the file could change between the service's check and the start)."""
    pwned = tmp_path / "pwned.txt"
    run = plant_run(tmp_path, "planted", callbacks={"x": {"_target_": "builtins.open", "_args_": [str(pwned), "w"]}})
    result = lander(f"resume={run}", env=lander_env(LANDER_ALLOWED_TARGETS=""))
    assert result.returncode == 2 and "builtins.open" in result.stderr + result.stdout, result.stderr[-2000:]
    assert not pwned.exists()


def test_a_config_is_shown_without_resolving_the_environment(served):
    svc, root = served
    plant_run(root, "env_reader", logger={"project": "${oc.env:LANDER_TEST_SECRET}"})
    response = svc.get("/api/runs/outputs~env_reader")
    assert response.status_code == 200 and SECRET not in response.text, response.text
    assert response.json()["config"]["logger"]["project"] == "${oc.env:LANDER_TEST_SECRET}"


def test_a_run_whose_name_holds_the_ids_separator_is_reached_as_itself(served):
    """``outputs/sep~run`` was listed with the id ``outputs~sep~run``, which is ``outputs/sep/run``'s: its page, and
    its Stop, Resume and Reproduce, went to that other run. Its id escapes the ``~``; the dashboard quotes ids in
    its URLs (a ``#`` or ``?`` in a name cut the URL short), and each run's ``run.log`` link opens its own."""
    svc, root = served
    names = ["sep~run", "sep/run", "50%~done", "a#b?c d"]
    for name in names:
        (plant_run(root, name, status="completed") / "run.log").write_text(f"the log of {name}\n")
    listed = {run["path"]: run["id"] for run in svc.get("/api/runs").json()}
    ids = {name: listed[f"outputs/{name}"] for name in names}
    assert len(set(ids.values())) == len(names), ids
    for name, id_ in ids.items():
        shown = svc.get(f"/api/runs/{quote(id_, safe='')}")
        assert shown.status_code == 200 and shown.json()["path"] == f"outputs/{name}", (name, shown.text[:300])
    with open_page(svc.printed_url, offline=False) as (page, _visit):
        page.wait_for_selector("#runs tr", timeout=30000)
        for name, id_ in ids.items():
            row = page.locator(f"#runs tr[data-id='{id_}']")
            href = row.locator("a", has_text="run.log").get_attribute("href")
            assert page.evaluate("h => fetch(h).then(r => r.text())", href) == f"the log of {name}\n", (name, href)


def test_files_behind_symlinks_out_of_the_root_are_not_read(served, tmp_path):
    svc, root = served
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = {
        "summary.json": json.dumps({"status": "completed", "algo": SECRET}),
        "eval.csv": f"timesteps,mean,sem\n1,{len(SECRET)},0\n",
        "overrides.yaml": f"- {SECRET}\n",
        "report.html": f"<p>{SECRET}</p>",
        "table.csv": f"config,seeds\n{SECRET},1\n",
    }
    for name, text in secret.items():
        (outside / name).write_text(text)
    run = plant_run(root, "linked")
    for name, place in (
        ("summary.json", "summary.json"),
        ("eval.csv", "metrics/eval.csv"),
        ("overrides.yaml", ".hydra/overrides.yaml"),
        ("report.html", "report.html"),
    ):
        (run / place).parent.mkdir(exist_ok=True)
        (run / place).unlink(missing_ok=True)
        (run / place).symlink_to(outside / name)
    (run / ".lander.storage.lock").symlink_to(outside / "created-by-the-lock-check")
    sweep = root / "multirun" / "linked_sweep"
    (sweep / "comparison").mkdir(parents=True)
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    for name in ("report.html", "table.csv"):
        (sweep / "comparison" / name).symlink_to(outside / name)
    responses = [
        svc.get(path)
        for path in (
            "/api/runs",
            "/api/runs/outputs~linked",
            "/api/runs/outputs~linked/metrics/eval",
            "/api/runs/outputs~linked/files/report.html",
            "/api/runs/outputs~linked/files/summary.json",
            "/api/sweeps",
            "/api/sweeps/multirun~linked_sweep",
            "/api/sweeps/multirun~linked_sweep/report",
        )
    ]
    for response in responses:
        assert SECRET not in response.text, (response.url, response.text[:500])
        assert response.status_code in (200, 404), (response.url, response.status_code, response.text[:500])
    assert [r.status_code for r in responses[3:5]] == [404, 404] and responses[-1].status_code == 404
    assert not (outside / "created-by-the-lock-check").exists()


def test_limits_are_answered_with_their_status_and_one_line(served):
    svc, root = served
    count = launched(svc)
    before = tree(root)
    checks = [
        ("/api/sweeps", {"overrides": ["seed=range(0,100000)"]}, 422, "jobs"),
        ("/api/sweeps", {"overrides": ["seed=range(0,1000000000000)", "gamma=0.9,0.99"]}, 422, "jobs"),
        ("/api/runs", {"overrides": [f"seed={i % 3}" for i in range(500)]}, 422, "overrides"),
        ("/api/runs", {"overrides": ["logger.wandb.project=" + "x" * 5000]}, 422, "characters"),
        ("/api/runs", {"overrides": ["x" * 2_000_000]}, 413, "bytes"),
    ]
    for path, body, status, words in checks:
        started = time.monotonic()
        response = svc.post(path, json=body, timeout=30)
        assert response.status_code == status and words in response.json()["error"], (body, response.text[:300])
        assert "\n" not in response.json()["error"] and time.monotonic() - started < 20
    assert svc.post("/api/runs", content=b"x", headers={"Content-Type": "text/plain"}).status_code == 415
    for path in ("/api/runs/outputs~%00x", "/api/runs/outputs~linked/files/%00", "/api/sweeps/%00"):
        response = svc.get(path)
        assert response.status_code == 404 and "error" in response.json(), (path, response.text)
    assert tree(root) == before and launched(svc) == count


def test_unreadable_runs_are_marked_and_the_list_still_answers(served):
    svc, root = served
    for name, content in (("empty_list", b"[]"), ("truncated", b'{"status": "compl'), ("binary", b"\x80\xff\x00")):
        run = plant_run(root, f"corrupt_{name}")
        (run / "summary.json").write_bytes(content)
    huge = plant_run(root, "corrupt_huge")
    with (huge / "summary.json").open("wb") as handle:
        handle.truncate(100 * 2**20)  # 100 MB
    fifo = plant_run(root, "corrupt_fifo")
    (fifo / "summary.json").unlink()
    os.mkfifo(fifo / "summary.json")  # would block any reader
    (fifo / "metrics").mkdir()
    os.mkfifo(fifo / "metrics" / "eval.csv")
    response = svc.get("/api/runs", timeout=30)
    assert response.status_code == 200, response.text[:500]
    listed = {r["path"].split("/")[-1]: r for r in response.json()}
    for name in ("empty_list", "truncated", "binary", "huge", "fifo"):
        assert listed[f"corrupt_{name}"]["status"] == "unreadable", listed[f"corrupt_{name}"]
        assert "summary.json" in listed[f"corrupt_{name}"]["error"]
    assert svc.get("/api/runs/outputs~corrupt_fifo/metrics/eval", timeout=30).status_code == 404
    assert svc.get("/api/runs/outputs~corrupt_huge", timeout=30).status_code == 200


def test_at_most_max_running_processes_are_started(tmp_path):
    with service(tmp_path, "--max-running", "1") as svc:
        first = svc.post("/api/runs", json={"overrides": LONG})
        assert first.status_code == 201, first.text
        second = svc.post("/api/runs", json={"overrides": LONG})
        assert second.status_code == 429 and "1 running" in second.json()["error"], second.text
        run_id = first.json()["id"]
        svc.wait_for(f"/api/runs/{run_id}", lambda r: r["status"] == "running")
        svc.post(f"/api/runs/{run_id}/stop", json={})
        svc.wait_for("/api/launched", lambda rows: not rows[0]["alive"])
        third = svc.post("/api/runs", json={"overrides": TINY})
        assert third.status_code == 201, third.text  # room again once it ended


def test_a_token_is_on_by_default_and_the_printed_url_logs_in(served):
    svc, _root = served
    assert svc.token and len(svc.token) >= 32 and svc.printed_url.startswith(f"{svc.url}/?token=")
    anonymous = Service(svc.url, svc.port, svc.printed_url, None)
    for path in ("/api/runs", "/", "/openapi.json", "/api/runs/x/files/report.html"):
        assert anonymous.get(path).status_code == 401, path
    assert anonymous.post("/api/runs", json={"overrides": TINY}).status_code == 401
    assert anonymous.get("/api/runs", params={"token": "wrong"}).status_code == 401
    with httpx.Client(base_url=svc.url) as browser:  # a browser: the printed URL sets a cookie and drops the token
        login = browser.get(svc.printed_url.removeprefix(svc.url))
        assert login.status_code == 303 and login.headers["location"] == "/"
        assert (
            "httponly" in login.headers["set-cookie"].lower()
            and "samesite=strict" in login.headers["set-cookie"].lower()
        )
        assert browser.get("/api/runs").status_code == 200  # the cookie
        origin = {"Origin": svc.url, "Content-Type": "application/json"}
        without = browser.post("/api/runs", content=b'{"overrides": ["seed=x"]}', headers=origin)
        assert without.status_code == 403 and "X-XSRF-Token" in without.json()["error"]  # the cookie alone
        xsrf = browser.cookies[f"lander_xsrf_{svc.port}"]
        withit = browser.post(
            "/api/runs", content=b'{"overrides": ["seed=x"]}', headers=origin | {"X-XSRF-Token": xsrf}
        )
        assert withit.status_code == 422  # it reached the check of the overrides
        elsewhere = browser.post(
            "/api/runs",
            content=b'{"overrides": ["seed=x"]}',
            headers={"Origin": "http://127.0.0.2:8000", "Content-Type": "application/json", "X-XSRF-Token": xsrf},
        )
        assert elsewhere.status_code == 403 and "Origin" in elsewhere.json()["error"]


def serve_refused(root: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m lander.serve --root <root> <args>`` run to its exit (a start it refuses), its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "lander.serve", "--root", str(root), *args],
        cwd=REPO,
        env=lander_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_no_token_needs_an_acknowledgement_and_this_machine(tmp_path):
    refused = serve_refused(tmp_path, "--no-token")
    assert refused.returncode == 2 and "--no-token-acknowledged" in refused.stderr, refused.stderr
    remote = serve_refused(tmp_path, "--host", "0.0.0.0", "--no-token", "--no-token-acknowledged")
    assert remote.returncode == 2 and "127.0.0.1" in remote.stderr, remote.stderr
    with service(tmp_path, "--no-token", "--no-token-acknowledged") as svc:
        assert svc.token is None and svc.get("/api/runs").status_code == 200
        assert svc.get("/api/runs", headers={"Host": "rebind.test"}).status_code == 403  # the Host check stays
        response = svc.post("/api/runs", json={"overrides": ["seed=x"]}, headers={"Origin": "http://127.0.0.2:80"})
        assert response.status_code == 403  # and so does the Origin check
    assert not (tmp_path / ".lander-service").exists()


def test_a_chosen_token_that_is_short_or_breaks_the_url_is_refused(tmp_path):
    """``--token abc`` was taken: with nothing to slow a guesser down, 3 characters fall to 2**18 guesses. A token
    with ``&`` or a space was taken too, and the printed URL's ``?token=`` was cut there."""
    for args, env, shown in [
        (["--token", "abc"], {}, "3 characters;"),
        ([], {"LANDER_TOKEN": "a b&cdefghijklmnopq"}, "19 characters, with ' ', '&';"),
    ]:
        refused = subprocess.run(
            [sys.executable, "-m", "lander.serve", "--root", str(tmp_path), "--port", "1", *args],
            cwd=REPO,
            env=lander_env() | env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert refused.returncode == 2, refused.stderr
        assert f"error: --token (or LANDER_TOKEN): {shown} a chosen token is at least 16 characters" in refused.stderr
    assert os.listdir(tmp_path) == []


def test_a_port_another_process_holds_is_refused_before_the_url_is_printed(tmp_path):
    """The URL carries the token: printed for a port another process listens on (before the service bound it, as
    it was), opening it hands that process the token. Now the port is bound first, and a port out of range or held
    is one line, exit 2."""

    with socket.socket() as other:  # another process's server on the port
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        held = serve_refused(tmp_path, "--port", str(port))
    assert held.returncode == 2, held.stderr[-2000:]
    assert f"--port {port}: cannot listen there (Address already in use)" in held.stderr
    assert "token=" not in held.stdout + held.stderr and "Traceback" not in held.stderr
    for port_number in ("0", "65536"):  # 0 printed a URL of port 0; 65536 was a traceback
        wrong = serve_refused(tmp_path, "--port", port_number)
        assert wrong.returncode == 2 and f"--port {port_number}: a port number from 1 to 65535" in wrong.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_bound_to_every_address_the_printed_urls_open_the_dashboard(tmp_path):
    """``--host 0.0.0.0`` printed ``http://0.0.0.0:<port>/?token=...``, a Host the service refuses (403): the one
    URL it gave did not open. It prints one for this machine (127.0.0.1) and one per ``--allow-host`` name, each
    answered with the dashboard's login (303)."""
    with service(tmp_path, "--host", "0.0.0.0", "--allow-host", "myserver.lab") as svc:
        port, output = svc.port, "".join(svc.output)
        urls = re.findall(r"http://\S+", output)
        assert {url.split("/")[2] for url in urls} == {f"127.0.0.1:{port}", f"myserver.lab:{port}"}, output
        for url in urls:
            host = url.split("/")[2]
            with httpx.Client(base_url=svc.url, headers={"Host": host}) as browser:
                assert browser.get("/" + url.split("/", 3)[3]).status_code == 303, url


def test_a_root_inside_a_run_is_refused(tmp_path):
    """``cd outputs/<run>; python -m lander.serve``: the dashboard listed nothing there, and a run launched from it
    made ``outputs/`` inside that run (then refused as inside a run, its launch folder left). Now one line, exit 2,
    naming the directory the run was made from; nothing written."""
    root = tmp_path / "project"
    run = fake_run(root / "outputs" / "2026-01-01", "12-00-00_ppo_seed-0", [], 0, {1000: -100.0})
    for where in (run, run / "metrics"):
        before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
        refused = serve_refused(where, "--port", "1")
        assert refused.returncode == 2, refused.stderr
        said = "the run" if where == run else "inside the run"
        assert f"--root {where} is {said} {run}: the dashboard serves the directory" in refused.stderr, refused.stderr
        assert f"--root {root}" in refused.stderr, refused.stderr
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    beside = serve_refused(run / "..", "--max-running", "0")  # the folder of runs, reached through the run: its
    assert beside.returncode == 2 and "inside the run" not in beside.stderr, beside.stderr  # root passes
    assert "--max-running" in beside.stderr, beside.stderr
