"""The ``remat-knapsack`` command line: ``solve``, ``frontier``, ``gen``, ``bench``, ``sweep``.

``_main`` builds the parser and runs every command but ``sweep``, whose parser and
body live in ``_sweep`` (torch is imported only when it runs). ``_errors`` holds
the exit codes and :class:`CliError`, which every command raises.

May import: everything in the package; torch and the benchmark peers only
inside the commands that need them.
"""

from ._main import main

__all__ = ["main"]
