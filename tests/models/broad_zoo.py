"""Every `transformers` architecture that can be built from a config, tiny and with random weights.

The broad real-model corpus: each model type `transformers` maps to a base model
(`MODEL_MAPPING_NAMES`) is built from its default config with the size fields shrunk
(`tiny_overrides`: hidden sizes, layers, heads, experts, vocabulary, image and audio sizes,
recursively through sub-configs), and fed an input made from the model's `main_input_name`
(token ids, pixel values, audio). Nothing is downloaded.

As a user would write it, the model sits in a small module of this file:

    ZooModel("phimoe")          # the library model, its output's first tensor returned
    zoo_inputs("phimoe")        # its example inputs (a tuple), the same on every call

so the product lowers it like any user file (`ModuleJob(path=this file, module="ZooModel",
init='("phimoe",)', inputs='zoo_inputs("phimoe")')`) and plain torch-mlir gets the same module
and inputs. `build(model_type)` says why a type cannot be built (`NotBuilt`): no base model, a
config the shrinking breaks, a model whose eager forward fails on the input, or one that is too
big even shrunk.

Two `diffusers` models complete it (`DIFFUSERS`): a tiny `UNet2DConditionModel` (its latent,
timestep and text embedding as inputs) and an `AutoencoderKL` (image in, image out through the
encoder and the decoder).

The tests run a handful of types (tests/worker/test_broad_zoo.py); benchmark figure 13 runs them
all.
"""

from __future__ import annotations

import functools
import inspect
import re
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

SEQ = 8  # tokens per text input
VOCAB = 128  # vocabulary after shrinking; special token ids are moved into it
TOKENS = 64  # input ids are drawn from [3, TOKENS): below every moved special token
MAX_PARAMS = 4_000_000  # a shrunk model above this is not built (memory, import time)

# Size fields: capped at these values (a field already smaller is kept).
_HIDDEN = 32
_CAPS: dict[str, int] = {
    # widths
    **dict.fromkeys((
        "hidden_size", "d_model", "n_embd", "dim", "embed_dim", "embedding_size",
        "text_hidden_size", "projection_dim", "out_hidden_size", "output_hidden_size",
        "encoder_hidden_size", "decoder_hidden_size", "hidden_dim", "emb_dim",
        "embedding_dim", "kv_channels", "attention_hidden_size", "pooler_hidden_size",
        "image_text_hidden_size", "projector_hidden_size", "fusion_hidden_size",
        "classifier_proj_size", "xvector_output_dim", "codevector_dim",
        "proj_codevector_dim", "hidden_size_per_layer_input", "fpn_hidden_size",
        "memory_attention_hidden_size", "memory_encoder_hidden_size", "encoder_hidden_dim",
        "mask_feature_size", "query_dim", "lqe_hidden_dim", "d_inner_hidden",
    ), _HIDDEN),
    # feed-forward widths
    **dict.fromkeys((
        "intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff",
        "n_inner", "d_inner", "mlp_dim", "ffn_hidden_size", "decoder_intermediate_size",
        "encoder_feedforward_dim", "dim_feedforward", "memory_fuser_intermediate_dim",
        "shared_intermediate_size",
    ), 64),
    **dict.fromkeys(("moe_intermediate_size", "shared_expert_intermediate_size",
                     "expert_intermediate_size"), 32),
    # depths
    **dict.fromkeys((
        "num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
        "decoder_layers", "num_decoder_layers", "num_encoder_layers", "depth",
        "decoder_num_hidden_layers", "num_adapter_layers",
        "memory_attention_num_layers", "memory_fuser_num_layers", "lqe_layers",
        "speech_decoder_postnet_layers", "max_window_layers", "num_encoder_blocks",
    ), 2),
    "first_k_dense_replace": 1,
    # attention heads
    **dict.fromkeys((
        "num_attention_heads", "num_heads", "n_head", "n_heads", "encoder_attention_heads",
        "decoder_attention_heads", "decoder_num_attention_heads",
        "encoder_num_attention_heads", "decoder_self_attention_heads",
        "decoder_cross_attention_heads", "swa_num_attention_heads", "linear_num_heads",
        "mamba_n_heads",
    ), 4),
    **dict.fromkeys(("num_key_value_heads", "swa_num_key_value_heads", "linear_num_key_heads",
                     "linear_num_value_heads", "index_n_heads"), 2),
    **dict.fromkeys(("head_dim", "d_kv", "d_head", "qk_rope_head_dim", "qk_nope_head_dim",
                     "v_head_dim", "swa_head_dim", "linear_key_head_dim",
                     "linear_value_head_dim", "mamba_d_head", "attention_head_dim"), 8),
    **dict.fromkeys(("kv_lora_rank", "q_lora_rank"), 16),
    "index_head_dim": 16,  # wider than the RoPE part it holds (8), as in the real models
    # mixture of experts
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"),
                    4),
    **dict.fromkeys(("num_experts_per_tok", "moe_topk", "num_experts_per_token", "moe_k"), 2),
    **dict.fromkeys(("n_shared_experts", "moe_num_shared_experts", "n_group", "topk_group"), 1),
    **dict.fromkeys(("index_topk", "index_kpool"), 4),
    "rotary_dim": 8,  # within a head of 8 (GPT-J, CodeGen)
    # positions, windows, state spaces
    **dict.fromkeys(("max_position_embeddings", "n_positions", "max_seq_len",
                     "max_2d_position_embeddings", "context_length", "model_max_length"), 64),
    **dict.fromkeys(("mamba_d_state", "state_size"), 8),
    **dict.fromkeys(("mamba_chunk_size", "chunk_size"), 8),
    # images: the input is made from these
    "image_size": 32, "pretrain_image_size": 32,
}
_QK_HEAD = ("qk_nope_head_dim", "qk_rope_head_dim")
# Lists of widths per stage (ResNet, Swin, ConvNeXt, wav2vec2 convolutions): scaled down.
_WIDTH_LISTS = ("hidden_sizes", "embed_dim", "conv_dim", "neck_hidden_sizes",
                "backbone_channel_list", "encoder_in_channels", "stage_in_channels",
                "embedding_dimension", "channels", "tdnn_dim")
