// zerochess native core: one 64-bit board word as a plane of 64 bytes (0/1).
//
// Shared by the encoder (encoding.cpp) and the training-batch decoder
// (decode_bindings.cpp), which must give byte-identical planes.
#pragma once

#include <cstdint>
#include <cstring>

namespace zc {

// byte -> its 8 bits as 8 bytes of 0/1, bit f of the byte at offset f.
struct UnpackTable {
  std::uint8_t bytes[256][8];
  UnpackTable() {
    for (int value = 0; value < 256; ++value) {
      for (int f = 0; f < 8; ++f) bytes[value][f] = static_cast<std::uint8_t>((value >> f) & 1);
    }
  }
};

inline const UnpackTable& unpack_table() {
  static const UnpackTable table;
  return table;
}

// Writes the 64 bytes of one plane: byte r of the word is rank r, bit f file f.
inline void unpack_word(std::uint64_t word, std::uint8_t* plane, const UnpackTable& table) {
  for (int rank = 0; rank < 8; ++rank) {
    std::memcpy(plane + 8 * rank, table.bytes[(word >> (8 * rank)) & 0xFF], 8);
  }
}

}  // namespace zc
