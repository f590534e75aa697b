"""Published specs of accelerators and models, each with its public source.

* :class:`Accelerator`: memory capacity and bandwidth, dense BF16 / FP8 FLOP/s, scale-up (NVLink,
  Infinity Fabric, HCCS), scale-out NIC and host-link bandwidth per device, from the vendors'
  datasheets, and the devices sharing one host uplink, from published host topologies. ``ACCELERATORS`` holds them; :func:`accelerator` looks one up by name or alias.
* :class:`ModelSpec`: a decoder's shape (layers, widths, heads, experts, MLA ranks) and its
  parameter counts. ``MODELS`` holds the Qwen2.5, Qwen3, Llama-3.1, DeepSeek-V3 / R1, Kimi-K2,
  GLM-4.5 and gpt-oss families, each built by :func:`model_from_hf_config` from the fields of its
  Hugging Face ``config.json`` (reproduced below, with its URL): parameter counts are computed
  from the shapes, not copied, and the tests compare them with the published totals.

Units are in the field names: bytes, bytes/s, FLOP/s, GiB. Bandwidths are one direction per device
(NVIDIA quotes NVLink as the sum of both directions: 900 GB/s on an H100 is 450 GB/s each way).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollsim.errors import invalid

__all__ = ["Accelerator", "ModelSpec", "ACCELERATORS", "MODELS", "accelerator", "model", "model_from_hf_config",
           "HF_CONFIGS", "FAMILIES", "FP8_SCALINGS"]

FAMILIES = ("ampere", "hopper", "blackwell", "ada", "cdna3", "ascend")
#: The FP8 weight-scaling schemes of :attr:`ModelSpec.fp8_scaling`: 128 x 128 blocks, or one scale per
#: tensor / per output channel.
FP8_SCALINGS = ("block", "tensor")


@dataclass(frozen=True)
class Accelerator:
    """One accelerator device, as its datasheet gives it.

    Attributes
    ----------
    name : str
        Registry name ("H100" is the SXM part).
    family : str
        Architecture family: "ampere", "hopper", "blackwell", "ada", "cdna3" or "ascend"; serving and
        training efficiencies are fitted per family at most.
    hbm_gib : float
        Device memory, GiB (the datasheet's "GB"; the capacity the runtime reports is 0.5-1 % lower).
    hbm_bytes_per_s : float
        Peak memory bandwidth, bytes/s.
    bf16_flops : float
        Dense BF16 tensor throughput, FLOP/s (no structured sparsity).
    fp8_flops : float | None
        Dense FP8 tensor throughput, FLOP/s; None where the device has no FP8.
    scale_up_bytes_per_s : float
        Device-to-device bandwidth inside the scale-up domain (NVLink, Infinity Fabric, HCCS; PCIe
        where there is none), one direction, bytes/s.
    nic_bytes_per_s : float
        Scale-out network bandwidth per device in a typical node (one 400 Gb/s NIC per GPU = 50e9),
        one direction, bytes/s.
    host_link_bytes_per_s : float
        Link to host memory (PCIe, or NVLink-C2C on Grace systems), one direction, bytes/s.
    gpus_per_node : int
        Devices per node (per compute tray for GB200).
    source : str
        The datasheet the numbers come from.
    scale_up_domain : int
        Devices one scale-up fabric connects (72 for GB200 NVL72); 0 means ``gpus_per_node``.
    gpus_per_host_link : int
        Devices that reach host memory through one uplink of ``host_link_bytes_per_s`` (behind one
        PCIe switch) in the node the part is built into; GPUs copying to or from the host at the
        same time share it (:mod:`rollsim.hardware.switching`). 2 for the A100 / A800 SXM parts
        (an 8-GPU HGX A100 board hangs two GPUs and two NICs off each PCIe Gen4 x16 switch
        uplink: Azure/azhpc-images ``topology/ndv4-topo.xml``, the NCCL topology of Azure's
        ND A100 v4; NVIDIA's DGX A100 has four PCIe Gen4 switches for its eight GPUs, DGX A100
        System Architecture white paper); 1 elsewhere (each H100 of Azure's ND H100 v5 sits
        alone with its NIC behind a PCIe Gen5 x16 switch port, Azure/azhpc-images
        ``topology/ndv5-topo.xml``; PCIe cards have their own x16 slot, as the A100 PCIe cards
        of Azure's NC A100 v4, ``topology/ncv4-topo.xml``; GB200's ``host_link_bytes_per_s`` is
        already each GPU's share of its Grace's NVLink-C2C). Servers differ (some wire every GPU
        to a CPU root port of its own, some put four PCIe cards behind one switch): set it for
        your host with :func:`dataclasses.replace`.
    """

    name: str
    family: str
    hbm_gib: float
    hbm_bytes_per_s: float
    bf16_flops: float
    fp8_flops: float | None
    scale_up_bytes_per_s: float
    nic_bytes_per_s: float
    host_link_bytes_per_s: float
    gpus_per_node: int
    source: str
    scale_up_domain: int = 0
    gpus_per_host_link: int = 1

    @property
    def hbm_bytes(self) -> float:
        """Device memory in bytes."""
        return self.hbm_gib * 2.0**30

    @property
    def tp_domain(self) -> int:
        """Largest tensor-parallel group on the scale-up fabric (devices)."""
        return self.scale_up_domain or self.gpus_per_node


_H100 = "NVIDIA H100 Tensor Core GPU datasheet (SXM5), https://www.nvidia.com/en-us/data-center/h100/"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (SXM4), https://www.nvidia.com/en-us/data-center/a100/"
_NIC400 = 50e9  # ConnectX-7 400 Gb/s, one per GPU (DGX H100 / B200 reference nodes)
_NIC200 = 25e9  # ConnectX-6 200 Gb/s HDR, one per GPU (DGX A100)
_PCIE5 = 64e9   # PCIe Gen5 x16, one direction
_PCIE4 = 32e9   # PCIe Gen4 x16, one direction
# GPUs behind one PCIe Gen4 x16 switch uplink on an 8-GPU HGX A100 board (Azure/azhpc-images
# topology/ndv4-topo.xml: per NUMA node one switch, two GPUs and two NICs under it; DGX A100 System
# Architecture white paper: four PCIe Gen4 switches for eight GPUs)
_HGX_A100_GPUS_PER_UPLINK = 2

ACCELERATORS: dict[str, Accelerator] = {a.name: a for a in (
    Accelerator("H100", "hopper", 80, 3.35e12, 989e12, 1979e12, 450e9, _NIC400, _PCIE5, 8, _H100),
    Accelerator("H800", "hopper", 80, 3.35e12, 989e12, 1979e12, 200e9, _NIC400, _PCIE5, 8,
                "NVIDIA H800 SXM5 product brief: an H100 with NVLink cut to 400 GB/s (both directions)"),
    Accelerator("H200", "hopper", 141, 4.8e12, 989e12, 1979e12, 450e9, _NIC400, _PCIE5, 8,
                "NVIDIA H200 Tensor Core GPU datasheet (SXM), https://www.nvidia.com/en-us/data-center/h200/"),
    Accelerator("H20", "hopper", 96, 4.0e12, 148e12, 296e12, 450e9, _NIC400, _PCIE5, 8,
                "NVIDIA HGX H20 product brief: 96 GB HBM3 at 4.0 TB/s, 148 TFLOPS BF16 / 296 FP8 dense, "
                "NVLink 900 GB/s"),
    Accelerator("A100-40G", "ampere", 40, 1.555e12, 312e12, None, 300e9, _NIC200, _PCIE4, 8, _A100,
                gpus_per_host_link=_HGX_A100_GPUS_PER_UPLINK),
    Accelerator("A100-80G", "ampere", 80, 2.039e12, 312e12, None, 300e9, _NIC200, _PCIE4, 8, _A100,
                gpus_per_host_link=_HGX_A100_GPUS_PER_UPLINK),
    Accelerator("A800", "ampere", 80, 2.039e12, 312e12, None, 200e9, _NIC200, _PCIE4, 8,
                "NVIDIA A800 SXM4 80GB product brief: an A100 with NVLink cut to 400 GB/s (both directions)",
                gpus_per_host_link=_HGX_A100_GPUS_PER_UPLINK),
    Accelerator("L20", "ada", 48, 864e9, 119.5e12, 239e12, _PCIE4, _NIC200, _PCIE4, 8,
                "NVIDIA L20 product brief: 48 GB GDDR6 at 864 GB/s, 119.5 TFLOPS BF16 / 239 FP8 dense, "
                "PCIe Gen4 x16, no NVLink"),
    Accelerator("L40S", "ada", 48, 864e9, 362.05e12, 733e12, _PCIE4, _NIC200, _PCIE4, 8,
                "NVIDIA L40S datasheet, https://www.nvidia.com/en-us/data-center/l40s/ (PCIe Gen4 x16, no NVLink)"),
    Accelerator("B200", "blackwell", 180, 8.0e12, 2.25e15, 4.5e15, 900e9, _NIC400, _PCIE5, 8,
                "NVIDIA DGX B200 datasheet: 1,440 GB and 64 TB/s HBM3e over 8 GPUs, 72 PFLOPS FP8 / 36 "
                "BF16 with sparsity (half dense), NVLink 5 1.8 TB/s, https://www.nvidia.com/en-us/data-center/dgx-b200/"),
    Accelerator("GB200", "blackwell", 186, 8.0e12, 2.5e15, 5.0e15, 900e9, _NIC400, 225e9, 4,
                "NVIDIA GB200 NVL72 datasheet: 13.4 TB and 576 TB/s HBM3e over 72 GPUs, 360 PFLOPS BF16 / "
                "720 FP8 with sparsity (half dense), NVLink 1.8 TB/s per GPU, NVLink-C2C 900 GB/s per Grace "
                "for 2 GPUs, https://www.nvidia.com/en-us/data-center/gb200-nvl72/", 72),
    Accelerator("MI300X", "cdna3", 192, 5.3e12, 1307.4e12, 2614.9e12, 448e9, _NIC400, _PCIE5, 8,
                "AMD Instinct MI300X datasheet: 192 GB HBM3 at 5.3 TB/s, 1,307.4 TFLOPS BF16 / 2,614.9 FP8 "
                "dense, 7 Infinity Fabric links of 128 GB/s (both directions), "
                "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"),
    Accelerator("Ascend-910B", "ascend", 64, 1.6e12, 313e12, None, 196e9, _NIC200, _PCIE4, 8,
                "Huawei Atlas 800T A2 training server specifications (8 x Ascend 910B: 64 GB HBM2e, about "
                "1.6 TB/s, about 313 TFLOPS FP16 / BF16, HCCS 392 GB/s both directions, 200 GE RoCE per NPU); "
                "Huawei publishes per-server figures, these per-device numbers are approximate"),
)}

_ALIASES = {
    "h100-sxm": "H100", "h100sxm": "H100", "h100-sxm5": "H100", "h100-80g": "H100", "h800-sxm": "H800",
    "h200-sxm": "H200", "a100": "A100-80G", "a100-80gb": "A100-80G", "a100-sxm": "A100-80G",
    "a100-40gb": "A100-40G", "a800-80g": "A800", "b200-sxm": "B200", "gb200-nvl72": "GB200",
    "mi300": "MI300X", "910b": "Ascend-910B", "ascend910b": "Ascend-910B", "ascend-910b": "Ascend-910B",
}


#: Aliases that name more than one product: what the name is taken as, said with a
#: :class:`rollsim.NameAssumedWarning` (never silently).
_AMBIGUOUS = {
    "a100": "the A100 comes in 40 and 80 GB: taken as A100-80G (give A100-40G or A100-80G to choose)",
    "a100-sxm": "the A100 SXM comes in 40 and 80 GB: taken as A100-80G (give A100-40G or A100-80G to choose)",
    "mi300": "the MI300 family is the MI300X (192 GB) and the MI300A APU: taken as MI300X (give MI300X to choose)",
}
_MODEL_AMBIGUOUS = {
    "llama-3-8b": "taken as Llama-3.1-8B, which has the same shape (layers, heads, KV heads, widths, vocabulary); "
                  "the two differ in context length (8,192 against 131,072 tokens) and RoPE scaling, which the "
                  "hardware model does not use (give Llama-3.1-8B to choose it, or --hf-config with the "
                  "model's own config.json)",
}
_MODEL_AMBIGUOUS["meta-llama-3-8b"] = _MODEL_AMBIGUOUS["llama-3-8b"]


def _assumed(field: str, name: str, text: str) -> None:
    import warnings

    from rollsim.errors import NameAssumedWarning

    # attributed to accelerator() / model() themselves: said once per name, however many callers resolve it
    warnings.warn(f"{field}: {name!r}: {text}", NameAssumedWarning, stacklevel=2)


#: A model size in a name's key (``8b``, ``0.6b``, ``235b`` of ``qwen3-235b-a22b``; not ``a22b``).
_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?b)(?![a-z])")


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def _unknown_name(name: str, known: Any) -> str:
    """``"; did you mean Qwen3-8B?"`` for a name of the registry ``known`` that ``name`` is a near miss
    of (case-insensitive, :func:`difflib.get_close_matches` similarity >= 0.8, as the command line for flags: ``Qwen3-8`` for ``Qwen3-8B``, not ``llama-7b`` for
    ``Llama-3.1-70B``), else ``""``."""
    import difflib

    by_key = {_key(n): n for n in known}
    given = _key(name.rsplit("/", 1)[-1])
    # a model of another size is no near miss (Llama-3.2-1B is not Llama-3.1-8B): the sizes must agree
    size = _SIZE.findall(given)
    cands = [k for k in by_key if _SIZE.findall(k) == size] if size else list(by_key)
    found = difflib.get_close_matches(given, cands, n=1, cutoff=0.8)
    return f"; did you mean {by_key[found[0]]}?" if found else ""


def accelerator(name: str | Accelerator) -> Accelerator:
    """The accelerator called ``name`` (case-insensitive; aliases such as "h100-sxm", "a100").

    Parameters
    ----------
    name : str | Accelerator
        A registry name or alias, or an :class:`Accelerator` (returned as is).

    Returns
    -------
    Accelerator

    Raises
    ------
    ScenarioError
        For an unknown name, listing the known ones.
    """
    if isinstance(name, Accelerator):
        return name
    if isinstance(name, str):
        k = _key(name)
        for n, a in ACCELERATORS.items():
            if _key(n) == k:
                return a
        if k in _ALIASES:
            if k in _AMBIGUOUS:
                _assumed("gpu", name, _AMBIGUOUS[k])
            return ACCELERATORS[_ALIASES[k]]
    if not isinstance(name, str):
        raise invalid("gpu", f"must be an accelerator's name or a rollsim.hardware.Accelerator, got "
                             f"{type(name).__name__} {name!r}")
    raise invalid("gpu", f"unknown accelerator {name!r}{_unknown_name(name, ACCELERATORS)} (known, "
                         f"case-insensitive: {', '.join(ACCELERATORS)}; rollsim hardware --list gives their specs)")


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer's shape and parameter counts.

    Attributes
    ----------
    name : str
    total_params, active_params : float
        Parameters in all, and those one token uses (MoE: top-k routed experts of each MoE layer
        plus everything else; dense: all). Embedding and output head included; multi-token-prediction
        layers excluded (they are not used in ordinary decoding).
    layers, hidden_size, attention_heads, kv_heads, head_dim, vocab_size, intermediate_size : int
        The ``config.json`` fields of those names (``intermediate_size``: the dense MLP width).
    experts, experts_per_token, shared_experts, moe_intermediate_size : int
        Routed experts per MoE layer, top-k, always-on shared experts, and the width of one expert
        (0 for a dense model).
    dense_layers : int
        Layers of a MoE model with a dense MLP instead of experts (DeepSeek's ``first_k_dense_replace``).
    kv_lora_rank, qk_rope_head_dim : int
        Multi-head latent attention (DeepSeek-V3 / R1, Kimi-K2): the compressed KV width and the
        decoupled RoPE key width cached per token; 0 when the model does not use MLA.
    source : str
        Where the shape comes from (the ``config.json`` URL).
    q_lora_rank, qk_nope_head_dim, v_head_dim : int
        The rest of MLA's shape (0 when not MLA).
    sliding_window, sliding_window_layers : int
        Window (tokens) of the layers with sliding-window attention, and how many layers use it
        (gpt-oss alternates); 0 when none.
    dense_bytes_per_param, expert_bytes_per_param : float
        Bytes per parameter of the released checkpoint outside and inside the routed experts
        (2 for BF16; gpt-oss ships MXFP4 experts, 4.25 bits; DeepSeek-V3 ships FP8, 1 byte).
    fp8_scaling : {"block", "tensor"} or None
        How an FP8 checkpoint's weights are scaled (:data:`FP8_SCALINGS`): "block" for 128 x 128 weight
        blocks with activations quantized per 128-column group (``quantization_config.weight_block_size``:
        DeepSeek-V3 / R1, Kimi-K2, Qwen3-FP8), "tensor" for one scale per tensor or per output channel
        with per-tensor or per-token activations (the Llama FP8 checkpoints of NVIDIA, AMD and Neural
        Magic); None for a checkpoint that is not FP8. The serving model prices the two with different
        measured kernel throughputs (:data:`rollsim.hardware.serving.FP8_RATIOS`).
    """

    name: str
    total_params: float
    active_params: float
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_intermediate_size: int = 0
    dense_layers: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    source: str = ""
    q_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int = 0
    sliding_window_layers: int = 0
    dense_bytes_per_param: float = 2.0
    expert_bytes_per_param: float = 2.0
    fp8_scaling: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.fp8_scaling is not None and self.fp8_scaling not in FP8_SCALINGS:
            raise invalid("model.fp8_scaling", f"must be one of {', '.join(map(repr, FP8_SCALINGS))} or None (not an "
                                               f"FP8 checkpoint), got {self.fp8_scaling!r}")
        if self.fp8_scaling is not None and self.dense_bytes_per_param > 1.0:
            raise invalid("model.fp8_scaling", f"must be None for a checkpoint that is not FP8 (dense_bytes_per_param "
                                               f"{self.dense_bytes_per_param} > 1), got {self.fp8_scaling!r}")

    @property
    def is_moe(self) -> bool:
        """Whether the model routes tokens to experts."""
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        """Whether the model uses multi-head latent attention (a compressed KV cache)."""
        return self.kv_lora_rank > 0

    @property
    def moe_layers(self) -> int:
        """Layers with routed experts."""
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def expert_params(self) -> float:
        """Parameters of one routed expert (gate, up and down projections: 3 x hidden x width)."""
        return 3.0 * self.hidden_size * self.moe_intermediate_size

    @property
    def embedding_params(self) -> float:
        """Parameters of the input embedding (a table lookup per token: neither read in full nor
        multiplied, so the serving and training models leave it out of bytes read and FLOPs)."""
        return float(self.vocab_size * self.hidden_size)

    @property
    def routed_params(self) -> float:
        """Parameters of all routed experts of all MoE layers."""
        return self.moe_layers * self.experts * self.expert_params

    @property
    def always_params(self) -> float:
        """Parameters every token uses: all but the routed experts (attention, dense MLPs, shared
        experts, routers, embeddings)."""
        return self.total_params - self.routed_params

    def weight_bytes(self, bytes_per_param: float | None = 2.0) -> float:
        """Bytes of the weights: ``total_params x bytes_per_param``, or with ``None`` the released
        checkpoint's own widths (``dense_bytes_per_param``, ``expert_bytes_per_param``)."""
        if bytes_per_param is None:
            return self.always_params * self.dense_bytes_per_param + self.routed_params * self.expert_bytes_per_param
        return self.total_params * float(bytes_per_param)

    def kv_bytes_per_token(self, bytes_per_value: float = 2.0) -> float:
        """KV-cache bytes one token of context holds in the full-attention layers:
        ``2 (K and V) x kv_heads x head_dim`` per layer, or for MLA ``kv_lora_rank + qk_rope_head_dim``
        per layer (one latent shared by all heads). Sliding-window layers hold at most
        ``sliding_window`` tokens: see :meth:`kv_bytes`."""
        full = self.layers - self.sliding_window_layers
        if self.is_mla:
            per_layer = float(self.kv_lora_rank + self.qk_rope_head_dim)
        else:
            per_layer = 2.0 * self.kv_heads * self.head_dim
        return full * per_layer * float(bytes_per_value)

    def kv_bytes(self, context_tokens: float, bytes_per_value: float = 2.0) -> float:
        """KV-cache bytes of one sequence with ``context_tokens`` of context (sliding-window layers
        counted up to their window)."""
        b = context_tokens * self.kv_bytes_per_token(bytes_per_value)
        if self.sliding_window_layers:
            b += (min(context_tokens, self.sliding_window) * self.sliding_window_layers
                  * 2.0 * self.kv_heads * self.head_dim * float(bytes_per_value))
        return b

    def attention_flops_per_token(self, context_tokens: float) -> float:
        """Attention score and value FLOPs of one new token against ``context_tokens`` of context
        (``4 x heads x head_dim x context`` per full layer; not counted in ``2 x active_params``)."""
        qk = (self.qk_nope_head_dim + self.qk_rope_head_dim) if self.is_mla else self.head_dim
        v = self.v_head_dim if self.is_mla else self.head_dim
        full = self.layers - self.sliding_window_layers
        per = 2.0 * self.attention_heads * (qk + v)
        return per * (full * context_tokens + self.sliding_window_layers * min(context_tokens, self.sliding_window))


# ------------------------------------------------------------------------------------------ config.json reading

def _cfg_int(cfg: Mapping[str, Any], key: str, *, default: int | None = None, lo: int = 1) -> int:
    v = cfg.get(key, default)
    if v is None:
        if default is not None:
            return default
        raise invalid(f"config.{key}", f"must be an integer >= {lo}, got a config.json without it")
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise invalid(f"config.{key}", f"must be an integer >= {lo}, got {v!r}")
    return v


_UNSUPPORTED_TYPES = {"mamba", "mamba2", "rwkv", "jamba", "t5", "bart", "bert", "roberta", "whisper", "falcon_h1",
                      "nemotron_h", "zamba", "zamba2", "recurrent_gemma", "xlstm"}
_LAYER_TYPES = {"full_attention", "sliding_attention"}


def _load(path_or_dict: Any) -> dict[str, Any]:
    if isinstance(path_or_dict, Mapping):
        return dict(path_or_dict)
    if isinstance(path_or_dict, str | Path):
        p = Path(path_or_dict)
        if p.is_dir():
            p = p / "config.json"
        try:
            data = json.loads(p.read_text())
        except FileNotFoundError:
            raise invalid("config", f"must be a config.json file or a directory holding one, got {str(p)!r} "
                                    "(no such file)") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise invalid("config", f"must be a readable JSON config.json, got {str(p)!r} ({e})") from None
        if not isinstance(data, dict):
            raise invalid("config", f"must be a JSON object, got {type(data).__name__} in {str(p)!r}")
        return data
    raise invalid("config", f"must be a path to a config.json or a dict, got {type(path_or_dict).__name__}")


_QUANT_METHODS = ("fp8", "compressed-tensors", "mxfp4")
_CT_STRATEGIES = {"tensor": "tensor", "channel": "tensor", "block": "block"}


def _quantization(q_cfg: Any) -> tuple[float, float, str | None]:
    """``(dense_bytes_per_param, expert_bytes_per_param, fp8_scaling)`` of a ``quantization_config``
    (None: an unquantized BF16 / FP16 checkpoint)."""
    key = "config.quantization_config"
    if q_cfg is None:
        return 2.0, 2.0, None
    if not isinstance(q_cfg, Mapping):
        raise invalid(key, f"must be a JSON object, got {type(q_cfg).__name__} {q_cfg!r}")
    qm = q_cfg.get("quant_method")
    qm = qm.lower() if isinstance(qm, str) else qm
    if qm == "mxfp4":  # gpt-oss: MXFP4 experts (4-bit values + one 8-bit scale per 32), the rest BF16
        return 2.0, 4.25 / 8, None
    if qm == "fp8":  # DeepSeek-V3 / Qwen3-FP8 style: weight_block_size present = block-scaled
        wbs = q_cfg.get("weight_block_size")
        if wbs is None:
            return 1.0, 1.0, "tensor"
        if (not isinstance(wbs, list) or len(wbs) != 2
                or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in wbs)):
            raise invalid(f"{key}.weight_block_size", f"must be two positive integers (e.g. [128, 128]) or "
                                                      f"absent (per-tensor scales), got {wbs!r}")
        return 1.0, 1.0, "block"
    if qm == "compressed-tensors":  # llm-compressor: one scheme per config group
        groups = q_cfg.get("config_groups")
        if not isinstance(groups, Mapping) or not groups:
            raise invalid(f"{key}.config_groups", f"must be a non-empty object of quantization groups, got {groups!r}")
        schemes = set()
        for g, grp in groups.items():
            w = grp.get("weights") if isinstance(grp, Mapping) else None
            where = f"{key}.config_groups.{g}.weights"
            if not isinstance(w, Mapping):
                raise invalid(where, f"must be an object (type, num_bits, strategy), got {w!r}")
            if w.get("type") != "float" or w.get("num_bits") != 8:
                raise invalid(where, f"must be FP8 (type 'float', num_bits 8): only FP8 compressed-tensors "
                                     f"checkpoints are priced, got type {w.get('type')!r}, num_bits "
                                     f"{w.get('num_bits')!r} (remove quantization_config to price the "
                                     "checkpoint as BF16)")
            st = w.get("strategy")
            if st not in _CT_STRATEGIES:
                raise invalid(f"{where}.strategy", f"must be one of {', '.join(map(repr, _CT_STRATEGIES))}, "
                                                   f"got {st!r}")
            schemes.add(_CT_STRATEGIES[st])
        if len(schemes) > 1:
            raise invalid(f"{key}.config_groups", f"must scale every group's weights one way (block, or "
                                                  f"per-tensor / per-channel), got both: {sorted(schemes)}")
        return 1.0, 1.0, schemes.pop()
    raise invalid(f"{key}.quant_method", f"must be one of {', '.join(map(repr, _QUANT_METHODS))} (the quantized "
                                         f"checkpoints the serving model prices), got {qm!r}; remove "
                                         "quantization_config to price the checkpoint as BF16")


