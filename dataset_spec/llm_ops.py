"""Ops of the LLM-operator sources (attention, fused norms, gated MLPs, LoRA): float64
references, error scales and input domains, registered into ``problems.OPS``."""
from __future__ import annotations

LLM_OPS: list = []
