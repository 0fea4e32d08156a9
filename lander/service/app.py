"""The service's HTTP app (FastAPI; its OpenAPI schema at ``/openapi.json``): the dashboard page at ``/`` and the
endpoints of :mod:`lander.service.routes_read` and :mod:`lander.service.routes_write`, behind
:class:`lander.service.guard.Guard` (Host, token, Origin, sizes), with every error as JSON in one line."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response

from lander.service import routes_read, routes_write, store
from lander.service.guard import Guard, cookie_names
from lander.service.launcher import Launcher
from lander.service.overrides import Refused

log = logging.getLogger(__name__)
EXPECTED = {  # what each POST takes, said when a body is not that
    "comparisons": 'expected {"runs": a list of distinct run ids}',
    "signal": 'expected {} or {"group": true}',
    "launch": 'expected {"overrides": a list of strings such as ["algo=ppo", "seed=0"]}',
}
# the dashboard is lander's own page: its script from /dashboard.js only, requests to the service only
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)


def create_app(
    root: Path,
    token: str | None,
    port: int,
    hosts: Iterable[str] = (),
    max_running: int = 1,
    max_jobs: int = 100,
    allowed: Iterable[str] = (),
) -> Guard:
    """The service for the runs and sweeps under ``root``.

    :param token: the token every request must carry (None: ``--no-token``, this machine only)
    :param port: the port it is served on (checked in the Host header)
    :param hosts: more host names it answers to (``--allow-host``)
    :param max_running: the most processes it keeps running at once (``--max-running``)
    :param max_jobs: the most jobs a sweep request may expand to (``--max-jobs``)
    :param allowed: target prefixes, beyond lander's own, that launched and resumed runs may import
    """
    app = FastAPI(
        title="lander",
        description="Launch, watch, stop, resume and compare lander runs.",
        docs_url=None,  # Swagger UI would load its scripts from a CDN onto the service's origin
        redoc_url=None,
    )
    app.state.root = root.resolve()
    app.state.xsrf_cookie = cookie_names(port)[1]  # named in the page: a proxy may serve it on another port
    app.state.launcher = Launcher(root, max_running, max_jobs, list(allowed))
    app.add_exception_handler(store.NotFound, not_found)  # type: ignore[arg-type]
    app.add_exception_handler(Refused, refused)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, bad_body)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, failed)
    app.get("/", response_class=HTMLResponse, include_in_schema=False)(page)
    app.get("/dashboard.js", include_in_schema=False)(script)
    app.include_router(routes_read.router)
    app.include_router(routes_write.router)
    return Guard(app, token, port, hosts)


async def not_found(_request: Request, exc: store.NotFound) -> JSONResponse:
    return JSONResponse({"error": f"not found: {exc}"}, 404)


async def refused(_request: Request, exc: Refused) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, exc.status)


async def bad_body(request: Request, exc: RequestValidationError) -> JSONResponse:
    path = request.url.path
    kind = "comparisons" if path == "/api/comparisons" else "signal" if path.endswith(SIGNALS) else "launch"
    first = exc.errors()[0] if exc.errors() else {}
    if first.get("type") == "json_invalid":
        return JSONResponse({"error": f"request body: malformed JSON; {EXPECTED[kind]}"}, 400)
    loc = [str(part) for part in first.get("loc", [])]
    if loc[:1] in (["query"], ["path"]):  # ?since=abc: a parameter of the URL, not a body
        return JSONResponse({"error": f"{loc[0]} parameter {'.'.join(loc[1:])}: {first.get('msg', 'invalid')}"}, 422)
    return JSONResponse(
        {"error": f"request body: {first.get('msg', 'invalid')} at {'.'.join(loc)}; {EXPECTED[kind]}"}, 422
    )


SIGNALS = ("/stop", "/pause", "/continue")


async def failed(request: Request, exc: Exception) -> JSONResponse:
    """Anything unforeseen: logged with its traceback, answered in one line of JSON."""
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"error": f"internal error: {type(exc).__name__} (see the service's log)"}, 500)


def page(request: Request) -> Response:
    text = resources.files("lander.service").joinpath("dashboard.html").read_text()
    text = text.replace("XSRF_COOKIE", request.app.state.xsrf_cookie)
    return HTMLResponse(text, headers={"Content-Security-Policy": PAGE_POLICY})


def script() -> Response:
    text = resources.files("lander.service").joinpath("dashboard.js").read_text()
    return Response(text, media_type="text/javascript")
