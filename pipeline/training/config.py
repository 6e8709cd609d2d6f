"""Training parameters (the ``train`` section of ``params.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.config_errors import check_at_least, require

VALUE_TARGETS = ("z", "q", "mix")

OPTIMIZERS = ("sgd", "adam", "adamw")
L2_MODES = ("loss", "optimizer")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "32-true", "16-mixed", "bf16-mixed", "64-true")


@dataclass(frozen=True)
class TrainConfig:
    """Training parameters."""

    batch_size: int = 256
    """positions per optimizer step on each device (the effective batch is ``batch_size`` times
    the number of devices)."""
    max_steps: int = 1000
    """optimizer steps of one ``zerochess train`` run (a resumed run counts the steps done before
    it)."""
    optimizer: str = "sgd"
    """``sgd`` (with momentum, as in the papers), ``adam`` or ``adamw``."""
    learning_rate: float = 0.02
    """initial learning rate (AlphaZero: 0.2 at batch 4096; supervised AlphaGo: 0.003)."""
    momentum: float = 0.9
    """SGD momentum (AlphaZero: 0.9)."""
    nesterov: bool = False
    """Nesterov momentum for SGD."""
    lr_milestones: tuple[int, ...] = ()
    """steps at which the learning rate is multiplied by ``lr_decay`` (AlphaZero's piecewise
    schedule 0.2 -> 0.02 -> 0.002 -> 0.0002 is three milestones with decay 0.1)."""
    lr_step_size: int = 0
    """decay the learning rate by ``lr_decay`` every this many steps (the supervised AlphaGo
    recipe); 0 = off.  Use this or ``lr_milestones``, not both."""
    lr_decay: float = 0.1
    """factor applied at each milestone or step."""
    l2: float = 1e-4
    """the coefficient c of the regulariser c * ||theta||^2 over the convolution and linear
    weights (never BatchNorm parameters nor biases); AlphaZero: 1e-4."""
    l2_mode: str = "loss"
    """``loss``: the term is part of the loss; ``optimizer``: it is applied as the optimizer's
    ``weight_decay`` (2c on the same weights; decoupled for AdamW).  ``loss/l2`` logs c *
    ||theta||^2 either way."""
    value_weight: float = 1.0
    """weight of the value MSE in the loss (AlphaZero: 1)."""
    moves_left_weight: float = 1.0
    """weight of the moves-left term (a Huber loss on plies left / 20) for a net with a
    moves-left head (``net.moves_left``)."""
    value_target: str = "z"
    """what the value head learns: ``z`` the game outcome (AlphaZero), ``q`` the stored root q of
    the search (or Stockfish's value of a labelled position), ``mix`` ``(1 - q_ratio) * z +
    q_ratio * q`` (lc0's q-ratio; KataGo trains on both).  Rows with no q (PGN games) keep z."""
    q_ratio: float = 0.5
    """the weight of q in a ``mix`` target, in [0, 1]."""
    known_endings: bool = False
    """rescore the z of positions whose result is known from their material (queen, rook, two
    bishops on opposite colours, bishop and knight against a bare king, no piece to be taken): a
    win for the strong side (:mod:`pipeline.training.known_endings`; a stand-in for lc0's
    tablebase rescoring); before the q mix."""
    tablebases: bool = False
    """rescore the z and the plies left of positions that the native core's distance-to-mate
    tables hold (pawnless, at most four pieces; :mod:`pipeline.training.tablebases`): lc0's
    tablebase rescoring with tables built here, after ``known_endings``."""
    tablebase_dir: str = ""
    """the folder those tables are kept in (built on first use: 12 to 22 s and 32 MiB for a
    four-piece table); empty: ``$XDG_CACHE_HOME/zerochess/tablebases``."""
    soft_policy_weight: float = 0.0
    """weight of KataGo's auxiliary soft-policy loss: the cross-entropy of the net's soft-policy
    logits (``net.soft_policy``) against the policy target raised to 1/4 and renormalised, which
    keeps learning the order of the unlikely moves; 0 = off (needs ``net.soft_policy: true`` when
    > 0)."""
    weight_average_decay: float = 0.0
    """d > 0 exports the moving average of the weights, ``avg <- d * avg + (1 - d) * weights``
    after every step (batch-norm statistics included), instead of the last weights: the net that
    plays and is gated (:mod:`pipeline.training.averaging`; lczero-training exports a weight
    average too); 0 = off."""
    anchor_dir: str = ""
    """a folder of labelled shards (``zerochess label``'s ``train`` split, e.g. the tables'
    labels of a supervised start) whose positions join every replay window, so that self-play's
    targets do not wash out what the labels taught; empty: none."""
    anchor_fraction: float = 0.0
    """the share of each window's positions drawn from ``anchor_dir``, in [0, 1): with n
    self-play positions, ``n * f / (1 - f)`` of its positions, whole shards in an order that
    changes with the data (:func:`pipeline.training.window.anchor_pieces`); 0 = off."""
    window_positions: int = 500_000
    """the replay window: training positions (``full_search`` rows) read from the most recent
    shards."""
    window_growth: float = 0.0
    """KataGo's growing window: with N training positions in the data folder the window is ``c *
    (1 + growth * ((N / c) ** exponent - 1) / exponent)`` for c = ``window_positions`` once N >
    c; 0 = a fixed window."""
    window_exponent: float = 0.65
    """the exponent of the growing window (KataGo: 0.65)."""
    shuffle_buffer: int = 50_000
    """positions mixed together when shuffling: whole shards are loaded until the buffer holds at
    least this many, then their rows are permuted together (the async trainer keeps two such
    groups: the one it serves and the next, loading)."""
    check_legality: bool = False
    """also check that every move with policy mass is legal when validating shards (slow: ~90 us
    per distinct position)."""
    loader_workers: int = 0
    """DataLoader worker processes per device (0 = decode in the training process); the
    synchronous loop's trainer only (the async trainer decodes in a thread,
    :mod:`pipeline.training.prefetch`)."""
    device: str = "auto"
    """``auto`` (CUDA when present, else CPU), ``cpu`` or ``cuda``."""
    devices: int = 0
    """devices to train on; 0 = all that are present (several GPUs train with DDP)."""
    precision: str = "32-true"
    """Lightning precision: ``auto`` (``bf16-mixed`` on a GPU that supports bf16, else
    ``16-mixed``; on a CPU ``bf16-mixed`` only where it computes bf16 natively, AMX-BF16 or
    AVX512-BF16, else ``32-true``: bf16 is 20-35x slower on AVX2 CPUs), or one of Lightning's
    ``32-true``, ``bf16-mixed``, ``16-mixed``, ``64-true``."""
    threads: int = 0
    """``torch.set_num_threads`` for training; 0 = torch's default."""
    deterministic: bool = True
    """deterministic algorithms (warn where none exists), so the same seed gives the same
    weights, also across a resume."""
    checkpoint_every: int = 100
    """steps between checkpoints (one more at the end)."""
    log_every: int = 10
    """steps between metric logs to MLflow."""
    experiment: str = "zerochess"
    """MLflow experiment name."""
    seed: int = 0
    """seed of initialisation, shuffling and sampling."""

    def __post_init__(self) -> None:
        check_at_least("train", self, ("batch_size", "max_steps", "window_positions", "shuffle_buffer",
                                       "checkpoint_every", "log_every"), 1)  # fmt: skip
        check_at_least("train", self, ("lr_step_size", "loader_workers", "devices", "threads", "seed", "l2",
                                       "value_weight", "moves_left_weight", "window_growth", "soft_policy_weight"),
                                      0)  # fmt: skip
        require("train.learning_rate", self.learning_rate, self.learning_rate > 0, "> 0")
        require("train.momentum", self.momentum, 0 <= self.momentum < 1, "in [0, 1)")
        require("train.lr_decay", self.lr_decay, 0 < self.lr_decay <= 1, "in (0, 1]")
        require("train.window_exponent", self.window_exponent, 0 < self.window_exponent <= 1, "in (0, 1]")
        _choice("optimizer", self.optimizer, OPTIMIZERS)
        _choice("value_target", self.value_target, VALUE_TARGETS)
        require("train.q_ratio", self.q_ratio, 0 <= self.q_ratio <= 1, "in [0, 1]")
        require("train.weight_average_decay", self.weight_average_decay, 0 <= self.weight_average_decay < 1,
                "in [0, 1)")  # fmt: skip
        require("train.anchor_fraction", self.anchor_fraction, 0 <= self.anchor_fraction < 1, "in [0, 1)")
        require("train.anchor_dir", self.anchor_dir, self.anchor_fraction == 0 or bool(self.anchor_dir.strip()),
                "a folder of labelled shards when train.anchor_fraction > 0")  # fmt: skip
        _choice("l2_mode", self.l2_mode, L2_MODES)
        _choice("device", self.device, DEVICES)
        _choice("precision", self.precision, PRECISIONS)
        require("train.experiment", self.experiment, bool(self.experiment.strip()), "a non-empty name")
        milestones = list(self.lr_milestones)
        increasing = all(a < b for a, b in zip([0, *milestones], milestones, strict=False))
        require("train.lr_milestones", milestones, increasing, "strictly increasing positive steps")
        both = bool(milestones) and self.lr_step_size > 0
        require("train.lr_step_size", self.lr_step_size, not both, "0 when lr_milestones are set")

    def tablebase_folder(self) -> str:
        """The folder of the distance-to-mate tables when ``tablebases`` is on, else ""."""
        return self.tablebase_location() if self.tablebases else ""

    def tablebase_location(self) -> str:
        """The folder of the distance-to-mate tables, whether or not training rescores with them."""
        if self.tablebase_dir:
            return str(Path(self.tablebase_dir).expanduser())
        # Imported here: it loads the native core, which only this setting needs.
        from pipeline.training.tablebases import default_tablebase_dir

        return str(default_tablebase_dir())


def _choice(name: str, value: str, options: tuple[str, ...]) -> None:
    """``train.NAME must be A or B or C, got VALUE`` unless ``value`` is one of ``options``."""
    require(f"train.{name}", value, value in options, " or ".join(options))
