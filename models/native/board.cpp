// zerochess native core: the chess board (see board.h).
//
// Sliding attacks use precomputed rays with a blocker scan: for a ray going up
// the board the first blocker is the lowest set bit of (ray & occupied), for a
// ray going down the highest; the attack set is the ray minus the same ray
// from the blocker on.  Legal moves are generated with a check mask and pin
// lines, en passant and king moves by testing the resulting occupancy.
#include "board.h"

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

namespace zc {

namespace {

inline int lsb(Bitboard b) { return __builtin_ctzll(b); }
inline int msb(Bitboard b) { return 63 - __builtin_clzll(b); }
inline int popcount(Bitboard b) { return __builtin_popcountll(b); }
inline Bitboard bit(int square) { return Bitboard(1) << square; }
inline int rank_of(int square) { return square >> 3; }
inline int file_of(int square) { return square & 7; }

constexpr Bitboard RANK_1 = 0xFFull;
constexpr Bitboard RANK_8 = 0xFFull << 56;
constexpr Bitboard BACKRANKS = RANK_1 | RANK_8;
constexpr Bitboard FILE_A = 0x0101010101010101ull;
constexpr Bitboard FILE_H = FILE_A << 7;
constexpr Bitboard LIGHT_SQUARES = 0x55AA55AA55AA55AAull;
constexpr Bitboard DARK_SQUARES = ~LIGHT_SQUARES;
constexpr int A1 = 0, E1 = 4, H1 = 7, A8 = 56, E8 = 60, H8 = 63;

// Directions: 0..3 go up the board (north, east, north-east, north-west),
// 4..7 go down (south, west, south-east, south-west).
constexpr int DIR_FILE[8] = {0, 1, 1, -1, 0, -1, 1, -1};
constexpr int DIR_RANK[8] = {1, 0, 1, 1, -1, 0, -1, -1};
enum Dir { N = 0, E = 1, NE = 2, NW = 3, S = 4, W = 5, SE = 6, SW = 7 };
constexpr int OPPOSITE[8] = {S, W, SW, SE, N, E, NW, NE};

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Tables {
  Bitboard knight[64];
  Bitboard king[64];
  Bitboard pawn[2][64];  // squares a pawn of that colour attacks from the square
  Bitboard ray[8][64];
  Bitboard between[64][64];  // strictly between two aligned squares, else 0
  Bitboard line[64][64];     // the whole line through two aligned squares, else 0
  std::uint64_t z_piece[2][7][64];
  std::uint64_t z_turn;
  std::uint64_t z_castle[64];
  std::uint64_t z_ep[64];
};

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

const Tables T = build_tables();

inline Bitboard ray_up(int dir, int sq, Bitboard occ) {
  Bitboard attacks = T.ray[dir][sq];
  Bitboard blockers = attacks & occ;
  if (blockers) attacks ^= T.ray[dir][lsb(blockers)];
  return attacks;
}

inline Bitboard ray_down(int dir, int sq, Bitboard occ) {
  Bitboard attacks = T.ray[dir][sq];
  Bitboard blockers = attacks & occ;
  if (blockers) attacks ^= T.ray[dir][msb(blockers)];
  return attacks;
}

inline Bitboard rook_attacks(int sq, Bitboard occ) {
  return ray_up(N, sq, occ) | ray_up(E, sq, occ) | ray_down(S, sq, occ) | ray_down(W, sq, occ);
}

inline Bitboard bishop_attacks(int sq, Bitboard occ) {
  return ray_up(NE, sq, occ) | ray_up(NW, sq, occ) | ray_down(SE, sq, occ) | ray_down(SW, sq, occ);
}

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
  pieces[color][piece_type] |= bit(square);
  occupied_co[color] |= bit(square);
  base_key_ ^= T.z_piece[color][piece_type][square];
}

void Board::remove(Color color, int piece_type, int square) {
  pieces[color][piece_type] &= ~bit(square);
  occupied_co[color] &= ~bit(square);
  base_key_ ^= T.z_piece[color][piece_type][square];
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
  if (occupied_co[WHITE] & bit(square)) return WHITE;
  if (occupied_co[BLACK] & bit(square)) return BLACK;
  return -1;
}

int Board::king(Color color) const {
  Bitboard kings = pieces[color][KING];
  return kings ? msb(kings) : NO_SQUARE;
}

// ---------------------------------------------------------------------------
// Attacks.

Bitboard Board::attackers_mask(Color attacker, int square, Bitboard occ) const {
  const Bitboard* p = pieces[attacker];
  Bitboard rooks_queens = p[ROOK] | p[QUEEN];
  Bitboard bishops_queens = p[BISHOP] | p[QUEEN];
  Bitboard out = (T.king[square] & p[KING]) | (T.knight[square] & p[KNIGHT]) |
                 (T.pawn[attacker ^ 1][square] & p[PAWN]);
  if (rooks_queens) out |= rook_attacks(square, occ) & rooks_queens;
  if (bishops_queens) out |= bishop_attacks(square, occ) & bishops_queens;
  return out;
}

bool Board::is_attacked_by(Color attacker, int square) const {
  return attackers_mask(attacker, square, occupied()) != 0;
}

Bitboard Board::checkers() const {
  int k = king(turn);
  return k == NO_SQUARE ? 0 : attackers_mask(static_cast<Color>(turn ^ 1), k, occupied());
}

bool Board::is_check() const { return checkers() != 0; }

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
  const int ep = board.ep_square;
  if (ep <= 0 || ep >= 64) return 0;
  const Color us = board.turn;
  const Color them = static_cast<Color>(us ^ 1);
  const Bitboard occ = board.occupied();
  if (occ & bit(ep)) return 0;
  Bitboard capturers = board.pieces[us][PAWN] & T.pawn[them][ep] & (us == WHITE ? 0xFFull << 32 : 0xFFull << 24);
  if (!capturers) return 0;
  const int captured_sq = us == WHITE ? ep - 8 : ep + 8;
  const Bitboard captured_bb = bit(captured_sq) & board.pieces[them][PAWN];
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
  const Color us = turn;
  const Color them = static_cast<Color>(us ^ 1);
  const Bitboard ours = occupied_co[us];
  const Bitboard theirs = occupied_co[them];
  const Bitboard occ = ours | theirs;
  const int ksq = king(us);

