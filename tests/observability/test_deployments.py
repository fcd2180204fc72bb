"""Several replicas as deployed: the compose stack and the Kubernetes manifests give each
processor its own write-ahead log volume, point every replica at one PostgreSQL store, scrape
them under the job name the alert rules select, take the API token from a Secret, route traces
by trace id to the replicas' headless Service, and use one image and one processor URL.

No Docker engine, Kubernetes cluster, Collector or Grafana runs here: these checks read the
files as those tools would (``kubectl kustomize`` and ``promtool`` where they are installed).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from urllib.parse import urlparse

import pytest
import yaml

from obsfiles import COLLECTOR, DEPLOY, ROOT, alert_rules, dashboards, load_yaml, load_yaml_all, rule_groups
from tests.tools import require_tool

KUBE = DEPLOY / "kubernetes"
OPERATOR = KUBE / "prometheus-operator"
COMPOSE_DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")
RULE_JOB = re.compile(r'job="([^"]+)"')
URL_FALLBACK = re.compile(r'\$externalLabels\.mast_processor_url "([^"]+)"')


def compose_value(text: str) -> str:
    """A compose string with each ``${VAR:-default}`` at its default (what a plain ``up`` uses)."""
    return COMPOSE_DEFAULT.sub(lambda m: m.group(2), text)


def compose() -> dict:
    return load_yaml(DEPLOY / "compose.yaml")["services"]


def kube_docs(*names: str) -> list[dict]:
    return [d for name in names for d in load_yaml_all(KUBE / name)]


def kube_kind(kind: str, name: str | None = None) -> list[dict]:
    listed = load_yaml(KUBE / "kustomization.yaml")["resources"]
    docs = [d for entry in listed if (KUBE / entry).is_file() for d in load_yaml_all(KUBE / entry)]
    return [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]


def processor_config(text: str):
    """A processor configuration as the container reads it."""
    from mast_otel.processors.config import ProcessorConfig

    return ProcessorConfig.model_validate(yaml.safe_load(text))


def compose_processor_config():
    return processor_config((DEPLOY / "mast-otel" / "config.yaml").read_text())


def kube_processor_config():
    (config_map,) = kube_kind("ConfigMap", "mast-otel-processor")
    return processor_config(config_map["data"]["config.yaml"])


def statefulset() -> dict:
    (workload,) = kube_kind("StatefulSet", "mast-otel-processor")
    return workload


def processor_container(workload: dict) -> dict:
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    return container


def under(path: Path, mount: str) -> bool:
    return PurePosixPath(path).is_relative_to(PurePosixPath(mount))


# --- the write-ahead log: one per replica ----------------------------------------------------

def test_compose_gives_each_processor_replica_its_own_log_volume():
    """``--scale processor=3`` must give three logs: the log's folder is on an anonymous volume
    (one per container), never a named volume or a host folder that every replica would mount."""
    processor = compose()["processor"]
    wal = compose_processor_config().wal.directory
    assert wal is not None and wal.is_absolute()
    mounts = [v.split(":") for v in processor["volumes"]]
    holding = [m for m in mounts if under(wal, m[-1] if len(m) == 1 else m[1])]
    assert len(holding) == 1 and len(holding[0]) == 1, f"{wal} must be on an anonymous volume, got {holding}"
    # nothing else that a second replica would collide on
    assert "container_name" not in processor
    # a replica stopped by `down` empties its log first: the anonymous volume is not mounted again
    assert int(processor["stop_grace_period"].rstrip("s")) >= 30
    assert not any(str(p).split(":")[-1] in ("4317", "4318") for p in processor.get("ports", [])), \
        "published processor ports stop --scale; people reach the replicas through processor-api"
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    (declared,) = re.findall(r'^VOLUME \["([^"]+)"\]', dockerfile, re.M)
    assert under(wal, declared)


def test_compose_restarts_crashes_and_a_misuse_shows_instead_of_looping_silently():
    """Crashes are restarted for the container's whole life; a misuse (exit 2, one line each try)
    never turns the replica healthy, so ``up --wait`` (the documented command) fails on it."""
    processor = compose()["processor"]
    assert processor["restart"] == "unless-stopped"
    probe = processor["healthcheck"]["test"]
    port = compose_processor_config().receiver.http_port
    assert f"http://127.0.0.1:{port}/readyz" in probe[-1] and probe[0] == "CMD"
    page = (ROOT / "docs" / "deployment.md").read_text()
    assert "--scale processor=3 --wait" in page and "Restarting (2)" in page


def test_kubernetes_runs_the_processor_as_a_statefulset_with_a_claim_per_pod():
    workload = statefulset()
    assert not kube_kind("Deployment", "mast-otel-processor")
    wal = kube_processor_config().wal.directory
    claims = {c["metadata"]["name"] for c in workload["spec"]["volumeClaimTemplates"]}
    mounts = processor_container(workload)["volumeMounts"]
    (holding,) = [m for m in mounts if under(wal, m["mountPath"])]
    assert holding["name"] in claims, f"{wal} is not on a volume claim template"
    pod_volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
    assert holding["name"] not in pod_volumes and not any("emptyDir" in v for v in pod_volumes.values())
    (headless,) = [s for s in kube_kind("Service") if s["spec"].get("clusterIP") == "None"]
    assert workload["spec"]["serviceName"] == headless["metadata"]["name"]
    (scaler,) = kube_kind("HorizontalPodAutoscaler")
    assert scaler["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "mast-otel-processor"}
    assert workload["spec"]["template"]["spec"]["securityContext"]["fsGroup"] == 10001  # the image's user can write the claim


# --- one PostgreSQL store, one token Secret --------------------------------------------------

def test_compose_points_every_replica_at_the_postgres_service():
    services = compose()
    url = urlparse(compose_value(services["processor"]["environment"]["MAST_OTEL_STORE__URL"]))
    postgres = {k: compose_value(v) for k, v in services["postgres"]["environment"].items()}
    assert url.scheme == "postgresql" and (url.hostname, url.port) == ("postgres", 5432)
    assert (url.username, url.password, url.path.lstrip("/")) == \
        (postgres["POSTGRES_USER"], postgres["POSTGRES_PASSWORD"], postgres["POSTGRES_DB"])
    assert services["processor"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert any(v.startswith("postgres-data:") for v in services["postgres"]["volumes"])


def test_kubernetes_takes_the_store_url_and_the_api_token_from_the_secret(monkeypatch):
    from mast_otel.processors.config import ProcessorConfig, StoreConfig

    env = {e["name"]: e for e in processor_container(statefulset())["env"]}
    kustomization = load_yaml(KUBE / "kustomization.yaml")
    (secret,) = kustomization["secretGenerator"]
    example = dict(line.split("=", 1) for line in (KUBE / "processor.env.example").read_text().split("\n") if line)
    assert secret["envs"] == ["processor.env"] and "/deploy/kubernetes/processor.env" in (ROOT / ".gitignore").read_text()
    for variable, key in (("MAST_OTEL_STORE__URL", "store-url"), ("MAST_OTEL_RECEIVER__API_TOKEN", "api-token")):
        ref = env[variable]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": secret["name"], "key": key} and key in example, variable
    assert urlparse(example["store-url"]).scheme == "postgresql"
    assert "MAST_OTEL_STORE__URL" in compose()["processor"]["environment"]  # the same variable in both
    # the variables name configuration fields, as pydantic-settings reads them in the container
    # (store.url once the store has that field)
    monkeypatch.setenv("MAST_OTEL_RECEIVER__API_TOKEN", example["api-token"])
    if "url" in StoreConfig.model_fields:
        monkeypatch.setenv("MAST_OTEL_STORE__URL", example["store-url"])
    config = ProcessorConfig()
    assert config.receiver.api_token is not None and config.receiver.api_token.get_secret_value() == example["api-token"]
    if "url" in StoreConfig.model_fields:
        url = config.store.url
        assert (url.get_secret_value() if hasattr(url, "get_secret_value") else str(url)) == example["store-url"]


# --- Prometheus: the job name the rules select -----------------------------------------------

def rule_jobs() -> set[str]:
    return {job for g in rule_groups() for r in g["rules"] for job in RULE_JOB.findall(r["expr"])}


def test_every_scrape_configuration_yields_the_job_the_rules_select():
    (job,) = rule_jobs()
    compose_jobs = {j["job_name"] for j in load_yaml(DEPLOY / "prometheus" / "prometheus.yml")["scrape_configs"]}
    kube_scrape = load_yaml(KUBE / "prometheus" / "scrape-config.yaml")
    (kube_job,) = kube_scrape["scrape_configs"]
    assert job in compose_jobs and kube_job["job_name"] == job
    keep = next(r for r in kube_job["relabel_configs"] if r["action"] == "keep")
    service = kube_kind("Service", "mast-otel-processor")[0]
    assert keep["regex"] == f"{service['metadata']['name']};{service['spec']['ports'][0]['name']}"
    assert kube_job["kubernetes_sd_configs"][0]["namespaces"]["names"] == [load_yaml(KUBE / "kustomization.yaml")["namespace"]]


BY_HAND_LOOP = re.compile(r"for i in ([\d ]+); do.*?--http-port (\d*)\$i\b", re.S)


def by_hand_replica_ports() -> list[int]:
    """The HTTP ports of the replicas docs/deployment.md starts by hand, read from its loop."""
    numbers, prefix = BY_HAND_LOOP.search((ROOT / "docs" / "deployment.md").read_text()).groups()
    return [int(f"{prefix}{i}") for i in numbers.split()]


@pytest.mark.parametrize("name", ["serve.yml", "replicas.yml"])
def test_promtool_accepts_the_static_scrape_configurations(name):
    """The configurations for processors started by hand, checked whole (rule files included)."""
    promtool = require_tool("promtool")
    check = subprocess.run([promtool, "check", "config", str(DEPLOY / "prometheus" / name)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "rule files found" in check.stdout and "SUCCESS: 0 rule files" not in check.stdout, check.stdout


def test_the_static_scrape_configurations_scrape_what_the_docs_start():
    """A plain ``serve`` on its default port, and each replica of the by-hand loop, under the rules' job."""
    from mast_otel.processors.config import ProcessorConfig

    (job,) = rule_jobs()
    expected = {"serve.yml": [ProcessorConfig().receiver.http_port], "replicas.yml": by_hand_replica_ports()}
    assert len(expected["replicas.yml"]) >= 2
    docs = (ROOT / "docs" / "deployment.md").read_text()
    for name, ports in expected.items():
        config = load_yaml(DEPLOY / "prometheus" / name)
        (scrape,) = config["scrape_configs"]
        assert scrape["job_name"] == job, name
        targets = [t for group in scrape["static_configs"] for t in group["targets"]]
        assert targets == [f"127.0.0.1:{port}" for port in ports], (name, targets)
        assert config["global"]["external_labels"]["mast_processor_url"] == f"http://localhost:{ports[0]}", name
        assert f"deploy/prometheus/{name}" in docs, f"docs/deployment.md does not name deploy/prometheus/{name}"


