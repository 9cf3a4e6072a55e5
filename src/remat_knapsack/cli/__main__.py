"""``python -m remat_knapsack.cli``: the same as the ``remat-knapsack`` command."""

import sys

from ._main import main

sys.exit(main())
