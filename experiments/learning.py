"""A measured learning result: does the loop learn, from a random network, on this machine?

Not a test: it runs for about an hour and a half on 2 cores.  Two phases, each
``zerochess run`` on the ``cpu`` preset, one generation at a time, with an
evaluation of every generation's network after it is trained:

* ``endgame``: self-play from king+queen vs king and king+rook vs king starts
  that this script generates with :func:`pipeline.endgames.endgame_fens` (the
  generator of ``zerochess endgames``; ``--kinds`` for others; seeded; the
  strong side is White and to move;
  kept when Stockfish sees a forced mate in at most ``--max-mate`` moves, as
  many at each distance, so that mates happen often enough to be learnt from
  in an hour; 64 simulations on every move (no playout-cap fast searches),
  sampling by visit counts for only the first 2 plies (the 600 starts give
  the variety) and no resignation, so that every win is a mate).  With the
  cpu preset's self-play settings unchanged (half the moves on 8-visit fast
  searches, 30 plies of sampling) only 2-3 of 32 games a generation ended in
  mate even from these starts.  Unvisited moves count as Q = 0 (AlphaZero's
  pseudocode; ``search.fpu_mode=absolute``, ``fpu_value=0``): with the default
  relative FPU (parent Q - 0.25), 64 simulations of the random network found
  the mate in 6 of 10 mate-in-one starts, with Q = 0 in 10 of 10.  Uniformly random
  placements (``--max-mate 0``) gave 2 mates in 192 self-play games: the
  heavy piece is lost (127 games) or the game repeats long before a mate.
  ``presets/endgame.yaml`` carries these settings (with the starts in
  ``data/endgames.epd``) for ``zerochess run --preset endgame``.
  Per generation: the **mate rate** (mates within 50 moves, the net playing
  the strong side against Stockfish's defence, Wilson 95% interval) and the
  **score against generation 0** (colour-swapped pairs from held-out endgame
  starts, 95% interval from the pentanomial Elo interval).
* ``standard``: the standard start position.  Per generation: score against
  the random mover and against generation 0 (pairs from ``data/openings.epd``).

Beside each match score, the **conversion** (:mod:`pipeline.evaluation.conversion`):
of the games where the net led by a rook's worth of material for two plies,
how many it won (``converted W/A`` in the printed line; the ones not won by
termination in ``curve.json``).

With ``--rate``, each evaluation point also gets the net's **rating** on
Stockfish's UCI_Elo scale, made as ``zerochess rate`` makes it
(:func:`pipeline.evaluation.gating.rate_net`: ``--rate-games`` games a level,
at most ``--rate-levels`` levels of the bisection, from the standard opening
book at ``params.yaml``'s ``gating.max_plies`` (400; not the preset's or the
phase's: the levels cache is keyed by it), with the phase's search and
simulations; the cached levels are reused, or measured on first use): ``rating`` (with ``low``/``high``, its 95% interval) in ``curve.json``
and ``rating R [LO, HI]`` in the printed line.  Off by default: a rating takes
minutes (``--rate-games 10 --rate-levels 4`` is about 40 games).

Gating runs as in any ``zerochess run``, but with ``gating.always_promote``
(AlphaZero's continuous update: its paper dropped AlphaGo Zero's gate) and no
Stockfish ladder, so that self-play always uses the newest network and the
evaluation here is the only measurement.

    .venv/bin/python experiments/learning.py --out runs/learning            # both phases
    .venv/bin/python experiments/learning.py --phase endgame --minutes 40
    .venv/bin/python experiments/learning.py --phase standard --bootstrap   # supervised start first
    .venv/bin/python experiments/learning.py --phase standard --rate --rate-games 10   # + a rating each point

``--next-kinds KBBK,KQKR,KBNK`` makes the endgame phase a curriculum of two
stages: self-play starts from the ``--kinds`` starts until an evaluation
point shows every one of those kinds mated at ``--master-rate`` or more in
its held-out starts, then from the next kinds' starts (with a
``--keep-first`` share of the first ones).  The next kinds' starts are
walked back from random checkmates and labelled by a node-bounded Stockfish
mate search (``--mate-nodes``; mates in at most ``--next-max-mate`` moves, as
many at each distance); their held-out starts join the evaluation from
generation 0, so each kind's mate rate is on the curve throughout.

    .venv/bin/python experiments/learning.py --phase endgame --minutes 60 --next-kinds KBBK,KQKR,KBNK

``--backward`` makes that next stage a backward curriculum over mate
distance (:mod:`pipeline.selfplay.backward`): ``--next-train-positions``
training starts walked back from random mates *without* Stockfish (each
with its nominal distance, ``endgames_walked.json``; the held-out starts are
labelled as before), self-play from those within each kind's cap
(``--start-cap`` moves at first), and after each generation a kind's cap
rises by ``--raise-step`` when its self-play games from the upper half of its
range were mated at ``--raise-rate`` (``endgames_caps.json``; the curve's
``caps`` and ``frontier_mates``).  The nominal distance is a poor guide (of 12
KBNK starts walked back 3 plies, Stockfish saw a mate in 2 in one and none
within 50,000 nodes in 8): ``--label-nodes K`` labels each start by a
Stockfish mate search of ``K`` nodes instead, and the starts in which it
sees no mate go to the last cap.

``--bootstrap`` (seed 001's recipe before self-play): each phase starts
from a net pretrained on Stockfish-labelled positions (``zerochess label``,
then ``zerochess pretrain``): the standard phase's are reached by random
play (``--random``); the endgame phase's are starts of its hardest kinds
walked back from random mates (none held out), one random reply from each
(the weak side to move) and the first kinds' training starts
(``--positions``; ``endgame_bootstrap_positions`` in ``experiments/endgame_data.py``).  The drawing,
labelling and pretraining count in the phase's time budget, and generation 0
is that net.  ``--bootstrap-labels tablebases`` labels the endgame phase's
positions from the native distance-to-mate tables instead (``zerochess label
--tablebases``: exact results, the fastest mates as the policy, the distance
as the plies left), each position with those of its table-perfect game.
``--anchor-fraction F`` keeps those labels in self-play's training: a share F
of every replay window is drawn from them (``train.anchor_dir``,
``train.anchor_fraction``).  ``--bootstrap-dagger R`` then runs R rounds of
DAgger over the tables before self-play (:func:`dagger_net`,
``experiments/table_dagger.py``): the net plays fresh starts of the hardest kinds
against Stockfish's defence, the positions it reached are labelled by the
tables, and it trains on them beside the supervised start's labels; the
rounds count in the time budget too.

Results: ``OUT/<phase>/curve.json`` and ``OUT/<phase>/curve.png`` (``--plot-dir``
copies the plots, e.g. into ``docs/`` for the README).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "bench"))  # common.py

from actors.evaluation import run_tournament  # noqa: E402
from actors.loop import run_pipeline  # noqa: E402
from actors.runtime import init_ray  # noqa: E402
from pipeline.atomic import atomic_write  # noqa: E402
from pipeline.config import Config, load_config  # noqa: E402
from pipeline.evaluation.conversion import conversion  # noqa: E402
from pipeline.evaluation.gating import RATE_MAX_LEVELS, match_settings, rate_net  # noqa: E402
from pipeline.evaluation.match import Opening, load_openings  # noqa: E402
from pipeline.evaluation.measure import wilson_interval  # noqa: E402
from pipeline.evaluation.settings import MatchSettings  # noqa: E402
from pipeline.quiet import quiet_libraries  # noqa: E402
from pipeline.loop.ledger import Ledger  # noqa: E402
from pipeline.selfplay.backward import (  # noqa: E402
    BackwardRule,
    frontier_mates,
    load_caps,
    load_walked,
    raise_caps,
    save_caps,
    stage_fens,
    started_games,
)
from pipeline.selfplay.endgames import parse_kinds, write_epd  # noqa: E402
from pipeline.selfplay.starts import load_start_positions  # noqa: E402
from pipeline.training.tablebases import tablebase_store  # noqa: E402
from endgame_data import (  # noqa: E402  (experiments/, this script's folder)
    backward_rule,
    caps_text,
    endgame_bootstrap_positions,
    endgame_kind,
    endgame_starts,
)
from table_dagger import dagger_starts, kind_shares, mix_folder, visited_positions  # noqa: E402
from learning_args import ANCHOR_SHARD_POSITIONS, build_parser, check_arguments, rate_settings  # noqa: E402
from learning_report import figures_text, line, plot, plot_compare, plot_rounds  # noqa: E402

MATE_PLIES = 100  # 50 moves of each side
DEFENCE = "stockfish:depth=10"


def wilson(successes: float, n: int) -> tuple[float, float, float]:
    """Rate and 95% Wilson interval (``successes`` may count halves: points); NaNs for no trials."""
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    return wilson_interval(successes, n)  # type: ignore[arg-type]


@dataclass
class Phase:
    name: str
    overrides: list[str]
    eval_openings: list[Opening]
    gen0_pairs: int = 0  # 0: all of eval_openings
    eval_every: int = 1  # evaluate every this many generations (and the last one)
    rate_games: int = 0  # games a level of the rating at each evaluation point (0: no rating)
    rate_levels: int = RATE_MAX_LEVELS  # levels the rating's bisection plays at most
    rate_max_plies: int = 400  # the rating's game length (the standard params'; the levels cache is keyed by it)
    next_starts: Path | None = None  # endgame curriculum: the training starts once the first kinds are mastered
    master_kinds: tuple[str, ...] = ()  # ... namely these kinds (their held-out mate rates)
    master_rate: float = 0.9  # ... at this mate rate or more, each, at one evaluation point
    backward: BackwardRule | None = None  # the next stage by mate distance (pipeline/selfplay/backward.py)
    keep_first: float = 0.0  # ... with this share of the first kinds' training starts
    next_kinds: tuple[str, ...] = ()  # ... the next stage's kinds (their caps, in this order)


def match(players: list[str], openings: list[Opening], settings: MatchSettings, pgn: Path) -> dict[str, Any]:
    """Score of ``players[0]`` against ``players[1]`` with a 95% interval
    (Wilson's on the points: it holds the score even at 0 or 1, where the
    Elo interval is clamped)."""
    report = run_tournament(players, openings, len(openings), settings, pgn_path=str(pgn))
    summary = report.summary()["pairings"][0]  # type: ignore[index]
    _, low, high = wilson(summary["wins"] + 0.5 * summary["draws"], summary["games"])  # type: ignore[arg-type]
    converted = conversion(report.games, report.names[players[0]])
    return {"score": summary["score"], "score_low": low, "score_high": high, "games": summary["games"],
            "wins": summary["wins"], "draws": summary["draws"], "losses": summary["losses"],
            "elo": summary["elo"], "elo_low": summary["elo_low"], "elo_high": summary["elo_high"],
            "conversion": converted.as_dict()}  # fmt: skip


def mate_rate(net: str, openings: list[Opening], settings: MatchSettings, pgn: Path) -> dict[str, Any]:
    """Mates within 50 moves by ``net`` (White, strong side) against Stockfish."""
    settings = replace(settings, max_plies=MATE_PLIES)
    report = run_tournament([net, DEFENCE], openings, len(openings), settings, pgn_path=str(pgn))
    name = report.names[net]
    strong = [game for game in report.games if game.white == name and not game.aborted]
    mates = [game for game in strong if game.result == "1-0"]
    rate, low, high = wilson(len(mates), len(strong))
    plies = sorted(game.plies for game in mates)
    kind_of = {opening.name: endgame_kind(opening.fen) for opening in openings}
    kinds: dict[str, dict[str, Any]] = {}
    for kind in sorted({kind_of[game.opening] for game in strong}):
        games = [game for game in strong if kind_of[game.opening] == kind]
        won = sum(game.result == "1-0" for game in games)
        k_rate, k_low, k_high = wilson(won, len(games))
        kinds[kind] = {"mates": won, "games": len(games), "rate": k_rate, "rate_low": k_low, "rate_high": k_high}
    return {"mates": len(mates), "games": len(strong), "rate": rate, "rate_low": low, "rate_high": high,
            "median_mate_plies": plies[len(plies) // 2] if plies else None, "kinds": kinds}  # fmt: skip


def backward_step(phase: Phase, out: Path, generation: int) -> dict[str, Any]:
    """After a next-stage generation with ``--backward``: its self-play games'
    frontier mates, the caps raised by them (saved) and the start file rewritten
    when they moved.  Returns the figures for the curve."""
    folder = out.parent
    starts = load_walked(folder / "endgames_walked.json")
    caps = load_caps(folder / "endgames_caps.json", phase.next_kinds, phase.backward)  # type: ignore[arg-type]
    games = started_games(sorted((out / "run" / "shards").glob(f"gen{generation:04d}-*.parquet")))
    mates = frontier_mates(games, starts, caps)
    raised = raise_caps(caps, mates, phase.backward)  # type: ignore[arg-type]
    if raised != caps:
        kept = load_start_positions(folder / "endgames_train.epd")
        write_epd(phase.next_starts, stage_fens(starts, raised, kept, phase.keep_first),  # type: ignore[arg-type]
                  "backward " + caps_text(raised))  # fmt: skip
        save_caps(folder / "endgames_caps.json", raised)
        print(f"[endgame] generation {generation}: frontier mates "
              f"{', '.join(f'{k} {m}/{n}' for k, (m, n) in mates.items())}: caps now {caps_text(raised)}", flush=True)  # fmt: skip
    return {"caps": caps, "frontier_mates": {kind: list(pair) for kind, pair in mates.items()}}


def evaluate(phase: Phase, config: Config, net: str, gen0: str, folder: Path) -> dict[str, Any]:
    """The figures of one generation's net (``net == gen0``: no match against itself)."""
    folder.mkdir(parents=True, exist_ok=True)
    settings = replace(match_settings(config), event=f"bench learning {phase.name}")
    spec = f"net:{net}:sims={config.gating.simulations}"
    base = f"net:{gen0}:sims={config.gating.simulations}"
    result: dict[str, Any] = {}
    if net != gen0:
        pairs = phase.eval_openings[: phase.gen0_pairs] if phase.gen0_pairs else phase.eval_openings
        result["vs_gen0"] = match([spec, base], pairs, settings, folder / "vs_gen0.pgn")
    if phase.name == "endgame":
        result["mate"] = mate_rate(spec, phase.eval_openings, settings, folder / "mate.pgn")
    else:
        result["vs_random"] = match([spec, "random"], phase.eval_openings, settings, folder / "vs_random.pgn")
    if phase.rate_games:
        result["rating"] = rating(phase, config, net, folder / "rating.pgn")
    return result


