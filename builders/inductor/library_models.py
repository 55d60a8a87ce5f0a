"""Models from ``transformers``, ``torchvision`` and ``diffusers`` (the ``inductor`` extra) with
random weights and small but real configs written here: nothing is downloaded. Each entry
makes its module for one input size (a ViT's image size, a Whisper encoder's frame count are
part of its config) and describes its inputs by role, as models.py's hand-written blocks do.
Whole models where Inductor's code for them stays small (ResNet-50, MobileNetV3, ConvNeXt,
a small UNet, encoders of two layers); the libraries' own attention (``sdpa``) and mixture of
experts (``batched_mm``: static shapes, every token gathers its experts' weights)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class LibraryModel:
    """One library model: ``build(seq)`` returns the module for inputs of that sequence
    length or image side; ``inputs(batch, seq, dtype)`` returns {name: (role, shape, dtype)}
    in the order the module takes them; ``sizes`` are the two (batch, seq) a dataset captures,
    in float32 and in ``half`` (bfloat16 for the decoders, as they are trained and served;
    float16 for the rest); ``backward``: the dataset also captures the training backward."""
    build: Callable
    inputs: Callable
    sizes: tuple
    library: str
    image: bool = False
    half: str = "float16"
    backward: bool = False


def _torch():
    import torch
    return torch


def _first_tensor(model, names: tuple):
    """A module calling ``model(**inputs)`` by name and returning its first tensor output (a
    ``ModelOutput``'s ``last_hidden_state``, torchvision's logits): the traced graph has one
    tensor output, and its inputs are positional in ``names``' order."""
    torch = _torch()

    class FirstTensor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            out = self.model(**dict(zip(names, args)))
            if isinstance(out, torch.Tensor):
                return out
            return out[0] if isinstance(out, tuple) else next(v for v in out.values() if isinstance(v, torch.Tensor))

    return FirstTensor()


def _hf(config):
    """A transformers config for inference as Inductor sees it: ``sdpa`` attention, no KV
    cache, no dropout (the module is in inference mode anyway)."""
    config._attn_implementation = "sdpa"
    if hasattr(config, "use_cache"):
        config.use_cache = False
    return config


def _tokens(vocab: int, mask: bool = False, token_types: bool = False):
    def inputs(batch, seq, dtype):
        torch = _torch()
        found = {"input_ids": (f"indices:{vocab}", (batch, seq), torch.int64)}
        if token_types:
            found["token_type_ids"] = ("indices:2", (batch, seq), torch.int64)
        if mask:
            found["attention_mask"] = ("indices:2", (batch, seq), torch.int64)
        return found
    return inputs


# ----------------------------------------------------------------------------- transformers
def llama(seq):
    from transformers import LlamaConfig, LlamaModel
    config = _hf(LlamaConfig(vocab_size=2048, hidden_size=512, intermediate_size=1376, num_hidden_layers=2,
                             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=2048))
    return _first_tensor(LlamaModel(config), ("input_ids", "attention_mask"))


def mixtral(seq):
    """Mixtral's sparse MoE decoder: top-2 of 8 SwiGLU experts per token, grouped-query attention."""
    from transformers import MixtralConfig, MixtralModel
    config = _hf(MixtralConfig(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=1,
                               num_attention_heads=8, num_key_value_heads=4, num_local_experts=8,
                               num_experts_per_tok=2, max_position_embeddings=2048))
    config._experts_implementation = "batched_mm"
    return _first_tensor(MixtralModel(config), ("input_ids", "attention_mask"))


def qwen2_moe(seq):
    """Qwen2-MoE's sparse block: top-4 of 8 experts plus a shared expert behind a sigmoid gate."""
    from transformers import Qwen2MoeConfig, Qwen2MoeModel
    config = _hf(Qwen2MoeConfig(vocab_size=1024, hidden_size=256, intermediate_size=512, moe_intermediate_size=256,
                                shared_expert_intermediate_size=512, num_hidden_layers=1, num_attention_heads=8,
                                num_key_value_heads=4, num_experts=8, num_experts_per_tok=4,
                                max_position_embeddings=2048))
    config._experts_implementation = "batched_mm"
    return _first_tensor(Qwen2MoeModel(config), ("input_ids", "attention_mask"))


def gpt2(seq):
    from transformers import GPT2Config, GPT2Model
    config = _hf(GPT2Config(vocab_size=2048, n_positions=1024, n_embd=512, n_layer=2, n_head=8))
    return _first_tensor(GPT2Model(config), ("input_ids", "attention_mask"))


def bert(seq):
    from transformers import BertConfig, BertModel
    config = _hf(BertConfig(vocab_size=2048, hidden_size=512, num_hidden_layers=2, num_attention_heads=8,
                            intermediate_size=2048, max_position_embeddings=512))
    return _first_tensor(BertModel(config, add_pooling_layer=False),
                             ("input_ids", "token_type_ids", "attention_mask"))


def t5_encoder(seq):
    """T5 v1.1's encoder (gated GELU, RMS norm, relative position buckets)."""
    from transformers import T5Config, T5EncoderModel
    config = _hf(T5Config(vocab_size=2048, d_model=512, d_kv=64, d_ff=1024, num_layers=2, num_heads=8,
                          feed_forward_proj="gated-gelu"))
    return _first_tensor(T5EncoderModel(config), ("input_ids",))


