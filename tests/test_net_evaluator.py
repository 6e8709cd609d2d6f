"""The network behind the search: priors over legal moves, batched, both encodings."""

from __future__ import annotations

import chess
import numpy as np
import pytest
import torch

from models.encoding import encode_board
from models.evaluation import Leaf
from models.net_evaluator import NetEvaluator
from models.policy import get_policy_map
from models.search_config import SearchConfig
from models.search_drivers import run_search, run_searches
from models.search_tree import GameTree
from tests.helpers.nets import tiny_net

FENS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R b KQkq - 0 1",
    "8/1P4k1/8/8/8/8/6p1/K7 w - - 0 1",  # promotions both ways
]


pytestmark = pytest.mark.usefixtures("torch_threads")  # one torch thread (tests/conftest.py)


@pytest.mark.parametrize("encoding", ["az4672", "lc0_1858"])
def test_priors_are_the_softmax_of_the_legal_logits(encoding: str) -> None:
    net = tiny_net(policy_encoding=encoding)
    evaluator = NetEvaluator(net)
    policy_map = get_policy_map(encoding)
    leaves = []
    for fen in FENS:
        board = chess.Board(fen)
        tree = GameTree(board, SearchConfig(), needs_planes=True)
        leaves.append(Leaf(board, list(board.legal_moves), tree._history.snapshot()))
    results = evaluator.evaluate(leaves)
    for leaf, (priors, value) in zip(leaves, results):
        with torch.no_grad():
            logits, expected_value = net(torch.from_numpy(encode_board(leaf.board)[None]))
        legal = logits[0, torch.from_numpy(policy_map.indices(leaf.board, leaf.moves))]
        np.testing.assert_allclose(priors, torch.softmax(legal.double(), 0).numpy(), rtol=1e-5, atol=1e-7)
        assert value == pytest.approx(float(expected_value[0]), abs=1e-5)
        assert priors.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("encoding", ["az4672", "lc0_1858"])
def test_search_with_a_network_returns_a_legal_move(encoding: str) -> None:
    evaluator = NetEvaluator(tiny_net(policy_encoding=encoding))
    for fen in FENS:
        board = chess.Board(fen)
        result = run_search(board, evaluator, SearchConfig(num_simulations=40))
        assert result.best_move in board.legal_moves
        assert int(result.visits.sum()) == 40


def test_many_games_share_network_batches() -> None:
    evaluator = NetEvaluator(tiny_net())
    trees = [GameTree(chess.Board(fen), SearchConfig(num_simulations=24), needs_planes=True) for fen in FENS * 4]
    for tree in trees:
        tree.start(add_noise=True)
    calls = run_searches(trees, evaluator)
    assert evaluator.positions / calls > len(trees)


@pytest.mark.parametrize("encoding", ["az4672", "lc0_1858"])
def test_evaluate_batch_returns_the_listed_logits_and_the_values(encoding: str) -> None:
    net = tiny_net(policy_encoding=encoding)
    evaluator = NetEvaluator(net)
    policy_map = get_policy_map(encoding)
    boards = [chess.Board(fen) for fen in FENS]
    planes = np.stack([encode_board(board) for board in boards])
    rows = np.concatenate([np.full(board.legal_moves.count(), i, np.int64) for i, board in enumerate(boards)])
    indices = np.concatenate([policy_map.indices(board, list(board.legal_moves)) for board in boards]).astype(np.int64)
    logits, values = evaluator.evaluate_batch(planes, rows, indices)
    assert logits.dtype == np.float32 and logits.shape == (len(indices),)
    assert values.dtype == np.float32 and values.shape == (len(boards),)
    with torch.no_grad():
        all_logits, expected_values = net(torch.from_numpy(planes))
    np.testing.assert_allclose(logits, all_logits[torch.from_numpy(rows), torch.from_numpy(indices)].numpy(), atol=1e-5)
    np.testing.assert_allclose(values, expected_values.numpy().reshape(-1), atol=1e-5)
    assert (evaluator.calls, evaluator.positions) == (1, len(boards))


def test_the_two_protocols_give_the_same_priors() -> None:
    evaluator = NetEvaluator(tiny_net())
    policy_map = get_policy_map("az4672")
    board = chess.Board(FENS[1])
    moves = list(board.legal_moves)
    tree = GameTree(board, SearchConfig(), needs_planes=True)
    (priors, value), = evaluator.evaluate([Leaf(board, moves, tree.history_snapshot())])
    logits, values = evaluator.evaluate_batch(
        encode_board(board)[None], np.zeros(len(moves), np.int64), policy_map.indices(board, moves).astype(np.int64)
    )
    softmax = np.exp(logits.astype(np.float64) - logits.max())
    np.testing.assert_allclose(priors, softmax / softmax.sum(), rtol=1e-5)
    assert value == pytest.approx(float(values[0]), abs=1e-6)


def test_autocast_is_validated_and_ignored_on_cpu() -> None:
    with pytest.raises(ValueError, match="autocast.*'fp8'"):
        NetEvaluator(tiny_net(), autocast="fp8")
    assert NetEvaluator(tiny_net()).autocast_dtype is None  # CPU: always float32
