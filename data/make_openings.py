"""Build ``data/openings.epd``, the project's small book of varied openings.

Each line below is a named opening as SAN moves from the start position; the
book holds the position after them (EPD with an ``id`` op).  Run
``python data/make_openings.py`` to rebuild; python-chess rejects any illegal
move, so the book is valid by construction.
"""

from __future__ import annotations

from pathlib import Path

import chess

LINES = {
    "Ruy Lopez, Morphy": "e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6",
    "Ruy Lopez, Berlin": "e4 e5 Nf3 Nc6 Bb5 Nf6 O-O Nxe4",
    "Italian, Giuoco Piano": "e4 e5 Nf3 Nc6 Bc4 Bc5 c3 Nf6",
    "Two Knights": "e4 e5 Nf3 Nc6 Bc4 Nf6 d3 Be7",
    "Scotch": "e4 e5 Nf3 Nc6 d4 exd4 Nxd4 Nf6",
    "Petrov": "e4 e5 Nf3 Nf6 Nxe5 d6 Nf3 Nxe4",
    "King's Gambit Accepted": "e4 e5 f4 exf4 Nf3 g5",
    "Vienna": "e4 e5 Nc3 Nf6 f4 d5",
    "Sicilian, Najdorf": "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6",
    "Sicilian, Dragon": "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 g6",
    "Sicilian, Sveshnikov": "e4 c5 Nf3 Nc6 d4 cxd4 Nxd4 Nf6 Nc3 e5",
    "Sicilian, Alapin": "e4 c5 c3 Nf6 e5 Nd5",
    "French, Winawer": "e4 e6 d4 d5 Nc3 Bb4",
    "French, Advance": "e4 e6 d4 d5 e5 c5 c3 Nc6",
    "Caro-Kann, Classical": "e4 c6 d4 d5 Nc3 dxe4 Nxe4 Bf5",
    "Caro-Kann, Advance": "e4 c6 d4 d5 e5 Bf5",
    "Pirc": "e4 d6 d4 Nf6 Nc3 g6",
    "Alekhine": "e4 Nf6 e5 Nd5 d4 d6",
    "Scandinavian": "e4 d5 exd5 Qxd5 Nc3 Qa5",
    "Queen's Gambit Declined": "d4 d5 c4 e6 Nc3 Nf6 Bg5 Be7",
    "Queen's Gambit Accepted": "d4 d5 c4 dxc4 Nf3 Nf6 e3 e6",
    "Slav": "d4 d5 c4 c6 Nf3 Nf6 Nc3 dxc4",
    "Semi-Slav": "d4 d5 c4 c6 Nf3 Nf6 Nc3 e6",
    "King's Indian": "d4 Nf6 c4 g6 Nc3 Bg7 e4 d6",
    "Grunfeld": "d4 Nf6 c4 g6 Nc3 d5 cxd5 Nxd5",
    "Nimzo-Indian": "d4 Nf6 c4 e6 Nc3 Bb4 Qc2",
    "Queen's Indian": "d4 Nf6 c4 e6 Nf3 b6 g3 Bb7",
    "Benoni": "d4 Nf6 c4 c5 d5 e6 Nc3 exd5",
    "Dutch, Leningrad": "d4 f5 g3 Nf6 Bg2 g6",
    "London System": "d4 d5 Bf4 Nf6 e3 c5",
    "English, Symmetrical": "c4 c5 Nc3 Nc6 g3 g6",
    "English, Reversed Sicilian": "c4 e5 Nc3 Nf6 Nf3 Nc6",
    "Reti": "Nf3 d5 g3 Nf6 Bg2 c6",
    "Catalan": "d4 Nf6 c4 e6 g3 d5 Bg2 Be7",
    "Bird": "f4 d5 Nf3 Nf6 e3 g6",
    "Larsen": "b3 e5 Bb2 Nc6 e3 Nf6",
}


def build() -> list[str]:
    lines = []
    for name, moves in LINES.items():
        board = chess.Board()
        for san in moves.split():
            board.push_san(san)
        lines.append(board.epd(id=name))
    return lines


if __name__ == "__main__":
    target = Path(__file__).with_name("openings.epd")
    target.write_text("# zerochess opening book, made by data/make_openings.py\n" + "\n".join(build()) + "\n")
    print(f"wrote {target} ({len(LINES)} openings)")
