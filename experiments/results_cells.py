"""The cells of the results pages' tables: read from a table's text into data, and written back.

A cell of a data file (``docs/results/data/notebook/*.json``) is one of

- a number (``0.75``, ``12``), written as Python writes it (``0.0`` stays ``0.0``, ``1`` stays
  ``1``);
- a string: free text, written as it is (``"0 (random net)"``, ``"–"``, ``""``);
- an object whose keys name what it holds (see :data:`KINDS`), for instance
  ``{"value": 0.75, "lo": 0.69, "hi": 0.8, "decimals": 2}`` for ``0.75 [0.69, 0.80]``,
  ``{"elo": 78, "lo": 48, "hi": 101}`` for ``+78 [+48, +101]`` and
  ``{"value": 0.77, "wins": 53, "draws": 47, "losses": 0}`` for ``0.77 (+53 =47 −0)``.

Every object may carry ``decimals`` (its fractions written with that many digits),
and ``bold``: ``true`` for the whole cell, or the name of the last part in bold
(``{"count": 24, "rate": 0.8, ..., "bold": "count"}`` is ``**24** (0.80 [...])``).
:func:`parse_cell` gives text back only where the data would not write the
same text again, so ``format_cell(parse_cell(text)) == text`` always holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

MINUS = "\u2212"  # the pages' minus sign in Elo and in win/draw/loss records
DASH = "\u2013"  # the pages' dash in ranges (11–17)
Cell = int | float | str | dict[str, Any]
Segments = list[tuple[str, str]]
Writer = Callable[[dict[str, Any], Callable[[Any], str]], Segments]


class CellError(ValueError):
    """A cell of a data file that no kind of :data:`KINDS` describes."""


def number(value: int | float, decimals: int | None = None) -> str:
    """``value`` as the pages write it: an int as it is, a float with ``decimals`` digits, or as
    Python writes it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CellError(f"expected a number, got {value!r}")
    if isinstance(value, int):
        return str(value)
    return f"{value:.{decimals}f}" if decimals is not None else repr(value)


def signed(value: int) -> str:
    """An Elo figure: ``+78``, ``+0``, ``−92`` (the minus sign, not a hyphen)."""
    return f"+{value}" if value >= 0 else f"{MINUS}{-value}"


def _number(cell: dict[str, Any], n: Callable[[Any], str]) -> Segments:
    text = f"{cell['value']:,}" if cell.get("thousands") else n(cell["value"])
    return [("value", text + (f" {cell['unit']}" if "unit" in cell else ""))]


def _estimate(cell: dict[str, Any], n: Callable[[Any], str]) -> Segments:
    return [("value", n(cell["value"])), ("interval", f" [{n(cell['lo'])}, {n(cell['hi'])}]")]


def _score(cell: dict[str, Any], n: Callable[[Any], str]) -> Segments:
    parts = _estimate(cell, n) if "lo" in cell else [("value", n(cell["value"]))]
    return [*parts, ("record", f" (+{cell['wins']} ={cell['draws']} {MINUS}{cell['losses']})")]


def _score_elo(cell: dict[str, Any], n: Callable[[Any], str]) -> Segments:
    parts = [*_estimate(cell, n), ("elo", f", {signed(cell['elo'])} Elo")]
    if "elo_lo" in cell:
        parts.append(("elo_interval", f" [{signed(cell['elo_lo'])}, {signed(cell['elo_hi'])}]"))
    return parts


def _elo(cell: dict[str, Any], _: Callable[[Any], str]) -> Segments:
    interval = f" [{signed(cell['lo'])}, {signed(cell['hi'])}]"
    return [("elo", signed(cell["elo"])), ("interval", interval)]


def _fraction(cell: dict[str, Any], n: Callable[[Any], str]) -> Segments:
    parts = [("count", f"{cell['count']}/{cell['of']}")]
    return parts + ([("rate", f" ({n(cell['rate'])})")] if "rate" in cell else [])


