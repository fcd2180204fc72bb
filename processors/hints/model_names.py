"""One model, one label: provider prefixes folded, dated snapshots folded, aliases applied.

The same model is named ``openai/gpt-4o-mini`` by litellm-based frameworks and
``gpt-4o-mini`` by the OpenAI client, and ``gpt-4o-mini-2024-07-18`` where the provider's
answer names the snapshot that served it, so every per-model metric and table split in two or
three. A prefix is folded only when it names a model provider (a Hugging Face organisation
such as ``meta-llama/`` is part of the model's name and stays).

A dated snapshot folds into its family by default (``hints.fold_model_snapshots``): a name
that ends in a date written ``-YYYY-MM-DD`` (``gpt-4o-mini-2024-07-18``), ``-YYYYMMDD`` or
``@YYYYMMDD`` (``claude-3-5-sonnet-20241022``, ``claude-3-5-sonnet-v2@20241022``, with a
Bedrock-style ``-v2:0`` after it), or in ``-latest``, loses that ending. Four-digit endings
(``gpt-4-0613``, ``mistral-large-2407``) stay: four digits do not tell a date from a version.
Successive snapshots of one family are counted as one model; an alias keeps one apart.

Aliases from configuration (exact names) apply to the name before the snapshot rule, then to
the family, so an alias can single out one snapshot or rename a whole family.
"""

from __future__ import annotations

import re
from typing import Mapping

PROVIDER_PREFIXES = frozenset({
    "openai", "azure", "azure_ai", "anthropic", "bedrock", "bedrock_converse", "vertex_ai", "vertex_ai_beta",
    "gemini", "google", "groq", "mistral", "cohere", "together_ai", "togetherai", "fireworks_ai", "ollama",
    "ollama_chat", "deepseek", "xai", "perplexity", "openrouter", "huggingface", "hosted_vllm", "vllm",
    "databricks", "sagemaker", "watsonx", "cerebras", "nvidia_nim", "lm_studio", "litellm_proxy",
    "github", "cloudflare", "replicate", "anyscale", "deepinfra", "friendliai", "sambanova", "moonshot",
})  # fmt: skip

_MONTH, _DAY = r"(?:0[1-9]|1[0-2])", r"(?:0[1-9]|[12]\d|3[01])"
# a snapshot's ending: a date (dashed, or eight digits after "-" or "@", optionally a Bedrock
# version after it) or "-latest"
SNAPSHOT_ENDING = re.compile(
    rf"(?:-(?:19|20)\d\d-{_MONTH}-{_DAY}|[-@](?:19|20)\d\d{_MONTH}{_DAY}(?:-v\d+(?::\d+)?)?|-latest)$",
    re.IGNORECASE)


def family(model: str) -> str:
    """``gpt-4o-mini-2024-07-18`` -> ``gpt-4o-mini``; a name without a snapshot ending unchanged."""
    found = SNAPSHOT_ENDING.search(model)
    return model[:found.start()] if found and found.start() > 0 else model


def fold(model: str | None, aliases: Mapping[str, str] | None = None, *, snapshots: bool = False) -> str | None:
    """``openai/gpt-4o-mini`` -> ``gpt-4o-mini``; then ``aliases`` (exact names) apply, and with
    ``snapshots`` a name no alias names folds into its family (to which aliases apply again)."""
    if not model:
        return model
    head, sep, rest = model.partition("/")
    if sep and rest and head.lower() in PROVIDER_PREFIXES:
        model = rest
    if aliases and model in aliases:
        return aliases[model]
    if snapshots:
        model = family(model)
        if aliases:
            model = aliases.get(model, model)
    return model
