"""Build ``data/games/zerochess-mixed.pgn.gz``: games the project plays itself, for tests.

No game database can be downloaded here, so the supervised phase ships its own
small PGN: Stockfish playing itself at mixed strengths, plus a few games where
one side moves at random.

Strength levels. Stockfish's own ``Skill Level`` draws its mistakes from a
generator seeded by the clock, so its games cannot be reproduced. Instead each
level here is a node budget and a temperature: Stockfish scores the best
``MULTIPV`` moves within the budget and the move is drawn from a softmax of
those scores (in centipawns) at the level's temperature, with this script's
seeded generator; temperature 0 plays the best move. With Threads 1, a fixed
Hash and ``ucinewgame`` before every game, Stockfish's search at a node limit
is deterministic, so the same Stockfish build and seed give the same file.

Headers. ``WhiteElo``/``BlackElo`` are the level's nominal rating plus a
seeded jitter of up to +-60 (``LEVELS``; the random mover is 400); they are
plausible labels for filtering, not measured ratings. ``TimeControl`` is drawn
from common online controls, though no clock was used. A game ends by the
rules (checkmate, stalemate, insufficient material, threefold repetition, the
50-move rule), by resignation (the side to move sees itself ``RESIGN_CP``
centipawns down for ``RESIGN_PLIES`` consecutive own moves), or at
``MAX_PLIES`` by adjudication (a side up ``ADJUDICATE_CP`` wins, otherwise a
draw). ``Termination`` says which. Openings: most games begin with a random
prefix of a named line of ``data/make_openings.py``.

Run ``python data/make_games.py`` (about 3 minutes on 2 cores) to rebuild.
"""

from __future__ import annotations

import argparse
import gzip
import io
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.engine
import chess.pgn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_openings import LINES

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipeline.players.stockfish import find_stockfish

OUT = Path(__file__).resolve().parent / "games" / "zerochess-mixed.pgn.gz"
MULTIPV = 5
MAX_PLIES = 160
RESIGN_CP = 700
RESIGN_PLIES = 3
ADJUDICATE_CP = 300
TIME_CONTROLS = ("60+0", "180+0", "180+2", "300+0", "300+3", "600+0", "600+5", "900+10")
RANDOM_GAME_SHARE = 0.06
BOOK_SHARE = 0.75


@dataclass(frozen=True)
class Level:
    """A playing strength: Stockfish nodes per move, softmax temperature, nominal rating."""

    name: str
    nodes: int
    temperature_cp: float
    elo: int


LEVELS = (
    Level("L0", 50, 150.0, 900),
    Level("L1", 100, 80.0, 1200),
    Level("L2", 300, 40.0, 1500),
    Level("L3", 1000, 20.0, 1800),
    Level("L4", 3000, 8.0, 2100),
    Level("L5", 8000, 0.0, 2400),
)
RANDOM_ELO = 400


def _pick(infos: list[chess.engine.InfoDict], turn: chess.Color, level: Level,
          rng: random.Random) -> tuple[chess.Move, int]:
    """(move drawn at the level's temperature, best score in cp for the side to move)."""
    scored = [(info["pv"][0], info["score"].pov(turn).score(mate_score=100_000))
              for info in infos if info.get("pv")]
    best = max(cp for _, cp in scored)
    if level.temperature_cp <= 0:
        return next(move for move, cp in scored if cp == best), best
    weights = [math.exp(max((cp - best) / level.temperature_cp, -50.0)) for _, cp in scored]
    return rng.choices([move for move, _ in scored], weights)[0], best


def _opening(rng: random.Random) -> list[str]:
    """A random prefix (2 plies or more) of a random named line, or no book."""
    if rng.random() >= BOOK_SHARE:
        return []
    line = rng.choice(sorted(LINES.values())).split()
    return line[: rng.randint(2, len(line))]


@dataclass
class _Ending:
    result: str
    termination: str


def _rules_ending(board: chess.Board) -> _Ending | None:
    """The ending by the rules (draws claimed at once), or None."""
    outcome = board.outcome(claim_draw=True)
    if outcome is None:
        return None
    return _Ending(outcome.result(), "Normal")