def model_from_hf_config(path_or_dict: Any, *, name: str | None = None, source: str | None = None) -> ModelSpec:
    """A :class:`ModelSpec` from a Hugging Face ``config.json``.

    Reads dense decoders (Llama, Qwen2 / 2.5, Qwen3, Mistral, ...), MoE decoders (Qwen3-MoE /
    Qwen2-MoE ``num_experts``, Mixtral / gpt-oss ``num_local_experts``, DeepSeek-V3 / Kimi-K2 / GLM-4.5
    ``n_routed_experts`` with ``first_k_dense_replace`` and ``n_shared_experts``), multi-head latent
    attention (``kv_lora_rank``, ``q_lora_rank``, ``qk_nope_head_dim``, ``qk_rope_head_dim``,
    ``v_head_dim``) and sliding-window layers (gpt-oss ``layer_types``). A multimodal config's
    ``text_config`` is read. Parameter counts are computed from the shapes (projections, QKV biases
    where the architecture has them, norms, routers, embeddings, an untied output head); the
    multi-token-prediction layers (``num_nextn_predict_layers``) are not counted.

    A quantized checkpoint's ``quantization_config`` sets the bytes per parameter and, for FP8, the
    weight scaling (:attr:`ModelSpec.fp8_scaling`): ``quant_method`` "fp8" with ``weight_block_size``
    (DeepSeek-V3, Qwen3-FP8) is "block", without it "tensor"; "compressed-tensors" (llm-compressor) with
    FP8 weights (``type`` "float", ``num_bits`` 8) is "block" for the ``block`` strategy and "tensor"
    for ``tensor`` or ``channel``; "mxfp4" (gpt-oss) is 4.25-bit experts. Any other quantization
    (AWQ, GPTQ, INT8, 4-bit compressed-tensors, ...) is refused, naming the key: the serving model does
    not price it, and reading it as BF16 would silently double its weight bytes; drop
    ``quantization_config`` to price the BF16 original.

    Parameters
    ----------
    path_or_dict : str | pathlib.Path | Mapping
        A ``config.json`` path, a directory holding one, or its parsed contents.
    name : str, optional
        The spec's name (default: ``_name_or_path`` or ``model_type``).
    source : str, optional
        Where the config comes from (default: the path).

    Returns
    -------
    ModelSpec

    Raises
    ------
    ScenarioError
        For an unreadable file, a missing or non-integer shape key (the message names it, e.g.
        ``config.hidden_size: must be an integer >= 1, got a config.json without it``), or an
        architecture it cannot count (recurrent / state-space / linear-attention layers,
        encoder-decoder models), or a quantization it does not price (``quantization_config``).
    """
    cfg = _load(path_or_dict)
    if isinstance(cfg.get("text_config"), Mapping):
        cfg = {**cfg, **cfg["text_config"]}
    mtype = str(cfg.get("model_type", ""))
    if mtype in _UNSUPPORTED_TYPES or cfg.get("is_encoder_decoder") is True:
        raise invalid("config.model_type", f"must be a decoder-only transformer (attention layers only), got {mtype!r}")
    lt = cfg.get("layer_types")
    if lt is not None:
        if not isinstance(lt, list) or not all(isinstance(t, str) for t in lt):
            raise invalid("config.layer_types", f"must be a list of layer type names, got {lt!r}")
        bad = sorted(set(lt) - _LAYER_TYPES)
        if bad:
            raise invalid("config.layer_types", f"must hold only {sorted(_LAYER_TYPES)}, got {bad} "
                                                "(layers this model cannot count)")
    h = _cfg_int(cfg, "hidden_size")
    L = _cfg_int(cfg, "num_hidden_layers")
    heads = _cfg_int(cfg, "num_attention_heads")
    kv = _cfg_int(cfg, "num_key_value_heads", default=heads)
    vocab = _cfg_int(cfg, "vocab_size")
    if heads % kv:
        raise invalid("config.num_key_value_heads", f"must divide num_attention_heads ({heads}), got {kv}")
    hd_default = h // heads
    head_dim = _cfg_int(cfg, "head_dim", default=hd_default)
    tied = cfg.get("tie_word_embeddings", False) is True

    # --- experts
    experts = 0
    for key in ("num_experts", "n_routed_experts", "num_local_experts"):
        if cfg.get(key) is not None:
            experts = _cfg_int(cfg, key, lo=0)
            break
    topk = 0
    shared = 0
    moe_i = 0
    dense_layers = 0
    if experts:
        tk = "num_experts_per_tok" if "num_experts_per_tok" in cfg else "experts_per_token"
        topk = _cfg_int(cfg, tk if tk in cfg else "num_experts_per_tok")
        if topk > experts:
            raise invalid(f"config.{tk}", f"must be in [1, {experts}] (the routed experts), got {topk}")
        if "moe_intermediate_size" in cfg:
            moe_i = _cfg_int(cfg, "moe_intermediate_size")
        else:  # Mixtral, gpt-oss: intermediate_size is the expert width
            moe_i = _cfg_int(cfg, "intermediate_size")
        shared = _cfg_int(cfg, "n_shared_experts", default=0, lo=0)
        if not shared and cfg.get("shared_expert_intermediate_size"):
            shared = max(1, round(_cfg_int(cfg, "shared_expert_intermediate_size") / moe_i))
        if "first_k_dense_replace" in cfg:
            dense_layers = _cfg_int(cfg, "first_k_dense_replace", lo=0)
        else:
            step = _cfg_int(cfg, "decoder_sparse_step", default=1)
            only = cfg.get("mlp_only_layers") or []
            if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
                raise invalid("config.mlp_only_layers", f"must be a list of layer indices, got {only!r}")
            dense_layers = sum(1 for i in range(L) if i in set(only) or (i + 1) % step)
        if dense_layers > L:
            raise invalid("config.first_k_dense_replace", f"must be in [0, {L}] (the layers), got {dense_layers}")
    inter = _cfg_int(cfg, "intermediate_size", default=0 if experts and not dense_layers else None, lo=0 if experts else 1)

    # --- attention parameters per layer
    mla = cfg.get("kv_lora_rank") is not None
    q_lora = nope = rope = v_hd = kv_lora = 0
    if mla:
        kv_lora = _cfg_int(cfg, "kv_lora_rank")
        q_lora = _cfg_int(cfg, "q_lora_rank", default=0, lo=0)
        nope = _cfg_int(cfg, "qk_nope_head_dim")
        rope = _cfg_int(cfg, "qk_rope_head_dim")
        v_hd = _cfg_int(cfg, "v_head_dim")
        qk = nope + rope
        q = (h * q_lora + q_lora + q_lora * heads * qk) if q_lora else h * heads * qk
        attn = q + h * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v_hd) + heads * v_hd * h
        head_dim = qk
        kv = heads
    else:
        bias = cfg.get("attention_bias", mtype in ("qwen2", "qwen2_moe")) is True
        attn = h * heads * head_dim + 2 * h * kv * head_dim + heads * head_dim * h
        if bias:
            attn += (heads + 2 * kv) * head_dim
        if mtype.startswith("qwen3") or cfg.get("use_qk_norm") is True:
            attn += 2 * head_dim
        if mtype == "gpt_oss":
            attn += heads  # attention sinks
    norms = 2 * h
    dense_mlp = 3 * h * inter
    expert = 3 * h * moe_i
    router = h * experts + (experts if mtype in ("deepseek_v3", "kimi_k2", "glm4_moe") else 0)
    if mtype == "gpt_oss":
        expert += 2 * moe_i + h  # gate_up and down biases
        router += experts
    moe_L = L - dense_layers if experts else 0
    dense_L = L - moe_L
    always = (L * (attn + norms) + dense_L * dense_mlp + moe_L * (router + shared * expert)
              + vocab * h * (1 if tied else 2) + h)
    total = always + moe_L * experts * expert
    active = always + moe_L * topk * expert

    # --- sliding window, checkpoint widths
    sw = sw_layers = 0
    if lt is not None and "sliding_attention" in lt:
        sw = _cfg_int(cfg, "sliding_window")
        sw_layers = sum(1 for t in lt[:L] if t == "sliding_attention")
    dense_b, expert_b, fp8_scaling = _quantization(cfg.get("quantization_config"))
    nm = name or str(cfg.get("_name_or_path") or mtype or "model")
    src = source if source is not None else (str(path_or_dict) if isinstance(path_or_dict, str | Path) else "")
    return ModelSpec(
        name=nm, total_params=float(total), active_params=float(active), layers=L, hidden_size=h,
        attention_heads=heads, kv_heads=kv, head_dim=head_dim, vocab_size=vocab, intermediate_size=inter,
        experts=experts, experts_per_token=topk, shared_experts=shared, moe_intermediate_size=moe_i,
        dense_layers=dense_layers if experts else 0, kv_lora_rank=kv_lora, qk_rope_head_dim=rope, source=src,
        q_lora_rank=q_lora, qk_nope_head_dim=nope, v_head_dim=v_hd, sliding_window=sw,
        sliding_window_layers=sw_layers, dense_bytes_per_param=dense_b, expert_bytes_per_param=expert_b,
        fp8_scaling=fp8_scaling, extra={"model_type": mtype, "tie_word_embeddings": tied},
    )