def test_the_service_monitor_yields_the_job_the_rules_select_and_scrapes_each_replica_once():
    (job,) = rule_jobs()
    (monitor,) = load_yaml_all(OPERATOR / "servicemonitor.yaml")
    selector = monitor["spec"]["selector"]["matchLabels"]
    selected = [s for s in kube_kind("Service") if s["metadata"]["labels"].items() >= selector.items()]
    assert len(selected) == 1, "two Services would scrape every replica twice and double every count"
    (service,) = selected
    # the Prometheus Operator names the job after the Service's jobLabel label (else the Service's name)
    assert service["metadata"]["labels"][monitor["spec"]["jobLabel"]] == job == service["metadata"]["name"]
    ports = {p["name"] for p in service["spec"]["ports"]}
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["http"] and "http" in ports
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    # no annotation-based discovery: a generic "kubernetes-pods" job would scrape the replicas again, under another job
    assert not any(k.startswith("prometheus.io/") for k in statefulset()["spec"]["template"]["metadata"].get("annotations", {}))


def test_the_operator_rules_are_the_promtool_tested_files():
    (rule,) = load_yaml_all(OPERATOR / "prometheusrule.yaml")
    assert rule["kind"] == "PrometheusRule" and rule["spec"]["groups"] == rule_groups()
    assert set(load_yaml(OPERATOR / "kustomization.yaml")["resources"]) == {"servicemonitor.yaml", "prometheusrule.yaml"}


