// zerochess native core: Python bindings of the PUCT search (SearchTree,
// EvalCache, run_searches) and the self-play driver.
//
// The evaluator is called with one contiguous uint8 array of leaf planes and
// int64 rows/indices arrays, and answers with float32 logits and values: no
// Python object per leaf or per move.  All tree work runs with the GIL
// released.  Bad input raises ChessError naming the FEN or the shape.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "driver.h"
#include "search.h"

namespace py = pybind11;

namespace zc {

namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

std::string shape_of(const py::array& array) {
  std::string text = "(";
  for (py::ssize_t i = 0; i < array.ndim(); ++i) {
    if (i) text += ", ";
    text += std::to_string(array.shape(i));
  }
  if (array.ndim() == 1) text += ",";
  return text + ")";
}

// The batch as numpy arrays (copies: the evaluator may keep them);
// write_planes fills the planes (N * PLANES_BYTES bytes) without the GIL.
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

py::tuple batch_arrays(const LeafBatch& batch) {
  return batch_arrays(batch, [&batch](std::uint8_t* out) {
    if (batch.planes.size()) std::memcpy(out, batch.planes.data(), batch.planes.size());
  });
}

// Evaluator output as (logits, values) float32 arrays of the expected sizes.
std::pair<FloatArray, FloatArray> evaluation_arrays(const py::object& output, long long moves, long long leaves) {
  py::tuple pair;
  try {
    pair = py::reinterpret_borrow<py::tuple>(py::tuple(output));
  } catch (const py::error_already_set&) {
    throw ChessError("evaluator returned " + std::string(py::str(py::type::of(output))) +
                     ", expected a (logits, values) pair");
  }
  if (pair.size() != 2) {
    throw ChessError("evaluator returned " + std::to_string(pair.size()) +
                     " items, expected a (logits, values) pair");
  }
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
  return {logits, values};
}

struct Owner {
  SearchTree* tree;
  long long leaf_begin;
  long long move_begin;
};

long long run_searches(const py::list& tree_list, const py::object& evaluator, const py::object& should_stop) {
  std::vector<SearchTree*> trees;
  for (const py::handle& item : tree_list) trees.push_back(item.cast<SearchTree*>());
  py::object evaluate = evaluator.attr("evaluate_batch");
  long long calls = 0, rounds = 0;
  LeafBatch batch;
  std::vector<Owner> owners;
  auto abort_all = [&owners]() {
    for (const Owner& owner : owners) owner.tree->abort_pending();
  };
  while (true) {
    bool any = false;
    for (SearchTree* tree : trees) any = any || !tree->finished();
    if (!any) return calls;
    if (!should_stop.is_none() && rounds > 0 && should_stop().cast<bool>()) return calls;
    ++rounds;
    batch.clear();
    owners.clear();
    try {
      py::gil_scoped_release release;
      for (SearchTree* tree : trees) {
        if (tree->finished()) continue;
        long long leaf_begin = batch.leaves, move_begin = static_cast<long long>(batch.rows.size());
        if (tree->collect(batch) > 0) owners.push_back(Owner{tree, leaf_begin, move_begin});
      }
    } catch (...) {
      abort_all();
      throw;
    }
    if (batch.leaves == 0) continue;
    try {
      py::tuple arrays = batch_arrays(batch);
      py::object output = evaluate(arrays[0], arrays[1], arrays[2]);
      auto [logits, values] =
          evaluation_arrays(output, static_cast<long long>(batch.rows.size()), batch.leaves);
      const float* logit = logits.data();
      const float* value = values.data();
      py::gil_scoped_release release;
      for (const Owner& owner : owners) {
        owner.tree->validate(logit + owner.move_begin, owner.tree->pending_moves(), value + owner.leaf_begin,
                             owner.tree->pending_leaves());
      }
      for (const Owner& owner : owners) owner.tree->deliver(logit + owner.move_begin, value + owner.leaf_begin);
    } catch (...) {
      abort_all();
      throw;
    }
    ++calls;
  }
}

std::vector<Move> parse_moves(const std::vector<std::string>& ucis) {
  std::vector<Move> moves;
  moves.reserve(ucis.size());
  for (const std::string& uci : ucis) moves.push_back(Move::from_uci(uci));
  return moves;
}

py::list move_strings(const std::vector<Move>& moves) {
  py::list out;
  for (Move move : moves) out.append(move.uci());
  return out;
}

template <typename T>
py::array_t<T> to_array(const std::vector<T>& values) {
  py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * sizeof(T));
  return out;
}

