"""``report.md`` of a comparison: per env the budget compared, the table with intervals, what its seeds allow and
the best configuration; then the runs left out."""

from __future__ import annotations

from typing import Any

import pandas as pd

from lander.analysis.runset import Run, budget_of, by_budget
from lander.analysis.sequential import decision_matrix, seeds_table
from lander.analysis.table import seed_notes
from lander.numbers import significant, timesteps_listed


def markdown_table(frame: pd.DataFrame) -> str:
    """``frame`` as a Markdown table, its floats to 4 significant digits (:func:`lander.numbers.significant`)."""
    shown = frame.astype(object).map(lambda v: significant(v) if isinstance(v, float) else v)
    align = ["right" if pd.api.types.is_numeric_dtype(frame[c]) else "left" for c in frame.columns]
    return str(shown.to_markdown(index=False, disable_numparse=True, colalign=align))


def readable(table: pd.DataFrame) -> str:
    """The report's table: values with their intervals side by side, blanks where a statistic does not apply."""
    return str(pd.DataFrame(readable_rows(table)).to_markdown(index=False, disable_numparse=True))


def readable_rows(table: pd.DataFrame) -> list[dict[str, str]]:
    """The rows of :func:`readable` as text, for ``report.md`` and ``report.html``."""

    def number(value: float, fmt: str | None = None) -> str:
        """``value`` to 4 significant digits (:func:`significant`), or in ``fmt``; blank where it is missing."""
        if pd.isna(value):
            return ""
        if fmt is None:
            return significant(value)
        return "inf" if value == float("inf") else format(value, fmt)

    def with_ci(row: pd.Series, name: str, low: str, high: str) -> str:
        value = number(row[name])
        return f"{value} [{number(row[low])}, {number(row[high])}]" if value and not pd.isna(row[low]) else value

    return [
        {
            "config": r["config"],
            "seeds": r["seeds"],
            "timesteps": f"{r['timesteps']:,}",
            "mean [95% CI]": with_ci(r, "final_mean", "ci95_low", "ci95_high"),
            "s.e.": number(r["sem"]),
            "IQM [95% CI]": with_ci(r, "iqm", "iqm_ci95_low", "iqm_ci95_high"),
            "success": number(r["success_rate"], ".2f"),
            "diff": number(r["diff"]),
            "d": number(r["cohens_d"], ".2f"),
            "test": r["test"],
            "p": number(r["p_value"], ".3g"),
            "p (Holm)": number(r["p_holm"], ".3g"),
            "P(improvement) [95% CI]": with_ci(
                r, "prob_improvement", "prob_improvement_ci95_low", "prob_improvement_ci95_high"
            ),
            "seeds for 80% power": number(r["seeds_needed"], ".0f"),
        }
        for _, r in table.iterrows()
    ]


def budget_lines(by_label: dict[str, list[Run]], at_timesteps: int | None) -> list[str]:
    """Where the runs of one env are compared, and which ones trained further than that; where the configurations
    differ in their budget (:func:`lander.analysis.runset.by_budget`), each budget's runs, one after the other."""
    groups = by_budget(by_label, at_timesteps)
    if len(groups) == 1:
        return one_budget_lines(by_label, at_timesteps)
    at = timesteps_listed([budget for budget, _ in groups])
    lines = [
        f"The configurations differ in their budget: it is what they compare, so each budget's runs are compared at "
        f"their own ({at} timesteps), not every run at the smallest (`lander.compare --at-timesteps N` compares "
        "them all at N)."
    ]
    for _, group in groups:
        first, *rest = one_budget_lines(group, None)
        budget = budget_of(next(iter(group.values()))[0])
        lines += [f"{f'`{budget}`' if budget else 'Without a budget override'}: {first[0].lower()}{first[1:]}", *rest]
    return lines


