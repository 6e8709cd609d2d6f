// zerochess native core: distance-to-mate tables for pawnless endings of up
// to four pieces (KQK, KRK, KBBK, KBNK, KQKR, ...), built by retrograde
// analysis.  They stand in for the Syzygy tables lc0 rescores its training
// games with, which cannot be downloaded here.  Python reference:
// models/tablebase.py (probing; its tests check every table against
// python-chess move by move).
//
// A table is named by its material, white's pieces first: "KQvK", "KBNvK",
// "KQvKR", "KvKR".  It holds one entry for each (side to move, white king,
// black king, the other pieces in the name's order) square tuple:
//   index = ((stm * 64 + wk) * 64 + bk) * 64^n + p1 * 64^(n-1) + ... + pn
// and each entry is an int8 from the side to move's view:
//   0      a draw (also: a position with no mate for either side);
//   v > 0  the side to move mates in v plies (v odd);
//   v < 0  the side to move is mated in -v - 1 plies (-1: it is mated now);
//   -128   not a position (two pieces on a square, or the side not to move
//          in check).
// There is no castling, en passant or fifty-move rule in these tables.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zc {
namespace tablebase {

constexpr std::int8_t INVALID = -128;
constexpr int MAX_EXTRA_PIECES = 2;  // besides the two kings

struct Material {
  std::string name;               // "KQvKR"
  std::vector<int> types;         // the pieces besides the kings (KNIGHT..QUEEN)
  std::vector<int> colours;       // WHITE / BLACK, the same order
};

// Parses a name such as "KBNvK" (ChessError naming it when malformed: no
// 'v', a pawn, more than MAX_EXTRA_PIECES pieces besides the kings).
Material parse_material(const std::string& name);

// The number of entries of a table with `extra` pieces besides the kings.
std::size_t table_size(int extra);

// Builds tables, keeping each one built (a table's captures lead into
// smaller tables, which are built first).
class Generator {
 public:
  const std::vector<std::int8_t>& table(const std::string& name);

 private:
  std::vector<std::int8_t> build(const Material& material);
  std::map<std::string, std::vector<std::int8_t>> tables_;
};

}  // namespace tablebase
}  // namespace zc
