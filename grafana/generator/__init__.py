"""Generates the bundled Grafana dashboards and Grafana-managed alert rules.

Run ``python grafana/generate.py`` after editing; ``--check`` fails when the committed files
differ from what the code produces (the test suite runs the same check).
"""
