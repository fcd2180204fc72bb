"""The two bundled dashboards: "Agent failure modes" and "mast-otel processor"."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol, TypeVar

from grafana_foundation_sdk.builders import bargauge, piechart, stat, table, timeseries
from grafana_foundation_sdk.builders.common import ReduceDataOptions, VizTooltipOptions
from grafana_foundation_sdk.builders.dashboard import DashboardLink, TextBoxVariable, ThresholdsConfig
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.variants import Dataquery
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.piechart import PieChartLegendValues, PieChartType

from generator.datasources import PROMETHEUS_UID, TEMPO_UID
from generator.panels import (
    PROM_DS, TEMPO_DS, Item, dashboard, datasource_variable, override, prom, query_variable, row, textbox_variable,
    thresholds, traceql, transformation,
)

RUNS = 'service_name=~"$service", agent=~"$agent", model=~"$model"'
# Sessions (conversations) carry only the service: their metrics have no agent, model or session label.
SESSIONS = 'service_name=~"$service"'
RATE = "[$__rate_interval]"
RANGE = "[$__range]"


class _Panel(Protocol):
    """What every typed panel builder of the SDK offers (each panel type is its own class)."""

    def title(self, title: str) -> _Panel: ...
    def description(self, description: str) -> _Panel: ...
    def datasource(self, datasource: model.DataSourceRef) -> _Panel: ...
    def targets(self, targets: list[Builder[Dataquery]]) -> _Panel: ...
    def span(self, w: int) -> _Panel: ...
    def height(self, h: int) -> _Panel: ...
    def unit(self, unit: str) -> _Panel: ...


P = TypeVar("P", bound=_Panel)


def panel(builder: P, title: str, description: str, targets: Sequence[Builder[Dataquery]], *, width: int = 12,
          height: int = 8, unit: str = "short", datasource: model.DataSourceRef = PROM_DS) -> P:
    """What every panel here sets: title, description, data source, queries, size and unit."""
    builder.title(title).description(description).datasource(datasource).targets(list(targets))
    builder.span(width).height(height).unit(unit)
    return builder


def _last_value() -> ReduceDataOptions:
    return ReduceDataOptions().calcs(["lastNotNull"]).values(True)


def _donut(builder: piechart.Panel) -> piechart.Panel:
    """A donut with its legend as a table on the right, each slice's share in percent.

    Legend shown and tooltip unsorted are written out: they are Grafana's defaults for a pie chart,
    while the SDK's zero values for these required fields would hide the legend.
    """
    return (builder.pie_type(PieChartType.DONUT).reduce_options(_last_value())
            .tooltip(VizTooltipOptions().mode(common.TooltipDisplayMode.SINGLE).sort(common.SortOrder.NONE))
            .legend(piechart.PieChartLegendOptions().show_legend(True).display_mode(common.LegendDisplayMode.TABLE)
                    .placement(common.LegendPlacement.RIGHT).values([PieChartLegendValues.PERCENT])))


def _horizontal_bars(builder: bargauge.Panel) -> bargauge.Panel:
    return (builder.orientation(common.VizOrientation.HORIZONTAL).display_mode(common.BarGaugeDisplayMode.GRADIENT)
            .reduce_options(_last_value()))


def _percent_thresholds() -> ThresholdsConfig:
    return thresholds(("green", None), ("orange", 0.1), ("red", 0.3))


def _mode_share(fn: str, window: str) -> str:
    """Per model and mode: runs showing the mode / runs diagnosed (``fn`` is rate or increase)."""
    return (f"sum by (model, mode) ({fn}(mast_failure_mode_traces_total{{{RUNS}}}{window}))"
            f" / ignoring (mode) group_left sum by (model) ({fn}(mast_traces_total{{{RUNS}}}{window}))")


def _mode_share_in(outcome: str) -> str:
    """Per model and mode: share of the runs with ``outcome`` that show the mode, over the range."""
    return (f'sum by (model, mode) (increase(mast_failure_mode_outcomes_total{{{RUNS}, outcome="{outcome}"}}{RANGE}))'
            f' / ignoring (mode) group_left sum by (model) (increase(mast_outcomes_total{{{RUNS}, outcome="{outcome}"}}{RANGE}))')


def _tempo_links() -> list[dict[str, object]]:
    """The Tempo table's data links on the trace id: the trace in Explore, the run in the web view.

    Raw on purpose: the SDK types a field's links as dashboard links (type, tags, icon, ...), while
    Grafana reads a field's data links as ``{title, url, targetBlank}``; these two stay that shape.
    """
    explore = {"t": {"datasource": "${tempo}", "queries": [{"refId": "A", "datasource": TEMPO_DS.to_json(), "queryType": "traceql",
                                                           "query": "${__value.raw}"}], "range": {"from": "now-24h", "to": "now"}}}
    return [
        {"title": "Open the trace in Tempo", "url": "/explore?schemaVersion=1&panes=" + json.dumps(explore, separators=(",", ":"))},
        {"title": "Open the run (processor web view)", "url": "${processor_url}/runs/${__value.raw}", "targetBlank": True},
    ]


def web_view_links() -> list[DashboardLink]:
    """Both dashboards link to each other and to the processor's web view, at the URL in $processor_url."""
    return [
        DashboardLink("Web view (runs)").type(model.DashboardLinkType.LINK).url("${processor_url}/").target_blank(True)
        .icon("external link").tooltip("The processor's web view: every diagnosed run with its evidence"),
        DashboardLink("mast-otel dashboards").type(model.DashboardLinkType.DASHBOARDS).tags(["mast-otel"])
        .as_dropdown(True).keep_time(True).include_vars(False),
    ]


