"""The UCI engine in-process: the protocol dialogue line by line (uniform evaluator)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import chess
import pytest

from pipeline.uci.engine import UciWriter
from tests.helpers.search_positions import MATED_IN_ONE, SIMPLE_MATES_IN_ONE
from tests.helpers import BACKENDS
from tests.helpers.uci import WAIT_S, Session, Transcript, final_infos


@pytest.fixture(params=BACKENDS)
def session(request: pytest.FixtureRequest) -> Iterator[Session]:
    """An engine on each search backend."""
    session = Session(backend=request.param)
    yield session
    session.engine.handle("quit")


def test_handshake_declares_id_options_and_uciok(session: Session) -> None:
    mark = session.send("uci", "isready")
    lines = session.out.since(mark)
    assert lines[0].startswith("id name zerochess") and lines[1].startswith("id author")
    names = {line.split()[2] for line in lines if line.startswith("option name")}
    assert {
        "Threads",
        "BatchSize",
        "Simulations",
        "CPuct",
        "Temperature",
        "MultiPV",
        "MoveOverhead",
    } <= names
    assert lines[-2:] == ["uciok", "readyok"]


def test_go_nodes_reports_well_formed_info_and_a_legal_move(session: Session) -> None:
    best, output = session.go("position startpos moves e2e4", "go nodes 150")
    board = chess.Board()
    board.push_uci("e2e4")
    assert best in board.legal_moves
    (info,) = final_infos(output)
    assert info["nodes"] == "150" and info["multipv"] == "1" and int(info["depth"]) >= 1
    assert info["score"].startswith("cp ") and int(info["nps"]) > 0
    assert info["pv"].split()[0] == best.uci()  # type: ignore[union-attr]
    for move in info["pv"].split():
        board.push_uci(move)  # the whole line is legal


def test_multipv_sends_one_line_per_move(session: Session) -> None:
    _, output = session.go("setoption name MultiPV value 3", "position startpos", "go nodes 300")
    infos = final_infos(output)
    assert [info["multipv"] for info in infos] == ["1", "2", "3"]
    assert len({info["pv"].split()[0] for info in infos}) == 3


def test_mate_in_one_is_announced_and_played(session: Session) -> None:
    best, output = session.go("position fen 6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "go nodes 100")
    assert best == chess.Move.from_uci("a1a8")
    assert final_infos(output)[0]["score"] == "mate 1"


MATE_IN_ONE = SIMPLE_MATES_IN_ONE[0][0]  # a1a8 mates: the solver proves the root at once
VISITS_PER_EVALUATION = 20
"""Most simulations evaluate a new leaf; the ones ending at a game end or in
the cache do not, but never a hundred in a row as when a proof was replayed."""


def evaluated_positions(session: Session) -> int:
    """Leaves the session's (uniform) evaluator has evaluated so far."""
    return session.engine.player.evaluator.positions  # type: ignore[attr-defined, no-any-return]


def test_multipv_at_a_proven_root_gives_the_mate_then_the_other_moves(session: Session) -> None:
    best, output = session.go(
        "setoption name MultiPV value 3", f"position fen {MATE_IN_ONE}", "go nodes 400"
    )
    infos = final_infos(output)
    assert best == chess.Move.from_uci("a1a8")
    assert [info["multipv"] for info in infos] == ["1", "2", "3"]
    assert (infos[0]["score"], infos[0]["pv"]) == ("mate 1", "a1a8")
    assert all(info["score"].startswith("cp ") for info in infos[1:])
    assert len({info["pv"].split()[0] for info in infos}) == 3


def test_multipv_at_a_proven_root_gives_no_more_lines_than_moves(session: Session) -> None:
    _, output = session.go(
        "setoption name MultiPV value 3", f"position fen {MATED_IN_ONE}", "go nodes 50"
    )
    infos = final_infos(output)
    assert [(info["multipv"], info["score"], info["pv"]) for info in infos] == [
        ("1", "mate -1", "h8g8")
    ]


def test_nodes_at_a_proven_root_are_simulations_that_searched(session: Session) -> None:
    _, output = session.go(f"position fen {MATE_IN_ONE}", "go nodes 400")
    nodes = int(final_infos(output)[0]["nodes"])
    assert nodes <= 400
    assert nodes <= VISITS_PER_EVALUATION * evaluated_positions(session)


