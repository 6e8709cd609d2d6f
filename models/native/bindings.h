// zerochess native core: one pybind11 module (models._native), bound in parts.
#pragma once

#include <pybind11/pybind11.h>

namespace zc {

void bind_board(pybind11::module_& m);     // board_bindings.cpp
void bind_encoding(pybind11::module_& m);  // encoding_bindings.cpp
void bind_search(pybind11::module_& m);    // search_bindings.cpp

}  // namespace zc
