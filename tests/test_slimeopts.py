"""slime launch arguments checked against slime's and Megatron-LM's option names
(``rollsim/configs/slime_options.txt``, derived by ``scripts/derive_slime_options.py`` from THUDM/slime
``slime/utils/arguments.py`` and ``slime/backends/sglang_utils/arguments.py`` and from NVIDIA/Megatron-LM
``megatron/training/arguments.py`` at the commit slime's ``docker/Dockerfile`` pins). slime itself
accepts any argument (``parse_args``: Megatron's parse with ``ignore_unknown_args=True``, SGLang's with
``parse_known_args``), so a typo is silently lost there; the importer warns on it."""

from __future__ import annotations

import ast
import importlib.util
import re
import textwrap
from pathlib import Path

import pytest

from rollsim import configs
from rollsim.cli import main
from rollsim.configs import slime
from rollsim.configs._common import known_options

ROOT = Path(__file__).resolve().parent.parent
EX = configs.EXAMPLES


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def notes(imp, option):
    return [n for n in imp.notes if n.option == option]


#: A launch script in the style of THUDM/slime's scripts/run-qwen3-4B.sh: ray first, the argument arrays,
#: then ``ray job submit ... -- python3 train.py`` with the arrays expanded.
SCRIPT = """\
    #!/bin/bash
    ray start --head --num-gpus 8 --disable-usage-stats
    MODEL_ARGS=(
       --num-layers 36 --hidden-size 2560 --swiglu --untie-embeddings-and-output-weights
       --no-gradient-accumulation-fusion --use-gated-attention
    )
    ROLLOUT_ARGS=(--rollout-batch-size 32 --n-samples-per-prompt 8 --rollout-max-response-len 8192)
    ray job submit --address="http://127.0.0.1:8265" -- python3 train.py \\
       --actor-num-nodes 1 --actor-num-gpus-per-node 8 --colocate \\
       ${MODEL_ARGS[@]} ${ROLLOUT_ARGS[@]} \\
       --tensor-model-parallel-size 2 --micro-batch-size 1 --eval-prompt-data aime /root/aime.jsonl \\
       --use-kl-loss --sglang-enable-dp-attention --router-policy cache_aware --sglang-mem-fraction-static 0.7
    """


def test_typo_warns_naming_it_and_the_suggestion(tmp_path):
    p = write(tmp_path, "run.sh", SCRIPT.replace("--n-samples-per-prompt 8", "--n-samples-per-prompt 8 "
                                                 "--rollout-batch-szie 64 --tensor-model-paralel-size 4 --frobnicate 3"))
    imp = configs.load(p)
    assert imp.warnings() == [
        "rollsim: warning: --rollout-batch-szie=64: unknown option (did you mean '--rollout-batch-size'?)",
        "rollsim: warning: --tensor-model-paralel-size=4: unknown option (did you mean '--tensor-model-parallel-size' "
        "or '--expert-model-parallel-size' or '--model-parallel-size'?)",
        "rollsim: warning: --frobnicate=3: unknown option (neither slime nor Megatron-LM has one such)"]
    assert imp.scenario.batch_size == 32 * 8          # the typo changed nothing
    # the clean script has none
    assert configs.load(write(tmp_path, "ok.sh", SCRIPT)).unknown_options == ()
    assert configs.load(EX / "slime_async.sh").unknown_options == ()


def test_typo_in_overrides_and_of_slimes_own_sglang_options(tmp_path):
    p = write(tmp_path, "run.sh", SCRIPT)
    imp = configs.load(p, overrides=["--sglang-server-concurency", "64", "--rollout-max-respone-len", "4096"])
    assert [(n.option, n.became) for n in imp.unknown_options] == [
        ("--rollout-max-respone-len", "ignored: unknown option (did you mean '--rollout-max-response-len' or "
                                      "'--rollout-max-context-len' or '--rollout-max-prompt-len'?)"),
        ("--sglang-server-concurency", "ignored: unknown option (did you mean '--sglang-server-concurrency'?)")]
    assert imp.scenario.rollout_slots == configs.load(p).scenario.rollout_slots
    assert imp.max_response_tokens == 8192