# ------------------------------------------------------------------------------------------ the registry

def _hf(repo: str) -> str:
    return f"https://huggingface.co/{repo}/blob/main/config.json"


def _qwen2(h: int, L: int, heads: int, kv: int, inter: int, vocab: int, tied: bool) -> dict[str, Any]:
    return {"model_type": "qwen2", "hidden_size": h, "num_hidden_layers": L, "num_attention_heads": heads,
            "num_key_value_heads": kv, "intermediate_size": inter, "vocab_size": vocab, "tie_word_embeddings": tied}


def _qwen3(h: int, L: int, heads: int, kv: int, inter: int, tied: bool) -> dict[str, Any]:
    return {"model_type": "qwen3", "hidden_size": h, "num_hidden_layers": L, "num_attention_heads": heads,
            "num_key_value_heads": kv, "head_dim": 128, "intermediate_size": inter, "vocab_size": 151936,
            "tie_word_embeddings": tied, "attention_bias": False}


def _qwen3_moe(h: int, L: int, heads: int, inter: int, moe: int) -> dict[str, Any]:
    return {"model_type": "qwen3_moe", "hidden_size": h, "num_hidden_layers": L, "num_attention_heads": heads,
            "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": inter, "moe_intermediate_size": moe,
            "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
            "vocab_size": 151936, "tie_word_embeddings": False, "attention_bias": False}