py::array_t<std::uint64_t> rows_array(const Row* rows, py::ssize_t count) {
  py::array_t<std::uint64_t> out({count, static_cast<py::ssize_t>(ROW_WIDTH)});
  if (count) std::memcpy(out.mutable_data(), rows, static_cast<std::size_t>(count) * sizeof(Row));
  return out;
}

void bind_tree(py::module_& m) {
  py::class_<SearchParams>(m, "SearchParams", "models.search.SearchConfig as the native search reads it.")
      .def(py::init<>())
      .def_readwrite("num_simulations", &SearchParams::num_simulations)
      .def_readwrite("c_puct_init", &SearchParams::c_puct_init)
      .def_readwrite("c_puct_base", &SearchParams::c_puct_base)
      .def_readwrite("fpu_absolute", &SearchParams::fpu_absolute)
      .def_readwrite("fpu_value", &SearchParams::fpu_value)
      .def_readwrite("dirichlet_alpha", &SearchParams::dirichlet_alpha)
      .def_readwrite("dirichlet_epsilon", &SearchParams::dirichlet_epsilon)
      .def_readwrite("temperature", &SearchParams::temperature)
      .def_readwrite("temperature_plies", &SearchParams::temperature_plies)
      .def_readwrite("leaves_per_batch", &SearchParams::leaves_per_batch)
      .def_readwrite("virtual_loss", &SearchParams::virtual_loss)
      .def_readwrite("cache_size", &SearchParams::cache_size)
      .def_readwrite("gumbel", &SearchParams::gumbel)
      .def_readwrite("gumbel_considered", &SearchParams::gumbel_considered)
      .def_readwrite("gumbel_scale", &SearchParams::gumbel_scale)
      .def_readwrite("gumbel_c_visit", &SearchParams::gumbel_c_visit)
      .def_readwrite("gumbel_c_scale", &SearchParams::gumbel_c_scale)
      .def_readwrite("solver", &SearchParams::solver)
      .def_readwrite("solver_threats", &SearchParams::solver_threats);

  py::class_<EvalCache, std::shared_ptr<EvalCache>>(m, "EvalCache", "Thread-safe LRU evaluation cache.")
      .def(py::init<long long>(), py::arg("max_size"))
      .def("__len__", &EvalCache::size)
      .def_property_readonly("max_size", &EvalCache::max_size)
      .def_property_readonly("hits", &EvalCache::hits)
      .def_property_readonly("misses", &EvalCache::misses)
      .def("clear", &EvalCache::clear);

  py::class_<SearchTree>(m, "SearchTree", "The PUCT search tree of one game (models.search.GameTree).")
      .def(py::init([](const SearchParams& params, const std::string& encoding, std::shared_ptr<EvalCache> cache,
                       std::uint64_t seed, const std::string& root_fen, const std::vector<std::string>& moves) {
             PolicyEncoding enc = policy_encoding_from_name(encoding);
             std::vector<Move> parsed = parse_moves(moves);
             return std::make_unique<SearchTree>(params, enc, std::move(cache), seed, root_fen, parsed);
           }),
           py::arg("params"), py::arg("policy_encoding"), py::arg("cache"), py::arg("seed"), py::arg("root_fen"),
           py::arg("moves"))
      .def("advance",
           [](SearchTree& tree, const std::string& uci) {
             Move move = Move::from_uci(uci);
             py::gil_scoped_release release;
             tree.advance(move);
           })
      .def(
          "start",
          [](SearchTree& tree, long long num_simulations, bool add_noise, const py::object& gumbel) {
            if (gumbel.is_none()) {
              tree.start(num_simulations, add_noise);
              return;
            }
            std::vector<std::pair<Move, double>> noise;
            for (const auto& item : gumbel.cast<py::dict>()) {
              noise.emplace_back(Move::from_uci(item.first.cast<std::string>()), item.second.cast<double>());
            }
            tree.start(num_simulations, add_noise, &noise);
          },
          py::arg("num_simulations"), py::arg("add_noise"), py::arg("gumbel") = py::none(),
          "gumbel: {uci: noise} for every legal root move (Gumbel search), or None.")
      .def_property_readonly("finished", &SearchTree::finished)
      .def_property_readonly("simulations_done", &SearchTree::simulations_done)
      .def_property_readonly("collisions", &SearchTree::collisions)
      .def("fen", &SearchTree::fen)
      .def("result",
           [](const SearchTree& tree) {
             RootStats stats = tree.result();
             return py::make_tuple(move_strings(stats.moves), to_array(stats.child_n), to_array(stats.child_w),
                                   to_array(stats.priors), stats.root_value, stats.best,
                                   to_array(std::vector<std::int64_t>(stats.policy.begin(), stats.policy.end())),
                                   stats.improved.empty() ? py::object(py::none()) : py::object(to_array(stats.improved)),
                                   stats.proof.empty() ? py::object(py::none())
                                                       : py::object(to_array(std::vector<std::int64_t>(
                                                             stats.proof.begin(), stats.proof.end()))),
                                   stats.proof_plies.empty() ? py::object(py::none())
                                                             : py::object(to_array(std::vector<std::int64_t>(
                                                                   stats.proof_plies.begin(), stats.proof_plies.end()))));
           })
      .def("history_snapshot",
           [](const SearchTree& tree) {
             Row rows[HISTORY_STEPS];
             tree.history_snapshot(rows);
             return rows_array(rows, HISTORY_STEPS);
           })
      .def_property_readonly("root_id", &SearchTree::root_id)
      .def_property_readonly("generation", &SearchTree::generation)
      .def("node_info",
           [](const SearchTree& tree, int id) {
             const Node& node = tree.node(id);
             py::object terminal = node.terminal ? py::object(py::float_(node.terminal_value)) : py::object(py::none());
             py::object proof = node.proof == PROOF_NONE ? py::object(py::none()) : py::object(py::int_(node.proof));
             return py::make_tuple(node.visits, node.value_sum, terminal, node.expanded, node.pending, proof,
                                   node.proof_plies);
           })
      .def("node_fen", [](const SearchTree& tree, int id) { return tree.node(id).board.fen(); })
      .def("node_edges", [](const SearchTree& tree, int id) -> py::tuple {
        const Node& node = tree.node(id);
        if (!node.has_moves) return py::make_tuple(py::none(), py::none(), py::list(), py::list(), py::list());
        const Edge* edge = tree.edges(id);
        if (!node.expanded) {  // pending: moves known, no priors or children yet (as models.search.Node)
          py::list moves;
          for (int i = 0; i < node.num_edges; ++i) moves.append(edge[i].move.uci());
          return py::make_tuple(moves, py::none(), py::list(), py::list(), py::list());
        }
        py::list moves, priors, child_n, child_w, children;
        for (int i = 0; i < node.num_edges; ++i) {
          moves.append(edge[i].move.uci());
          priors.append(edge[i].prior);
          child_n.append(edge[i].n);
          child_w.append(edge[i].w);
          children.append(edge[i].child);
        }
        return py::make_tuple(moves, priors, child_n, child_w, children);
      });

  m.attr("PROOF_NONE") = static_cast<int>(PROOF_NONE);
  m.def("considered_visit", &considered_visit, py::arg("considered"), py::arg("budget"), py::arg("simulation"),
        "Sequential halving's schedule (models.search.considered_visit), for tests.");
  m.def("run_searches", &run_searches, py::arg("trees"), py::arg("evaluator"), py::arg("should_stop") = py::none(),
        "Step the started trees together, one evaluator.evaluate_batch call per round; returns the calls.");
  m.def(
      "softmax",
      [](FloatArray logits) {
        std::vector<double> out(static_cast<std::size_t>(logits.size()));
        softmax(logits.data(), static_cast<int>(logits.size()), out.data());
        return to_array(out);
      },
      "The core's softmax in double (max subtracted), for tests.");
}


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
  py::array_t<std::uint64_t> history(
      {static_cast<py::ssize_t>(game.moves.size()), static_cast<py::ssize_t>(HISTORY_STEPS), static_cast<py::ssize_t>(ROW_WIDTH)});
  if (!game.history.empty()) std::memcpy(history.mutable_data(), game.history.data(), game.history.size() * sizeof(Row));
  out["history"] = history;
  out["meta"] = table_array(game.meta);
  out["root_q"] = to_array(game.root_q);
  out["full_search"] = bool_array(game.full_search);
  out["policy_offsets"] = to_array(game.policy_offsets);
  out["policy_index"] = to_array(game.policy_index);
  out["policy_visits"] = to_array(game.policy_visits);
  out["policy_probs"] = to_array(game.policy_probs);
  return out;
}

