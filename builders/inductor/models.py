"""The models a capture compiles, by name: ``ModelSpec`` (model, dtype, size, forward or
backward), ``build_block`` (the module with random weights, its inputs by role) and
``example_inputs`` (the module and real inputs, for a frontend that runs or exports it).
The dataset's models come from the libraries (library_models.py: transformers, torchvision,
diffusers). The blocks written here in plain torch are the first captures' (kept for the
tests and the TVM comparison): a Llama-style decoder layer (RMSNorm, rotary attention, SwiGLU
MLP), a GPT-2 block (LayerNorm, GELU-tanh MLP), a ViT block, a ResNet bottleneck (batch norm
in eval mode), a Mixtral-style MoE decoder layer, BERT's embeddings and encoder layer and a
T5 v1.1 encoder layer, the last three written after their ``transformers`` code. A captured
graph is named ``<model>-<dtype>-b<batch>s<seq>``."""
from __future__ import annotations

import math
from dataclasses import dataclass


def _torch():
    import torch
    return torch


def _nn():
    return _torch().nn


def llama_layer(hidden=256, heads=4, ffn=688, eps=1e-6):
    torch, nn = _torch(), _nn()
    F = torch.nn.functional

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden))

        def forward(self, x):
            variance = x.float().pow(2).mean(-1, keepdim=True)
            return (x.float() * torch.rsqrt(variance + eps)).to(x.dtype) * self.weight

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_norm, self.post_norm = RMSNorm(), RMSNorm()
            self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden, bias=False) for _ in range(4))
            self.gate, self.up = nn.Linear(hidden, ffn, bias=False), nn.Linear(hidden, ffn, bias=False)
            self.down = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            h = self.input_norm(x)
            q, k, v = (p(h).view(b, s, heads, -1).transpose(1, 2) for p in (self.q, self.k, self.v))
            q, k = q * cos + _rotate(q) * sin, k * cos + _rotate(k) * sin
            attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(attn.transpose(1, 2).reshape(b, s, hidden))
            h = self.post_norm(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    def _rotate(t):
        half = t.shape[-1] // 2
        return torch.cat((-t[..., half:], t[..., :half]), dim=-1)

    def inputs(batch, seq, dtype, device):
        head_dim = hidden // heads
        return {"x": ("activation", (batch, seq, hidden), dtype),
                "cos": ("activation", (seq, head_dim), dtype), "sin": ("activation", (seq, head_dim), dtype)}

    return Layer(), inputs


def gpt2_block(hidden=256, heads=4):
    torch, nn = _torch(), _nn()
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.c_attn, self.c_proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.c_fc, self.mlp_proj = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(hidden, dim=2)
            q, k, v = (t.view(b, s, heads, -1).transpose(1, 2) for t in (q, k, v))
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(hidden // heads)
            mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
            attn = scores.softmax(-1) @ v
            x = x + self.c_proj(attn.transpose(1, 2).reshape(b, s, hidden))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    def inputs(batch, seq, dtype, device):
        return {"x": ("activation", (batch, seq, hidden), dtype)}

    return Block(), inputs


def vit_block(hidden=192, heads=3, mlp=768):
    torch, nn = _torch(), _nn()
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(hidden, eps=1e-6), nn.LayerNorm(hidden, eps=1e-6)
            self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.fc1, self.fc2 = nn.Linear(hidden, mlp), nn.Linear(mlp, hidden)

        def forward(self, x):
            b, n, _ = x.shape
            qkv = self.qkv(self.norm1(x)).reshape(b, n, 3, heads, -1).permute(2, 0, 3, 1, 4)
            attn = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
            x = x + self.proj(attn.transpose(1, 2).reshape(b, n, hidden))
            return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))

    def inputs(batch, seq, dtype, device):
        return {"x": ("activation", (batch, seq, hidden), dtype)}

    return Block(), inputs


def resnet_bottleneck(channels=64, width=16):
    torch, nn = _torch(), _nn()

    class Bottleneck(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(channels, width, 1, bias=False), nn.BatchNorm2d(width)
            self.conv2, self.bn2 = nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width)
            self.conv3, self.bn3 = nn.Conv2d(width, channels, 1, bias=False), nn.BatchNorm2d(channels)

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = torch.relu(self.bn2(self.conv2(out)))
            return torch.relu(self.bn3(self.conv3(out)) + x)

    def inputs(batch, seq, dtype, device):
        return {"x": ("activation", (batch, channels, seq, seq), dtype)}

    return Bottleneck(), inputs