  Bitboard checkers_bb = 0;
  Bitboard pinned = 0;
  if (ksq != NO_SQUARE) {
    checkers_bb = attackers_mask(them, ksq, occ);
    Bitboard snipers = (rook_attacks(ksq, theirs) & (pieces[them][ROOK] | pieces[them][QUEEN])) |
                       (bishop_attacks(ksq, theirs) & (pieces[them][BISHOP] | pieces[them][QUEEN]));
    while (snipers) {
      int s = lsb(snipers);
      snipers &= snipers - 1;
      Bitboard blockers = T.between[ksq][s] & occ;
      if (blockers && !(blockers & (blockers - 1)) && (blockers & ours)) pinned |= blockers;
    }
  }

  // King moves (every king of ours: a valid position has one; the others of
  // an invalid one just move safely too).
  for (Bitboard kings = pieces[us][KING]; kings; kings &= kings - 1) {
    int k = lsb(kings);
    Bitboard without_king = occ ^ bit(k);
    for (Bitboard targets = T.king[k] & ~ours; targets; targets &= targets - 1) {
      int to = lsb(targets);
      if (!attackers_mask(them, to, without_king)) out.push_back(Move(k, to));
    }
  }
  const int n_checkers = popcount(checkers_bb);
  if (n_checkers >= 2) return;
  Bitboard allowed = ~ours;
  if (n_checkers == 1) {
    int c = lsb(checkers_bb);
    allowed &= T.between[ksq][c] | bit(c);
  }

