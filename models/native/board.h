// zerochess native core: the chess board (bitboards, legal moves, make/unmake).
// Python reference: python-chess (chess.Board, chess.Move).  Implemented in
// board.cpp (tables, pieces, attacks, keys, game end), movegen.cpp (legal
// moves, gives_check), make_unmake.cpp and fen.cpp (FEN, UCI, validity).
//
// Conventions follow python-chess so that the two can be compared move by move:
//   squares a1 = 0 .. h8 = 63 (rank = sq / 8, file = sq % 8);
//   piece types PAWN = 1 .. KING = 6 (0 = none), as chess.PAWN .. chess.KING;
//   colours WHITE = 0, BLACK = 1 (python-chess uses True for white: convert at
//   the binding);
//   a move is (from, to, promotion piece type or 0); castling is the king's
//   two-square move (e1g1), as python-chess's standard UCI.
//
// Position identity for repetitions is the transposition key of python-chess's
// Board._transposition_key(): pieces, side to move, clean castling rights and
// the en passant square only when an en passant capture is legal.  Here it is a
// 64-bit Zobrist key over exactly those facts.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace zc {

using Bitboard = std::uint64_t;
using Square = int;  // a1 = 0 .. h8 = 63, or NO_SQUARE

enum Color : int { WHITE = 0, BLACK = 1 };
enum PieceType : int { NO_PIECE = 0, PAWN = 1, KNIGHT = 2, BISHOP = 3, ROOK = 4, QUEEN = 5, KING = 6 };

constexpr Square NO_SQUARE = -1;

// Raised for a malformed FEN, an invalid position or an illegal move; the
// binding turns it into a Python ValueError subclass.  The message names the
// offending value.
class ChessError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A move packed in 16 bits: from (6) | to (6) << 6 | promotion (3) << 12.
struct Move {
  std::uint16_t bits = 0;

  Move() = default;
  constexpr Move(Square from, Square to, int promotion = NO_PIECE)
      : bits(static_cast<std::uint16_t>(from | (to << 6) | (promotion << 12))) {}
  constexpr Square from() const { return bits & 63; }
  constexpr Square to() const { return (bits >> 6) & 63; }
  constexpr int promotion() const { return bits >> 12; }
  constexpr bool operator==(Move other) const { return bits == other.bits; }
  constexpr bool operator!=(Move other) const { return bits != other.bits; }
  std::string uci() const;                        // "e2e4", "e7e8q"
  static Move from_uci(const std::string& text);  // syntax only; throws ChessError
};

// Enough for any legal chess position (the maximum known is 218).  Invalid
// positions python-chess still parses (say 20 queens a side) can have more:
// push_back then drops the extra moves instead of writing past the end.
struct MoveList {
  std::array<Move, 256> moves;
  int size = 0;
  void push_back(Move m) {
    if (size < static_cast<int>(moves.size())) moves[size++] = m;
  }
  const Move* begin() const { return moves.data(); }
  const Move* end() const { return moves.data() + size; }
  Move operator[](int i) const { return moves[i]; }
};

// What make() saves so that unmake() can restore the position exactly.
struct Undo {
  Bitboard castling;
  int ep_square;
  int halfmove_clock;
  int captured;  // piece type captured (0 none); en passant counts as PAWN
  std::uint64_t key;
  Bitboard castling_raw;  // the rights as given by the FEN (see Board::status)
  std::uint8_t special;   // 0 plain, 1 en passant capture, 2 castling (rook moved)
};

// Why a game is over (or NONE).  Mirrors chess.Termination's names used by
// the project (lower case in shards: "checkmate", "stalemate", ...).
enum class Termination : int {
  NONE = 0,
  CHECKMATE,
  STALEMATE,
  INSUFFICIENT_MATERIAL,
  FIFTY_MOVES,           // halfmove clock >= 100
  THREEFOLD_REPETITION,  // the position occurred twice before in the line
};
const char* termination_name(Termination t);  // "checkmate", ... ("" for NONE)

// The position.  Its state is private: only from_fen(), make() and unmake()
// change it, so that the incrementally kept Zobrist key always matches it.
class Board {
 public:
  static Board starting();
  // Parses a FEN (4 to 6 fields, like chess.Board(fen)); throws ChessError
  // naming the FEN and the bad field.  Does not check validity: see status().
  static Board from_fen(const std::string& fen);
  // FEN with the en passant square only when a capture is legal (python-chess's
  // default en_passant="legal").
  std::string fen() const;

  // Empty string when python-chess's Board.is_valid() would hold, else a short
  // reason ("no white king", "opposite check", ...).  Search entry points call
  // it and throw ChessError with the FEN and the reason.
  std::string status() const;

  // Pieces of one colour and type (`piece_type` PAWN .. KING; NO_PIECE gives 0).
  Bitboard pieces(Color color, int piece_type) const { return pieces_[color][piece_type]; }
  Bitboard occupied_co(Color color) const { return occupied_co_[color]; }
  Bitboard occupied() const { return occupied_co_[WHITE] | occupied_co_[BLACK]; }
  Bitboard by_type(int piece_type) const { return pieces_[WHITE][piece_type] | pieces_[BLACK][piece_type]; }
  Color turn() const { return turn_; }
  // Clean castling rights as python-chess keeps them: the bitboard of the
  // rooks (a1, h1, a8, h8) that may still castle.
  Bitboard castling() const { return castling_; }
  // Square skipped by the last double pawn push (set after every double push,
  // legal capture or not, as python-chess does), or NO_SQUARE.
  Square ep_square() const { return ep_square_; }
  int halfmove_clock() const { return halfmove_clock_; }
  int fullmove_number() const { return fullmove_number_; }

