// zerochess native core: distance-to-mate tables by retrograde analysis
// (tablebase.h).
//
// A table is built in two passes.  The first looks at every entry once: it
// marks the entries that are not positions, counts each position's legal
// non-capturing moves, and scores its captures from the smaller table they
// lead into (a capture into a draw, or into a loss of the other side, means
// the position cannot be lost).  The second goes through the plies in order,
// from the mates outwards: a position lost in L plies makes each position
// one un-move before it a win in L + 1; a position won in L plies takes one
// from the count of each position before it, and a position whose moves all
// lead to the other side's wins is lost one ply after the longest of them.
// What neither pass reaches is a draw.
#include "tablebase.h"

#include <algorithm>
#include <array>
#include <climits>

#include "bitboard.h"
#include "board.h"

namespace zc {
namespace tablebase {

namespace {

using namespace bitboard;

constexpr std::int8_t UNKNOWN = 127;
constexpr int MAX_LEVEL = 125;  // plies; the longest four-piece mate is 70 or so
constexpr int MAX_PIECES = 2 + MAX_EXTRA_PIECES;

// The pieces of a table: [0] the white king, [1] the black king, then the
// material's other pieces in order.
struct Layout {
  int n = 0;
  std::array<int, MAX_PIECES> type{};
  std::array<int, MAX_PIECES> colour{};
};

struct Position {
  int stm = WHITE;
  std::array<int, MAX_PIECES> sq{};
};

Layout layout_of(const Material& material) {
  Layout layout;
  layout.n = 2 + static_cast<int>(material.types.size());
  layout.type[0] = layout.type[1] = KING;
  layout.colour[0] = WHITE;
  layout.colour[1] = BLACK;
  for (std::size_t i = 0; i < material.types.size(); ++i) {
    layout.type[i + 2] = material.types[i];
    layout.colour[i + 2] = material.colours[i];
  }
  return layout;
}

Position decode(std::size_t index, int n) {
  Position p;
  for (int i = n - 1; i >= 0; --i) {
    p.sq[i] = static_cast<int>(index & 63);
    index >>= 6;
  }
  p.stm = static_cast<int>(index);
  return p;
}

std::size_t encode(const Position& p, int n) {
  std::size_t index = static_cast<std::size_t>(p.stm);
  for (int i = 0; i < n; ++i) index = (index << 6) | static_cast<std::size_t>(p.sq[i]);
  return index;
}

Bitboard attacks_of(int type, int sq, Bitboard occ) {
  switch (type) {
    case KNIGHT: return TABLES.knight[sq];
    case BISHOP: return bishop_attacks(sq, occ);
    case ROOK: return rook_attacks(sq, occ);
    case QUEEN: return bishop_attacks(sq, occ) | rook_attacks(sq, occ);
    default: return TABLES.king[sq];
  }
}

constexpr unsigned ALL = (1u << MAX_PIECES) - 1;

Bitboard occupancy(const Layout& l, const Position& p, unsigned alive, int colour = -1) {
  Bitboard occ = 0;
  for (int i = 0; i < l.n; ++i)
    if ((alive >> i & 1) && (colour < 0 || l.colour[i] == colour)) occ |= bit(p.sq[i]);
  return occ;
}

bool attacked(const Layout& l, const Position& p, unsigned alive, int by, int square, Bitboard occ) {
  for (int i = 0; i < l.n; ++i) {
    if (!(alive >> i & 1) || l.colour[i] != by) continue;
    if (attacks_of(l.type[i], p.sq[i], occ) & bit(square)) return true;
  }
  return false;
}

std::string name_of(const std::vector<int>& types, const std::vector<int>& colours) {
  static const char LETTER[7] = {'?', 'P', 'N', 'B', 'R', 'Q', 'K'};
  std::string white = "K", black = "K";
  for (std::size_t i = 0; i < types.size(); ++i) (colours[i] == WHITE ? white : black) += LETTER[types[i]];
  return white + "v" + black;
}

// The material left when the piece at layout position `captured` (>= 2) is taken.
Material without(const Material& material, int captured) {
  Material sub;
  for (int i = 0; i < static_cast<int>(material.types.size()); ++i) {
    if (i + 2 == captured) continue;
    sub.types.push_back(material.types[i]);
    sub.colours.push_back(material.colours[i]);
  }
  sub.name = name_of(sub.types, sub.colours);
  return sub;
}

// The entry of position `p` (a capture of piece `captured` just made) in the
// smaller table.
std::size_t sub_index(const Position& p, int captured, int n) {
  Position q;
  q.stm = p.stm;
  int k = 0;
  for (int i = 0; i < n; ++i)
    if (i != captured) q.sq[k++] = p.sq[i];
  return encode(q, n - 1);
}

// The working state of one build.
struct Build {
  const Layout& layout;
  std::vector<std::int8_t> values;
  std::vector<std::uint8_t> quiet;         // legal non-captures not yet known to lose
  std::vector<std::uint8_t> escape;        // a capture that draws or wins
  std::vector<std::uint8_t> capture_loss;  // the longest loss a capture leads into
  std::vector<std::uint8_t> queued;        // the ply of the shortest win scheduled so far (0: none)
  std::vector<std::vector<std::uint32_t>> wins, losses;  // by ply

