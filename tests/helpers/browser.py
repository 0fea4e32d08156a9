"""A real browser for the HTML reports: Debian's headless Chromium, driven by Playwright (no browser download).

Where no Chromium is installed the tests that need it are skipped, except under ``LANDER_REQUIRE_BROWSER=1``
(``.ci/run`` sets it after installing ``chromium``), where they fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str:
    """The installed Chromium; skips the test where there is none (fails under ``LANDER_REQUIRE_BROWSER=1``)."""
    found = next((shutil.which(name) for name in CHROMIUM if shutil.which(name)), None)
    if found is None:
        message = "no chromium installed (apt-get install chromium)"
        if os.environ.get("LANDER_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


@dataclass
class Visit:
    """What the page did: every request it made, the JavaScript errors it raised, its console errors."""

    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def outside(self, allowed: Path) -> list[str]:
        """Requests for anything but files under ``allowed`` (and the page's own data: URIs)."""
        prefix = allowed.resolve().as_uri()
        return [u for u in self.requests if not u.startswith((prefix, "data:"))]


@contextmanager
def open_page(
    path: Path | str, width: int = 1280, offline: bool = True, args: tuple[str, ...] = ()
) -> Iterator[tuple[object, Visit]]:
    """``path`` (a file, or a URL) opened in headless Chromium, by default with the network cut off; yields the
    Playwright page and its visit.

    :param args: more Chromium flags (e.g. ``--host-resolver-rules=...``)
    """
    from playwright.sync_api import sync_playwright

    visit = Visit()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox", *args])
        try:
            context = browser.new_context(viewport={"width": width, "height": 900}, offline=offline)
            page = context.new_page()
            page.on("request", lambda request: visit.requests.append(request.url))
            page.on("pageerror", lambda error: visit.errors.append(str(error)))
            page.on("console", lambda m: visit.console.append(m.text) if m.type == "error" else None)
            page.on("dialog", lambda d: (visit.dialogs.append(d.message), d.dismiss()))
            page.goto(path if isinstance(path, str) else path.resolve().as_uri(), wait_until="load")
            yield page, visit
        finally:
            browser.close()


def wait_for_plots(page, count: int, timeout_ms: int = 30000) -> None:  # type: ignore[no-untyped-def]
    """Wait until ``count`` Plotly plots have drawn their SVG."""
    page.wait_for_function(
        "n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n", arg=count, timeout=timeout_ms
    )


def not_blank(png: Path) -> float:
    """The share of the screenshot's pixels that differ from its most common colour (0: a blank page)."""
    import imageio.v2 as imageio

    rgb = imageio.imread(png)[..., :3].astype(np.uint32)
    pixels = ((rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]).ravel()  # one number a colour: a fast unique
    colours, counts = np.unique(pixels, return_counts=True)
    return float(np.mean(pixels != colours[counts.argmax()]))


def plot_data(page, plot_id: str) -> list[dict]:  # type: ignore[no-untyped-def]
    """Each trace's name, visibility and y values as Plotly drew them."""
    script = f"document.getElementById('{plot_id}')._fullData.map(t => ({{name: t.name, visible: t.visible, "
    return page.evaluate(script + "y: Array.from(t.y || [])}))")


def hover_text(page, plot_id: str) -> str:  # type: ignore[no-untyped-def]
    """Move the mouse across the plot's middle until Plotly shows a hover label; its text ('' if none)."""
    box = page.locator(f"#{plot_id} .nsewdrag").first.bounding_box()
    for fraction in (0.5, 0.95, 0.75, 0.25, 0.05, 0.6, 0.4, 0.85, 0.15):
        page.mouse.move(box["x"] + box["width"] * fraction, box["y"] + box["height"] * 0.5)
        page.wait_for_timeout(100)
        text = page.locator(f"#{plot_id} .hoverlayer").text_content()
        if text:
            return text
    return ""


def check_visit(visit, report: Path) -> None:  # type: ignore[no-untyped-def]
    assert not visit.errors, visit.errors  # no JavaScript error
    assert not visit.console, visit.console
    assert not visit.dialogs, visit.dialogs  # nothing from a file ran as script
    assert visit.outside(report) == [], visit.outside(report)  # no network, no CDN: only the report itself
