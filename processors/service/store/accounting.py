"""What the metrics already counted for each run: decided by the merge stage, kept by the store
beside the run's diagnosis."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from mast_otel.processors.service.store import compact_json


@dataclass
class Accounting:
    """What the metrics already counted for one run, so nothing is counted twice (the store
    persists it, so a re-diagnosis after a restart does not count again either)."""

    modes: dict[str, str] = field(default_factory=dict)  # mode -> source it was counted under
    outcome: str | None = None  # the outcome counted in mast_outcomes_total, once per run
    outcome_modes: list[str] = field(default_factory=list)  # modes counted in mast_failure_mode_outcomes_total
    interventions: list[str] = field(default_factory=list)  # guard events counted in mast_guard_interventions_total

    def copy(self) -> Accounting:
        return Accounting(dict(self.modes), self.outcome, list(self.outcome_modes), list(self.interventions))

    def to_json(self) -> str:
        return compact_json.dumps({"modes": self.modes, "outcome": self.outcome, "outcome_modes": self.outcome_modes,
                                   "interventions": self.interventions})

    @classmethod
    def from_json(cls, text: str | None) -> Accounting:
        return cls(**json.loads(text)) if text else cls()