def test_infinite_search_at_a_proven_root_counts_only_real_simulations(session: Session) -> None:
    mark = session.send(
        "setoption name MultiPV value 2", f"position fen {MATE_IN_ONE}", "go infinite"
    )
    time.sleep(0.5)
    assert not any(line.startswith("bestmove") for line in session.out.since(mark))
    session.send("stop")
    assert session.out.wait_for("bestmove", mark) == "bestmove a1a8"
    infos = final_infos(session.out.since(mark))
    assert [info["multipv"] for info in infos] == ["1", "2"] and infos[0]["score"] == "mate 1"
    assert int(infos[0]["nodes"]) <= VISITS_PER_EVALUATION * evaluated_positions(session)


def test_infinite_search_with_every_move_proven_stops_adding_nodes_and_waits_for_stop(
    session: Session,
) -> None:
    mark = session.send(f"position fen {MATED_IN_ONE}", "go infinite")
    session.out.wait_for("info string every move is proven", mark)
    evaluated = evaluated_positions(session)
    time.sleep(0.3)
    assert not any(line.startswith("bestmove") for line in session.out.since(mark))
    assert evaluated_positions(session) == evaluated
    session.send("stop")
    assert session.out.wait_for("bestmove", mark) == "bestmove h8g8"
    (info,) = final_infos(session.out.since(mark))
    assert info["score"] == "mate -1" and int(info["nodes"]) <= evaluated


def test_tree_is_reused_along_the_game(session: Session) -> None:
    best, output = session.go("position startpos", "go nodes 400")
    reply = final_infos(output)[0]["pv"].split()[1]
    session.send(f"position startpos moves {best.uci()} {reply}")  # type: ignore[union-attr]
    tree = session.engine.player.tree
    assert tree is not None and tree.root.visits > 1  # the subtree was kept
    assert [m.uci() for m in tree.board.move_stack] == [best.uci(), reply]  # type: ignore[union-attr]
    _, output = session.go("go nodes 400")
    assert final_infos(output)[0]["nodes"] == "400"


def test_new_game_forgets_the_tree(session: Session) -> None:
    session.go("position startpos", "go nodes 100")
    session.send("ucinewgame", "position startpos moves e2e4")
    tree = session.engine.player.tree
    assert tree is not None and tree.root.visits == 0


def test_stop_ends_an_infinite_search_promptly(session: Session) -> None:
    mark = session.send("position startpos", "go infinite")
    time.sleep(0.5)
    assert not any(line.startswith("bestmove") for line in session.out.since(mark))
    stopped = time.monotonic()
    session.send("stop")
    best = session.out.wait_for("bestmove", mark, timeout=10.0).split()[1]
    assert time.monotonic() - stopped < 10.0
    assert chess.Move.from_uci(best) in chess.Board().legal_moves


