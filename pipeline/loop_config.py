"""Parameters of the whole loop (the ``run`` section of ``params.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config_errors import ConfigError


@dataclass(frozen=True)
class RunConfig:
    """Generations of self-play -> training -> gating.

    Attributes:
        generations: generations to play (a rerun continues up to this count).
        games_per_generation: self-play games per generation.
        model_name: MLflow registered model the promoted nets are versions of
            (the latest promoted carries the alias ``champion``).
        shards: where the self-play shards go: a folder or a pyarrow
            filesystem URI (``s3://bucket/run/shards``, ``gs://...``,
            ``file:///...``); empty: ``OUT/shards``.
    """

    generations: int = 10
    games_per_generation: int = 128
    model_name: str = "zerochess"
    shards: str = ""

    def __post_init__(self) -> None:
        for name in ("generations", "games_per_generation"):
            if getattr(self, name) < 1:
                raise ConfigError(f"run.{name} must be >= 1, got {getattr(self, name)!r}")
        if not self.model_name:
            raise ConfigError("run.model_name must not be empty")
