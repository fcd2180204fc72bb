"""The uids of the data sources grafana/provisioning/datasources provisions: the dashboards'
defaults and the alert rules' query source. Plain constants, so the alert rules are generated
without Grafana's SDK."""

PROMETHEUS_UID = "mast-prometheus"
TEMPO_UID = "mast-tempo"
