// zerochess native core: Python bindings of the board (tests, search wrapper).
//
// models._native.Board mirrors the part of chess.Board the project compares
// against: FEN in and out, UCI legal moves, checked pushes, keys, validity.
// Errors raise models._native.ChessError (a ValueError) naming the value.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "board.h"

namespace py = pybind11;

namespace zc {

namespace {

const char* const STARTING_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

std::vector<std::string> legal_uci(const Board& board) {
  MoveList moves;
  board.legal_moves(moves);
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(moves.size));
  for (Move m : moves) out.push_back(m.uci());
  return out;
}

// The legal move `uci` names in `board` (ChessError naming the move and the
// position otherwise).
Move board_move(const Board& board, const std::string& uci) {
  return zc::legal_move(
      board, uci, [&] { return "in '" + board.fen() + "'"; }, false);
}

void push_uci(Board& board, const std::string& uci) {
  const Move move = board_move(board, uci);
  Undo undo;
  board.make(move, undo);
}

bool gives_check_uci(const Board& board, const std::string& uci) { return board.gives_check(board_move(board, uci)); }

std::uint64_t board_perft(Board& board, int depth) {
  if (depth < 0) throw ChessError("perft depth must be >= 0, got " + std::to_string(depth));
  Board copy = board;
  py::gil_scoped_release release;
  return perft(copy, depth);
}

std::uint64_t fen_perft(const std::string& fen, int depth) {
  if (depth < 0) throw ChessError("perft depth must be >= 0, got " + std::to_string(depth));
  Board board = Board::from_fen(fen);
  py::gil_scoped_release release;
  return perft(board, depth);
}

std::string fen_terminal_reason(const std::string& fen, int repetitions) {
  if (repetitions < 0) throw ChessError("repetitions must be >= 0, got " + std::to_string(repetitions));
  Board board = Board::from_fen(fen);
  MoveList moves;
  board.legal_moves(moves);
  return termination_name(terminal_reason(board, moves.size, repetitions));
}

}  // namespace

void bind_board(py::module_& m) {
  py::class_<Board>(m, "Board", "Chess position with legal move generation (python-chess conventions).")
      .def(py::init([](const std::string& fen) { return Board::from_fen(fen); }), py::arg("fen") = STARTING_FEN,
           "Position from a FEN (1 to 6 fields like chess.Board(fen)); ChessError if malformed.")
      .def("fen", &Board::fen, "FEN with the en passant square only when a capture is legal.")
      .def("status", &Board::status, "'' when chess.Board.is_valid() holds, else the reasons.")
      .def("legal_moves", &legal_uci, "Legal moves in UCI (castling as e1g1), in no particular order.")
      .def("push_uci", &push_uci, py::arg("uci"), "Plays a legal UCI move; ChessError naming it otherwise.")
      .def("is_check", &Board::is_check)
      .def("gives_check", &gives_check_uci, py::arg("uci"),
           "Whether a legal UCI move gives check, decided without playing it; ChessError if not legal.")
      .def("key", &Board::key, "Zobrist key of python-chess's _transposition_key() (kept incrementally).")
      .def("compute_key", &Board::compute_key, "The same key computed from scratch.")
      .def_property_readonly("halfmove_clock", &Board::halfmove_clock)
      .def_property_readonly("fullmove_number", &Board::fullmove_number)
      .def_property_readonly(
          "turn", [](const Board& b) { return b.turn() == WHITE; }, "True when white is to move.")
      .def("ply", &Board::ply)
      .def("is_insufficient_material", &Board::is_insufficient_material)
      .def("has_legal_en_passant", &Board::has_legal_en_passant)
      .def("check_make_unmake", &check_make_unmake,
           "Test hook: make/unmake every legal move, checking the key and the restored position.")
      .def("copy", [](const Board& b) { return Board(b); })
      .def("__copy__", [](const Board& b) { return Board(b); })
      .def("perft", &board_perft, py::arg("depth"), "Leaf count of the legal move tree (releases the GIL).")
      .def("__repr__", [](const Board& b) { return "Board('" + b.fen() + "')"; });

  m.def("perft", &fen_perft, py::arg("fen"), py::arg("depth"),
        "Leaf count of the legal move tree from a FEN to `depth` plies (releases the GIL).");
  m.def("terminal_reason", &fen_terminal_reason, py::arg("fen"), py::arg("repetitions") = 0,
        "Why the game is over ('checkmate', 'stalemate', 'threefold_repetition', 'fifty_moves', "
        "'insufficient_material') or '' when it goes on; repetitions = earlier occurrences of the position.");
}

}  // namespace zc