def _count_rate(cell: dict[str, Any], n: Callable[[Any], str]) -> Segments:
    rate = f" ({n(cell['rate'])} [{n(cell['lo'])}, {n(cell['hi'])}])"
    return [("count", str(cell["count"])), ("rate", rate)]


def _games(cell: dict[str, Any], n: Callable[[Any], str]) -> Segments:
    return [("games", str(cell["games"])), ("score", f" ({n(cell['score'])})")]


def _range(cell: dict[str, Any], n: Callable[[Any], str]) -> Segments:
    return [("range", f"{n(cell['min'])}{DASH}{n(cell['max'])}")]


def _list(cell: dict[str, Any], _: Callable[[Any], str]) -> Segments:
    return [("list", cell["sep"].join(format_cell(item) for item in cell["list"]))]


# name: (the keys it needs, the keys it may add, how it is written)
KINDS: dict[str, tuple[frozenset[str], frozenset[str], Writer]] = {
    "number": (frozenset({"value"}), frozenset({"thousands", "unit"}), _number),
    "estimate": (frozenset({"value", "lo", "hi"}), frozenset(), _estimate),
    "score": (frozenset({"value", "wins", "draws", "losses"}), frozenset({"lo", "hi"}), _score),
    "score_elo": (frozenset({"value", "lo", "hi", "elo"}), frozenset({"elo_lo", "elo_hi"}),
                  _score_elo),
    "elo": (frozenset({"elo", "lo", "hi"}), frozenset(), _elo),
    "fraction": (frozenset({"count", "of"}), frozenset({"rate"}), _fraction),
    "count_rate": (frozenset({"count", "rate", "lo", "hi"}), frozenset(), _count_rate),
    "games": (frozenset({"games", "score"}), frozenset(), _games),
    "range": (frozenset({"min", "max"}), frozenset(), _range),
    "list": (frozenset({"list", "sep"}), frozenset(), _list),
}
STYLE = frozenset({"bold", "decimals"})


def kind_of(cell: dict[str, Any]) -> str:
    """The one kind of :data:`KINDS` whose keys ``cell`` has."""
    keys = set(cell) - STYLE
    found = [name for name, (needs, may, _) in KINDS.items() if needs <= keys <= needs | may]
    if len(found) != 1:
        raise CellError(f"no kind of cell has exactly the keys {sorted(cell)}")
    return found[0]


def segments(cell: dict[str, Any]) -> Segments:
    """The named parts of an object cell, in order, before any bold."""
    decimals = cell.get("decimals")
    return KINDS[kind_of(cell)][2](cell, lambda value: number(value, decimals))


def format_cell(cell: Cell) -> str:
    """The text of one cell of a data file."""
    if isinstance(cell, str):
        return cell
    if not isinstance(cell, dict):
        return number(cell)
    parts = segments(cell)
    bold = cell.get("bold", False)
    if bold is True:
        return "**" + "".join(text for _, text in parts) + "**"
    if not bold:
        return "".join(text for _, text in parts)
    names = [name for name, _ in parts]
    if bold not in names:
        raise CellError(f"bold names {bold!r}, which is not a part of {names}")
    cut = names.index(bold) + 1
    head, rest = parts[:cut], parts[cut:]
    return "**" + "".join(text for _, text in head) + "**" + "".join(text for _, text in rest)


