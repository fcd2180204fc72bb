"""Guards at frameworks' own hook points: the OpenAI Agents SDK and Pydantic AI.

Each adapter imports its framework only when used; mast-otel never depends on either.
"""
