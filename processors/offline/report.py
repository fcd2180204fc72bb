"""A self-contained HTML report of an analysis: inline SVG charts, no external assets.

Charts: mode prevalence per model, modes per run and per failed run per model, and each
mode's prevalence in failed versus successful runs when outcomes are known. Every bar carries
its value in a ``data-value`` attribute and a text label, so the numbers can be checked
against the JSON output. Shares are drawn on a 0-100% axis (half a bar is 50%), modes found in
no run are listed in one line instead of empty rows, and shares read as percentages, as in
the web view.
"""

from __future__ import annotations

from html import escape
from typing import Any, Sequence

from mast_otel.processors.offline.summary import advice_by_mode

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
OUTCOME_COLORS = {"failure": "#e15759", "success": "#59a14f"}
ROW_H, BAR_H, CHART_W = 8, 14, 420
CHAR_W = 6.6  # width of one 11px label character, generous, so labels are never clipped
MAX_RUN_ROWS = 1000

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;color:#222;max-width:1100px}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}table{border-collapse:collapse;font-size:.85rem}
td,th{border-bottom:1px solid #ddd;padding:.25rem .6rem;text-align:left}th{background:#f4f4f4}
.legend span{display:inline-block;margin-right:1rem}.legend i{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem}
.fatal{color:#b00020;font-weight:600}svg text{font-size:11px;fill:#222}
table.models td:first-child,table.runs td:nth-child(-n+2){white-space:nowrap}.note{color:#555;font-size:.85rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;font-size:.85rem}dt{font-weight:600}dd{margin:0;color:#555}
"""


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def bar_chart(title: str, groups: Sequence[tuple[str, Sequence[tuple[str, float | None]]]],
              colors: dict[str, str], *, percent: bool = False) -> str:
    """Horizontal grouped bars: one group per label, one bar per series. Shares (``percent``)
    are drawn against 100%; other values against the largest one."""
    values = [v for _, bars in groups for _, v in bars if v is not None]
    top = 1.0 if percent else (max(values, default=0) or 1.0)
    label_w = round(max((len(label) for label, _ in groups), default=10) * CHAR_W) + 12
    per_group = max((len(bars) for _, bars in groups), default=1)
    group_h = per_group * BAR_H + ROW_H
    height = len(groups) * group_h + 10
    parts = [f'<svg role="img" aria-label="{escape(title)}" width="{label_w + CHART_W + 60}" height="{height}" '
             f'xmlns="http://www.w3.org/2000/svg">']
    for g, (label, bars) in enumerate(groups):
        y0 = g * group_h + 5
        parts.append(f'<text x="{label_w - 6}" y="{y0 + per_group * BAR_H / 2 + 4}" text-anchor="end">{escape(label)}</text>')
        for b, (series, value) in enumerate(bars):
            y = y0 + b * BAR_H
            w = 0 if value is None else CHART_W * value / top
            shown = "-" if value is None else (f"{value:.0%}" if percent else f"{value:.2f}")
            parts.append(f'<rect class="bar" data-group="{escape(label)}" data-series="{escape(series)}" '
                         f'data-value="{"" if value is None else value}" x="{label_w}" y="{y}" width="{w:.1f}" '
                         f'height="{BAR_H - 2}" fill="{colors.get(series, PALETTE[0])}"><title>{escape(series)}: {shown}</title></rect>')
            parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + BAR_H - 4}">{shown}</text>')
    parts.append("</svg>")
    legend = "".join(f'<span><i style="background:{c}"></i>{escape(s)}</span>' for s, c in colors.items())
    return f'<h2>{escape(title)}</h2><div class="legend">{legend}</div>{"".join(parts)}'


def _unseen_note(unseen: list[str], names: dict[str, Any]) -> str:
    if not unseen:
        return ""
    listed = ", ".join(f"{m} {names[m]['name']}" for m in unseen)
    return f'<p class="note unseen">Found in no run: {escape(listed)}.</p>'


def render(summary: dict[str, Any], *, title: str = "mast-otel failure-mode analysis") -> str:
    models = summary["models"]
    names = summary["modes"]
    colors = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(models)}
    seen = [m for m in names if summary["overall"]["prevalence"].get(m)]
    unseen = [m for m in names if m not in seen]
    sections = [
        f"<h1>{escape(title)}</h1>",
        f"<p>{summary['overall']['runs']} runs, {len(models)} model(s); "
        f"{summary['overall']['runs_with_modes']} runs with at least one failure mode.</p>",
        _model_table(models),
        bar_chart("Mode prevalence per model (share of runs)",
                  [(f"{m} {names[m]['name']}", [(model, s["prevalence"][m]) for model, s in models.items()]) for m in seen],
                  colors, percent=True) + _unseen_note(unseen, names),
        bar_chart("Failure modes per run and per failed run",
                  [(model, [("per run", s["modes_per_run"]), ("per failed run", s["modes_per_failed_run"])])
                   for model, s in models.items()],
                  {"per run": PALETTE[0], "per failed run": OUTCOME_COLORS["failure"]}),
    ]
    by_outcome = summary["overall"]["prevalence_by_outcome"]
    if by_outcome:
        sections.append(bar_chart(
            "Mode prevalence in failed vs successful runs (all models)",
            [(f"{m} {names[m]['name']}", [(o, by_outcome[m][o]) for o in ("failure", "success")]) for m in seen],
            OUTCOME_COLORS, percent=True) + _unseen_note(unseen, names))
    else:
        sections.append("<h2>Mode prevalence in failed vs successful runs</h2><p>No run outcomes are known.</p>")
    sections.append(_runs_table(summary["runs"]))
    sections.append(_what_to_do(summary["runs"], names))
    sections.append(LEGEND)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{CSS}</style></head><body>{''.join(sections)}</body></html>")


def _model_table(models: dict[str, Any]) -> str:
    head = ("<tr><th>model</th><th>runs</th><th>modes/run</th><th>failed runs</th><th>modes/failed run</th>"
            "<th>runs with a fatal-rated mode</th><th>top modes</th></tr>")
    rows = "".join(
        f"<tr><td>{escape(model)}</td><td>{s['runs']}</td><td>{_fmt(s['modes_per_run'])}</td><td>{s['failed_runs']}</td>"
        f"<td>{_fmt(s['modes_per_failed_run'])}</td><td>{_pct(s['fatal_share'])}</td><td>{escape(', '.join(s['top_modes']))}</td></tr>"
        for model, s in models.items())
    return f'<h2>Per model</h2><table class="models">{head}{rows}</table>'


def _went_wrong_at(run: dict[str, Any]) -> str:
    who = run.get("attribution")
    if not who:
        return "-"
    step = who.get("step_label") or who.get("step_span_id")
    return f"{who.get('agent') or 'unknown agent'}" + (f", {step}" if step else "")


def _why(run: dict[str, Any]) -> str:
    """Each finding's explanation, then its evidence as steps (number, kind and name)."""
    return "; ".join(
        escape(f["explanation"]) + (f' <span class="note evidence">(evidence: {escape(", ".join(f["evidence_steps"]))})</span>'
                                    if f.get("evidence_steps") else "")
        for f in run["findings"])


def _agents(run: dict[str, Any]) -> str:
    team = run.get("team")
    return ", ".join(team["agents"]) if team and team["agents"] else (run.get("agent") or "-")


def _teams_section(runs: list[dict[str, Any]]) -> str:
    """Each team run (shown in the runs table): its handoffs and who made each tool call."""
    from mast_otel.processors.team_view import team_lines

    items = [f"<li><code>{escape(r['trace_id'])}</code>: {escape(_agents(r))}<ul>"
             + "".join(f"<li>{escape(line)}</li>" for line in lines) + "</ul></li>"
             for r in runs[:MAX_RUN_ROWS] if r.get("team") and (lines := team_lines(r["team"]))]
    return f'<h2>Teams</h2><ul class="teams">{"".join(items)}</ul>' if items else ""


def _runs_table(runs: list[dict[str, Any]]) -> str:
    shown = runs[:MAX_RUN_ROWS]
    rows = "".join(
        f"<tr><td><code>{escape(r['trace_id'])}</code></td><td>{escape(r['model'])}</td><td>{escape(_agents(r))}</td>"
        f"<td>{escape(r['outcome'] or '-')}</td>"
        f"<td{' class=fatal' if r['fatal'] else ''}>{escape(', '.join(r['modes']) or '-')}</td>"
        f'<td class="went-wrong">{escape(_went_wrong_at(r))}</td><td>{_why(r)}</td></tr>'
        for r in shown)
    more = f"<p>First {MAX_RUN_ROWS} of {len(runs)} runs shown; use --format json for all.</p>" if len(runs) > MAX_RUN_ROWS else ""
    return (f'<h2>Runs</h2>{more}<table class="runs"><tr><th>trace</th><th>model</th><th>agents</th><th>outcome</th>'
            f"<th>modes</th><th>went wrong at</th><th>why</th></tr>{rows}</table>") + _teams_section(runs)


def _what_to_do(runs: list[dict[str, Any]], names: dict[str, Any]) -> str:
    """Once per mode found: what it is, what prevents it, what tunes it and its docs section."""
    advice = advice_by_mode(runs)
    if not advice:
        return ""
    items = []
    for mode, todo in advice.items():
        guards = f" Guard: {escape(', '.join(todo['guards']))}." if todo["guards"] else ""
        settings = f"<br>Tuned by: <code>{'</code>, <code>'.join(escape(s) for s in todo['settings'])}</code>" if todo["settings"] else ""
        items.append(f'<dt id="{escape(mode)}">{escape(mode)} {escape(names[mode]["name"])}</dt>'
                     f'<dd data-what-to-do="{escape(mode)}">{escape(todo["description"])}<br>What to do: {escape(todo["prevention"])}'
                     f'{guards}{settings}<br>Docs: <code>{escape(todo["docs"])}</code></dd>')
    return f'<h2>What to do</h2><dl class="what-to-do">{"".join(items)}</dl>'


LEGEND = (
    "<h2>What the terms mean</h2><dl>"
    "<dt>outcome</dt><dd>Whether a run did its task (success or failure), when the input says; only the outcome says a run failed.</dd>"
    "<dt>prevalence</dt><dd>Share of runs in which a mode was found.</dd>"
    "<dt>fatal-rated mode</dt><dd>A mode whose severity is fatal: a rating of the mode, not the run's outcome.</dd>"
    "<dt>runs with a fatal-rated mode</dt><dd>Share of a model's runs with at least one fatal-rated mode, whatever their outcome.</dd>"
    "<dt>modes/failed run</dt><dd>Failure modes found, on average, in runs whose outcome is failure.</dd>"
    "</dl>"
)
