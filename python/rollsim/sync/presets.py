"""Public model configurations, hardware and calibrated software stacks.

Model shapes come from each model's published Hugging Face ``config.json`` (fields named in
:func:`transformer`); the parameter counts they give are checked against the published totals in
the tests (DeepSeek-V3 671B + 14B MTP, Kimi-K2 1.03T, Qwen3-235B-A22B 235B, Qwen3-30B-A3B 30.5B,
GLM-4.5-Air 106B + MTP, Qwen3-4B 4.0B).
"""

from __future__ import annotations

from .cluster import Hardware, ModelSpec, Precision, SoftwareStack, TensorGroup

__all__ = ["transformer", "from_spec", "MODELS", "model", "HARDWARE", "hardware", "SOFTWARE"]


def transformer(
    name: str,
    *,
    hidden: int,
    layers: int,
    vocab: int,
    heads: int,
    kv_heads: int = 0,
    head_dim: int = 128,
    mla: dict | None = None,
    dense_layers: int = 0,
    ffn: int = 0,
    moe_ffn: int = 0,
    n_experts: int = 0,
    shared_experts: int = 0,
    top_k: int = 0,
    tie_embeddings: bool = False,
    qk_norm: bool = False,
    attn_bias: bool = False,
    router_bias: bool = False,
    mtp_layers: int = 0,
    source: str = "",
) -> ModelSpec:
    """Tensor groups of a (MoE) decoder-only transformer in the Hugging Face checkpoint layout.

    Parameters follow ``config.json``: ``hidden`` (hidden_size), ``layers`` (num_hidden_layers),
    ``vocab`` (vocab_size), ``heads``/``kv_heads``/``head_dim`` (GQA attention) or ``mla`` (dict with
    q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim: DeepSeek MLA),
    ``dense_layers`` (first_k_dense_replace; all layers dense if ``n_experts == 0``), ``ffn``
    (intermediate_size), ``moe_ffn`` (moe_intermediate_size), ``n_experts`` (n_routed_experts),
    ``shared_experts``, ``top_k`` (num_experts_per_tok), ``mtp_layers`` (num_nextn_predict_layers,
    stored in the checkpoint as extra MoE layers).
    """
    total_layers = layers + mtp_layers
    moe = n_experts > 0
    n_dense = dense_layers if moe else layers
    n_moe = total_layers - n_dense if moe else 0
    L = total_layers
    g: list[TensorGroup] = []
    if mla:
        q, kv = mla["q_lora_rank"], mla["kv_lora_rank"]
        nope, rope, v = mla["qk_nope_head_dim"], mla["qk_rope_head_dim"], mla["v_head_dim"]
        g += [
            TensorGroup("attn.q_a_proj", L, hidden * q, layers=L),
            TensorGroup("attn.q_b_proj", L, q * heads * (nope + rope), layers=L),
            TensorGroup("attn.kv_a_proj_with_mqa", L, hidden * (kv + rope), layers=L),
            TensorGroup("attn.kv_b_proj", L, kv * heads * (nope + v), layers=L),
            TensorGroup("attn.o_proj", L, heads * v * hidden, layers=L),
            TensorGroup("attn.lora_norms", 2 * L, (q + kv) // 2, layers=L, replicated=True, quantized=False),
        ]
    else:
        kvh = kv_heads or heads
        g += [
            TensorGroup("attn.q_proj", L, hidden * heads * head_dim, layers=L),
            TensorGroup("attn.k_proj", L, hidden * kvh * head_dim, layers=L),
            TensorGroup("attn.v_proj", L, hidden * kvh * head_dim, layers=L),
            TensorGroup("attn.o_proj", L, heads * head_dim * hidden, layers=L),
        ]
        if qk_norm:
            g.append(TensorGroup("attn.qk_norm", 2 * L, head_dim, layers=L, replicated=True, quantized=False))
        if attn_bias:
            g.append(TensorGroup("attn.qkv_bias", 3 * L, (heads + 2 * kvh) * head_dim // 3, layers=L, replicated=True, quantized=False))
    g.append(TensorGroup("layernorms", 2 * L, hidden, layers=L, replicated=True, quantized=False))
    if n_dense:
        g.append(TensorGroup("mlp.dense_proj", 3 * n_dense, hidden * ffn, layers=n_dense))
    if n_moe:
        g.append(TensorGroup("mlp.router", n_moe, n_experts * hidden, layers=n_moe, replicated=True, quantized=False))
        if router_bias:
            g.append(TensorGroup("mlp.router_bias", n_moe, n_experts, layers=n_moe, replicated=True, quantized=False))
        if shared_experts:
            g.append(TensorGroup("mlp.shared_experts", 3 * n_moe, hidden * moe_ffn * shared_experts, layers=n_moe))
        g.append(TensorGroup("mlp.experts", 3 * n_experts * n_moe, hidden * moe_ffn, n_experts=n_experts, layers=n_moe))
    g.append(TensorGroup("embed_tokens", 1, vocab * hidden, quantized=False))
    if not tie_embeddings:
        g.append(TensorGroup("lm_head", 1, vocab * hidden, quantized=False))
    g.append(TensorGroup("final_norm", 1, hidden, replicated=True, quantized=False))
    return ModelSpec(name, tuple(g), layers=layers, moe_layers=n_moe - mtp_layers if n_moe else 0, top_k=top_k, n_experts=n_experts, source=source)


_DSV3_MLA = dict(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)

MODELS: dict[str, ModelSpec] = {
    # deepseek-ai/DeepSeek-V3 config.json (V3.1 has the same shapes)
    "deepseek-v3": transformer(
        "DeepSeek-V3", hidden=7168, layers=61, vocab=129280, heads=128, mla=_DSV3_MLA, dense_layers=3, ffn=18432,
        moe_ffn=2048, n_experts=256, shared_experts=1, top_k=8, router_bias=True, mtp_layers=1,
        source="huggingface.co/deepseek-ai/DeepSeek-V3 config.json",
    ).with_precision("bf16", "fp8:128"),
    # the same without the MTP layer (num_nextn_predict_layers is a drafter: NeMo-RL keeps it out of
    # the refit's bulk path, and its published bulk share, 97.6 %, matches the model without it)
    "deepseek-v3-no-mtp": transformer(
        "DeepSeek-V3 (no MTP)", hidden=7168, layers=61, vocab=129280, heads=128, mla=_DSV3_MLA, dense_layers=3,
        ffn=18432, moe_ffn=2048, n_experts=256, shared_experts=1, top_k=8, router_bias=True,
        source="huggingface.co/deepseek-ai/DeepSeek-V3 config.json, without the MTP layer",
    ).with_precision("bf16", "fp8:128"),
    # moonshotai/Kimi-K2-Instruct config.json (DeepSeek-V3 architecture, 384 experts, 64 heads)
    "kimi-k2": transformer(
        "Kimi-K2", hidden=7168, layers=61, vocab=163840, heads=64, mla=_DSV3_MLA, dense_layers=1, ffn=18432,
        moe_ffn=2048, n_experts=384, shared_experts=1, top_k=8, router_bias=True,
        source="huggingface.co/moonshotai/Kimi-K2-Instruct config.json",
    ).with_precision("bf16", "fp8:128"),
    # Qwen/Qwen3-235B-A22B config.json
    "qwen3-235b-a22b": transformer(
        "Qwen3-235B-A22B", hidden=4096, layers=94, vocab=151936, heads=64, kv_heads=4, moe_ffn=1536, n_experts=128,
        top_k=8, qk_norm=True, source="huggingface.co/Qwen/Qwen3-235B-A22B config.json",
    ),
    # Qwen/Qwen3-30B-A3B config.json
    "qwen3-30b-a3b": transformer(
        "Qwen3-30B-A3B", hidden=2048, layers=48, vocab=151936, heads=32, kv_heads=4, moe_ffn=768, n_experts=128,
        top_k=8, qk_norm=True, source="huggingface.co/Qwen/Qwen3-30B-A3B config.json",
    ),
    # zai-org/GLM-4.5-Air config.json
    "glm-4.5-air": transformer(
        "GLM-4.5-Air", hidden=4096, layers=46, vocab=151552, heads=96, kv_heads=8, dense_layers=1, ffn=10944,
        moe_ffn=1408, n_experts=128, shared_experts=1, top_k=8, attn_bias=True, router_bias=True, mtp_layers=1,
        source="huggingface.co/zai-org/GLM-4.5-Air config.json",
    ),
    # Qwen/Qwen3-4B config.json
    "qwen3-4b": transformer(
        "Qwen3-4B", hidden=2560, layers=36, vocab=151936, heads=32, kv_heads=8, ffn=9728, qk_norm=True,
        tie_embeddings=True, source="huggingface.co/Qwen/Qwen3-4B config.json",
    ),
}
#: The chapter's example ("The time budget of weight sync"): 1e12 parameters in FP8 (1 byte each, per-tensor
#: scales), 8,000 equal tensors.
MODELS["chapter-1t"] = ModelSpec.dense(
    "chapter 1T (FP8)", 1e12, n_tensors=8000, infer_precision=Precision("fp8", 0), train_precision=Precision("fp8", 0),
    source="the chapter, \"The time budget of weight sync\": W = 1e12 bytes per instance",
)


def from_spec(spec) -> ModelSpec:
    """The tensor groups of a model of the shared registry (:mod:`rollsim.hardware.specs`).

    Built with :func:`transformer` from the spec's shape fields; what a spec does not record is
    taken as the common case: untied embeddings, no QK norm or attention bias, and for MLA models
    DeepSeek-V3's ranks (q_lora_rank 1536, qk_nope_head_dim 128, v_head_dim 128).

    Parameters
    ----------
    spec : str or rollsim.hardware.specs.ModelSpec
        A spec or a name :func:`rollsim.hardware.specs.model` knows.

    Returns
    -------
    ModelSpec
        BF16 in training and inference.

    Raises
    ------
    rollsim.ScenarioError
        An unknown model name (the message lists the known ones).
    """
    from rollsim.hardware import specs

    m = specs.model(spec)
    mla = None
    if m.kv_lora_rank:
        mla = dict(q_lora_rank=1536, kv_lora_rank=m.kv_lora_rank, qk_nope_head_dim=128,
                   qk_rope_head_dim=m.qk_rope_head_dim, v_head_dim=128)
    return transformer(
        m.name, hidden=m.hidden_size, layers=m.layers, vocab=m.vocab_size, heads=m.attention_heads,
        kv_heads=m.kv_heads, head_dim=m.head_dim, mla=mla, dense_layers=m.dense_layers, ffn=m.intermediate_size,
        moe_ffn=m.moe_intermediate_size, n_experts=m.experts, shared_experts=m.shared_experts,
        top_k=m.experts_per_token, source=m.source or "rollsim.hardware.specs",
    )


def model(name: str) -> ModelSpec:
    """A preset by name (case-insensitive), else a model of the shared registry
    (:mod:`rollsim.hardware.specs`, via :func:`from_spec`); ValueError lists the names."""
    key = name.lower() if isinstance(name, str) else name
    if key in MODELS:
        return MODELS[key]
    from rollsim.hardware import specs

    try:
        return from_spec(specs.model(name))
    except ValueError:
        raise ValueError(f"model: unknown preset {name!r}; known: {', '.join(sorted(MODELS))} "
                         f"or a model of rollsim.hardware.specs ({', '.join(specs.MODELS)})") from None


#: Hardware presets, from the shared accelerator registry (:mod:`rollsim.hardware.specs`) with the
#: deployment differences the sync needs: PCIe at its practical 50 GB/s (Gen5 x16) rather than the
#: datasheet's 64 GB/s; H20 nodes of the checkpoint-engine benchmark with one 200 Gb/s NIC per GPU
#: (25 GB/s: with the typical 400 Gb/s the H20 rows would need half the NCCL efficiency of the
#: single-node H800 rows); GB200 NVL72 as one NVLink domain of 72 GPUs (assumed, not in the NeMo-RL
#: source), one 400 Gb/s NIC per GPU between racks.
HARDWARE: dict[str, Hardware] = {
    "h100": Hardware.from_accelerator("H100", pcie_bytes_per_s=50e9),
    "h200": Hardware.from_accelerator("H200", pcie_bytes_per_s=50e9),
    "h800": Hardware.from_accelerator("H800", pcie_bytes_per_s=50e9),
    "h20": Hardware.from_accelerator("H20", nic_bytes_per_s=25e9, pcie_bytes_per_s=50e9),
    "chapter": Hardware(latency_s=50e-6),
    "gb200": Hardware.from_accelerator("GB200", gpus_per_node=72, pcie_bytes_per_s=50e9),
}


def hardware(name: str) -> Hardware:
    """A hardware preset (:data:`HARDWARE`), else any accelerator of :mod:`rollsim.hardware.specs`
    (its typical node, :meth:`Hardware.from_accelerator`); case-insensitive.

    Raises
    ------
    rollsim.ScenarioError
        An unknown name (the message lists both).
    """
    from rollsim.errors import invalid
    from rollsim.hardware import specs

    if isinstance(name, str) and name.lower() in HARDWARE:
        return HARDWARE[name.lower()]
    try:
        return Hardware.from_accelerator(name)
    except ValueError:
        raise invalid("hardware", f"must be one of {', '.join(HARDWARE)} or an accelerator "
                                  f"({', '.join(specs.ACCELERATORS)}), got {name!r}") from None


#: Software stacks. ``ideal`` is the chapter's assumption; a cluster file's ``[software] preset``
#: also takes any fitted stack of :data:`rollsim.sync.STACKS` (its :meth:`~rollsim.sync.Stack.software`).
SOFTWARE: dict[str, SoftwareStack] = {
    "ideal": SoftwareStack(),
}
