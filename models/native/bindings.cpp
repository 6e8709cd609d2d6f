// The extension module models._native: chess rules, encoding and search in C++.
#include "bindings.h"

#include "board.h"

namespace py = pybind11;

PYBIND11_MODULE(_native, m) {
  m.doc() = "zerochess native core: chess rules, input planes, policy indices and PUCT search";
  // Every domain error of the core crosses into Python as ChessError, a
  // ValueError whose message names the offending FEN, move or value.
  py::register_exception<zc::ChessError>(m, "ChessError", PyExc_ValueError);
  zc::bind_board(m);
  zc::bind_encoding(m);
  zc::bind_search(m);
}
