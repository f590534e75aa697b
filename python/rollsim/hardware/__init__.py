"""Resources from specs: accelerators and models (:mod:`rollsim.hardware.specs`), the serving engine's
decode step (:mod:`rollsim.hardware.serving`), training cost (:mod:`rollsim.hardware.training`),
colocated switching (:mod:`rollsim.hardware.switching`) and one entry point from a deployment to a
scenario (:class:`rollsim.hardware.Deployment`)."""

from __future__ import annotations

from typing import Any

from .specs import ACCELERATORS, MODELS, Accelerator, ModelSpec, accelerator, model, model_from_hf_config

__all__ = ["ACCELERATORS", "MODELS", "Accelerator", "ModelSpec", "accelerator", "model", "model_from_hf_config"]

