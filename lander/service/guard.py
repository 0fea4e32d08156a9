"""Who may talk to the service, and how: checked on every request before the app sees it (an ASGI middleware).

Modelled on Jupyter Server, since the service starts Python processes as the user:

- **Host**: the ``Host`` header must name this service (127.0.0.1, localhost or [::1] with its port, the address
  it is bound to, or a name given with ``--allow-host``): a page of another site whose name was rebound to
  127.0.0.1 (DNS rebinding) is refused (403).
- **Token**: on by default, random at each start. The URL printed at start (``/?token=...``) sets it as an
  HttpOnly, SameSite=Strict cookie (one per port) and redirects to ``/``, so the dashboard works after one click;
  scripts send ``Authorization: Bearer <token>`` (or Jupyter's ``Authorization: token <token>``). Without it: 401.
- **State changes** (POST): a JSON body (``Content-Type: application/json``; no simple cross-site request is
  one), an ``Origin`` (or ``Referer``) that is the service's own where the browser sends one, and the token in
  a header: ``Authorization: Bearer``, or for the dashboard the ``X-XSRF-Token`` header echoing the
  ``lander_xsrf_<port>`` cookie (double submit: a page of another origin cannot read it). Bodies of at most
  :data:`MAX_BODY` bytes (413), with a ``Content-Length`` (411).
- **Headers** on every response: ``nosniff``, no referrer, no framing (clickjacking), same-origin resources.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

MAX_BODY = 64 * 1024  # a launch request is a few hundred bytes
LOCAL_NAMES = ("127.0.0.1", "localhost", "::1")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
Refusal = tuple[int, Any, list[tuple[str, str]]]  # status, body (a dict: JSON), more headers
HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-resource-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cache-control": "no-store",
}
LOGIN = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>lander: token</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 640px; margin: 60px auto">
<h1>lander</h1><p>This service needs its token. Open the URL that <code>python -m lander.serve</code> printed when it
started (<code>http://127.0.0.1:PORT/?token=...</code>), or paste the token here:</p>
<form method="get" action="/"><input name="token" type="password" size="50" autofocus> <button>Open</button></form>
</body></html>"""


