"""One module per ``zerochess`` subcommand, each with ``add_arguments(parser)``
and ``run(args) -> int``; :mod:`pipeline.cli` registers them."""
