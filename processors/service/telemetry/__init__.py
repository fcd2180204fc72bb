"""The processor's own telemetry: every Prometheus metric it exposes on ``/metrics``, declared
once with bounded label cardinality (``metrics``). What is counted for each run is decided by
the merge stage (``pipeline/merge``) and counted by the metrics exporter (``outputs/metrics``).
"""
