"""A zoo of tiny real architectures built from ``transformers`` configs (nothing is downloaded), each with its
natural loss, in three precisions: the models ``benchmarks/bench_zoo.py`` checks the peak model on.

Every entry of :data:`ZOO` builds one architecture with a tiny config (2 layers or stages, hidden 16-64, a
vocabulary of 256, sequences of 32 tokens, images of 32 x 32) under a fixed seed, and returns a
:class:`ZooModel`. Its ``model`` is a :class:`ZooStep`: a small module whose positional arguments are the
inner model's keyword arguments (``input_ids``, ``labels``, ``pixel_values``...), so the planners, which take a
tuple of positional arguments, see each model's own training call; its ``loss`` maps the output to the scalar
to differentiate (``out.loss`` where the model computes its own loss from ``labels``).

:func:`make` gives an entry in one precision:

* ``"fp32"``: as built;
* ``"bf16"``: ``model.to(torch.bfloat16)``, the floating-point inputs cast too;
* ``"autocast"``: fp32 weights, the inner model run under ``torch.autocast("cpu", dtype=torch.bfloat16)``
  inside :class:`ZooStep`'s forward (the user's own autocast around the call).

``ZooModel.blocks`` names the model's lists of repeated blocks (``nn.ModuleList`` paths, relative to the
:class:`ZooStep`), or None where it has none to name; :func:`units` expands them to one name per block, for
``regions=`` and ``plan_checkpoints(units=...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

FAMILIES = ("decoder", "encoder", "encoder-decoder", "vision", "multimodal", "audio")
PRECISIONS = ("fp32", "bf16", "autocast")
#: One model per family, for ``--quick``.
QUICK = ["gpt2", "bert", "t5", "vit", "clip", "wav2vec2"]

VOCAB = 256
BATCH = 2
SEQ = 32
IMAGE = 32
IMAGES = 4
CLASSES = 10


class ZooStep(torch.nn.Module):
    """``inner(**dict(zip(names, args)), **fixed)``, under CPU bf16 autocast when ``autocast`` is set."""

    def __init__(self, inner: torch.nn.Module, names: Sequence[str], fixed: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.inner = inner
        self.names = tuple(names)
        self.fixed = dict(fixed or {})
        self.autocast = False

    def forward(self, *args: Any) -> Any:
        kwargs = dict(zip(self.names, args), **self.fixed)
        if self.autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self.inner(**kwargs)
        return self.inner(**kwargs)


@dataclass
class ZooModel:
    """One zoo entry: the step module, its positional arguments, its loss and its block lists."""

    name: str
    family: str
    model: ZooStep
    args: tuple
    loss: Callable[[Any], Any]
    blocks: tuple[str, ...] | None = None
    precision: str = "fp32"


def _out_loss(out: Any) -> Any:
    return out.loss


def units(zm: ZooModel) -> list[str] | None:
    """The names of every block in ``zm.blocks``' module lists (None when it has none)."""
    if not zm.blocks:
        return None
    names = []
    for path in zm.blocks:
        modules = zm.model.get_submodule(path)
        names += [f"{path}.{i}" for i in range(len(modules))]
    return names


def _ids(*shape: int, vocab: int = VOCAB, low: int = 0) -> torch.Tensor:
    return torch.randint(low, vocab, shape)


def _images(n: int = IMAGES, size: int = IMAGE) -> torch.Tensor:
    return torch.randn(n, 3, size, size)


def _tok(**extra: Any) -> dict[str, Any]:
    return dict(bos_token_id=1, eos_token_id=2, pad_token_id=0, **extra)


def _llama_like(cls_config: Any, **extra: Any) -> Any:
    return cls_config(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=128, use_cache=False,
                      **_tok(**extra))  # fmt: skip


def _decoder(name: str, model: torch.nn.Module, blocks: str | None) -> ZooModel:
    ids = _ids(BATCH, SEQ, low=3)
    step = ZooStep(model.train(), ("input_ids", "labels"), {"use_cache": False})
    return ZooModel(name, "decoder", step, (ids, ids.clone()), _out_loss, (f"inner.{blocks}",) if blocks else None)


