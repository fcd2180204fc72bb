"""Where diagnoses are served. ``app`` builds the FastAPI app: ``/v1/diagnoses``,
``/v1/outcomes``, ``/v1/severity``, health and ``/metrics``, and the OTLP/HTTP route that shares
its port; ``conversations`` adds the sessions API (``/v1/sessions``). ``schemas`` and
``conversation_schemas`` are the typed shapes of the answers, ``params`` bounds query parameters
and ``unknown_params`` refuses the ones an endpoint does not take, and ``docs_page`` serves the
Swagger page offline.
"""
