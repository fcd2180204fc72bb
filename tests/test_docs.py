"""The README and docs/ are reference pages: no project history, and one source per figure.

History does not belong in them: no issue numbers, no commit hashes, no references to design
notes kept outside the repository. A figure the README repeats must be the one its linked
page states, so the two cannot drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

ISSUE = re.compile(r"\bissues?\s+#?\d+|(?<![\w&/])#\d+\b", re.IGNORECASE)
DESIGN_NOTES = re.compile(r"DESIGN\.md|DESIGN\b")
# A hex token of 7 to 40 characters with both a digit and a letter (a, b, ... f) is a commit
# hash, except OpenTelemetry trace and span ids (32 and 16 characters) and digests written
# after a "#" (args#5f1c0a2e in the judge's prompt format).
HEX = re.compile(r"(?<![\w#-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")
OTEL_ID_LENGTHS = {16, 32}


def commit_hashes(text: str) -> list[str]:
    return [m.group(0) for m in HEX.finditer(text) if len(m.group(0)) not in OTEL_ID_LENGTHS]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_project_history_in_the_docs(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert not ISSUE.findall(text), f"{page.name}: issue references {ISSUE.findall(text)}"
    assert not DESIGN_NOTES.findall(text), f"{page.name}: mentions design notes outside the repository"
    assert not commit_hashes(text), f"{page.name}: commit hashes {commit_hashes(text)}"


def test_the_history_checks_catch_what_they_look_for() -> None:
    assert ISSUE.findall("as issue 8 found") and ISSUE.findall("fixed in #12") and ISSUE.findall("Issues 3")
    assert not ISSUE.findall("see #mastprocessordown and &#160; and FM-1.3 in docs/#4")
    assert commit_hashes("commit 0c6e21b's code") == ["0c6e21b"]
    assert commit_hashes("c578275 and e41ce60") == ["c578275", "e41ce60"]
    assert not commit_hashes("trace 4bf92f3577b34da6a3ce929d0e0e4736, 16777216 bytes, args#5f1c0a2e, FM-1.3")
    assert DESIGN_NOTES.findall("as DESIGN.md says")


NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:-\d[\d,]*(?:\.\d+)?)?")
LINK = re.compile(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)")


def readme_figures() -> list[tuple[str, str, Path]]:
    """(figure cell, number, linked page) for each row of the README's figures table."""
    rows = []
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not line.startswith("|") or cells[0] in ("what", "---"):
            continue
        link = LINK.search(cells[3])
        if link is None or not (ROOT / link.group(1)).is_file():
            continue
        for number in NUMBER.findall(cells[1]):
            rows.extend((cells[0], end.replace(",", ""), ROOT / link.group(1)) for end in number.split("-"))
    return rows


def test_readme_figures_are_the_linked_pages_figures() -> None:
    """Every number in a README figure (each end of a range) appears on the page that row links to."""
    figures = readme_figures()
    assert len({what for what, _, _ in figures}) >= 5
    missing = []
    for what, number, page in figures:
        text = (page.read_text(encoding="utf-8") if page.suffix == ".md"
                else "\n".join(p.read_text(encoding="utf-8") for p in page.glob("*.md")))
        if not re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", text.replace(",", "")):
            missing.append(f"{what}: {number} not in {page.relative_to(ROOT)}")
    assert not missing, "\n".join(missing)


def test_demo_and_readme_agree_on_how_long_run_pages_keep_their_timeline() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    demo = (ROOT / "docs" / "demo.md").read_text(encoding="utf-8")
    for text in (readme, demo):
        assert "assembly.retention_seconds" in text and "10" in text
    assert "timeline is stored with the diagnosis" in demo
    assert "keeps every run's step timeline in the store" in readme


HEADING = re.compile(r"^(#{1,6}) (.+)$", re.M)


