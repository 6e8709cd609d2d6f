"""The zerochess command line, run as a user would."""

from __future__ import annotations

import shlex

import chess.pgn
import io
import pytest

from tests.helpers import ROOT
from tests.helpers.cli import run_zerochess, set_args
from tests.helpers.nets import TINY_NET
from zerochess.cli import COMMANDS, FIRST_STEPS, build_parser, main


def test_help_lists_every_subcommand() -> None:
    result = run_zerochess("--help")
    assert result.returncode == 0
    for name in COMMANDS:
        assert name in result.stdout


NEWCOMER_COMMANDS = (
    "zerochess run --preset demo --out runs/demo",
    "zerochess play --checkpoint CHECKPOINT",
    "zerochess uci --checkpoint CHECKPOINT",
)


def test_help_shows_the_first_commands_on_its_first_screen() -> None:
    result = run_zerochess("--help")
    assert result.returncode == 0, result.stderr
    screen = result.stdout.splitlines()[:24]
    assert "  COMMAND" in screen, "the command list starts on the first screen"
    above_the_list = [line.strip() for line in screen[: screen.index("  COMMAND")]]
    for command in NEWCOMER_COMMANDS:
        assert any(line.startswith(command + " ") for line in above_the_list), (command, result.stdout[:2000])
    assert any(line.startswith("CHECKPOINT:") for line in above_the_list)


@pytest.mark.parametrize("step", [command for command, _ in FIRST_STEPS])
def test_each_first_step_parses_with_its_commands_own_arguments(step: str) -> None:
    argv = shlex.split(step.replace("CHECKPOINT", "net.pt"))
    args = build_parser(only=argv[0]).parse_args(argv)
    assert args.command == argv[0]
    if argv[0] == "run":
        assert (args.preset, args.out) == ("demo", "runs/demo")
    else:
        assert args.checkpoint == "net.pt"


@pytest.mark.parametrize(("argv", "verbose"), [
    (["run"], False), (["-v", "run"], True), (["run", "--preset", "demo", "-v"], True), (["run", "--verbose"], True),
])  # fmt: skip
def test_verbose_goes_before_or_after_the_command(argv: list[str], verbose: bool) -> None:
    assert build_parser(only="run").parse_args(argv).verbose is verbose  # after: make demo DEMO_ARGS=-v


def test_params_prints_flattened_config(capsys) -> None:  # noqa: ANN001
    assert main(["params", "--params", str(ROOT / "params.yaml")]) == 0
    assert "search.num_simulations=200" in capsys.readouterr().out


def test_bad_parameter_exits_2_with_the_key(capsys) -> None:  # noqa: ANN001
    assert main(["params", "--params", "none", "--set", "search.num_simulations=-4"]) == 2
    assert "search.num_simulations must be >= 1, got -4" in capsys.readouterr().err


def test_analyse_finds_mate_with_uniform_priors(capsys) -> None:  # noqa: ANN001
    fen = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"
    assert main(["analyse", "--params", "none", "--fen", fen, "--uniform", "--simulations", "300"]) == 0
    assert "best=Ra8#" in capsys.readouterr().out


def test_analyse_rejects_an_invalid_fen(capsys) -> None:  # noqa: ANN001
    assert main(["analyse", "--params", "none", "--fen", "not a fen", "--uniform"]) == 2
    assert "invalid FEN 'not a fen'" in capsys.readouterr().err


def test_demo_prints_legal_games_in_pgn() -> None:
    result = run_zerochess(
        "demo", "--params", "none",
        *set_args(TINY_NET),
        "--set", "demo.games=2", "--set", "demo.max_plies=6", "--set", "demo.simulations=8",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = io.StringIO(result.stdout)
    games = [chess.pgn.read_game(text), chess.pgn.read_game(text)]
    for game in games:
        assert game is not None and not game.errors
        assert len(list(game.mainline_moves())) == 6
        assert game.headers["Result"] == "1/2-1/2" and game.headers["Termination"] == "max_plies"
    assert "network evaluations" in result.stdout
