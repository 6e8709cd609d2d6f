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
    "Ruy Lopez, Exchange": "e4 e5 Nf3 Nc6 Bb5 a6 Bxc6 dxc6 O-O f6",
    "Ruy Lopez, Marshall": "e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6 O-O Be7 Re1 b5 Bb3 O-O c3 d5",
    "Evans Gambit": "e4 e5 Nf3 Nc6 Bc4 Bc5 b4 Bxb4 c3 Ba5",
    "Four Knights": "e4 e5 Nf3 Nc6 Nc3 Nf6 Bb5 Bb4",
    "Philidor": "e4 e5 Nf3 d6 d4 Nf6 Nc3 Nbd7",
    "Danish Gambit": "e4 e5 d4 exd4 c3 dxc3 Bc4 cxb2 Bxb2",
    "Center Game": "e4 e5 d4 exd4 Qxd4 Nc6 Qe3 Nf6",
    "Bishop's Opening": "e4 e5 Bc4 Nf6 d3 c6",
    "Sicilian, Taimanov": "e4 c5 Nf3 e6 d4 cxd4 Nxd4 Nc6 Nc3 Qc7",
    "Sicilian, Kan": "e4 c5 Nf3 e6 d4 cxd4 Nxd4 a6 Bd3",
    "Sicilian, Scheveningen": "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 e6",
    "Sicilian, Accelerated Dragon": "e4 c5 Nf3 Nc6 d4 cxd4 Nxd4 g6 c4",
    "Sicilian, Closed": "e4 c5 Nc3 Nc6 g3 g6 Bg2 Bg7 d3 d6",
    "Sicilian, Rossolimo": "e4 c5 Nf3 Nc6 Bb5 g6 O-O Bg7",
    "Sicilian, Smith-Morra": "e4 c5 d4 cxd4 c3 dxc3 Nxc3 Nc6 Nf3 d6",
    "French, Tarrasch": "e4 e6 d4 d5 Nd2 Nf6 e5 Nfd7",
    "French, Exchange": "e4 e6 d4 d5 exd5 exd5 Nf3 Nf6",
    "French, Classical": "e4 e6 d4 d5 Nc3 Nf6 Bg5 Be7",
    "Caro-Kann, Panov": "e4 c6 d4 d5 exd5 cxd5 c4 Nf6 Nc3 e6",
    "Modern": "e4 g6 d4 Bg7 Nc3 d6 f4",
    "Owen": "e4 b6 d4 Bb7 Bd3 e6",
    "Nimzowitsch Defence": "e4 Nc6 Nf3 d6 d4 Nf6",
    "Queen's Gambit, Exchange": "d4 d5 c4 e6 Nc3 Nf6 cxd5 exd5 Bg5 c6",
    "Queen's Gambit, Tarrasch": "d4 d5 c4 e6 Nc3 c5 cxd5 exd5 Nf3 Nc6",
    "Albin Countergambit": "d4 d5 c4 e5 dxe5 d4 Nf3 Nc6",
    "Chigorin": "d4 d5 c4 Nc6 Nc3 dxc4 Nf3 Nf6",
    "Bogo-Indian": "d4 Nf6 c4 e6 Nf3 Bb4 Bd2 Qe7",
    "Benko Gambit": "d4 Nf6 c4 c5 d5 b5 cxb5 a6",
    "Old Indian": "d4 Nf6 c4 d6 Nc3 Nbd7 e4 e5",
    "Dutch, Stonewall": "d4 f5 c4 Nf6 g3 e6 Bg2 d5 Nf3 c6",
    "Trompowsky": "d4 Nf6 Bg5 Ne4 Bf4 c5",
    "Colle": "d4 d5 Nf3 Nf6 e3 e6 Bd3 c5 c3",
    "Budapest Gambit": "d4 Nf6 c4 e5 dxe5 Ng4 Bf4 Nc6",
    "English, Four Knights": "c4 e5 Nc3 Nf6 Nf3 Nc6 g3 d5",
    "English, Anglo-Indian": "c4 Nf6 Nc3 e6 e4 d5 e5",
    "King's Indian Attack": "Nf3 d5 g3 c5 Bg2 Nc6 O-O e5 d3",
    "Polish": "b4 e5 Bb2 Bxb4 Bxe5 Nf6",
    "Grob": "g4 d5 Bg2 Bxg4 c4 c6",
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
