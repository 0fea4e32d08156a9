"""Interactive (Plotly) figures: of one run, from the files it recorded (returns, evaluation episodes, SB3's training
losses, resources), and of a comparison, per env (learning curves per configuration with their band, final scores
with their intervals, performance profiles).
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence
from math import ceil
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from lander.analysis import statistics as st
from lander.analysis.curves import ONE_EVALUATION, X_LABELS, config_curves, single_evaluations
from lander.analysis.runset import Run, label_lines, short_labels, with_episodes
from lander.numbers import significant
from lander.storage.csvlog import read_complete
from lander.storage.rundir import RunPaths

COLORS = qualitative.Plotly
HEIGHT = 430  # px: a figure's height, but for those that grow with their rows or their legend
LAYOUT = {"template": "plotly_white", "hovermode": "x unified", "height": HEIGHT, "margin": {"t": 60, "r": 20}}


# the columns each figure reads of a metrics file (lander writes them all; a file edited by hand may lack some)
NEEDED = {
    "train_episodes.csv": ("timesteps", "return", "episode", "length"),
    "eval.csv": ("timesteps", "mean", "sem", "n", "success_rate"),
    "eval_episodes.csv": ("timesteps", "return", "seed", "length"),
}


def missing_columns(path: Path, fields: list[str]) -> list[str]:
    """The columns of :data:`NEEDED` that the metrics file ``path`` (with columns ``fields``) lacks."""
    return [c for c in NEEDED.get(path.name, ()) if c not in fields]


def read_metrics(path: Path) -> pd.DataFrame:
    """A metrics CSV as numbers (a row cut short by a kill left out); empty when missing, or when it lacks a column
    a figure reads (:data:`NEEDED`: the report says which)."""
    if not path.is_file() or not path.stat().st_size:
        return pd.DataFrame()
    fields, rows = read_complete(path)
    if missing_columns(path, fields):
        return pd.DataFrame()
    table = pd.DataFrame(rows, columns=fields)
    return table.apply(pd.to_numeric, errors="coerce") if len(table) else table


def rgba(color: str, alpha: float) -> str:
    """``#rrggbb`` as ``rgba(r, g, b, alpha)``."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def plotly_text(text: str) -> str:
    """``text`` as Plotly is to draw it, character for character: Plotly reads tags (``<b>``, ``<a href>``) and
    entities in the text of legends, axes and hovers, so a configuration ``x=<b>y</b>`` was drawn as a bold "x=y"."""
    return html.escape(text, quote=False)


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


def returns_figure(
    paths: RunPaths, threshold: float | None = None, window: int = 50, x: str = "timesteps"
) -> go.Figure:
    """Training episode returns (each, and a moving mean) and the evaluation mean ± s.e., vs timesteps or training
    episodes (``x``)."""
    fig = go.Figure()
    train, evals = read_metrics(paths.train_episodes), read_metrics(paths.eval_csv)
    if x == "episodes":
        train, evals = with_episodes(train, evals, paths)
    if len(train):
        fig.add_scatter(
            x=train[x],
            y=train["return"],
            mode="markers",
            name="training episode",
            marker={"size": 3, "color": rgba(COLORS[0], 0.35)},
            customdata=train[["episode", "length"]],
            hovertemplate="episode %{customdata[0]}: %{y:.4~r} (%{customdata[1]} steps)",
        )
        smooth = train["return"].rolling(window, min_periods=1).mean()
        fig.add_scatter(
            x=train[x],
            y=smooth,
            name=f"training, {window}-episode mean",
            line={"color": COLORS[0], "width": 2},
        )
    if len(evals):
        fig.add_trace(
            band(
                evals[x],
                evals["mean"] - evals["sem"],
                evals["mean"] + evals["sem"],
                COLORS[1],
                "± s.e.",
                "eval",
            )
        )
        fig.add_scatter(
            x=evals[x],
            y=evals["mean"],
            mode="lines+markers",
            legendgroup="eval",
            name=f"evaluation mean ± s.e. ({int(evals['n'].iloc[-1])} episodes)",
            line={"color": COLORS[1], "width": 2.5},
            customdata=evals[["sem", "success_rate"]],
            hovertemplate="%{y:.4~r} ± %{customdata[0]:.2~r}, success %{customdata[1]:.2f}",
        )
    if threshold is not None:
        fig.add_hline(y=threshold, line={"dash": "dash", "color": "gray"}, annotation_text=f"threshold {threshold:g}")
    fig.update_layout(title="Returns", xaxis_title=X_LABELS[x], yaxis_title="episode return", **LAYOUT)
    return fig


