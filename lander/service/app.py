"""The service's HTTP app (FastAPI; OpenAPI docs at ``/docs``): the token check, JSON errors, the dashboard page
at ``/`` and the endpoints of :mod:`lander.service.api_read` and :mod:`lander.service.api_write`."""

from __future__ import annotations

import hmac
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse

from lander.service import api_read, api_write, store
from lander.service.launcher import Launcher, Refused

EXPECTED = 'expected {"overrides": ["key=value", ...]}'


def create_app(root: Path, token: str | None = None) -> FastAPI:
    """The service for the runs and sweeps under ``root``; with ``token``, every request must carry it
    (``Authorization: Bearer <token>``, or ``?token=<token>`` for links and the page)."""
    app = FastAPI(title="lander", description="Launch, watch, stop, resume and compare lander runs.")
    app.state.root = root.resolve()
    app.state.launcher = Launcher(root)
    app.state.token = token
    app.middleware("http")(check_token)
    app.add_exception_handler(store.NotFound, not_found)  # type: ignore[arg-type]
    app.add_exception_handler(Refused, refused)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, bad_body)  # type: ignore[arg-type]
    app.get("/", response_class=HTMLResponse, include_in_schema=False)(page)
    app.include_router(api_read.router)
    app.include_router(api_write.router)
    return app


async def check_token(request: Request, call_next: Any) -> Any:
    token = request.app.state.token
    if token is not None:
        header = request.headers.get("authorization", "").removeprefix("Bearer ")
        given = header or request.query_params.get("token", "")
        if not hmac.compare_digest(given.encode(), token.encode()):
            return JSONResponse({"error": "a token is required: Authorization: Bearer <token>"}, 401)
    return await call_next(request)


async def not_found(_request: Request, exc: store.NotFound) -> JSONResponse:
    return JSONResponse({"error": f"not found: {exc}"}, 404)


async def refused(_request: Request, exc: Refused) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, exc.status)


async def bad_body(_request: Request, exc: RequestValidationError) -> JSONResponse:
    first = exc.errors()[0] if exc.errors() else {}
    if first.get("type") == "json_invalid":
        return JSONResponse({"error": f"request body: malformed JSON; {EXPECTED}"}, 400)
    where = ".".join(map(str, first.get("loc", [])))
    return JSONResponse({"error": f"request body: {first.get('msg', 'invalid')} at {where}; {EXPECTED}"}, 422)


def page() -> str:
    return resources.files("lander.service").joinpath("dashboard.html").read_text()
