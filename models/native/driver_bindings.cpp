// zerochess native core: Python bindings of the two drivers, SelfPlayCore
// (self-play games) and MatchCore (games between two players).  Python
// reference: pipeline/selfplay/ (the rules) and the native wrapper
// models/native_drivers.py.
//
// Both are stepped the same way from Python: step(), then batch(i) (planes,
// rows, indices) for the evaluator and set_results(i, (logits, values[, aux])).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "driver.h"

namespace py = pybind11;

namespace zc {

namespace {

template <typename T, std::size_t N>
py::array_t<T> table_array(const std::vector<std::array<T, N>>& rows) {
  py::array_t<T> out({static_cast<py::ssize_t>(rows.size()), static_cast<py::ssize_t>(N)});
  if (!rows.empty()) std::memcpy(out.mutable_data(), rows.data(), rows.size() * sizeof(T) * N);
  return out;
}

py::array bool_array(const std::vector<std::uint8_t>& values) {
  return py::array(py::dtype("bool"), {static_cast<py::ssize_t>(values.size())}, {}, values.data());
}

py::dict game_dict(const FinishedGame& game) {
  py::dict out;
  out["index"] = game.index;
  out["start_fen"] = game.start_fen;
  out["result"] = game.result;
  out["termination"] = game.termination;
  out["playthrough"] = game.playthrough;
  out["would_resign"] = game.would_resign;
  out["draw_playthrough"] = game.draw_playthrough;
  out["would_draw"] = game.would_draw;
  out["fens"] = game.fens;
  out["moves"] = game.moves;
  out["turns"] = bool_array(game.turns);
  py::array_t<std::uint64_t> history({static_cast<py::ssize_t>(game.moves.size()),
                                      static_cast<py::ssize_t>(HISTORY_STEPS), static_cast<py::ssize_t>(ROW_WIDTH)});
  if (!game.history.empty())
    std::memcpy(history.mutable_data(), game.history.data(), game.history.size() * sizeof(Row));
  out["history"] = history;
  out["meta"] = table_array(game.meta);
  out["root_q"] = to_array(game.root_q);
  out["root_d"] = to_array(game.root_d);
  out["full_search"] = bool_array(game.full_search);
  out["policy_offsets"] = to_array(game.policy_offsets);
  out["policy_index"] = to_array(game.policy_index);
  out["policy_visits"] = to_array(game.policy_visits);
  out["policy_probs"] = to_array(game.policy_probs);
  return out;
}

// The drivers' settings as plain classes with one attribute per field
// (filled by models.native_drivers.native_config); the cores check them.
void bind_configs(py::module_& m) {
  py::class_<GamesConfig>(m, "GamesConfig", "What both drivers play (models.driver_settings.GamesSettings).")
      .def(py::init<>())
      .def_property(
          "policy_encoding", [](const GamesConfig& c) { return policy_encoding_name(c.encoding); },
          [](GamesConfig& c, const std::string& name) { c.encoding = policy_encoding_from_name(name); })
      .def_readwrite("games", &GamesConfig::games)
      .def_readwrite("games_in_flight", &GamesConfig::games_in_flight)
      .def_readwrite("seed", &GamesConfig::seed)
      .def_readwrite("start_fens", &GamesConfig::start_fens)
      .def_readwrite("random_plies", &GamesConfig::random_plies)
      .def_readwrite("max_plies", &GamesConfig::max_plies)
      .def_readwrite("threads", &GamesConfig::threads);
  py::class_<DriverConfig, GamesConfig>(m, "DriverConfig",
                                        "SelfPlayCore's settings (models.driver_settings.SelfPlayRules and the search).")
      .def(py::init<>())
      .def_readwrite("search", &DriverConfig::search)
      .def_readwrite("full_search_prob", &DriverConfig::full_search_prob)
      .def_readwrite("fast_simulations", &DriverConfig::fast_simulations)
      .def_readwrite("resign_threshold", &DriverConfig::resign_threshold)
      .def_readwrite("resign_plies", &DriverConfig::resign_plies)
      .def_readwrite("resign_playthrough", &DriverConfig::resign_playthrough)
      .def_readwrite("draw_adjudication_plies", &DriverConfig::draw_adjudication_plies)
      .def_readwrite("draw_adjudication_window", &DriverConfig::draw_adjudication_window)
      .def_readwrite("draw_adjudication_q", &DriverConfig::draw_adjudication_q)
      .def_readwrite("draw_adjudication_playthrough", &DriverConfig::draw_adjudication_playthrough);
  py::class_<MatchConfig, GamesConfig>(m, "MatchConfig", "MatchCore's settings: the games and each player's search.")
      .def(py::init<>())
      .def_property(
          "search_a", [](const MatchConfig& c) { return c.search[0]; },
          [](MatchConfig& c, const SearchParams& p) { c.search[0] = p; })
      .def_property(
          "search_b", [](const MatchConfig& c) { return c.search[1]; },
          [](MatchConfig& c, const SearchParams& p) { c.search[1] = p; });
}

// batch(i), set_results(i, output) and done() of a driver (batch i: a lane
// of SelfPlayCore, a player of MatchCore).
template <typename Core>
void def_batches(py::class_<Core>& cls) {
  cls.def("batch",
          [](const Core& core, int i) {
            return batch_arrays(core.batch(i), [&core, i](std::uint8_t* out) { core.copy_planes(i, out); });
          })
      .def("set_results",
           [](Core& core, int i, const py::object& output) {
             const LeafBatch& batch = core.batch(i);
             const EvaluationArrays arrays =
                 evaluation_arrays(output, static_cast<long long>(batch.rows.size()), batch.leaves);
             const Evaluation evaluation = arrays.evaluation();
             core.set_results(i, evaluation.logits, arrays.logits.shape(0), evaluation.values, arrays.values.shape(0),
                              evaluation.aux);
           })
      .def("done", &Core::done);
}

void bind_self_play(py::module_& m) {
  py::class_<SelfPlayCore> cls(m, "SelfPlayCore", "Many self-play games on C++ threads, stepped lane by lane.");
  cls.def(py::init<const DriverConfig&>(), py::arg("config"))
      .def_property_readonly("lanes", &SelfPlayCore::lanes)
      .def("step",
           [](SelfPlayCore& core, int lane) {
             py::gil_scoped_release release;
             return core.step(lane);
           })
      .def("take_finished",
           [](SelfPlayCore& core) {
             py::list out;
             for (const FinishedGame& game : core.take_finished()) out.append(game_dict(game));
             return out;
           })
      .def("stats", [](const SelfPlayCore& core) {
        const DriverStats& s = core.stats();
        py::dict out;
        out["games"] = s.games;
        out["positions"] = s.positions;
        out["full_searches"] = s.full_searches;
        out["evaluations"] = s.evaluations;
        out["batches"] = s.batches;
        out["resigned"] = s.resigned;
        out["playthrough"] = s.playthrough;
        out["false_resigns"] = s.false_resigns;
        out["draws_adjudicated"] = s.draws_adjudicated;
        out["draw_playthrough"] = s.draw_playthrough;
        out["false_draws"] = s.false_draws;
        out["deliver_seconds"] = s.deliver_seconds;
        out["play_seconds"] = s.play_seconds;
        out["refill_seconds"] = s.refill_seconds;
        out["collect_seconds"] = s.collect_seconds;
        out["cache_seconds"] = s.cache_seconds;
        out["gather_seconds"] = s.gather_seconds;
        return out;
      });
  def_batches(cls);
}

void bind_match(py::module_& m) {
  py::class_<MatchCore> cls(m, "MatchCore", "Games between two players on C++ threads, sides alternating.");
  cls.def(py::init<const MatchConfig&>(), py::arg("config"))
      .def("step",
           [](MatchCore& core) {
             py::gil_scoped_release release;
             core.step();
           })
      .def("leaves", [](const MatchCore& core, int player) { return core.batch(player).leaves; })
      .def("take_finished", [](MatchCore& core) {
        py::list out;
        for (const MatchRecord& game : core.take_finished()) {
          py::dict item;
          item["index"] = game.index;
          item["start_fen"] = game.start_fen;
          item["result"] = game.result;
          item["termination"] = game.termination;
          item["a_is_white"] = game.a_is_white;
          item["moves"] = game.moves;
          out.append(item);
        }
        return out;
      });
  def_batches(cls);
}

}  // namespace

void bind_drivers(py::module_& m) {
  bind_configs(m);
  bind_self_play(m);
  bind_match(m);
}

}  // namespace zc
