// zerochess native core: rows, meta values, the 119 input planes and GameLine.
//
// Mirrors models/encoding.py (see its module docstring): a position becomes a
// row of 14 uint64 words (white P..K, black P..K with the en passant
// adjustment, then two repetition words); eight step-ordered rows and seven
// meta values become the planes.  Written from that description only.
#include "encoding.h"

#include <algorithm>
#include <cstring>

#include "unpack.h"

namespace zc {

namespace {

constexpr std::uint64_t ALL_ONES = ~std::uint64_t{0};
constexpr int PIECE_WORDS = 12;
constexpr int MAX_COUNT = 255;

constexpr std::uint64_t bit(int square) { return std::uint64_t{1} << square; }

constexpr std::uint64_t RANK_1 = 0xFFull;
constexpr std::uint64_t RANK_8 = 0xFFull << 56;
constexpr std::uint64_t CORNERS_WHITE = bit(0) | bit(7);    // a1, h1
constexpr std::uint64_t CORNERS_BLACK = bit(56) | bit(63);  // a8, h8
constexpr int E1 = 4;
constexpr int E8 = 60;

inline std::uint64_t byte_swap(std::uint64_t word) { return __builtin_bswap64(word); }

inline std::uint8_t clamp_count(long long value) {
  return static_cast<std::uint8_t>(std::clamp<long long>(value, 0, MAX_COUNT));
}

// models.encoding._castling_flags on python-chess's clean castling rights for
// standard chess: corner rooks still entitled to castle, the king (never a
// promoted piece in standard chess) on its home square.
std::uint64_t clean_castling(const Board& board) {
  const std::uint64_t rights = board.castling() & board.by_type(ROOK);
  std::uint64_t white = rights & board.occupied_co(WHITE) & CORNERS_WHITE;
  std::uint64_t black = rights & board.occupied_co(BLACK) & CORNERS_BLACK;
  if (!(board.pieces(WHITE, KING) & bit(E1))) white = 0;
  if (!(board.pieces(BLACK, KING) & bit(E8))) black = 0;
  return white | black;
}

void castling_flags(const Board& board, Color color, std::uint64_t rights, std::uint8_t& kingside,
                    std::uint8_t& queenside) {
  const std::uint64_t backrank = color == WHITE ? RANK_1 : RANK_8;
  const std::uint64_t rooks = rights & backrank;
  const std::uint64_t king = board.pieces(color, KING) & backrank;
  kingside = queenside = 0;
  if (!rooks || !king) return;
  const std::uint64_t highest = bit(63 - __builtin_clzll(rooks));
  const std::uint64_t lowest = rooks & (~rooks + 1);
  kingside = highest > king ? 1 : 0;
  queenside = lowest < king ? 1 : 0;
}

}  // namespace

Row board_row(const Board& board, int repetitions) {
  Row row{};
  for (int color = 0; color < 2; ++color) {
    for (int type = PAWN; type <= KING; ++type) {
      row[6 * color + type - 1] = board.pieces(static_cast<Color>(color), type);
    }
  }
  if (board.ep_square() != NO_SQUARE && board.has_legal_en_passant()) {
    const int ep = board.ep_square();
    const int file = ep & 7;
    // A legal en passant capture implies ep on rank 6 (white to move) or 3.
    if (board.turn() == WHITE && ep >= 40 && ep < 48) {  // black pawn on rank 5 drawn on rank 8
      row[6] = (row[6] & ~bit(ep - 8)) | bit(56 + file);
    } else if (board.turn() == BLACK && ep >= 16 && ep < 24) {  // white pawn on rank 4 drawn on rank 1
      row[0] = (row[0] & ~bit(ep + 8)) | bit(file);
    }
  }
  row[PIECE_WORDS] = repetitions >= 1 ? ALL_ONES : 0;
  row[PIECE_WORDS + 1] = repetitions >= 2 ? ALL_ONES : 0;
  return row;
}

Meta board_meta(const Board& board) {
  Meta meta{};
  const Color us = board.turn();
  const Color them = us == WHITE ? BLACK : WHITE;
  const std::uint64_t rights = clean_castling(board);
  const long long ply = 2 * (static_cast<long long>(board.fullmove_number()) - 1) + (us == BLACK ? 1 : 0);
  meta[0] = us == BLACK ? 1 : 0;
  meta[1] = clamp_count(ply);
  castling_flags(board, us, rights, meta[2], meta[3]);
  castling_flags(board, them, rights, meta[4], meta[5]);
  meta[6] = clamp_count(board.halfmove_clock());
  return meta;
}

void write_planes(const Row* steps, const Meta& meta, std::uint8_t* out) {
  const UnpackTable& table = unpack_table();
  const bool black = meta[0] != 0;
  for (int step = 0; step < HISTORY_STEPS; ++step) {
    const Row& row = steps[step];
    std::uint8_t* base = out + step * ROW_WIDTH * 64;
    for (int word = 0; word < PIECE_WORDS; ++word) {
      // Black to move: "our" pieces are black's, seen with ranks mirrored.
      const std::uint64_t value = black ? byte_swap(row[(word + 6) % PIECE_WORDS]) : row[word];
      unpack_word(value, base + word * 64, table);
    }
    for (int word = PIECE_WORDS; word < ROW_WIDTH; ++word) {
      std::memset(base + word * 64, row[word] ? 1 : 0, 64);
    }
  }
  std::uint8_t* meta_planes = out + HISTORY_STEPS * ROW_WIDTH * 64;
  for (int i = 0; i < META_SIZE; ++i) {
    const bool count_plane = i == 1 || i == 6;  // move count, no progress
    const std::uint8_t value = count_plane ? meta[i] : (meta[i] ? 1 : 0);
    std::memset(meta_planes + i * 64, value, 64);
  }
}

void encode_position(const GameLine& line, const Board& board, std::uint8_t* out) {
  Row steps[HISTORY_STEPS];
  line.snapshot(steps);
  write_planes(steps, board_meta(board), out);
}

// ---------------------------------------------------------------------------
// GameLine
// ---------------------------------------------------------------------------

void GameLine::push(const Board& board) {
  const std::uint64_t key = board.key();
  const int before = counts_[key]++;
  keys_.push_back(key);
  rows_.push_back(board_row(board, before));
}

void GameLine::pop() {
  if (keys_.empty()) throw ChessError("pop from an empty GameLine");
  const std::uint64_t key = keys_.back();
  keys_.pop_back();
  rows_.pop_back();
  auto it = counts_.find(key);
  if (--it->second == 0) counts_.erase(it);
}

int GameLine::repetitions() const {
  if (keys_.empty()) return 0;
  return counts_.at(keys_.back()) - 1;
}

int GameLine::occurrences(std::uint64_t key) const {
  const auto it = counts_.find(key);
  return it == counts_.end() ? 0 : it->second;
}

void GameLine::snapshot(Row* out8) const {
  if (keys_.empty()) throw ChessError("an empty GameLine has no current position");
  const int n = size();
  for (int step = 0; step < HISTORY_STEPS; ++step) {
    const int index = n - 1 - step;
    out8[step] = index >= 0 ? rows_[index] : Row{};
  }
}

}  // namespace zc