  int piece_type_at(Square square) const;  // 0 when empty
  int color_at(Square square) const;       // WHITE, BLACK or -1 when empty
  // The king's square (the highest of several in an invalid position) or NO_SQUARE.
  Square king(Color color) const {
    const Bitboard kings = pieces_[color][KING];
    return kings ? 63 - __builtin_clzll(kings) : NO_SQUARE;
  }
  // The type of `color`'s piece on `square` (a valid square), NO_PIECE when none.
  int piece_on(Color color, Square square) const {
    for (int t = PAWN; t <= KING; ++t) {
      if (pieces_[color][t] & (Bitboard(1) << square)) return t;
    }
    return NO_PIECE;
  }

  bool is_check() const;
  Bitboard checkers() const;
  bool is_attacked_by(Color attacker, Square square) const;
  // Pieces of `attacker` attacking `square` with sliders blocked by `occupied`
  // (python-chess's attackers_mask with an explicit occupancy).
  Bitboard attackers_mask(Color attacker, Square square, Bitboard occupied) const;

  // Legal moves in a fixed order (not python-chess's; compare as sets).
  void legal_moves(MoveList& out) const;
  bool is_legal(Move move) const;  // move from legal_moves (by from/to/promotion)
  bool has_legal_en_passant() const;
  bool is_zeroing(Move move) const;  // pawn move or capture
  bool is_capture(Move move) const;
  bool is_castling(Move move) const;
  // Whether `move` (a legal move) leaves the opponent in check, decided
  // without making it: a direct check by the piece arriving on the target
  // square (the promoted piece for a promotion, the rook for castling) or a
  // discovered check by a slider of the mover behind a square the move
  // empties (the from-square, and for en passant the captured pawn's square).
  // Equals make(move) then is_check() whenever the opponent is not in check
  // before the move, which holds in every valid position (status() reports
  // "opposite check" otherwise) and so in every position a search reaches.
  bool gives_check(Move move) const;

  // Make and unmake a legal move (no check here: callers pass legal moves;
  // push_checked() validates first and throws ChessError naming the move).
  void make(Move move, Undo& undo);
  void unmake(Move move, const Undo& undo);
  void push_checked(Move move);

  // Zobrist key of the transposition key (see the file comment); O(1), kept
  // incrementally by make/unmake except for the legal-ep term, added on read.
  std::uint64_t key() const;
  // The same key computed from scratch (tests compare the two).
  std::uint64_t compute_key() const;

  bool is_insufficient_material() const;              // python-chess semantics
  bool has_insufficient_material(Color color) const;  // python-chess semantics
  int ply() const { return 2 * (fullmove_number_ - 1) + (turn_ == BLACK ? 1 : 0); }

 private:
  // Piece bitboards by colour and type (index 0 unused), occupancy by colour.
  Bitboard pieces_[2][7] = {};
  Bitboard occupied_co_[2] = {};
  Color turn_ = WHITE;
  Bitboard castling_ = 0;
  Square ep_square_ = NO_SQUARE;
  int halfmove_clock_ = 0;
  int fullmove_number_ = 1;
  std::uint64_t base_key_ = 0;  // pieces, turn, castling (ep added in key())
  // Castling rights exactly as the FEN gave them (python-chess's raw
  // castling_rights, updated by make() like python-chess's push): status()
  // reports "bad castling rights" when they differ from the clean ones.
  Bitboard castling_raw_ = 0;
  // A king marked promoted ("K~") in the FEN: python-chess then ignores that
  // king; here status() reports the position as invalid instead.
  bool promoted_king_ = false;
  void put(Color color, int piece_type, Square square);
  void remove(Color color, int piece_type, Square square);
};

// Whether two boards hold the same position, counters, rights and keys (tests
// of make/unmake).
bool same_position(const Board& a, const Board& b);
// Makes and unmakes every legal move of `board`: after make the incremental
// key must equal compute_key(), after unmake the position must be restored
// exactly.  Returns the number of moves checked; ChessError on a mismatch.
int check_make_unmake(const Board& board);

// The legal move `uci` names in `board`; otherwise ChessError naming the move
// and where() (the position or the line; built only on error): "illegal move
// '<uci>' <where>", and for malformed text "invalid move '<uci>' <where>:
// <reason>" or, without `name_reason`, "invalid UCI move '<uci>' <where>".
template <typename Where>
Move legal_move(const Board& board, const std::string& uci, const Where& where, bool name_reason = true) {
  Move move;
  try {
    move = Move::from_uci(uci);
  } catch (const ChessError& error) {
    if (!name_reason) throw ChessError("invalid UCI move '" + uci + "' " + where());
    throw ChessError("invalid move '" + uci + "' " + where() + ": " + error.what());
  }
  if (!board.is_legal(move)) throw ChessError("illegal move '" + uci + "' " + where());
  return move;
}

// Perft: leaf nodes of the legal move tree to `depth` plies.
std::uint64_t perft(Board& board, int depth);

// Game-over test of a position given its legal move count and how many times
// it occurred before in the game line (repetitions): checkmate and stalemate
// first, then threefold (repetitions >= 2), the fifty-move rule (halfmove
// clock >= 100), insufficient material.  Same rules and order as
// models.search_config.terminal_value.
Termination terminal_reason(const Board& board, int legal_move_count, int repetitions);

}  // namespace zc
