"""Self-play: the games, their start positions, the curriculum, the endgame
starts, the adjudication of long games, and the ``selfplay`` parameters.

The modules import one way, from the bottom up (none imports this package
itself, so ``from pipeline.selfplay import X`` never makes a cycle):

* :mod:`~pipeline.selfplay.endgames`: endgame kinds and their seeded starts;
* :mod:`~pipeline.selfplay.config`: :class:`SelfPlayConfig` (the ``selfplay``
  section of ``params.yaml``) and its :class:`CurriculumStage` list;
* :mod:`~pipeline.selfplay.starts`: start positions from EPD/FEN files;
* :mod:`~pipeline.selfplay.curriculum`: the start positions of a generation;
* :mod:`~pipeline.selfplay.adjudication`: scoring a game at ``max_plies``
  (:data:`~pipeline.selfplay.adjudication.PIECE_POINTS`, the material table);
* :mod:`~pipeline.selfplay.records`: game records and counters;
  :mod:`~pipeline.selfplay.positions`: a game as shard rows;
* :mod:`~pipeline.selfplay.python_games` and :mod:`~pipeline.selfplay.native`:
  the two search backends;
* :mod:`~pipeline.selfplay.worker`: :class:`SelfPlayWorker`, which plays them.
"""

from pipeline.selfplay.adjudication import (
    PIECE_POINTS,
    Adjudicator,
    check_adjudication,
    material_balance,
)
from pipeline.selfplay.config import (
    CurriculumStage,
    SelfPlayConfig,
    check_curriculum,
    check_curriculum_measure,
)
from pipeline.selfplay.curriculum import GENERATED_STARTS, stage_for, stage_index, start_fens_for
from pipeline.selfplay.endgames import (
    DEFAULT_KINDS,
    endgame_fens,
    parse_kind,
    parse_kinds,
    write_epd,
)
from pipeline.selfplay.positions import game_positions
from pipeline.selfplay.records import (
    GameRecord,
    NativeGameRecord,
    PlyRecord,
    SelfPlayStats,
    final_position,
    native_plies,
)
from pipeline.selfplay.starts import load_start_positions, project_file
from pipeline.selfplay.worker import SelfPlayWorker

__all__ = [
    "DEFAULT_KINDS",
    "GENERATED_STARTS",
    "PIECE_POINTS",
    "Adjudicator",
    "CurriculumStage",
    "GameRecord",
    "NativeGameRecord",
    "PlyRecord",
    "SelfPlayConfig",
    "SelfPlayStats",
    "SelfPlayWorker",
    "check_adjudication",
    "check_curriculum",
    "check_curriculum_measure",
    "endgame_fens",
    "final_position",
    "game_positions",
    "load_start_positions",
    "material_balance",
    "native_plies",
    "parse_kind",
    "parse_kinds",
    "project_file",
    "stage_for",
    "stage_index",
    "start_fens_for",
    "write_epd",
]