def test_promtool_accepts_the_kubernetes_scrape_configuration(tmp_path):
    """Debian's Prometheus is built without Kubernetes discovery, so the discovery block is
    swapped for a static target; everything else (job, relabelling, labels) is checked as is."""
    promtool = require_tool("promtool")
    config = load_yaml(KUBE / "prometheus" / "scrape-config.yaml")
    for job in config["scrape_configs"]:
        assert job.pop("kubernetes_sd_configs")
        job["static_configs"] = [{"targets": ["mast-otel-processor.mast-otel:4318"]}]
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    check = subprocess.run([promtool, "check", "config", "--syntax-only", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


# --- the gateway routes by trace id to the replicas ------------------------------------------

def test_the_gateways_route_by_trace_id_to_every_replica():
    workload = statefulset()
    namespace = load_yaml(KUBE / "kustomization.yaml")["namespace"]
    (gateway_map,) = kube_kind("ConfigMap", "mast-otel-gateway")
    kube_gateway = yaml.safe_load(gateway_map["data"]["config.yaml"])
    balancer = kube_gateway["exporters"]["loadbalancing"]
    assert balancer["routing_key"] == "traceID" and "loadbalancing" in kube_gateway["service"]["pipelines"]["traces/to-processors"]["exporters"]
    assert balancer["resolver"]["k8s"]["service"] == f"{workload['spec']['serviceName']}.{namespace}"
    assert balancer["resolver"]["k8s"]["ports"] == [kube_processor_config().receiver.grpc_port]
    compose_gateway = load_yaml(COLLECTOR / "gateway.yaml")["exporters"]["loadbalancing"]
    assert compose_gateway["routing_key"] == "traceID"
    for gateway in (kube_gateway, load_yaml(COLLECTOR / "gateway.yaml")):  # GenAI log records follow their spans
        assert gateway["service"]["pipelines"]["logs/to-processors"]["exporters"] == ["loadbalancing"]
    assert load_yaml(COLLECTOR / "agent.yaml")["service"]["pipelines"]["logs"]["exporters"] == ["otlp/gateway"]
    assert compose()["collector-gateway"]["environment"]["MAST_PROCESSOR_HOSTNAME"] == "processor"
    assert compose_gateway["resolver"]["dns"]["port"] == compose_processor_config().receiver.grpc_port


def test_the_tempo_endpoint_is_a_value_to_set():
    (gateway,) = kube_kind("Deployment", "mast-otel-gateway")
    env = {e["name"]: e for e in gateway["spec"]["template"]["spec"]["containers"][0]["env"]}
    ref = env["TEMPO_OTLP_ENDPOINT"]["valueFrom"]["configMapKeyRef"]
    generated = {g["name"]: dict(kv.split("=", 1) for kv in g["literals"]) for g in load_yaml(KUBE / "kustomization.yaml")["configMapGenerator"]}
    host, port = generated[ref["name"]][ref["key"]].rsplit(":", 1)
    assert host and port.isdigit()


# --- one image, one processor URL ------------------------------------------------------------

def test_one_image_name_everywhere():
    from mast_otel import __version__

    image = f"mast-otel:{__version__}"
    assert compose_value(compose()["processor"]["image"]) == image
    assert processor_container(statefulset())["image"] == image
    (override,) = load_yaml(KUBE / "kustomization.yaml")["images"]
    assert f"{override['name']}:{override['newTag']}" == image
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"docker build -f deploy/Dockerfile -t \S+/mast-otel:" + re.escape(__version__) + r" \.", dockerfile)
    assert "docker push" in dockerfile
    page = (ROOT / "docs" / "deployment.md").read_text()
    assert "docker build -f deploy/Dockerfile" in page and "docker push" in page


def test_one_processor_url_for_dashboards_alerts_and_prometheus():
    services = compose()
    (published,) = services["processor-api"]["ports"]
    host, host_port, container_port = published.split(":")
    url = f"http://localhost:{host_port}"
    for name, board in dashboards().items():
        variable = next(v for v in board["templating"]["list"] if v["name"] == "processor_url")
        assert variable["query"] == url, name
    fallbacks = {m for r in alert_rules() for text in r["annotations"].values() for m in URL_FALLBACK.findall(text)}
    assert fallbacks == {url}
    assert load_yaml(DEPLOY / "prometheus" / "prometheus.yml")["global"]["external_labels"]["mast_processor_url"] == url
    assert load_yaml(KUBE / "prometheus" / "scrape-config.yaml")["global"]["external_labels"]["mast_processor_url"] == url
    nginx = (DEPLOY / "processor-api" / "nginx.conf").read_text()
    assert re.search(rf"listen {container_port};", nginx)
    assert re.search(rf"set \$processor processor:{compose_processor_config().receiver.http_port};", nginx)
    assert "resolver 127.0.0.11" in nginx  # re-resolved, so every replica of a --scale is used
    (service,) = kube_kind("Service", "mast-otel-processor")
    forward = f"port-forward svc/{service['metadata']['name']} {host_port}:{service['spec']['ports'][0]['port']}"
    assert forward in (ROOT / "docs" / "deployment.md").read_text()


# --- kustomize, where kubectl is installed ---------------------------------------------------

def test_kustomize_builds_the_values_into_the_manifests(tmp_path):
    """``kubectl kustomize`` (no cluster needed) with processor.env made from its example: the
    generated Secret and ConfigMap names reach every reference, the storage and image values apply,
    and without processor.env the build stops and names the file."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (no Debian package); the other checks read the files directly")
    folder = tmp_path / "kubernetes"
    shutil.copytree(KUBE, folder, ignore=shutil.ignore_patterns("processor.env"))
    missing = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True)
    assert missing.returncode != 0 and "processor.env" in missing.stderr
    shutil.copy(folder / "processor.env.example", folder / "processor.env")
    kustomization = load_yaml(folder / "kustomization.yaml")
    kustomization["resources"].append("prometheus-operator")
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    built = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    docs = [d for d in yaml.safe_load_all(built.stdout) if d]
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    assert all(d["metadata"].get("namespace") == "mast-otel" for d in docs if d["kind"] != "Namespace")
    (secret,) = [d for d in docs if d["kind"] == "Secret"]
    (values,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("mast-otel-values")]
    workload = by[("StatefulSet", "mast-otel-processor")]
    refs = {e["valueFrom"]["secretKeyRef"]["name"] for e in processor_container(workload)["env"]}
    assert refs == {secret["metadata"]["name"]} and secret["metadata"]["name"] != "mast-otel-processor"
    gateway_env = by[("Deployment", "mast-otel-gateway")]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert gateway_env[0]["valueFrom"]["configMapKeyRef"]["name"] == values["metadata"]["name"]
    patched = kustomization["patches"][0]["patch"]
    storage = yaml.safe_load(patched)[0]["value"]
    assert workload["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == storage
    assert ("ServiceMonitor", "mast-otel-processor") in by and ("PrometheusRule", "mast-otel") in by