def _llama(h: int, L: int, heads: int, inter: int) -> dict[str, Any]:
    return {"model_type": "llama", "hidden_size": h, "num_hidden_layers": L, "num_attention_heads": heads,
            "num_key_value_heads": 8, "intermediate_size": inter, "vocab_size": 128256,
            "tie_word_embeddings": False, "attention_bias": False}


def _deepseek(mtype: str, heads: int, experts: int, dense: int, vocab: int) -> dict[str, Any]:
    return {"model_type": mtype, "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": heads,
            "num_key_value_heads": heads, "intermediate_size": 18432, "moe_intermediate_size": 2048,
            "n_routed_experts": experts, "n_shared_experts": 1, "num_experts_per_tok": 8,
            "first_k_dense_replace": dense, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": vocab, "tie_word_embeddings": False,
            "num_nextn_predict_layers": 1 if mtype == "deepseek_v3" and experts == 256 else 0,
            "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                    "weight_block_size": [128, 128]}}


def _glm(h: int, L: int, inter: int, moe: int, experts: int, dense: int) -> dict[str, Any]:
    return {"model_type": "glm4_moe", "hidden_size": h, "num_hidden_layers": L, "num_attention_heads": 96,
            "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": inter, "moe_intermediate_size": moe,
            "n_routed_experts": experts, "n_shared_experts": 1, "num_experts_per_tok": 8,
            "first_k_dense_replace": dense, "vocab_size": 151552, "tie_word_embeddings": False,
            "attention_bias": True, "use_qk_norm": L == 92, "partial_rotary_factor": 0.5, "num_nextn_predict_layers": 1}


def _gpt_oss(L: int, experts: int) -> dict[str, Any]:
    return {"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": L, "num_attention_heads": 64,
            "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "num_local_experts": experts,
            "experts_per_token": 4, "num_experts_per_tok": 4, "vocab_size": 201088, "tie_word_embeddings": False,
            "attention_bias": True, "sliding_window": 128,
            "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(L)],
            "quantization_config": {"quant_method": "mxfp4"}}


#: The ``config.json`` fields each registry model is built from, with the Hugging Face repository they
#: are copied from (``name: (repository, fields)``).
HF_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "Qwen2.5-0.5B": ("Qwen/Qwen2.5-0.5B", _qwen2(896, 24, 14, 2, 4864, 151936, True)),
    "Qwen2.5-1.5B": ("Qwen/Qwen2.5-1.5B", _qwen2(1536, 28, 12, 2, 8960, 151936, True)),
    "Qwen2.5-3B": ("Qwen/Qwen2.5-3B", _qwen2(2048, 36, 16, 2, 11008, 151936, True)),
    "Qwen2.5-7B": ("Qwen/Qwen2.5-7B", _qwen2(3584, 28, 28, 4, 18944, 152064, False)),
    "Qwen2.5-14B": ("Qwen/Qwen2.5-14B", _qwen2(5120, 48, 40, 8, 13824, 152064, False)),
    "Qwen2.5-32B": ("Qwen/Qwen2.5-32B", _qwen2(5120, 64, 40, 8, 27648, 152064, False)),
    "Qwen2.5-72B": ("Qwen/Qwen2.5-72B", _qwen2(8192, 80, 64, 8, 29568, 152064, False)),
    "Qwen3-0.6B": ("Qwen/Qwen3-0.6B", _qwen3(1024, 28, 16, 8, 3072, True)),
    "Qwen3-1.7B": ("Qwen/Qwen3-1.7B", _qwen3(2048, 28, 16, 8, 6144, True)),
    "Qwen3-4B": ("Qwen/Qwen3-4B", _qwen3(2560, 36, 32, 8, 9728, True)),
    "Qwen3-8B": ("Qwen/Qwen3-8B", _qwen3(4096, 36, 32, 8, 12288, False)),
    "Qwen3-14B": ("Qwen/Qwen3-14B", _qwen3(5120, 40, 40, 8, 17408, False)),
    "Qwen3-32B": ("Qwen/Qwen3-32B", _qwen3(5120, 64, 64, 8, 25600, False)),
    "Qwen3-30B-A3B": ("Qwen/Qwen3-30B-A3B", _qwen3_moe(2048, 48, 32, 6144, 768)),
    "Qwen3-235B-A22B": ("Qwen/Qwen3-235B-A22B", _qwen3_moe(4096, 94, 64, 12288, 1536)),
    "Llama-3.1-8B": ("meta-llama/Llama-3.1-8B", _llama(4096, 32, 32, 14336)),
    "Llama-3.1-70B": ("meta-llama/Llama-3.1-70B", _llama(8192, 80, 64, 28672)),
    "DeepSeek-V3": ("deepseek-ai/DeepSeek-V3", _deepseek("deepseek_v3", 128, 256, 3, 129280)),
    "DeepSeek-R1": ("deepseek-ai/DeepSeek-R1", _deepseek("deepseek_v3", 128, 256, 3, 129280)),
    "Kimi-K2": ("moonshotai/Kimi-K2-Instruct", _deepseek("kimi_k2", 64, 384, 1, 163840)),
    "GLM-4.5": ("zai-org/GLM-4.5", _glm(5120, 92, 12288, 1536, 160, 3)),
    "GLM-4.5-Air": ("zai-org/GLM-4.5-Air", _glm(4096, 46, 10944, 1408, 128, 1)),
    "gpt-oss-20b": ("openai/gpt-oss-20b", _gpt_oss(24, 32)),
    "gpt-oss-120b": ("openai/gpt-oss-120b", _gpt_oss(36, 128)),
}

