// zerochess native core: Python bindings of the PUCT search (SearchTree,
// EvalCache, run_searches).  Python reference: models/search_tree.py
// (the native wrapper: models/native_tree.py).
//
// The evaluator is called with one contiguous uint8 array of leaf planes and
// int64 rows/indices arrays, and answers with float32 logits and values: no
// Python object per leaf or per move.  All tree work runs with the GIL
// released.  Bad input raises ChessError naming the FEN or the shape.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "run_searches.h"
#include "search.h"

namespace py = pybind11;

namespace zc {

namespace {

// run_searches with a Python evaluator (evaluator.evaluate_batch(planes,
// rows, indices) -> (logits, values) or (logits, values, aux)) and stop
// test, called with the GIL; the trees are stepped without it.
long long py_run_searches(const py::list& tree_list, const py::object& evaluator, const py::object& should_stop) {
  std::vector<SearchTree*> trees;
  for (const py::handle& item : tree_list) trees.push_back(item.cast<SearchTree*>());
  py::object evaluate = evaluator.attr("evaluate_batch");
  EvaluationArrays arrays;  // the last evaluation, alive while it is delivered
  const BatchEvaluator evaluate_batch = [&](const LeafBatch& batch, const PlanesWriter& write_planes) {
    py::gil_scoped_acquire gil;
    py::tuple inputs = batch_arrays(batch, write_planes);
    py::object output = evaluate(inputs[0], inputs[1], inputs[2]);
    arrays = evaluation_arrays(output, static_cast<long long>(batch.rows.size()), batch.leaves);
    return arrays.evaluation();
  };
  StopTest stop;
  if (!should_stop.is_none()) {
    stop = [&should_stop] {
      py::gil_scoped_acquire gil;
      return should_stop().cast<bool>();
    };
  }
  py::gil_scoped_release release;
  return run_searches(trees, evaluate_batch, stop);
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

py::array_t<std::uint64_t> rows_array(const Row* rows, py::ssize_t count) {
  py::array_t<std::uint64_t> out({count, static_cast<py::ssize_t>(ROW_WIDTH)});
  if (count) std::memcpy(out.mutable_data(), rows, static_cast<std::size_t>(count) * sizeof(Row));
  return out;
}

void bind_tree(py::module_& m) {
  py::class_<SearchParams>(m, "SearchParams", "models.search_config.SearchConfig as the native search reads it.")
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
      .def_readwrite("solver_threats", &SearchParams::solver_threats)
      .def_readwrite("twofold_draw", &SearchParams::twofold_draw)
      .def_readwrite("moves_left_threshold", &SearchParams::moves_left_threshold)
      .def_readwrite("moves_left_slope", &SearchParams::moves_left_slope)
      .def_readwrite("moves_left_cap", &SearchParams::moves_left_cap);

  py::class_<EvalCache, std::shared_ptr<EvalCache>>(m, "EvalCache", "Thread-safe LRU evaluation cache.")
      .def(py::init<long long>(), py::arg("max_size"))
      .def("__len__", &EvalCache::size)
      .def_property_readonly("max_size", &EvalCache::max_size)
      .def_property_readonly("hits", &EvalCache::hits)
      .def_property_readonly("misses", &EvalCache::misses)
      .def("clear", &EvalCache::clear);

  py::class_<SearchTree>(m, "SearchTree", "The PUCT search tree of one game (models.search_tree.GameTree).")
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
      .def_property_readonly("exhausted", &SearchTree::exhausted)
      .def_property("score_alternatives", &SearchTree::score_alternatives, &SearchTree::set_score_alternatives,
                    "At a proven root, search only the unproven root moves (models.search_tree.GameTree).")
      .def_property_readonly("simulations_done", &SearchTree::simulations_done)
      .def_property_readonly("collisions", &SearchTree::collisions)
      .def("fen", &SearchTree::fen)
      .def("result",
           [](const SearchTree& tree) {
             RootStats stats = tree.result();
             return py::make_tuple(
                 move_strings(stats.moves), to_array(stats.child_n), to_array(stats.child_w), to_array(stats.priors),
                 stats.root_value, stats.best,
                 to_array(std::vector<std::int64_t>(stats.policy.begin(), stats.policy.end())),
                 stats.improved.empty() ? py::object(py::none()) : py::object(to_array(stats.improved)),
                 stats.proof.empty()
                     ? py::object(py::none())
                     : py::object(to_array(std::vector<std::int64_t>(stats.proof.begin(), stats.proof.end()))),
                 stats.proof_plies.empty() ? py::object(py::none())
                                           : py::object(to_array(std::vector<std::int64_t>(stats.proof_plies.begin(),
                                                                                           stats.proof_plies.end()))),
                 stats.root_draw, stats.root_moves_left);
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
                                   node.proof_plies, node.draw_sum, node.moves_left_sum);
           })
      .def("node_fen", [](const SearchTree& tree, int id) { return tree.node(id).board.fen(); })
      .def("node_edges", [](const SearchTree& tree, int id) -> py::tuple {
        const Node& node = tree.node(id);
        if (!node.has_moves) return py::make_tuple(py::none(), py::none(), py::list(), py::list(), py::list());
        const Edge* edge = tree.edges(id);
        if (!node.expanded) {  // pending: moves known, no priors or children yet (as models.search_node.Node)
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
        "Sequential halving's schedule (models.search_rules.considered_visit), for tests.");
  m.def("run_searches", &py_run_searches, py::arg("trees"), py::arg("evaluator"), py::arg("should_stop") = py::none(),
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

}  // namespace

void bind_search(py::module_& m) { bind_tree(m); }

}  // namespace zc
