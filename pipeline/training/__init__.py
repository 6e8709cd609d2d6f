"""Training the network on (s, pi, z) shards: Lightning module, data, MLflow.

The entry point is :func:`pipeline.training.trainer.train` (``zerochess
train`` wraps it).  Imports here are lazy so that ``pipeline.config`` can use
:mod:`pipeline.training.config` without loading Lightning or MLflow.
"""
