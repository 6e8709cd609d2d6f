// The extension module models._native: chess rules, encoding and search in C++,
// and the array helpers the binding files share (bindings.h).
#include "bindings.h"

#include <string>

#include "board.h"

namespace py = pybind11;

namespace zc {

namespace {

std::string shape_of(const py::array& array) {
  std::string text = "(";
  for (py::ssize_t i = 0; i < array.ndim(); ++i) {
    if (i) text += ", ";
    text += std::to_string(array.shape(i));
  }
  if (array.ndim() == 1) text += ",";
  return text + ")";
}

}  // namespace

py::tuple batch_arrays(const LeafBatch& batch, const std::function<void(std::uint8_t*)>& write_planes) {
  py::array_t<std::uint8_t> planes({static_cast<py::ssize_t>(batch.leaves), static_cast<py::ssize_t>(NUM_PLANES),
                                    static_cast<py::ssize_t>(8), static_cast<py::ssize_t>(8)});
  py::array_t<std::int64_t> rows(static_cast<py::ssize_t>(batch.rows.size()));
  py::array_t<std::int64_t> indices(static_cast<py::ssize_t>(batch.indices.size()));
  std::uint8_t* planes_out = planes.mutable_data();
  std::int64_t* rows_out = rows.mutable_data();
  std::int64_t* indices_out = indices.mutable_data();
  {
    py::gil_scoped_release release;  // large batches: copy without the GIL
    write_planes(planes_out);
    std::memcpy(rows_out, batch.rows.data(), batch.rows.size() * sizeof(std::int64_t));
    std::memcpy(indices_out, batch.indices.data(), batch.indices.size() * sizeof(std::int64_t));
  }
  return py::make_tuple(planes, rows, indices);
}

EvaluationArrays evaluation_arrays(const py::object& output, long long moves, long long leaves) {
  py::tuple pair;
  try {
    pair = py::reinterpret_borrow<py::tuple>(py::tuple(output));
  } catch (const py::error_already_set&) {
    throw ChessError("evaluator returned " + std::string(py::str(py::type::of(output))) +
                     ", expected a (logits, values) pair or a (logits, values, aux) triple");
  }
  if (pair.size() != 2 && pair.size() != 3) {
    throw ChessError("evaluator returned " + std::to_string(pair.size()) +
                     " items, expected a (logits, values) pair or a (logits, values, aux) triple");
  }
  EvaluationArrays out;
  FloatArray logits = FloatArray::ensure(pair[0]);
  FloatArray values = FloatArray::ensure(pair[1]);
  if (!logits || !values) throw ChessError("evaluator returned logits or values that are not float arrays");
  if (logits.ndim() != 1 || logits.shape(0) != moves) {
    throw ChessError("evaluator returned logits of shape " + shape_of(logits) + " for " + std::to_string(moves) +
                     " listed moves");
  }
  if (values.ndim() != 1 || values.shape(0) != leaves) {
    throw ChessError("evaluator returned values of shape " + shape_of(values) + " for " + std::to_string(leaves) +
                     " leaves");
  }
  out.logits = logits;
  out.values = values;
  if (pair.size() == 3 && !pair[2].is_none()) {
    FloatArray aux = FloatArray::ensure(pair[2]);
    if (!aux) throw ChessError("evaluator returned aux that is not a float array");
    if (aux.ndim() != 2 || aux.shape(0) != leaves || aux.shape(1) != 2) {
      throw ChessError("evaluator returned aux of shape " + shape_of(aux) + " for " + std::to_string(leaves) +
                       " leaves, expected (" + std::to_string(leaves) + ", 2)");
    }
    out.aux = aux;
    out.has_aux = true;
  }
  return out;
}

}  // namespace zc

PYBIND11_MODULE(_native, m) {
  m.doc() = "zerochess native core: chess rules, input planes, policy indices and PUCT search";
  // Every domain error of the core crosses into Python as ChessError, a
  // ValueError whose message names the offending FEN, move or value.
  py::register_exception<zc::ChessError>(m, "ChessError", PyExc_ValueError);
  zc::bind_board(m);
  zc::bind_encoding(m);
  zc::bind_search(m);
  zc::bind_drivers(m);
  zc::bind_decode(m);
  zc::bind_tablebase(m);
}