  Build(const Layout& l, std::size_t size)
      : layout(l), values(size, UNKNOWN), quiet(size, 0), escape(size, 0), capture_loss(size, 0), queued(size, 0),
        wins(MAX_LEVEL + 2), losses(MAX_LEVEL + 2) {}

  void schedule(std::vector<std::vector<std::uint32_t>>& by_ply, int ply, std::size_t index, const std::string& name) {
    if (ply > MAX_LEVEL)
      throw ChessError("tablebase " + name + ": a mate longer than " + std::to_string(MAX_LEVEL) + " plies");
    by_ply[static_cast<std::size_t>(ply)].push_back(static_cast<std::uint32_t>(index));
  }
};

// The first pass over one entry (see the file's comment).
void score_entry(Build& b, std::size_t index, const Material& material,
                 const std::vector<const std::vector<std::int8_t>*>& subs) {
  const Layout& l = b.layout;
  const Position p = decode(index, l.n);
  const Bitboard occ = occupancy(l, p, ALL);
  if (popcount(occ) != l.n) {
    b.values[index] = INVALID;
    return;
  }
  const int us = p.stm, them = 1 - us;
  if (attacked(l, p, ALL, us, p.sq[them], occ)) {
    b.values[index] = INVALID;
    return;
  }
  const Bitboard own = occupancy(l, p, ALL, us);
  int legal = 0, quiet = 0, best_win = INT_MAX, worst_loss = 0;
  bool escape = false;
  for (int i = 0; i < l.n; ++i) {
    if (l.colour[i] != us) continue;
    for (Bitboard targets = attacks_of(l.type[i], p.sq[i], occ) & ~own; targets; targets &= targets - 1) {
      const int to = lsb(targets);
      int victim = -1;
      for (int j = 2; j < l.n; ++j)
        if (l.colour[j] == them && p.sq[j] == to) victim = j;
      Position q = p;
      q.sq[i] = to;
      q.stm = them;
      const unsigned alive = victim < 0 ? ALL : ALL & ~(1u << victim);
      const Bitboard occ2 = (occ & ~bit(p.sq[i])) | bit(to);
      if (attacked(l, q, alive, them, q.sq[us], occ2)) continue;
      ++legal;
      if (victim < 0) {
        ++quiet;
        continue;
      }
      const std::int8_t v = (*subs[static_cast<std::size_t>(victim)])[sub_index(q, victim, l.n)];
      if (v == INVALID) throw ChessError("tablebase " + material.name + ": a capture into a non-position");
      if (v > 0) worst_loss = std::max(worst_loss, v + 1);
      else if (v < 0) best_win = std::min(best_win, -v);
      else escape = true;
    }
  }
  b.quiet[index] = static_cast<std::uint8_t>(quiet);
  b.escape[index] = escape || best_win != INT_MAX;
  b.capture_loss[index] = static_cast<std::uint8_t>(std::min(worst_loss, 255));
  if (legal == 0) {
    if (attacked(l, p, ALL, them, p.sq[us], occ)) b.schedule(b.losses, 0, index, material.name);
    else b.values[index] = 0;  // stalemate
  } else if (best_win != INT_MAX) {
    b.queued[index] = static_cast<std::uint8_t>(best_win);
    b.schedule(b.wins, best_win, index, material.name);
  } else if (quiet == 0 && !escape) {
    b.schedule(b.losses, worst_loss, index, material.name);
  }
}

// Calls visit(entry) for each position one un-move before `p` (the side not
// to move in `p` moved last; captures lead out of the table, so none is undone).
template <typename Visit>
void predecessors(const Layout& l, const Position& p, Visit&& visit) {
  const Bitboard occ = occupancy(l, p, ALL);
  const int mover = 1 - p.stm;
  for (int i = 0; i < l.n; ++i) {
    if (l.colour[i] != mover) continue;
    for (Bitboard from = attacks_of(l.type[i], p.sq[i], occ) & ~occ; from; from &= from - 1) {
      Position q = p;
      q.sq[i] = lsb(from);
      q.stm = mover;
      const Bitboard occ2 = (occ & ~bit(p.sq[i])) | bit(q.sq[i]);
      if (attacked(l, q, ALL, mover, q.sq[p.stm], occ2)) continue;
      visit(encode(q, l.n));
    }
  }
}

}  // namespace

Material parse_material(const std::string& name) {
  auto fail = [&](const std::string& why) { return ChessError("tablebase material '" + name + "': " + why); };
  const auto v = name.find('v');
  if (v == std::string::npos || name.find('v', v + 1) != std::string::npos)
    throw fail("expected one 'v' between white's and black's pieces, as in KQvK");
  Material material;
  const std::string sides[2] = {name.substr(0, v), name.substr(v + 1)};
  for (int colour = WHITE; colour <= BLACK; ++colour) {
    const std::string& side = sides[colour];
    if (side.empty() || side[0] != 'K') throw fail("each side starts with its king 'K'");
    for (std::size_t i = 1; i < side.size(); ++i) {
      const char c = side[i];
      const int type = c == 'Q' ? QUEEN : c == 'R' ? ROOK : c == 'B' ? BISHOP : c == 'N' ? KNIGHT : NO_PIECE;
      if (type == NO_PIECE) throw fail(std::string("piece '") + c + "' (one of Q, R, B, N; no pawns)");
      material.types.push_back(type);
      material.colours.push_back(colour);
    }
  }
  if (material.types.size() > static_cast<std::size_t>(MAX_EXTRA_PIECES))
    throw fail("at most " + std::to_string(MAX_EXTRA_PIECES) + " pieces besides the kings");
  material.name = name;
  return material;
}

std::size_t table_size(int extra) { return std::size_t(2) << (6 * (2 + extra)); }

const std::vector<std::int8_t>& Generator::table(const std::string& name) {
  const auto found = tables_.find(name);
  if (found != tables_.end()) return found->second;
  std::vector<std::int8_t> built = build(parse_material(name));
  return tables_.emplace(name, std::move(built)).first->second;
}

std::vector<std::int8_t> Generator::build(const Material& material) {
  const Layout layout = layout_of(material);
  std::vector<const std::vector<std::int8_t>*> subs(static_cast<std::size_t>(layout.n), nullptr);
  for (int j = 2; j < layout.n; ++j) subs[static_cast<std::size_t>(j)] = &table(without(material, j).name);
  const std::size_t size = table_size(layout.n - 2);
  Build b(layout, size);
  for (std::size_t index = 0; index < size; ++index) score_entry(b, index, material, subs);
  for (int ply = 0; ply <= MAX_LEVEL; ++ply) {
    for (const std::uint32_t index : b.losses[static_cast<std::size_t>(ply)]) {
      if (b.values[index] != UNKNOWN) continue;
      b.values[index] = static_cast<std::int8_t>(-(ply + 1));
      predecessors(layout, decode(index, layout.n), [&](std::size_t before) {
        if (b.values[before] != UNKNOWN || (b.queued[before] && b.queued[before] <= ply + 1)) return;
        b.queued[before] = static_cast<std::uint8_t>(ply + 1);
        b.schedule(b.wins, ply + 1, before, material.name);
      });
    }
    std::vector<std::uint32_t>().swap(b.losses[static_cast<std::size_t>(ply)]);
    for (const std::uint32_t index : b.wins[static_cast<std::size_t>(ply)]) {
      if (b.values[index] != UNKNOWN) continue;
      b.values[index] = static_cast<std::int8_t>(ply);
      predecessors(layout, decode(index, layout.n), [&](std::size_t before) {
        if (b.values[before] != UNKNOWN || b.escape[before] || --b.quiet[before] != 0) return;
        b.schedule(b.losses, std::max(ply + 1, static_cast<int>(b.capture_loss[before])), before, material.name);
      });
    }
    std::vector<std::uint32_t>().swap(b.wins[static_cast<std::size_t>(ply)]);
  }
  for (std::int8_t& value : b.values)
    if (value == UNKNOWN) value = 0;
  return std::move(b.values);
}

}  // namespace tablebase
}  // namespace zc