def moe_block(hidden=128, heads=4, kv_heads=2, experts=8, top_k=2, ffn=128, eps=1e-5):
    """A Mixtral-style decoder layer: RMSNorm, rotary attention with grouped key/value heads,
    and a sparse mixture of SwiGLU experts routed by softmax top-k, written as gpt-fast
    writes it for torch.compile (each token gathers its experts' weights: static shapes)."""
    torch, nn = _torch(), _nn()
    F = torch.nn.functional
    head_dim = hidden // heads

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden))

        def forward(self, x):
            x32 = x.float()
            return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * self.weight

    class Experts(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = nn.Parameter(torch.randn(experts, ffn, hidden) / math.sqrt(hidden))
            self.w3 = nn.Parameter(torch.randn(experts, ffn, hidden) / math.sqrt(hidden))
            self.w2 = nn.Parameter(torch.randn(experts, hidden, ffn) / math.sqrt(ffn))

        def forward(self, x, chosen):
            w1, w3, w2 = self.w1[chosen], self.w3[chosen], self.w2[chosen]  # [tokens, k, out, in]
            gated = F.silu(torch.einsum("ti,taoi->tao", x, w1)) * torch.einsum("ti,taoi->tao", x, w3)
            return torch.einsum("tao,taio->tai", gated, w2)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_norm, self.post_norm = RMSNorm(), RMSNorm()
            self.q, self.o = nn.Linear(hidden, hidden, bias=False), nn.Linear(hidden, hidden, bias=False)
            self.k = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.v = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.router = nn.Linear(hidden, experts, bias=False)
            self.experts = Experts()

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            h = self.input_norm(x)
            q = self.q(h).view(b, s, heads, head_dim).transpose(1, 2)
            k, v = (p(h).view(b, s, kv_heads, head_dim).transpose(1, 2) for p in (self.k, self.v))
            q, k = q * cos + _rotate(q) * sin, k * cos + _rotate(k) * sin
            k, v = (t.repeat_interleave(heads // kv_heads, dim=1) for t in (k, v))  # as HF's repeat_kv
            attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(attn.transpose(1, 2).reshape(b, s, hidden))
            tokens = self.post_norm(x).view(-1, hidden)
            weights, chosen = torch.topk(F.softmax(self.router(tokens), dim=-1, dtype=torch.float), top_k, dim=-1)
            weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
            mixed = torch.einsum("tai,ta->ti", self.experts(tokens, chosen), weights)
            return x + mixed.view(b, s, hidden)

    def inputs(batch, seq, dtype, device):
        return {"x": ("activation", (batch, seq, hidden), dtype),
                "cos": ("activation", (seq, head_dim), dtype), "sin": ("activation", (seq, head_dim), dtype)}

    return Layer(), inputs


def _rotate(t):
    half = t.shape[-1] // 2
    return _torch().cat((-t[..., half:], t[..., :half]), dim=-1)


def bert_block(hidden=256, heads=4, ffn=1024, vocab=1024, positions=512, eps=1e-12):
    """BERT's embeddings (word, position, token type; LayerNorm) and one post-LN encoder layer
    with a padding mask (attention through SDPA with an additive mask, GELU-erf MLP)."""
    torch, nn = _torch(), _nn()
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.word, self.position = nn.Embedding(vocab, hidden), nn.Embedding(positions, hidden)
            self.token_type = nn.Embedding(2, hidden)
            self.embed_norm = nn.LayerNorm(hidden, eps=eps)
            self.qkv, self.out = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.attn_norm, self.ffn_norm = nn.LayerNorm(hidden, eps=eps), nn.LayerNorm(hidden, eps=eps)
            self.fc1, self.fc2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)

        def forward(self, input_ids, token_type_ids, attention_mask):
            b, s = input_ids.shape
            position_ids = torch.arange(s, device=input_ids.device)
            x = self.embed_norm(self.word(input_ids) + self.token_type(token_type_ids) + self.position(position_ids))
            # HF's extended mask: 0 where attended, the dtype's lowest value where padded
            bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
            q, k, v = (t.view(b, s, heads, -1).transpose(1, 2) for t in self.qkv(x).split(hidden, dim=2))
            attn = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            x = self.attn_norm(x + self.out(attn.transpose(1, 2).reshape(b, s, hidden)))
            return self.ffn_norm(x + self.fc2(F.gelu(self.fc1(x))))

    def inputs(batch, seq, dtype, device):
        torch = _torch()
        return {"input_ids": (f"indices:{vocab}", (batch, seq), torch.int64),
                "token_type_ids": ("indices:2", (batch, seq), torch.int64),
                "attention_mask": ("indices:2", (batch, seq), torch.int64)}

    return Block(), inputs


def t5_block(hidden=256, heads=4, ffn=683, eps=1e-6):
    """A T5 v1.1 encoder layer after the first: RMS layer norm without mean or bias,
    unscaled attention plus the position bias the first layer computed (an input here, as
    in HF's T5Stack), gated-GELU (tanh) feed-forward."""
    torch, nn = _torch(), _nn()
    F = torch.nn.functional

    class T5Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden))

        def forward(self, x):
            variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
            return self.weight * (x * torch.rsqrt(variance + eps)).to(self.weight.dtype)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn_norm, self.ffn_norm = T5Norm(), T5Norm()
            self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden, bias=False) for _ in range(4))
            self.wi_0, self.wi_1 = nn.Linear(hidden, ffn, bias=False), nn.Linear(hidden, ffn, bias=False)
            self.wo = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x, position_bias):
            b, s, _ = x.shape
            h = self.attn_norm(x)
            q, k, v = (p(h).view(b, s, heads, -1).transpose(1, 2) for p in (self.q, self.k, self.v))
            scores = torch.matmul(q, k.transpose(3, 2)) + position_bias
            weights = F.softmax(scores.float(), dim=-1).type_as(scores)
            x = x + self.o(torch.matmul(weights, v).transpose(1, 2).reshape(b, s, hidden))
            h = self.ffn_norm(x)
            return x + self.wo(F.gelu(self.wi_0(h), approximate="tanh") * self.wi_1(h))

    def inputs(batch, seq, dtype, device):
        return {"x": ("activation", (batch, seq, hidden), dtype),
                "position_bias": ("activation", (1, heads, seq, seq), dtype)}

    return Block(), inputs


