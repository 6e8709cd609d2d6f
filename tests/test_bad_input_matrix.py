"""Every subcommand crossed with each class of bad input that applies to it.

Each case must exit 2 with one line ``zerochess CMD: error: ...`` that names
the thing (the file, option, key, spec or address), no traceback and no
colour codes on stderr, nothing on stdout, no output folder left behind and
no MLflow run left RUNNING.  The cases run in-process through
``zerochess.cli.main`` (an import of torch per case would cost ~2 s); a few run
as real subprocesses, as a user types them.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.bad_nets import write_nets
from tests.helpers.cli import run_zerochess, set_args
from tests.helpers.nets import TINY_NET
from zerochess.cli import COMMANDS, main



@dataclass(frozen=True)
class Case:
    """One bad input: ``argv`` (``{name}`` placeholders are files of the
    ``bad`` fixture; ``{out}`` a fresh path that must stay absent) and the
    text the error line must contain (parts separated by `` … `` in order
    or not)."""

    kind: str
    argv: tuple[str, ...]
    needle: str

    @property
    def command(self) -> str:
        return self.argv[0]


def _checkpoint_cases(command: str, option: str, *extra: str) -> list[Case]:
    """Missing, a folder, empty, corrupt bytes and another architecture given
    as the checkpoint of ``option`` (``net:`` specs take the prefix)."""
    spec = option.endswith(":")
    cases = []
    for kind, name, needle in [("missing file", "missing", "missing/net.pt"), ("folder", "folder", "is a folder"),
                               ("empty file", "empty", "empty.pt"), ("corrupt bytes", "corrupt", "corrupt.pt"),
                               ("wrong architecture", "arch", "arch.pt")]:  # fmt: skip
        argv = [command, *extra, f"{option}{{{name}}}"] if spec else [command, *extra, option, f"{{{name}}}"]
        cases.append(Case(f"{option.strip('-:')} {kind}", tuple(argv), needle))
    return cases


def _config_cases(command: str, *extra: str) -> list[Case]:
    """Bad ``--set`` values and keys, and a parameter file with an unknown key."""
    return [
        Case("--set wrong type", (command, *extra, "--set", "search.num_simulations=abc"),
             "--set: search.num_simulations must be an integer"),
        Case("--set out of range", (command, *extra, "--set", "search.num_simulations=-4"),
             "search.num_simulations must be >= 1"),
        Case("--set unknown key", (command, *extra, "--set", "search.num_simulatons=3"),
             "--set: unknown key(s) search.num_simulatons"),
        Case("params unknown key", (command, *_drop_params(extra), "--params", "{params_unknown}"),
             "params_unknown.yaml … unknown key(s) search.bogus"),
    ]  # fmt: skip


def _drop_params(extra: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(a for i, a in enumerate(extra) if a != "--params" and (i == 0 or extra[i - 1] != "--params"))


def _cases() -> list[Case]:
    none = ("--params", "none")
    players = ("--player", "random", "--player", "uct:rollouts=2")
    cases: list[Case] = []
    # run: the whole loop
    run = ("--params", "none", "--preset", "tiny", "--out", "{out}")
    cases += _checkpoint_cases("run", "--init-checkpoint", *run)
    cases[-1] = Case("init-checkpoint wrong architecture", ("run", *run, "--init-checkpoint", "{good}"), "good.pt")
    cases += _config_cases("run", *run)
    cases += [
        Case("params missing file", ("run", "--params", "{missing}", "--out", "{out}"), "missing/net.pt"),
        Case("params folder", ("run", "--params", "{folder}", "--out", "{out}"), "folder"),
        Case("params corrupt bytes", ("run", "--params", "{corrupt}", "--out", "{out}"), "corrupt.pt"),
        Case("unwritable --out", ("run", "--preset", "tiny", "--params", "none", "--out", "{file}/out"), "--out"),
        Case("unreachable Ray", ("run", *run, "--ray-address", "127.0.0.1:1"), "127.0.0.1:1"),
        Case("unknown preset", ("run", "--params", "none", "--preset", "tinny", "--out", "{out}"), "tinny"),
        Case("zero budget", ("run", *run, "--hours", "0"), "--hours must be a number of hours > 0, got '0'"),
        Case("negative budget", ("run", *run, "--hours", "-1"), "--hours must be a number of hours > 0"),
        Case("budget not a number", ("run", *run, "--hours", "four"), "got 'four'"),
    ]  # fmt: skip
    # evaluate: players on Ray
    ev = (*none, "--out", "{out}")
    cases += _checkpoint_cases("evaluate", "--player=net:", *ev, "--player", "random")
    cases += _config_cases("evaluate", *ev, *players)
    cases += [
        Case("unknown player kind", ("evaluate", *ev, "--player", "rnadom", "--player", "random"), "'rnadom'"),
        Case("unknown player field", ("evaluate", *ev, "--player", "stockfish:skil=0", "--player", "random"),
             "['skil']"),
        Case("bad player number", ("evaluate", *ev, "--player", "uct:rollouts=x", "--player", "random"),
             "rollouts must be a int"),
        Case("negative count", ("evaluate", *ev, *players, "--games", "-2"), "--games must be >= 1, got -2"),
        Case("zero count", ("evaluate", *ev, *players, "--games", "0"), "--games must be >= 1, got 0"),
        Case("one player", ("evaluate", *ev, "--player", "random"), "at least two players"),
        Case("bad --sprt", ("evaluate", *ev, *players, "--sprt", "ten"), "--sprt"),
        Case("invalid FEN in the book", ("evaluate", *ev, *players, "--openings", "{bad_book}"), "bad_book.epd"),
        Case("missing book", ("evaluate", *ev, *players, "--openings", "{missing}"), "--openings"),
        Case("unwritable --out", ("evaluate", *none, *players, "--out", "{file}/out"), "--out"),
        Case("unreachable Ray", ("evaluate", *ev, *players, "--ray-address", "127.0.0.1:1"), "127.0.0.1:1"),
    ]  # fmt: skip
    # gate: candidate against best
    gate = (*none, "--out", "{out}")
    cases += _checkpoint_cases("gate", "--candidate", *gate)
    cases += _config_cases("gate", *gate, "--candidate", "{good}")
    cases += [
        Case("best checkpoint corrupt", ("gate", *gate, "--candidate", "{good}", "--best", "{corrupt}"), "corrupt.pt"),
        Case("best is the candidate", ("gate", *gate, "--candidate", "{good}", "--best", "{good}"), "same file"),
        Case("unwritable --out", ("gate", *none, "--candidate", "{good}", "--out", "{file}/out"), "--out"),
        Case("unreachable Ray", ("gate", *gate, "--candidate", "{good}", "--ray-address", "127.0.0.1:1"),
             "127.0.0.1:1"),
    ]  # fmt: skip
    # rate: a checkpoint on Stockfish's UCI_Elo scale (the checkpoint is positional)
    rt = (*none, "--out", "{out}", "--cache", "{out}/levels.json")
    cases += [Case(f"checkpoint {kind}", ("rate", *rt, f"{{{name}}}"), needle)
              for kind, name, needle in [("missing file", "missing", "missing/net.pt"), ("folder", "folder", "is a folder"),
                                         ("empty file", "empty", "empty.pt"), ("corrupt bytes", "corrupt", "corrupt.pt"),
                                         ("wrong architecture", "arch", "arch.pt")]]  # fmt: skip
    cases += _config_cases("rate", *rt, "{good}")
    cases += [
        Case("zero count", ("rate", *rt, "{good}", "--games", "0"), "--games"),
        Case("negative count", ("rate", *rt, "{good}", "--games", "-2"), "--games"),
        Case("missing Stockfish", ("rate", *rt, "{good}", "--stockfish", "{missing}"), "--stockfish"),
        Case("missing book", ("rate", *rt, "{good}", "--openings", "{missing}"), "--openings"),
        Case("unwritable --out", ("rate", *none, "{good}", "--out", "{file}/out"), "--out"),
        Case("compare one net", ("rate", *rt, "--compare", "{good}"), "--compare takes two nets A B, got 1"),
        Case("compare a corrupt net", ("rate", *rt, "--compare", "{good}", "{corrupt}"), "corrupt.pt"),
    ]  # fmt: skip
    # selfplay: games on Ray into shards
    sp = (*none, "--out", "{out}", "--games", "2")
    cases += _checkpoint_cases("selfplay", "--checkpoint", *sp)
    cases = cases[:-1]  # any architecture plays: a checkpoint is loaded with its own config
    cases += [Case("checkpoint wrong architecture", ("selfplay", *sp, "--checkpoint", "{arch}"), "arch.pt")]
    cases += _config_cases("selfplay", *sp)
    cases += [
        Case("negative count", ("selfplay", *none, "--out", "{out}", "--games", "-5"), "--games must be >= 1, got -5"),
        Case("zero count", ("selfplay", *none, "--out", "{out}", "--games", "0"), "--games must be >= 1, got 0"),
        Case("unwritable --out", ("selfplay", *none, "--games", "2", "--out", "{file}/out"), "--out"),
        Case("unreachable Ray", ("selfplay", *sp, "--ray-address", "127.0.0.1:1"), "127.0.0.1:1"),
    ]  # fmt: skip
    # train: Lightning on shards
    tr = (*none, *set_args(TINY_NET), "--out", "{out}")
    cases += _checkpoint_cases("train", "--init-checkpoint", *tr, "--data", "{shards}")
    cases += _config_cases("train", *tr, "--data", "{shards}")
    cases += [
        Case("data missing", ("train", *tr, "--data", "{missing}"), "--data"),
        Case("data is a file", ("train", *tr, "--data", "{corrupt}"), "--data"),
        Case("data folder without shards", ("train", *tr, "--data", "{folder}"), "no shards"),
        Case("unwritable --out", ("train", *none, "--data", "{shards}", "--out", "{file}/out"), "--out"),
    ]  # fmt: skip
    # pretrain: supervised shards
    pt = (*none, *set_args(TINY_NET), "--out", "{out}")
    cases += [
        Case("data missing", ("pretrain", *pt, "--data", "{missing}"), "missing"),
        Case("init-checkpoint corrupt bytes", ("pretrain", *pt, "--data", "{pgn_out}", "--init-checkpoint",
                                              "{corrupt}"), "corrupt.pt"),
        Case("init-checkpoint wrong architecture", ("pretrain", *pt, "--data", "{pgn_out}", "--init-checkpoint",
                                                   "{arch}"), "arch.pt"),
        Case("--set unknown key", ("pretrain", *pt, "--data", "{pgn_out}", "--set", "train.bogus=1"),
             "--set: unknown key(s) train.bogus"),
        Case("unwritable --out", ("pretrain", *none, "--data", "{pgn_out}", "--out", "{file}/out"), "--out"),
    ]  # fmt: skip
    # pgn2shards: PGN files
    pg = (*none, "--no-ray", "--out", "{out}")
    bad_pgns = {  # the file given to --pgn: the kind of bad input, the text its error names
        "missing": ("missing file", "missing"), "folder": ("folder without PGN", "no PGN files"),
        "empty_pgn": ("empty file", "empty.pgn: empty file"), "binary_pgn": ("binary file", "binary.pgn: binary data"),
        "corrupt_zst": ("corrupt .zst", "corrupt Zstandard data"),
        "truncated_zst": ("truncated .zst", "truncated Zstandard data"),
        "corrupt_gz": ("corrupt .gz", "corrupt.pgn.gz"),
    }  # fmt: skip
    cases += [Case(kind, ("pgn2shards", *pg, "--pgn", f"{{{name}}}"), needle)
              for name, (kind, needle) in bad_pgns.items()]
    cases += [
        Case("zero count", ("pgn2shards", *pg, "--pgn", "{good_pgn}", "--workers", "0"), "--workers"),
        Case("--set unknown key", ("pgn2shards", *pg, "--pgn", "{good_pgn}", "--set", "supervised.bogus=1"),
             "--set: unknown key(s) supervised.bogus"),
        Case("unwritable --out", ("pgn2shards", *none, "--no-ray", "--pgn", "{good_pgn}", "--out", "{file}/out"),
             "--out"),
    ]  # fmt: skip
    # label: Stockfish MultiPV
    lb = (*none, "--out", "{out}")
    cases += [
        Case("missing file", ("label", *lb, "--positions", "{missing}"), "missing"),
        Case("folder", ("label", *lb, "--shards", "{missing}"), "missing"),
        Case("empty file", ("label", *lb, "--positions", "{empty_pgn}"), "empty.pgn: is empty"),
        Case("zero count", ("label", *lb, "--random", "0"), "--random must be >= 1"),
        Case("negative count", ("label", *lb, "--random", "3", "--depth", "-1"), "--depth must be >= 1"),
        Case("--set wrong type", ("label", *lb, "--random", "3", "--set", "supervised.label_depth=deep"),
             "--set: supervised.label_depth must be an integer"),
        Case("unwritable --out", ("label", *none, "--random", "3", "--out", "{file}/out"), "--out"),
    ]  # fmt: skip
    # sfgames: Stockfish self-play games as PGN
    sf = (*none, "--out", "{out}/games.pgn")
    cases += [
        Case("zero count", ("sfgames", *sf, "--games", "0"), "--games must be >= 1, got 0"),
        Case("negative count", ("sfgames", *sf, "--games", "2", "--nodes", "-5"), "--nodes must be >= 1, got -5"),
        Case("missing Stockfish", ("sfgames", *sf, "--games", "2", "--stockfish", "{missing}"), "missing"),
        Case("--out a folder", ("sfgames", *none, "--games", "2", "--out", "{folder}"), "is a folder"),
        Case("unwritable --out", ("sfgames", *none, "--games", "2", "--out", "{file}/out/games.pgn"), "--out"),
    ]  # fmt: skip
    # analyse, uci, play, demo: one network in this process
    cases += _checkpoint_cases("analyse", "--checkpoint", *none, "--simulations", "2")
    cases = cases[:-1]
    cases += [
        Case("checkpoint wrong architecture", ("analyse", *none, "--checkpoint", "{arch}"), "arch.pt"),
        Case("invalid FEN", ("analyse", *none, "--uniform", "--fen", "not a fen"), "invalid FEN 'not a fen'"),
        Case("--set unknown key", ("analyse", *none, "--uniform", "--set", "search.bogus=1"),
             "--set: unknown key(s) search.bogus"),
    ]  # fmt: skip
    for command in ("uci", "play"):
        cases += _checkpoint_cases(command, "--checkpoint", *none)
        cases += [Case("--set unknown key", (command, *none, "--uniform", "--set", "search.bogus=1"),
                       "--set: unknown key(s) search.bogus")]  # fmt: skip
    cases += [
        Case("invalid FEN", ("play", *none, "--uniform", "--fen", "not a fen"), "invalid FEN 'not a fen'"),
        Case("zero count", ("play", *none, "--uniform", "--simulations", "0"), "--simulations must be >= 1"),
    ]  # fmt: skip
    cases += _checkpoint_cases("demo", "--checkpoint", *none)
    cases += [Case("zero count", ("demo", *none, "--set", "demo.games=0"), "demo.games must be >= 1")]
    # export: a checkpoint into an ONNX file
    ex = ("export", "--onnx")
    cases += [
        Case("checkpoint missing file", (*ex, "{missing}", "{out}/net.onnx"), "missing/net.pt"),
        Case("checkpoint folder", (*ex, "{folder}", "{out}/net.onnx"), "is a folder"),
        Case("checkpoint corrupt bytes", (*ex, "{corrupt}", "{out}/net.onnx"), "corrupt.pt"),
        Case("unwritable OUT", (*ex, "{good}", "{file}/net.onnx"), "file"),
    ]
    # params: the configuration alone
    cases += _config_cases("params", *none)
    cases += [
        Case("unknown precision", ("params", *none, "--set", "selfplay.precision=fp8"),
             "selfplay.precision must be one of auto, fp32, bf16, got 'fp8'"),
        Case("unknown compile mode", ("params", *none, "--set", "gating.compile=fast"),
             "gating.compile must be one of auto, eager, jit, inductor, onnxruntime, got 'fast'"),
        Case("unknown train precision", ("params", *none, "--set", "train.precision=bf8"), "train.precision"),
    ]  # fmt: skip
    cases += [
        Case("params missing file", ("params", "--params", "{missing}"), "missing/net.pt"),
        Case("params folder", ("params", "--params", "{folder}"), "folder"),
        Case("params corrupt bytes", ("params", "--params", "{corrupt}"), "corrupt.pt"),
        Case("unknown preset", ("params", *none, "--preset", "tinny"), "unknown preset 'tinny'"),
    ]  # fmt: skip
    # endgames: start positions into an EPD file
    eg = ("endgames", "--out", "{out}")
    cases += [
        Case("unknown kind", (*eg, "--kinds", "KXK"), "endgame kind 'KXK'"),
        Case("zero count", (*eg, "--count", "0"), "--count must be >= 1, got 0"),
        Case("missing --exclude", (*eg, "--exclude", "{missing}"), "missing/net.pt"),
        Case("invalid FEN in --exclude", (*eg, "--exclude", "{bad_book}"), "bad_book.epd"),
        Case("unwritable --out", ("endgames", "--out", "{file}/starts.epd"), "--out"),
    ]
    # stage: the DVC steps
    cases += [
        Case("checkpoint missing file", ("stage", "selfplay", *none, "--generation", "1", "--checkpoint", "{missing}",
                                         "--out", "{out}"), "missing/net.pt"),
        Case("--set unknown key", ("stage", "init", *none, "--set", "net.bogus=1", "--out", "{out}/net.pt"),
             "--set: unknown key(s) net.bogus"),
        Case("unwritable --out", ("stage", "init", *none, "--out", "{file}/net.pt"), "file"),
    ]  # fmt: skip
    return cases


CASES = _cases()
SUBPROCESS_CASES = [  # as a user types them: the real entry point, imports and all
    Case("unknown player kind", ("evaluate", "--params", "none", "--out", "{out}", "--player", "rnadom",
                                 "--player", "random"), "'rnadom'"),
    Case("checkpoint folder", ("gate", "--params", "none", "--out", "{out}", "--candidate", "{folder}"), "is a folder"),
    Case("corrupt .zst", ("pgn2shards", "--params", "none", "--out", "{out}", "--pgn", "{corrupt_zst}"),
         "corrupt Zstandard data"),
    Case("--set unknown key", ("run", "--params", "none", "--out", "{out}", "--set", "run.generatons=1"),
         "--set: unknown key(s) run.generatons"),
]  # fmt: skip


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The bad (and a few good) inputs, by name."""
    import gzip

    import zstandard

    root = tmp_path_factory.mktemp("bad")
    write_nets(root)
    (root / "params_unknown.yaml").write_text("search:\n  bogus: 1\n")
    (root / "bad_book.epd").write_text("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\nnot a fen\n")
    game = '[Event "x"]\n[Result "1-0"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n\n'
    (root / "good.pgn").write_text(game * 40)
    (root / "empty.pgn").write_bytes(b"")
    (root / "binary.pgn").write_bytes(b"PK\x03\x04\x00\x00" + os.urandom(2000))
    frame = zstandard.ZstdCompressor().compress((game * 200).encode())
    corrupt = bytearray(frame)
    corrupt[len(corrupt) // 2 : len(corrupt) // 2 + 16] = b"\xff" * 16
    (root / "corrupt.pgn.zst").write_bytes(bytes(corrupt))
    (root / "truncated.pgn.zst").write_bytes(frame[: len(frame) // 2])
    (root / "corrupt.pgn.gz").write_bytes(gzip.compress((game * 200).encode())[:40] + b"\x00garbage" * 20)
    # shards: supervised ones (pgn2shards) train as well as self-play ones
    assert main(["pgn2shards", "--params", "none", "--no-ray", "--pgn", str(root / "good.pgn"),
                 "--out", str(root / "pgn_out")]) == 0  # fmt: skip
    names = {p.stem.split(".")[0]: str(p) for p in root.iterdir()}
    names.update(missing=str(root / "missing" / "net.pt"), file=str(root / "a_file"),
                 shards=str(root / "pgn_out" / "train"), pgn_out=str(root / "pgn_out"),
                 corrupt_zst=str(root / "corrupt.pgn.zst"), truncated_zst=str(root / "truncated.pgn.zst"),
                 corrupt_gz=str(root / "corrupt.pgn.gz"), empty_pgn=str(root / "empty.pgn"),
                 binary_pgn=str(root / "binary.pgn"), good_pgn=str(root / "good.pgn"),
                 corrupt=str(root / "corrupt.pt"), empty=str(root / "empty.pt"))  # fmt: skip
    return names


def _argv(case: Case, bad: dict[str, str], out: Path) -> list[str]:
    return [arg.format(out=out, **bad) for arg in case.argv]


def _running_runs(folder: Path) -> int:
    """MLflow runs left RUNNING in any ``mlflow.db`` under ``folder``."""
    count = 0
    for db in folder.rglob("mlflow.db"):
        with sqlite3.connect(db) as connection:
            count += connection.execute("SELECT count(*) FROM runs WHERE status = 'RUNNING'").fetchone()[0]
    return count


LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d\S* (INFO|DEBUG) ")


def check_answer(case: Case, code: int, out_text: str, err_text: str, out: Path) -> None:
    command = case.command
    # besides the error line, stderr may hold progress and INFO log lines, nothing that reads as an error
    lines = [line for line in err_text.splitlines() if "error" in line.lower() and not LOG_LINE.match(line)]
    assert code == 2, f"{case}: exit {code}\n{err_text[-3000:]}"
    assert "Traceback" not in err_text, err_text[-3000:]
    assert "\x1b[" not in err_text, err_text[-3000:]
    assert len(lines) == 1, f"{case}: {len(lines)} error lines on stderr:\n{err_text[-3000:]}"
    assert lines[0].startswith(f"zerochess {command}: error: "), lines[0]
    for part in case.needle.split(" … "):
        assert part in lines[0], f"{part!r} not in {lines[0]!r}"
    assert out_text == "", f"partial output on stdout: {out_text[:500]!r}"
    assert not out.exists(), f"{out} was created"
    assert _running_runs(out.parent) == 0


def _case_id(case: Case) -> str:
    return f"{case.command}-{case.kind}"


def test_matrix_covers_every_subcommand() -> None:
    commands = {case.command for case in CASES}
    kinds = {case.kind for case in CASES}
    print(f"bad-input matrix: {len(CASES)} in-process + {len(SUBPROCESS_CASES)} subprocess cases, "
          f"{len(commands)} subcommands x {len(kinds)} kinds of bad input")  # fmt: skip
    assert commands == set(COMMANDS)
    assert len({_case_id(case) for case in CASES}) == len(CASES)  # every case named once


@pytest.mark.parametrize("case", CASES, ids=[f"{_case_id(c)} ({i + 1}/{len(CASES)})" for i, c in enumerate(CASES)])
def test_bad_input_is_one_line_exit_2(case: Case, bad: dict[str, str], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(sys, "stdin", open(os.devnull))  # noqa: SIM115 - uci/play must not wait for input
    out = tmp_path / "out"
    code = main(_argv(case, bad, out))
    captured = capsys.readouterr()
    check_answer(case, code, captured.out, captured.err, out)


@pytest.mark.parametrize("case", SUBPROCESS_CASES, ids=[_case_id(c) for c in SUBPROCESS_CASES])
def test_bad_input_in_a_real_process(case: Case, bad: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_zerochess(*_argv(case, bad, out), timeout=120)
    check_answer(case, result.returncode, result.stdout, result.stderr, out)
