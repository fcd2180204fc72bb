"""``mast-otel demo --guards``: slips planted in a simulated model's temperament, run the same way without and with
guards, are prevented (the runs' spans and diagnoses say so), and the command prints the comparison."""

from __future__ import annotations


def _scenario(**kwargs):
    from mast_otel.demo.agent import Scenario
    from mast_otel.demo.environment import INCIDENT_KINDS

    return Scenario(kind=INCIDENT_KINDS[0], **kwargs)


def test_acting_on_an_ambiguous_alert_without_asking_is_refused_until_the_model_asks(planted_run):
    plain = planted_run({"skip_clarify": True}, _scenario(ambiguous=True), guarded=False)
    guarded = planted_run({"skip_clarify": True}, _scenario(ambiguous=True), guarded=True)
    plain_names = [name for name, _ in plain.tools]
    assert "ask_user" not in plain_names and "FM-2.2" in plain.modes and plain.modes["FM-2.2"] is None
    refused = next(i for i, (_, action) in enumerate(guarded.tools) if action == "blocked")
    assert "ask_user" in [name for name, _ in guarded.tools[refused:]]  # the model asked once refused
    assert guarded.modes.get("FM-2.2") == "clarify_or_read_only"
    assert guarded.result.outcome == "success"


def test_a_success_claim_without_a_check_is_refused_and_the_model_checks(planted_run):
    plain = planted_run({"skip_verify": True}, _scenario(), guarded=False)
    guarded = planted_run({"skip_verify": True}, _scenario(), guarded=True)
    assert "FM-3.2" in plain.modes and "check_health" not in [name for name, _ in plain.tools]
    assert "FM-3.2" not in guarded.modes
    assert guarded.tools[-1][0] == "check_health" and guarded.result.claimed_success
    assert ("verification", "refused_finish") in guarded.result.interventions


def test_working_on_after_a_passing_check_ends_the_run_as_resolved(planted_run):
    plain = planted_run({"overrun": True}, _scenario(max_steps=14), guarded=False)
    guarded = planted_run({"overrun": True}, _scenario(max_steps=14), guarded=True)
    assert len(plain.tools) > len(guarded.tools)
    assert ("budget", "stopped") in guarded.result.interventions
    assert guarded.termination == "final_answer" and guarded.result.claimed_success
    assert guarded.result.outcome == plain.result.outcome == "success"  # the guard ends it sooner, same result


def test_re_reading_the_same_logs_is_cut_short(planted_run):
    plain = planted_run({"loop": True}, _scenario(), guarded=False)
    guarded = planted_run({"loop": True}, _scenario(), guarded=True)
    assert "FM-1.3" in plain.modes and plain.modes["FM-1.3"] is None
    assert ("get_logs", "blocked") in guarded.tools
    assert guarded.modes.get("FM-1.3") == "loop"
    assert guarded.result.outcome == "success"


def test_a_careful_run_is_not_touched(planted_run):
    careful = planted_run({}, _scenario(), guarded=True)
    assert careful.result.interventions == [] and careful.result.outcome == "success"


def test_demo_guards_prints_both_ways_side_by_side(tmp_path, capsys):
    import argparse
    import io

    from mast_otel.demo.command import _demo, add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--once", "--guards", "--runs", "3", "--http-port", "0", "--grpc-port", "0"])
    out, err = io.StringIO(), io.StringIO()
    assert _demo(args, tmp_path, out, err) == 0
    text = out.getvalue()
    assert "success w/o" in text and "success with" in text and "false interventions" in text
    assert "Runs whose outcome changed with guards:" in text
    for model in ("sim-frontier", "sim-flash", "sim-open"):
        assert model in text
    assert "18 of 18 runs diagnosed" in err.getvalue()  # 3 incidents x 3 models, both ways
    assert "] 18/18\n" in err.getvalue()  # the progress bar counts the runs made, both ways
