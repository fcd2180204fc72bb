"""Where a run is assembled and diagnosed. The ingest stage (``ingest_stage``) admits decoded
spans, has the write-ahead log keep them and buffers them in the ``assembler`` until each trace's
run is complete; its sweeper runs the rule detectors and hands the runs to the merge stage
(``merge``), which merges rule, live and judge findings and outcomes into one diagnosis per run,
decides once what the metrics count, and feeds the exporters (``outputs``). ``partial_success``
is the OTLP answer telling a sender which of its spans were not kept, and why.
"""
