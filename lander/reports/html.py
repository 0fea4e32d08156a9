"""Self-contained HTML pages: Plotly's JavaScript inlined once in the page, every text from a file escaped, no
request to any server (no CDN, no fonts, no MathJax), so a report opens the same offline and copied elsewhere."""

from __future__ import annotations

import base64
import html
import io
import shutil
from importlib.resources import files
from pathlib import Path
from typing import Any

import imageio.v2 as imageio
import pandas as pd
import plotly.graph_objects as go

from lander.numbers import significant
from lander.storage.rundir import atomic_write

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 0 24px 48px; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.status { display: inline-block; padding: 2px 10px; border-radius: 10px; color: white; font-weight: 600; }
.completed { background: #2e7d32; } .failed { background: #c62828; } .interrupted { background: #ef6c00; }
.running { background: #1565c0; } .paused { background: #ef6c00; } .stopped, .unknown { background: #757575; }
.unreadable { background: #6a1b9a; } .error { background: #fdecea; border-left: 4px solid #c62828; padding: 8px 12px; }
table { border-collapse: collapse; font-size: 0.9em; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; } th { background: #f5f5f5; }
td:first-child, th:first-child, table.text td, table.text th { text-align: left; }
td:first-child { overflow-wrap: anywhere; }  /* a configuration's label (a callback's _target_ is one long word) */
pre { background: #f7f7f7; padding: 10px; overflow-x: auto; font-size: 0.85em; max-height: 480px; }
nav a { margin-right: 14px; } .plot { margin: 12px 0 28px; } video { max-width: 600px; }
"""
PLOTLY_JS = files("plotly").joinpath("package_data", "plotly.min.js")  # what plotly.offline.get_plotlyjs reads
VIDEO_INLINE_BYTES = 25 * 2**20  # larger videos are linked (relative to the report), not embedded


def esc(value: Any) -> str:
    """Any value as text safe inside HTML (a hostile file's ``<script>`` stays text)."""
    return html.escape(str(value), quote=True)


def figure(fig: go.Figure, div_id: str) -> str:
    """A Plotly figure as a ``<div>`` (its data as JSON, ``<`` and ``>`` escaped by Plotly), no JS of its own."""
    config = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"filename": div_id}}
    body = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"plot-{div_id}", config=config)
    return f'<div class="plot">{body}</div>'


def table(frame: pd.DataFrame) -> str:
    """A DataFrame as an HTML table, cells escaped, floats to 4 significant digits (:func:`number`)."""
    if frame.empty:
        return "<p><em>none</em></p>"
    return str(frame.to_html(index=False, escape=True, na_rep="", border=0, float_format=significant))


def number(value: Any) -> str:
    """A float to 4 significant digits (:func:`lander.numbers.significant`), anything else as it is."""
    return significant(value) if isinstance(value, float) else str(value)


def pairs(values: dict[str, Any]) -> str:
    """A two-column table of names and values."""
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(number(v))}</td></tr>" for k, v in values.items())
    return f"<table>{rows}</table>"


def pre(text: str, summary: str | None = None) -> str:
    """Preformatted text, folded under ``summary`` when given."""
    block = f"<pre>{esc(text)}</pre>"
    return f"<details><summary>{esc(summary)}</summary>{block}</details>" if summary else block


def section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>{body}</section>'


def video(path: Path, report: Path) -> str:
    """The video embedded in the page (a data URI), or linked beside it when it is too large to embed."""
    if not path.is_file():
        return "<p><em>no video recorded</em></p>"
    if path.stat().st_size <= VIDEO_INLINE_BYTES:
        source = "data:video/mp4;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
    else:
        source = esc(path.relative_to(report.parent).as_posix())
    return f'<video controls loop muted preload="auto" poster="{poster(path)}" src="{source}"></video>'


def poster(path: Path) -> str:
    """The video's first frame as a PNG data URI, shown before it plays ('' if the file cannot be decoded)."""
    try:
        with imageio.get_reader(str(path), "ffmpeg") as reader:
            frame = reader.get_data(0)  # type: ignore[attr-defined]  # the ffmpeg plugin's reader
        png = io.BytesIO()
        imageio.imwrite(png, frame, format="png")
    except Exception:  # a damaged or foreign video: shown without a poster (the browser says what it can)
        return ""
    return "data:image/png;base64," + base64.b64encode(png.getvalue()).decode("ascii")


def write_page(path: Path, title: str, sections: list[tuple[str, str, str]], header: str = "") -> Path:
    """The whole page written to ``path`` in UTF-8, atomically (a reader never sees half a report): Plotly's
    JavaScript inlined in the head, a navigation bar, then ``(anchor, title, body)`` sections.

    Written part by part, Plotly's script copied as bytes from its package file: decoded, its 4.6 MB would be a
    9 MB string (it holds characters beyond Latin-1); joining and encoding the whole page took 24 MB more
    (tracemalloc) at the end of a run, where its memory peaks."""
    nav = "".join(f'<a href="#{esc(anchor)}">{esc(name)}</a>' for anchor, name, _ in sections)
    head = (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{STYLE}</style>'
        '<script type="text/javascript">'
    )

    def write(tmp: Path) -> None:
        with tmp.open("wb") as out, PLOTLY_JS.open("rb") as script:
            out.write(head.encode())
            shutil.copyfileobj(script, out)
            out.write(f"</script></head><body><h1>{esc(title)}</h1>{header}<nav>{nav}</nav>".encode())
            for anchor, name, body in sections:
                out.write(section(anchor, name, body).encode())
            out.write(b"</body></html>")

    return atomic_write(path, write)
