"""Resources from specs: accelerators and models (:mod:`rollsim.hardware.specs`), the serving engine's
decode step (:mod:`rollsim.hardware.serving`), training cost (:mod:`rollsim.hardware.training`),
colocated switching (:mod:`rollsim.hardware.switching`) and one entry point from a deployment to a
scenario (:class:`rollsim.hardware.Deployment`), and a serving benchmark simulated on its
instances (:func:`rollsim.hardware.serving_benchmark`)."""

from __future__ import annotations

from typing import Any

from .specs import ACCELERATORS, MODELS, Accelerator, ModelSpec, accelerator, model, model_from_hf_config

__all__ = ["ACCELERATORS", "MODELS", "Accelerator", "ModelSpec", "accelerator", "model", "model_from_hf_config",
           "Deployment", "serving_benchmark", "default_max_num_batched_tokens", "default_max_num_seqs"]


def __getattr__(name: str) -> Any:
    # Deployment imports rollsim.scenario and the lengths; rollsim.resources imports this package's
    # specs: load it on first use so that importing either first works
    if name == "Deployment":
        from .deployment import Deployment
        return Deployment
    if name in ("serving_benchmark", "default_max_num_batched_tokens", "default_max_num_seqs"):
        from . import benchmark
        return getattr(benchmark, name)
    raise AttributeError(f"module 'rollsim.hardware' has no attribute {name!r}")

