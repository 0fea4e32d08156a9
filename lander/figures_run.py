"""Interactive (Plotly) figures of one run, from the files it recorded: returns, evaluation episodes, SB3's training
metrics, speed and memory. They read what is there, so a failed, interrupted or still running run has figures too.

The run report (:mod:`lander.report_run`) and the notebook (:mod:`lander.api`) show the same figures.
"""

from __future__ import annotations

from math import ceil
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from lander.csvlog import read_complete
from lander.rundir import RunPaths

COLORS = qualitative.Plotly
LAYOUT = {"template": "plotly_white", "hovermode": "x unified", "height": 430, "margin": {"t": 60, "r": 20}}


def read_metrics(path: Path) -> pd.DataFrame:
    """A metrics CSV as numbers (a row cut short by a kill left out); empty when missing."""
    if not path.is_file() or not path.stat().st_size:
        return pd.DataFrame()
    fields, rows = read_complete(path)
    table = pd.DataFrame(rows, columns=fields)
    return table.apply(pd.to_numeric, errors="coerce") if len(table) else table


def rgba(color: str, alpha: float) -> str:
    """``#rrggbb`` as ``rgba(r, g, b, alpha)``."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def band(x: pd.Series, low: pd.Series, high: pd.Series, color: str, name: str, group: str) -> go.Scatter:
    """A filled band between ``low`` and ``high`` (no hover of its own), toggled with its line's legend group."""
    return go.Scatter(
        x=list(x) + list(x)[::-1],
        y=list(high) + list(low)[::-1],
        mode="lines",
        fill="toself",
        fillcolor=rgba(color, 0.2),
        line={"width": 0},
        hoverinfo="skip",
        name=name,
        legendgroup=group,
        showlegend=False,
    )


def returns_figure(paths: RunPaths, threshold: float | None = None, window: int = 50) -> go.Figure:
    """Training episode returns (each, and a moving mean) and the evaluation mean ± s.e., vs timesteps."""
    fig = go.Figure()
    train, evals = read_metrics(paths.train_episodes), read_metrics(paths.eval_csv)
    if len(train):
        fig.add_scatter(x=train["timesteps"], y=train["return"], mode="markers", name="training episode",
                        marker={"size": 3, "color": rgba(COLORS[0], 0.35)}, customdata=train[["episode", "length"]],
                        hovertemplate="episode %{customdata[0]}: %{y:.4g} (%{customdata[1]} steps)")  # fmt: skip
        smooth = train["return"].rolling(window, min_periods=1).mean()
        fig.add_scatter(x=train["timesteps"], y=smooth, name=f"training, {window}-episode mean",
                        line={"color": COLORS[0], "width": 2})  # fmt: skip
    if len(evals):
        fig.add_trace(band(evals["timesteps"], evals["mean"] - evals["sem"], evals["mean"] + evals["sem"],
                           COLORS[1], "± s.e.", "eval"))  # fmt: skip
        fig.add_scatter(x=evals["timesteps"], y=evals["mean"], mode="lines+markers", legendgroup="eval",
                        name=f"evaluation mean ± s.e. ({int(evals['n'].iloc[-1])} episodes)",
                        line={"color": COLORS[1], "width": 2.5}, customdata=evals[["sem", "success_rate"]],
                        hovertemplate="%{y:.4g} ± %{customdata[0]:.2g}, success %{customdata[1]:.2f}")  # fmt: skip
    if threshold is not None:
        fig.add_hline(y=threshold, line={"dash": "dash", "color": "gray"}, annotation_text=f"threshold {threshold:g}")
    fig.update_layout(title="Returns", xaxis_title="timesteps", yaxis_title="episode return", **LAYOUT)
    return fig


def eval_episodes_figure(paths: RunPaths) -> go.Figure:
    """Every evaluation episode's return (its seed on hover) at each evaluation, and their mean."""
    fig = go.Figure()
    episodes = read_metrics(paths.eval_episodes)
    if len(episodes):
        fig.add_scatter(x=episodes["timesteps"], y=episodes["return"], mode="markers", name="evaluation episode",
                        marker={"size": 6, "color": rgba(COLORS[1], 0.5)}, customdata=episodes[["seed", "length"]],
                        hovertemplate="seed %{customdata[0]}: %{y:.4g} (%{customdata[1]} steps)")  # fmt: skip
        mean = episodes.groupby("timesteps", as_index=False)["return"].mean()
        fig.add_scatter(x=mean["timesteps"], y=mean["return"], name="mean", line={"color": COLORS[1], "width": 2})
    layout = LAYOUT | {"hovermode": "closest"}
    fig.update_layout(title="Evaluation episodes (fixed seeds)", xaxis_title="timesteps", yaxis_title="return",
                      **layout)  # fmt: skip
    return fig


def small_multiples(table: pd.DataFrame, x: str, columns: list[str], title: str, per_row: int = 3) -> go.Figure:
    """One small plot per column of ``table`` against ``x``, each with its own y scale."""
    if not columns:
        return go.Figure().update_layout(title=f"{title}: nothing recorded", **LAYOUT)
    rows = ceil(len(columns) / per_row)
    fig = make_subplots(rows=rows, cols=per_row, subplot_titles=columns, vertical_spacing=min(0.12, 0.5 / rows))
    for i, column in enumerate(columns):
        values = table[[x, column]].dropna()
        fig.add_scatter(x=values[x], y=values[column], name=column, mode="lines+markers", marker={"size": 3},
                        line={"color": COLORS[i % len(COLORS)]}, row=i // per_row + 1, col=i % per_row + 1)  # fmt: skip
    fig.update_layout(title=title, showlegend=False, **(LAYOUT | {"height": 260 * rows + 80, "hovermode": "closest"}))
    return fig


def training_figure(paths: RunPaths) -> go.Figure:
    """SB3's own metrics (``metrics/sb3_progress.csv``): losses, entropy, KL, clip fraction, ... per update."""
    progress = read_metrics(paths.sb3_progress)
    x = "time/total_timesteps"
    columns = [c for c in progress.columns if c != x and progress[c].notna().any() and not c.startswith("time/")]
    if x not in progress.columns:
        columns = []
    return small_multiples(progress, x, sorted(columns), "Training (SB3's logger) vs timesteps")


def speed_figure(paths: RunPaths) -> go.Figure:
    """Steps per second, memory (RSS) and CPU use as training went (``metrics/resources.csv``)."""
    resources = read_metrics(paths.resources)
    wanted = ["steps_per_second", "rss_mb", "peak_rss_mb", "cpu_percent", "episodes_per_minute"]
    columns = [c for c in wanted if c in resources.columns and resources[c].notna().any()]
    return small_multiples(resources, "timesteps", columns if "timesteps" in resources else [], "Speed and memory")


def run_figures(paths: RunPaths, threshold: float | None = None) -> dict[str, go.Figure]:
    """Every figure of a run, by name: ``returns``, ``eval_episodes``, ``training``, ``speed``."""
    return {
        "returns": returns_figure(paths, threshold),
        "eval_episodes": eval_episodes_figure(paths),
        "training": training_figure(paths),
        "speed": speed_figure(paths),
    }
