// zerochess native core: a training batch from a shuffle group's shard columns.
//
// decode_rows(history, meta, offsets, index, prob, rows, policy_size) gives
// the (planes, pi) of the batch rows `rows` of a group: planes (B, 119, 8, 8)
// uint8 exactly as models.encoding.encode_snapshots, pi (B, policy_size)
// float32 exactly as pipeline.shards.decode.decode_policy (zeros, then each
// list item added in order).  The readable reference is
// pipeline.shards.decode.decode_rows_reference; this is one pass per row with
// the GIL released.  Bad input (shapes, a row or offset out of range, a policy
// index >= policy_size) raises ValueError naming the value; nothing is read
// out of bounds.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "bindings.h"
#include "unpack.h"

namespace py = pybind11;

namespace zc {

namespace {

constexpr int STEPS = 8;
constexpr int WIDTH = 14;
constexpr int PIECES = 12;
constexpr int META = 7;
constexpr int PLANES = STEPS * WIDTH + META;  // 119

template <typename T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;

// models.encoding.encode_snapshots for one position: black to move swaps the
// colour halves and byte-swaps every word (repetition words included).
void write_position(const std::uint64_t* steps, const std::uint8_t* meta, std::uint8_t* out, const UnpackTable& table) {
  const bool black = meta[0] != 0;
  for (int step = 0; step < STEPS; ++step) {
    const std::uint64_t* row = steps + step * WIDTH;
    std::uint8_t* base = out + step * WIDTH * 64;
    for (int word = 0; word < WIDTH; ++word) {
      const int source = black && word < PIECES ? (word + 6) % PIECES : word;
      const std::uint64_t value = black ? __builtin_bswap64(row[source]) : row[source];
      unpack_word(value, base + word * 64, table);
    }
  }
  std::uint8_t* meta_planes = out + STEPS * WIDTH * 64;
  for (int i = 0; i < META; ++i) {
    const bool count_plane = i == 1 || i == 6;  // move count, no progress: the value itself
    std::memset(meta_planes + i * 64, count_plane ? meta[i] : (meta[i] ? 1 : 0), 64);
  }
}

void require(bool ok, const std::string& message) {
  if (!ok) throw py::value_error("decode_rows: " + message);
}

py::tuple decode_rows(const Array<std::uint64_t>& history, const Array<std::uint8_t>& meta,
                      const Array<std::int64_t>& offsets, const Array<std::uint16_t>& index,
                      const Array<float>& prob, const Array<std::int64_t>& rows, int policy_size) {
  require(history.ndim() == 3 && history.shape(1) == STEPS && history.shape(2) == WIDTH,
          "history must have shape (N, 8, 14)");
  const py::ssize_t count = history.shape(0);
  require(meta.ndim() == 2 && meta.shape(0) == count && meta.shape(1) == META, "meta must have shape (N, 7)");
  require(offsets.ndim() == 1 && offsets.shape(0) == count + 1, "offsets must have shape (N + 1,)");
  require(index.ndim() == 1 && prob.ndim() == 1 && index.shape(0) == prob.shape(0),
          "policy index and prob must be 1-D of the same length");
  require(rows.ndim() == 1, "rows must be 1-D");
  require(policy_size > 0, "policy_size must be positive, got " + std::to_string(policy_size));
  const py::ssize_t batch = rows.shape(0);
  const std::int64_t items = index.shape(0);
  const std::int64_t* row_data = rows.data();
  const std::int64_t* offset_data = offsets.data();
  for (py::ssize_t b = 0; b < batch; ++b) {
    const std::int64_t row = row_data[b];
    require(row >= 0 && row < count, "row " + std::to_string(row) + " out of range [0, " + std::to_string(count) + ")");
    const std::int64_t start = offset_data[row], stop = offset_data[row + 1];
    require(start >= 0 && start <= stop && stop <= items,
            "row " + std::to_string(row) + ": list offsets [" + std::to_string(start) + ", " + std::to_string(stop) +
                ") outside the " + std::to_string(items) + " items");
  }
  py::array_t<std::uint8_t> planes(std::vector<py::ssize_t>{batch, PLANES, 8, 8});
  py::array_t<float> pi(std::vector<py::ssize_t>{batch, policy_size});
  std::uint8_t* planes_data = planes.mutable_data();
  float* pi_data = pi.mutable_data();
  const std::uint64_t* history_data = history.data();
  const std::uint8_t* meta_data = meta.data();
  const std::uint16_t* index_data = index.data();
  const float* prob_data = prob.data();
  std::int64_t bad_row = -1, bad_index = 0;
  {
    py::gil_scoped_release release;
    const UnpackTable& table = unpack_table();
    for (py::ssize_t b = 0; b < batch && bad_row < 0; ++b) {
      const std::int64_t row = row_data[b];
      write_position(history_data + row * STEPS * WIDTH, meta_data + row * META, planes_data + b * PLANES * 64, table);
      float* dense = pi_data + b * policy_size;
      std::memset(dense, 0, sizeof(float) * static_cast<std::size_t>(policy_size));
      for (std::int64_t item = offset_data[row]; item < offset_data[row + 1]; ++item) {
        const int target = index_data[item];
        if (target >= policy_size) {
          bad_row = row;
          bad_index = target;
          break;
        }
        dense[target] += prob_data[item];
      }
    }
  }
  require(bad_row < 0, "row " + std::to_string(bad_row) + ": policy index " + std::to_string(bad_index) +
                           " >= policy size " + std::to_string(policy_size));
  return py::make_tuple(planes, pi);
}

}  // namespace

void bind_decode(py::module_& m) {
  m.def("decode_rows", &decode_rows, py::arg("history"), py::arg("meta"), py::arg("offsets"), py::arg("index"),
        py::arg("prob"), py::arg("rows"), py::arg("policy_size"),
        "(planes (B, 119, 8, 8) uint8, pi (B, policy_size) float32) of group rows `rows` "
        "(pipeline.shards.decode.decode_rows_reference); ValueError on bad input.");
}

}  // namespace zc