# Where people reach the processors' API and web view: the compose stack's processor-api service
# and the `kubectl port-forward` in docs/deployment.md both put it here, and the alert rules fall
# back to the same address (deploy/prometheus/rules/mast-alerts.yml).
PROCESSOR_URL = "http://localhost:14318"


def processor_url_variable() -> TextBoxVariable:
    """Where people reach the processor's web view and API (set it per Grafana; links use it)."""
    return textbox_variable("processor_url", "Processor URL", PROCESSOR_URL)


def failure_modes() -> model.Dashboard:
    items: list[Item] = [
        row("Runs"),
        panel(stat.Panel(), "Runs diagnosed", "Agent runs diagnosed in the time range.",
              [prom(f"sum(increase(mast_traces_total{{{RUNS}}}{RANGE}))", instant=True)], width=6, height=5),
        panel(stat.Panel(), "Success rate", "Share of runs with a known outcome that succeeded (outcome on the run's span or posted to /v1/outcomes).",
              [prom(f'sum(increase(mast_outcomes_total{{{RUNS}, outcome="success"}}{RANGE}))'
                    f' / sum(increase(mast_outcomes_total{{{RUNS}, outcome=~"success|failure"}}{RANGE}))', instant=True)],
              width=6, height=5, unit="percentunit"),
        panel(stat.Panel(), "Fatal-mode detections per run", "Detections of modes whose severity is fatal, per diagnosed run.",
              [prom(f'sum(increase(mast_failure_mode_traces_total{{{RUNS}, severity="fatal"}}{RANGE}))'
                    f" / sum(increase(mast_traces_total{{{RUNS}}}{RANGE}))", instant=True)], width=6, height=5),
        panel(stat.Panel(), "Failure modes per failed run", "Average number of distinct modes in a failed run.",
              [prom(f'sum(increase(mast_failure_mode_outcomes_total{{{RUNS}, outcome="failure"}}{RANGE}))'
                    f' / sum(increase(mast_outcomes_total{{{RUNS}, outcome="failure"}}{RANGE}))', instant=True)], width=6, height=5),
        panel(timeseries.Panel(), "Runs per model", "Agent runs diagnosed per second.",
              [prom(f"sum by (model) (rate(mast_traces_total{{{RUNS}}}{RATE}))", "{{model}}")], unit="ops"),
        panel(timeseries.Panel(), "Success rate per model", "Share of runs with a known outcome that succeeded.",
              [prom(f'sum by (model) (rate(mast_outcomes_total{{{RUNS}, outcome="success"}}{RATE}))'
                    f' / sum by (model) (rate(mast_outcomes_total{{{RUNS}, outcome=~"success|failure"}}{RATE}))', "{{model}}")],
              unit="percentunit").min(0).max(1),

        row("Failure modes"),
        panel(timeseries.Panel(), "Share of runs showing each mode", "Per model and mode: runs showing the mode / runs diagnosed.",
              [prom(_mode_share("rate", RATE), "{{model}} {{mode}}")], width=24, unit="percentunit")
        .min(0).thresholds(_percent_thresholds()),
        panel(table.Panel(), "Model x mode", "Share of each model's runs that show each mode over the time range (a heatmap: darker is worse).",
              [prom(_mode_share("increase", RANGE), instant=True)], width=24, unit="percentunit")
        .min(0).thresholds(_percent_thresholds())
        .cell_options(common.TableColoredBackgroundCellOptions(mode=common.TableCellBackgroundDisplayMode.GRADIENT))
        .with_transformation(transformation("groupingToMatrix", {"columnField": "mode", "rowField": "model", "valueField": "Value"})),
        _donut(panel(piechart.Panel(), "Fatal vs recoverable", "Mode detections by severity (as configured in the processor).",
                     [prom(f"sum by (severity) (increase(mast_failure_mode_traces_total{{{RUNS}}}{RANGE}))", "{{severity}}", instant=True)],
                     width=8)),
        _donut(panel(piechart.Panel(), "FC1 / FC2 / FC3", "Mode detections by MAST category: FC1 system design, FC2 inter-agent misalignment, FC3 task verification.",
                     [prom(f"sum by (category) (increase(mast_failure_mode_traces_total{{{RUNS}}}{RANGE}))", "{{category}}", instant=True)],
                     width=8)),
        panel(timeseries.Panel(), "Detections by source", "Mode detections per second by the tier that found them first (rules or the LLM judge).",
              [prom(f"sum by (source) (rate(mast_failure_mode_traces_total{{{RUNS}}}{RATE}))", "{{source}}")], width=8, unit="ops"),

        row("What kills runs"),
        _horizontal_bars(panel(
            bargauge.Panel(), "Failure modes per failed run, per model",
            "Distinct modes in an average failed run. For scale: the published ITBench analysis found about 2.6 modes per "
            "failed trace for a frontier model and 5.3 for an open model.",
            [prom(f'sum by (model) (increase(mast_failure_mode_outcomes_total{{{RUNS}, outcome="failure"}}{RANGE}))'
                  f' / sum by (model) (increase(mast_outcomes_total{{{RUNS}, outcome="failure"}}{RANGE}))', "{{model}}", instant=True)],
            width=8)).min(0).max(6),
        panel(table.Panel(), "Prevalence in failed vs successful runs",
              "Per model and mode: share of failed runs and of successful runs showing the mode. A mode common in failed runs "
              "and rare in successful ones is what kills runs; one common in both is survivable.",
              [prom(_mode_share_in("failure"), instant=True, ref="failed"),
               prom(_mode_share_in("success"), instant=True, ref="succeeded")],
              width=16, unit="percentunit")
        .min(0).thresholds(_percent_thresholds()).cell_options(common.TableColorTextCellOptions())
        .with_transformation(transformation("merge", {}))
        .with_transformation(transformation("organize", {"excludeByName": {"Time": True},
                                                         "renameByName": {"Value #failed": "in failed runs",
                                                                          "Value #succeeded": "in successful runs"}})),

        row("Guards"),
        _horizontal_bars(panel(
            bargauge.Panel(), "Failures prevented",
            "Interventions of agent-side guards in enforce mode (a refused repeat, a stopped run, a refused success "
            "claim, a change held until a clarification), per guard and model over the time range: each one a failure "
            "mode acted on while the run was going.",
            [prom(f'sum by (guard, model) (increase(mast_guard_interventions_total{{{RUNS}, mode="enforce", '
                  f'action!="recorded"}}{RANGE}))', "{{guard}} {{model}}", instant=True)],
            width=12)),
        panel(timeseries.Panel(), "Guard interventions",
              "Guard interventions per second by guard, mode and action; observe mode records what a guard would have "
              "done without acting.",
              [prom(f"sum by (guard, mode, action) (rate(mast_guard_interventions_total{{{RUNS}}}{RATE}))",
                    "{{guard}} {{mode}} {{action}}")], width=12, unit="ops"),

        row("Teams"),
        panel(table.Panel(), "Team members at fault",
              "Per team (the run's agent) and member: runs in which a mode concerned that member's decision (the operator "
              "that reported a failed change as success, the coordinator that claimed success unchecked). One-agent runs "
              "show the agent as its own team.",
              [prom('sum by (team, agent, mode) (increase(mast_failure_mode_agents_total{service_name=~"$service", '
                    f'team=~"$agent", model=~"$model"}}{RANGE}))', instant=True)],
              width=24, unit="none")
        .with_transformation(transformation("organize", {"excludeByName": {"Time": True}, "renameByName": {"Value": "runs"}})),

        row("Live"),
        panel(timeseries.Panel(), "Live detections", "Modes raised while the run was still going (a loop caught now, a budget about to run out).",
              [prom(f"sum by (model, mode) (rate(mast_live_detections_total{{{RUNS}}}{RATE}))", "{{model}} {{mode}}")], unit="ops"),
        panel(table.Panel(), "Recent runs with fatal modes",
              "Traces whose diagnosis found a fatal mode (mast.fatal on the root span), from Tempo. Links open the trace "
              "and the run's page in the processor's web view (its diagnosis with the evidence).",
              [traceql('{ span.mast.fatal = true && resource.service.name =~ "${service:regex}" } '
                       "| select(span.mast.failure_modes, span.gen_ai.agent.name)", limit=20)],
              datasource=TEMPO_DS, unit="none")
        .data_links([]).with_override(*override("byName", "traceID", {"links": _tempo_links()})),

        row("Conversations"),
        panel(timeseries.Panel(), "Sessions per minute",
              "Sessions (conversations: turns sharing a session or conversation id, each turn its own run) seen per "
              "minute, counted once per session at its first turn.",
              [prom(f"sum by (service_name) (rate(mast_sessions_total{{{SESSIONS}}}{RATE})) * 60", "{{service_name}}")],
              width=10, unit="short"),
        panel(stat.Panel(), "Open sessions",
              "Sessions the processors hold open now (a turn within sessions.quiet_seconds), summed over replicas; "
              "the gauge carries no service label.",
              [prom("sum(mast_sessions_open)", instant=True)], width=4),
        panel(timeseries.Panel(), "Dropped turns",
              "Turns left out of their session's diagnosis per second, by reason: queue_full, over_budget, unusable_id "
              "and refused were not grouped (the run's own diagnosis stands); max_turns is the oldest turn of a long "
              "session. No service label.",
              [prom(f"sum by (reason) (rate(mast_session_turns_dropped_total{RATE}))", "{{reason}}")], width=10, unit="ops"),
        panel(timeseries.Panel(), "Sessions completed early",
              "Open sessions completed before sessions.quiet_seconds per second, by reason: max_open_sessions, or "
              "memory (open sessions passed their share of the memory budget, as under a flood of new session ids); a "
              "later turn opens the session again. No service label.",
              [prom(f"sum by (reason) (rate(mast_sessions_completed_early_total{RATE}))", "{{reason}}")], width=10, unit="ops"),
        panel(timeseries.Panel(), "Sessions with a cross-turn mode",
              "Per mode that shows only between turns (FM-1.4: history lost or the user asked again; FM-1.3: a call "
              "repeated across turns; FM-3.3: an answer contradicting an earlier turn): sessions found with the mode / "
              "sessions started, over the same window. A mode "
              "is counted once per session when a later turn reveals it, so a window may count a mode of a session "
              "that started before it.",
              [prom(f"sum by (mode, mode_name) (rate(mast_session_failure_mode_total{{{SESSIONS}}}{RATE}))"
                    f" / ignoring (mode, mode_name) group_left sum(rate(mast_sessions_total{{{SESSIONS}}}{RATE}))",
                    "{{mode}} {{mode_name}}")], width=24, unit="percentunit")
        .min(0).thresholds(_percent_thresholds()),
    ]
    variables = [
        datasource_variable("datasource", "Prometheus", "prometheus", PROMETHEUS_UID),
        datasource_variable("tempo", "Tempo", "tempo", TEMPO_UID),
        query_variable("service", "Service", "label_values(mast_traces_total, service_name)"),
        query_variable("agent", "Agent", 'label_values(mast_traces_total{service_name=~"$service"}, agent)'),
        query_variable("model", "Model", 'label_values(mast_traces_total{service_name=~"$service", agent=~"$agent"}, model)'),
        processor_url_variable(),
    ]
    return dashboard("mast-failure-modes", "Agent failure modes",
                     "Why agent runs fail: MAST failure modes per model, live, from the mast-otel processor.", variables, items,
                     links=web_view_links())