def eval_episodes_figure(paths: RunPaths) -> go.Figure:
    """Every evaluation episode's return (its seed on hover) at each evaluation, and their mean."""
    fig = go.Figure()
    episodes = read_metrics(paths.eval_episodes)
    if len(episodes):
        fig.add_scatter(
            x=episodes["timesteps"],
            y=episodes["return"],
            mode="markers",
            name="evaluation episode",
            marker={"size": 6, "color": rgba(COLORS[1], 0.5)},
            customdata=episodes[["seed", "length"]],
            hovertemplate="seed %{customdata[0]}: %{y:.4~r} (%{customdata[1]} steps)",
        )
        mean = episodes.groupby("timesteps", as_index=False)["return"].mean()
        fig.add_scatter(x=mean["timesteps"], y=mean["return"], name="mean", line={"color": COLORS[1], "width": 2})
    layout = LAYOUT | {"hovermode": "closest"}
    fig.update_layout(
        title="Evaluation episodes (fixed seeds)", xaxis_title="timesteps", yaxis_title="return", **layout
    )
    return fig


def small_multiples(table: pd.DataFrame, x: str, columns: list[str], title: str, per_row: int = 3) -> go.Figure:
    """One small plot per column of ``table`` against ``x``, each with its own y scale."""
    if not columns:  # a title alone: no empty plot with axes of nothing
        fig = go.Figure().update_layout(title=f"{title}: nothing recorded", **(LAYOUT | {"height": 100}))
        return fig.update_xaxes(visible=False).update_yaxes(visible=False)
    rows = ceil(len(columns) / per_row)
    fig = make_subplots(rows=rows, cols=per_row, subplot_titles=columns, vertical_spacing=min(0.12, 0.5 / rows))
    for i, column in enumerate(columns):
        values = table[[x, column]].dropna()
        fig.add_scatter(
            x=values[x],
            y=values[column],
            name=column,
            mode="lines+markers",
            marker={"size": 3},
            line={"color": COLORS[i % len(COLORS)]},
            row=i // per_row + 1,
            col=i % per_row + 1,
        )
        if column.endswith("learning_rate"):  # 3e-4 on a linear axis reads as 0; a schedule spans decades
            fig.update_yaxes(type="log", exponentformat="power", row=i // per_row + 1, col=i % per_row + 1)
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
    wanted += ["gpu_memory_allocated_mb", "gpu_memory_reserved_mb", "gpu_utilization_percent"]  # on a GPU
    columns = [c for c in wanted if c in resources.columns and resources[c].notna().any()]
    return small_multiples(resources, "timesteps", columns if "timesteps" in resources else [], "Speed and memory")


def run_figures(paths: RunPaths, threshold: float | None = None, x: str = "timesteps") -> dict[str, go.Figure]:
    """Every figure of a run, by name: ``returns`` (against ``x``), ``eval_episodes``, ``training``, ``speed``."""
    return {
        "returns": returns_figure(paths, threshold, x=x),
        "eval_episodes": eval_episodes_figure(paths),
        "training": training_figure(paths),
        "speed": speed_figure(paths),
    }


def threshold_line(fig: go.Figure, groups: dict[str, list[Run]], vertical: bool = False) -> None:
    """The env's "solved" return as a dashed line (across the plot, or up it where returns run along x), if it has
    one."""
    threshold = next(iter(groups.values()))[0].threshold
    if threshold is not None:
        line = {"line": {"dash": "dash", "color": "gray"}, "annotation_text": f"threshold {threshold:g}"}
        if vertical:
            fig.add_vline(x=threshold, **line)
        else:
            fig.add_hline(y=threshold, **line)


def curves_figure(
    groups: dict[str, list[Run]],
    env: str,
    band_kind: str = "seeds",
    budgets: Sequence[int] = (),
    x: str = "timesteps",
) -> go.Figure:
    """Per configuration the mean evaluation return over seeds with its band, against ``x`` (timesteps or training
    episodes; the compared budgets, one or one a budget where the configurations differ in it, are marked against
    timesteps only); each seed's curve toggles on."""
    fig = go.Figure()
    curves = config_curves(groups, band_kind, x)
    single = single_evaluations(curves)
    budgets = budgets if x == "timesteps" else ()
    names = dict(zip(groups, map(plotly_text, short_labels(list(groups))), strict=True))  # what the legend shows
    for label, (with_curves, curve) in curves.items():
        color = COLORS[[*groups].index(label) % len(COLORS)]  # as without curves: the same color a label
        fig.add_trace(band(curve[x], curve["low"], curve["high"], color, label, label))
        interval = {"type": "data", "symmetric": False, "array": curve["high"] - curve["mean"]}
        fig.add_scatter(
            x=curve[x],
            y=curve["mean"],
            name=f"{names[label]} (n={len(with_curves)})",
            legendgroup=label,
            mode="lines+markers" if single else None,
            error_y=interval | {"arrayminus": curve["mean"] - curve["low"]} if single else None,
            line={"color": color, "width": 2.5},
        )
        for run in with_curves:
            evals: pd.DataFrame = run.eval
            seed_line = {"color": rgba(color, 0.6), "width": 1, "dash": "dot"}
            fig.add_scatter(
                x=evals[x],
                y=evals["mean"],
                name=f"{names[label]}, seed {run.seed}",
                visible="legendonly",
                line=seed_line,
            )
    threshold_line(fig, groups)
    for budget in budgets:
        fig.add_vline(
            x=budget,
            line={"dash": "dot", "color": "black"},
            annotation_text=f"compared at {budget:,}",
            annotation_position="bottom left",
        )
    if single:  # one point a configuration: an axis from 0 to past the budget, and why there is no curve
        last = max([*budgets, *(int(c[x].max()) for _, c in curves.values())])
        fig.update_xaxes(range=[0, last * 1.1])
        fig.add_annotation(text=ONE_EVALUATION, xref="paper", yref="paper", x=0.5, y=0.02, showarrow=False)
    spread = "± s.e. over all evaluation episodes" if band_kind == "episodes" else "95% bootstrap CI over seeds"
    fig.update_layout(
        title=f"{env}: evaluation return (mean, {spread})",
        xaxis_title=X_LABELS[x],
        yaxis_title="evaluation return",
        **LAYOUT,
    )
    return legend_below(fig)


def final_scores_figure(groups: dict[str, list[Run]], env: str) -> go.Figure:
    """Each configuration's compared score: every seed a dot (its run on hover), the mean with its 95% CI.

    The configurations stand side by side, a label one ``key=value`` a line; where they would not fit the page
    (:data:`SIDE_BY_SIDE_PX`: an Optuna search's trials), one row a configuration, its label beside it."""
    names = [plotly_text(name) for name in short_labels(list(groups))]
    widest = max(len(line) for label in groups for line in label_lines(label))
    rows = len(groups) * max(150, 7 * widest) > SIDE_BY_SIDE_PX  # about 7 px a character at 12 px
    fig = go.Figure()
    for i, (label, runs) in enumerate(groups.items()):
        color, values = COLORS[i % len(COLORS)], np.array([r.final_mean for r in runs])
        mean, low, high = (
            st.interval(values[:, None], st.aggregate_mean) if len(values) > 1 else (values[0], np.nan, np.nan)
        )
        error = {"type": "data", "array": [high - mean], "arrayminus": [mean - low]} if len(values) > 1 else None
        seeds = {"x": values, "y": [label] * len(runs)} if rows else {"x": [label] * len(runs), "y": values}
        fig.add_scatter(
            **seeds,
            mode="markers",
            name=f"{names[i]}: seeds",
            marker={"size": 9, "color": rgba(color, 0.6)},
            legendgroup=label,
            offsetgroup="seeds",
            orientation="h" if rows else "v",
            customdata=[[r.seed, plotly_text(str(r.path)), f"{r.timesteps:,}", r.final_mean] for r in runs],
            hovertemplate="seed %{customdata[0]}: %{customdata[3]:.4~r} at %{customdata[2]} steps"
            "<br>%{customdata[1]}<extra></extra>",
        )
        fig.add_scatter(
            **(
                {"x": [mean], "y": [label], "error_x": error} if rows else {"x": [label], "y": [mean], "error_y": error}
            ),
            mode="markers",
            legendgroup=label,
            offsetgroup="mean",
            orientation="h" if rows else "v",
            marker={"symbol": "diamond", "size": 12, "color": "black"},
            name=f"{names[i]}: mean, 95% CI",
            hovertemplate=f"mean {significant(float(mean))} [{significant(float(low))}, {significant(float(high))}]"
            "<extra></extra>",
        )
    what, layout = "evaluation mean return per seed", LAYOUT | {"hovermode": "closest"}
    threshold_line(fig, groups, vertical=rows)
    if rows:
        fig.update_yaxes(tickvals=list(groups), ticktext=[f"{n} (n={len(r)})" for n, r in zip(names, groups.values(),
                         strict=True)], autorange="reversed")  # fmt: skip
        layout |= {"xaxis_title": what, "height": max(HEIGHT, 28 * len(groups) + 200), "showlegend": False}
    else:
        ticks = ["<br>".join(map(plotly_text, label_lines(label))) for label in groups]
        fig.update_xaxes(tickvals=list(groups), ticktext=ticks, tickangle=0)
        layout |= {"yaxis_title": what}
    fig.update_layout(
        title=f"{env}: final scores (each seed; mean and 95% bootstrap CI)", scattermode="group", **layout
    )
    return legend_below(fig, 2 if rows else 1 + max(len(label_lines(label)) for label in groups))


SIDE_BY_SIDE_PX = 1100  # about the width of a report's figure: final scores wider side by side are rows


def legend_below(fig: go.Figure, lines: int = 2) -> go.Figure:
    """A legend of many or long entries (an Optuna search's trials) under the plot, one a line, in a bottom margin
    made for it (the plot keeps its height): at the plot's right, it took most of the page's width from the plot.

    :param lines: the lines of text under the x axis (its tick labels' and its title's), which the legend clears
    """
    names = [str(trace.name) for trace in fig.data if trace.showlegend is not False]
    if not names or fig.layout.showlegend is False:
        return fig
    if len(names) > LEGEND_AT_RIGHT[0] or max(map(len, names)) > LEGEND_AT_RIGHT[1]:
        for trace in fig.data:  # an entry wider than the figure is wrapped at spaces (Plotly cut it off at the right)
            if trace.showlegend is not False and len(str(trace.name)) > LEGEND_WRAP:
                trace.name = "<br>".join(textwrap.wrap(str(trace.name), LEGEND_WRAP, break_on_hyphens=False))
        entries = sum(str(t.name).count("<br>") + 1 for t in fig.data if t.showlegend is not False)
        axis, legend = 18 * lines + 16, 20 * entries + 20  # px: the axis' text, the legend (20 px a line)
        height = (fig.layout.height or HEIGHT) - DEFAULT_MARGIN_B + axis + legend
        fig.update_layout(
            height=height,
            margin={"b": axis + legend},
            legend={"yref": "container", "yanchor": "top", "y": (legend - 10) / height, "x": 0, "tracegroupgap": 0},
        )
    return fig


DEFAULT_MARGIN_B = 80  # px: Plotly's bottom margin, where the x axis' text stands


# a legend of at most this many entries (the seeds' included), each at most this many characters, stays at the
# plot's right (more entries scroll there)
LEGEND_AT_RIGHT = (14, 40)
LEGEND_WRAP = 110  # characters a line of a legend entry under the plot: the report's width at Plotly's 12 px


def profile_figure(groups: dict[str, list[Run]], env: str) -> go.Figure:
    """Performance profile: the fraction of runs whose score exceeds tau, with a bootstrap band over runs."""
    every = np.array([r.final_mean for runs in groups.values() for r in runs])
    spread = max(every.max() - every.min(), 1.0)
    taus = np.linspace(every.min() - 0.05 * spread, every.max() + 0.05 * spread, 101)
    fig, names = go.Figure(), [plotly_text(name) for name in short_labels(list(groups))]
    for i, (label, runs) in enumerate(groups.items()):
        color, values = COLORS[i % len(COLORS)], np.array([[r.final_mean] for r in runs])
        point, low, high = st.interval(values, lambda s: st.performance_profile(s, taus), st.CURVE_REPS)
        if len(runs) > 1:
            fig.add_trace(band(taus, low, high, color, label, label).update(line_shape="hv"))
        fig.add_scatter(
            x=taus,
            y=point,
            name=f"{names[i]} (n={len(runs)})",
            legendgroup=label,
            line={"color": color, "width": 2.5, "shape": "hv"},
        )
    fig.update_layout(
        title=f"{env}: performance profile (95% bootstrap band over runs)",
        yaxis_range=[-0.02, 1.02],
        xaxis_title="score tau (evaluation mean return)",
        yaxis_title="fraction of runs with score > tau",
        **LAYOUT,
    )
    return legend_below(fig)


def sweep_figures(
    groups: dict[str, list[Run]],
    env: str,
    band_kind: str = "seeds",
    budgets: Sequence[int] = (),
    x: str = "timesteps",
) -> dict[str, go.Figure]:
    """Every figure of one env of a comparison, by name: ``learning_curves`` (against ``x``), ``final_scores``,
    ``performance_profile``."""
    return {
        "learning_curves": curves_figure(groups, env, band_kind, budgets, x),
        "final_scores": final_scores_figure(groups, env),
        "performance_profile": profile_figure(groups, env),
    }
