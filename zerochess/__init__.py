"""The ``zerochess`` command line: the top layer, above ``actors``, ``pipeline`` and ``models``.

:mod:`zerochess.cli` parses the arguments and dispatches to one module of
:mod:`zerochess.commands` per subcommand (``python -m zerochess`` is the same
command).  Nothing below this package imports it.
"""
