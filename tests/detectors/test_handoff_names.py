"""FM-2.1 across a handoff reads agent names the way the team model does: a transfer to
``billing_desk`` reaches the agent that calls itself ``Billing Desk``."""

from __future__ import annotations

import pytest

from mast_otel.processors.detectors import diagnose
from mast_otel.processors.team import team_of


@pytest.mark.parametrize("receiver", ["billing_desk", "Billing Desk", "billing-desk", "BILLING_DESK"])
def test_a_receiver_spelled_differently_from_the_handoff_still_has_its_reset_found(rb, receiver) -> None:
    triage = rb.agent("triage")
    before = [rb.llm(triage, input_message_count=n) for n in (2, 5, 8)]
    rb.tool(triage, "transfer_to_billing_desk", {}, "ok", kind="handoff")
    desk = rb.agent(receiver)
    after = rb.llm(desk, input_message_count=1)  # the receiver starts with none of the conversation
    rb.llm(desk, input_message_count=3)
    run = rb.run()
    assert [h.target for h in team_of(run).handoffs] == ["billing_desk"]
    resets = [f for f in diagnose(run) if f.mode == "FM-2.1"]
    assert len(resets) == 1 and set(resets[0].evidence_span_ids) >= {before[-1].span_id, after.span_id}