def vit(seq):
    """ViT at image side ``seq`` in patches of 8."""
    from transformers import ViTConfig, ViTModel
    config = _hf(ViTConfig(hidden_size=384, num_hidden_layers=2, num_attention_heads=6, intermediate_size=1536,
                           image_size=seq, patch_size=8))
    return _first_tensor(ViTModel(config, add_pooling_layer=False), ("pixel_values",))


def whisper_encoder(seq):
    """Whisper's encoder over ``seq`` positions (2 x seq mel frames, the length its config fixes)."""
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    config = _hf(WhisperConfig(num_mel_bins=80, d_model=384, encoder_layers=2, encoder_attention_heads=6,
                               encoder_ffn_dim=1536, max_source_positions=seq))
    return _first_tensor(WhisperEncoder(config), ("input_features",))


def _images(channels: int):
    def inputs(batch, side, dtype):
        return {"pixel_values": ("activation", (batch, channels, side, side), dtype)}
    return inputs


def _whisper_inputs(batch, seq, dtype):
    return {"input_features": ("activation", (batch, 80, 2 * seq), dtype)}


# ----------------------------------------------------------------------------- torchvision
def resnet50(side):
    from torchvision.models import resnet50 as make
    return _first_tensor(make(weights=None), ("x",))


def mobilenet_v3_small(side):
    from torchvision.models import mobilenet_v3_small as make
    return _first_tensor(make(weights=None), ("x",))


def convnext_tiny(side):
    from torchvision.models import convnext_tiny as make
    return _first_tensor(make(weights=None), ("x",))


def _pixels(batch, side, dtype):
    return {"x": ("activation", (batch, 3, side, side), dtype)}


# ----------------------------------------------------------------------------- diffusers
UNET_TEXT = 16  # encoder tokens the UNet's cross-attention reads
UNET_CONTEXT = 128


def unet(side):
    """A small UNet2DConditionModel (Stable Diffusion's layout at two levels): ResNet blocks
    with GroupNorm and the timestep embedding, a cross-attention transformer block, down- and
    upsampling, the mid block."""
    from diffusers import UNet2DConditionModel
    model = UNet2DConditionModel(
        sample_size=side, in_channels=4, out_channels=4, block_out_channels=(64, 128), layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=UNET_CONTEXT, attention_head_dim=8, norm_num_groups=32)
    return _first_tensor(model, ("sample", "timestep", "encoder_hidden_states"))


def _unet_inputs(batch, side, dtype):
    torch = _torch()
    return {"sample": ("activation", (batch, 4, side, side), dtype),
            "timestep": ("indices:1000", (batch,), torch.int64),
            "encoder_hidden_states": ("activation", (batch, UNET_TEXT, UNET_CONTEXT), dtype)}


TEXT_SIZES = ((1, 64), (4, 256))
# batched_mm gathers each (token, expert) pair's weights: a [tokens * k, 2 * ffn, hidden] buffer
# that the float64 reference holds several times over (4 x 256 tokens: 4 GiB for Mixtral)
MOE_SIZES = ((1, 32), (1, 128))
LIBRARY_MODELS = {
    "llama": LibraryModel(llama, _tokens(2048, mask=True), TEXT_SIZES, "transformers", half="bfloat16",
                          backward=True),
    "mixtral": LibraryModel(mixtral, _tokens(1024, mask=True), MOE_SIZES, "transformers", half="bfloat16"),
    "qwen2_moe": LibraryModel(qwen2_moe, _tokens(1024, mask=True), MOE_SIZES, "transformers", half="bfloat16"),
    "gpt2": LibraryModel(gpt2, _tokens(2048, mask=True), TEXT_SIZES, "transformers"),
    "bert": LibraryModel(bert, _tokens(2048, mask=True, token_types=True), TEXT_SIZES, "transformers",
                         backward=True),
    "t5_encoder": LibraryModel(t5_encoder, _tokens(2048), TEXT_SIZES, "transformers"),
    "vit": LibraryModel(vit, _images(3), ((1, 32), (4, 64)), "transformers", image=True),
    "whisper_encoder": LibraryModel(whisper_encoder, _whisper_inputs, ((1, 64), (2, 150)), "transformers"),
    "resnet50": LibraryModel(resnet50, _pixels, ((1, 64), (4, 128)), "torchvision", image=True),
    "mobilenet_v3_small": LibraryModel(mobilenet_v3_small, _pixels, ((1, 64), (4, 128)), "torchvision", image=True),
    "convnext_tiny": LibraryModel(convnext_tiny, _pixels, ((1, 64), (4, 128)), "torchvision", image=True),
    "unet": LibraryModel(unet, _unet_inputs, ((1, 16), (2, 32)), "diffusers", image=True),
}


def dataset_specs() -> list:
    """The model list of the Inductor dataset (``--models library``): every model at its two
    sizes in its half dtype and float32, and the training backward where the entry asks."""
    specs = []
    for name, entry in LIBRARY_MODELS.items():
        for dtype in (entry.half, "float32"):
            for batch, seq in entry.sizes:
                specs.append(f"{name}:{dtype}:{batch}:{seq}")
                if entry.backward:
                    specs.append(f"{name}:{dtype}:{batch}:{seq}:backward")
    return specs