  // Knights (a pinned knight never moves).
  for (Bitboard b = pieces[us][KNIGHT] & ~pinned; b; b &= b - 1) {
    int s = lsb(b);
    add_moves(out, s, T.knight[s] & allowed);
  }
  // Sliders.
  for (Bitboard b = pieces[us][BISHOP] | pieces[us][QUEEN]; b; b &= b - 1) {
    int s = lsb(b);
    Bitboard targets = bishop_attacks(s, occ) & allowed;
    if (pinned & bit(s)) targets &= T.line[ksq][s];
    add_moves(out, s, targets);
  }
  for (Bitboard b = pieces[us][ROOK] | pieces[us][QUEEN]; b; b &= b - 1) {
    int s = lsb(b);
    Bitboard targets = rook_attacks(s, occ) & allowed;
    if (pinned & bit(s)) targets &= T.line[ksq][s];
    add_moves(out, s, targets);
  }
  // Pawns.
  const int up = us == WHITE ? 8 : -8;
  const int start_rank = us == WHITE ? 1 : 6;
  const int last_rank = us == WHITE ? 7 : 0;
  for (Bitboard b = pieces[us][PAWN]; b; b &= b - 1) {
    int s = lsb(b);
    Bitboard targets = T.pawn[us][s] & theirs;
    int one = s + up;
    if (one >= 0 && one < 64 && !(occ & bit(one))) {
      targets |= bit(one);
      int two = one + up;
      if (rank_of(s) == start_rank && !(occ & bit(two))) targets |= bit(two);
    }
    targets &= allowed;
    if (pinned & bit(s)) targets &= T.line[ksq][s];
    add_pawn_moves(out, s, targets, rank_of(s) + (us == WHITE ? 1 : -1) == last_rank);
  }
  add_en_passant(*this, ksq, &out);
  // Castling (the king on e1/e8, the rook on its corner, python-chess's
  // empty and unattacked squares).
  if (n_checkers == 0) {
    const int home = us == WHITE ? E1 : E8;
    const Bitboard backrank = us == WHITE ? RANK_1 : RANK_8;
    if (pieces[us][KING] & bit(home)) {
      for (Bitboard rooks = castling & backrank & pieces[us][ROOK]; rooks; rooks &= rooks - 1) {
        int rook = lsb(rooks);
        if (rook != home - 4 && rook != home + 3) continue;
        bool a_side = rook < home;
        int king_to = a_side ? home - 2 : home + 2;
        int rook_to = a_side ? home - 1 : home + 1;
        Bitboard must_be_empty = T.between[home][king_to] | T.between[rook][rook_to] | bit(king_to) | bit(rook_to);
        if ((occ ^ bit(home) ^ bit(rook)) & must_be_empty) continue;
        Bitboard without_king = occ ^ bit(home);
        bool attacked = false;
        for (Bitboard path = T.between[home][king_to] | bit(home); path && !attacked; path &= path - 1) {
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

bool Board::has_legal_en_passant() const { return add_en_passant(*this, king(turn), nullptr) > 0; }

bool Board::is_capture(Move move) const {
  if (occupied_co[turn ^ 1] & bit(move.to())) return true;
  int diff = std::abs(move.to() - move.from());
  return move.to() == ep_square && (pieces[turn][PAWN] & bit(move.from())) && (diff == 7 || diff == 9) &&
         !(occupied() & bit(move.to()));
}

bool Board::is_zeroing(Move move) const {
  return (pieces[turn][PAWN] & bit(move.from())) || (occupied_co[turn ^ 1] & bit(move.to()));
}

bool Board::is_castling(Move move) const {
  if (!(pieces[turn][KING] & bit(move.from()))) return false;
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
  const Color us = turn;
  const int ksq = king(static_cast<Color>(us ^ 1));
  if (ksq == NO_SQUARE) return false;
  const int from = move.from(), to = move.to();
  const Bitboard from_bb = bit(from), to_bb = bit(to);
  int piece = NO_PIECE;
  for (int t = PAWN; t <= KING; ++t) {
    if (pieces[us][t] & from_bb) {
      piece = t;
      break;
    }
  }
  if (piece == NO_PIECE) return false;  // make() would only pass the turn

  Bitboard occ = (occupied() & ~from_bb) | to_bb;
  Bitboard emptied = from_bb;
  int arriving = piece;
  int castled_rook = NO_SQUARE;  // the rook's square after castling
  if (piece == PAWN) {
    const int diff = to - from;
    if (to == ep_square && (diff == 7 || diff == 9 || diff == -7 || diff == -9) && !(occupied_co[us ^ 1] & to_bb)) {
      const int captured_sq = us == WHITE ? to - 8 : to + 8;
      if (pieces[us ^ 1][PAWN] & bit(captured_sq)) {
        occ &= ~bit(captured_sq);
        emptied |= bit(captured_sq);
      }
    }
    const int promotion = move.promotion();
    if (promotion >= KNIGHT && promotion <= QUEEN) arriving = promotion;
  } else if (piece == KING && std::abs(to - from) == 2 && rank_of(to) == rank_of(from)) {
    const int rook_from = to > from ? from + 3 : from - 4;
    const int rook_to = to > from ? from + 1 : from - 1;
    if (rook_from >= 0 && rook_from < 64 && (pieces[us][ROOK] & bit(rook_from)) && !(occupied() & bit(rook_to))) {
      occ = (occ & ~bit(rook_from)) | bit(rook_to);
      emptied |= bit(rook_from);
      castled_rook = rook_to;
    }
  }

  // Direct check.  A slider on `s` reaches the king when the two are on one
  // line of its kind with nothing between them.
  const auto orthogonal = [ksq](int s) { return rank_of(s) == rank_of(ksq) || file_of(s) == file_of(ksq); };
  const auto clear = [ksq, occ](int s) { return T.line[s][ksq] && !(T.between[s][ksq] & occ); };
  switch (arriving) {
    case PAWN:
      if (T.pawn[us][to] & bit(ksq)) return true;
      break;
    case KNIGHT:
      if (T.knight[to] & bit(ksq)) return true;
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
      if (T.king[to] & bit(ksq)) return true;
      break;
  }
  if (castled_rook != NO_SQUARE && orthogonal(castled_rook) && clear(castled_rook)) return true;

  // Discovered check: a slider of the line's kind beyond an emptied square,
  // with nothing left between it and the king.
  const Bitboard moved = emptied | to_bb;  // the arriving piece and the rook were tested above
  const Bitboard rooks = (pieces[us][ROOK] | pieces[us][QUEEN]) & ~moved;
  const Bitboard bishops = (pieces[us][BISHOP] | pieces[us][QUEEN]) & ~moved;
  for (Bitboard e = emptied; e; e &= e - 1) {
    const int square = lsb(e);
    const Bitboard line = T.line[ksq][square];
    if (!line) continue;
    for (Bitboard s = line & (orthogonal(square) ? rooks : bishops); s; s &= s - 1) {
      const Bitboard path = T.between[ksq][lsb(s)];
      if ((path & bit(square)) && !(path & occ)) return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------
// Make and unmake.

void Board::make(Move move, Undo& undo) {
  undo.castling = castling;
  undo.castling_raw = castling_raw_;
  undo.ep_square = ep_square;
  undo.halfmove_clock = halfmove_clock;
  undo.key = base_key_;
  undo.special = 0;
  undo.captured = NO_PIECE;

  const Color us = turn;
  const Color them = static_cast<Color>(us ^ 1);
  const int from = move.from(), to = move.to();
  int piece = NO_PIECE;
  for (int t = PAWN; t <= KING; ++t) {
    if (pieces[us][t] & bit(from)) {
      piece = t;
      break;
    }
  }
  if (piece == NO_PIECE) {  // not a move of ours: only flip the turn (never for legal moves)
    undo.special = 3;
    if (us == BLACK && fullmove_number < INT_MAX / 2) ++fullmove_number;
    turn = them;
    base_key_ ^= T.z_turn;
    ep_square = NO_SQUARE;
    return;
  }
  if (occupied_co[them] & bit(to)) {
    for (int t = PAWN; t <= KING; ++t) {
      if (pieces[them][t] & bit(to)) {
        undo.captured = t;
        remove(them, t, to);
        break;
      }
    }
  }
  if (occupied_co[us] & bit(to)) {  // never for legal moves; keep the bitboards disjoint
    for (int t = PAWN; t <= KING; ++t) {
      if (pieces[us][t] & bit(to)) remove(us, t, to);
    }
  }
  int new_ep = NO_SQUARE;
  if (piece == PAWN) {
    int diff = to - from;
    if (diff == 16 && rank_of(from) == 1) {
      new_ep = from + 8;
    } else if (diff == -16 && rank_of(from) == 6) {
      new_ep = from - 8;
    } else if (to == ep_square && (diff == 7 || diff == 9 || diff == -7 || diff == -9) && !undo.captured) {
      int captured_sq = us == WHITE ? to - 8 : to + 8;
      if (pieces[them][PAWN] & bit(captured_sq)) {
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
    if (rook_from >= 0 && rook_from < 64 && (pieces[us][ROOK] & bit(rook_from)) && !(occupied() & bit(rook_to))) {
      remove(us, ROOK, rook_from);
      put(us, ROOK, rook_to);
      undo.special = 2;
    }
  }
  Bitboard cleared = bit(from) | bit(to);
  if (piece == KING) cleared |= us == WHITE ? RANK_1 : RANK_8;
  for (Bitboard lost = castling & cleared; lost; lost &= lost - 1) base_key_ ^= T.z_castle[lsb(lost)];
  castling &= ~cleared;
  castling_raw_ &= ~cleared;

  if (piece == PAWN || undo.captured) {
    halfmove_clock = 0;
  } else if (halfmove_clock < INT_MAX / 2) {
    ++halfmove_clock;
  }
  if (us == BLACK && fullmove_number < INT_MAX / 2) ++fullmove_number;
  ep_square = new_ep;
  turn = them;
  base_key_ ^= T.z_turn;
}

void Board::unmake(Move move, const Undo& undo) {
  const Color them = turn;
  const Color us = static_cast<Color>(them ^ 1);
  turn = us;
  if (us == BLACK && fullmove_number > 1) --fullmove_number;
  const int from = move.from(), to = move.to();
  int moved = NO_PIECE;
  for (int t = PAWN; t <= KING; ++t) {
    if (pieces[us][t] & bit(to)) {
      moved = t;
      break;
    }
  }
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
  castling = undo.castling;
  castling_raw_ = undo.castling_raw;
  ep_square = undo.ep_square;
  halfmove_clock = undo.halfmove_clock;
  base_key_ = undo.key;
}

void Board::push_checked(Move move) {
  if (!is_legal(move)) throw ChessError("illegal move '" + move.uci() + "' in '" + fen() + "'");
  Undo undo;
  make(move, undo);
}

// ---------------------------------------------------------------------------
// Keys.

std::uint64_t Board::key() const {
  return has_legal_en_passant() ? base_key_ ^ T.z_ep[ep_square] : base_key_;
}

std::uint64_t Board::compute_key() const {
  std::uint64_t k = 0;
  for (int c = WHITE; c <= BLACK; ++c) {
    for (int t = PAWN; t <= KING; ++t) {
      for (Bitboard b = pieces[c][t]; b; b &= b - 1) k ^= T.z_piece[c][t][lsb(b)];
    }
  }
  if (turn == BLACK) k ^= T.z_turn;
  for (Bitboard b = castling; b; b &= b - 1) k ^= T.z_castle[lsb(b)];
  if (has_legal_en_passant()) k ^= T.z_ep[ep_square];
  return k;
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
      b.turn = WHITE;
    } else if (parts[1] == "b") {
      b.turn = BLACK;
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
    b.halfmove_clock = static_cast<int>(h);
  }
  if (parts.size() > 5) {
    long long f = parse_int(fen, parts[5], "fullmove number");
    if (f < 0) fen_error(fen, "negative fullmove number '" + parts[5] + "'");
    b.fullmove_number = f < 1 ? 1 : static_cast<int>(f);
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
  if (b.turn == BLACK) b.base_key_ ^= T.z_turn;

  // Castling rights as python-chess's set_castling_fen() reads them.
  Bitboard raw = 0;
  if (castling_part != "-") {
    for (char flag : castling_part) {
      Color color = (flag >= 'A' && flag <= 'Z') ? WHITE : BLACK;
      char lower = color == WHITE ? static_cast<char>(flag - 'A' + 'a') : flag;
      Bitboard backrank = color == WHITE ? RANK_1 : RANK_8;
      Bitboard rooks = b.pieces[color][ROOK] & backrank;
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
  Bitboard white = raw & b.pieces[WHITE][ROOK] & (bit(A1) | bit(H1));
  Bitboard black = raw & b.pieces[BLACK][ROOK] & (bit(A8) | bit(H8));
  if (!(b.pieces[WHITE][KING] & bit(E1))) white = 0;
  if (!(b.pieces[BLACK][KING] & bit(E8))) black = 0;
  b.castling = white | black;
  for (Bitboard c = b.castling; c; c &= c - 1) b.base_key_ ^= T.z_castle[lsb(c)];
  b.ep_square = ep;
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
  out += turn == WHITE ? " w " : " b ";
  std::string rights;
  if (castling & bit(H1)) rights += 'K';
  if (castling & bit(A1)) rights += 'Q';
  if (castling & bit(H8)) rights += 'k';
  if (castling & bit(A8)) rights += 'q';
  out += rights.empty() ? "-" : rights;
  out += ' ';
  out += has_legal_en_passant() ? square_name(ep_square) : "-";
  out += ' ' + std::to_string(halfmove_clock) + ' ' + std::to_string(fullmove_number);
  return out;
}

// ---------------------------------------------------------------------------
// Validity (python-chess's Board.status()).

std::string Board::status() const {
  std::vector<std::string> errors;
  const Bitboard occ = occupied();
  const Bitboard kings = by_type(KING);
  if (!occ) errors.push_back("empty board");
  if (!pieces[WHITE][KING]) errors.push_back("no white king");
  if (!pieces[BLACK][KING]) errors.push_back("no black king");
  if (popcount(kings) > 2) errors.push_back("too many kings");
  if (promoted_king_) errors.push_back("promoted king");
  if (popcount(occupied_co[WHITE]) > 16) errors.push_back("too many white pieces");
  if (popcount(occupied_co[BLACK]) > 16) errors.push_back("too many black pieces");
  if (popcount(pieces[WHITE][PAWN]) > 8) errors.push_back("too many white pawns");
  if (popcount(pieces[BLACK][PAWN]) > 8) errors.push_back("too many black pawns");
  if (by_type(PAWN) & BACKRANKS) errors.push_back("pawns on the back rank");
  if (castling_raw_ != castling) errors.push_back("bad castling rights");

  // python-chess's _valid_ep_square().
  int valid_ep = NO_SQUARE;
  if (ep_square > 0 && ep_square < 64) {
    const Color them = static_cast<Color>(turn ^ 1);
    const int ep_rank = turn == WHITE ? 5 : 2;
    const int pawn_sq = turn == WHITE ? ep_square - 8 : ep_square + 8;
    const int seventh_sq = turn == WHITE ? ep_square + 8 : ep_square - 8;
    if (rank_of(ep_square) == ep_rank && (pieces[them][PAWN] & bit(pawn_sq)) && !(occ & bit(ep_square)) &&
        !(occ & bit(seventh_sq))) {
      valid_ep = ep_square;
    }
  }
  if (ep_square != valid_ep) errors.push_back("invalid en passant square");

  const int their_king = king(static_cast<Color>(turn ^ 1));
  if (their_king != NO_SQUARE && is_attacked_by(turn, their_king)) errors.push_back("opposite check");

  const Bitboard checkers_bb = checkers();
  const Bitboard our_kings = pieces[turn][KING];
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
          impossible = attackers_mask(static_cast<Color>(turn ^ 1), lsb(k), before) != 0;
        }
      }
    } else {
      impossible = n > 2 || (n == 2 && (T.line[lsb(checkers_bb)][msb(checkers_bb)] & our_kings));
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

// ---------------------------------------------------------------------------
// Insufficient material (python-chess's rules).

bool Board::has_insufficient_material(Color color) const {
  const Color other = static_cast<Color>(color ^ 1);
  const Bitboard own = occupied_co[color];
  if (pieces[color][PAWN] | pieces[color][ROOK] | pieces[color][QUEEN]) return false;
  if (pieces[color][KNIGHT]) {
    return popcount(own) <= 2 && !(occupied_co[other] & ~by_type(KING) & ~by_type(QUEEN));
  }
  if (pieces[color][BISHOP]) {
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
  if (board.halfmove_clock >= 100) return Termination::FIFTY_MOVES;
  if (board.is_insufficient_material()) return Termination::INSUFFICIENT_MATERIAL;
  return Termination::NONE;
}

}  // namespace zc
