// zerochess native core: legal move generation and move predicates of Board
// (see board.h).  Legal moves are generated with a check mask and pin lines,
// en passant and king moves by testing the resulting occupancy.  Python
// reference: python-chess (chess.Board.generate_legal_moves, gives_check).
#include "board.h"

#include <cstdlib>

#include "bitboard.h"

namespace zc {

using namespace bitboard;

// ---------------------------------------------------------------------------
// Legal moves.

namespace {

inline void add_pawn_moves(MoveList& out, int from, Bitboard targets, bool promotes) {
  while (targets) {
    int to = lsb(targets);
    targets &= targets - 1;
    if (promotes) {
      out.push_back(Move(from, to, QUEEN));
      out.push_back(Move(from, to, ROOK));
      out.push_back(Move(from, to, BISHOP));
      out.push_back(Move(from, to, KNIGHT));
    } else {
      out.push_back(Move(from, to));
    }
  }
}

inline void add_moves(MoveList& out, int from, Bitboard targets) {
  while (targets) {
    out.push_back(Move(from, lsb(targets)));
    targets &= targets - 1;
  }
}

// En passant captures: python-chess's pseudo-legal conditions (ep square set
// and empty, a capturer on the fifth rank), then the king must not be
// attacked once the capturer and the captured pawn are gone (covers pins,
// checks and the horizontal skewer).  Appends to `out` when given, and
// returns how many there are.
int add_en_passant(const Board& board, int ksq, MoveList* out) {
  const int ep = board.ep_square();
  if (ep <= 0 || ep >= 64) return 0;
  const Color us = board.turn();
  const Color them = static_cast<Color>(us ^ 1);
  const Bitboard occ = board.occupied();
  if (occ & bit(ep)) return 0;
  Bitboard capturers = board.pieces(us, PAWN) & TABLES.pawn[them][ep] & (us == WHITE ? 0xFFull << 32 : 0xFFull << 24);
  if (!capturers) return 0;
  const int captured_sq = us == WHITE ? ep - 8 : ep + 8;
  const Bitboard captured_bb = bit(captured_sq) & board.pieces(them, PAWN);
  int count = 0;
  for (; capturers; capturers &= capturers - 1) {
    int s = lsb(capturers);
    if (ksq != NO_SQUARE) {
      Bitboard after = (occ ^ bit(s) ^ captured_bb) | bit(ep);
      if (board.attackers_mask(them, ksq, after) & ~captured_bb) continue;
    }
    ++count;
    if (out) out->push_back(Move(s, ep));
  }
  return count;
}

}  // namespace

void Board::legal_moves(MoveList& out) const {
  out.size = 0;
  const Color us = turn_;
  const Color them = static_cast<Color>(us ^ 1);
  const Bitboard ours = occupied_co_[us];
  const Bitboard theirs = occupied_co_[them];
  const Bitboard occ = ours | theirs;
  const int ksq = king(us);

  Bitboard checkers_bb = 0;
  Bitboard pinned = 0;
  if (ksq != NO_SQUARE) {
    checkers_bb = attackers_mask(them, ksq, occ);
    Bitboard snipers = (rook_attacks(ksq, theirs) & (pieces_[them][ROOK] | pieces_[them][QUEEN])) |
                       (bishop_attacks(ksq, theirs) & (pieces_[them][BISHOP] | pieces_[them][QUEEN]));
    while (snipers) {
      int s = lsb(snipers);
      snipers &= snipers - 1;
      Bitboard blockers = TABLES.between[ksq][s] & occ;
      if (blockers && !(blockers & (blockers - 1)) && (blockers & ours)) pinned |= blockers;
    }
  }

  // King moves (every king of ours: a valid position has one; the others of
  // an invalid one just move safely too).
  for (Bitboard kings = pieces_[us][KING]; kings; kings &= kings - 1) {
    int k = lsb(kings);
    Bitboard without_king = occ ^ bit(k);
    for (Bitboard targets = TABLES.king[k] & ~ours; targets; targets &= targets - 1) {
      int to = lsb(targets);
      if (!attackers_mask(them, to, without_king)) out.push_back(Move(k, to));
    }
  }
  const int n_checkers = popcount(checkers_bb);
  if (n_checkers >= 2) return;
  Bitboard allowed = ~ours;
  if (n_checkers == 1) {
    int c = lsb(checkers_bb);
    allowed &= TABLES.between[ksq][c] | bit(c);
  }

  // Knights (a pinned knight never moves).
  for (Bitboard b = pieces_[us][KNIGHT] & ~pinned; b; b &= b - 1) {
    int s = lsb(b);
    add_moves(out, s, TABLES.knight[s] & allowed);
  }
  // Sliders.
  for (Bitboard b = pieces_[us][BISHOP] | pieces_[us][QUEEN]; b; b &= b - 1) {
    int s = lsb(b);
    Bitboard targets = bishop_attacks(s, occ) & allowed;
    if (pinned & bit(s)) targets &= TABLES.line[ksq][s];
    add_moves(out, s, targets);
  }
  for (Bitboard b = pieces_[us][ROOK] | pieces_[us][QUEEN]; b; b &= b - 1) {
    int s = lsb(b);
    Bitboard targets = rook_attacks(s, occ) & allowed;
    if (pinned & bit(s)) targets &= TABLES.line[ksq][s];
    add_moves(out, s, targets);
  }
  // Pawns.
  const int up = us == WHITE ? 8 : -8;
  const int start_rank = us == WHITE ? 1 : 6;
  const int last_rank = us == WHITE ? 7 : 0;
  for (Bitboard b = pieces_[us][PAWN]; b; b &= b - 1) {
    int s = lsb(b);
    Bitboard targets = TABLES.pawn[us][s] & theirs;
    int one = s + up;
    if (one >= 0 && one < 64 && !(occ & bit(one))) {
      targets |= bit(one);
      int two = one + up;
      if (rank_of(s) == start_rank && !(occ & bit(two))) targets |= bit(two);
    }
    targets &= allowed;
    if (pinned & bit(s)) targets &= TABLES.line[ksq][s];
    add_pawn_moves(out, s, targets, rank_of(s) + (us == WHITE ? 1 : -1) == last_rank);
  }
  add_en_passant(*this, ksq, &out);
  // Castling (the king on e1/e8, the rook on its corner, python-chess's
  // empty and unattacked squares).
  if (n_checkers == 0) {
    const int home = us == WHITE ? E1 : E8;
    const Bitboard backrank = us == WHITE ? RANK_1 : RANK_8;
    if (pieces_[us][KING] & bit(home)) {
      for (Bitboard rooks = castling_ & backrank & pieces_[us][ROOK]; rooks; rooks &= rooks - 1) {
        int rook = lsb(rooks);
        if (rook != home - 4 && rook != home + 3) continue;
        bool a_side = rook < home;
        int king_to = a_side ? home - 2 : home + 2;
        int rook_to = a_side ? home - 1 : home + 1;
        Bitboard must_be_empty =
            TABLES.between[home][king_to] | TABLES.between[rook][rook_to] | bit(king_to) | bit(rook_to);
        if ((occ ^ bit(home) ^ bit(rook)) & must_be_empty) continue;
        Bitboard without_king = occ ^ bit(home);
        bool attacked = false;
        for (Bitboard path = TABLES.between[home][king_to] | bit(home); path && !attacked; path &= path - 1) {
          attacked = attackers_mask(them, lsb(path), without_king) != 0;
        }
        if (attacked) continue;
        if (attackers_mask(them, king_to, without_king ^ bit(rook) ^ bit(rook_to))) continue;
        out.push_back(Move(home, king_to));
      }
    }
  }
}

bool Board::is_legal(Move move) const {
  MoveList list;
  legal_moves(list);
  for (Move m : list) {
    if (m == move) return true;
  }
  return false;
}

bool Board::has_legal_en_passant() const { return add_en_passant(*this, king(turn_), nullptr) > 0; }

bool Board::is_capture(Move move) const {
  if (occupied_co_[turn_ ^ 1] & bit(move.to())) return true;
  int diff = std::abs(move.to() - move.from());
  return move.to() == ep_square_ && (pieces_[turn_][PAWN] & bit(move.from())) && (diff == 7 || diff == 9) &&
         !(occupied() & bit(move.to()));
}

bool Board::is_zeroing(Move move) const {
  return (pieces_[turn_][PAWN] & bit(move.from())) || (occupied_co_[turn_ ^ 1] & bit(move.to()));
}

bool Board::is_castling(Move move) const {
  if (!(pieces_[turn_][KING] & bit(move.from()))) return false;
  return std::abs(file_of(move.from()) - file_of(move.to())) > 1;
}

// The position after the move is described by its occupancy alone: the piece
// that arrives on `to` (and the rook of a castling move) is tested for a
// direct check, every other piece of the mover for a discovered one.  A
// non-slider that did not move attacks the same squares as before, and a
// slider that did not move can only reach the king now through a square the
// move emptied: before the move the opponent was not in check (see board.h),
// and the move only adds blockers elsewhere.  The emptied squares follow
// make(): the from-square, the captured pawn of an en passant capture, the
// rook's corner when castling.
bool Board::gives_check(Move move) const {
  const Color us = turn_;
  const int ksq = king(static_cast<Color>(us ^ 1));
  if (ksq == NO_SQUARE) return false;
  const int from = move.from(), to = move.to();
  const Bitboard from_bb = bit(from), to_bb = bit(to);
  const int piece = piece_on(us, from);
  if (piece == NO_PIECE) return false;  // make() would only pass the turn

  Bitboard occ = (occupied() & ~from_bb) | to_bb;
  Bitboard emptied = from_bb;
  int arriving = piece;
  int castled_rook = NO_SQUARE;  // the rook's square after castling
  if (piece == PAWN) {
    const int diff = to - from;
    if (to == ep_square_ && (diff == 7 || diff == 9 || diff == -7 || diff == -9) && !(occupied_co_[us ^ 1] & to_bb)) {
      const int captured_sq = us == WHITE ? to - 8 : to + 8;
      if (pieces_[us ^ 1][PAWN] & bit(captured_sq)) {
        occ &= ~bit(captured_sq);
        emptied |= bit(captured_sq);
      }
    }
    const int promotion = move.promotion();
    if (promotion >= KNIGHT && promotion <= QUEEN) arriving = promotion;
  } else if (piece == KING && std::abs(to - from) == 2 && rank_of(to) == rank_of(from)) {
    const int rook_from = to > from ? from + 3 : from - 4;
    const int rook_to = to > from ? from + 1 : from - 1;
    if (rook_from >= 0 && rook_from < 64 && (pieces_[us][ROOK] & bit(rook_from)) && !(occupied() & bit(rook_to))) {
      occ = (occ & ~bit(rook_from)) | bit(rook_to);
      emptied |= bit(rook_from);
      castled_rook = rook_to;
    }
  }

  // Direct check.  A slider on `s` reaches the king when the two are on one
  // line of its kind with nothing between them.
  const auto orthogonal = [ksq](int s) { return rank_of(s) == rank_of(ksq) || file_of(s) == file_of(ksq); };
  const auto clear = [ksq, occ](int s) { return TABLES.line[s][ksq] && !(TABLES.between[s][ksq] & occ); };
  switch (arriving) {
    case PAWN:
      if (TABLES.pawn[us][to] & bit(ksq)) return true;
      break;
    case KNIGHT:
      if (TABLES.knight[to] & bit(ksq)) return true;
      break;
    case BISHOP:
      if (!orthogonal(to) && clear(to)) return true;
      break;
    case ROOK:
      if (orthogonal(to) && clear(to)) return true;
      break;
    case QUEEN:
      if (clear(to)) return true;
      break;
    default:
      if (TABLES.king[to] & bit(ksq)) return true;
      break;
  }
  if (castled_rook != NO_SQUARE && orthogonal(castled_rook) && clear(castled_rook)) return true;

  // Discovered check: a slider of the line's kind beyond an emptied square,
  // with nothing left between it and the king.
  const Bitboard moved = emptied | to_bb;  // the arriving piece and the rook were tested above
  const Bitboard rooks = (pieces_[us][ROOK] | pieces_[us][QUEEN]) & ~moved;
  const Bitboard bishops = (pieces_[us][BISHOP] | pieces_[us][QUEEN]) & ~moved;
  for (Bitboard e = emptied; e; e &= e - 1) {
    const int square = lsb(e);
    const Bitboard line = TABLES.line[ksq][square];
    if (!line) continue;
    for (Bitboard s = line & (orthogonal(square) ? rooks : bishops); s; s &= s - 1) {
      const Bitboard path = TABLES.between[ksq][lsb(s)];
      if ((path & bit(square)) && !(path & occ)) return true;
    }
  }
  return false;
}

}  // namespace zc
