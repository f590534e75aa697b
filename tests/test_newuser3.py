"""What a new user hit in the first hour, fixed: a name that names more than one product (``--gpu
A100``, ``--model Llama-3-8B``) is taken as one of them with a warning that says so, never silently;
a run's metrics of another framework than its config's are refused unless their names are given."""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest

import rollsim
from rollsim.cli import main
from rollsim.configs import EXAMPLES
from rollsim.hardware import ACCELERATORS, MODELS, Deployment, accelerator, model


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("always")          # as on the command line (pytest makes warnings errors)
        try:
            code = main(list(args))
        except SystemExit as e:
            code = e.code
    return int(code or 0), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name, taken, says", [
    ("A100", "A100-80G", "the A100 comes in 40 and 80 GB: taken as A100-80G (give A100-40G or A100-80G to choose)"),
    ("a100_sxm", "A100-80G", "the A100 SXM comes in 40 and 80 GB: taken as A100-80G (give A100-40G or A100-80G to "
                             "choose)"),
    ("MI300", "MI300X", "the MI300 family is the MI300X (192 GB) and the MI300A APU: taken as MI300X (give MI300X to "
                        "choose)"),
])
def test_an_ambiguous_accelerator_name_is_a_stated_assumption(name, taken, says):
    with pytest.warns(rollsim.NameAssumedWarning) as w:
        assert accelerator(name) is ACCELERATORS[taken]
    assert [str(x.message) for x in w] == [f"gpu: {name!r}: {says}"]


@pytest.mark.parametrize("name", ["Llama-3-8B", "meta-llama/Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-8B-Instruct"])
def test_llama_3_8b_is_taken_as_the_llama_3_1_shape_with_a_warning(name):
    with pytest.warns(rollsim.NameAssumedWarning, match=rf"^model: {name!r}: taken as Llama-3\.1-8B, which has the "
                                                         r"same shape .* context length \(8,192 against 131,072 "
                                                         r"tokens\)"):
        assert model(name) is MODELS["Llama-3.1-8B"]
    l31 = MODELS["Llama-3.1-8B"]      # the shape the warning claims is the same: Llama 3 8B's config.json
    assert (l31.layers, l31.hidden_size, l31.attention_heads, l31.kv_heads, l31.intermediate_size,
            l31.vocab_size) == (32, 4096, 32, 8, 14336, 128256)


@pytest.mark.parametrize("gpu, name", [("H100", "H100"), ("h100-sxm", "H100"), ("A100-80GB", "A100-80G"),
                                       ("a100-40gb", "A100-40G"), ("A100-40G", "A100-40G"), ("mi300x", "MI300X")])