def rating(phase: Phase, config: Config, net: str, pgn: Path) -> dict[str, Any]:
    """``net``'s rating on Stockfish's UCI_Elo scale (``zerochess rate``'s
    function), from the standard book at ``phase.rate_max_plies`` plies."""
    gating = replace(config.gating, openings="", max_plies=phase.rate_max_plies)  # the endgame phase's book is KQK/KRK
    rated = rate_net(replace(config, gating=gating), net, pgn, phase.rate_games, phase.rate_levels)
    keep = ("rating", "low", "high", "games", "score", "line", "chain_measured_now")
    return {key: rated[key] for key in keep} | {"levels": [level["name"] for level in rated["levels"]]}


def zerochess(*arguments: str) -> None:
    """Run one ``zerochess`` command of this checkout (its output shown); a failure stops the bench."""
    command = [sys.executable, "-m", "zerochess.cli", *arguments]
    print("$ zerochess " + " ".join(arguments), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)


def bootstrap_net(out: Path, source: list[str], labels_with: list[str], steps: int, preset: str,
                  overrides: list[str], shard_positions: int = 0) -> Path:  # fmt: skip
    """Seed 001's supervised start before self-play: the positions of
    ``source`` (``zerochess label``'s ``--random N`` or ``--positions FILE``)
    labelled as ``labels_with`` says (``--depth D`` for Stockfish, or
    ``--tablebases``), and ``steps`` steps of ``zerochess pretrain`` on them.
    ``shard_positions`` > 0 cuts the labels into shards of that many rows
    (small shards let ``--anchor-fraction`` draw a varied mix of them).
    Returns the net (a rerun reuses what is already done); the labels are in
    ``out/label/train``."""
    net = out / "pretrain" / "net.pt"
    if net.exists():
        return net
    labels = out / "label"
    sets = [item for override in overrides for item in ("--set", override)]
    if not (labels / "label.json").exists():
        sharding = ["--set", f"supervised.positions_per_shard={shard_positions}"] if shard_positions else []
        zerochess("label", *source, *labels_with, "--out", str(labels), "--overwrite",
                  "--preset", preset, *sets, *sharding)  # fmt: skip
    zerochess("pretrain", "--data", str(labels), "--out", str(out / "pretrain"), "--preset", preset, *sets,
              "--set", f"train.max_steps={steps}", "--no-progress")  # fmt: skip
    return net


