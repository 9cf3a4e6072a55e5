"""Budget sweep of a small hand-written CNN (no extra dependency beyond torch).

    python examples/sweep_cnn.py [--backend aot_eager] [--repeats 3] [--max-peak 8MiB] [--out sweep-cnn]
    remat-knapsack sweep examples/sweep_cnn.py:make --backend aot_eager --budgets 0 0.3 0.6 1

Four conv blocks (conv, batch norm, SiLU; a 2x2 max-pool after every second one)
and a linear head on a batch of 8 RGB images of 32 x 32, trained with
cross-entropy against random labels.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
import torch.nn.functional as F


class SmallCNN(torch.nn.Module):
    def __init__(self, channels: tuple[int, ...] = (32, 32, 64, 64), classes: int = 10) -> None:
        super().__init__()
        blocks, c_in = [], 3
        for i, c in enumerate(channels):
            blocks += [torch.nn.Conv2d(c_in, c, 3, padding=1), torch.nn.BatchNorm2d(c), torch.nn.SiLU()]
            if i % 2 == 1:
                blocks.append(torch.nn.MaxPool2d(2))
            c_in = c
        self.features = torch.nn.Sequential(*blocks)
        self.head = torch.nn.Linear(c_in, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


def make(batch: int = 8, size: int = 32):
    """``(model, args, loss)`` for ``remat-knapsack sweep examples/sweep_cnn.py:make``."""
    torch.manual_seed(0)
    model = SmallCNN()
    images = torch.randn(batch, 3, size, size)
    labels = torch.randint(0, 10, (batch,))
    return model, (images,), lambda logits: F.cross_entropy(logits, labels)


def main() -> None:
    from remat_knapsack.sweep_report import parse_bytes
    from remat_knapsack.torch import sweep

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budgets", nargs="+", type=float, default=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    p.add_argument("--backend", default="aot_eager")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max-peak", type=parse_bytes, default=parse_bytes("8MiB"))
    p.add_argument("--out", default="sweep-cnn")
    a = p.parse_args()
    model, args, loss = make()
    report = sweep(model, args, loss=loss, budgets=a.budgets, backend=a.backend, repeats=a.repeats)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    report.to_csv(out / "sweep.csv")
    report.plot(out / "sweep.png", max_peak_bytes=a.max_peak)
    print(report.table(a.max_peak))
    pick = report.best(a.max_peak)
    print("best:", None if pick is None else pick.budget)


if __name__ == "__main__":
    main()
