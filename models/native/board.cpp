// zerochess native core: the chess board (see board.h): the tables, pieces,
// attacks, keys, insufficient material, perft and game end.  The rest of
// Board lives in movegen.cpp (legal moves, gives_check), make_unmake.cpp and
// fen.cpp (FEN, UCI, validity).  Python reference: python-chess (chess.Board).
#include "board.h"

#include <cstdint>

#include "bitboard.h"

namespace zc {

using namespace bitboard;

namespace bitboard {

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Bitboard step_set(int square, const int (*deltas)[2], int count) {
  Bitboard out = 0;
  for (int i = 0; i < count; ++i) {
    int f = file_of(square) + deltas[i][0];
    int r = rank_of(square) + deltas[i][1];
    if (f >= 0 && f < 8 && r >= 0 && r < 8) out |= bit(r * 8 + f);
  }
  return out;
}

Tables build_tables() {
  Tables t{};
  static const int knight_d[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2}, {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
  static const int king_d[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
  static const int white_pawn_d[2][2] = {{-1, 1}, {1, 1}};
  static const int black_pawn_d[2][2] = {{-1, -1}, {1, -1}};
  for (int sq = 0; sq < 64; ++sq) {
    t.knight[sq] = step_set(sq, knight_d, 8);
    t.king[sq] = step_set(sq, king_d, 8);
    t.pawn[WHITE][sq] = step_set(sq, white_pawn_d, 2);
    t.pawn[BLACK][sq] = step_set(sq, black_pawn_d, 2);
    for (int d = 0; d < 8; ++d) {
      Bitboard r = 0;
      int f = file_of(sq) + DIR_FILE[d], k = rank_of(sq) + DIR_RANK[d];
      while (f >= 0 && f < 8 && k >= 0 && k < 8) {
        r |= bit(k * 8 + f);
        f += DIR_FILE[d];
        k += DIR_RANK[d];
      }
      t.ray[d][sq] = r;
    }
  }
  for (int a = 0; a < 64; ++a) {
    for (int d = 0; d < 8; ++d) {
      Bitboard full = t.ray[d][a] | t.ray[OPPOSITE[d]][a] | bit(a);
      Bitboard passed = 0;
      int f = file_of(a) + DIR_FILE[d], k = rank_of(a) + DIR_RANK[d];
      while (f >= 0 && f < 8 && k >= 0 && k < 8) {
        int b = k * 8 + f;
        t.between[a][b] = passed;
        t.line[a][b] = full;
        passed |= bit(b);
        f += DIR_FILE[d];
        k += DIR_RANK[d];
      }
    }
  }
  std::uint64_t state = 0x7A65726F63686573ull;  // "zeroches": fixed seed
  for (auto& colour : t.z_piece)
    for (auto& type : colour)
      for (auto& key : type) key = splitmix64(state);
  t.z_turn = splitmix64(state);
  for (auto& key : t.z_castle) key = splitmix64(state);
  for (auto& key : t.z_ep) key = splitmix64(state);
  return t;
}

}  // namespace

const Tables TABLES = build_tables();

}  // namespace bitboard

const char* termination_name(Termination t) {
  switch (t) {
    case Termination::CHECKMATE: return "checkmate";
    case Termination::STALEMATE: return "stalemate";
    case Termination::INSUFFICIENT_MATERIAL: return "insufficient_material";
    case Termination::FIFTY_MOVES: return "fifty_moves";
    case Termination::THREEFOLD_REPETITION: return "threefold_repetition";
    case Termination::NONE: break;
  }
  return "";
}

// ---------------------------------------------------------------------------
// Pieces.

void Board::put(Color color, int piece_type, int square) {
  pieces_[color][piece_type] |= bit(square);
  occupied_co_[color] |= bit(square);
  base_key_ ^= TABLES.z_piece[color][piece_type][square];
}

void Board::remove(Color color, int piece_type, int square) {
  pieces_[color][piece_type] &= ~bit(square);
  occupied_co_[color] &= ~bit(square);
  base_key_ ^= TABLES.z_piece[color][piece_type][square];
}

int Board::piece_type_at(int square) const {
  if (square < 0 || square > 63) return NO_PIECE;
  Bitboard b = bit(square);
  if (!(occupied() & b)) return NO_PIECE;
  for (int t = PAWN; t <= KING; ++t) {
    if (by_type(t) & b) return t;
  }
  return NO_PIECE;
}

int Board::color_at(int square) const {
  if (square < 0 || square > 63) return -1;
  if (occupied_co_[WHITE] & bit(square)) return WHITE;
  if (occupied_co_[BLACK] & bit(square)) return BLACK;
  return -1;
}

// ---------------------------------------------------------------------------
// Attacks.

Bitboard Board::attackers_mask(Color attacker, int square, Bitboard occ) const {
  const Bitboard* p = pieces_[attacker];
  Bitboard rooks_queens = p[ROOK] | p[QUEEN];
  Bitboard bishops_queens = p[BISHOP] | p[QUEEN];
  Bitboard out = (TABLES.king[square] & p[KING]) | (TABLES.knight[square] & p[KNIGHT]) |
                 (TABLES.pawn[attacker ^ 1][square] & p[PAWN]);
  if (rooks_queens) out |= rook_attacks(square, occ) & rooks_queens;
  if (bishops_queens) out |= bishop_attacks(square, occ) & bishops_queens;
  return out;
}

bool Board::is_attacked_by(Color attacker, int square) const {
  return attackers_mask(attacker, square, occupied()) != 0;
}

Bitboard Board::checkers() const {
  int k = king(turn_);
  return k == NO_SQUARE ? 0 : attackers_mask(static_cast<Color>(turn_ ^ 1), k, occupied());
}

bool Board::is_check() const { return checkers() != 0; }

// ---------------------------------------------------------------------------
// Keys.

std::uint64_t Board::key() const { return has_legal_en_passant() ? base_key_ ^ TABLES.z_ep[ep_square_] : base_key_; }

std::uint64_t Board::compute_key() const {
  std::uint64_t k = 0;
  for (int c = WHITE; c <= BLACK; ++c) {
    for (int t = PAWN; t <= KING; ++t) {
      for (Bitboard b = pieces_[c][t]; b; b &= b - 1) k ^= TABLES.z_piece[c][t][lsb(b)];
    }
  }
  if (turn_ == BLACK) k ^= TABLES.z_turn;
  for (Bitboard b = castling_; b; b &= b - 1) k ^= TABLES.z_castle[lsb(b)];
  if (has_legal_en_passant()) k ^= TABLES.z_ep[ep_square_];
  return k;
}

// ---------------------------------------------------------------------------
// Insufficient material (python-chess's rules).

bool Board::has_insufficient_material(Color color) const {
  const Color other = static_cast<Color>(color ^ 1);
  const Bitboard own = occupied_co_[color];
  if (pieces_[color][PAWN] | pieces_[color][ROOK] | pieces_[color][QUEEN]) return false;
  if (pieces_[color][KNIGHT]) {
    return popcount(own) <= 2 && !(occupied_co_[other] & ~by_type(KING) & ~by_type(QUEEN));
  }
  if (pieces_[color][BISHOP]) {
    const Bitboard bishops = by_type(BISHOP);
    const bool same_colour = !(bishops & DARK_SQUARES) || !(bishops & LIGHT_SQUARES);
    return same_colour && !by_type(PAWN) && !by_type(KNIGHT);
  }
  return true;
}

bool Board::is_insufficient_material() const {
  return has_insufficient_material(WHITE) && has_insufficient_material(BLACK);
}

// ---------------------------------------------------------------------------
// Perft and game end.

namespace {

std::uint64_t perft_inner(Board& board, int depth) {
  MoveList moves;
  board.legal_moves(moves);
  if (depth == 1) return static_cast<std::uint64_t>(moves.size);
  std::uint64_t nodes = 0;
  Undo undo;
  for (Move m : moves) {
    board.make(m, undo);
    nodes += perft_inner(board, depth - 1);
    board.unmake(m, undo);
  }
  return nodes;
}

}  // namespace

std::uint64_t perft(Board& board, int depth) {
  if (depth < 0) throw ChessError("perft depth must be >= 0, got " + std::to_string(depth));
  if (depth == 0) return 1;
  return perft_inner(board, depth);
}

Termination terminal_reason(const Board& board, int legal_move_count, int repetitions) {
  if (legal_move_count == 0) return board.is_check() ? Termination::CHECKMATE : Termination::STALEMATE;
  if (repetitions >= 2) return Termination::THREEFOLD_REPETITION;
  if (board.halfmove_clock() >= 100) return Termination::FIFTY_MOVES;
  if (board.is_insufficient_material()) return Termination::INSUFFICIENT_MATERIAL;
  return Termination::NONE;
}

// ---------------------------------------------------------------------------
// Test hooks.

bool same_position(const Board& a, const Board& b) {
  for (Color c : {WHITE, BLACK}) {
    if (a.occupied_co(c) != b.occupied_co(c)) return false;
    for (int t = NO_PIECE; t <= KING; ++t) {
      if (a.pieces(c, t) != b.pieces(c, t)) return false;
    }
  }
  return a.turn() == b.turn() && a.castling() == b.castling() && a.ep_square() == b.ep_square() &&
         a.halfmove_clock() == b.halfmove_clock() && a.fullmove_number() == b.fullmove_number() && a.key() == b.key() &&
         a.compute_key() == b.compute_key() && a.status() == b.status();
}

int check_make_unmake(const Board& board) {
  Board work = board;
  MoveList moves;
  work.legal_moves(moves);
  for (Move m : moves) {
    Undo undo;
    work.make(m, undo);
    if (work.key() != work.compute_key()) {
      throw ChessError("incremental key differs from compute_key after '" + m.uci() + "' in '" + board.fen() + "'");
    }
    work.unmake(m, undo);
    if (!same_position(work, board)) {
      throw ChessError("unmake of '" + m.uci() + "' did not restore '" + board.fen() + "' (got '" + work.fen() + "')");
    }
  }
  return moves.size;
}

}  // namespace zc