def dagger_net(args: argparse.Namespace, out: Path, folder: Path, net: Path, phase: Phase, preset: str,
               minutes: float = float("inf"), begun: float | None = None) -> Path:  # fmt: skip
    """``--bootstrap-dagger`` rounds from the supervised start ``net`` (see
    ``experiments/table_dagger.py``): each round's net plays ``--dagger-starts``
    fresh starts of ``--dagger-kinds`` (else of the hardest kinds) at the
    evaluation's settings against Stockfish's defence, the tables label the
    positions it reached, and ``--dagger-steps`` steps of ``zerochess
    pretrain`` continue it on the supervised start's labels with every
    round's, those ``--dagger-repeat`` times.  Each round's net is then
    evaluated on the held-out starts (``roundNN/eval.json``, a line
    printed).  No round starts that would not end within ``minutes`` of
    ``begun`` (``time.monotonic()``), at the last round's pace.  Returns the
    last round's net (a rerun reuses finished rounds)."""
    config = load_config(ROOT / "params.yaml", phase.overrides, preset=preset)
    settings = replace(match_settings(config), event="bench learning dagger")
    store = tablebase_store(str(config.train.tablebase_location()))
    held_out = load_start_positions(out / "endgames_eval.epd")
    pool = load_start_positions(folder / "positions.epd")
    kinds, weights = kind_shares(args.dagger_kinds or args.next_kinds or args.kinds)
    max_plies = 2 * (args.next_max_mate if args.next_kinds else max(args.max_mate, 1))
    sets = [item for override in args.set for item in ("--set", override)]
    begun = time.monotonic() if begun is None else begun
    rounds: list[Path] = []
    last = 0.0  # the last round's minutes, its evaluation included
    for number in range(1, args.bootstrap_dagger + 1):
        here = folder / "dagger" / f"round{number:02d}"
        trained = here / "pretrain" / "net.pt"
        started = time.monotonic()
        if not trained.exists():
            if (started - begun) / 60 + last > minutes:
                print(f"[dagger] stopping before round {number}: the time budget ({minutes:.0f} min) is spent", flush=True)
                break
            _dagger_round(args, here, net, rounds, DaggerDraw(pool, kinds, weights, max_plies, held_out, store), config,
                          settings, preset, sets, number)  # fmt: skip
        rounds.append(here / "label")
        net = trained
        if not (here / "eval.json").exists():
            figures = evaluate(phase, config, str(net), str(net), here / "eval")
            entry = {"round": number, "minutes": round((time.monotonic() - begun) / 60, 2), **figures}
            with atomic_write(here / "eval.json") as handle:  # a round whose file exists is not evaluated again
                handle.write(json.dumps(entry, indent=1).encode("utf-8"))
        last = (time.monotonic() - started) / 60
        entry = json.loads((here / "eval.json").read_text())
        print(f"[dagger] round {number} ({entry['minutes']:.1f} min): {figures_text(entry)}", flush=True)
    save_rounds(folder / "dagger")
    return net


