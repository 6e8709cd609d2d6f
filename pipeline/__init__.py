"""zerochess pipeline: configuration, self-play, storage, training, evaluation and the CLI."""
