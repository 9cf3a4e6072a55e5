"""Small training models for the gradient tests: each one a kind of layer that plans can break.

Every ``make_*`` returns ``(model, args, loss)``: a fresh module (seeded), its
inputs and a loss on its output. They are small enough that a compile under
``aot_eager`` takes well under a second, and none of them was used to tune the
planner. :func:`train_step` runs one step (seeded, so dropout draws the same
masks each time it is run the same way) and returns what a step changes:
loss, gradients, buffers and the inputs the model mutates.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

SEED = 1234


class DropoutMLP(nn.Module):
    """Four linear layers with dropout after the first and the third; returns the last dropout's output too."""

    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, 2 * d), nn.Linear(2 * d, d), nn.Linear(d, d)])
        self.last = nn.Linear(d, 1)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        h = self.drop(F.relu(self.layers[0](x)))
        h = F.relu(self.layers[1](h))
        h = self.drop(F.relu(self.layers[2](h)))
        return self.last(h), h


class Attention(nn.Module):
    def __init__(self, d: int, heads: int, p: float) -> None:
        super().__init__()
        self.heads, self.p = heads, p
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) / (d // self.heads) ** 0.5
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        attn = F.dropout(scores.masked_fill(~mask, float("-inf")).softmax(-1), self.p, self.training)
        return self.out((attn @ v).transpose(1, 2).reshape(b, t, d))


class DecoderBlock(nn.Module):
    def __init__(self, d: int, heads: int, p: float) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads, p)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(p)

    def forward(self, x):
        x = x + self.drop(self.attn(self.norm1(x)))
        return x + self.drop(self.mlp(self.norm2(x)))


class Decoder(nn.Module):
    """A pre-norm decoder: token and position embeddings, attention and MLP blocks, dropout between layers."""

    def __init__(self, vocab: int = 64, d: int = 32, heads: int = 4, layers: int = 2, t: int = 16,
                 p: float = 0.1) -> None:  # fmt: skip
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(t, d)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList([DecoderBlock(d, heads, p) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        h = self.drop(self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device)))
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))


class ConvGroupNorm(nn.Module):
    def __init__(self, c: int = 8) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, c, 3, padding=1), nn.GroupNorm(4, c), nn.SiLU(),
            nn.Conv2d(c, c, 3, padding=1), nn.GroupNorm(4, c), nn.SiLU(),
        )  # fmt: skip
        self.head = nn.Linear(c, 10)

    def forward(self, x):
        return self.head(self.body(x).mean((2, 3)))


class BatchNormNet(nn.Module):
    """BatchNorm in training mode: the step updates its running statistics (buffers)."""

    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.a, self.bn1 = nn.Linear(d, 2 * d), nn.BatchNorm1d(2 * d)
        self.b, self.bn2 = nn.Linear(2 * d, d), nn.BatchNorm1d(d)
        self.c = nn.Linear(d, 1)

    def forward(self, x):
        return self.c(F.relu(self.bn2(self.b(F.relu(self.bn1(self.a(x)))))))


class InPlaceNet(nn.Module):
    """In-place activations and arithmetic on intermediates."""

    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(d, 2 * d), nn.Linear(2 * d, d), nn.Linear(d, 1)

    def forward(self, x):
        h = self.a(x)
        h.add_(0.1).relu_()
        g = self.b(h)
        g.mul_(0.5).add_(1.0).sigmoid_()
        return self.c(g * h[:, : g.shape[1]])


class MutatesInput(nn.Module):
    """Writes into a tensor it is given (a running sum) and into a buffer (a step counter)."""

    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(d, 2 * d), nn.Linear(2 * d, 1)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x, running):
        h = torch.tanh(self.a(x))
        running.add_(h.detach().mean(0))
        self.steps += 1
        return self.b(h * running)


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, tuple) else out


