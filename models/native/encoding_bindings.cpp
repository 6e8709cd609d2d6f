// zerochess native core: Python bindings of the input planes and policy indices.
//
// Every function takes a FEN and UCI moves, works on C++ boards with the GIL
// released and hands back numpy arrays (no Python object per plane or move,
// except the UCI strings of line_policy_indices).  Bad input raises
// ChessError naming the FEN, the move or the encoding.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "encoding.h"

namespace py = pybind11;

namespace zc {

namespace {

// A board from `fen` that python-chess would call valid (move generation
// needs both kings and a sane position).
Board parse_position(const std::string& fen) {
  Board board = Board::from_fen(fen);
  const std::string reason = board.status();
  if (!reason.empty()) throw ChessError("invalid position '" + fen + "': " + reason);
  return board;
}

// Plays moves[ply] on `board` (legality checked); errors name the line.
void play(Board& board, const std::vector<std::string>& moves, std::size_t ply, const std::string& fen) {
  const Move move = legal_move(board, moves[ply], [&] {
    return "in position '" + board.fen() + "' (move " + std::to_string(ply + 1) + " of the line from '" + fen + "')";
  });
  Undo undo;
  board.make(move, undo);
}

py::array_t<std::uint8_t> planes_array(py::ssize_t positions, bool batched) {
  if (batched) return py::array_t<std::uint8_t>(std::vector<py::ssize_t>{positions, NUM_PLANES, 8, 8});
  return py::array_t<std::uint8_t>(std::vector<py::ssize_t>{NUM_PLANES, 8, 8});
}

py::array_t<std::uint8_t> encode_fen_line(const std::string& fen, const std::vector<std::string>& moves) {
  py::array_t<std::uint8_t> out = planes_array(1, false);
  std::uint8_t* data = out.mutable_data();
  {
    py::gil_scoped_release release;
    Board board = parse_position(fen);
    GameLine line;
    line.push(board);
    for (std::size_t ply = 0; ply < moves.size(); ++ply) {
      play(board, moves, ply, fen);
      line.push(board);
    }
    encode_position(line, board, data);
  }
  return out;
}

py::array_t<std::uint8_t> encode_line_all(const std::string& fen, const std::vector<std::string>& moves) {
  const auto positions = static_cast<py::ssize_t>(moves.size()) + 1;
  py::array_t<std::uint8_t> out = planes_array(positions, true);
  std::uint8_t* data = out.mutable_data();
  {
    py::gil_scoped_release release;
    Board board = parse_position(fen);
    GameLine line;
    line.push(board);
    encode_position(line, board, data);
    for (std::size_t ply = 0; ply < moves.size(); ++ply) {
      play(board, moves, ply, fen);
      line.push(board);
      encode_position(line, board, data + (ply + 1) * PLANES_BYTES);
    }
  }
  return out;
}

py::array_t<std::int64_t> py_policy_indices(const std::string& fen, const std::vector<std::string>& moves,
                                            const std::string& encoding) {
  std::vector<std::int64_t> indices(moves.size());
  {
    py::gil_scoped_release release;
    const PolicyEncoding enc = policy_encoding_from_name(encoding);
    const Board board = parse_position(fen);
    for (std::size_t i = 0; i < moves.size(); ++i) {
      indices[i] = policy_index(enc, board, legal_move(board, moves[i], [&] { return "in position '" + fen + "'"; }));
    }
  }
  py::array_t<std::int64_t> out(static_cast<py::ssize_t>(indices.size()));
  if (!indices.empty()) std::memcpy(out.mutable_data(), indices.data(), indices.size() * sizeof(std::int64_t));
  return out;
}

// For every position of the line: the indices of all its legal moves (in
// Board::legal_moves order), flat, with offsets (positions + 1) and the UCI of
// each move.
py::tuple py_line_policy_indices(const std::string& fen, const std::vector<std::string>& moves,
                                 const std::string& encoding) {
  std::vector<std::int64_t> offsets{0};
  std::vector<std::int64_t> indices;
  std::vector<Move> legal;
  {
    py::gil_scoped_release release;
    const PolicyEncoding enc = policy_encoding_from_name(encoding);
    Board board = parse_position(fen);
    MoveList list;
    int buffer[256];
    for (std::size_t ply = 0; ply <= moves.size(); ++ply) {
      if (ply > 0) play(board, moves, ply - 1, fen);
      list.size = 0;
      board.legal_moves(list);
      policy_indices(enc, board, list, buffer);
      indices.insert(indices.end(), buffer, buffer + list.size);
      legal.insert(legal.end(), list.begin(), list.end());
      offsets.push_back(static_cast<std::int64_t>(indices.size()));
    }
  }
  py::array_t<std::int64_t> index_array(static_cast<py::ssize_t>(indices.size()));
  if (!indices.empty()) std::memcpy(index_array.mutable_data(), indices.data(), indices.size() * sizeof(std::int64_t));
  py::array_t<std::int64_t> offset_array(static_cast<py::ssize_t>(offsets.size()));
  std::memcpy(offset_array.mutable_data(), offsets.data(), offsets.size() * sizeof(std::int64_t));
  py::list uci(legal.size());
  for (std::size_t i = 0; i < legal.size(); ++i) uci[i] = py::str(legal[i].uci());
  return py::make_tuple(index_array, offset_array, uci);
}

py::array_t<std::uint64_t> row_of_fen(const std::string& fen, int repetitions) {
  if (repetitions < 0) throw ChessError("repetitions must be >= 0, got " + std::to_string(repetitions));
  const Row row = board_row(parse_position(fen), repetitions);
  py::array_t<std::uint64_t> out(ROW_WIDTH);
  std::memcpy(out.mutable_data(), row.data(), sizeof(row));
  return out;
}

py::array_t<std::uint8_t> meta_of_fen(const std::string& fen) {
  const Meta meta = board_meta(parse_position(fen));
  py::array_t<std::uint8_t> out(META_SIZE);
  std::memcpy(out.mutable_data(), meta.data(), sizeof(meta));
  return out;
}

}  // namespace

void bind_encoding(py::module_& m) {
  m.attr("NUM_PLANES") = NUM_PLANES;
  m.def("encode_fen_line", &encode_fen_line, py::arg("fen"), py::arg("moves"),
        "Planes (119, 8, 8) uint8 of the position after the UCI moves from the FEN,\n"
        "the whole line as history (= models.encoding.encode_board).");
  m.def("encode_line_all", &encode_line_all, py::arg("fen"), py::arg("moves"),
        "Planes (len(moves) + 1, 119, 8, 8) uint8 of every position of the line.");
  m.def("policy_indices", &py_policy_indices, py::arg("fen"), py::arg("moves"), py::arg("encoding"),
        "int64 policy indices of legal UCI moves in the FEN's position\n"
        "(encoding 'az4672' or 'lc0_1858'; = models.policy.PolicyMap.indices).");
  m.def("line_policy_indices", &py_line_policy_indices, py::arg("fen"), py::arg("moves"), py::arg("encoding"),
        "For every position of the line, the indices of all its legal moves:\n"
        "(indices int64 flat, offsets int64 (len(moves) + 2,), UCI list of those moves);\n"
        "position i owns indices[offsets[i]:offsets[i + 1]].");
  m.def(
      "policy_size", [](const std::string& encoding) { return policy_size(policy_encoding_from_name(encoding)); },
      py::arg("encoding"), "Number of policy entries of the encoding (4672 or 1858).");
  m.def("board_row", &row_of_fen, py::arg("fen"), py::arg("repetitions") = 0,
        "The (14,) uint64 row of the FEN's position (= models.encoding.board_row).");
  m.def("board_meta", &meta_of_fen, py::arg("fen"),
        "The (7,) uint8 meta values of the FEN's position (= models.encoding.board_meta).");
}

}  // namespace zc