def play_game(engine: chess.engine.SimpleEngine, white: Level | None, black: Level | None,
              rng: random.Random) -> tuple[chess.Board, _Ending]:
    """Plays one game (None = the random mover); returns the final board and how it ended."""
    board = chess.Board()
    for san in _opening(rng):
        board.push_san(san)
    game_key = object()
    losing_streak = {chess.WHITE: 0, chess.BLACK: 0}
    last_eval_white = 0
    while True:
        ending = _rules_ending(board)
        if ending is not None:
            return board, ending
        if board.ply() >= MAX_PLIES:
            if abs(last_eval_white) >= ADJUDICATE_CP:
                return board, _Ending("1-0" if last_eval_white > 0 else "0-1", "adjudication")
            return board, _Ending("1/2-1/2", "adjudication")
        level = white if board.turn == chess.WHITE else black
        if level is None:
            board.push(rng.choice(list(board.legal_moves)))
            continue
        infos = engine.analyse(board, chess.engine.Limit(nodes=level.nodes), multipv=MULTIPV,
                               game=game_key)
        move, best = _pick(infos, board.turn, level, rng)
        last_eval_white = best if board.turn == chess.WHITE else -best
        losing_streak[board.turn] = losing_streak[board.turn] + 1 if best <= -RESIGN_CP else 0
        if losing_streak[board.turn] >= RESIGN_PLIES:
            result = "0-1" if board.turn == chess.WHITE else "1-0"
            return board, _Ending(result, "resignation")
        board.push(move)


def _players(rng: random.Random) -> tuple[Level | None, Level | None]:
    """Levels of White and Black (None = random mover) for one game."""
    if rng.random() < RANDOM_GAME_SHARE:
        opponent = rng.choice(LEVELS[:3])
        return (None, opponent) if rng.random() < 0.5 else (opponent, None)
    first = rng.randrange(len(LEVELS))
    second = min(max(first + rng.randint(-2, 2), 0), len(LEVELS) - 1)
    return LEVELS[first], LEVELS[second]


def _name(level: Level | None) -> str:
    return "random mover" if level is None else f"stockfish {level.name} ({level.nodes} nodes)"


def _elo(level: Level | None, rng: random.Random) -> str:
    base = RANDOM_ELO if level is None else level.elo
    return str(base + rng.randint(-60, 60))


def to_pgn(board: chess.Board, ending: _Ending, white: Level | None, black: Level | None,
           number: int, rng: random.Random) -> str:
    """The game as PGN text with its headers."""
    game = chess.pgn.Game.from_board(board)
    headers = game.headers
    headers["Event"] = "zerochess generated games"
    headers["Site"] = "data/make_games.py"
    headers["Date"] = "2025.01.01"
    headers["Round"] = str(number)
    headers["White"] = _name(white)
    headers["Black"] = _name(black)
    headers["Result"] = ending.result
    headers["WhiteElo"] = _elo(white, rng)
    headers["BlackElo"] = _elo(black, rng)
    headers["TimeControl"] = rng.choice(TIME_CONTROLS)
    headers["Termination"] = ending.termination
    return str(game)


def build(games: int, seed: int, stockfish: str) -> str:
    """All games as one PGN text."""
    rng = random.Random(seed)
    texts = []
    engine = chess.engine.SimpleEngine.popen_uci(stockfish)
    try:
        engine.configure({"Threads": 1, "Hash": 16})
        for number in range(1, games + 1):
            white, black = _players(rng)
            board, ending = play_game(engine, white, black, rng)
            texts.append(to_pgn(board, ending, white, black, number, rng))
            if number % 25 == 0:
                print(f"{number}/{games} games", file=sys.stderr)
    finally:
        engine.quit()
    return "\n\n".join(texts) + "\n"


def write_gzip(text: str, path: Path) -> None:
    """Writes ``text`` gzip-compressed with a fixed timestamp (same bytes every run)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as gz:
        gz.write(text.encode())
    path.write_bytes(buffer.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--stockfish", default="", help="binary (default: PATH, /usr/games)")
    args = parser.parse_args()
    text = build(args.games, args.seed, find_stockfish(args.stockfish))
    write_gzip(text, args.out)
    print(f"wrote {args.games} games, {len(text)} bytes of PGN, to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
