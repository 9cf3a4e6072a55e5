"""Measured peak memory and step time of a small LLaMA at each activation_memory_budget.

    pip install 'remat-knapsack[torch,models]'
    python examples/sweep_llama.py --backend aot_eager --budgets 0 0.1 0.3 0.5 0.8 1 --repeats 3 \
        --max-peak 100MiB --out sweep-llama
    # or through the CLI, with the defaults of make():
    remat-knapsack sweep examples/sweep_llama.py:make --backend aot_eager --max-peak 100MiB

The model is ``transformers.LlamaForCausalLM`` built from a ``LlamaConfig`` (random
weights, nothing downloaded): 4 layers, hidden 256, 4 heads, MLP 688, vocabulary
4096, trained on one batch of 4 x 256 random tokens with the model's own
cross-entropy loss (``output.loss``). For every budget ``remat_knapsack.torch.sweep``
recompiles, measures the peak of one training step above its start, the bytes
saved for backward and the median step time, and the script writes sweep.csv and
sweep.png and prints the budget ``best`` picks within ``--max-peak``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch


class WithLabels(torch.nn.Module):
    """``model(input_ids=ids, labels=ids)`` as a module, so sweep clears its gradients between steps."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor):
        return self.model(input_ids=ids, labels=ids)


def make(layers: int = 4, hidden: int = 256, heads: int = 4, batch: int = 4, tokens: int = 256, vocab: int = 4096):
    """``(model, args)`` for ``remat-knapsack sweep examples/sweep_llama.py:make``."""
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as exc:
        raise SystemExit("this example needs transformers: pip install 'remat-knapsack[models]'") from exc
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=int(hidden * 2.6875),  # LLaMA's 11008 / 4096
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max(512, tokens),
        use_cache=False,
    )
    torch.manual_seed(0)
    model = WithLabels(LlamaForCausalLM(config))
    ids = torch.randint(0, vocab, (batch, tokens))
    return model, (ids,)


def main() -> None:
    from remat_knapsack.sweep_report import parse_bytes
    from remat_knapsack.torch import sweep

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budgets", nargs="+", type=float, default=[0.0, 0.1, 0.3, 0.5, 0.8, 1.0])
    p.add_argument("--backend", default="aot_eager")
    p.add_argument("--solver", default="auto")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max-peak", type=parse_bytes, default=parse_bytes("100MiB"))
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--out", default="sweep-llama")
    a = p.parse_args()

    model, args = make(layers=a.layers, hidden=a.hidden)
    report = sweep(model, args, budgets=a.budgets, backend=a.backend, solver=a.solver, repeats=a.repeats)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    report.to_csv(out / "sweep.csv")
    report.plot(out / "sweep.png", max_peak_bytes=a.max_peak)
    meta = ", ".join(f"{k} {v}" for k, v in report.meta.items())
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, {meta}")
    print(report.table(a.max_peak))
    print("non-monotonic (lower budget peaked higher):", report.non_monotonic)
    pick = report.best(a.max_peak)
    limit = a.max_peak / 2**20
    if pick is None:
        print(f"best({limit:.1f} MiB): no budget fits")
    else:
        print(f"best({limit:.1f} MiB): budget {pick.budget:g}, peak {pick.peak_bytes / 2**20:.1f} MiB, "
              f"step {pick.step_seconds * 1e3:.1f} ms")
    print(f"wrote {out / 'sweep.csv'}, {out / 'sweep.png'}")


if __name__ == "__main__":
    main()