NUM = r"\d+(?:\.\d+)?"
ELO = rf"[+{MINUS}]\d+"
PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (name, re.compile(pattern))
    for name, pattern in [
        ("number", rf"(?P<value>{NUM})(?: (?P<unit>min))?"),
        ("number", r"(?P<value>\d{1,3}(?:,\d{3})+)"),
        ("estimate", rf"(?P<value>{NUM}) \[(?P<lo>{NUM}), (?P<hi>{NUM})\]"),
        ("score", rf"(?P<value>{NUM})(?: \[(?P<lo>{NUM}), (?P<hi>{NUM})\])? "
                  rf"\(\+(?P<wins>\d+) =(?P<draws>\d+) {MINUS}(?P<losses>\d+)\)"),
        ("score_elo", rf"(?P<value>{NUM}) \[(?P<lo>{NUM}), (?P<hi>{NUM})\], (?P<elo>{ELO}) Elo"
                      rf"(?: \[(?P<elo_lo>{ELO}), (?P<elo_hi>{ELO})\])?"),
        ("elo", rf"(?P<elo>{ELO}) \[(?P<lo>{ELO}), (?P<hi>{ELO})\]"),
        ("fraction", rf"(?P<count>\d+)/(?P<of>\d+)(?: \((?P<rate>{NUM})\))?"),
        ("count_rate", rf"(?P<count>\d+) \((?P<rate>{NUM}) \[(?P<lo>{NUM}), (?P<hi>{NUM})\]\)"),
        ("games", rf"(?P<games>\d+) \((?P<score>{NUM})\)"),
        ("range", rf"(?P<min>{NUM}){DASH}(?P<max>{NUM})"),
    ]
]  # fmt: skip
LIST_SEPARATORS = (" / ", ", ", "/")


def read_number(text: str) -> int | float:
    """``"12"`` -> 12, ``"0.40"`` -> 0.4, ``"124,283"`` -> 124283, ``"−92"`` -> -92."""
    text = text.replace(MINUS, "-").replace(",", "")
    return float(text) if "." in text else int(text)


def _match(text: str) -> dict[str, Any] | None:
    """The first kind whose pattern the whole of ``text`` matches, as an object cell."""
    for name, pattern in PATTERNS:
        found = pattern.fullmatch(text)
        if found:
            cell: dict[str, Any] = {}
            for key, value in found.groupdict().items():
                if value is not None:
                    cell[key] = value if key == "unit" else read_number(value)
            if name == "number" and "," in text:
                cell["thousands"] = True
            return cell
    return None


def _with_decimals(cell: dict[str, Any], text: str) -> dict[str, Any]:
    """``cell``, with the ``decimals`` its text's fractions share where Python's own writing
    differs."""
    if format_cell(cell) == text:
        return cell
    places = {len(fraction) for fraction in re.findall(r"\d\.(\d+)", text)}
    return {**cell, "decimals": places.pop()} if len(places) == 1 else cell


def _list_cell(text: str) -> dict[str, Any] | None:
    """``25 / 25``, ``28, 27``, ``2/14/2``: a list of numbers (each may be bold), or None."""
    for sep in LIST_SEPARATORS:
        parts = text.split(sep)
        if len(parts) < 2:
            continue
        items = [parse_cell(part) for part in parts]
        if all(not isinstance(item, str) for item in items):
            return {"list": items, "sep": sep}
    return None


def _bold(text: str) -> Cell | None:
    """A cell that opens in bold: the whole of it, or its first parts."""
    whole = re.fullmatch(r"\*\*([^*]+)\*\*", text)
    if whole:
        inner = parse_cell(whole.group(1))
        if isinstance(inner, str):
            return None
        return {**(inner if isinstance(inner, dict) else {"value": inner}), "bold": True}
    head = re.fullmatch(r"\*\*([^*]+)\*\*([^*]+)", text)
    if head is None:
        return None
    inner = parse_cell(head.group(1) + head.group(2))
    if not isinstance(inner, dict):
        return None
    prefix = ""
    for name, part in segments(inner):
        prefix += part
        if prefix == head.group(1):
            return {**inner, "bold": name}
    return None


def _plain(cell: Cell) -> Cell:
    """A number object with nothing but its value is the number itself."""
    return cell["value"] if isinstance(cell, dict) and set(cell) == {"value"} else cell


def parse_cell(text: str) -> Cell:
    """One cell of a page's table as data: a number, an object of :data:`KINDS`, or the text
    itself."""
    text = text.strip()
    if text.startswith("**"):
        cell: Cell | None = _bold(text)
    else:
        matched = _match(text)
        cell = _with_decimals(matched, text) if matched is not None else _list_cell(text)
    if cell is None:
        return text
    cell = _plain(cell)
    return cell if format_cell(cell) == text else text
