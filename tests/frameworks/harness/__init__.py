"""Framework-neutral parts of the corpus recorders: the stub model, the scenarios, the cluster
tools and the OTLP file writer. Standard library plus the OpenTelemetry SDK only, so every
framework's own environment can import them."""
