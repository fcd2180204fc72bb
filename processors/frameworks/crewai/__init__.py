"""CrewAI: an agent runs a task (OpenInference names its span ``<Role>.<task name>`` or after
the method, ``execute_task``, ``_execute_core``, ``kickoff``); delegation runs the worker inside
the delegation tool (``Delegate work to coworker``, ``Ask question to coworker``, with the
worker named in ``coworker``), with no agent span of its own.

Its limits: at ``max_iter`` it sends the model a prompt that forces a final answer ("you MUST
give your absolute best final answer"); a task's ``max_execution_time`` raises "execution timed
out ... Consider increasing max_execution_time"; a guardrail that rejects every retry raises
"guardrail failed validation after N retries".
"""

from __future__ import annotations

from mast_otel.processors.frameworks.table import Framework, StepBudget

# ``max_iter`` counts iterations of an agent's loop on one task: one model call each, with the tool it
# asked for; at the limit the agent is sent the prompt that forces its final answer. Default 20; no
# span states it.
STEP_BUDGET = StepBudget("max_iter", "iterations", "model_call", default=20)

FRAMEWORK = Framework(
    name="crewai",
    spellings=("CrewAI", "crew_ai", "crewAI"),
    time_limit_errors=(r"\bmax_execution_time\b",),
    # "after 0 retries" is one rejection with no second attempt (or the check itself raising):
    # no sign of an agent that kept at it
    guardrail_errors=(r"\bguardrail\b.{0,40}\bafter [1-9]\d* retr(y|ies)\b",),
    limit_answers=(r"\bMUST give your absolute best final answer\b",),
    agent_methods=("execute_task", "_execute_core", "kickoff"),
    handoff_target_keys=("coworker",),
    agent_keys=("coworker",),
    step_budgets=(STEP_BUDGET,),
)
