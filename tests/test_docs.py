"""The docs cannot rot silently: generated pages match the code, every documented
command line parses, and the site builds with ``mkdocs build --strict``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.config import Config, flatten, preset_names
from pipeline.param_reference import param_docs, parameters_page
from zerochess.cli_reference import CommandLineError, cli_page, parse_command_line

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
_FENCE = re.compile(r"^\s*```(\w*)")
_SHELL = {"sh", "bash", "shell", "console"}
_INLINE = re.compile(r"`((?:\.venv/bin/)?zerochess [^`]+)`")
_COMMAND = re.compile(r"(^|[\s;&|(])(\.venv/bin/|[^\s=]*/)?zerochess\s")


def documented_command_lines(path: Path) -> list[tuple[int, str, bool]]:
    """``(line number, command, partial)`` of each ``zerochess ...`` command in
    ``path``: whole lines of fenced shell blocks (sh, bash, shell, console; ``\\`` continuations joined;
    the part after ``&&``, ``|``, ``;`` or a redirection dropped), and inline
    code spans, mentions in prose (``partial``: only their names are checked)."""
    found, inside, shell, pending, start = [], False, False, "", 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = _FENCE.match(line)
        if fence:
            inside, shell = not inside, fence.group(1) in _SHELL
            continue
        if not inside:
            found += [(number, span, True) for span in _INLINE.findall(line) if _mention(span)]
            continue
        if not shell:  # output, help texts, YAML: not command lines
            continue
        if not pending:
            start = number
        pending += line.rstrip("\\").strip() + " "
        if line.rstrip().endswith("\\"):
            continue
        for part in re.split(r"&&|\|\||[|;]", pending):
            if _COMMAND.search(part):
                found.append((start, re.split(r"\s[12]?>", part)[0].strip(), False))
        pending = ""
    return found


def _mention(span: str) -> bool:
    """An inline ``zerochess WORD ...`` that names a command (not ``zerochess COMMAND``, not an error message)."""
    word = span.split()[1]
    return not word.isupper() and not word.endswith(":")


def test_the_parameters_page_is_generated_from_the_code() -> None:
    page = ROOT / "docs" / "reference" / "parameters.md"
    assert page.read_text(encoding="utf-8") == parameters_page(ROOT / "params.yaml"), (
        "docs/reference/parameters.md is stale: run make docs")


def test_the_parameters_page_lists_every_key_zerochess_params_prints() -> None:
    keys = [row.key for row in param_docs(ROOT / "params.yaml")]
    assert keys == list(flatten(Config())), "the page and zerochess params disagree on the keys"
    assert all(row.text for row in param_docs(ROOT / "params.yaml")), "a key without a description"


def test_the_cli_page_is_generated_from_the_parsers() -> None:
    page = ROOT / "docs" / "reference" / "cli.md"
    assert page.read_text(encoding="utf-8") == cli_page(), "docs/reference/cli.md is stale: run make docs"


def test_every_documented_command_line_parses() -> None:
    keys, presets = set(flatten(Config())), set(preset_names())
    lines = [(path, number, line, partial) for path in DOC_FILES
             for number, line, partial in documented_command_lines(path)]  # fmt: skip
    assert len(lines) >= 20, "the extractor found almost no command line"
    failures = []
    for path, number, line, partial in lines:
        try:
            parse_command_line(line, keys, presets, partial=partial)
        except CommandLineError as error:
            failures.append(f"{path.relative_to(ROOT)}:{number}: {error}")
    assert failures == [], "\n".join(failures)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("zerochess runn --preset cpu", "invalid choice"),
        ("zerochess run --hourz 4", "unrecognized arguments"),
        ("zerochess run --set train.nope=1", "no such parameter"),
        ("zerochess run --preset nosuch", "no such preset"),
    ],
)
def test_a_wrong_command_line_is_caught(line: str, reason: str) -> None:
    keys, presets = set(flatten(Config())), set(preset_names())
    with pytest.raises(CommandLineError) as error:
        parse_command_line(line, keys, presets)
    assert reason in str(error.value)


def test_the_extractor_reads_fenced_blocks_continuations_and_inline_spans(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Run `zerochess run --preset cpu --hours 4` or `zerochess COMMAND --help`.\n\n```sh\n"
                    ".venv/bin/zerochess rate runs/x/best.pt \\\n    --simulations 32,800  # rate it\n"
                    "make test && zerochess params --preset tiny | head\n```\n", encoding="utf-8")  # fmt: skip
    assert documented_command_lines(page) == [
        (1, "zerochess run --preset cpu --hours 4", True),
        (4, ".venv/bin/zerochess rate runs/x/best.pt --simulations 32,800  # rate it", False),
        (6, "zerochess params --preset tiny", False),
    ]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None, reason="mkdocs missing")
def test_the_site_builds_strictly_offline(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "WARNING" not in result.stderr, result.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()


def test_the_readme_is_a_short_front_door_with_two_set_up_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    set_up = text.split("## Set up and run", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in set_up.strip().splitlines()] == ["make demo", "make test"]