def save_rounds(dagger: Path) -> list[dict[str, Any]]:
    """The DAgger rounds' evaluations (``roundNN/eval.json``) as one curve:
    ``dagger/curve.json`` and, when there is a round, ``dagger/curve.png``
    (each kind's mate rate against minutes).  Returns the rounds' entries."""
    rounds = sorted((json.loads(path.read_text()) for path in dagger.glob("round*/eval.json")),
                    key=lambda entry: entry["round"])  # by number: round100 after round99
    dagger.mkdir(parents=True, exist_ok=True)
    with atomic_write(dagger / "curve.json") as handle:
        handle.write(json.dumps({"rounds": rounds}, indent=1).encode("utf-8"))
    if rounds:
        plot_rounds(rounds, dagger / "curve.png")
    return rounds


@dataclass(frozen=True)
class DaggerDraw:
    """What a DAgger round draws its starts from (:func:`dagger_starts`)."""

    pool: list[str]  # the supervised start's positions
    kinds: list[str]  # the kinds drawn
    weights: list[int]  # each kind's share of the starts (kind_quotas)
    max_plies: int  # won within this many plies by the tables
    held_out: list[str]  # never drawn
    store: Any  # the tables


def _dagger_round(args: argparse.Namespace, here: Path, net: Path, rounds: list[Path], draw: DaggerDraw,
                  config: Config, settings: MatchSettings, preset: str, sets: list[str], number: int) -> None:  # fmt: skip
    """One DAgger round into ``here`` (see :func:`dagger_net`), its starts drawn as ``draw`` says."""
    here.mkdir(parents=True, exist_ok=True)
    starts = dagger_starts(draw.pool, endgame_kind, draw.kinds, args.dagger_starts, draw.max_plies, draw.held_out,
                           draw.store, seed=100 + number, weights=draw.weights)  # fmt: skip
    write_epd(here / "starts.epd", starts, "dagger", header=f"DAgger round {number}'s starts, made by experiments/learning.py")
    games = here / "games.pgn"
    games.unlink(missing_ok=True)  # a round cut short plays again from the start
    played = mate_rate(f"net:{net}:sims={config.gating.simulations}", load_openings(here / "starts.epd"),
                       settings, games)  # fmt: skip
    visited = visited_positions(games)
    write_epd(here / "visited.epd", visited, "visited", header=f"DAgger round {number}: the net's positions")
    zerochess("label", "--positions", str(here / "visited.epd"), "--tablebases", "--out", str(here / "label"),
              "--overwrite", "--preset", preset, *sets, "--set", "supervised.positions_per_shard=2000")  # fmt: skip
    mix_folder(here / "mix", here.parent.parent / "label", [*rounds, here / "label"], args.dagger_repeat)
    zerochess("pretrain", "--data", str(here / "mix"), "--out", str(here / "pretrain"), "--init-checkpoint",
              str(net), "--preset", preset, *sets, "--set", f"train.max_steps={args.dagger_steps}",
              "--no-progress")  # fmt: skip
    print(f"[dagger] round {number}: the net before it mated {played['mates']}/{played['games']} of its "
          f"{len(starts)} starts; {len(visited)} positions labelled", flush=True)  # fmt: skip


