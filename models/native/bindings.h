// zerochess native core: one pybind11 module (models._native), bound in parts.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#include "batching.h"
#include "search.h"

namespace zc {

void bind_board(pybind11::module_& m);     // board_bindings.cpp
void bind_encoding(pybind11::module_& m);  // encoding_bindings.cpp
void bind_search(pybind11::module_& m);    // search_bindings.cpp
void bind_drivers(pybind11::module_& m);   // driver_bindings.cpp
void bind_decode(pybind11::module_& m);    // decode_bindings.cpp
void bind_tablebase(pybind11::module_& m); // tablebase_bindings.cpp

// Helpers shared by the binding files (bindings.cpp).
using FloatArray = pybind11::array_t<float, pybind11::array::c_style | pybind11::array::forcecast>;

// A leaf batch as (planes, rows, indices) numpy arrays (copies: the
// evaluator may keep them); write_planes fills the planes (N * PLANES_BYTES
// bytes) without the GIL.
pybind11::tuple batch_arrays(const LeafBatch& batch, const std::function<void(std::uint8_t*)>& write_planes);

// Evaluator output: (logits, values) or (logits, values, aux) as float32
// arrays; aux (None: absent) holds two numbers per leaf, the draw
// probability D and the plies left M.
struct EvaluationArrays {
  FloatArray logits, values, aux;
  bool has_aux = false;
  // The raw pointers for the core (aux null when absent).
  Evaluation evaluation() const { return Evaluation{logits.data(), values.data(), has_aux ? aux.data() : nullptr}; }
};

// The evaluator's output as float32 arrays of the expected sizes (logits
// (moves,), values (leaves,), aux (leaves, 2)); ChessError naming the shapes
// otherwise.
EvaluationArrays evaluation_arrays(const pybind11::object& output, long long moves, long long leaves);

template <typename T>
pybind11::array_t<T> to_array(const std::vector<T>& values) {
  pybind11::array_t<T> out(static_cast<pybind11::ssize_t>(values.size()));
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * sizeof(T));
  return out;
}

}  // namespace zc
