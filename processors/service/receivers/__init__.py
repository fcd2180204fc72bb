"""Where spans (and GenAI log records) enter. ``grpc_server`` is the OTLP/gRPC receiver
(``TraceService/Export`` and ``LogsService/Export``), served
by a thread pool fair across client addresses (``grpc_pool``) with connections capped per address
(``grpc_connections``); ``http_limits`` bounds what a slow or oversized HTTP client may cost and
``drain`` keeps the HTTP port answering 503 through a shutdown; ``components`` runs both receivers
as components of the host. OTLP/HTTP shares its port with the API, so its routes are built with
the app in ``api/app.py`` (``POST /v1/traces``) and ``otlp_logs`` (``POST /v1/logs``), reading
bodies with ``otlp_http``. Receivers hand what they read to
the ingest stage (``pipeline``) and check tokens with ``auth``.
"""
