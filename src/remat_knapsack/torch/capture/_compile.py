"""One compile that captures a model's joint graphs and builds no kernel: the input of the peak model.

:func:`compile_and_capture` compiles the forward once with the partitioner's
choice wrapped (:func:`._graphs.capture_graphs`), on the real tensors or on a
:class:`~._fake.FakeModel`'s fake ones; under inductor the graphs come from
inductor's own joint-graph passes but run eagerly (:func:`capture_backend`).

May import: torch and this package's ``_graphs``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch._functorch.config as _fconfig

from ._graphs import Capture, capture_graphs

__all__ = ["capture_backend", "compile_and_capture"]


def capture_backend(backend: Any) -> Any:
    """The backend that captures ``backend``'s joint graphs: inductor's own, with no kernel built.

    Under ``"inductor"`` the joint graph the partitioner gets is inductor's
    (its decompositions and joint-graph passes), but the graphs it returns run
    eagerly (``compile_fx``'s ``inner_compile``): the capture needs no lowering,
    code generation or C++/Triton compile (mixer: 17 s to 2 s with inductor's
    caches cold). Any other backend as given.
    """
    if backend != "inductor":
        return backend
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._inductor.compile_fx import compile_fx

    def run_eagerly(gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
        return make_boxed_func(gm.forward)

    def inductor_graphs(gm: Any, example_inputs: Any) -> Any:
        return compile_fx(gm, example_inputs, inner_compile=run_eagerly)

    return inductor_graphs


def compile_and_capture(model: Any, args: tuple, backend: Any, fake: Any = None) -> list[Capture]:
    """Compile ``model`` once (forward only, see :func:`capture_backend`) and return its joint graphs.

    ``fake`` (a :class:`~._fake.FakeModel`): the forward runs on its fake
    tensors, so the capture allocates nothing of the step's size.
    """
    torch._dynamo.reset()
    try:
        with capture_graphs() as caps, _fconfig.patch(enable_autograd_cache=False, activation_memory_budget=1.0):
            compiled = torch.compile(model, backend=capture_backend(backend))
            if fake is not None:
                with fake.mode:
                    compiled(*fake.args)
            else:
                compiled(*args)
    finally:
        torch._dynamo.reset()
    if not caps:
        raise ValueError(
            "no joint graph was partitioned: the backend does not use min_cut_rematerialization_partition "
            "(use aot_eager or inductor), or nothing requires grad"
        )
    return caps
