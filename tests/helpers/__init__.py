"""What several test modules share (none of it holds tests), one module per kind:

- ``nets``: the tiny network (its config, its ``--set`` overrides, a seeded
  factory) and random input planes;
- ``searches``: small search configs, the algorithms, and the checks that a
  python and a native search of the same position agree, or that a search
  proved a mate;
- ``boards``: seeded random games, boards from move lists, named positions,
  the input-plane layout the encoding tests spell out;
- ``search_positions``: positions with one known right answer and a scripted
  evaluator (``bench/gumbel.py`` uses them too);
- ``native_random_games``: biased random games for the native core
  (``bench/encoding_native.py`` uses them too);
- ``shards``: shard folders made by real self-play, a stream spec over them;
- ``training``: a Lightning fit that records every step's logged metrics;
- ``cli``: the ``zerochess`` command in a child process, as a user types it;
- ``runs``: a real ``zerochess run`` in a child process: its ledgers, its
  processes, a fault injector, the checks of a finished async run;
- ``stockfish``: whether Stockfish is installed, and the mark of the tests that need it;
- ``uci``: an in-process UCI engine and its transcript;
- ``bad_nets``: checkpoint files a command must refuse.

Test modules import them as ``tests.helpers.NAME`` (the repository root is on
``sys.path`` under ``python -m pytest``); the helpers import each other relatively.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository root (the folder holding ``tests/``, ``bench/`` and ``params.yaml``)."""

BACKENDS = ["native", "python"]
"""The search backends (``search.backend``); here, not in ``searches``, so that
``conftest.py`` can parametrise with them without importing torch."""
