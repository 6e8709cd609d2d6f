"""The parameters page (``docs/reference/parameters.md``), generated from the config dataclasses.

Every key of :class:`pipeline.config.Config` (what ``zerochess params``
prints), with its type, its embedded default, its value in ``params.yaml``, the
rule its validation enforces and the description its dataclass documents.
The rule is read from the validation itself: the key is set to a value out of
any range (a nonsense word, a huge negative or positive number) and the error
message's condition is quoted, so the page cannot promise a range the code does
not check.  ``make docs`` writes the page; ``tests/test_docs.py`` fails when the
committed page and the code disagree.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
import typing
from dataclasses import MISSING, Field
from pathlib import Path
from typing import Any

from pipeline.config import Config, flatten, load_config

__all__ = ["ParamDoc", "field_docs", "param_docs", "parameters_page"]

_ROLE = re.compile(r":(?:mod|func|class|data|meth|attr):(?=`)")
"""A Sphinx role before a code span (``:mod:`x` ``): Markdown shows the span alone."""
_PROBES: dict[type, tuple[Any, ...]] = {
    str: ("\u00bfnot-a-value?",),
    int: (-(10**12), 10**12),
    float: (-1e12, 1e12, float("nan")),
}


@dataclasses.dataclass(frozen=True)
class ParamDoc:
    """One key of the parameters page.

    Attributes:
        key: the dotted key (``train.batch_size``).
        kind: its type as written in the dataclass.
        default: the embedded default (``--params none``).
        value: its value in ``params.yaml``.
        rule: the condition its validation states, or empty.
        text: the description: the docstring under the field.
    """

    key: str
    kind: str
    default: Any
    value: Any
    rule: str
    text: str


def field_docs(cls: type) -> dict[str, str]:
    """``{field: description}``: the docstring under each field of ``cls`` and
    its dataclass bases (an attribute docstring, as Sphinx and mkdocstrings read it)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            docs.update(_attribute_docstrings(klass))
    return docs


def _attribute_docstrings(klass: type) -> dict[str, str]:
    try:
        source = textwrap.dedent(inspect.getsource(klass))
    except (OSError, TypeError):  # no source (a built-in, an interactive class)
        return {}
    body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
    docs = {}
    for field, after in zip(body, body[1:]):
        if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):  # fmt: skip
            lines = inspect.cleandoc(after.value.value).splitlines()
            docs[field.target.id] = " ".join(line.strip() for line in lines if line.strip())
    return docs


def _kind(field: Field[Any], hints: dict[str, Any]) -> str:
    hint = hints.get(field.name, field.type)
    text = hint if isinstance(hint, str) else getattr(hint, "__name__", None) or str(hint)
    return str(text).replace("typing.", "")


def _default(field: Field[Any]) -> Any:
    if field.default is not MISSING:
        return field.default
    if field.default_factory is not MISSING:
        return field.default_factory()
    return None


def _rule(section: Any, name: str, kind: str) -> str:
    """The condition the section's validation states for ``name``, from its error message."""
    probes = _PROBES.get({"str": str, "int": int, "float": float}.get(kind, type(None)), ())
    for probe in probes:
        try:
            dataclasses.replace(section, **{name: probe})
        except ValueError as error:
            message = str(error).split(", got ")[0]
            rule = message.split(" must ", 1)[1] if " must " in message else message
            return rule.removeprefix("be ")
    return ""


def param_docs(params: str | Path = "params.yaml") -> list[ParamDoc]:
    """Every key of the config, in ``zerochess params``'s order."""
    defaults, values = Config(), flatten(load_config(params))
    rows = []
    for section_field in dataclasses.fields(Config):
        section = getattr(defaults, section_field.name)
        cls = type(section)
        docs, hints = field_docs(cls), typing.get_type_hints(cls)
        for field in dataclasses.fields(cls):
            key = f"{section_field.name}.{field.name}"
            kind = _kind(field, hints)
            rows.append(ParamDoc(key, kind, _default(field), values.get(key), _rule(section, field.name, kind),
                                 docs.get(field.name, "")))  # fmt: skip
    return rows


def _cell(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    text = "`''`" if value == "" else f"`{value}`"
    return text.replace("|", "\\|")


def parameters_page(params: str | Path = "params.yaml") -> str:
    """The Markdown of ``docs/reference/parameters.md``."""
    lines = [
        "# Parameters",
        "",
        "<!-- generated by `make docs` (python -m pipeline.param_reference) from the config dataclasses;",
        "     do not edit: tests/test_docs.py fails when this page and the code disagree -->",
        "",
        "Every key `zerochess params` prints, by section. **default** is the embedded value",
        "(`--params none`, AlphaZero's choices), **params.yaml** the value the repository's",
        "`params.yaml` sets (the recipe); presets (`presets/*.yaml`) and `--set KEY=VALUE`",
        "go on top. **rule** is what the validation checks, quoted from its error message.",
        "",
    ]
    section = None
    for row in param_docs(params):
        name = row.key.split(".")[0]
        if name != section:
            section = name
            lines += ["", f"## `{name}`", "", "| key | type | default | params.yaml | rule |", "|---|---|---|---|---|"]
        cells = [f"`{row.key}`", row.kind.replace("|", "\\|"), _cell(row.default), _cell(row.value),
                 row.rule.replace("|", "\\|")]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += ["## Descriptions", ""]
    for row in param_docs(params):
        lines.append(f"- **`{row.key}`**: {_ROLE.sub('', row.text) or '(undocumented)'}")
    return "\n".join(lines) + "\n"


def write_page(text: str, default: str, argv: list[str] | None = None) -> int:
    """Write a generated reference page to ``argv[0]`` (else ``default``):
    the ``main`` of this module and of ``zerochess.cli_reference``."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else default)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return 0


def main() -> int:
    """``python -m pipeline.param_reference OUT``: write the page."""
    return write_page(parameters_page(), "docs/reference/parameters.md")


if __name__ == "__main__":
    raise SystemExit(main())
