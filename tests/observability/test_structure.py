"""Structural checks of what cannot run here: dashboards, Grafana provisioning, collector,
compose and Kubernetes files. Every file parses, every reference resolves, ports and names
agree across files, and every metric a query uses is one the processor exposes."""

from __future__ import annotations

import re
import subprocess
from urllib.parse import urlparse

import pytest
import yaml
from prometheus_client import CollectorRegistry

from tests.tools import require_tool
from obsfiles import (
    COLLECTOR, DEPLOY, GRAFANA, PROMTOOL_TESTS, ROOT, RULES_DIR, alert_rules, dashboards, load_yaml,
    load_yaml_all, rule_groups,
)

METRIC = re.compile(r"(?<![\w:$])(mast_[a-z0-9_]+|up)(?![\w:(])")
VARIABLE = re.compile(r"\$\{?(\w+)")
GRAFANA_BUILTINS = {"__rate_interval", "__range", "__interval", "__value", "__all"}


def exposed_metric_names() -> set[str]:
    """Sample names the processor exposes with its defaults (counters with _total, histograms'
    parts): its Metrics class and the write-ahead log's, both on one registry."""
    from mast_otel.processors.config import MetricsConfig
    from mast_otel.processors.service.telemetry.metrics import Metrics
    from mast_otel.processors.service.wal.log import WALMetrics

    names = {"up"}
    registry = Metrics(MetricsConfig(), registry=CollectorRegistry()).registry
    WALMetrics(registry)
    for family in registry.collect():
        if family.type == "counter":
            names.add(family.name + "_total")
        elif family.type == "histogram":
            names.update(family.name + suffix for suffix in ("_bucket", "_sum", "_count"))
        else:
            names.add(family.name)
    return names


def prom_targets():
    for name, board in dashboards().items():
        for panel in board["panels"]:
            for target in panel.get("targets", []):
                if "expr" in target:
                    yield name, panel["title"], target


def test_generated_rules_match_the_generator():
    import generate

    assert generate.stale(generate.rule_files()) == [], "run: python grafana/generate.py"


def test_generated_dashboards_match_the_generator():
    pytest.importorskip("grafana_foundation_sdk", reason="the dashboards extra (Grafana's SDK) needs Python 3.11+")
    import generate

    assert generate.stale(generate.dashboard_files()) == [], "run: python grafana/generate.py"


