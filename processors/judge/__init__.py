"""The LLM judge tier: whole-run MAST diagnosis by a language model, through litellm.

``engine.Judge`` judges one run (redact -> render -> cache -> budget -> breaker -> call);
``service.JudgeService`` runs it beside the streaming pipeline; ``offline.judge_runs`` runs
it over files for evaluation. Nothing is imported here, so litellm loads only when used.
"""