def run_phase(phase: Phase, out: Path, minutes: float, max_generations: int, preset: str,
              init_net: Path | None = None, spent_before: float = 0.0) -> list[dict[str, Any]]:  # fmt: skip
    """Generations until the time budget (self-play, training and evaluation
    together, plus ``spent_before`` minutes already spent, e.g. on a
    supervised start) or ``max_generations``; every ``phase.eval_every``-th
    generation and the last one are evaluated.  ``init_net`` replaces the
    random generation 0."""
    out.mkdir(parents=True, exist_ok=True)
    config = load_config(ROOT / "params.yaml", phase.overrides, preset=preset)
    curve_path = out / "curve.json"
    curve: list[dict[str, Any]] = json.loads(curve_path.read_text())["generations"] if curve_path.exists() else []
    moved = any(entry.get("moved_on") for entry in curve)  # a rerun continues in the stage it reached
    next_config = _next_stage_config(phase, preset) if phase.next_starts is not None else config
    started = time.monotonic() - 60 * spent_before
    last = 0.0
    generation = max((entry["generation"] for entry in curve), default=0)
    pending: dict[str, Any] | None = None  # the newest generation, when not evaluated yet
    while True:
        _baseline(phase, config, out, curve, spent_before)
        spent = (time.monotonic() - started) / 60
        if generation >= max_generations or spent + last > minutes:
            print(f"[{phase.name}] stopping after generation {generation} ({spent:.1f} of {minutes:.0f} min)", flush=True)
            break
        generation += 1
        begun = time.monotonic()
        stage_config = next_config if moved else config
        run_config = replace(stage_config, run=replace(stage_config.run, generations=generation, hours=0.0))  # its own clock
        run_pipeline(run_config, out / "run", init_net=str(init_net) if init_net else None,
                     on_event=lambda text: print(f"[{phase.name}] {text}", flush=True))  # fmt: skip
        ledger = Ledger(out / "run" / "ledger.jsonl")
        summary = ledger.find(generation, "generation")["summary"]  # type: ignore[index]
        pending = {"generation": generation,
                   "selfplay_games": summary["selfplay"].get("games"),
                   "mean_game_length": summary["selfplay"].get("mean_game_length"),
                   "loss": {k: v for k, v in summary["train"].items() if k.startswith("loss/")}}  # fmt: skip
        if phase.next_starts is not None:
            pending["stage"] = "next" if moved else "first"
        if moved and phase.backward is not None:
            pending.update(backward_step(phase, out, generation))
        if generation % phase.eval_every == 0:
            _evaluate_entry(phase, config, out, pending, started, curve, preset)
            if not moved and mastered(phase, pending):
                moved = pending["moved_on"] = True
                _save(curve_path, phase, preset, curve)
                print(f"[{phase.name}] {', '.join(phase.master_kinds)} mastered: self-play now starts from "
                      f"{phase.next_starts}", flush=True)  # fmt: skip
            pending = None
        last = (time.monotonic() - begun) / 60
    if pending is not None:
        _evaluate_entry(phase, config, out, pending, started, curve, preset)
    _save(curve_path, phase, preset, curve)
    return sorted(curve, key=lambda entry: entry["generation"])