void bind_driver(py::module_& m) {
  py::class_<SelfPlayCore>(m, "SelfPlayCore", "Many self-play games on C++ threads, stepped lane by lane.")
      .def(py::init([](const SearchParams& params, const std::string& encoding, int games, int games_in_flight,
                       std::uint64_t seed, std::vector<std::string> start_fens, int random_plies, int max_plies,
                       double full_search_prob, int fast_simulations, double resign_threshold, int resign_plies,
                       double resign_playthrough, int threads, int draw_adjudication_plies,
                       int draw_adjudication_window, double draw_adjudication_q,
                       double draw_adjudication_playthrough) {
             DriverConfig config;
             config.search = params;
             config.encoding = policy_encoding_from_name(encoding);
             config.games = games;
             config.games_in_flight = games_in_flight;
             config.seed = seed;
             config.start_fens = std::move(start_fens);
             config.random_plies = random_plies;
             config.max_plies = max_plies;
             config.full_search_prob = full_search_prob;
             config.fast_simulations = fast_simulations;
             config.resign_threshold = resign_threshold;
             config.resign_plies = resign_plies;
             config.resign_playthrough = resign_playthrough;
             config.threads = threads;
             config.draw_adjudication_plies = draw_adjudication_plies;
             config.draw_adjudication_window = draw_adjudication_window;
             config.draw_adjudication_q = draw_adjudication_q;
             config.draw_adjudication_playthrough = draw_adjudication_playthrough;
             return std::make_unique<SelfPlayCore>(config);
           }),
           py::arg("params"), py::arg("policy_encoding"), py::arg("games"), py::arg("games_in_flight"),
           py::arg("seed"), py::arg("start_fens"), py::arg("random_plies"), py::arg("max_plies"),
           py::arg("full_search_prob"), py::arg("fast_simulations"), py::arg("resign_threshold"),
           py::arg("resign_plies"), py::arg("resign_playthrough"), py::arg("threads"),
           py::arg("draw_adjudication_plies") = 0, py::arg("draw_adjudication_window") = 20,
           py::arg("draw_adjudication_q") = 0.05, py::arg("draw_adjudication_playthrough") = 0.0)
      .def_property_readonly("lanes", &SelfPlayCore::lanes)
      .def("step",
           [](SelfPlayCore& core, int lane) {
             py::gil_scoped_release release;
             return core.step(lane);
           })
      .def("batch",
           [](const SelfPlayCore& core, int lane) {
             return batch_arrays(core.batch(lane), [&core, lane](std::uint8_t* out) { core.copy_planes(lane, out); });
           })
      .def("set_results",
           [](SelfPlayCore& core, int lane, const py::object& output) {
             const LeafBatch& batch = core.batch(lane);
             auto [logits, values] = evaluation_arrays(output, static_cast<long long>(batch.rows.size()), batch.leaves);
             core.set_results(lane, logits.data(), logits.shape(0), values.data(), values.shape(0));
           })
      .def("take_finished",
           [](SelfPlayCore& core) {
             py::list out;
             for (const FinishedGame& game : core.take_finished()) out.append(game_dict(game));
             return out;
           })
      .def("done", &SelfPlayCore::done)
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
        return out;
      });
}

