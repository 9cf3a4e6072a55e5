"""Which plan for a limit? The peak-constrained choice of a saved set, graph by graph.

* ``_plan``: :func:`search_plan`, the exact search over one graph's knapsack
  plans for the one that keeps the most runtime within a limit, and
  :func:`search_guided`, inductor's: steered by the cheap liveness pass,
  checked by a few lowerings of inductor's code;
* ``_choice``: :func:`choose_for_peak`, the knapsack plan against the saved
  sets PyTorch's budgets reach on their own, and the per-graph record
  (:class:`ChosenPlan`) that a second compile of the same graph replays.

A new solver for the plan search goes beside ``_plan``. May import: torch,
:mod:`remat_knapsack.tradeoff`, :mod:`.._rng`, :mod:`..peaks` and
:mod:`..capture`; never the plug-in or the planning calls, which import it.
"""

from ._choice import ChosenPlan, choose_for_peak, min_cut_options, replayed_plan
from ._plan import PlanChoice, search_guided, search_plan

__all__ = ["ChosenPlan", "PlanChoice", "choose_for_peak", "min_cut_options", "replayed_plan", "search_guided",
           "search_plan"]
