// zerochess native core: the board's text (FEN in and out, UCI moves,
// termination names) and validity (see board.h).  Python reference:
// python-chess (chess.Board(fen), Board.fen(), Move.from_uci, Board.status()).
#include "board.h"

#include <string>
#include <vector>

#include "bitboard.h"

namespace zc {

using namespace bitboard;

namespace {

const char PIECE_CHARS[2][7] = {{'?', 'P', 'N', 'B', 'R', 'Q', 'K'}, {'?', 'p', 'n', 'b', 'r', 'q', 'k'}};
const char* const STARTING_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

std::string square_name(int square) {
  return std::string{static_cast<char>('a' + file_of(square)), static_cast<char>('1' + rank_of(square))};
}

// Python's str.split() whitespace within ASCII.
bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f'); }

std::vector<std::string> split_fields(const std::string& text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    std::size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

std::string printable_byte(unsigned char u) {
  static const char* const HEX = "0123456789abcdef";
  return std::string{'\\', 'x', HEX[u >> 4], HEX[u & 15]};
}

// Control characters written as \xNN so that a message never holds a NUL.
std::string printable(const std::string& text) {
  std::string out;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? printable_byte(u) : std::string(1, c);
  }
  return out;
}

[[noreturn]] void fen_error(const std::string& fen, const std::string& what) {
  throw ChessError("invalid FEN '" + printable(fen) + "': " + printable(what));
}

// Python's int() on ASCII text: optional sign, digits with single underscores
// between them.  Values beyond a billion are refused (no game gets there).
long long parse_int(const std::string& fen, const std::string& text, const char* field) {
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  if (i >= text.size()) fen_error(fen, std::string("bad ") + field + " '" + text + "'");
  long long value = 0;
  bool previous_digit = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
      if (value > 1000000000LL) fen_error(fen, std::string(field) + " out of range '" + text + "'");
      previous_digit = true;
    } else if (c == '_' && previous_digit && i + 1 < text.size()) {
      previous_digit = false;
    } else {
      fen_error(fen, std::string("bad ") + field + " '" + text + "'");
    }
  }
  if (!previous_digit) fen_error(fen, std::string("bad ") + field + " '" + text + "'");
  return negative ? -value : value;
}

bool valid_castling_field(const std::string& text) {
  if (text == "-") return true;
  std::size_t i = 0, upper = 0, lower = 0;
  while (i < text.size() && (text[i] == 'K' || text[i] == 'Q' || (text[i] >= 'A' && text[i] <= 'H'))) ++i, ++upper;
  while (i < text.size() && (text[i] == 'k' || text[i] == 'q' || (text[i] >= 'a' && text[i] <= 'h'))) ++i, ++lower;
  return i == text.size() && upper <= 2 && lower <= 2;
}

