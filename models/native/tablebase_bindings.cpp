// zerochess native core: Python bindings of the distance-to-mate tables
// (tablebase.h).  models._native.TablebaseGenerator().table("KBNvK") returns
// the table as a numpy int8 array (a copy); the generator keeps what it has
// built, so a four-piece table reuses the smaller ones.  Building releases
// the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <mutex>
#include <string>

#include "bindings.h"
#include "tablebase.h"

namespace py = pybind11;

namespace zc {

namespace {

struct LockedGenerator {
  tablebase::Generator generator;
  std::mutex mutex;
};

py::array_t<std::int8_t> table_array(LockedGenerator& self, const std::string& name) {
  const std::vector<std::int8_t>* table = nullptr;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(self.mutex);
    table = &self.generator.table(name);
  }
  return to_array(*table);
}

}  // namespace

void bind_tablebase(py::module_& m) {
  py::class_<LockedGenerator>(m, "TablebaseGenerator",
                              "Builds distance-to-mate tables of pawnless endings (up to four pieces) "
                              "and keeps them.")
      .def(py::init<>())
      .def("table", &table_array, py::arg("name"),
           "The table named by its material ('KQvK', 'KBNvK', 'KQvKR'): an int8 array indexed by "
           "((stm*64 + wk)*64 + bk)*64**n + the other pieces' squares in the name's order; "
           "0 draw, v > 0 mate in v plies, v < 0 mated in -v-1 plies, -128 not a position.");
  m.attr("TABLEBASE_INVALID") = static_cast<int>(tablebase::INVALID);
  m.attr("TABLEBASE_MAX_EXTRA_PIECES") = tablebase::MAX_EXTRA_PIECES;
}

}  // namespace zc
