"""One model, one label: provider prefixes folded, aliases applied.

The same model is named ``openai/gpt-4o-mini`` by litellm-based frameworks and
``gpt-4o-mini`` by the OpenAI client, so every per-model metric split in two. A prefix is
folded only when it names a model provider (a Hugging Face organisation such as
``meta-llama/`` is part of the model's name and stays). Aliases from configuration map any
remaining spellings (dated snapshots, deployment names) onto the name users chart.
"""

from __future__ import annotations

from typing import Mapping

PROVIDER_PREFIXES = frozenset({
    "openai", "azure", "azure_ai", "anthropic", "bedrock", "bedrock_converse", "vertex_ai", "vertex_ai_beta",
    "gemini", "google", "groq", "mistral", "cohere", "together_ai", "togetherai", "fireworks_ai", "ollama",
    "ollama_chat", "deepseek", "xai", "perplexity", "openrouter", "huggingface", "hosted_vllm", "vllm",
    "databricks", "sagemaker", "watsonx", "cerebras", "nvidia_nim", "lm_studio", "litellm_proxy",
    "github", "cloudflare", "replicate", "anyscale", "deepinfra", "friendliai", "sambanova", "moonshot",
})  # fmt: skip


def fold(model: str | None, aliases: Mapping[str, str] | None = None) -> str | None:
    """``openai/gpt-4o-mini`` -> ``gpt-4o-mini``; then ``aliases`` (exact names) apply."""
    if not model:
        return model
    head, sep, rest = model.partition("/")
    if sep and rest and head.lower() in PROVIDER_PREFIXES:
        model = rest
    if aliases:
        model = aliases.get(model, model)
    return model
