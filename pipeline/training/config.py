"""Training parameters (the ``train`` section of ``params.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config_errors import ConfigError


@dataclass(frozen=True)
class TrainConfig:
    """Training parameters.

    Attributes:
        batch_size: positions per optimizer step.
        max_steps: optimizer steps of one ``zerochess train`` run.
        learning_rate: initial learning rate.
        seed: seed of initialisation, shuffling and sampling.
    """

    batch_size: int = 256
    max_steps: int = 1000
    learning_rate: float = 0.02
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("batch_size", "max_steps"):
            if getattr(self, name) < 1:
                raise ConfigError(f"train.{name} must be >= 1, got {getattr(self, name)!r}")
        if not self.learning_rate > 0:
            raise ConfigError(f"train.learning_rate must be > 0, got {self.learning_rate!r}")