BLOCKS = {"llama_layer": llama_layer, "gpt2_block": gpt2_block, "vit_block": vit_block,
          "resnet_bottleneck": resnet_bottleneck, "moe_block": moe_block, "bert_block": bert_block,
          "t5_block": t5_block}
DTYPES = ("float16", "bfloat16", "float32")
IMAGE_BLOCKS = ("resnet_bottleneck",)


def model_names() -> list:
    """Every model a spec may name: the blocks written here, then the library models."""
    from builders.inductor.library_models import LIBRARY_MODELS
    return list(BLOCKS) + list(LIBRARY_MODELS)


@dataclass(frozen=True)
class ModelSpec:
    """One captured graph: a model, its dtype and its input size (batch x sequence, or
    batch x side for images); the forward, or with ``backward`` the training backward."""
    block: str
    dtype: str
    batch: int
    seq: int
    backward: bool = False

    @property
    def name(self) -> str:
        return f"{self.block}-{self.dtype}-b{self.batch}s{self.seq}" + ("-backward" if self.backward else "")

    @staticmethod
    def parse(text: str) -> "ModelSpec":
        """``model`` or ``model:dtype:batch:seq`` (default float16 and, for a block, 2 x 64 or
        2 x 16 for images; for a library model its half dtype and first size), with
        ``:backward`` last for the training backward (``llama_layer:backward``)."""
        from builders.inductor.library_models import LIBRARY_MODELS
        parts = text.split(":")
        backward = parts[-1] == "backward"
        if backward:
            parts = parts[:-1]
        if parts[0] not in BLOCKS and parts[0] not in LIBRARY_MODELS:
            raise ValueError(f"unknown model {parts[0]!r}; known: {', '.join(model_names())}")
        if parts[0] in LIBRARY_MODELS:
            (batch, seq), dtype = LIBRARY_MODELS[parts[0]].sizes[0], LIBRARY_MODELS[parts[0]].half
        else:
            (batch, seq), dtype = (2, 16 if parts[0] in IMAGE_BLOCKS else 64), "float16"
        defaults = [parts[0], dtype, str(batch), str(seq)]
        parts = parts + defaults[len(parts):]
        if parts[1] not in DTYPES:
            raise ValueError(f"model {text!r}: dtype must be one of {', '.join(DTYPES)}")
        return ModelSpec(parts[0], parts[1], int(parts[2]), int(parts[3]), backward)


def build_block(spec: ModelSpec):
    """(module in inference mode (``train(False)``) with random weights, {input name: (role,
    shape, dtype)} in the order the module takes them)."""
    from builders.inductor.library_models import LIBRARY_MODELS
    torch = _torch()
    torch.manual_seed(0)
    dtype = getattr(torch, spec.dtype)
    if spec.block in LIBRARY_MODELS:
        entry = LIBRARY_MODELS[spec.block]
        module, inputs = entry.build(spec.seq), entry.inputs(spec.batch, spec.seq, dtype)
    else:
        module, describe = BLOCKS[spec.block]()
        inputs = describe(spec.batch, spec.seq, dtype, "cuda")
    return module.train(False).to(dtype), inputs


def example_inputs(spec: ModelSpec, device: str = "cpu"):
    """(module as ``build_block`` makes it, on ``device``; a tuple of real inputs drawn by
    role: token ids and masks below their range, activations from a normal draw, seed 0), for
    a frontend that runs or exports the model itself (``torch.export``)."""
    torch = _torch()
    module, inputs = build_block(spec)
    generator = torch.Generator().manual_seed(0)
    tensors = []
    for role, shape, dtype in inputs.values():
        if role.startswith("indices:"):
            tensors.append(torch.randint(0, int(role.split(":")[1]), shape, generator=generator, dtype=dtype))
        else:
            tensors.append(torch.randn(shape, generator=generator).to(dtype))
    return module.to(device), tuple(t.to(device) for t in tensors)
