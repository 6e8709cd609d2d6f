// zerochess native core: move -> policy index for az4672 and lc0_1858.
//
// Index-identical to models/policy.py (see its module docstring for both
// layouts).  Tables are built once, in the side-to-move view (black to move:
// squares mirrored with ^ 56), keyed by (from_view, to_view, promotion), with
// a second copy for "king on its home square" where lc0 writes castling
// king-to-rook.
#include <array>
#include <cstdlib>
#include <string>
#include <vector>

#include "encoding.h"

namespace zc {

namespace {

constexpr int AZ_SIZE = 73 * 64;
constexpr int LC0_SIZE = 1858;
constexpr int PROMO_SLOTS = 8;
constexpr int LUT_SIZE = 64 * 64 * PROMO_SLOTS;
constexpr int E1 = 4, C1 = 2, G1 = 6, A1 = 0, H1 = 7, E8 = 60;

// (d_rank, d_file) clockwise from north; knight jumps clockwise from (+2, +1).
constexpr int QUEEN_DIRS[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
constexpr int KNIGHT_JUMPS[8][2] = {{2, 1}, {1, 2}, {-1, 2}, {-2, 1}, {-2, -1}, {-1, -2}, {1, -2}, {2, -1}};
constexpr int AZ_UNDERPROMOTIONS[3] = {ROOK, BISHOP, KNIGHT};
constexpr int LC0_PROMOTIONS[3] = {QUEEN, ROOK, BISHOP};

constexpr int key_of(int from, int to, int promotion) { return (from << 9) | (to << 3) | promotion; }

int offset_square(int square, int d_rank, int d_file) {
  const int rank = square / 8 + d_rank, file = square % 8 + d_file;
  return (rank >= 0 && rank < 8 && file >= 0 && file < 8) ? rank * 8 + file : -1;
}

bool is_pawn_promotion_geometry(int from, int to) {
  return from / 8 == 6 && to / 8 == 7 && std::abs(to % 8 - from % 8) <= 1;
}

bool is_plain_pair(int from, int to) {
  const int d_rank = to / 8 - from / 8, d_file = to % 8 - from % 8;
  if (d_rank == 0 && d_file == 0) return false;
  const int ar = std::abs(d_rank), af = std::abs(d_file);
  const bool queen_line = d_rank == 0 || d_file == 0 || ar == af;
  const bool knight = (ar == 1 && af == 2) || (ar == 2 && af == 1);
  return queen_line || knight;
}

struct Entry {
  int from, to, promotion;
};

using Lut = std::array<std::int16_t, LUT_SIZE>;

// Index of every (from_view, to_view, promo) entry, -1 = not encodable; a
// plain pawn step to the last rank also accepts `pawn_promotion`.
Lut view_lut(const std::vector<Entry>& decode, int pawn_promotion) {
  Lut lut;
  lut.fill(-1);
  for (int index = 0; index < static_cast<int>(decode.size()); ++index) {
    const Entry& e = decode[index];
    if (e.to >= 0) lut[key_of(e.from, e.to, e.promotion)] = static_cast<std::int16_t>(index);
  }
  for (int index = 0; index < static_cast<int>(decode.size()); ++index) {
    const Entry& e = decode[index];
    if (e.to >= 0 && e.promotion == NO_PIECE && is_pawn_promotion_geometry(e.from, e.to)) {
      lut[key_of(e.from, e.to, pawn_promotion)] = static_cast<std::int16_t>(index);
    }
  }
  return lut;
}

std::vector<Entry> az4672_decode() {
  std::vector<Entry> decode(AZ_SIZE, Entry{-1, -1, NO_PIECE});
  for (int plane = 0; plane < 73; ++plane) {
    for (int from = 0; from < 64; ++from) {
      int to = -1, promotion = NO_PIECE;
      if (plane < 56) {
        const int distance = plane % 7 + 1;
        to = offset_square(from, QUEEN_DIRS[plane / 7][0] * distance, QUEEN_DIRS[plane / 7][1] * distance);
      } else if (plane < 64) {
        to = offset_square(from, KNIGHT_JUMPS[plane - 56][0], KNIGHT_JUMPS[plane - 56][1]);
      } else if (from / 8 == 6) {
        const int slot = (plane - 64) / 3, side = (plane - 64) % 3;
        to = offset_square(from, 1, side - 1);
        promotion = AZ_UNDERPROMOTIONS[slot];
      }
      if (to >= 0) decode[plane * 64 + from] = Entry{from, to, promotion};
    }
  }
  return decode;
}

std::vector<Entry> lc0_1858_decode() {
  std::vector<Entry> decode;
  for (int from = 0; from < 64; ++from) {
    for (int to = 0; to < 64; ++to) {
      if (is_plain_pair(from, to)) decode.push_back(Entry{from, to, NO_PIECE});
    }
  }
  for (int file = 0; file < 8; ++file) {
    for (int d_file = -1; d_file <= 1; ++d_file) {
      if (file + d_file < 0 || file + d_file >= 8) continue;
      for (int piece : LC0_PROMOTIONS) decode.push_back(Entry{48 + file, 56 + file + d_file, piece});
    }
  }
  return decode;
}

struct PolicyTables {
  // luts[encoding][king on home square]
  Lut luts[2][2];

  PolicyTables() {
    const std::vector<Entry> az = az4672_decode();
    const std::vector<Entry> lc0 = lc0_1858_decode();
    if (static_cast<int>(lc0.size()) != LC0_SIZE) throw std::logic_error("lc0_1858 table size");
    luts[0][0] = luts[0][1] = view_lut(az, QUEEN);
    luts[1][0] = luts[1][1] = view_lut(lc0, KNIGHT);
    // With the king on e1 (view), e1g1/e1c1 can only be castling: lc0 writes
    // it king-to-rook.
    Lut& home = luts[1][1];
    home[key_of(E1, G1, NO_PIECE)] = luts[1][0][key_of(E1, H1, NO_PIECE)];
    home[key_of(E1, C1, NO_PIECE)] = luts[1][0][key_of(E1, A1, NO_PIECE)];
  }
};

const PolicyTables& tables() {
  static const PolicyTables instance;
  return instance;
}

}  // namespace

int policy_size(PolicyEncoding encoding) { return encoding == PolicyEncoding::AZ4672 ? AZ_SIZE : LC0_SIZE; }

PolicyEncoding policy_encoding_from_name(const std::string& name) {
  if (name == "az4672") return PolicyEncoding::AZ4672;
  if (name == "lc0_1858") return PolicyEncoding::LC0_1858;
  throw ChessError("unknown policy encoding '" + name + "'; valid names: az4672, lc0_1858");
}

std::string policy_encoding_name(PolicyEncoding encoding) {
  return encoding == PolicyEncoding::LC0_1858 ? "lc0_1858" : "az4672";
}

const std::int16_t* policy_lut(PolicyEncoding encoding, const Board& board) {
  const int enc = encoding == PolicyEncoding::LC0_1858 ? 1 : 0;
  const std::uint64_t home = board.turn() == WHITE ? (std::uint64_t{1} << E1) : (std::uint64_t{1} << E8);
  const bool king_home = (board.pieces(board.turn(), KING) & home) != 0;
  return tables().luts[enc][king_home ? 1 : 0].data();
}

namespace {

[[noreturn]] void throw_not_encodable(PolicyEncoding encoding, const Board& board, Move move) {
  const char* name = encoding == PolicyEncoding::AZ4672 ? "az4672" : "lc0_1858";
  throw ChessError("move '" + move.uci() + "' has no " + name + " index in position '" + board.fen() + "'");
}

}  // namespace

int policy_index(PolicyEncoding encoding, const Board& board, Move move) {
  const int index = move.promotion() < PROMO_SLOTS ? policy_lut(encoding, board)[policy_key(board, move)] : -1;
  if (index < 0) throw_not_encodable(encoding, board, move);
  return index;
}

void policy_indices(PolicyEncoding encoding, const Board& board, const MoveList& moves, int* out) {
  const std::int16_t* lut = policy_lut(encoding, board);
  for (int i = 0; i < moves.size; ++i) {
    const Move move = moves[i];
    const int index = move.promotion() < PROMO_SLOTS ? lut[policy_key(board, move)] : -1;
    if (index < 0) throw_not_encodable(encoding, board, move);
    out[i] = index;
  }
}

}  // namespace zc