def test_megatron_and_pass_through_arguments_are_not_typos(tmp_path):
    imp = configs.load(write(tmp_path, "run.sh", SCRIPT))
    assert imp.unknown_options == ()
    megatron = "ignored: a Megatron-LM option (training parallelism, kernels and precision are part of the calibrated " \
               "training cost)"
    for name in ("--num-layers", "--swiglu", "--no-gradient-accumulation-fusion",
                 "--use-gated-attention"):   # the last: added by slime's Megatron patch (docker/patch/latest)
        assert [(n.kind, n.became) for n in notes(imp, name)] == [("ignored", megatron)], name
    # a parallel size is the deployment's training option: without an accelerator there is none
    assert [(n.kind, n.became) for n in notes(imp, "--tensor-model-parallel-size")] == [
        ("ignored", "ignored: only the deployment uses it, and there is none without an accelerator (gpu=, --gpu)")]
    assert notes(imp, "--sglang-enable-dp-attention")[0].became == (
        "ignored: an SGLang server option (slime passes --sglang-* to SGLang's ServerArgs), not modelled by rollsim")
    assert notes(imp, "--router-policy")[0].became == (
        "ignored: an SGLang router option (slime passes --router-* to sglang_router's RouterArgs), not modelled by rollsim")


def test_notes_list_every_ignored_argument(tmp_path):
    imp = configs.load(write(tmp_path, "run.sh", SCRIPT))
    ignored = {n.option: (n.value, n.became) for n in imp.notes if n.kind == "ignored"}
    assert ignored["--use-kl-loss"] == ("True", "ignored: a slime option rollsim does not model")
    # argparse nargs='+': both words kept
    assert ignored["--eval-prompt-data"] == ("['aime', '/root/aime.jsonl']", "ignored: a slime option rollsim does not model")
    # ray's own arguments: another command's, not read, said once (before: each noted as an option)
    assert "--address" not in ignored and "--num-gpus" not in ignored
    assert ignored["(other commands)"] == ("ray start", "not read: 1 other command of the script and the launcher "
                                           "before the trainer (ray job submit ...); only the trainer's command "
                                           "(train.py / train_async.py) is read")
    # every argument of the training command is read, ignored with a reason, or an unknown option
    given = re.findall(r"(--[a-z][a-z0-9-]*)", SCRIPT.split("train.py", 1)[1] + SCRIPT.split("MODEL_ARGS=(")[1]
                       .split("ray job")[0])
    noted = {n.option for n in imp.notes}
    assert sorted(set(given) - noted) == []


def test_repeated_option_keeps_the_last_and_notes_the_earlier(tmp_path):
    imp = configs.load(write(tmp_path, "run.sh", "python train.py --rollout-batch-size 8 --n-samples-per-prompt 2 "
                                                 "--n-samples-per-prompt 4\n"))
    assert imp.scenario.group_size == 4
    assert [(n.kind, n.value, n.became) for n in notes(imp, "--n-samples-per-prompt")][0] == (
        "ignored", "2", "ignored: given again later in the command; slime's argparse keeps the last value, 4")


def test_cli_import_prints_the_typo_on_stderr(tmp_path, capsys):
    p = write(tmp_path, "run.sh", "python3 train.py --rollout-batch-size 8 --rollout-batch-szie 16\n")
    assert main(["import", str(p)]) == 0
    err = capsys.readouterr().err
    assert err == "rollsim: warning: --rollout-batch-szie=16: unknown option (did you mean '--rollout-batch-size'?)\n"


def test_every_option_the_importer_reads_is_slimes(tmp_path):
    """The names the importer reads or defaults are in the option list (a default is never taken for
    an option slime does not have), as for the other frameworks (tests/test_configs.py)."""
    imp = configs.load(write(tmp_path, "s.sh", "python train_async.py --rollout-batch-size 8\n"))
    known, _ = known_options("slime")
    read = [n.option for n in imp.notes if not n.option.startswith("(") and n.kind != "ignored"]
    assert len(read) >= 10 and [o for o in read if o not in known] == []
    # and every name the importer mentions at all
    src = (ROOT / "python" / "rollsim" / "configs" / "slime.py").read_text()
    named = {c.value for c in ast.walk(ast.parse(src)) if isinstance(c, ast.Constant) and isinstance(c.value, str)
             and re.fullmatch(r"--[a-z][a-z0-9-]+", c.value)}
    # SGLang's own (passed through as --sglang-*) and the pass-through prefixes themselves are not slime's
    assert sorted(named - known) == ["--router-", "--sglang-", "--sglang-mem-fraction-static"]
    assert set(slime._READ_PASS_THROUGH) == {"--sglang-mem-fraction-static"} and len(named) >= 25