def _encoder(name: str, model: torch.nn.Module, blocks: str | None) -> ZooModel:
    ids = _ids(BATCH, SEQ, low=3)
    labels = torch.full_like(ids, -100)
    masked = torch.rand(ids.shape) < 0.25
    masked[:, 0] = True  # at least one masked token per row
    labels[masked] = ids[masked]
    ids = ids.masked_fill(masked, 3)  # [MASK]
    step = ZooStep(model.train(), ("input_ids", "labels"))
    return ZooModel(name, "encoder", step, (ids, labels), _out_loss, (f"inner.{blocks}",) if blocks else None)


def _vision(name: str, model: torch.nn.Module, blocks: str | None, labels: torch.Tensor | None = None) -> ZooModel:
    x = _images()
    labels = torch.randint(0, CLASSES, (IMAGES,)) if labels is None else labels
    step = ZooStep(model.train(), ("pixel_values", "labels"))
    return ZooModel(name, "vision", step, (x, labels), _out_loss, (f"inner.{blocks}",) if blocks else None)


# ---------------------------------------------------------------------- decoders


def gpt2() -> ZooModel:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB, n_positions=128, use_cache=False, **_tok())
    return _decoder("gpt2", GPT2LMHeadModel(config), "transformer.h")


def llama() -> ZooModel:
    from transformers import LlamaConfig, LlamaForCausalLM

    return _decoder("llama", LlamaForCausalLM(_llama_like(LlamaConfig)), "model.layers")


def mistral() -> ZooModel:
    from transformers import MistralConfig, MistralForCausalLM

    return _decoder("mistral", MistralForCausalLM(_llama_like(MistralConfig, sliding_window=16)), "model.layers")


def qwen2() -> ZooModel:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    return _decoder("qwen2", Qwen2ForCausalLM(_llama_like(Qwen2Config)), "model.layers")


def qwen3() -> ZooModel:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    return _decoder("qwen3", Qwen3ForCausalLM(_llama_like(Qwen3Config, head_dim=16)), "model.layers")


def gemma() -> ZooModel:
    from transformers import GemmaConfig, GemmaForCausalLM

    return _decoder("gemma", GemmaForCausalLM(_llama_like(GemmaConfig, head_dim=16)), "model.layers")


def phi3() -> ZooModel:
    from transformers import Phi3Config, Phi3ForCausalLM

    return _decoder("phi3", Phi3ForCausalLM(_llama_like(Phi3Config)), "model.layers")


def olmo() -> ZooModel:
    from transformers import OlmoConfig, OlmoForCausalLM

    return _decoder("olmo", OlmoForCausalLM(_llama_like(OlmoConfig)), "model.layers")


def stablelm() -> ZooModel:
    from transformers import StableLmConfig, StableLmForCausalLM

    return _decoder("stablelm", StableLmForCausalLM(_llama_like(StableLmConfig)), "model.layers")


def starcoder2() -> ZooModel:
    from transformers import Starcoder2Config, Starcoder2ForCausalLM

    return _decoder("starcoder2", Starcoder2ForCausalLM(_llama_like(Starcoder2Config)), "model.layers")


def mixtral() -> ZooModel:
    from transformers import MixtralConfig, MixtralForCausalLM

    # transformers' default experts kernel (grouped_mm) has no fp32 meta kernel on the CPU, so fake tensors (and
    # every planner) cannot run it; batched_mm gathers each token's experts' weights and runs one bmm
    config = _llama_like(MixtralConfig, num_local_experts=4, num_experts_per_tok=2, experts_implementation="batched_mm")
    return _decoder("mixtral", MixtralForCausalLM(config), "model.layers")


def gpt_neox() -> ZooModel:
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    config = GPTNeoXConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                           vocab_size=VOCAB, max_position_embeddings=128, use_cache=False, **_tok())  # fmt: skip
    return _decoder("gpt_neox", GPTNeoXForCausalLM(config), "gpt_neox.layers")


