"""Bad inputs of ``rollsim.hardware.serving.aiconfigurator_ampere_factor`` (the Ampere factors read off
ai-dynamo/aiconfigurator's profiled vLLM kernels on the A100 and the H100) and the exact error each gets;
appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

# imported in the expression: the rows run before any other row loads rollsim.hardware.serving
_F = "__import__('rollsim.hardware.serving', fromlist=['serving']).aiconfigurator_ampere_factor"

ROWS: list[tuple[str, str, str, str]] = [
    ("hardware", f"{_F}('attention')", "ScenarioError", "op: must be one of gemm, moe, got 'attention'"),
    ("hardware", f"{_F}(tokens=(32, 512))", "ScenarioError", "tokens[0]: must be in [64, 512], got 32"),
    ("hardware", f"{_F}('gemm', tokens=(512, 256))", "ScenarioError", "tokens[1]: must be in [512, 512], got 256"),
    ("hardware", f"{_F}(tokens=[64, 512])", "ScenarioError",
     "tokens: must be a (low, high) pair of token counts, got [64, 512]"),
    ("hardware", f"{_F}(tokens=(64.5, 512))", "ScenarioError",
     "tokens[0]: must be an integer in [64, 512], got float 64.5"),
    ("hardware", f"{_F}(tokens=(65, 79))", "ScenarioError",
     "tokens: no token count of the table in [65, 79] was profiled on both GPUs"),
]
