// zerochess native core: make and unmake of Board (see board.h), keeping the
// Zobrist key incrementally.  Python reference: python-chess (chess.Board.push
// and pop).
#include "board.h"

#include <climits>
#include <cstdlib>

#include "bitboard.h"

namespace zc {

using namespace bitboard;

// ---------------------------------------------------------------------------
// Make and unmake.

void Board::make(Move move, Undo& undo) {
  undo.castling = castling_;
  undo.castling_raw = castling_raw_;
  undo.ep_square = ep_square_;
  undo.halfmove_clock = halfmove_clock_;
  undo.key = base_key_;
  undo.special = 0;
  undo.captured = NO_PIECE;

  const Color us = turn_;
  const Color them = static_cast<Color>(us ^ 1);
  const int from = move.from(), to = move.to();
  const int piece = piece_on(us, from);
  if (piece == NO_PIECE) {  // not a move of ours: only flip the turn (never for legal moves)
    undo.special = 3;
    if (us == BLACK && fullmove_number_ < INT_MAX / 2) ++fullmove_number_;
    turn_ = them;
    base_key_ ^= TABLES.z_turn;
    ep_square_ = NO_SQUARE;
    return;
  }
  if (occupied_co_[them] & bit(to)) {
    for (int t = PAWN; t <= KING; ++t) {
      if (pieces_[them][t] & bit(to)) {
        undo.captured = t;
        remove(them, t, to);
        break;
      }
    }
  }
  if (occupied_co_[us] & bit(to)) {  // never for legal moves; keep the bitboards disjoint
    for (int t = PAWN; t <= KING; ++t) {
      if (pieces_[us][t] & bit(to)) remove(us, t, to);
    }
  }
  int new_ep = NO_SQUARE;
  if (piece == PAWN) {
    int diff = to - from;
    if (diff == 16 && rank_of(from) == 1) {
      new_ep = from + 8;
    } else if (diff == -16 && rank_of(from) == 6) {
      new_ep = from - 8;
    } else if (to == ep_square_ && (diff == 7 || diff == 9 || diff == -7 || diff == -9) && !undo.captured) {
      int captured_sq = us == WHITE ? to - 8 : to + 8;
      if (pieces_[them][PAWN] & bit(captured_sq)) {
        remove(them, PAWN, captured_sq);
        undo.captured = PAWN;
        undo.special = 1;
      }
    }
  }
  remove(us, piece, from);
  int promotion = move.promotion();
  put(us, (piece == PAWN && promotion >= KNIGHT && promotion <= QUEEN) ? promotion : piece, to);
  if (piece == KING && std::abs(to - from) == 2 && rank_of(to) == rank_of(from)) {
    int rook_from = to > from ? from + 3 : from - 4;
    int rook_to = to > from ? from + 1 : from - 1;
    if (rook_from >= 0 && rook_from < 64 && (pieces_[us][ROOK] & bit(rook_from)) && !(occupied() & bit(rook_to))) {
      remove(us, ROOK, rook_from);
      put(us, ROOK, rook_to);
      undo.special = 2;
    }
  }
  Bitboard cleared = bit(from) | bit(to);
  if (piece == KING) cleared |= us == WHITE ? RANK_1 : RANK_8;
  for (Bitboard lost = castling_ & cleared; lost; lost &= lost - 1) base_key_ ^= TABLES.z_castle[lsb(lost)];
  castling_ &= ~cleared;
  castling_raw_ &= ~cleared;

  if (piece == PAWN || undo.captured) {
    halfmove_clock_ = 0;
  } else if (halfmove_clock_ < INT_MAX / 2) {
    ++halfmove_clock_;
  }
  if (us == BLACK && fullmove_number_ < INT_MAX / 2) ++fullmove_number_;
  ep_square_ = new_ep;
  turn_ = them;
  base_key_ ^= TABLES.z_turn;
}

void Board::unmake(Move move, const Undo& undo) {
  const Color them = turn_;
  const Color us = static_cast<Color>(them ^ 1);
  turn_ = us;
  if (us == BLACK && fullmove_number_ > 1) --fullmove_number_;
  const int from = move.from(), to = move.to();
  const int moved = piece_on(us, to);
  if (moved != NO_PIECE && undo.special != 3) {
    int original = (move.promotion() >= KNIGHT && move.promotion() <= QUEEN && moved == move.promotion() &&
                    rank_of(to) == (us == WHITE ? 7 : 0) && rank_of(from) == (us == WHITE ? 6 : 1))
                       ? PAWN
                       : moved;
    remove(us, moved, to);
    put(us, original, from);
    if (undo.special == 2) {
      int rook_from = to > from ? from + 3 : from - 4;
      int rook_to = to > from ? from + 1 : from - 1;
      remove(us, ROOK, rook_to);
      put(us, ROOK, rook_from);
    }
    if (undo.captured) {
      if (undo.special == 1) {
        put(them, PAWN, us == WHITE ? to - 8 : to + 8);
      } else {
        put(them, undo.captured, to);
      }
    }
  }
  castling_ = undo.castling;
  castling_raw_ = undo.castling_raw;
  ep_square_ = undo.ep_square;
  halfmove_clock_ = undo.halfmove_clock;
  base_key_ = undo.key;
}

void Board::push_checked(Move move) {
  if (!is_legal(move)) throw ChessError("illegal move '" + move.uci() + "' in '" + fen() + "'");
  Undo undo;
  make(move, undo);
}

}  // namespace zc