def opt() -> ZooModel:
    from transformers import OPTConfig, OPTForCausalLM

    config = OPTConfig(hidden_size=64, ffn_dim=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=VOCAB,
                       max_position_embeddings=128, word_embed_proj_dim=64, use_cache=False, **_tok())  # fmt: skip
    return _decoder("opt", OPTForCausalLM(config), "model.decoder.layers")


def falcon() -> ZooModel:
    from transformers import FalconConfig, FalconForCausalLM

    config = FalconConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=VOCAB,
                          use_cache=False, **_tok())  # fmt: skip
    return _decoder("falcon", FalconForCausalLM(config), "transformer.h")


def bloom() -> ZooModel:
    from transformers import BloomConfig, BloomForCausalLM

    config = BloomConfig(hidden_size=64, n_layer=2, n_head=4, vocab_size=VOCAB, use_cache=False, **_tok())
    return _decoder("bloom", BloomForCausalLM(config), "transformer.h")


def mamba() -> ZooModel:
    from transformers import MambaConfig, MambaForCausalLM

    config = MambaConfig(hidden_size=32, num_hidden_layers=2, state_size=8, vocab_size=VOCAB, use_cache=False,
                         **_tok())  # fmt: skip
    return _decoder("mamba", MambaForCausalLM(config), "backbone.layers")


# ---------------------------------------------------------------------- encoders


def _bert_like(cls_config: Any, **extra: Any) -> Any:
    return cls_config(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      vocab_size=VOCAB, max_position_embeddings=128, **extra)  # fmt: skip


def bert() -> ZooModel:
    from transformers import BertConfig, BertForMaskedLM

    return _encoder("bert", BertForMaskedLM(_bert_like(BertConfig)), "bert.encoder.layer")


def roberta() -> ZooModel:
    from transformers import RobertaConfig, RobertaForMaskedLM

    config = _bert_like(RobertaConfig, pad_token_id=1, bos_token_id=0, eos_token_id=2)
    return _encoder("roberta", RobertaForMaskedLM(config), "roberta.encoder.layer")


def deberta_v2() -> ZooModel:
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM

    config = _bert_like(DebertaV2Config, relative_attention=True, position_buckets=16,
                        pos_att_type=["p2c", "c2p"])  # fmt: skip
    return _encoder("deberta_v2", DebertaV2ForMaskedLM(config), "deberta.encoder.layer")


def distilbert() -> ZooModel:
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    config = DistilBertConfig(dim=64, hidden_dim=128, n_layers=2, n_heads=4, vocab_size=VOCAB,
                              max_position_embeddings=128)  # fmt: skip
    return _encoder("distilbert", DistilBertForMaskedLM(config), "distilbert.transformer.layer")


def electra() -> ZooModel:
    from transformers import ElectraConfig, ElectraForMaskedLM

    config = _bert_like(ElectraConfig, embedding_size=32)
    return _encoder("electra", ElectraForMaskedLM(config), "electra.encoder.layer")


def albert() -> ZooModel:
    from transformers import AlbertConfig, AlbertForMaskedLM

    config = _bert_like(AlbertConfig, embedding_size=32)
    return _encoder("albert", AlbertForMaskedLM(config), None)  # one layer group shared by every layer


# ---------------------------------------------------------------------- encoder-decoders


