"""The judge's instructions speak MAST: the taxonomy's meanings, the 3.2/3.3 split, examples."""

from __future__ import annotations

import pytest

from mast_otel.processors import taxonomy
from mast_otel.processors.judge.definitions import JUDGE_DEFINITIONS, to_our_split
from mast_otel.processors.judge.prompt import system_prompt, version


def test_every_mode_is_defined_by_its_mast_meaning_not_the_rules_one_liner():
    text = system_prompt(False)
    assert set(JUDGE_DEFINITIONS) == set(taxonomy.MODE_IDS)
    for mode in taxonomy.MODES.values():
        assert f"- {mode.id} {mode.name} " in text and JUDGE_DEFINITIONS[mode.id] in text
    # the meanings the rules narrowed are the taxonomy's again
    assert "stated plan or conclusion says one thing" in JUDGE_DEFINITIONS["FM-2.6"]
    assert "keeps going after the task is complete" in JUDGE_DEFINITIONS["FM-1.5"]


def test_the_verification_split_is_stated_and_examples_are_given():
    text = system_prompt(False)
    assert "a check that is missing, or that leaves out whether the result is right, is FM-3.2" in text
    assert "a check that was made and reached the wrong verdict is FM-3.3" in text
    assert text.count("->") >= 6 and "Worked examples" in text
    assert version() == "prompt-3.schema-1"


def test_labels_with_the_other_split_are_mapped_onto_ours():
    theirs = {"FM-3.2": True, "FM-3.3": False, "FM-1.3": True}
    assert to_our_split(theirs, "swapped") == {"FM-3.3": True, "FM-3.2": False, "FM-1.3": True}
    assert to_our_split(theirs, "ours") == theirs
    with pytest.raises(ValueError, match="unknown label split"):
        to_our_split(theirs, "other")