def section_problems(text: str) -> list[str]:
    """Headings repeated on one page, and sections with nothing in them but comments."""
    outside_code = re.sub(r"^```.*?^```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.M | re.S)
    heads = [(len(m.group(1)), m.group(2).strip(), m.end()) for m in HEADING.finditer(outside_code)]
    problems = [f"repeated: {t}" for i, (level, t, _) in enumerate(heads) if (level, t) in {(l2, t2) for l2, t2, _ in heads[:i]}]
    for i, (level, title, end) in enumerate(heads):
        following = heads[i + 1] if i + 1 < len(heads) else None
        body = text[end:(following[2] - len(following[1]) - following[0] - 1) if following else len(text)]
        nested = following is not None and following[0] > level
        if not nested and not re.sub(r"<!--.*?-->", "", body, flags=re.S).strip():
            problems.append(f"empty: {title}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_repeats_a_heading_or_leaves_a_section_empty(page: Path) -> None:
    assert section_problems(page.read_text(encoding="utf-8")) == [], page.name


def test_the_section_check_finds_what_it_looks_for() -> None:
    assert section_problems("## A\ntext\n## B\n\n<!-- later -->\n") == ["empty: B"]
    assert section_problems("## A\ntext\n## A\nmore\n") == ["repeated: A"]
    assert section_problems("## A\n### B\ntext\n```\n# not a heading\n```\n") == []


JUDGE_ONLY_PAGES = ["README.md", "docs/web.md", "docs/detection.md", "docs/judge.md", "docs/demo.md"]
JUDGE_ONLY = re.compile(r"judge[ -]only|only (?:from |by )?the (?:LLM )?judge|only the (?:LLM )?judge (?:can )?(?:finds?|reads|sees)",
                        re.IGNORECASE)
MODE_ID = re.compile(r"FM-\d\.\d")


def judge_only_modes() -> set[str]:
    """The modes no registered rule detector raises, which the taxonomy also marks judge-only."""
    from mast_otel.processors import taxonomy
    from mast_otel.processors.detectors import rule_modes

    by_rules = {mode for mode in taxonomy.MODES if mode not in rule_modes()}
    by_taxonomy = {mode for mode, m in taxonomy.MODES.items() if "rules" not in m.covered_by}
    assert by_rules == by_taxonomy, (by_rules, by_taxonomy)
    return by_rules


def statements(text: str) -> list[str]:
    """A page's table rows and prose sentences (code blocks left out), each on one line."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    units: list[str] = []
    for paragraph in re.split(r"\n\s*\n", prose):
        lines = paragraph.splitlines()
        units += [line for line in lines if line.lstrip().startswith("|")]
        joined = " ".join(line.strip() for line in lines if not line.lstrip().startswith("|"))
        units += re.split(r"(?<=[.!?])\s+(?=[A-Z`(\[*-])", joined)
    return units


def judge_only_claims(text: str) -> list[set[str]]:
    """The modes each judge-only statement of a page names by id (statements naming none are left out)."""
    return [set(MODE_ID.findall(s)) for s in statements(text) if JUDGE_ONLY.search(s) and MODE_ID.search(s)]


@pytest.mark.parametrize("page", JUDGE_ONLY_PAGES)
def test_each_page_names_the_judge_only_modes_the_code_has(page: str) -> None:
    """Which modes only the judge finds is read from the detector registry, not from the docs."""
    expected = judge_only_modes()
    assert expected, "every mode has a rule detector: say so in the docs and drop this test"
    claims = judge_only_claims((ROOT / page).read_text(encoding="utf-8"))
    assert claims, f"{page} never says which modes only the judge finds ({sorted(expected)})"
    assert all(claim == expected for claim in claims), f"{page}: {claims} where the code has {sorted(expected)}"


def test_the_judge_only_check_finds_what_it_looks_for() -> None:
    assert judge_only_claims("Modes only the LLM judge can find\n(FM-2.3, FM-2.4) are hatched. FM-1.3 is not.") == \
        [{"FM-2.3", "FM-2.4"}]
    assert judge_only_claims("| FM-2.3 | judge only | derailment |\n| FM-1.3 | `repetition` | loops |") == [{"FM-2.3"}]
    assert judge_only_claims("Nothing about the modes only the judge reads. FM-1.3 is a rule.") == []


SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.M | re.S)
ASSIGNMENT = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
ACTIVATE = re.compile(r"(?:^|[\s;&])(?:source|\.)\s+\S*\.venv/bin/activate\b")


def bare_commands(text: str) -> list[str]:
    """Shell lines that run ``mast-otel`` by its bare name where no virtualenv was activated before.

    The README installs into ``.venv`` without activating it, so a bare ``mast-otel`` is not on a
    new user's PATH: a command says ``.venv/bin/mast-otel``, or the page activates ``.venv`` first."""
    bare, activated = [], False
    for block in SHELL_BLOCK.finditer(text):
        for line in block.group(1).splitlines():
            activated = activated or bool(ACTIVATE.search(line))
            for segment in re.split(r"&&|\|\||[;|]|\$\(|\bdo\b|\bthen\b", line):
                if ASSIGNMENT.sub("", segment.strip()).split(" ")[0] == "mast-otel" and not activated:
                    bare.append(line.strip())
    return bare


@pytest.mark.parametrize("page", [ROOT / "CONTRIBUTING.md", *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_commands_run_mast_otel_from_the_virtualenv_the_readme_installs(page: Path) -> None:
    assert bare_commands(page.read_text(encoding="utf-8")) == [], page.name


def test_the_bare_command_check_finds_what_it_looks_for() -> None:
    block = "```bash\n{}\n```\n"
    assert bare_commands(block.format("mast-otel demo --once")) == ["mast-otel demo --once"]
    assert bare_commands(block.format("X=1 Y=2 mast-otel serve")) == ["X=1 Y=2 mast-otel serve"]
    assert bare_commands(block.format("cd x && mast-otel tools f.json")) == ["cd x && mast-otel tools f.json"]
    assert bare_commands(block.format(".venv/bin/mast-otel demo\nkubectl -n mast-otel get pods")) == []
    assert bare_commands(block.format("source .venv/bin/activate\nmast-otel demo")) == []
    assert bare_commands("```text\nmast-otel processor ready: ...\n```\n") == []