def mastered(phase: Phase, entry: dict[str, Any]) -> bool:
    """Has the curriculum's first stage been learnt: each of ``phase.master_kinds``
    mated at ``phase.master_rate`` or more in this entry's held-out starts?"""
    if phase.next_starts is None or "mate" not in entry:
        return False
    kinds = entry["mate"].get("kinds", {})
    return all(kind in kinds and kinds[kind]["rate"] >= phase.master_rate for kind in phase.master_kinds)


def _next_stage_config(phase: Phase, preset: str) -> Config:
    overrides = [*phase.overrides, f"selfplay.start_positions={phase.next_starts}"]
    return load_config(ROOT / "params.yaml", overrides, preset=preset)


def _evaluate_entry(phase: Phase, config: Config, out: Path, entry: dict[str, Any], started: float,
                    curve: list[dict[str, Any]], preset: str) -> None:  # fmt: skip
    ledger = Ledger(out / "run" / "ledger.jsonl")
    net = ledger.find(entry["generation"], "train")["net"]  # type: ignore[index]
    gen0 = ledger.find(0, "init")["net"]  # type: ignore[index]
    entry.update(evaluate(phase, config, net, gen0, out / f"eval{entry['generation']:04d}"))
    entry["minutes"] = round((time.monotonic() - started) / 60, 2)
    curve.append(entry)
    _save(out / "curve.json", phase, preset, curve)
    print(f"[{phase.name}] {line(entry)}", flush=True)


