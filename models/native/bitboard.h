// zerochess native core: bitboard helpers and the precomputed tables shared by
// the board's units (board.cpp, movegen.cpp, make_unmake.cpp, fen.cpp); not
// part of the core's interface.  Python reference: python-chess's BB_* masks
// and attack tables.
//
// Sliding attacks use precomputed rays with a blocker scan: for a ray going up
// the board the first blocker is the lowest set bit of (ray & occupied), for a
// ray going down the highest; the attack set is the ray minus the same ray
// from the blocker on.
#pragma once

#include <cstdint>

#include "board.h"

namespace zc {
namespace bitboard {

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

// Built once at load time (board.cpp); no other unit reads it during static
// initialisation.
extern const Tables TABLES;

inline Bitboard ray_up(int dir, int sq, Bitboard occ) {
  Bitboard attacks = TABLES.ray[dir][sq];
  Bitboard blockers = attacks & occ;
  if (blockers) attacks ^= TABLES.ray[dir][lsb(blockers)];
  return attacks;
}

inline Bitboard ray_down(int dir, int sq, Bitboard occ) {
  Bitboard attacks = TABLES.ray[dir][sq];
  Bitboard blockers = attacks & occ;
  if (blockers) attacks ^= TABLES.ray[dir][msb(blockers)];
  return attacks;
}

inline Bitboard rook_attacks(int sq, Bitboard occ) {
  return ray_up(N, sq, occ) | ray_up(E, sq, occ) | ray_down(S, sq, occ) | ray_down(W, sq, occ);
}

inline Bitboard bishop_attacks(int sq, Bitboard occ) {
  return ray_up(NE, sq, occ) | ray_up(NW, sq, occ) | ray_down(SE, sq, occ) | ray_down(SW, sq, occ);
}

}  // namespace bitboard
}  // namespace zc
