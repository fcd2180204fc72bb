"""The mast-otel processor: receivers -> normalizers -> trace assembly -> detectors -> outputs.

Nothing is imported here on purpose: importing a submodule pulls in only what it needs.
"""
