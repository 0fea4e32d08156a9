"""Interactive (Plotly) figures of a comparison, per env: learning curves per configuration with their band (and
each seed's curve, hidden until its legend entry is clicked), final scores per seed with the mean's interval, and
the performance profile. The same statistics as the PNGs of :mod:`lander.plots`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from lander import statistics as st
from lander.curves import mean_curve, pooled_curve
from lander.figures_run import COLORS, LAYOUT, band, rgba

if TYPE_CHECKING:
    from lander.runset import Run


def threshold_line(fig: go.Figure, groups: dict[str, list[Run]]) -> None:
    """The env's "solved" return as a dashed line, if it has one."""
    threshold = next(iter(groups.values()))[0].threshold
    if threshold is not None:
        fig.add_hline(y=threshold, line={"dash": "dash", "color": "gray"}, annotation_text=f"threshold {threshold:g}")


def curves_figure(groups: dict[str, list[Run]], env: str, band_kind: str = "seeds", budget: int = 0) -> go.Figure:
    """Per configuration the mean evaluation return over seeds with its band; each seed's curve toggles on."""
    fig = go.Figure()
    for i, (label, runs) in enumerate(groups.items()):
        color, with_curves = COLORS[i % len(COLORS)], [r for r in runs if r.evals is not None and len(r.evals)]
        if not with_curves:
            continue
        pooled = band_kind == "episodes" and all(r.paths.eval_episodes.is_file() for r in with_curves)
        curve = pooled_curve(with_curves) if pooled else mean_curve(with_curves)
        fig.add_trace(band(curve["timesteps"], curve["low"], curve["high"], color, label, label))
        fig.add_scatter(x=curve["timesteps"], y=curve["mean"], name=f"{label} (n={len(with_curves)})",
                        legendgroup=label, line={"color": color, "width": 2.5})  # fmt: skip
        for run in with_curves:
            evals: pd.DataFrame = run.evals  # type: ignore[assignment]
            seed_line = {"color": rgba(color, 0.6), "width": 1, "dash": "dot"}
            fig.add_scatter(x=evals["timesteps"], y=evals["mean"], name=f"{label}, seed {run.seed}",
                            visible="legendonly", line=seed_line)  # fmt: skip
    threshold_line(fig, groups)
    if budget:
        fig.add_vline(
            x=budget,
            line={"dash": "dot", "color": "black"},
            annotation_text=f"compared at {budget:,}",
            annotation_position="bottom left",
        )
    spread = "± s.e. over all evaluation episodes" if band_kind == "episodes" else "95% bootstrap CI over seeds"
    fig.update_layout(title=f"{env}: evaluation return (mean, {spread})", xaxis_title="timesteps",
                      yaxis_title="evaluation return", **LAYOUT)  # fmt: skip
    return fig


def final_scores_figure(groups: dict[str, list[Run]], env: str) -> go.Figure:
    """Each configuration's compared score: every seed a dot (its run on hover), the mean with its 95% CI."""
    fig = go.Figure()
    for i, (label, runs) in enumerate(groups.items()):
        color, values = COLORS[i % len(COLORS)], np.array([r.final_mean for r in runs])
        fig.add_scatter(x=[label] * len(runs), y=values, mode="markers", name=f"{label}: seeds",
                        marker={"size": 9, "color": rgba(color, 0.6)}, legendgroup=label, offsetgroup="seeds",
                        customdata=[[r.seed, str(r.path), f"{r.timesteps:,}"] for r in runs],
                        hovertemplate="seed %{customdata[0]}: %{y:.4g} at %{customdata[2]} steps"
                                      "<br>%{customdata[1]}<extra></extra>")  # fmt: skip
        mean, low, high = (st.interval(values[:, None], st.aggregate_mean) if len(values) > 1
                           else (values[0], np.nan, np.nan))  # fmt: skip
        error = {"type": "data", "array": [high - mean], "arrayminus": [mean - low]} if len(values) > 1 else None
        fig.add_scatter(x=[label], y=[mean], mode="markers", error_y=error, legendgroup=label, offsetgroup="mean",
                        marker={"symbol": "diamond", "size": 12, "color": "black"}, name=f"{label}: mean, 95% CI",
                        hovertemplate=f"mean %{{y:.4g}} [{low:.4g}, {high:.4g}]<extra></extra>")  # fmt: skip
    threshold_line(fig, groups)
    fig.update_layout(title=f"{env}: final scores (each seed; mean and 95% bootstrap CI)",
                      yaxis_title="evaluation mean return per seed", scattermode="group",
                      **(LAYOUT | {"hovermode": "closest"}))  # fmt: skip
    return fig


def profile_figure(groups: dict[str, list[Run]], env: str) -> go.Figure:
    """Performance profile: the fraction of runs whose score exceeds tau, with a bootstrap band over runs."""
    every = np.array([r.final_mean for runs in groups.values() for r in runs])
    spread = max(every.max() - every.min(), 1.0)
    taus = np.linspace(every.min() - 0.05 * spread, every.max() + 0.05 * spread, 101)
    fig = go.Figure()
    for i, (label, runs) in enumerate(groups.items()):
        color, values = COLORS[i % len(COLORS)], np.array([[r.final_mean] for r in runs])
        point, low, high = st.interval(values, lambda s: st.performance_profile(s, taus), st.CURVE_REPS)
        if len(runs) > 1:
            fig.add_trace(band(taus, low, high, color, label, label).update(line_shape="hv"))
        fig.add_scatter(x=taus, y=point, name=f"{label} (n={len(runs)})", legendgroup=label,
                        line={"color": color, "width": 2.5, "shape": "hv"})  # fmt: skip
    fig.update_layout(title=f"{env}: performance profile (95% bootstrap band over runs)", yaxis_range=[-0.02, 1.02],
                      xaxis_title="score tau (evaluation mean return)", yaxis_title="fraction of runs with score > tau",
                      **LAYOUT)  # fmt: skip
    return fig


def sweep_figures(groups: dict[str, list[Run]], env: str, band_kind: str = "seeds", budget: int = 0) -> dict:
    """Every figure of one env of a comparison, by name: ``learning_curves``, ``final_scores``,
    ``performance_profile``."""
    return {
        "learning_curves": curves_figure(groups, env, band_kind, budget),
        "final_scores": final_scores_figure(groups, env),
        "performance_profile": profile_figure(groups, env),
    }
