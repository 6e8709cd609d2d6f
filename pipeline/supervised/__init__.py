"""The supervised phase: PGN games and Stockfish labels into shards, pretraining.

* :mod:`pipeline.supervised.pgn`: streaming PGN reading and game checks;
* :mod:`pipeline.supervised.convert`: games into train/held-out shards;
  :mod:`pipeline.supervised.splits` (inputs, output folders, the split) and
  :mod:`pipeline.supervised.rows` (a game's rows, the shard buffer) under it;
* :mod:`pipeline.supervised.labelling`: Stockfish MultiPV labels;
* :mod:`pipeline.supervised.pretrain`: training on them and the held-out
  move-prediction accuracy.

This package imports nothing heavy on import (``pipeline.config`` imports its
:mod:`~pipeline.supervised.config`).
"""