def test_infinite_search_waits_for_stop_even_when_nothing_is_left_to_search(
    session: Session,
) -> None:
    mark = session.send("position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "go infinite")  # stalemate
    time.sleep(0.3)
    assert not any(line.startswith("bestmove") for line in session.out.since(mark))
    session.send("stop")
    assert session.out.wait_for("bestmove", mark) == "bestmove (none)"


def test_ponderhit_turns_pondering_into_a_timed_search(session: Session) -> None:
    mark = session.send(
        "setoption name Ponder value true", "position startpos", "go ponder wtime 2000 btime 2000"
    )
    time.sleep(0.3)
    assert not any(line.startswith("bestmove") for line in session.out.since(mark))
    session.send("ponderhit")
    assert session.out.wait_for("bestmove", mark).startswith("bestmove ")


def test_time_limits_end_the_search(session: Session) -> None:
    started = time.monotonic()
    best, _ = session.go("position startpos", "go movetime 300")
    assert best in chess.Board().legal_moves
    best, _ = session.go("go wtime 1000 btime 1000 winc 0 binc 0")
    assert best in chess.Board().legal_moves
    assert time.monotonic() - started < WAIT_S


class LingeringTranscript(Transcript):
    """A stream whose writer stays a while after writing ``bestmove``, as a
    search thread may before it returns."""

    def write(self, text: str) -> int:
        written = super().write(text)
        if text.startswith("bestmove"):
            time.sleep(0.3)
        return written


def test_a_go_sent_the_moment_bestmove_is_read_is_obeyed(session: Session) -> None:
    """A GUI answers ``bestmove`` with its next ``go`` at once; the finished
    search thread may not have returned yet, and the go must not be ignored."""
    session.out = LingeringTranscript()
    session.engine.writer = UciWriter(session.out)
    best, _ = session.go("position startpos", "go nodes 16")
    assert best in chess.Board().legal_moves
    mark = session.send("go nodes 16")  # while the first thread still sleeps in its write
    best_again = session.out.wait_for("bestmove", mark).split()[1]
    assert chess.Move.from_uci(best_again) in chess.Board().legal_moves
    assert not [line for line in session.out.since(mark) if "ignored" in line]


def test_depth_limit_ends_the_search(session: Session) -> None:
    _, output = session.go("position startpos", "go depth 3")
    assert int(final_infos(output)[0]["depth"]) >= 3


def test_claimable_repetition_still_gets_a_legal_move(session: Session) -> None:
    shuffle = "g1f3 g8f6 f3g1 f6g8 " * 2
    best, output = session.go(f"position startpos moves {shuffle.strip()}", "go nodes 50")
    assert best in chess.Board().legal_moves
    assert any("draw can be claimed" in line for line in output)


def test_game_over_answers_bestmove_none(session: Session) -> None:
    best, output = session.go(
        "position fen 6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1 moves a1a8", "go nodes 10"
    )
    assert best is None and any("checkmate" in line for line in output)


def test_invalid_position_answers_none_until_a_valid_one(session: Session) -> None:
    best, output = session.go("position fen 8/8/8/8/8/8/8/8 w - - 0 1", "go nodes 10")
    assert best is None and any("NO_WHITE_KING" in line for line in output)
    best, _ = session.go("position startpos", "go nodes 10")
    assert best in chess.Board().legal_moves


def test_options_reach_the_search_and_torch(session: Session) -> None:
    session.send(
        "setoption name BatchSize value 16",
        "setoption name cpuct value 2.5",
        "setoption name Threads value 2",
    )
    config = session.engine.player.config
    assert (config.leaves_per_batch, config.c_puct_init) == (16, 2.5)
    assert session.threads == [2]


def test_temperature_samples_legal_moves(session: Session) -> None:
    best, _ = session.go(
        "setoption name Temperature value 1.0", "position startpos", "go nodes 100"
    )
    assert best in chess.Board().legal_moves


@pytest.mark.parametrize(
    "line",
    [
        "frobnicate",
        "go nodes banana",
        "position",
        "position fen",
        "position startpos moves e2e5",
        "position fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 moves",
        "setoption",
        "setoption name Nope value 1",
        "setoption name MultiPV value 0",
        "setoption name MultiPV",
        "debug maybe",
        "ponderhit",
        "stop",
        "\x00\x01\x02 ÿþ binary",
        "x" * 10_000,
        "   ",
    ],
)
def test_garbage_is_explained_and_survived(session: Session, line: str) -> None:
    mark = session.send(line)
    allowed: tuple[str, ...] = ("info string", "bestmove")
    if line.startswith("go"):
        # The bad value is ignored and a search with the defaults runs: wait for its
        # end, or its lines race this check and the next ``go`` is refused as running.
        session.out.wait_for("bestmove", mark)
        allowed += ("info depth",)
    output = session.out.since(mark)
    assert all(text.startswith(allowed) for text in output)
    best, _ = session.go("position startpos", "go nodes 20")
    assert best in chess.Board().legal_moves


def test_go_during_a_search_is_refused_and_quit_still_answers(session: Session) -> None:
    mark = session.send("position startpos", "go infinite", "go nodes 10")
    assert any("search is running" in line for line in session.out.since(mark))
    assert session.engine.handle("quit") is False
    assert session.out.wait_for("bestmove", mark).startswith("bestmove ")


def test_run_reads_until_quit() -> None:
    import io

    session = Session()
    script = io.StringIO("uci\nisready\nposition startpos\ngo nodes 30\nquit\nisready\n")
    assert session.engine.run(script) == 0
    lines = session.out.lines
    assert "uciok" in lines and lines.count("readyok") == 1  # nothing after quit
    assert any(line.startswith("bestmove") for line in lines)