def processor() -> model.Dashboard:
    inst = 'instance=~"$instance"'
    items: list[Item] = [
        row("Ingest"),
        panel(timeseries.Panel(), "Spans received", "Spans accepted per second, by protocol (duplicates excluded).",
              [prom(f"sum by (protocol) (rate(mast_spans_received_total{{{inst}}}{RATE}))", "{{protocol}}")], width=8, unit="ops"),
        panel(timeseries.Panel(), "Spans rejected", "Spans rejected or dropped per second, by reason (the OTLP partial-success message names it to the sender).",
              [prom(f"sum by (reason) (rate(mast_spans_rejected_total{{{inst}}}{RATE}))", "{{reason}}")], width=8, unit="ops"),
        panel(timeseries.Panel(), "Late spans", "Spans that arrived after their run was diagnosed: re-diagnosed, or dropped after retention.",
              [prom(f"sum by (reason) (rate(mast_late_spans_total{{{inst}}}{RATE}))", "{{reason}}")], width=8, unit="ops"),

        row("Assembly"),
        panel(timeseries.Panel(), "Traces in flight", "Traces buffered while their spans arrive (left axis), and the memory "
              "they hold (right axis).",
              [prom(f"sum(mast_traces_in_flight{{{inst}}})", "traces"),
               prom(f"sum(mast_buffered_bytes{{{inst}}})", "bytes", ref="B")], width=8)
        .axis_soft_min(0)
        .with_override(*override("byFrameRefID", "B", {"unit": "bytes", "custom.axisPlacement": "right",
                                                       "custom.axisLabel": "buffered"})),
        panel(timeseries.Panel(), "Traces completed", "How runs were judged complete: root ended, idle timeout, evicted early, or flushed at shutdown.",
              [prom(f"sum by (completion) (rate(mast_traces_completed_total{{{inst}}}{RATE}))", "{{completion}}")], width=8, unit="ops"),
        panel(timeseries.Panel(), "Evictions", "Traces diagnosed early to stay within memory limits, by the limit hit.",
              [prom(f"sum by (reason) (rate(mast_traces_evicted_total{{{inst}}}{RATE}))", "{{reason}}")], width=8, unit="ops"),

        row("Diagnosis"),
        panel(timeseries.Panel(), "Diagnosis latency", "Root span end to diagnosis (includes the assembly grace period).",
              [prom(f"histogram_quantile({q}, sum by (le) (rate(mast_diagnosis_latency_seconds_bucket{{{inst}}}{RATE})))", f"p{int(q * 100)}", ref=r)
               for q, r in ((0.5, "A"), (0.95, "B"), (0.99, "C"))], unit="s"),
        panel(timeseries.Panel(), "Enriched spans exported", "Spans re-exported over OTLP with the diagnosis attached, per endpoint.",
              [prom(f"sum by (endpoint) (rate(mast_exported_spans_total{{{inst}}}{RATE}))", "{{endpoint}}")], unit="ops"),

        row("LLM judge"),
        panel(timeseries.Panel(), "Judge requests", "LLM judge requests per second by judge model and status.",
              [prom(f"sum by (judge_model, status) (rate(mast_judge_requests_total{{{inst}}}{RATE}))", "{{judge_model}} {{status}}")],
              width=8, unit="reqps"),
        panel(timeseries.Panel(), "Judge tokens", "Tokens per second spent by the judge.",
              [prom(f"sum by (judge_model) (rate(mast_judge_tokens_total{{{inst}}}{RATE}))", "{{judge_model}}")], width=8),
        panel(stat.Panel(), "Judge cost", "Estimated US dollars spent by the judge in the time range.",
              [prom(f"sum(increase(mast_judge_cost_usd_total{{{inst}}}{RANGE}))", instant=True)], width=8, unit="currencyUSD")
        .decimals(4),
    ]
    variables = [
        datasource_variable("datasource", "Prometheus", "prometheus", PROMETHEUS_UID),
        query_variable("instance", "Processor", 'label_values(mast_spans_received_total, instance)'),
        processor_url_variable(),
    ]
    return dashboard("mast-otel-processor", "mast-otel processor",
                     "Health of the mast-otel processor: ingest, assembly, diagnosis latency and the LLM judge.", variables, items,
                     links=web_view_links())


DASHBOARDS = {"agent-failure-modes.json": failure_modes, "mast-otel-processor.json": processor}
