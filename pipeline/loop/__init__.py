"""The loops' bookkeeping without Ray: the ledgers, the MLflow tracker, the
run's first network and best pointer, the records the loops write, the
naming of self-play tasks and the status lines (``actors/loop.py`` and
``actors/async_loop.py`` drive them)."""