def t5() -> ZooModel:
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, vocab_size=VOCAB,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, use_cache=False)  # fmt: skip
    step = ZooStep(T5ForConditionalGeneration(config).train(), ("input_ids", "labels"), {"use_cache": False})
    args = (_ids(BATCH, SEQ, low=2), _ids(BATCH, SEQ // 2, low=2))
    return ZooModel("t5", "encoder-decoder", step, args, _out_loss, ("inner.encoder.block", "inner.decoder.block"))


def bart() -> ZooModel:
    from transformers import BartConfig, BartForConditionalGeneration

    config = BartConfig(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=VOCAB,
                        max_position_embeddings=128, use_cache=False, decoder_start_token_id=2,
                        forced_eos_token_id=None, **_tok())  # fmt: skip
    step = ZooStep(BartForConditionalGeneration(config).train(), ("input_ids", "labels"), {"use_cache": False})
    args = (_ids(BATCH, SEQ, low=3), _ids(BATCH, SEQ // 2, low=3))
    blocks = ("inner.model.encoder.layers", "inner.model.decoder.layers")
    return ZooModel("bart", "encoder-decoder", step, args, _out_loss, blocks)


def whisper() -> ZooModel:
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                           decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=VOCAB,
                           num_mel_bins=16, max_source_positions=32, max_target_positions=64,
                           decoder_start_token_id=1, use_cache=False, **_tok())  # fmt: skip
    step = ZooStep(WhisperForConditionalGeneration(config).train(), ("input_features", "labels"),
                   {"use_cache": False})  # fmt: skip
    args = (torch.randn(BATCH, 16, 64), _ids(BATCH, SEQ // 2, low=3))
    blocks = ("inner.model.encoder.layers", "inner.model.decoder.layers")
    return ZooModel("whisper", "encoder-decoder", step, args, _out_loss, blocks)


# ---------------------------------------------------------------------- vision


def vit() -> ZooModel:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                       image_size=IMAGE, patch_size=4, num_labels=CLASSES)  # fmt: skip
    return _vision("vit", ViTForImageClassification(config), "vit.layers")


def dinov2() -> ZooModel:
    from transformers import Dinov2Config, Dinov2ForImageClassification

    config = Dinov2Config(hidden_size=64, mlp_ratio=2, num_hidden_layers=2, num_attention_heads=4,
                          image_size=IMAGE, patch_size=4, num_labels=CLASSES)  # fmt: skip
    return _vision("dinov2", Dinov2ForImageClassification(config), "dinov2.encoder.layer")


def swin() -> ZooModel:
    from transformers import SwinConfig, SwinForImageClassification

    config = SwinConfig(image_size=IMAGE, patch_size=2, embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                        window_size=4, num_labels=CLASSES)  # fmt: skip
    return _vision("swin", SwinForImageClassification(config), "swin.encoder.layers")


def convnext() -> ZooModel:
    from transformers import ConvNextConfig, ConvNextForImageClassification

    config = ConvNextConfig(num_stages=2, hidden_sizes=[16, 32], depths=[2, 2], patch_size=2, num_labels=CLASSES)
    return _vision("convnext", ConvNextForImageClassification(config), "convnext.encoder.stages")


def resnet() -> ZooModel:
    from transformers import ResNetConfig, ResNetForImageClassification

    config = ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic",
                          num_labels=CLASSES)  # fmt: skip
    return _vision("resnet", ResNetForImageClassification(config), "resnet.encoder.stages")


def mobilenet_v2() -> ZooModel:
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    config = MobileNetV2Config(image_size=IMAGE, depth_multiplier=0.25, num_labels=CLASSES)
    return _vision("mobilenet_v2", MobileNetV2ForImageClassification(config), "mobilenet_v2.layer")


def efficientnet() -> ZooModel:
    from transformers import EfficientNetConfig, EfficientNetForImageClassification

    config = EfficientNetConfig(image_size=IMAGE, width_coefficient=0.25, depth_coefficient=0.25, hidden_dim=320,
                                num_labels=CLASSES)  # fmt: skip
    return _vision("efficientnet", EfficientNetForImageClassification(config), "efficientnet.encoder.blocks")


def regnet() -> ZooModel:
    from transformers import RegNetConfig, RegNetForImageClassification

    config = RegNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], groups_width=8,
                          num_labels=CLASSES)  # fmt: skip
    return _vision("regnet", RegNetForImageClassification(config), "regnet.encoder.stages")


def segformer() -> ZooModel:
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    config = SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                             num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2],
                             decoder_hidden_size=32, num_labels=4)  # fmt: skip
    labels = torch.randint(0, 4, (IMAGES, IMAGE, IMAGE))
    return _vision("segformer", SegformerForSemanticSegmentation(config), None, labels)  # blocks: nested lists