class Guard:
    """The checks above, around the service's ASGI app.

    :param app: the service's app
    :param token: the token clients must give; None only for ``--no-token`` on this machine
    :param port: the service's port (the Host header's, and the cookies' names)
    :param hosts: host names the service answers to besides 127.0.0.1, localhost and [::1] (``--allow-host``)
    """

    def __init__(self, app: Any, token: str | None, port: int, hosts: Iterable[str] = ()) -> None:
        self.app, self.token, self.port = app, token, port
        self.hosts = {h.lower().strip("[]") for h in hosts}
        self.xsrf = hmac.new(token.encode(), b"xsrf", hashlib.sha256).hexdigest() if token else None
        self.cookie, self.xsrf_cookie = cookie_names(port)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            await respond(send, *refusal)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                present = {k.decode("latin-1").lower() for k, _v in message.get("headers", [])}
                extra = [(k.encode(), v.encode()) for k, v in HEADERS.items() if k not in present]
                message = message | {"headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, bounded(receive, MAX_BODY), send_with_headers)

    def refusal(self, scope: dict[str, Any], headers: dict[str, str]) -> Refusal | None:
        """Why the request is refused (status, body, headers), or None to let it through."""
        host = headers.get("host", "")
        if not self.host_allowed(host):
            names = ", ".join([*LOCAL_NAMES[:2], "[::1]"])
            return (
                403,
                {
                    "error": f"Host {host!r} is not this service's ({names} on port {self.port}; --allow-host "
                    "NAME adds a name): refused, as a page of another site rebound to this machine "
                    "would be"
                },
                [],
            )
        unsafe = scope["method"] not in SAFE_METHODS
        if unsafe and (problem := self.state_change_problem(headers, host)):
            return problem
        return None if self.token is None else self.token_problem(scope, headers, unsafe)

    def token_problem(self, scope: dict[str, Any], headers: dict[str, str], unsafe: bool) -> Refusal | None:
        """A POST needs the token in a header (the bearer, or the cookie with its XSRF echo); a GET, the token
        anywhere (the printed URL's ``?token=`` on ``/`` is turned into the cookie)."""
        assert self.token is not None
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        try:
            cookies: SimpleCookie = SimpleCookie(headers.get("cookie", ""))
        except CookieError:  # a malformed Cookie header: as if none was sent
            cookies = SimpleCookie()
        scheme, _, credentials = headers.get("authorization", "").strip().partition(" ")
        # Bearer, or Jupyter Server's "token" scheme; schemes are case-insensitive (RFC 9110)
        bearer = credentials.strip() if scheme.lower() in ("bearer", "token") else ""
        cookie = cookies[self.cookie].value if self.cookie in cookies else ""
        given = query.get("token", [""])[0]
        if unsafe:
            if same(bearer, self.token):
                return None
            if same(cookie, self.token):
                if same(headers.get("x-xsrf-token", ""), self.xsrf or ""):
                    return None
                return (
                    403,
                    {
                        "error": "a POST with the service's cookie must carry the X-XSRF-Token header (the "
                        f"{self.xsrf_cookie} cookie's value): refused"
                    },
                    [],
                )
        elif same(bearer, self.token) or same(cookie, self.token):
            return None
        elif same(given, self.token):
            if scope["path"] == "/":  # the printed URL: the token becomes a cookie, and leaves the address bar
                return 303, b"", [("location", "/"), *self.cookies()]
            return None
        if scope["path"] == "/" and not unsafe:
            return 401, LOGIN.encode(), [("content-type", "text/html; charset=utf-8")]
        return (
            401,
            {
                "error": "a token is required: open the URL lander.serve printed (/?token=...), or send "
                "Authorization: Bearer <token>"
            },
            [],
        )

    def host_allowed(self, host: str) -> bool:
        """The Host header names this service: a local name or an address on its own port, or a name given with
        ``--allow-host`` on any port (a reverse proxy's); a port is digits only (``8765.evil.example`` is not)."""
        name, port = split_host(host)
        if port and not (port.isascii() and port.isdigit()):
            return False
        own_port = port == str(self.port) or (not port and self.port == 80)
        if name in LOCAL_NAMES or is_loopback(name) or is_address(name):
            return own_port and (name in self.hosts or name in LOCAL_NAMES or is_loopback(name))
        return name in self.hosts

    def state_change_problem(self, headers: dict[str, str], host: str) -> Refusal | None:
        """A POST must be JSON, of a bounded size, and come from the service's own page where a browser says."""
        if "content-length" not in headers or "transfer-encoding" in headers:
            return (
                411,
                {"error": "a POST needs a Content-Length and no Transfer-Encoding (a JSON body, {} if nothing else)"},
                [],
            )
        if not headers["content-length"].isdigit() or int(headers["content-length"]) > MAX_BODY:
            return (
                413,
                {
                    "error": f"a request body of {headers['content-length']} bytes: at most {MAX_BODY:,} "
                    "bytes are accepted"
                },
                [],
            )
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return 415, {"error": "state changes take a JSON body: Content-Type: application/json"}, []
        for name in ("origin", "referer"):
            if name in headers:
                source = urlsplit(headers[name])
                if source.scheme not in ("http", "https") or source.netloc.lower() != host.lower():
                    return (
                        403,
                        {
                            "error": f"Origin {headers[name]!r} is not this service's page: a state change "
                            "comes from the dashboard or a script, never from another site"
                        },
                        [],
                    )
                break  # Origin decides where it is sent; Referer only where it is not
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return 403, {"error": f"Origin: a {headers['sec-fetch-site']} request (Sec-Fetch-Site): refused"}, []
        return None

    def cookies(self) -> list[tuple[str, str]]:
        flags = "Path=/; SameSite=Strict"
        return [
            ("set-cookie", f"{self.cookie}={self.token}; HttpOnly; {flags}"),
            ("set-cookie", f"{self.xsrf_cookie}={self.xsrf}; {flags}"),
        ]


def bounded(receive: Any, limit: int) -> Any:
    """``receive`` that ends the request once its body passes ``limit`` bytes, whatever its headers claimed (the
    Content-Length is checked before; a body longer than it said is cut here, never parsed)."""
    received = 0

    async def receive_bounded() -> dict[str, Any]:
        nonlocal received
        message: dict[str, Any] = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                return {"type": "http.disconnect"}
        return message

    return receive_bounded


def cookie_names(port: int) -> tuple[str, str]:
    """The token's and the XSRF cookie's names: one pair per port (cookies do not tell ports apart)."""
    return f"lander_token_{port}", f"lander_xsrf_{port}"


def split_host(host: str) -> tuple[str, str]:
    """A Host header's name (lower case, IPv6 without brackets) and port: ``"[::1]:8765"`` -> ``("::1", "8765")``."""
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        return name.lower(), rest.removeprefix(":")
    name, _, port = host.partition(":")
    return name.lower(), port


def same(given: str, expected: str) -> bool:
    return bool(given) and hmac.compare_digest(given.encode(), expected.encode())


def is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


async def respond(send: Any, status: int, body: Any, headers: list[tuple[str, str]]) -> None:
    """Answer without the app: JSON for a dict, the bytes as given otherwise."""
    if isinstance(body, dict):
        body, headers = json.dumps(body).encode(), [("content-type", "application/json"), *headers]
    all_headers = [(k.encode(), v.encode()) for k, v in [*headers, *HEADERS.items()]]
    all_headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})