def make_dropout_mlp():
    torch.manual_seed(0)
    return DropoutMLP(), (torch.randn(64, 32),), lambda out: _first(out).sum()


def make_decoder():
    torch.manual_seed(0)
    ids = torch.randint(0, 64, (4, 16))
    target = torch.randint(0, 64, (4, 16))
    return Decoder(), (ids,), lambda logits: F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def make_conv_groupnorm():
    torch.manual_seed(0)
    return ConvGroupNorm(), (torch.randn(4, 3, 16, 16),), lambda out: out.logsumexp(-1).mean()


def make_batchnorm():
    torch.manual_seed(0)
    return BatchNormNet(), (torch.randn(64, 32),), lambda out: (out**2).mean()


def make_in_place():
    torch.manual_seed(0)
    return InPlaceNet(), (torch.randn(64, 32),), lambda out: out.sum()


def make_mutates_input():
    torch.manual_seed(0)
    return MutatesInput(), (torch.randn(64, 32), torch.zeros(64)), lambda out: out.sum()


#: Every model of the differential test, by name.
MODELS: dict[str, Callable[[], tuple[nn.Module, tuple, Callable]]] = {
    "dropout_mlp": make_dropout_mlp,
    "decoder": make_decoder,
    "conv_groupnorm": make_conv_groupnorm,
    "batchnorm": make_batchnorm,
    "in_place": make_in_place,
    "mutates_input": make_mutates_input,
}


def fresh(name: str) -> tuple[nn.Module, tuple, Callable]:
    """A new copy of model ``name`` with its inputs: every run starts from the same state."""
    model, args, loss = MODELS[name]()
    return model, tuple(a.clone() for a in args), loss


def train_step(model: nn.Module, run: Callable[..., Any], args: tuple, loss: Callable) -> dict[str, Any]:
    """One seeded training step through ``run`` (the model or its compiled form); what it changed."""
    args = tuple(copy.deepcopy(a) for a in args)
    model.zero_grad(set_to_none=True)
    torch.manual_seed(SEED)
    value = loss(run(*args))
    value.backward()
    return {
        "loss": value.detach().clone(),
        "grads": {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None},
        "buffers": {n: b.detach().clone() for n, b in model.named_buffers()},
        "inputs": [a.detach().clone() for a in args],
    }


def assert_same_step(expected: dict[str, Any], got: dict[str, Any], *, rtol: float = 1e-4,
                     atol: float = 1e-6, where: str = "") -> None:  # fmt: skip
    """Loss, every gradient, every buffer and every input equal to float tolerance; names the first that is not."""
    torch.testing.assert_close(got["loss"], expected["loss"], rtol=rtol, atol=atol, msg=lambda m: f"{where} loss: {m}")
    assert got["grads"].keys() == expected["grads"].keys(), f"{where}: gradients of other parameters"
    for name, g in expected["grads"].items():
        torch.testing.assert_close(got["grads"][name], g, rtol=rtol, atol=atol,
                                   msg=lambda m, name=name: f"{where} grad of {name}: {m}")  # fmt: skip
    for name, b in expected["buffers"].items():
        torch.testing.assert_close(got["buffers"][name], b, rtol=rtol, atol=atol,
                                   msg=lambda m, name=name: f"{where} buffer {name}: {m}")  # fmt: skip
    for i, (a, b) in enumerate(zip(got["inputs"], expected["inputs"])):
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol, msg=lambda m, i=i: f"{where} input {i}: {m}")


def dropout_mask_consistent(model: DropoutMLP, run: Callable[..., Any], x: torch.Tensor) -> bool:
    """Whether the backward used the forward's dropout mask: the last layer's weight gradient is the
    sum of the dropout output the forward returned (any other mask gives another sum)."""
    model.zero_grad(set_to_none=True)
    out, h = run(x)
    out.sum().backward()
    return bool(torch.allclose(model.last.weight.grad[0], h.detach().sum(0), rtol=1e-4, atol=1e-5))