def one_budget_lines(by_label: dict[str, list[Run]], at_timesteps: int | None) -> list[str]:
    """Where the runs of one env (of one budget, :func:`budget_lines`) are compared, and which ones trained further
    than that."""
    runs = [r for group in by_label.values() for r in group]
    at = max(r.timesteps for r in runs)
    if at_timesteps is not None:
        lines = [
            f"Compared at **{at_timesteps:,} timesteps**: every run that got that far (finished or not), "
            "as it stood at its last evaluation up to then."
        ]
    elif all(r.stopped_early for r in runs):
        lines = [
            f"Compared at **{at:,} timesteps**: every compared run stopped early by its stop rule, the last there."
        ]
    else:
        going = [r for r in runs if not r.stopped_early]
        limit = min(going, key=lambda r: r.reached)
        least = (
            "every run ended there"
            if all(r.reached == limit.reached for r in going)
            else f"the one that stopped first: `{limit.path}`, at {limit.reached:,}"
        )
        lines = [
            f"Compared at **{at:,} timesteps**: the largest evaluated timestep that every compared run "
            f"reached ({least})."
        ]
    stopped = [r for r in runs if r.stopped_before(at_timesteps or at)]
    if stopped:
        lines.append(
            f"{len(stopped)} run(s) stopped early by their stop rule before it (`summary.json`'s `stopped_early`) "
            "and are compared at their last evaluation, the one they stopped at, their result for any later "
            "budget: "
            + "; ".join(f"`{r.path}` at {r.timesteps:,} ({r.summary['stopped_early']})" for r in stopped)
            + "."
        )
    further = [r for r in runs if r.reached > r.timesteps]
    if further:
        lines.append(
            f"{len(further)} run(s) went further (up to {max(r.reached for r in further):,} steps: a longer "
            "budget, or whole rollouts past it); each is compared at its evaluation at or before that "
            "point, not at its end."
        )
    for label, group in by_label.items():
        steps = sorted({r.timesteps for r in group})
        if len(steps) > 1 or steps[0] != at:
            lines.append(
                f"`{label}` is compared at its evaluation at {', '.join(f'{s:,}' for s in steps)} steps "
                "(at the budget, where whole steps of its envs went a few steps past it; else its last "
                "one before, or the one it stopped early at)."
            )
    return lines


def report_lines(
    runs: list[Run],
    groups: dict[str, dict[str, list[Run]]],
    tables: dict[str, pd.DataFrame],
    spanning: pd.DataFrame,
    left_out: dict[str, list[Any]],
    at_timesteps: int | None,
    sequential: dict[str, Any] | None = None,
) -> list[str]:
    """``report.md``: per env the budget, the table, what its seeds allow and the best; a sequential test's
    decisions (:func:`sequential_lines`); then the runs left out."""
    compared = sum(len(g) for by_label in groups.values() for g in by_label.values())
    names = left_out_names(at_timesteps)
    counts = "; ".join(f"{names[key]}: {len(items)}" for key, items in left_out.items())
    dropped = any(left_out.values())
    report = [
        "# Comparison",
        "",
        *([left_out_line(left_out, len(runs), at_timesteps), ""] if dropped else []),
        f"Runs: {len(runs)}; compared: {compared}; {counts}.",
        "",
        "Every statistic is over runs: a run's score is the mean return of its evaluation episodes at the compared "
        "timestep, and intervals are 95% percentile bootstrap intervals over seeds (rliable's method).",
        "",
    ]
    for env, by_label in groups.items():
        table = tables[env]
        report += [
            f"## {env}",
            "",
            *budget_lines(by_label, at_timesteps),
            "",
            f"Baseline: `{table['baseline'].iloc[0]}`.",
            "",
        ]
        report += [readable(table), ""]
        report += [f"- {note}" for note in seed_notes(table)] + [""] + best_lines(table) + [""]
    if sequential is not None:
        report += sequential_lines(sequential)
    if len(spanning):
        report += [
            "## Across envs",
            "",
            "P(improvement) over the baseline averaged over envs, with rliable's "
            "stratified bootstrap (seeds resampled within each env):",
            "",
            markdown_table(spanning),
            "",
        ]
    listed = [
        (
            "Duplicates not counted (the same configuration and seed; the newest is kept)",
            [f"- `{r.path}` (seed {r.seed}): same as `{kept.path}`" for r, kept in left_out["duplicates"]],
        ),
        ("Failed runs", [run_line(r) for r in left_out["failed"]]),
        (
            f"Runs {names['unfinished']}",
            [run_line(r) for r in left_out["unfinished"]],
        ),
        (
            "Runs with no evaluation at or before their compared timestep (e.g. eval.freq=0 and a longer budget)",
            [f"{run_line(r)} (compared timestep {r.timesteps:,})" for r in left_out["unevaluated"]],
        ),
    ]
    for title, items in listed:
        report += [f"## {title}", "", *items, ""] if items else []
    return report