def test_option_list_names_its_sources():
    text = (ROOT / "python" / "rollsim" / "configs" / "slime_options.txt").read_text()
    head = " ".join(line for line in text.splitlines() if line.startswith("#"))
    assert "THUDM/slime at commit 624b824a898ab0ec1fcb4d373004c7f3852bf515" in head
    assert "NVIDIA/Megatron-LM at commit # 1dcf0dafa884ad52ffb243625717a3471643e087" in head
    rows = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    assert all(len(r) == 2 and r[0].startswith("--") and r[1] in ("slime", "megatron", "megatron-patch") for r in rows)
    whose = {r[0]: r[1] for r in rows}
    assert len(rows) == len(whose) and sum(w == "slime" for w in whose.values()) > 200
    assert sum(w == "megatron" for w in whose.values()) > 500
    # slime/utils/arguments.py: --rollout-batch-size; sglang_utils/arguments.py: --sglang-server-concurrency;
    # Megatron's add_argument: --tensor-model-parallel-size; its TransformerConfig dataclass group: --num-layers
    assert [whose[n] for n in ("--rollout-batch-size", "--sglang-server-concurrency", "--tensor-model-parallel-size",
                               "--num-layers")] == ["slime", "slime", "megatron", "megatron"]


def _derive():
    spec = importlib.util.spec_from_file_location("derive_slime_options", ROOT / "scripts" / "derive_slime_options.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_derivation_follows_argparse_and_megatrons_factory():
    d = _derive()
    src = textwrap.dedent("""\
        def add(parser):
            parser.add_argument("--a-b", type=int)
            parser.add_argument("--offload", action=argparse.BooleanOptionalAction, default=None)
            reset_arg(parser, "--lr", default=1e-6)
            group.add_argument("-x", "--long-x")
        """)
    assert d.literal_flags(src, ("add_argument", "reset_arg")) == {"--a-b", "--offload", "--no-offload", "--lr", "--long-x"}
    cfg = ast.parse(textwrap.dedent("""\
        @dataclass
        class Base:
            tp_size: int = 1
            fused: bool = True
            maybe: Optional[bool] = None
            quiet: bool = False
        @dataclass
        class Cfg(Base):
            hidden: int = field(default=8, metadata={"argparse_meta": {"arg_names": ["--hidden-size"]}})
            cache: dict = field(init=False)
            skipped: int = 0
        """))
    index = {c.name: ("x.py", c) for c in cfg.body}
    # ArgumentGroupFactory: store_false (--no-/--disable-) unless the default is False; metadata arg_names win;
    # init=False and the excluded fields give none
    assert d.dataclass_flags("Cfg", index, {"skipped"}) == {
        "--tp-size", "--no-fused", "--disable-fused", "--no-maybe", "--disable-maybe", "--quiet", "--hidden-size"}
    uses = d.factory_uses(textwrap.dedent("""\
        exclude = ["a", "b"]
        f = ArgumentGroupFactory(TransformerConfig, exclude=exclude)
        g = ArgumentGroupFactory(LoggerConfig, exclude=["c"])
        h = ArgumentGroupFactory(RNGConfig)
        """))
    assert uses == [("TransformerConfig", {"a", "b"}), ("LoggerConfig", {"c"}), ("RNGConfig", set())]


@pytest.mark.parametrize("word", ["--sglang-mem-fraction-statc", "--sglang-server-concurrenc"])
def test_near_misses_of_read_pass_through_options_warn(tmp_path, word):
    imp = configs.load(write(tmp_path, "s.sh", f"python train.py --rollout-batch-size 8 {word} 1\n"))
    assert [n.option for n in imp.unknown_options] == [word]


def test_the_command_ends_at_a_pipe_and_redirections_are_the_shells(tmp_path):
    imp = configs.load(write(tmp_path, "run.sh", "python3 train.py --rollout-batch-size 8 --eval-prompt-data aime "
                                                 "/d/aime.jsonl --rollout-max-response-len 4096 2>&1 > out.log | "
                                                 "tee log.txt && python3 tools/convert.py --hf-out /x\n"))
    assert imp.max_response_tokens == 4096 and imp.unknown_options == ()
    assert notes(imp, "--eval-prompt-data")[0].value == "['aime', '/d/aime.jsonl']"
    # the commands after the pipe are not read: one note, no --hf-out
    assert notes(imp, "--hf-out") == []
    assert [(n.value, n.kind) for n in notes(imp, "(other commands)")] == [("tee, python3 tools/convert.py", "ignored")]
