"""Models the torch benchmarks share: a pre-norm decoder layer and a decoder over a vocabulary.

Plain PyTorch, written here so that no benchmark depends on a model package;
none was used to tune the planner.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


class Layer(torch.nn.Module):
    """Pre-norm attention (causal, scaled_dot_product_attention) and a GELU MLP, both residual."""

    def __init__(self, d: int, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.n2(x))


class Decoder(torch.nn.Module):
    """Token embeddings, ``layers`` :class:`Layer` blocks (``self.layers``) and a head over the vocabulary."""

    def __init__(self, vocab: int = 4096, d: int = 256, layers: int = 4, heads: int = 4) -> None:
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList([Layer(d, heads) for _ in range(layers)])
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids):
        h = self.tok(ids)
        for layer in self.layers:
            h = layer(h)
        return self.head(h)


class Attention(torch.nn.Module):
    """Pre-norm attention with a plain ``q @ k.T`` softmax: its scores are the step's largest tensors."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads, self.norm = heads, torch.nn.LayerNorm(d)
        self.qkv, self.out = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        return x + self.out((scores @ v).transpose(1, 2).reshape(b, t, d))


class AttentionStack(torch.nn.Module):
    """``layers`` :class:`Attention` blocks (``self.layers``); on one 1536-token sequence (d = 64) its
    unplanned step peaks at about 301 MiB and its smallest plan at about 119 MiB (the stack of
    ``tests/torch_plugin/capped_worker.py``)."""

    def __init__(self, layers: int = 6, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([Attention(d, heads) for _ in range(layers)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