void bind_match(py::module_& m) {
  py::class_<MatchCore>(m, "MatchCore", "Games between two players on C++ threads, sides alternating.")
      .def(py::init([](const SearchParams& search_a, const SearchParams& search_b, const std::string& encoding,
                       int games, int games_in_flight, std::uint64_t seed, std::vector<std::string> start_fens,
                       int random_plies, int max_plies, int threads) {
             MatchConfig config;
             config.search[0] = search_a;
             config.search[1] = search_b;
             config.encoding = policy_encoding_from_name(encoding);
             config.games = games;
             config.games_in_flight = games_in_flight;
             config.seed = seed;
             config.start_fens = std::move(start_fens);
             config.random_plies = random_plies;
             config.max_plies = max_plies;
             config.threads = threads;
             return std::make_unique<MatchCore>(config);
           }),
           py::arg("search_a"), py::arg("search_b"), py::arg("policy_encoding"), py::arg("games"),
           py::arg("games_in_flight"), py::arg("seed"), py::arg("start_fens"), py::arg("random_plies"),
           py::arg("max_plies"), py::arg("threads"))
      .def("step",
           [](MatchCore& core) {
             py::gil_scoped_release release;
             core.step();
           })
      .def("leaves", [](const MatchCore& core, int player) { return core.batch(player).leaves; })
      .def("batch",
           [](const MatchCore& core, int player) {
             return batch_arrays(core.batch(player),
                                 [&core, player](std::uint8_t* out) { core.copy_planes(player, out); });
           })
      .def("set_results",
           [](MatchCore& core, int player, const py::object& output) {
             const LeafBatch& batch = core.batch(player);
             auto [logits, values] = evaluation_arrays(output, static_cast<long long>(batch.rows.size()), batch.leaves);
             core.set_results(player, logits.data(), logits.shape(0), values.data(), values.shape(0));
           })
      .def("take_finished",
           [](MatchCore& core) {
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
           })
      .def("done", &MatchCore::done);
}

}  // namespace

void bind_search(py::module_& m) {
  bind_tree(m);
  bind_driver(m);
  bind_match(m);
}

}  // namespace zc