# ---------------------------------------------------------------------- multimodal, audio


def clip() -> ZooModel:
    from transformers import CLIPConfig, CLIPModel

    text = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                vocab_size=VOCAB, max_position_embeddings=SEQ, **_tok())  # fmt: skip
    vision = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  image_size=IMAGE, patch_size=4)  # fmt: skip
    config = CLIPConfig(text_config=text, vision_config=vision, projection_dim=32)
    step = ZooStep(CLIPModel(config).train(), ("input_ids", "pixel_values"), {"return_loss": True})
    args = (_ids(IMAGES, SEQ // 2, low=3), _images())
    blocks = ("inner.text_model.encoder.layers", "inner.vision_model.encoder.layers")
    return ZooModel("clip", "multimodal", step, args, _out_loss, blocks)


def wav2vec2() -> ZooModel:
    """Wav2Vec2ForCTC with the CTC loss outside the model (fixed lengths: the model's own loss masks by value)."""
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    # LayerDrop off (transformers' default is 0.1): it draws a number per layer and skips the layer by its value
    # (a Python bool of a tensor: aten._local_scalar_dense), so the step itself is random, torch.compile breaks
    # the graph at every layer, and fake tensors cannot run it
    config = Wav2Vec2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                            conv_dim=(16, 16, 16), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, vocab_size=32,
                            mask_time_prob=0.0, layerdrop=0.0, **_tok())  # fmt: skip
    step = ZooStep(Wav2Vec2ForCTC(config).train(), ("input_values",))
    audio = torch.randn(BATCH, 1600)
    targets = torch.randint(3, 32, (BATCH, 12))

    def loss(out: Any) -> torch.Tensor:
        logp = out.logits.float().log_softmax(-1).transpose(0, 1)  # (frames, batch, vocab)
        frames = torch.full((logp.shape[1],), logp.shape[0], dtype=torch.long)
        lengths = torch.full((targets.shape[0],), targets.shape[1], dtype=torch.long)
        return F.ctc_loss(logp, targets, frames, lengths, blank=0, zero_infinity=True)

    return ZooModel("wav2vec2", "audio", step, (audio,), loss, ("inner.wav2vec2.encoder.layers",))


ZOO: dict[str, Callable[[], ZooModel]] = {
    f.__name__: f
    for f in (gpt2, llama, mistral, qwen2, qwen3, gemma, phi3, gpt_neox, opt, falcon, bloom, olmo, stablelm,
              starcoder2, mixtral, mamba, bert, roberta, deberta_v2, distilbert, electra, albert, t5, bart, whisper,
              vit, dinov2, swin, convnext, resnet, mobilenet_v2, efficientnet, regnet, segformer, clip, wav2vec2)
}  # fmt: skip


def make(name: str, precision: str = "fp32") -> ZooModel:
    """Build zoo entry ``name`` (seed 0) in ``precision``: "fp32", "bf16" (weights and float inputs) or
    "autocast" (fp32 weights, the forward under CPU bf16 autocast)."""
    if name not in ZOO:
        raise KeyError(f"unknown zoo model {name!r}; one of {', '.join(ZOO)}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    torch.manual_seed(0)
    zm = ZOO[name]()
    zm.precision = precision
    if precision == "bf16":
        zm.model.to(torch.bfloat16)
        zm.args = tuple(a.to(torch.bfloat16) if a.is_floating_point() else a for a in zm.args)
    elif precision == "autocast":
        zm.model.autocast = True
    return zm


def build_all(names: Sequence[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """(the names that build and run one fp32 forward and backward, {name: why not} for the rest)."""
    ok, failed = [], {}
    for name in names or list(ZOO):
        try:
            zm = make(name)
            zm.loss(zm.model(*zm.args)).backward()
            ok.append(name)
        except Exception as e:  # noqa: BLE001 - recorded, not raised
            failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return ok, failed