def test_generate_without_the_sdk_still_checks_the_rules_and_says_what_is_missing():
    """Where Grafana's SDK is not installed (Python 3.10, an install without the dashboards extra),
    the rule files are still checked and the exit status says the dashboards were not."""
    import sys

    blocked = "import sys; sys.modules['grafana_foundation_sdk'] = None; "
    run = subprocess.run([sys.executable, "-c", blocked + "import runpy, sys; sys.argv = ['generate.py', '--check']; "
                          f"runpy.run_path({str(GRAFANA / 'generate.py')!r}, run_name='__main__')"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    assert 'pip install -e ".[dashboards]"' in run.stderr
    assert "out of date" not in run.stderr


def test_rules_pass_promtool_check_and_unit_tests():
    promtool = require_tool("promtool")
    check = subprocess.run([promtool, "check", "rules", *map(str, sorted(RULES_DIR.glob("*.yml")))], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    unit = subprocess.run([promtool, "test", "rules", str(PROMTOOL_TESTS)], capture_output=True, text=True, cwd=PROMTOOL_TESTS.parent)
    assert unit.returncode == 0, unit.stdout + unit.stderr
    config = subprocess.run([promtool, "check", "config", "--syntax-only", str(DEPLOY / "prometheus" / "prometheus.yml")], capture_output=True, text=True)
    assert config.returncode == 0, config.stdout + config.stderr


def test_alertmanager_config_is_valid():
    amtool = require_tool("amtool")
    result = subprocess.run([amtool, "check-config", str(DEPLOY / "alertmanager" / "alertmanager.yml")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_unit_test_that_expects_it_to_fire_and_to_stay_quiet():
    cases = [c for t in load_yaml(PROMTOOL_TESTS)["tests"] for c in t["alert_rule_test"]]
    for rule in alert_rules():
        mine = [c for c in cases if c["alertname"] == rule["alert"]]
        assert any(c.get("exp_alerts") for c in mine), f"{rule['alert']}: no test where it fires"
        assert any(not c.get("exp_alerts") for c in mine), f"{rule['alert']}: no test where it stays quiet"


def test_alerts_carry_runbooks_that_exist_and_failure_mode_alerts_name_model_and_agent():
    docs = (ROOT / "docs" / "observability.md").read_text()
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", docs, re.M)}
    for group in rule_groups():
        for rule in (r for r in group["rules"] if "alert" in r):
            notes = rule["annotations"]
            assert {"summary", "description", "runbook"} <= notes.keys(), rule["alert"]
            assert notes["runbook"].split("#")[1] in anchors, f"{rule['alert']}: runbook anchor missing in docs"
            assert rule["labels"]["severity"] in ("page", "ticket")
            if group["name"] == "mast-otel-failure-modes":
                assert "$labels.model" in notes["summary"] and "$labels.agent" in notes["summary"], rule["alert"]
            if group["name"] == "mast-otel-sessions":  # session metrics carry the service only
                assert "$labels.service_name" in notes["summary"], rule["alert"]


PROCESSOR_LINK = re.compile(r'\{\{ or \$externalLabels\.mast_processor_url "http://[^"]+" \}\}/v1/diagnoses'
                            r"\?model=\{\{ \$labels\.model \| urlquery \}\}&mode=(FM-\d\.\d)")


SESSIONS_LINK = re.compile(r'\{\{ or \$externalLabels\.mast_processor_url "http://[^"]+" \}\}/v1/sessions'
                           r"\?service=\{\{ \$labels\.service_name \| urlquery \}\}&mode=(FM-\d\.\d)")


def test_alert_links_are_absolute_and_name_the_model():
    """Runbooks and API hints are URLs built from external labels (with fallbacks), never repo paths;
    run hints filter on the alert's model, session hints on its service."""
    for rule in alert_rules():
        notes = rule["annotations"]
        assert notes["runbook"].startswith('{{ or $externalLabels.mast_runbook_url "https://'), rule["alert"]
        hints = notes["description"].count("/v1/diagnoses")
        assert len(PROCESSOR_LINK.findall(notes["description"])) == hints, \
            f"{rule['alert']}: a /v1/diagnoses hint without the processor URL or the model filter"
        assert len(SESSIONS_LINK.findall(notes["description"])) == notes["description"].count("/v1/sessions"), \
            f"{rule['alert']}: a /v1/sessions hint without the processor URL or the service filter"
    hinted = {r["alert"]: set(PROCESSOR_LINK.findall(r["annotations"]["description"])) for r in alert_rules()}
    assert hinted["MastVerificationFailuresSpiking"] == {"FM-3.2", "FM-3.3"}
    assert hinted["MastAgentStuckInLoop"] == {"FM-1.3"}
    sessions = {r["alert"]: set(SESSIONS_LINK.findall(r["annotations"]["description"])) for r in alert_rules()}
    assert sessions["MastSessionHistoryLostSpiking"] == {"FM-1.4"}
    labels = load_yaml(DEPLOY / "prometheus" / "prometheus.yml")["global"]["external_labels"]
    assert urlparse(labels["mast_processor_url"]).scheme == "http"


def test_spike_alerts_require_a_baseline_with_history():
    """A cold start has no baseline: every alert judged against one also requires the history guard
    (runs in the baseline day, or sessions for the session alerts)."""
    judged = 0
    for rule in alert_rules():
        if "rate1d_offset" in rule["expr"]:
            judged += 1
            guard = "service:mast_sessions" if rule["expr"].lstrip("(").startswith("service:") else "service_agent_model:mast_traces"
            assert re.search(rf"{guard}:increase1d_offset30m >= \d+", rule["expr"]), rule["alert"]
    assert judged >= 4


def test_every_metric_in_dashboards_and_rules_is_exposed_by_the_processor():
    exposed = exposed_metric_names()
    used = {(f"{name}: {title}", m) for name, title, t in prom_targets() for m in METRIC.findall(t["expr"])}
    used |= {(f"rule {r.get('record') or r.get('alert')}", m) for g in rule_groups() for r in g["rules"] for m in METRIC.findall(r["expr"])}
    unknown = sorted(f"{where}: {metric}" for where, metric in used if metric not in exposed)
    assert not unknown
    assert {"mast_traces_total", "mast_failure_mode_traces_total", "mast_judge_cost_usd_total"} <= {m for _, m in used}
    # Every session (conversation) metric the processor exposes is on a dashboard.
    on_dashboards = {m for _, _, t in prom_targets() for m in METRIC.findall(t["expr"])}
    sessions = {m for m in exposed if m.startswith("mast_session")}
    assert {"mast_sessions_total", "mast_session_failure_mode_total", "mast_sessions_open",
            "mast_session_turns_dropped_total"} <= sessions <= on_dashboards, sessions - on_dashboards


def test_recording_rules_used_by_alerts_are_defined():
    recorded = {r["record"] for g in rule_groups() for r in g["rules"] if "record" in r}
    used = {name for r in alert_rules() for name in re.findall(r"[a-z_]+:[a-z0-9_]+:[a-z0-9_]+", r["expr"])}
    assert used and used <= recorded, used - recorded


def test_dashboards_reference_provisioned_datasources_and_defined_variables():
    provisioned = {d["uid"]: d["type"] for d in load_yaml(GRAFANA / "provisioning" / "datasources" / "mast-otel.yaml")["datasources"]}
    for name, board in dashboards().items():
        variables = {v["name"]: v for v in board["templating"]["list"]}
        for var in variables.values():
            if var["type"] == "datasource":
                assert provisioned.get(var["current"]["value"]) == var["query"], f"{name}: ${var['name']} default"
        assert {"datasource", "service", "agent", "model"} <= variables.keys() or name == "mast-otel-processor.json"
        for panel in board["panels"]:
            sources = [panel["datasource"], *(t["datasource"] for t in panel.get("targets", []))] if panel["type"] != "row" else []
            for source in sources:
                ref = VARIABLE.findall(source["uid"])
                assert ref and variables[ref[0]]["query"] == source["type"], f"{name}: {panel['title']}"
            text = repr(panel.get("targets", [])) + repr(panel.get("fieldConfig", {}))
            for used in set(VARIABLE.findall(text)) - GRAFANA_BUILTINS:
                assert used in variables, f"{name}: {panel['title']} uses undefined ${used}"


def test_dashboard_layout_has_unique_ids_and_no_overlapping_panels():
    for name, board in dashboards().items():
        ids = [p["id"] for p in board["panels"]]
        assert len(ids) == len(set(ids)), name
        cells = set()
        for p in board["panels"]:
            g = p["gridPos"]
            assert g["x"] + g["w"] <= 24, f"{name}: {p['title']}"
            mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
            assert not cells & mine, f"{name}: {p['title']} overlaps"
            cells |= mine


def test_failure_modes_dashboard_has_every_required_panel():
    board = dashboards()["agent-failure-modes.json"]
    exprs = {p["title"]: " ".join(t.get("expr", t.get("query", "")) for t in p["targets"]) for p in board["panels"] if p["type"] != "row"}
    fatal = board["panels"][[p["title"] for p in board["panels"]].index("Recent runs with fatal modes")]
    assert "span.mast.fatal = true" in exprs["Recent runs with fatal modes"]
    links = [link["url"] for o in fatal["fieldConfig"]["overrides"] for prop in o["properties"] for link in prop["value"]]
    assert any("${processor_url}/runs/${__value.raw}" == url for url in links)
    assert any(url.startswith("/explore") and "${tempo}" in url for url in links)
    assert 'mast_failure_mode_outcomes_total{' in exprs["Failure modes per failed run, per model"]
    assert "outcome=\"success\"" in exprs["Prevalence in failed vs successful runs"]
    assert "by (category)" in exprs["FC1 / FC2 / FC3"] and "by (severity)" in exprs["Fatal vs recoverable"]
    assert "mast_live_detections_total" in exprs["Live detections"]
    assert 'mast_guard_interventions_total{' in exprs["Failures prevented"] and 'mode="enforce"' in exprs["Failures prevented"]
    assert "mast_sessions_total{" in exprs["Sessions per minute"] and "* 60" in exprs["Sessions per minute"]
    assert re.search(r"sum by \(mode, mode_name\) \(rate\(mast_session_failure_mode_total\{[^}]*\$service[^}]*\}\[\$__rate_interval\]\)\)"
                     r" / ignoring \(mode, mode_name\) group_left sum\(rate\(mast_sessions_total\{", exprs["Sessions with a cross-turn mode"])
    assert "mast_sessions_open" in exprs["Open sessions"]
    assert "by (reason)" in exprs["Dropped turns"] and "mast_session_turns_dropped_total" in exprs["Dropped turns"]
    model_by_mode = board["panels"][[p["title"] for p in board["panels"]].index("Model x mode")]
    assert model_by_mode["transformations"][0]["id"] == "groupingToMatrix"


def web_view_paths() -> set[str]:
    """The page paths the processor's web view serves."""
    from mast_otel.processors.web.routes import build_router

    class NoStore:
        pass

    return {route.path for route in build_router(NoStore()).routes}


def test_dashboards_link_to_the_web_view_at_the_processor_url():
    served = web_view_paths()
    assert "/runs/{trace_id}" in served and "/" in served
    for name, board in dashboards().items():
        variables = {v["name"]: v for v in board["templating"]["list"]}
        assert variables["processor_url"]["type"] == "textbox", name
        urls = [link["url"] for link in board["links"] if link["type"] == "link"]
        assert "${processor_url}/" in urls, f"{name}: no link to the web view"
        assert any(link["type"] == "dashboards" and "mast-otel" in link["tags"] for link in board["links"]), name
    fatal = next(p for p in dashboards()["agent-failure-modes.json"]["panels"] if p["title"] == "Recent runs with fatal modes")
    run_links = [link["url"] for o in fatal["fieldConfig"]["overrides"] for prop in o["properties"] for link in prop["value"]
                 if link["url"].startswith("${processor_url}")]
    assert run_links and all(url.replace("${processor_url}", "").replace("${__value.raw}", "{trace_id}") in served
                             for url in run_links), run_links


def test_panels_mixing_units_put_each_on_its_own_axis():
    """A panel whose queries measure different things (traces and bytes) gives each its unit and axis."""
    mixed = 0
    for name, board in dashboards().items():
        for panel in (p for p in board["panels"] if p["type"] == "timeseries"):
            targets = panel["targets"]
            if len({frozenset(METRIC.findall(t["expr"])) for t in targets}) < 2:  # every query on the same series
                continue
            if any(re.search(r"by \(le\)", t["expr"]) for t in targets):
                continue  # quantiles of one histogram share a unit
            mixed += 1
            units = {panel["fieldConfig"]["defaults"].get("unit")}
            axes = set()
            for override in panel["fieldConfig"]["overrides"]:
                props = {p["id"]: p["value"] for p in override["properties"]}
                units.add(props.get("unit"))
                axes.add(props.get("custom.axisPlacement"))
            assert len(units - {None}) >= 2 and "right" in axes, f"{name}: {panel['title']} plots two units on one axis"
    assert mixed  # the check must have looked at something


def test_grafana_alert_rules_mirror_the_prometheus_alerts():
    provisioned = {d["uid"] for d in load_yaml(GRAFANA / "provisioning" / "datasources" / "mast-otel.yaml")["datasources"]}
    grafana = {r["title"]: r for g in load_yaml(GRAFANA / "provisioning" / "alerting" / "mast-otel-alerts.yaml")["groups"] for r in g["rules"]}
    assert set(grafana) == {r["alert"] for r in alert_rules()}
    for rule in alert_rules():
        mirror = grafana[rule["alert"]]
        assert mirror["for"] == rule["for"] and mirror["labels"] == rule["labels"]
        query = mirror["data"][0]
        assert query["datasourceUid"] in provisioned
        assert ":" not in re.sub(r"\[[^]]*\]|\{[^}]*\}|\"[^\"]*\"", "", query["model"]["expr"]), "recording rules left unexpanded"


# --- collector -------------------------------------------------------------------------

def _components(config: dict, kind: str) -> set[str]:
    return set((config.get(kind) or {}).keys())


@pytest.mark.parametrize("path", [COLLECTOR / "agent.yaml", COLLECTOR / "gateway.yaml"], ids=lambda p: p.name)
def test_collector_pipelines_use_exactly_the_defined_components(path):
    config = load_yaml(path)
    service = config["service"]
    for kind in ("receivers", "processors", "exporters"):
        used = {c for pipeline in service["pipelines"].values() for c in pipeline.get(kind, [])}
        assert used == _components(config, kind), f"{path.name} {kind}: defined {_components(config, kind)}, used {used}"
    assert set(service.get("extensions", [])) == _components(config, "extensions")
    for pipeline in service["pipelines"].values():
        assert pipeline["receivers"] and pipeline["exporters"]


def test_gateway_routes_by_trace_id_and_keeps_every_fatal_trace():
    config = load_yaml(COLLECTOR / "gateway.yaml")
    assert config["exporters"]["loadbalancing"]["routing_key"] == "traceID"
    policies = config["processors"]["tail_sampling"]["policies"]
    assert {"type": "boolean_attribute", "boolean_attribute": {"key": "mast.fatal", "value": True}}.items() <= \
        {k: v for p in policies if p["type"] == "boolean_attribute" for k, v in p.items() if k != "name"}.items()
    pipelines = config["service"]["pipelines"]
    sampled = [p for p in pipelines.values() if "tail_sampling" in p["processors"]]
    assert sampled and all("loadbalancing" not in p["exporters"] for p in sampled)


def test_kubernetes_gateway_config_is_the_collector_gateway_with_the_k8s_resolver():
    docs = load_yaml_all(DEPLOY / "kubernetes" / "gateway.yaml")
    embedded = yaml.safe_load(next(d for d in docs if d["kind"] == "ConfigMap")["data"]["config.yaml"])
    reference = load_yaml(COLLECTOR / "gateway.yaml")
    resolver = embedded["exporters"]["loadbalancing"].pop("resolver")
    reference["exporters"]["loadbalancing"].pop("resolver")
    assert embedded == reference
    headless = next(d for d in load_yaml_all(DEPLOY / "kubernetes" / "processor.yaml")
                    if d["kind"] == "Service" and d["spec"].get("clusterIP") == "None")
    assert resolver["k8s"]["service"] == f"{headless['metadata']['name']}.mast-otel"
    assert resolver["k8s"]["ports"] == [p["port"] for p in headless["spec"]["ports"]]


# --- compose ---------------------------------------------------------------------------

def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1].split("/")[0])


def test_compose_stack_wires_the_same_names_and_ports_everywhere():
    from mast_otel.processors.config import ProcessorConfig

    compose = load_yaml(DEPLOY / "compose.yaml")
    services = compose["services"]
    assert {"processor", "collector-gateway", "tempo", "prometheus", "alertmanager", "grafana"} <= services.keys()
    for name, service in services.items():
        image = service["image"]
        assert ":" in image and not image.endswith(":latest"), f"{name}: pin the image version"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name}: {source} does not exist"
        for dep in service.get("depends_on", []):
            assert dep in services

    processor = ProcessorConfig.load(DEPLOY / "mast-otel" / "config.yaml")
    gateway = load_yaml(COLLECTOR / "gateway.yaml")
    env = services["collector-gateway"]["environment"]
    # gateway -> processor replicas
    assert env["MAST_PROCESSOR_HOSTNAME"] == "processor"
    assert gateway["exporters"]["loadbalancing"]["resolver"]["dns"]["port"] == processor.receiver.grpc_port
    # processor -> gateway (enriched spans) -> tempo
    (otlp,) = processor.exporters.otlp
    enriched = urlparse(otlp.endpoint)
    assert enriched.hostname == "collector-gateway"
    assert enriched.port == _port(gateway["receivers"]["otlp/enriched"]["protocols"]["http"]["endpoint"])
    tempo = load_yaml(DEPLOY / "tempo" / "tempo.yaml")
    host, port = env["TEMPO_OTLP_ENDPOINT"].split(":")
    assert host == "tempo" and int(port) == _port(tempo["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"])
    # prometheus -> processor, alertmanager
    prometheus = load_yaml(DEPLOY / "prometheus" / "prometheus.yml")
    job = next(j for j in prometheus["scrape_configs"] if j["job_name"] == "mast-otel-processor")
    assert job["dns_sd_configs"][0]["names"] == ["processor"] and job["dns_sd_configs"][0]["port"] == processor.receiver.http_port
    assert all('job="mast-otel-processor"' in r["expr"] for r in alert_rules() if "up{" in r["expr"])
    assert prometheus["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == ["alertmanager:9093"]
    metrics_port = _port(gateway["service"]["telemetry"]["metrics"]["address"])
    assert any(t == f"collector-gateway:{metrics_port}" for j in prometheus["scrape_configs"] for s in j.get("static_configs", []) for t in s["targets"])
    # grafana -> prometheus, tempo
    datasources = {d["type"]: urlparse(d["url"]) for d in load_yaml(GRAFANA / "provisioning" / "datasources" / "mast-otel.yaml")["datasources"]}
    assert (datasources["prometheus"].hostname, datasources["prometheus"].port) == ("prometheus", 9090)
    assert (datasources["tempo"].hostname, datasources["tempo"].port) == ("tempo", tempo["server"]["http_listen_port"])
    dashboards_mount = next(v for v in services["grafana"]["volumes"] if "grafana/dashboards" in v).split(":")[1]
    provider = load_yaml(GRAFANA / "provisioning" / "dashboards" / "mast-otel.yaml")["providers"][0]
    assert provider["options"]["path"] == dashboards_mount


# --- kubernetes ------------------------------------------------------------------------

def test_kubernetes_manifests_agree_with_each_other_and_the_processor_config():
    from mast_otel.processors.config import ProcessorConfig

    kube = DEPLOY / "kubernetes"
    listed = load_yaml(kube / "kustomization.yaml")["resources"]
    docs = [d for name in listed for d in load_yaml_all(kube / name)]
    by_kind: dict[str, list[dict]] = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    assert {"Deployment", "StatefulSet", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "ConfigMap"} <= by_kind.keys()
    deployments = {d["metadata"]["name"]: d for d in by_kind["Deployment"] + by_kind["StatefulSet"]}
    for service in by_kind["Service"]:
        target = next(d for d in deployments.values() if d["spec"]["template"]["metadata"]["labels"].items() >= service["spec"]["selector"].items())
        named = {p["name"] for c in target["spec"]["template"]["spec"]["containers"] for p in c["ports"]}
        assert {p["targetPort"] for p in service["spec"]["ports"]} <= named, service["metadata"]["name"]
    for scaler in by_kind["HorizontalPodAutoscaler"]:
        assert scaler["spec"]["scaleTargetRef"]["name"] in deployments
    for budget in by_kind["PodDisruptionBudget"]:
        assert any(d["spec"]["selector"]["matchLabels"] == budget["spec"]["selector"]["matchLabels"] for d in deployments.values())
    for deployment in deployments.values():
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            assert ":" in container["image"] and not container["image"].endswith(":latest")
    processor_map = next(d for d in by_kind["ConfigMap"] if d["metadata"]["name"] == "mast-otel-processor")
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as handle:
        handle.write(processor_map["data"]["config.yaml"])
        handle.flush()
        config = ProcessorConfig.load(handle.name)
    container = deployments["mast-otel-processor"]["spec"]["template"]["spec"]["containers"][0]
    assert {p["containerPort"] for p in container["ports"]} == {config.receiver.grpc_port, config.receiver.http_port}
    gateway_service = next(s for s in by_kind["Service"] if s["metadata"]["name"] == "mast-otel-gateway")
    (otlp,) = config.exporters.otlp
    enriched = urlparse(otlp.endpoint)
    assert enriched.hostname.startswith("mast-otel-gateway.mast-otel.")
    assert enriched.port in {p["port"] for p in gateway_service["spec"]["ports"]}