MODELS: dict[str, ModelSpec] = {
    n: model_from_hf_config(c, name=n, source=_hf(repo)) for n, (repo, c) in HF_CONFIGS.items()
}

_MODEL_ALIASES = {"kimi-k2-instruct": "Kimi-K2", "deepseek-v3-0324": "DeepSeek-V3", "glm-4.5-air": "GLM-4.5-Air",
                  "llama-3.1-8b-instruct": "Llama-3.1-8B", "llama-3.1-70b-instruct": "Llama-3.1-70B",
                  "llama-3-8b": "Llama-3.1-8B", "meta-llama-3-8b": "Llama-3.1-8B"}


def model(name_or_spec: str | ModelSpec) -> ModelSpec:
    """The model called ``name_or_spec`` (case-insensitive; a Hugging Face id such as
    "Qwen/Qwen3-8B" or an "-Instruct" / "-Base" variant finds its base shape), or the spec itself.

    Parameters
    ----------
    name_or_spec : str | ModelSpec

    Returns
    -------
    ModelSpec

    Raises
    ------
    ScenarioError
        For an unknown name, listing the known ones.
    """
    if isinstance(name_or_spec, ModelSpec):
        return name_or_spec
    if isinstance(name_or_spec, str):
        k = _key(name_or_spec.rsplit("/", 1)[-1])
        for cand in (k, k.removesuffix("-instruct"), k.removesuffix("-base"), k.removesuffix("-instruct-2507"),
                     k.removesuffix("-thinking-2507")):
            for n, m in MODELS.items():
                if _key(n) == cand:
                    return m
            if cand in _MODEL_ALIASES:
                if cand in _MODEL_AMBIGUOUS:
                    _assumed("model", name_or_spec, _MODEL_AMBIGUOUS[cand])
                return MODELS[_MODEL_ALIASES[cand]]
    if not isinstance(name_or_spec, str):
        raise invalid("model", f"must be a model's name or a rollsim.hardware.ModelSpec, got "
                               f"{type(name_or_spec).__name__} {name_or_spec!r}")
    file = name_or_spec.endswith(".json") or Path(name_or_spec).is_file()
    how = ("a file is read as a Hugging Face config.json by rollsim.hardware.model_from_hf_config (rollsim "
           "hardware / split: --hf-config FILE)" if file else
           "another model: its Hugging Face config.json, read by rollsim.hardware.model_from_hf_config (rollsim "
           "hardware / split: --hf-config FILE)")
    raise invalid("model", f"unknown model {name_or_spec!r}{_unknown_name(name_or_spec, MODELS)} (known, "
                           f"case-insensitive, also as a Hugging Face id such as Qwen/Qwen3-8B or an -Instruct "
                           f"variant: {', '.join(MODELS)}; {how})")


def _sig3(x: float) -> float:
    """``x`` rounded to 3 significant figures."""
    return float(f"{x:.3g}") if x and math.isfinite(x) else x
