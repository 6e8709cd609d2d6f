// zerochess native core: the AlphaZero 119 input planes and the policy indices.
//
// Byte-identical to models/encoding.py and models/policy.py (see their module
// docstrings for the layout): a position is reduced to a Row of 14 uint64
// words (12 absolute piece bitboards with the en passant adjustment, then the
// two repetition words), the last 8 rows of a line plus 7 meta values become
// the (119, 8, 8) uint8 planes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "board.h"

namespace zc {

constexpr int NUM_PLANES = 119;
constexpr int HISTORY_STEPS = 8;
constexpr int ROW_WIDTH = 14;
constexpr int META_SIZE = 7;
constexpr int PLANES_BYTES = NUM_PLANES * 64;

using Row = std::array<std::uint64_t, ROW_WIDTH>;
using Meta = std::array<std::uint8_t, META_SIZE>;

// models.encoding.board_row(board, repetitions).
Row board_row(const Board& board, int repetitions);
// models.encoding.meta_values(board).
Meta board_meta(const Board& board);
// Planes of 8 step-ordered rows (steps[0] = current position; zero rows for
// missing history) and the meta values, written to out[0 .. PLANES_BYTES).
void write_planes(const Row* steps, const Meta& meta, std::uint8_t* out);

// The positions of one game line (models.encoding.PlaneHistory): rows and
// transposition keys, with O(1) repetition counts.
class GameLine {
 public:
  void push(const Board& board);  // append the new current position
  void pop();                     // throws ChessError when empty
  int size() const { return static_cast<int>(keys_.size()); }
  int repetitions() const;  // of the current position, before it in the line
  int occurrences(std::uint64_t key) const;
  // The last 8 rows, step 0 first, zero rows before the root; throws
  // ChessError when the line is empty.
  void snapshot(Row* out8) const;
  const Row& row(int index) const { return rows_[index]; }

 private:
  std::vector<std::uint64_t> keys_;
  std::vector<Row> rows_;
  std::unordered_map<std::uint64_t, int> counts_;
};

// Planes of the current position of `line` (`board` must be that position,
// it gives the meta values) written to out[0 .. PLANES_BYTES).  Throws
// ChessError when the line is empty.
void encode_position(const GameLine& line, const Board& board, std::uint8_t* out);

enum class PolicyEncoding : int { AZ4672 = 0, LC0_1858 = 1 };
int policy_size(PolicyEncoding encoding);  // 4672 or 1858
// Throws ChessError for an unknown name ("az4672" | "lc0_1858").
PolicyEncoding policy_encoding_from_name(const std::string& name);
// The name policy_encoding_from_name reads.
std::string policy_encoding_name(PolicyEncoding encoding);

// models.policy.PolicyMap.indices for one legal move of `board`; throws
// ChessError when the move has no index in the encoding.
int policy_index(PolicyEncoding encoding, const Board& board, Move move);
// The indices of all `moves` (legal in `board`) written to out[0 .. moves.size);
// throws ChessError like policy_index.
void policy_indices(PolicyEncoding encoding, const Board& board, const MoveList& moves, int* out);
// Fast path: the read-only table for `board`'s side to move (static storage).
// The index of move m (promotion() < 8, true of every Move from legal_moves or
// from_uci) is lut[policy_key(board, m)], -1 when not encodable.
const std::int16_t* policy_lut(PolicyEncoding encoding, const Board& board);
inline int policy_key(const Board& board, Move move) {
  const int flip = board.turn() == WHITE ? 0 : 56;
  return ((move.from() ^ flip) << 9) | ((move.to() ^ flip) << 3) | move.promotion();
}

}  // namespace zc
