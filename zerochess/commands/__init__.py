"""One module per ``zerochess`` subcommand, each with ``add_arguments(parser)``
and ``run(args) -> int``; :mod:`zerochess.cli` registers them."""
