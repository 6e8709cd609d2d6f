"""int8 inference as a measured option (issue 20): speed and agreement with fp32.

For two networks, ``NetConfig.preset("cpu")`` (6x64) and the 2x32 of
``presets/cpu.yaml``, at batch 256 with 2 torch threads (ONNX Runtime:
``intra_op_num_threads=2``), prints the median positions/s over
``--repeats`` rounds (the variants take turns within each round) of:

(a) torch fp32: ``fold_for_inference(net)`` in channels_last under
    ``torch.inference_mode()`` (the baseline of the ratios);
(b) ONNX Runtime fp32 on the file of :func:`pipeline.export.export_onnx`;
(c) ONNX Runtime int8: :func:`pipeline.quantize.quantize_onnx_int8` (static,
    QDQ, uint8 activations, per-channel 7-bit-range int8 weights, MinMax
    ranges from 512 positions of real games; the input-scale ``Mul``, the
    policy's output convolution and the value head stay float);
(d) torch int8: FX graph-mode post-training static quantization with
    PyTorch's default ``x86`` qconfig (fbgemm kernels on AVX2) of the
    batch-norm-folded net, the same layers left float as in (c); skipped, with
    the reason printed, if it cannot be built here.

Then the agreement of each reduced variant with (a) on positions of the
games in ``data/games/zerochess-mixed.pgn.gz`` (other games than the
calibration's): top-1 legal move, total variation of the legal-move softmax,
value ``|delta|``; the thresholds are ``pipeline.quantize.TOP1_MIN`` and
``VALUE_DELTA_MAX``.  A randomly initialised net's policy is near uniform
(top-1 agreement would measure noise), so each net is first trained briefly
by :func:`train_synthetic` on a *synthetic* target (a fixed move preference,
material as value): it only makes the outputs peaked, it teaches no chess.

The first line names the CPU and its int8/bf16 instruction sets, the last
line is ``int8: <verdict>``.

    .venv/bin/python bench/int8.py [--repeats 3] [--steps 200]
"""

from __future__ import annotations

import argparse
import copy
import gzip
import random
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.pgn
import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.encoding import encode_board
from models.inference_net import fold_batch_norm, fold_for_inference
from models.net import AlphaZeroNet, NetConfig
from models.policy import get_policy_map
from models.precision import cpu_bf16_support, cpu_int8_support
from pipeline.config import load_config
from pipeline.export import export_onnx
from pipeline.quantize import (
    Agreement,
    agreement,
    ort_outputs,
    ort_session,
    quantize_onnx_int8,
)
from pipeline.selfplay.adjudication import PIECE_POINTS

GAMES = Path(__file__).resolve().parents[1] / "data" / "games" / "zerochess-mixed.pgn.gz"
BATCH = 256
THREADS = 2
CALIBRATION_GAMES = range(100)
AGREEMENT_GAMES = range(200, 260)
CALIBRATION_POSITIONS = 512
AGREEMENT_POSITIONS = 1024
MIN_BATCH_SECONDS = 1.0
"""Each variant runs whole batches for at least this long per round."""

Planes = npt.NDArray[np.uint8]
Outputs = tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]
Runner = Callable[[Planes], Outputs]


# --------------------------------------------------------------------------
# Positions
# --------------------------------------------------------------------------


def cpu_line() -> str:
    """CPU model name (``/proc/cpuinfo``) and its int8/bf16 instruction sets."""
    name, flags = "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and name == "unknown CPU":
                name = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    vnni = cpu_int8_support() or ("AVX-VNNI" if "avx_vnni" in flags else None)
    amx = "amx_int8" in flags
    return (
        f"CPU: {name}; int8 VNNI: {vnni or 'no'}; AMX-INT8: {'yes' if amx else 'no'}; "
        f"bf16: {cpu_bf16_support() or 'no'}; AVX2: {'yes' if 'avx2' in flags else 'no'}"
    )


def game_boards(games: range, count: int, seed: int = 0) -> list[chess.Board]:
    """``count`` positions (boards with their move stacks) sampled from the
    games numbered ``games`` of :data:`GAMES`, excluding finished positions."""
    boards: list[chess.Board] = []
    with gzip.open(GAMES, "rt") as handle:
        for number in range(games.stop):
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            if number < games.start:
                continue
            board = game.board()
            for move in game.mainline_moves():
                board.push(move)
                if not board.is_game_over():
                    boards.append(board.copy())
    return random.Random(seed).sample(boards, min(count, len(boards)))


