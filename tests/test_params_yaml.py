"""``params.yaml``'s comments against the code: where a comment lists a key's
choices (``a | b | c``), they are the choices its validation accepts, as the
parameters page states them (``pipeline.param_reference``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.param_reference import param_docs
from tests.helpers import ROOT

SECTION = re.compile(r"^(\w+):")
KEY_WITH_COMMENT = re.compile(r"^\s+(\w+):\s*[^#]*#\s*(.*)$")
CHOICE = re.compile(r"[\w.-]+")


def commented_choices(path: Path) -> dict[str, list[str]]:
    """``section.key`` -> the choices its comment lists: two or more,
    ``|``-separated, each the first word of its part (``a (note) | b: note``)."""
    found: dict[str, list[str]] = {}
    section = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if match := SECTION.match(line):
            section = match.group(1)
        elif (match := KEY_WITH_COMMENT.match(line)) and " | " in match.group(2):
            choices = [CHOICE.match(part.strip()) for part in match.group(2).split(" | ")]
            found[f"{section}.{match.group(1)}"] = [choice.group(0) for choice in choices if choice]
    return found


WORD_LIST = re.compile(r"[\w.-]+(?:(?:, | or )[\w.-]+)+")


def rule_choices(rule: str) -> list[str] | None:
    """The values of a ``one of ...`` or ``a, b or c`` rule, or None for
    another kind of rule (a range, a condition)."""
    if rule.startswith("one of"):
        return [value.strip(" '\"[]()") for value in rule.removeprefix("one of").split(",") if value.strip(" '\"[]()")]
    if WORD_LIST.fullmatch(rule):
        return re.split(r", | or ", rule)
    return None


CHOICES = commented_choices(ROOT / "params.yaml")
RULES = {row.key: row.rule for row in param_docs(ROOT / "params.yaml")}


def test_params_yaml_lists_choices_for_several_keys() -> None:
    assert len(CHOICES) >= 10, CHOICES


@pytest.mark.parametrize("key", sorted(CHOICES))
def test_a_commented_choice_list_is_what_the_validation_accepts(key: str) -> None:
    assert key in RULES, f"params.yaml comments on {key}, which zerochess params does not know"
    accepted = rule_choices(RULES[key])
    if accepted is None:
        pytest.skip(f"{key}: its rule is not a list of choices ({RULES[key]})")
    assert sorted(CHOICES[key]) == sorted(accepted), (
        f"params.yaml's comment on {key} lists {CHOICES[key]}; the validation accepts {accepted}"
    )


def test_a_stale_comment_is_caught(tmp_path: Path) -> None:
    stale = tmp_path / "params.yaml"
    stale.write_text("selfplay:\n  compile: auto   # auto | eager | jit\n", encoding="utf-8")
    assert commented_choices(stale) == {"selfplay.compile": ["auto", "eager", "jit"]}
    assert sorted(commented_choices(stale)["selfplay.compile"]) != sorted(rule_choices(RULES["selfplay.compile"]) or [])