def test_an_unambiguous_name_says_nothing(gpu, name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert accelerator(gpu) is ACCELERATORS[name]
        assert model("Qwen/Qwen3-8B") is MODELS["Qwen3-8B"]
        assert model("meta-llama/Llama-3.1-8B-Instruct") is MODELS["Llama-3.1-8B"]


def test_hardware_command_prints_the_assumptions_then_the_taken_names():
    code, out, err = _cli("hardware", "--model", "Llama-3-8B", "--gpu", "A100")
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("rollsim: warning: model: 'Llama-3-8B': taken as Llama-3.1-8B, which has the same shape")
    assert lines[1] == ("rollsim: warning: gpu: 'A100': the A100 comes in 40 and 80 GB: taken as A100-80G (give "
                        "A100-40G or A100-80G to choose)")
    assert out.splitlines()[0] == "Llama-3.1-8B on 1 x A100-80G (1 vllm instance of TP 1), training on 1 GPU (fsdp2)"


def test_the_warned_deployment_equals_the_named_one():
    with pytest.warns(rollsim.NameAssumedWarning):
        d = Deployment(model="Llama-3-8B", gpu="A100", rollout_gpus=1)
    named = Deployment(model="Llama-3.1-8B", gpu="A100-80G", rollout_gpus=1)
    assert d.kv_capacity_tokens() == named.kv_capacity_tokens()
    assert d.decode_tokens_per_s(batch=64, context_tokens=2000) == named.decode_tokens_per_s(batch=64,
                                                                                           context_tokens=2000)


def test_metrics_of_another_framework_fit_when_their_names_are_given():
    imp = rollsim.configs.load(EXAMPLES / "areal_grpo.yaml")
    with pytest.raises(rollsim.ScenarioError, match=r"^metrics: the table has verl metric names"):
        rollsim.calibrate(EXAMPLES / "verl_grpo_metrics.csv", imp, bootstrap=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = rollsim.calibrate(EXAMPLES / "verl_grpo_metrics.csv", imp, bootstrap=0, framework="verl")
    assert cal.metrics.height == 40
    code, _, err = _cli("calibrate", "--config", str(EXAMPLES / "areal_grpo.yaml"), "--metrics",
                        str(EXAMPLES / "verl_grpo_metrics.csv"), "--metric-names", "verl", "--bootstrap", "0")
    assert code == 0, err


@pytest.mark.parametrize("config, metrics", [("verl_grpo.yaml", "verl_grpo_metrics.csv"),
                                             ("areal_grpo.yaml", "areal_grpo_metrics.csv"),
                                             ("slime_async.sh", "slime_async_metrics.csv"),
                                             ("verl_fully_async.sh", "verl_fully_async_metrics.csv")])
def test_each_example_calibrates_on_its_own_metrics(config, metrics):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = rollsim.calibrate(EXAMPLES / metrics, rollsim.configs.load(EXAMPLES / config), bootstrap=0)
    assert cal.metrics.height > 0


def test_whatif_says_the_assumed_gpu_once():
    # resolved by the calibration and again by each variant's rescale: one line on stderr
    code, _, err = _cli("whatif", "--config", str(EXAMPLES / "verl_grpo.yaml"), "--metrics",
                        str(EXAMPLES / "verl_grpo_metrics.csv"), "--gpu", "A100", "--model", "Qwen3-4B",
                        "--train-gpus", "4", "--bootstrap", "10", "--draws", "2")
    assert code == 0, err
    assert [line for line in err.splitlines() if "'A100'" in line] == [
        "rollsim: warning: gpu: 'A100': the A100 comes in 40 and 80 GB: taken as A100-80G (give A100-40G or "
        "A100-80G to choose)"]


def test_the_roofline_says_which_a100_it_takes():
    from rollsim.resources import GPUS, roofline_decode

    with pytest.warns(rollsim.NameAssumedWarning, match=r"^gpu: 'A100': the A100 comes in 40 and 80 GB: taken as "
                                                         r"A100-80G"):
        v = roofline_decode("Qwen2.5-7B", "A100", context_tokens=1500.0)
    assert v == roofline_decode("Qwen2.5-7B", "A100-80G", context_tokens=1500.0)
    assert v != roofline_decode("Qwen2.5-7B", "A100-40G", context_tokens=1500.0)
    assert GPUS["A100-40G"].hbm_bytes_per_s < GPUS["A100-80G"].hbm_bytes_per_s


@pytest.mark.parametrize("name, hint", [("meta-llama/Llama-3.2-1B", ""), ("llama-7b", ""),
                                        ("Qwen3-8", "; did you mean Qwen3-8B?"),
                                        ("Llama-3-70B", "; did you mean Llama-3.1-70B?"),
                                        ("Qwen3-32B-AWQ", "; did you mean Qwen3-32B?")])
def test_an_unknown_model_is_never_offered_one_of_another_size(name, hint):
    with pytest.raises(rollsim.ScenarioError) as e:
        model(name)
    assert str(e.value).startswith(f"model: unknown model {name!r}{hint} (known, case-insensitive")


def test_a_config_read_as_another_framework_is_said_to_look_like_its_own():
    with pytest.warns(UserWarning, match=r"^framework: areal_grpo\.yaml looks like a config for areal, read as verl as "
                                         r"asked: its areal options are unknown to verl and ignored"):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"rollout\.")   # verl's unknown-option warnings
            rollsim.configs.load(EXAMPLES / "areal_grpo.yaml", framework="verl")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for f, fw in (("verl_grpo.yaml", "verl"), ("areal_grpo.yaml", "areal"), ("slime_async.sh", "slime"),
                      ("openrlhf_ppo.sh", "openrlhf"), ("verl_fully_async.sh", "verl")):
            rollsim.configs.load(EXAMPLES / f, framework=fw)   # its own framework, given: nothing said