def random_boards(count: int, seed: int, per_game: int = 8) -> list[chess.Board]:
    """``count`` unfinished positions of seeded random games (up to 120
    plies), ``per_game`` from each game at random plies, with move stacks."""
    rng = random.Random(seed)
    boards: list[chess.Board] = []
    while len(boards) < count:
        board, plies = chess.Board(), set(rng.sample(range(2, 120), per_game))
        for ply in range(120):
            moves = list(board.legal_moves)
            if not moves:
                break
            if ply in plies:
                boards.append(board.copy())
            board.push(rng.choice(moves))
    return boards[:count]


def encode(boards: list[chess.Board]) -> Planes:
    """Planes ``uint8 [N, 119, 8, 8]`` of ``boards``."""
    return np.stack([encode_board(board) for board in boards])


def legal_indices(boards: list[chess.Board]) -> list[npt.NDArray[np.int64]]:
    """az4672 policy indices of each board's legal moves."""
    policy_map = get_policy_map("az4672")
    return [policy_map.indices(board, list(board.legal_moves)) for board in boards]


# --------------------------------------------------------------------------
# Brief synthetic training (makes the outputs peaked; teaches no chess)
# --------------------------------------------------------------------------


def preferred_move(board: chess.Board) -> chess.Move:
    """The synthetic policy target: captures first (most valuable victim,
    then least valuable attacker), else the move going furthest forward,
    then the lowest from/to squares."""

    def key(move: chess.Move) -> tuple[int, int, int, int, int]:
        victim = board.piece_type_at(move.to_square) or (
            chess.PAWN if board.is_en_passant(move) else 0
        )
        attacker = board.piece_type_at(move.from_square) or 0
        forward = chess.square_rank(move.to_square) - chess.square_rank(move.from_square)
        forward = forward if board.turn == chess.WHITE else -forward
        return (
            PIECE_POINTS.get(victim, 0) if victim else -1,
            -PIECE_POINTS.get(attacker, 0),
            forward,
            -move.from_square,
            -move.to_square,
        )

    return max(board.legal_moves, key=key)


def material_value(board: chess.Board) -> float:
    """The synthetic value target: ``tanh(material balance / 5)`` for the side to move."""
    balance = sum(
        PIECE_POINTS.get(piece.piece_type, 0) * (1 if piece.color == board.turn else -1)
        for piece in board.piece_map().values()
    )
    return float(np.tanh(balance / 5.0))


@dataclass
class TrainingSet:
    """Inputs, legal-move masks and synthetic targets of some positions."""

    planes: torch.Tensor
    legal: torch.Tensor
    policy: torch.Tensor
    value: torch.Tensor


def training_set(boards: list[chess.Board], policy_size: int = 4672) -> TrainingSet:
    """Encode ``boards`` with :func:`preferred_move` / :func:`material_value` targets."""
    policy_map = get_policy_map("az4672")
    legal = torch.zeros(len(boards), policy_size, dtype=torch.bool)
    targets = []
    for row, board in enumerate(boards):
        legal[row, torch.from_numpy(policy_map.indices(board, list(board.legal_moves)))] = True
        targets.append(int(policy_map.indices(board, [preferred_move(board)])[0]))
    return TrainingSet(
        planes=torch.from_numpy(encode(boards)),
        legal=legal,
        policy=torch.tensor(targets),
        value=torch.tensor([material_value(b) for b in boards]),
    )


