"""The ``zerochess`` command line (also ``.venv/bin/python -m zerochess``).

Each subcommand lives in a module of :mod:`zerochess.commands` with
``add_arguments(parser)`` and ``run(args) -> int``.  Only the module of the
command being run is imported (``zerochess --help`` imports none of them),
and commands import torch, Ray, MLflow and Lightning inside ``run``: help
and argument errors answer at once.

Errors are one line, ``zerochess CMD: error: ...``, exit status 2: domain
errors (``ValueError`` subclasses, which carry the file, key or value they
are about), operating-system errors (a missing or unwritable path) and both
of these raised inside a Ray task (the task's traceback is dropped, the
original error's message kept).  ``--verbose`` adds the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence

# name -> (module under zerochess.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "the whole loop: self-play -> training -> gating, generation after generation (resumable)"),
    "demo": ("demo", "play a few self-play games with PUCT search and print them as PGN"),
    "analyse": ("analyse", "search one position (FEN) and print the moves' visits, priors and values"),
    "selfplay": ("selfplay", "play self-play games on Ray actors and write (s, pi, z) Parquet shards"),
    "evaluate": ("evaluate", "play a match or round-robin between players (net, stockfish, uct, random) on Ray"),
    "gate": ("gate", "play a candidate net against the best and a Stockfish ladder; promote on SPRT evidence"),
    "rate": ("rate", "rate a net on Stockfish's UCI_Elo scale: Stockfish levels by bisection, one rating and its interval"),
    "train": ("train", "train the network on a window of shards (Lightning), log to MLflow, export net.pt"),
    "pgn2shards": ("pgn2shards", "convert PGN games (plain, .gz, .bz2, .zst) into train/held-out shards"),
    "label": ("label", "label positions with Stockfish MultiPV into train/held-out shards"),
    "sfgames": ("sfgames", "Stockfish self-play games at a node limit as PGN with evals (the supervised phase's expert)"),
    "pretrain": ("pretrain", "train on supervised shards, report held-out top-1/top-5 move accuracy"),
    "params": ("params", "validate params.yaml (plus --set overrides) and print the flattened config"),
    "stage": ("stage", "steps of the DVC pipeline (dvc.yaml): initial net, self-play, window, report"),
    "uci": ("uci", "run the network as a UCI engine on stdin/stdout (for GUIs and cutechess-cli)"),
    "play": ("play", "play a game against the network in the terminal"),
    "export": ("export", "export a checkpoint's network to ONNX (batch norm folded, dynamic batch), checked with ONNX Runtime"),
    "endgames": ("endgames", "write endgame start positions (KQK, KRK, KBNK, ...) as EPD, optionally Stockfish-checked"),
}

EXIT_ERROR = 2
VERBOSE_HELP = ("debug logging (the Ray workers' too), zerochess run's stage lines, the libraries' own notices "
                "and tracebacks of errors")  # fmt: skip

# The first commands a newcomer needs (command line after "zerochess", what it does):
# ``zerochess --help`` shows them above the command list, and tests/test_cli.py
# parses each with its command's own parser.
FIRST_STEPS: tuple[tuple[str, str], ...] = (
    ("run --preset demo --out runs/demo", "the loop that make demo runs"),
    ("play --checkpoint CHECKPOINT", "play a game against a network"),
    ("uci --checkpoint CHECKPOINT", "a network as a UCI engine"),
)
CHECKPOINT_HINT = (
    "CHECKPOINT: a network file, or a run folder (runs/demo: the net its best.txt names),\n"
    "or champion --run runs/demo: the net that the demo's gate promoted last."
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``zerochess`` parser; with ``only``, just that subcommand gets its
    arguments (the others' modules are not imported)."""
    parser = argparse.ArgumentParser(
        prog="zerochess",
        description=_description(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text, formatter_class=_DefaultsShown)
        # After the command too (make demo DEMO_ARGS=-v); unset there, the one before it counts.
        command.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)
        if only is None or only == name:
            _command_module(module).add_arguments(command)
    return parser


def _description() -> str:
    """The top-level help's text above the command list: what zerochess is,
    then :data:`FIRST_STEPS` (one line each) and what CHECKPOINT stands for."""
    width = max(len(command) for command, _ in FIRST_STEPS) + len("zerochess ") + 2
    steps = "\n".join(f"  {'zerochess ' + command:<{width}}{text}" for command, text in FIRST_STEPS)
    return (
        "AlphaZero for chess: self-play with PUCT search, training and evaluation.\n\n"
        f"First steps:\n{steps}\n{CHECKPOINT_HINT}\n"
        "Each command has its own help: zerochess COMMAND --help."
    )


class _DefaultsShown(argparse.HelpFormatter):
    """Help that states an option's default when it has one worth saying
    (not None, False or empty) and its text does not mention it already."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (action.option_strings and default not in (None, False, [], argparse.SUPPRESS)
                and "default" not in text and "%(default)" not in text):  # fmt: skip
            text += " (default: %(default)s)"
        return text


def _command_module(module: str):  # noqa: ANN202 - a module object
    return importlib.import_module(f"zerochess.commands.{module}")


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand in ``argv`` (its first word that is not an option)."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def one_line(error: BaseException) -> str:
    """The message of ``error`` as one line.

    An error raised inside a Ray task reaches the driver as a
    ``RayTaskError`` whose text is the remote traceback (with colour codes);
    its ``cause`` is the original error, whose message is what the user needs.
    """
    cause = _ray_cause(error)
    if cause is not None:
        return one_line(cause)
    if isinstance(error, OSError) and error.strerror:
        where = error.filename if error.filename is not None else ""
        text = f"{where}: {error.strerror}" if where != "" else error.strerror
    else:
        text = str(error) or type(error).__name__
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return "; ".join(lines) if len(lines) <= 3 else f"{lines[0]} (... {len(lines) - 1} more lines)"


def _ray_cause(error: BaseException) -> BaseException | None:
    """The original error inside a Ray ``RayTaskError``, else None."""
    cause = getattr(error, "cause", None)
    from_ray = type(error).__module__.split(".")[0] == "ray" or "RayTaskError" in type(error).__name__
    return cause if from_ray and isinstance(cause, BaseException) and cause is not error else None


def user_error(error: BaseException) -> bool:
    """Whether ``error`` is about the user's input or environment (answered in
    one line) rather than a bug (answered with a traceback)."""
    cause = _ray_cause(error)
    if cause is not None:
        return user_error(cause)
    return isinstance(error, (ValueError, OSError)) and not isinstance(error, (UnicodeError, AssertionError))


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Lightning prints its records through its own handler: not a second time through ours.
    logging.getLogger("lightning").propagate = False
    if not verbose:
        from pipeline.quiet import quiet_libraries

        quiet_libraries()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=_command_named(argv) or "")
    args = parser.parse_args(argv)
    _configure_logging(args.verbose)
    module = _command_module(COMMANDS[args.command][0])
    try:
        return int(module.run(args))
    except KeyboardInterrupt:
        print(f"zerochess {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # zerochess params | head: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141
    except Exception as error:  # noqa: BLE001 - sorted into user errors and bugs below
        if not user_error(error):
            raise
        if args.verbose:
            traceback.print_exc()
        # Domain errors carry their context (file, key, FEN): show it plainly.
        print(f"zerochess {args.command}: error: {one_line(error)}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