_DEPTH_LISTS = ("depths", "num_layers", "stage_num_blocks")
_HEAD_LISTS = ("num_heads", "num_attention_heads")
_INPUT_NAMES = ("input_ids", "pixel_values", "input_values", "input_features")
_TOKEN_ID = re.compile(r"(_token_id|_token_index|_token_ids|_id)$")


class NotBuilt(Exception):
    """A model type the corpus cannot build (the reason is the message)."""


def architectures() -> list[str]:
    """Every model type `transformers` maps to a base model, sorted, then `DIFFUSERS`."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    return [*sorted(MODEL_MAPPING_NAMES), *DIFFUSERS]


def _unet() -> tuple[nn.Module, dict[str, torch.Tensor]]:
    from diffusers import UNet2DConditionModel

    model = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(32, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
        attention_head_dim=8, norm_num_groups=8)
    gen = torch.Generator().manual_seed(0)
    return model, {"sample": torch.randn(1, 4, 8, 8, generator=gen),
                   "timestep": torch.tensor([10]),
                   "encoder_hidden_states": torch.randn(1, 4, 32, generator=gen)}


def _vae() -> tuple[nn.Module, dict[str, torch.Tensor]]:
    from diffusers import AutoencoderKL

    model = AutoencoderKL(
        in_channels=3, out_channels=3, block_out_channels=(32, 64),
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
        latent_channels=4, norm_num_groups=8, sample_size=16)
    gen = torch.Generator().manual_seed(0)
    return model, {"sample": torch.randn(1, 3, 16, 16, generator=gen)}


# diffusers models of the corpus: name → a tiny model and its inputs by keyword.
DIFFUSERS: dict[str, Any] = {
    "diffusers-unet2d-condition": _unet,
    "diffusers-autoencoder-kl": _vae,
}


def _layer_list(values: list[Any], n: int) -> list[Any]:
    """A per-layer list cut to `n` layers, keeping each kind it had while room is left
    (DeepSeek's `mlp_layer_types` starts dense: the MoE layer must stay)."""
    out = [values[0]]
    for v in values[1:]:
        if len(out) == n:
            break
        if v not in out:
            out.append(v)
    while len(out) < n:
        out.append(out[-1])
    return out


def _shrink_number(key: str, value: Any) -> Any:
    cap = _CAPS.get(key)
    if cap is None or isinstance(value, bool) or not isinstance(value, int) or value <= cap:
        return value
    return cap


def _shrink_list(key: str, value: list[Any]) -> list[Any] | None:
    if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    if key in _WIDTH_LISTS and max(value) > _HIDDEN * 2:
        factor = max(value) / (_HIDDEN * 2)
        return [max(8, int(v / factor) // 8 * 8) for v in value]
    if key in _DEPTH_LISTS and max(value) > 1:
        return [1 for _ in value]
    if key in _HEAD_LISTS and max(value) > 2:
        return [min(v, 2) for v in value]
    return None


def tiny_overrides(defaults: dict[str, Any]) -> dict[str, Any]:
    """The fields of a config's `to_dict()` to change to make it tiny (sub-configs as dicts
    of their own changes, with their `model_type`)."""
    changes: dict[str, Any] = {}
    layers = defaults.get("num_hidden_layers")
    for key, value in defaults.items():
        if isinstance(value, dict) and "model_type" in value:
            sub = tiny_overrides(value)
            if sub:
                changes[key] = {"model_type": value["model_type"], **sub}
        elif isinstance(value, list):
            if isinstance(layers, int) and len(value) == layers and layers > 2 and \
                    key not in _DEPTH_LISTS:
                changes[key] = _layer_list(value, _CAPS["num_hidden_layers"])
            else:
                shrunk = _shrink_list(key, value)
                if shrunk is not None:
                    changes[key] = shrunk
        else:
            shrunk_value = _shrink_number(key, value)
            if shrunk_value != value:
                changes[key] = shrunk_value
    if "qk_head_dim" in defaults and any(k in changes for k in _QK_HEAD):
        changes["qk_head_dim"] = sum(changes.get(k, defaults[k]) for k in _QK_HEAD)
    if isinstance(defaults.get("vocab_size"), int) and defaults["vocab_size"] > VOCAB:
        changes["vocab_size"] = VOCAB
        _move_token_ids(defaults, changes)
    _fit_windows(defaults, changes)
    _fit_state_space_heads(defaults, changes)
    _fit_mrope(defaults, changes)
    heads, kv = defaults.get("num_attention_heads"), defaults.get("num_key_value_heads")
    if isinstance(heads, int) and heads == kv and "num_attention_heads" in changes:
        changes["num_key_value_heads"] = changes["num_attention_heads"]  # plain multi-head
    return changes


def _fit_windows(defaults: dict[str, Any], changes: dict[str, Any]) -> None:
    """Windowed hierarchical vision models (Swin): a window of 2 and an image whose every
    stage is a whole number of windows (each stage halves the resolution)."""
    window, patch, depths = (defaults.get(k) for k in ("window_size", "patch_size", "depths"))
    if isinstance(window, int) and isinstance(patch, int) and isinstance(depths, list) \
            and "image_size" in defaults:
        changes["window_size"] = min(window, 2)
        changes["image_size"] = patch * changes["window_size"] * 2 ** (len(depths) - 1)


def _fit_state_space_heads(defaults: dict[str, Any], changes: dict[str, Any]) -> None:
    """Mamba-2 layers need heads × head width = expand × hidden (Mamba2, Bamba, Granite)."""
    for prefix in ("mamba_", ""):
        heads, width, expand = (f"{prefix}n_heads" if prefix else "num_heads",
                                f"{prefix}d_head" if prefix else "head_dim", f"{prefix}expand")
        if not all(isinstance(defaults.get(k), int) for k in (heads, width, expand, "hidden_size")):
            continue
        hidden = changes.get("hidden_size", defaults["hidden_size"])
        head_width = changes.get(width, defaults[width])
        if hidden * defaults[expand] % head_width == 0:
            changes[heads] = hidden * defaults[expand] // head_width


def _fit_mrope(defaults: dict[str, Any], changes: dict[str, Any]) -> None:
    """Multimodal RoPE splits half a head into three sections (Qwen2-VL, GLM-4V): scaled to
    the shrunk head, each at least 1."""
    rope = defaults.get("rope_parameters")
    sections = rope.get("mrope_section") if isinstance(rope, dict) else None
    if not (isinstance(sections, list) and sections and "hidden_size" in changes):
        return
    heads = changes.get("num_attention_heads", defaults.get("num_attention_heads") or 1)
    head = changes.get("head_dim") or changes["hidden_size"] // max(1, int(heads))
    half, total = head // 2, sum(sections)
    if half < len(sections) or total <= 0:
        return
    scaled = [max(1, s * half // total) for s in sections]
    scaled[-1] += half - sum(scaled)
    if scaled[-1] >= 1:
        changes["rope_parameters"] = {**rope, "mrope_section": scaled}


def _move_token_ids(defaults: dict[str, Any], changes: dict[str, Any]) -> None:
    """Special token ids beyond the shrunk vocabulary, moved to its top (distinct, above the
    ids the inputs use)."""
    top = VOCAB - 1
    for key, value in defaults.items():
        if not _TOKEN_ID.search(key):
            continue
        if isinstance(value, int) and not isinstance(value, bool) and value >= VOCAB:
            changes[key] = top
            top -= 1
        elif isinstance(value, list) and value and all(
                isinstance(v, int) and not isinstance(v, bool) for v in value) \
                and max(value) >= VOCAB:
            changes[key] = [v if v < VOCAB else VOCAB - 1 for v in value]


# The sections Qwen2-VL-style models use when their config names none (modeling_qwen2_vl.py).
_DEFAULT_MROPE = [16, 24, 24]


def _implicit_mrope(defaults: dict[str, Any], cls: Any) -> dict[str, Any]:
    """`defaults` with the multimodal RoPE sections the model would assume spelled out (so
    that `_fit_mrope` shrinks them with the head), through sub-configs."""
    out = dict(defaults)
    rope = out.get("rope_parameters")
    if "mrope_section" in getattr(cls, "ignore_keys_at_rope_validation", ()) and \
            isinstance(rope, dict) and "mrope_section" not in rope:
        out["rope_parameters"] = {**rope, "mrope_section": list(_DEFAULT_MROPE)}
    for key, sub_cls in (getattr(cls, "sub_configs", None) or {}).items():
        if isinstance(out.get(key), dict) and isinstance(sub_cls, type):
            out[key] = _implicit_mrope(out[key], sub_cls)
    return out


def tiny_config(model_type: str) -> Any:
    """The default config of `model_type`, made tiny; eval-friendly (no cache, no dropout)."""
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    defaults = _implicit_mrope(cls().to_dict(), cls)
    changes = tiny_overrides(defaults)
    config = cls(**changes)
    for flag, value in (("use_cache", False), ("return_dict", True)):
        if hasattr(config, flag):
            setattr(config, flag, value)
    return config


def _first_tensor(out: Any) -> torch.Tensor | None:
    """The first tensor of a model output (ModelOutput, tuple, dict, tensor), depth first."""
    if isinstance(out, torch.Tensor):
        return out
    values = out.values() if isinstance(out, dict) else out if isinstance(
        out, list | tuple) else []
    for value in values:
        found = _first_tensor(value)
        if found is not None:
            return found
    return None


@dataclass
class Spec:
    """How one model type is built and fed."""

    model_type: str
    model_class: str
    input_names: tuple[str, ...]  # the forward's keyword for each input, in order
    inputs: tuple[torch.Tensor, ...]
    extra: dict[str, Any] = field(default_factory=dict)  # constant keyword inputs
    params: int = 0


def _config_value(config: Any, *names: str, default: Any = None) -> Any:
    for holder in (config, getattr(config, "vision_config", None),
                   getattr(config, "audio_config", None), getattr(config, "encoder_config", None)):
        for name in names:
            value = getattr(holder, name, None) if holder is not None else None
            if value is not None:
                return value
    return default


def _candidate_inputs(name: str, config: Any) -> list[tuple[torch.Tensor, ...]]:
    """Example inputs for a main input name, most likely first (seeded: always the same)."""
    gen = torch.Generator().manual_seed(0)
    if name in ("input_ids", "decoder_input_ids"):
        vocab = getattr(config, "vocab_size", None) or getattr(
            getattr(config, "text_config", None), "vocab_size", None) or TOKENS
        high = max(4, min(int(vocab), TOKENS))
        return [(torch.randint(3, high, (1, SEQ), generator=gen),)]
    if name == "pixel_values":
        size = _config_value(config, "image_size", default=32)
        size = size[0] if isinstance(size, list | tuple) else size
        channels = _config_value(config, "num_channels", "in_channels", default=3)
        frames = _config_value(config, "num_frames", default=None)
        shapes = [(1, channels, size, size), (1, channels, 32, 32), (1, channels, 64, 64)]
        if frames:
            shapes.insert(0, (1, frames, channels, size, size))
        return [(torch.randn(s, generator=gen),) for s in shapes]
    if name == "input_values":
        return [(torch.randn(1, n, generator=gen),) for n in (1600, 16000)] + [
            (torch.randn(1, 1, n, generator=gen),) for n in (1600, 16000)]
    if name == "input_features":
        mels = _config_value(config, "num_mel_bins", "feature_size", "input_feat_per_channel",
                             default=80)
        positions = _config_value(config, "max_source_positions", default=None)
        shapes = [(1, mels, 2 * positions)] if positions else []
        shapes += [(1, 32, mels), (1, mels, 32), (1, 64, mels)]
        return [(torch.randn(s, generator=gen),) for s in shapes]
    return []


def _extra_inputs(model: nn.Module, config: Any) -> dict[str, Any]:
    """Constant keyword inputs a base model needs besides its main input."""
    params = inspect.signature(model.forward).parameters
    extra: dict[str, Any] = {}
    if "decoder_input_ids" in params and getattr(config, "is_encoder_decoder", False):
        start = getattr(config, "decoder_start_token_id", None)
        start = start if isinstance(start, int) and start < VOCAB else 1
        extra["decoder_input_ids"] = torch.full((1, 4), start, dtype=torch.long)
    return extra


def _input_sets(model: nn.Module, config: Any) -> list[dict[str, torch.Tensor]]:
    """Inputs to try, most likely first: the main input alone (each shape that fits), then
    with the other inputs the forward takes (CLIP-like models need text and image)."""
    main = getattr(model, "main_input_name", "input_ids")
    params = inspect.signature(model.forward).parameters
    others = [n for n in _INPUT_NAMES if n != main and n in params]
    sets = [{main: c[0]} for c in _candidate_inputs(main, config)]
    for other in others:
        for first in _candidate_inputs(main, config)[:1]:
            sets += [{main: first[0], other: c[0]} for c in _candidate_inputs(other, config)]
    return sets


@functools.cache
def spec(model_type: str) -> Spec:
    """How to build and feed `model_type`; NotBuilt says why it cannot be."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    if model_type in DIFFUSERS:
        model, named = _model(model_type)[0], DIFFUSERS[model_type]()[1]
        return Spec(model_type, type(model).__name__, tuple(named), tuple(named.values()),
                    {}, sum(p.numel() for p in model.parameters()))
    if model_type not in MODEL_MAPPING_NAMES:
        raise NotBuilt("no base model")
    model, config = _model(model_type)
    main = getattr(model, "main_input_name", "input_ids")
    extra = _extra_inputs(model, config)
    errors = []
    for named in _input_sets(model, config):
        try:
            with torch.no_grad():
                out = model(**named, **extra)
        except Exception as exc:  # any library error: the next candidate
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
                          if str(exc) else type(exc).__name__)
            continue
        if _first_tensor(out) is None:
            raise NotBuilt("the output holds no tensor")
        params = sum(p.numel() for p in model.parameters())
        return Spec(model_type, type(model).__name__, tuple(named), tuple(named.values()),
                    extra, params)
    if not errors:
        raise NotBuilt(f"no example input for main input {main!r}")
    raise NotBuilt(f"eager forward fails: {errors[0]}")


def _model(model_type: str) -> tuple[nn.Module, Any]:
    """The base model of `model_type`, tiny, in eval mode, random weights (seed 0)."""
    if model_type in DIFFUSERS:
        torch.manual_seed(0)
        return DIFFUSERS[model_type]()[0].eval(), None
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    names = MODEL_MAPPING_NAMES[model_type]
    class_name = names[0] if isinstance(names, list | tuple) else names
    cls = getattr(transformers, class_name, None)
    if cls is None:
        raise NotBuilt(f"{class_name} is not available")
    try:
        config = tiny_config(model_type)
    except Exception as exc:
        raise NotBuilt(f"config: {type(exc).__name__}: {str(exc)[:160]}") from exc
    try:
        with torch.device("meta"):
            params = sum(p.numel() for p in cls(config).parameters())
    except Exception:
        params = 0  # some models cannot be built on meta: build for real and count then
    if params > MAX_PARAMS:
        raise NotBuilt(f"too big when shrunk ({params / 1e6:.1f}M parameters)")
    torch.manual_seed(0)
    try:
        model = cls(config).eval()
    except Exception as exc:
        raise NotBuilt(f"build: {type(exc).__name__}: {str(exc)[:160]}") from exc
    if sum(p.numel() for p in model.parameters()) > MAX_PARAMS:
        raise NotBuilt("too big when shrunk")
    return model, config


def zoo_inputs(model_type: str) -> tuple[torch.Tensor, ...]:
    """The example inputs of `model_type` (the same tensors every call)."""
    return tuple(t.clone() for t in spec(model_type).inputs)


class ZooModel(nn.Module):
    """A user's module around one zoo architecture: the first tensor of its output."""

    def __init__(self, model_type: str) -> None:
        super().__init__()
        found = spec(model_type)
        self.model, _config = _model(model_type)
        self.input_names = found.input_names
        self.extra = found.extra

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor | None:
        out = self.model(**dict(zip(self.input_names, inputs, strict=True)), **self.extra)
        return _first_tensor(out)