LEFT_OUT = {  # why a run was not compared (``Comparison.left_out``'s keys), in words
    "failed": "failed",
    "unfinished": "not finished",
    "unevaluated": "not evaluated by then",
    "duplicates": "duplicates not counted",
}


def left_out_names(at_timesteps: int | None) -> dict[str, str]:
    """:data:`LEFT_OUT`; for a comparison at ``at_timesteps``, whose ``unfinished`` runs are those that did not reach it
    (running, or ended before it), ``short of N timesteps``."""
    return LEFT_OUT if at_timesteps is None else LEFT_OUT | {"unfinished": f"short of {at_timesteps:,} timesteps"}


def left_out_line(left_out: dict[str, list[Any]], runs: int, at_timesteps: int | None = None) -> str:
    """One line saying how many of ``runs`` runs were not compared and why (``left_out``: ``Comparison.left_out``;
    ``at_timesteps``: the budget asked for, which names the runs short of it)."""
    names = left_out_names(at_timesteps)
    said = ", ".join(f"{names.get(key, key)}: {len(items)}" for key, items in left_out.items() if items)
    dropped = sum(len(items) for items in left_out.values())
    return f"**{dropped} of {runs} runs not compared** ({said}): each is listed under *Runs left out*."


def run_line(run: Run) -> str:
    """A failed or unfinished run in the report: its path, status, overrides and error."""
    error = f": {run.summary['error']}" if run.summary.get("error") else ""
    return f"- `{run.path}` ({run.status}): {' '.join(run.overrides)}{error}"


def best_lines(result: pd.DataFrame) -> list[str]:
    """One line per env naming the configuration with the highest final mean, with its interval over seeds; or
    the configurations that share it, tied."""
    lines = []
    for env, rows in result.groupby("env", sort=False) if len(result) else []:
        top = rows[rows["final_mean"] == rows["final_mean"].max()]
        if len(top) > 1:
            names = ", ".join(f"**{config}**" for config in top["config"])
            lines.append(f"Highest final mean on {env}: {names}, tied ({significant(top['final_mean'].iloc[0])}).")
            continue
        best = rows.loc[rows["final_mean"].idxmax()]
        spread = (
            f"95% CI [{significant(best['ci95_low'])}, {significant(best['ci95_high'])}] over {best['seeds']} seeds"
            if best["seeds"] > 1
            else "n=1 seed: no interval"
        )
        lines.append(
            f"Highest final mean on {env}: **{best['config']}** ({significant(best['final_mean'])}, {spread})."
        )
    return lines


SCORE_WORDS = {
    "final_mean": "final evaluation mean at the common budget (the tables' score)",
    "success_rate": "final success rate",
    "auc": "mean evaluation over training (the area under its learning curve)",
}


def sequential_lines(record: dict[str, Any]) -> list[str]:
    """``report.md``'s section on a sweep that chose its seeds (AdaStop, ``comparison/adastop.json``): what it
    guarantees, the decisions as a matrix, and the seeds each configuration used against the fixed design."""
    used, fixed = record.get("runs_used"), record.get("fixed_design")
    status, score = record.get("status"), SCORE_WORDS.get(str(record.get("score")), str(record.get("score")))
    lines = [
        "## Sequential test (AdaStop)",
        "",
        f"The sweep chose its seeds: {record.get('n')} per configuration per interim, at most {record.get('K')} "
        f"interims; family-wise error alpha={record.get('alpha')} over every comparison and interim "
        f"({record.get('B')} permutations). It ran {record.get('interims')} interim(s) and used {used} runs where "
        f"the fixed design of n*K seeds uses {fixed}. A run's score is its {score}; "
        "`larger`/`smaller` are decisions at that error, `undecided` means no difference was found within K "
        "interims (not that there is none). The tables above stay descriptive.",
        "",
    ]
    if status != "finished":
        lines += [f"**The test is {status}**: re-run the sweep's command to complete it.", ""]
    for label, lacks in (record.get("missing") or {}).items():
        lines.append(f"- {label} lacks data: {'; '.join(map(str, lacks))}")
    matrix = decision_matrix(record)
    if len(matrix):
        lines += ["Row a compared with column b (the interim that decided it):", "", matrix.to_markdown(), ""]
    lines += [markdown_table(seeds_table(record)), ""]
    return lines
