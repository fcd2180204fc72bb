"""What session detection reads off each turn is kept with the turn's run (``Run.memo``), since a
session is diagnosed again over all its turns each time one arrives. Kept or read afresh, the
findings must be the same, at every turn of every recorded session."""

from __future__ import annotations

import pytest

from mast_otel.processors.conversations.diagnose import diagnose_session
from mast_otel.processors.conversations.model import Turn
from tests.sessions.corpus_files import recordings, turn_runs

RECORDINGS = recordings()


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.id)
def test_a_session_diagnosed_as_each_turn_arrives_matches_the_plain_reading(recording):
    kept = turn_runs(recording)  # the same runs at every diagnosis, as the sessions worker holds them
    assert len(kept) >= 2
    for count in range(1, len(kept) + 1):
        plain = turn_runs(recording)[:count]
        for run in plain:
            run.shortcuts = False  # nothing kept between asks: every reading made afresh
        expected = diagnose_session([Turn("s", run) for run in plain])
        assert diagnose_session([Turn("s", run) for run in kept[:count]]) == expected, count
    memo = kept[0]._views.memo if kept[0]._views is not None else None
    assert memo and "session_turn_view" in memo, "the first turn's reading was not kept"


def test_the_recorded_sessions_give_findings_to_compare():
    """Most comparisons above compare findings, not two empty lists."""
    with_findings = sum(bool(diagnose_session([Turn("s", run) for run in turn_runs(r)])) for r in RECORDINGS)
    assert with_findings >= len(RECORDINGS) // 3, (with_findings, len(RECORDINGS))
