"""Playing the network: a UCI engine (any chess GUI, cutechess-cli) and the
pieces ``zerochess play`` shares with it.

* :mod:`pipeline.uci.engine` — the protocol loop (:class:`UciEngine`);
* :mod:`pipeline.uci.player` — one game's search with tree reuse (:class:`NetPlayer`);
* :mod:`pipeline.uci.analysis` — scores (value → centipawns), mates, lines;
* :mod:`pipeline.uci.clock` — time management;
* :mod:`pipeline.uci.parsing` / :mod:`pipeline.uci.options` — commands and options;
* :mod:`pipeline.uci.loading` — checkpoint, ``champion``, random or uniform.
"""

from pipeline.uci.analysis import MoveLine, value_to_centipawns
from pipeline.uci.engine import UciEngine, UciWriter
from pipeline.uci.loading import LoadedPlayer, NetworkSelectionError, load_player
from pipeline.uci.parsing import UciCommandError
from pipeline.uci.player import NetPlayer, SearchControl, SearchReport

__all__ = [
    "LoadedPlayer",
    "MoveLine",
    "NetPlayer",
    "NetworkSelectionError",
    "SearchControl",
    "SearchReport",
    "UciCommandError",
    "UciEngine",
    "UciWriter",
    "load_player",
    "value_to_centipawns",
]