int piece_index(char c) {
  switch (c) {
    case 'p': return PAWN;
    case 'n': return KNIGHT;
    case 'b': return BISHOP;
    case 'r': return ROOK;
    case 'q': return QUEEN;
    case 'k': return KING;
    default: return NO_PIECE;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Moves and names.

std::string Move::uci() const {
  std::string out = square_name(from()) + square_name(to());
  if (promotion() >= PAWN && promotion() <= KING) out += PIECE_CHARS[BLACK][promotion()];
  return out;
}

Move Move::from_uci(const std::string& text) {
  auto bad = [&]() { return ChessError("invalid UCI move '" + printable(text) + "'"); };
  if (text.size() != 4 && text.size() != 5) throw bad();
  for (int i = 0; i < 4; i += 2) {
    if (text[i] < 'a' || text[i] > 'h' || text[i + 1] < '1' || text[i + 1] > '8') throw bad();
  }
  int from = (text[0] - 'a') + 8 * (text[1] - '1');
  int to = (text[2] - 'a') + 8 * (text[3] - '1');
  int promotion = NO_PIECE;
  if (text.size() == 5) {
    promotion = piece_index(text[4]);
    if (promotion < KNIGHT || promotion > QUEEN) throw bad();
  }
  if (from == to) throw bad();
  return Move(from, to, promotion);
}

// ---------------------------------------------------------------------------
// FEN.

Board Board::starting() { return from_fen(STARTING_FEN); }

Board Board::from_fen(const std::string& fen) {
  std::vector<std::string> parts = split_fields(fen);
  if (parts.empty()) fen_error(fen, "empty");
  if (parts.size() > 6) fen_error(fen, "more than 6 fields");
  Board b;
  // Side to move.
  if (parts.size() > 1) {
    if (parts[1] == "w") {
      b.turn_ = WHITE;
    } else if (parts[1] == "b") {
      b.turn_ = BLACK;
    } else {
      fen_error(fen, "side to move '" + parts[1] + "' is not 'w' or 'b'");
    }
  }
  const std::string castling_part = parts.size() > 2 ? parts[2] : "-";
  if (!valid_castling_field(castling_part)) fen_error(fen, "bad castling field '" + castling_part + "'");
  int ep = NO_SQUARE;
  if (parts.size() > 3 && parts[3] != "-") {
    const std::string& e = parts[3];
    if (e.size() != 2 || e[0] < 'a' || e[0] > 'h' || e[1] < '1' || e[1] > '8') {
      fen_error(fen, "bad en passant field '" + e + "'");
    }
    ep = (e[0] - 'a') + 8 * (e[1] - '1');
  }
  if (parts.size() > 4) {
    long long h = parse_int(fen, parts[4], "halfmove clock");
    if (h < 0) fen_error(fen, "negative halfmove clock '" + parts[4] + "'");
    b.halfmove_clock_ = static_cast<int>(h);
  }
  if (parts.size() > 5) {
    long long f = parse_int(fen, parts[5], "fullmove number");
    if (f < 0) fen_error(fen, "negative fullmove number '" + parts[5] + "'");
    b.fullmove_number_ = f < 1 ? 1 : static_cast<int>(f);
  }
  // Board: 8 rows of 8 columns, rank 8 first; '~' marks a promoted piece.
  const std::string& placement = parts[0];
  int rank = 7, file = 0, rows = 1;
  bool previous_digit = false, previous_piece = false;
  int previous_type = NO_PIECE;
  for (char c : placement) {
    if (c == '/') {
      if (file != 8) fen_error(fen, "a row does not have 8 columns");
      if (++rows > 8) fen_error(fen, "more than 8 rows");
      --rank;
      file = 0;
      previous_digit = previous_piece = false;
    } else if (c >= '1' && c <= '8') {
      if (previous_digit) fen_error(fen, "two digits in a row");
      file += c - '0';
      if (file > 8) fen_error(fen, "a row has more than 8 columns");
      previous_digit = true;
      previous_piece = false;
    } else if (c == '~') {
      if (!previous_piece) fen_error(fen, "'~' not after a piece");
      if (previous_type == KING) b.promoted_king_ = true;
      previous_digit = previous_piece = false;
    } else {
      bool white = c >= 'A' && c <= 'Z';
      int type = piece_index(white ? static_cast<char>(c - 'A' + 'a') : c);
      if (type == NO_PIECE) {
        unsigned char u = static_cast<unsigned char>(c);
        std::string shown = u < 0x80 ? std::string(1, c) : printable_byte(u);
        fen_error(fen, "bad character '" + shown + "' in the board");
      }
      if (file >= 8) fen_error(fen, "a row has more than 8 columns");
      int square = rank * 8 + file;
      b.put(white ? WHITE : BLACK, type, square);
      previous_type = type;
      ++file;
      previous_digit = false;
      previous_piece = true;
    }
  }
  if (rows != 8) fen_error(fen, "expected 8 rows");
  if (file != 8) fen_error(fen, "a row does not have 8 columns");
  if (b.turn_ == BLACK) b.base_key_ ^= TABLES.z_turn;

  // Castling rights as python-chess's set_castling_fen() reads them.
  Bitboard raw = 0;
  if (castling_part != "-") {
    for (char flag : castling_part) {
      Color color = (flag >= 'A' && flag <= 'Z') ? WHITE : BLACK;
      char lower = color == WHITE ? static_cast<char>(flag - 'A' + 'a') : flag;
      Bitboard backrank = color == WHITE ? RANK_1 : RANK_8;
      Bitboard rooks = b.pieces_[color][ROOK] & backrank;
      int king_sq = b.king(color);
      if (lower == 'q') {
        if (king_sq != NO_SQUARE && (rooks ? lsb(rooks) : -1) < king_sq) {
          raw |= rooks & (~rooks + 1);
        } else {
          raw |= FILE_A & backrank;
        }
      } else if (lower == 'k') {
        int rook = rooks ? msb(rooks) : -1;
        if (king_sq != NO_SQUARE && king_sq < rook) {
          raw |= bit(rook);
        } else {
          raw |= FILE_H & backrank;
        }
      } else {
        raw |= (FILE_A << (lower - 'a')) & backrank;
      }
    }
  }
  b.castling_raw_ = raw;
  // Clean rights: rooks of the right colour on their corners, king on e1/e8.
  Bitboard white = raw & b.pieces_[WHITE][ROOK] & (bit(A1) | bit(H1));
  Bitboard black = raw & b.pieces_[BLACK][ROOK] & (bit(A8) | bit(H8));
  if (!(b.pieces_[WHITE][KING] & bit(E1))) white = 0;
  if (!(b.pieces_[BLACK][KING] & bit(E8))) black = 0;
  b.castling_ = white | black;
  for (Bitboard c = b.castling_; c; c &= c - 1) b.base_key_ ^= TABLES.z_castle[lsb(c)];
  b.ep_square_ = ep;
  return b;
}

std::string Board::fen() const {
  std::string out;
  for (int rank = 7; rank >= 0; --rank) {
    int empty = 0;
    for (int file = 0; file < 8; ++file) {
      int sq = rank * 8 + file;
      int type = piece_type_at(sq);
      if (type == NO_PIECE) {
        ++empty;
        continue;
      }
      if (empty) out += static_cast<char>('0' + empty);
      empty = 0;
      out += PIECE_CHARS[color_at(sq)][type];
    }
    if (empty) out += static_cast<char>('0' + empty);
    if (rank) out += '/';
  }
  out += turn_ == WHITE ? " w " : " b ";
  std::string rights;
  if (castling_ & bit(H1)) rights += 'K';
  if (castling_ & bit(A1)) rights += 'Q';
  if (castling_ & bit(H8)) rights += 'k';
  if (castling_ & bit(A8)) rights += 'q';
  out += rights.empty() ? "-" : rights;
  out += ' ';
  out += has_legal_en_passant() ? square_name(ep_square_) : "-";
  out += ' ' + std::to_string(halfmove_clock_) + ' ' + std::to_string(fullmove_number_);
  return out;
}

// ---------------------------------------------------------------------------
// Validity (python-chess's Board.status()).

std::string Board::status() const {
  std::vector<std::string> errors;
  const Bitboard occ = occupied();
  const Bitboard kings = by_type(KING);
  if (!occ) errors.push_back("empty board");
  if (!pieces_[WHITE][KING]) errors.push_back("no white king");
  if (!pieces_[BLACK][KING]) errors.push_back("no black king");
  if (popcount(kings) > 2) errors.push_back("too many kings");
  if (promoted_king_) errors.push_back("promoted king");
  if (popcount(occupied_co_[WHITE]) > 16) errors.push_back("too many white pieces");
  if (popcount(occupied_co_[BLACK]) > 16) errors.push_back("too many black pieces");
  if (popcount(pieces_[WHITE][PAWN]) > 8) errors.push_back("too many white pawns");
  if (popcount(pieces_[BLACK][PAWN]) > 8) errors.push_back("too many black pawns");
  if (by_type(PAWN) & BACKRANKS) errors.push_back("pawns on the back rank");
  if (castling_raw_ != castling_) errors.push_back("bad castling rights");

  // python-chess's _valid_ep_square().
  int valid_ep = NO_SQUARE;
  if (ep_square_ > 0 && ep_square_ < 64) {
    const Color them = static_cast<Color>(turn_ ^ 1);
    const int ep_rank = turn_ == WHITE ? 5 : 2;
    const int pawn_sq = turn_ == WHITE ? ep_square_ - 8 : ep_square_ + 8;
    const int seventh_sq = turn_ == WHITE ? ep_square_ + 8 : ep_square_ - 8;
    if (rank_of(ep_square_) == ep_rank && (pieces_[them][PAWN] & bit(pawn_sq)) && !(occ & bit(ep_square_)) &&
        !(occ & bit(seventh_sq))) {
      valid_ep = ep_square_;
    }
  }
  if (ep_square_ != valid_ep) errors.push_back("invalid en passant square");

  const int their_king = king(static_cast<Color>(turn_ ^ 1));
  if (their_king != NO_SQUARE && is_attacked_by(turn_, their_king)) errors.push_back("opposite check");

  const Bitboard checkers_bb = checkers();
  const Bitboard our_kings = pieces_[turn_][KING];
  if (checkers_bb) {
    const int n = popcount(checkers_bb);
    if (n > 2) errors.push_back("too many checkers");
    bool impossible = false;
    if (valid_ep != NO_SQUARE) {
      const int pushed_to = valid_ep ^ 8;
      const int pushed_from = valid_ep ^ 24;
      const Bitboard before = (occ & ~bit(pushed_to)) | bit(pushed_from);
      if (n > 1) {
        impossible = true;
      } else if (msb(checkers_bb) != pushed_to) {
        for (Bitboard k = our_kings; k && !impossible; k &= k - 1) {
          impossible = attackers_mask(static_cast<Color>(turn_ ^ 1), lsb(k), before) != 0;
        }
      }
    } else {
      impossible = n > 2 || (n == 2 && (TABLES.line[lsb(checkers_bb)][msb(checkers_bb)] & our_kings));
    }
    if (impossible) errors.push_back("impossible check");
  }
  std::string out;
  for (const std::string& e : errors) {
    if (!out.empty()) out += ", ";
    out += e;
  }
  return out;
}

}  // namespace zc
