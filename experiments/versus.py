"""Same-generation matches between two ``experiments/learning.py`` runs: which
change learns faster, once both runs sit at the clamp of their own yardsticks?

Against generation 0 and the random mover, every run of the heads command
scores 0.99-1.00 from about 8 minutes on, so two runs of an ablation cannot
be told apart there.  This script plays each chosen generation's net of run
A against the same generation's net of run B (colour-swapped pairs from the
opening book, the same simulations for both) and prints the score of A with
its 95% Elo interval, and A's conversion (games it led by a rook's worth of
material for two plies, and how many of those it won).

    .venv/bin/python experiments/versus.py runs/abl-no-ml/standard runs/abl-ref/standard \\
        --generations 25,50,100,last --out runs/versus-no-ml

``last`` is each run's last trained generation (they may differ: equal wall
time, not equal generations).  The match settings are run B's (its
``curve.json``: preset and overrides, so B is the reference), with
``--max-plies`` (400: room to convert), ``--sims`` and ``--set`` on top.
Results go to ``OUT/versus.json`` after each match (a rerun plays only the
matches it lacks) and each match's games to ``OUT/genA-genB.pgn``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.atomic import atomic_write  # noqa: E402
from pipeline.config import Config, load_config  # noqa: E402
from pipeline.loop.ledger import Ledger  # noqa: E402


class VersusError(ValueError):
    """A run folder or a generation that cannot be matched (the message names it)."""


def trained_nets(folder: Path) -> dict[int, Path]:
    """Generation -> its net (0: the initial one), from the run's ledger (``FOLDER/run/ledger.jsonl``)."""
    ledger_path = folder / "run" / "ledger.jsonl"
    if not ledger_path.exists():
        raise VersusError(f"{folder}: no run ledger at {ledger_path} (give a phase folder, e.g. runs/NAME/standard)")
    nets = {}
    for entry in Ledger(ledger_path).entries:
        if entry.get("stage") in ("init", "train") and entry.get("net"):  # init: generation 0
            nets[int(entry["generation"])] = _net_path(Path(entry["net"]))
    if not nets:
        raise VersusError(f"{ledger_path}: no network yet")
    return nets


def _net_path(path: Path) -> Path:
    """The ledger's net path, as written (relative to where the bench ran: the checkout)."""
    return path if path.is_absolute() or path.exists() else ROOT / path


def pick_pairs(text: str, nets_a: dict[int, Path], nets_b: dict[int, Path]) -> list[tuple[int, int]]:
    """``--generations`` (e.g. ``25,50,last``) as (A's, B's) generation pairs."""
    pairs = []
    for item in (part.strip() for part in text.split(",") if part.strip()):
        if item == "last":
            pairs.append((max(nets_a), max(nets_b)))
            continue
        try:
            generation = int(item)
        except ValueError as error:
            raise VersusError(f"--generations: {item!r} is neither a generation number nor 'last'") from error
        for name, nets in (("A", nets_a), ("B", nets_b)):
            if generation not in nets:
                raise VersusError(f"--generations: run {name} has no generation {generation} "
                                  f"(it has {min(nets)}..{max(nets)})")  # fmt: skip
        pairs.append((generation, generation))
    if not pairs:
        raise VersusError(f"--generations: no generation in {text!r}")
    return list(dict.fromkeys(pairs))


def check_nets(pairs: list[tuple[int, int]], nets_a: dict[int, Path], nets_b: dict[int, Path]) -> None:
    """Two different nets, both on disk, for each pair (before any game is played)."""
    for gen_a, gen_b in pairs:
        if nets_a[gen_a].resolve() == nets_b[gen_b].resolve():
            raise VersusError(f"generation {gen_a} of both runs is the same net {nets_a[gen_a]}: give two runs")
        for run, generation, net in (("A", gen_a, nets_a[gen_a]), ("B", gen_b, nets_b[gen_b])):
            if not net.exists():
                raise VersusError(f"run {run}, generation {generation}: the ledger's net {net} is not on disk")


def match_config(folder_b: Path, extra: list[str], max_plies: int, sims: int | None) -> Config:
    """Run B's config (its curve's preset and overrides) with this script's settings on top."""
    curve_path = folder_b / "curve.json"
    if not curve_path.exists():
        raise VersusError(f"{folder_b}: no curve.json (the reference run's settings are read from it)")
    curve = json.loads(curve_path.read_text())
    overrides = [*curve.get("overrides", []), f"gating.max_plies={max_plies}", *extra]
    if sims is not None:
        overrides.append(f"gating.simulations={sims}")
    return load_config(ROOT / "params.yaml", overrides, preset=curve.get("preset"))


