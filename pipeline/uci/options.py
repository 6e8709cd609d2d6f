"""The engine's UCI options: declaration (``option name ...``) and parsing.

=============  ======  ==========================================================
option         type    meaning
=============  ======  ==========================================================
Threads        spin    torch intra-op threads for the network
BatchSize      spin    leaves collected (virtual loss) per network call
Simulations    spin    simulations for a ``go`` without any limit
CPuct          string  c_init of the exploration constant (a float)
Temperature    string  0: play the most visited move; > 0: sample ∝ N^(1/T)
MultiPV        spin    lines reported in ``info`` (``multipv 1..N``)
MoveOverhead   spin    milliseconds kept back from every timed move
Ponder         check   the GUI may send ``go ponder`` (searched like infinite)
=============  ======  ==========================================================

Floats are declared as ``string`` options, as lc0 does, since UCI's ``spin``
is an integer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from models.search_config import SearchConfig
from pipeline.uci.parsing import UciCommandError

OptionValue = int | float | bool

OPTION_KINDS = ("spin", "check", "string")


@dataclass(frozen=True)
class UciOption:
    """One option as declared to the GUI.

    Attributes:
        name: the name shown in the GUI (matched case-insensitively).
        kind: ``spin`` (integer), ``check`` (boolean) or ``string`` (a float here).
        default: the value before any ``setoption``.
        minimum, maximum: the accepted range (spin and string).
    """

    name: str
    kind: str
    default: OptionValue
    minimum: float | None = None
    maximum: float | None = None

    def declaration(self) -> str:
        """The ``option name ... type ...`` line sent after ``uci``."""
        if self.kind == "check":
            return f"option name {self.name} type check default {str(self.default).lower()}"
        if self.kind == "spin":
            return (
                f"option name {self.name} type spin default {self.default} "
                f"min {int(self.minimum or 0)} max {int(self.maximum or 0)}"
            )
        return f"option name {self.name} type string default {self.default}"

    def parse(self, text: str | None) -> OptionValue:
        """The typed value of ``setoption ... value <text>``.

        Raises:
            UciCommandError: missing, unparseable or out-of-range value; the
                message names the option, the value and the range.
        """
        if text is None or not text.strip():
            raise UciCommandError(f"setoption {self.name}: a value is required")
        text = text.strip()
        if self.kind == "check":
            if text.lower() not in ("true", "false"):
                raise UciCommandError(
                    f"setoption {self.name}: expected true or false, got {text!r}"
                )
            return text.lower() == "true"
        try:
            number: float = int(text) if self.kind == "spin" else float(text)
        except ValueError as error:
            wanted = "an integer" if self.kind == "spin" else "a number"
            raise UciCommandError(
                f"setoption {self.name}: expected {wanted}, got {text!r}"
            ) from error
        low = -math.inf if self.minimum is None else self.minimum
        high = math.inf if self.maximum is None else self.maximum
        if not low <= number <= high:
            raise UciCommandError(
                f"setoption {self.name}: {text} is outside [{self.minimum}, {self.maximum}]"
            )
        return number


def engine_options(search: SearchConfig, threads: int, max_threads: int) -> list[UciOption]:
    """The options of the engine, with defaults from the ``search`` config and
    the current torch thread count."""
    return [
        UciOption("Threads", "spin", threads, 1, max(max_threads, threads)),
        UciOption("BatchSize", "spin", search.leaves_per_batch, 1, 1024),
        UciOption("Simulations", "spin", search.num_simulations, 1, 100_000_000),
        UciOption("CPuct", "string", search.c_puct_init, 0.0, 100.0),
        UciOption("Temperature", "string", 0.0, 0.0, 100.0),
        UciOption("MultiPV", "spin", 1, 1, 256),
        UciOption("MoveOverhead", "spin", 50, 0, 10_000),
        UciOption("Ponder", "check", False),
    ]