def _baseline(phase: Phase, config: Config, out: Path, curve: list[dict[str, Any]], minutes: float) -> None:
    """Generation 0's figures (the random network, or the supervised start
    made in ``minutes``), once its net exists."""
    ledger_path = out / "run" / "ledger.jsonl"
    if any(entry["generation"] == 0 for entry in curve) or not ledger_path.exists():
        return
    init = Ledger(ledger_path).find(0, "init")
    if init is None:
        return
    figures = evaluate(phase, config, init["net"], init["net"], out / "eval0000")
    entry = {"generation": 0, "minutes": round(minutes, 2), "loss": {}, **figures}
    curve.insert(0, entry)
    print(f"[{phase.name}] {line(entry)}", flush=True)


def _save(path: Path, phase: Phase, preset: str, curve: list[dict[str, Any]]) -> None:
    ordered = sorted(curve, key=lambda entry: entry["generation"])
    path.write_text(json.dumps({"phase": phase.name, "overrides": phase.overrides, "preset": preset,
                                "generations": ordered}, indent=2))  # fmt: skip


def recheck(phase: Phase, out: Path, generations: list[int], preset: str) -> None:
    """Evaluate finished generations again (e.g. with more games or a fixed
    evaluation) into ``OUT/<phase>/recheck.json``."""
    config = load_config(ROOT / "params.yaml", phase.overrides, preset=preset)
    ledger = Ledger(out / "run" / "ledger.jsonl")
    gen0 = ledger.find(0, "init")["net"]  # type: ignore[index]
    results = []
    for generation in generations:
        net = gen0 if generation == 0 else ledger.find(generation, "train")["net"]  # type: ignore[index]
        entry = {"generation": generation, "loss": {},
                 **evaluate(phase, config, net, gen0, out / f"recheck{generation:04d}")}  # fmt: skip
        results.append(entry)
        print(f"[{phase.name} recheck] {line(entry)}", flush=True)
        (out / "recheck.json").write_text(json.dumps({"phase": phase.name, "generations": results}, indent=2))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(__doc__)
    args = parser.parse_args(argv)
    quiet_libraries()  # no Lightning notices among the measurements
    if args.compare:
        pairs = [item.split("=", 1) for item in args.compare]
        target = Path(args.plot_dir or args.out)
        target.mkdir(parents=True, exist_ok=True)
        plot_compare([Path(folder) for _, folder in pairs], [label for label, _ in pairs], target / "learning-compare.png")
        print(target / "learning-compare.png")
        return 0

    check_arguments(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rated = rate_settings(args)
    init_ray("local")
    common = ["gating.always_promote=true", "gating.ladder=[]", "gating.max_games=4", *args.set]
    phases = []
    if args.phase in ("endgame", "both"):
        endgame_starts(args, out)
        overrides = [f"selfplay.start_positions={(out / 'endgames_train.epd').resolve()}",
                     f"gating.openings={(out / 'endgames_eval.epd').resolve()}",
                     f"selfplay.max_plies={MATE_PLIES}", f"gating.max_plies={MATE_PLIES}",
                     "selfplay.resign_threshold=-1",  # every win is a real mate
                     "selfplay.full_search_prob=1.0",  # 8-visit fast searches miss mates in one
                     f"search.temperature_plies={args.endgame_temperature_plies}",  # the starts give the variety
                     "search.fpu_mode=absolute", "search.fpu_value=0",  # AlphaZero's Q = 0 for unvisited moves
                     f"search.num_simulations={args.endgame_simulations}",
                     f"gating.simulations={args.endgame_simulations}", *common]  # fmt: skip
        stages = {"next_starts": (out / "endgames_next.epd").resolve(), "master_rate": args.master_rate,
                  "master_kinds": tuple(kind.name for kind in parse_kinds(args.kinds)), "keep_first": args.keep_first,
                  "backward": backward_rule(args) if args.backward else None,
                  "next_kinds": tuple(kind.name for kind in parse_kinds(args.next_kinds))} \
            if args.next_kinds else {}  # fmt: skip
        phases.append((Phase("endgame", overrides, load_openings(out / "endgames_eval.epd"), args.gen0_pairs,
                             args.eval_every, **rated, **stages), args.minutes))  # fmt: skip
    if args.phase in ("standard", "both"):
        openings = load_openings(ROOT / "data" / "openings.epd")[: args.standard_pairs]
        phases.append((Phase("standard", common, openings, 0, args.eval_every, **rated), args.minutes_standard))
    for phase, minutes in phases:
        folder = out / phase.name
        init_net, spent = None, 0.0
        if args.bootstrap:
            folder = out / ("bootstrap" if phase.name == "standard" else
                            "endgame-tablebases" if args.bootstrap_labels == "tablebases" else "endgame-bootstrap")
            folder.mkdir(parents=True, exist_ok=True)
            begun = time.monotonic()
            source = ["--random", str(args.bootstrap_positions)] if phase.name == "standard" else \
                ["--positions", str(endgame_bootstrap_positions(args, out, folder))]  # fmt: skip
            labels_with = ["--tablebases"] if args.bootstrap_labels == "tablebases" else \
                ["--depth", str(args.bootstrap_depth)]  # fmt: skip
            init_net = bootstrap_net(folder, source, labels_with, args.bootstrap_steps, args.preset, args.set,
                                     ANCHOR_SHARD_POSITIONS if args.anchor_fraction else 0)  # fmt: skip
            if args.bootstrap_dagger:
                init_net = dagger_net(args, out, folder, init_net, phase, args.preset, minutes, begun)
            spent = (time.monotonic() - begun) / 60
            if args.anchor_fraction:  # after DAgger: the last round's mix, every round's labels in it
                mixed = init_net.parent.parent / "mix" / "train"
                anchor = (mixed if mixed.is_dir() else folder / "label" / "train").resolve()
                phase = replace(phase, overrides=[*phase.overrides, f"train.anchor_dir={anchor}",
                                                  f"train.anchor_fraction={args.anchor_fraction}"])  # fmt: skip
            print(f"[bootstrap] supervised start {init_net} in {spent:.1f} min", flush=True)
        if args.recheck:
            recheck(phase, folder, args.recheck, args.preset)
            curve = json.loads((folder / "curve.json").read_text())["generations"]
        else:
            curve = run_phase(phase, folder, minutes, args.max_generations, args.preset, init_net, spent)
        rechecked = json.loads((folder / "recheck.json").read_text())["generations"] \
            if (folder / "recheck.json").exists() else []
        if curve:
            plot(curve, phase.name, folder / "curve.png", rechecked)
            if args.plot_dir:
                Path(args.plot_dir).mkdir(parents=True, exist_ok=True)
                shutil.copy(folder / "curve.png", Path(args.plot_dir) / f"learning-{phase.name}.png")
        print(f"\n{phase.name}: {len(curve)} generations ({' '.join(phase.overrides)})")
        for entry in curve:
            print("  " + line(entry))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