def versus_line(record: dict[str, Any]) -> str:
    """One match as a README table row: generations, score with W/D/L, Elo, conversion."""
    m = record["match"]
    converted = m.get("conversion", {})
    ahead = f"{converted.get('won', 0)}/{converted.get('ahead', 0)}" if converted else "-"
    elo = "{:+.0f} [{:+.0f}, {:+.0f}]".format(m["elo"], m["elo_low"], m["elo_high"]).replace("-", "−")
    return (f"| {record['generation_a']} / {record['generation_b']} | {m['score']:.3g} "
            f"(+{m['wins']} ={m['draws']} −{m['losses']}) | {elo} | {ahead} |")  # fmt: skip


def play(args: argparse.Namespace) -> list[dict[str, Any]]:
    from actors.runtime import init_ray
    from learning import match  # experiments/learning.py: the same match and conversion as its curve
    from pipeline.evaluation.gating import match_settings

    folder_a, folder_b = Path(args.run_a), Path(args.run_b)
    config = match_config(folder_b, args.set, args.max_plies, args.sims)
    nets_a, nets_b = trained_nets(folder_a), trained_nets(folder_b)
    pairs = pick_pairs(args.generations, nets_a, nets_b)
    check_nets(pairs, nets_a, nets_b)
    book = args.openings or config.gating.book
    openings = _book(book, "--openings" if args.openings else "gating.openings")[: args.pairs]
    settings = replace(match_settings(config), event="bench versus")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    setup = {"run_a": str(folder_a), "run_b": str(folder_b), "openings": book,
             "pairs": len(openings), "max_plies": args.max_plies, "sims": config.gating.simulations, "set": args.set}
    done = _load(out / "versus.json", setup)
    init_ray("local")
    for gen_a, gen_b in pairs:
        key = f"{gen_a}-{gen_b}"
        if key not in done:
            players = [f"net:{nets_a[gen_a]}:sims={setup['sims']}", f"net:{nets_b[gen_b]}:sims={setup['sims']}"]
            done[key] = {"generation_a": gen_a, "generation_b": gen_b, "players": players,
                         "match": match(players, openings, settings, out / f"gen{key}.pgn")}  # fmt: skip
            _save(out / "versus.json", setup, done)
        print(versus_line(done[key]), flush=True)
    return [done[f"{a}-{b}"] for a, b in pairs]


def _book(name: str, option: str) -> list[Any]:
    """The EPD book's openings (a relative path is the checkout's, as the bench's own)."""
    from pipeline.evaluation.match import load_book

    path = Path(name)
    return load_book(str(path if path.is_absolute() or path.exists() else ROOT / path), option)


def _load(path: Path, setup: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The matches already played into ``path``, if they were played with ``setup``."""
    if not path.exists():
        return {}
    saved = json.loads(path.read_text())
    for key, value in setup.items():
        if saved.get("setup", {}).get(key) != value:
            raise VersusError(f"{path}: its matches were played with {key}={saved.get('setup', {}).get(key)!r}, "
                              f"not {value!r}; give another --out")  # fmt: skip
    return saved["matches"]


def _save(path: Path, setup: dict[str, Any], matches: dict[str, dict[str, Any]]) -> None:
    with atomic_write(path) as handle:
        handle.write(json.dumps({"setup": setup, "matches": matches}, indent=2).encode())


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_a", help="phase folder of run A (e.g. runs/abl-no-ml/standard): its score is printed")
    parser.add_argument("run_b", help="phase folder of run B, the reference (its settings are the match's)")
    parser.add_argument("--generations", default="25,50,100,last", help="generations to match (numbers, 'last')")
    parser.add_argument("--pairs", type=int, default=50, help="openings of the book, each played with both colours")
    parser.add_argument("--openings", help="EPD book (default: the config's gating.openings)")
    parser.add_argument("--max-plies", type=int, default=400, help="a game is drawn after this many plies")
    parser.add_argument("--sims", type=int, help="simulations a move (default: the config's gating.simulations)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more config overrides")
    parser.add_argument("--out", default="runs/versus", help="folder for versus.json and the games")
    args = parser.parse_args(argv)
    for name in ("pairs", "max_plies", "sims"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        play(args)
    except ValueError as error:  # VersusError, or a bad --set (the config's errors name the key)
        print(f"versus.py: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