def train_synthetic(
    config: NetConfig, steps: int = 200, batch: int = 32, positions: int = 2048, seed: int = 0
) -> AlphaZeroNet:
    """A net of ``config`` trained for ``steps`` SGD steps (momentum 0.9) on
    positions of random games with *synthetic* targets (:func:`preferred_move`
    as a one-hot policy over the legal moves, :func:`material_value` as the
    value); returned in eval mode.  Only meant to make the outputs peaked."""
    torch.manual_seed(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two threads on a shared 2-core machine stall in OpenMP spins
    try:
        return _sgd(config, training_set(random_boards(positions, seed)), steps, batch, seed)
    finally:
        torch.set_num_threads(threads)


def _sgd(config: NetConfig, data: TrainingSet, steps: int, batch: int, seed: int) -> AlphaZeroNet:
    """The SGD loop of :func:`train_synthetic`."""
    net = AlphaZeroNet(config).train()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        pick = torch.randint(0, len(data.policy), (batch,), generator=generator)
        logits, value = net(data.planes[pick])
        logits = logits.masked_fill(~data.legal[pick], -1e9)
        loss = F.cross_entropy(logits, data.policy[pick]) + F.mse_loss(value, data.value[pick])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return net.eval()


# --------------------------------------------------------------------------
# Variants
# --------------------------------------------------------------------------


def torch_fp32_runner(net: AlphaZeroNet) -> Runner:
    """(a): the folded net in channels_last under inference mode."""
    folded = fold_for_inference(net).to(memory_format=torch.channels_last)

    def run(planes: Planes) -> Outputs:
        with torch.inference_mode():
            policy, value = folded(torch.from_numpy(planes))
        return policy.numpy(), value.numpy()

    return run


def ort_runner(path: Path) -> Runner:
    """(b)/(c): an ONNX Runtime session on ``path`` with :data:`THREADS` threads."""
    session = ort_session(path, THREADS)
    return lambda planes: ort_outputs(session, planes)


class _Core(nn.Module):
    """The folded net after its input scaling: stem, trunk and heads (what FX
    traces; the float ``x * input_scale`` stays outside, see
    :mod:`pipeline.quantize` for why)."""

    def __init__(self, net: AlphaZeroNet) -> None:
        super().__init__()
        self.stem, self.blocks = net.stem, net.blocks
        self.policy_head, self.value_head = net.policy_head, net.value_head

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        trunk = self.blocks(F.relu(self.stem(x)))
        return self.policy_head(trunk), self.value_head(trunk)


def torch_int8_runner(net: AlphaZeroNet, calibration: Planes) -> Runner:
    """(d): FX post-training static int8 (x86 engine) of the folded net, the
    policy's output convolution and the value head left float, as in (c).
    Raises whatever torch raises if it cannot."""
    with warnings.catch_warnings():  # torch.ao's deprecation notes (moved to torchao)
        warnings.simplefilter("ignore")
        quantized, scale = _fx_int8(net, calibration)

    def run(planes: Planes) -> Outputs:
        with torch.inference_mode():
            policy, value = quantized(torch.from_numpy(planes).float() * scale)
        return policy.numpy(), value.numpy()

    run(calibration[:2])
    return run


def _fx_int8(net: AlphaZeroNet, calibration: Planes) -> tuple[nn.Module, torch.Tensor]:
    """The converted FX int8 core of ``net`` and the input scale to apply first."""
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    torch.backends.quantized.engine = "x86"
    folded = fold_batch_norm(net)
    scale = folded.input_scale.clone()
    mapping = get_default_qconfig_mapping("x86")
    mapping = mapping.set_module_name("policy_head.out", None).set_module_name("value_head", None)
    calib = torch.from_numpy(calibration).float() * scale
    prepared = prepare_fx(_Core(copy.deepcopy(folded)).eval(), mapping, example_inputs=(calib[:2],))
    with torch.inference_mode():
        for chunk in calib.split(64):
            prepared(chunk)
    return convert_fx(prepared), scale


def build_variants(
    net: AlphaZeroNet, calibration: Planes, folder: Path
) -> tuple[dict[str, Runner], dict[str, str]]:
    """The runners of (a)-(d) for ``net`` and the reasons of those skipped."""
    fp32_path = export_onnx(net, folder / "fp32.onnx")
    int8_path = quantize_onnx_int8(fp32_path, folder / "int8.onnx", calibration)
    runners = {
        "torch fp32": torch_fp32_runner(net),
        "ORT fp32": ort_runner(fp32_path),
        "ORT int8": ort_runner(int8_path),
    }
    skipped = {}
    try:
        runners["torch int8"] = torch_int8_runner(net, calibration)
    except Exception as error:  # noqa: BLE001 - any failure is reported, not fatal
        skipped["torch int8"] = (
            f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        )
    return runners, skipped


# --------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------


def rate(run: Runner, planes: Planes) -> float:
    """Positions/s of ``run`` on ``planes`` over whole batches for at least
    :data:`MIN_BATCH_SECONDS` (after one warm-up batch)."""
    run(planes)
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < MIN_BATCH_SECONDS or count == 0:
        run(planes)
        count += 1
    return count * len(planes) / elapsed


def measure(runners: dict[str, Runner], planes: Planes, repeats: int) -> dict[str, float]:
    """Median positions/s of each runner, the runners taking turns each round."""
    rates: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(repeats):
        for name, run in runners.items():
            rates[name].append(rate(run, planes))
    return {name: statistics.median(values) for name, values in rates.items()}


def agreements(runners: dict[str, Runner], boards: list[chess.Board]) -> dict[str, Agreement]:
    """Agreement of each runner but the first (the reference) with the first."""
    planes, legal = encode(boards), legal_indices(boards)
    names = list(runners)
    reference = runners[names[0]](planes)
    return {name: agreement(reference, runners[name](planes), legal) for name in names[1:]}


def peakedness(run: Runner, boards: list[chess.Board]) -> float:
    """Mean probability of the best legal move (1/#legal for a uniform net)."""
    policy, _ = run(encode(boards))
    best = []
    for logits, idx in zip(policy, legal_indices(boards)):
        legal = logits[idx].astype(np.float64)
        best.append(1.0 / np.exp(legal - legal.max()).sum())
    return float(np.mean(best))


@dataclass
class NetReport:
    """What one net's measurement found."""

    name: str
    rates: dict[str, float]
    agree: dict[str, Agreement]
    skipped: dict[str, str]


def bench_net(
    name: str, config: NetConfig, args: argparse.Namespace, data: dict[str, list[chess.Board]]
) -> NetReport:
    """Train, build, time and compare the variants of one net; prints as it goes."""
    start = time.perf_counter()
    net = train_synthetic(config, steps=args.steps)
    print(
        f"\n== {name} ({config.blocks}x{config.filters}): synthetic training {args.steps} steps "
        f"in {time.perf_counter() - start:.1f}s; mean best-move prob on game positions "
        f"{peakedness(torch_fp32_runner(net), data['agree'][:256]):.3f}"
    )
    with tempfile.TemporaryDirectory() as folder:
        runners, skipped = build_variants(net, encode(data["calibration"]), Path(folder))
        for variant, reason in skipped.items():
            print(f"  {variant}: skipped ({reason})")
        rates = measure(runners, encode(data["timing"]), args.repeats)
        agree = agreements(runners, data["agree"])
    base = rates["torch fp32"]
    for variant, value in rates.items():
        print(f"  {variant:<11} {value:9.0f} pos/s  x{value / base:.2f}")
    for variant, result in agree.items():
        print(f"  agreement {variant:<11} {result.line()}")
    return NetReport(name, rates, agree, skipped)


def _best_int8(report: NetReport) -> tuple[str, float]:
    """The fastest int8 variant whose agreement holds (or the fastest, if none)."""
    int8 = {k: v for k, v in report.rates.items() if "int8" in k}
    holding = {k: v for k, v in int8.items() if report.agree[k].holds()} or int8
    name = max(holding, key=holding.__getitem__)
    return name, holding[name]


def verdict(reports: list[NetReport]) -> str:
    """The last line: is the best agreeing int8 faster than both fp32
    variants on every net, and does its agreement hold there?"""
    parts, faster, holds = [], True, True
    for report in reports:
        name, int8 = _best_int8(report)
        torch_fp32, ort_fp32 = report.rates["torch fp32"], report.rates["ORT fp32"]
        faster &= int8 > max(torch_fp32, ort_fp32)
        holds &= report.agree[name].holds()
        agree = report.agree[name]
        parts.append(
            f"{report.name}: {name} x{int8 / torch_fp32:.2f} torch fp32, x{int8 / ort_fp32:.2f} ORT fp32, "
            f"top1 {agree.top1:.3f}, |dv| {agree.value_mean:.4f}"
        )
    speed = "faster than fp32" if faster else "not faster than fp32"
    agreed = "agreement holds" if holds else "agreement fails"
    adopt = "adopt in auto on this CPU" if faster and holds else "keep fp32 in auto"
    return f"int8: {speed} here, {agreed} -> {adopt} ({'; '.join(parts)})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="rounds of timing (median)")
    parser.add_argument("--steps", type=int, default=200, help="synthetic training steps per net")
    args = parser.parse_args(argv)
    print(cpu_line())
    torch.set_num_threads(THREADS)
    print(
        f"torch {torch.__version__}, onnxruntime {__import__('onnxruntime').__version__}, "
        f"batch {BATCH}, {THREADS} threads, {args.repeats} rounds"
    )
    data = {
        "calibration": game_boards(CALIBRATION_GAMES, CALIBRATION_POSITIONS, seed=1),
        "agree": game_boards(AGREEMENT_GAMES, AGREEMENT_POSITIONS, seed=2),
        "timing": game_boards(range(100, 160), BATCH, seed=3),
    }
    nets = [
        ("cpu preset", NetConfig.preset("cpu")),
        ("cpu.yaml", load_config(None, preset="cpu").net),
    ]
    reports = [bench_net(name, config, args, data) for name, config in nets]
    print(verdict(reports))


if __name__ == "__main__":
    main()
