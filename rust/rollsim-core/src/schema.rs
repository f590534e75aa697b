//! The schema of a scenario and of a run's results, in one static table: every scenario field's
//! name, type, unit, default, allowed range and one-line doc, the same for the fields of every part
//! ([`PARTS`]: the length distributions, the pipelines, `LengthBalanced`, `TrainRanks`,
//! `LengthDrift`, `Agentic`), and the name, type, unit
//! and doc of every summary value and of every column of the step, sample and segment frames.
//!
//! [`crate::Scenario::validate`] checks the ranges declared here (its messages print them), the
//! bindings extract a scenario by these names and defaults, and export the whole table to Python
//! (`rollsim._rollsim.SCHEMA`), which derives from it its field list, defaults, range checks,
//! command-line flags, TOML keys and documentation tables.

use crate::error::{Error, Result};
use crate::scenario::show;

/// Largest accepted `rollout_slots`, `batch_size`, `group_size` and `slots_per_instance`
/// (sample ids are 32-bit).
pub const MAX_COUNT: u32 = 1 << 24;

/// Version of this schema: raised when a field or a column is renamed, removed or changes meaning
/// (adding one keeps it).
pub const VERSION: u32 = 1;

/// The type of a scenario field as it crosses the boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An integer (never a bool).
    Int,
    /// A real number (ints accepted).
    Float,
    Bool,
    /// One of [`Field::choices`].
    Str,
    /// `decode_throughput_table`: `(running sequences, tokens/s)` pairs, or None.
    Table,
    /// A part with fields of its own (`lengths`, `pipeline`).
    Part,
    /// A sequence of numbers (a part's `values`, `weights`, `edges`, ...).
    Array,
    /// A number in the field's range, or a distribution part (`LogNormal` / `Empirical`, the
    /// kinds of [`Field::choices`]): `Agentic.tool_latency_s`, `Agentic.observation_tokens`.
    Dist,
}

impl Kind {
    /// The name the exported schema gives the kind.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::Bool => "bool",
            Kind::Str => "str",
            Kind::Table => "table",
            Kind::Part => "part",
            Kind::Array => "array",
            Kind::Dist => "dist",
        }
    }
}

/// A field's default value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(u64),
    Float(f64),
    Bool(bool),
    Str(&'static str),
    /// No value (no table, unlimited KV capacity).
    None,
    /// A part: its own defaults (`LogNormal()`, `FullyAsync()`).
    Part(&'static str),
    /// A sequence of numbers (`LengthBalanced.edges`).
    Reals(&'static [f64]),
    /// No default: the field must be given (`Empirical.values`).
    Required,
}

/// The accepted range of a real-valued field, and how its messages spell it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub field: &'static str,
    pub lo: f64,
    pub hi: f64,
    /// The range as messages print it, e.g. `"[1e-6, 1e9]"`.
    pub range: &'static str,
    /// `" tokens/s"`, `" seconds"`, ... (with its leading space), or `""`.
    pub unit: &'static str,
    /// Special values besides the range, e.g. `", or math.inf (free prefill)"`, or `""`.
    pub extra: &'static str,
}

impl Bound {
    /// `Ok` for a value in `[lo, hi]` (never NaN), else the field's error:
    /// `decode_tokens_per_s: must be in [1e-6, 1e9] tokens/s, got 1e-320`. A range written with a
    /// parenthesis excludes that end (`"[0, 1)"`, `"(0, 1]"`).
    pub fn check(&self, v: f64) -> Result<()> {
        if self.contains(v) {
            Ok(())
        } else {
            Err(Error::field(
                self.field,
                format!("must be in {}{}{}, got {}", self.range, self.unit, self.extra, show(v)),
            ))
        }
    }
}

impl Bound {
    /// Whether `v` is in the range (the ends as its text writes them; never NaN).
    pub fn contains(&self, v: f64) -> bool {
        let lo_ok = if self.range.starts_with('(') { v > self.lo } else { v >= self.lo };
        let hi_ok = if self.range.ends_with(')') { v < self.hi } else { v <= self.hi };
        lo_ok && hi_ok
    }
}

const fn bound(field: &'static str, lo: f64, hi: f64, range: &'static str, unit: &'static str) -> Bound {
    Bound { field, lo, hi, range, unit, extra: "" }
}

/// Decode speed of one sequence: 1e-6 to 1e9 tokens/s.
pub const DECODE_TOKENS_PER_S: Bound = bound("decode_tokens_per_s", 1e-6, 1e9, "[1e-6, 1e9]", " tokens/s");
/// Fixed seconds per step (with the weight sync): at most 1e12 s.
pub const TRAIN_STEP_S: Bound = bound("train_step_s", 0.0, 1e12, "[0, 1e12]", " seconds");
/// Seconds per weight update after each step.
pub const WEIGHT_SYNC_S: Bound = bound("weight_sync_s", 0.0, 1e12, "[0, 1e12]", " seconds");
/// Seconds per token of a batch (with any log-prob recompute): at most 1e3 s/token.
pub const TRAIN_S_PER_TOKEN: Bound = bound("train_s_per_token", 0.0, 1e3, "[0, 1e3]", " seconds/token");
/// Seconds per token of the log-prob recompute phase.
pub const LOGPROB_S_PER_TOKEN: Bound = bound("logprob_s_per_token", 0.0, 1e3, "[0, 1e3]", " seconds/token");
pub const HORIZON_S: Bound = bound("horizon_s", 1e-6, 1e12, "[1e-6, 1e12]", " seconds");
pub const ROLLOUT_PAUSE_S: Bound = bound("rollout_pause_s", 0.0, 1e12, "[0, 1e12]", " seconds");
pub const PROMPT_TOKENS: Bound = bound("prompt_tokens", 0.0, 1e9, "[0, 1e9]", " tokens");
/// Finite prefill speeds (`INFINITY`, free prefill, is accepted besides).
pub const PREFILL_TOKENS_PER_S: Bound = Bound {
    extra: ", or math.inf (free prefill)",
    ..bound("prefill_tokens_per_s", 1e-6, 1e12, "[1e-6, 1e12]", " tokens/s")
};
pub const DECODE_SLOWDOWN_PER_SEQ: Bound = bound("decode_slowdown_per_seq", 0.0, 1e6, "[0, 1e6]", "");
/// Seconds of an instance's decode step per token of its decoding sequences' contexts.
pub const DECODE_S_PER_CONTEXT_TOKEN: Bound = bound("decode_s_per_context_token", 0.0, 1.0, "[0, 1]", " seconds/token");
/// KV-cache capacities. `None` (unlimited) is accepted besides; the engine stores it as 0.
pub const KV_CACHE_TOKENS: Bound =
    Bound { extra: ", or None (unlimited)", ..bound("kv_cache_tokens", 1.0, 1e15, "[1, 1e15]", " tokens") };
/// Each throughput of `decode_throughput_table`.
pub const TABLE_THROUGHPUT: Bound = bound("decode_throughput_table", 1e-6, 1e15, "[1e-6, 1e15]", " tokens/s");
/// Finite over-sampling fractions (`INFINITY`, every slot busy, is accepted besides).
pub const OVER_SAMPLING: Bound = Bound {
    extra: ", or math.inf (keep every slot busy)",
    ..bound("pipeline.over_sampling", 0.0, 1e6, "[0, 1e6]", "")
};

/// The accepted values of a field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// Any value of the kind (bools, parts).
    Any,
    /// Integers in `[lo, hi]`; `extra` names special values besides, with its leading `", "`
    /// (`", or None (unbounded)"`), or is `""`.
    Int { lo: u64, hi: u64, extra: &'static str },
    /// Reals in the bound's range (and its special values).
    Real(Bound),
}

/// One scenario field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Field {
    pub name: &'static str,
    pub kind: Kind,
    /// Unit of the value (`"tokens/s"`, `"seconds"`, ...), `""` for none.
    pub unit: &'static str,
    pub default: Value,
    pub range: Range,
    /// Allowed strings of a [`Kind::Str`] field.
    pub choices: &'static [&'static str],
    /// Left out of the wire dict at its default (so that run keys hashed from the dict stay the
    /// same as fields are added); the others are always sent. Every missing key takes the default.
    pub omit_at_default: bool,
    /// One line: what the field is.
    pub doc: &'static str,
}

const fn real(b: Bound, default: f64, omit: bool, doc: &'static str) -> Field {
    Field {
        name: b.field,
        kind: Kind::Float,
        unit: unit_of(b.unit),
        default: Value::Float(default),
        range: Range::Real(b),
        choices: &[],
        omit_at_default: omit,
        doc,
    }
}

const fn int(name: &'static str, lo: u64, hi: u64, default: u64, omit: bool, doc: &'static str) -> Field {
    Field {
        name,
        kind: Kind::Int,
        unit: "",
        default: Value::Int(default),
        range: Range::Int { lo, hi, extra: "" },
        choices: &[],
        omit_at_default: omit,
        doc,
    }
}

const fn flag(name: &'static str, default: bool, doc: &'static str) -> Field {
    Field {
        name,
        kind: Kind::Bool,
        unit: "",
        default: Value::Bool(default),
        range: Range::Any,
        choices: &[],
        omit_at_default: true,
        doc,
    }
}

/// `" tokens/s"` -> `"tokens/s"` (the bounds keep the leading space of their messages).
const fn unit_of(u: &'static str) -> &'static str {
    match u.as_bytes() {
        [b' ', rest @ ..] => match std::str::from_utf8(rest) {
            Ok(s) => s,
            Err(_) => u,
        },
        _ => u,
    }
}

/// Every scenario field, in the order of `rollsim.Scenario`'s dataclass fields.
pub const SCENARIO: &[Field] = &[
    int("rollout_slots", 1, MAX_COUNT as u64, 256, false, "Concurrent sequences in the rollout pool"),
    real(DECODE_TOKENS_PER_S, 30.0, false, "Decode speed of one sequence"),
    int("batch_size", 1, MAX_COUNT as u64, 512, false, "Samples per training step"),
    real(TRAIN_STEP_S, 60.0, false, "Fixed seconds per training step (the trainer's compute)"),
    real(HORIZON_S, 7200.0, false, "Simulated time"),
    Field {
        name: "lengths",
        kind: Kind::Part,
        unit: "tokens",
        default: Value::Part("LogNormal()"),
        range: Range::Any,
        choices: &["lognormal", "empirical"],
        omit_at_default: false,
        doc: "Answer lengths: LogNormal(mu, sigma, max_tokens) or Empirical(values)",
    },
    Field {
        name: "pipeline",
        kind: Kind::Part,
        unit: "",
        default: Value::Part("FullyAsync()"),
        range: Range::Any,
        choices: &["off_policy", "fully_async"],
        omit_at_default: false,
        doc: "How generation and training interleave: Synchronous, OneStepAsync, OffPolicy(k) or FullyAsync",
    },
    int("seed", 0, u64::MAX, 0, false, "Seed of the random lengths"),
    Field {
        name: "rng",
        kind: Kind::Str,
        unit: "",
        default: Value::Str("fast"),
        range: Range::Any,
        choices: &["fast", "python"],
        omit_at_default: false,
        doc: "Random generator: fast (Xoshiro256++) or python (CPython's random.Random, bit for bit)",
    },
    real(WEIGHT_SYNC_S, 0.0, true, "Seconds per weight update after each step"),
    real(TRAIN_S_PER_TOKEN, 0.0, true, "Seconds per token of the batch, added to every step"),
    int("group_size", 1, MAX_COUNT as u64, 1, true, "Answers per prompt (GRPO group); must divide batch_size"),
    real(PROMPT_TOKENS, 0.0, true, "Prompt length, prefilled before the first answer token"),
    real(
        PREFILL_TOKENS_PER_S,
        f64::INFINITY,
        true,
        "Prefill throughput of one slot (prefill_mode = shared: of one instance; math.inf: free prefill)",
    ),
    flag("prefix_sharing", true, "The answers of a group share the prompt's KV: only the first pays its prefill"),
    flag("clear_cache_on_update", true, "The prefix cache is cleared on every weight update"),
    int("slots_per_instance", 0, MAX_COUNT as u64, 0, true, "Slots per inference instance (0: independent slots)"),
    real(DECODE_SLOWDOWN_PER_SEQ, 0.0, true, "Slowdown of one sequence per other sequence on its instance"),
    real(ROLLOUT_PAUSE_S, 0.0, true, "Seconds the rollout pool stops at every weight update it loads"),
    real(LOGPROB_S_PER_TOKEN, 0.0, true, "Seconds per token of the batch of a log-prob recompute phase"),
    Field {
        name: "decode_throughput_table",
        kind: Kind::Table,
        unit: "tokens/s",
        default: Value::None,
        range: Range::Real(TABLE_THROUGHPUT),
        choices: &[],
        omit_at_default: true,
        doc: "Measured (running sequences, instance tokens/s) points, linear in between (None: no table)",
    },
    Field {
        name: "kv_cache_tokens",
        kind: Kind::Float,
        unit: "tokens",
        default: Value::None,
        range: Range::Real(KV_CACHE_TOKENS),
        choices: &[],
        omit_at_default: true,
        doc: "KV-cache capacity of one instance (None: unlimited)",
    },
    Field {
        name: "agentic",
        kind: Kind::Part,
        unit: "",
        default: Value::None,
        range: Range::Any,
        choices: &["agentic"],
        omit_at_default: true,
        doc: "Multi-turn trajectories of turns and tool calls: Agentic(...) (None: one answer per sample)",
    },
    int("sync_every", 1, MAX_COUNT as u64, 1, true, "Sync cadence: the rollout loads weights every N-th step"),
    Field {
        name: "staleness_check",
        kind: Kind::Str,
        unit: "",
        default: Value::Str("start"),
        range: Range::Any,
        choices: &["start", "finish"],
        omit_at_default: true,
        doc: "Version max_staleness is checked against: the sample's start, or the rollout's at its finish",
    },
    // prefill as a shared resource of an instance (chunked prefill, vLLM / SGLang)
    Field {
        name: "prefill_mode",
        kind: Kind::Str,
        unit: "",
        default: Value::Str("per_slot"),
        range: Range::Any,
        choices: &["per_slot", "shared"],
        omit_at_default: true,
        doc: "Prefill per slot, or shared: an instance's prompt tokens queue for its steps and slow its decoding",
    },
    int(
        "max_num_batched_tokens",
        2,
        MAX_COUNT as u64,
        8192,
        true,
        "prefill_mode = shared: tokens per engine step, decode tokens first, prompt chunks in the rest",
    ),
    real(
        DECODE_S_PER_CONTEXT_TOKEN,
        0.0,
        true,
        "Seconds an instance's decode step adds per token of its decoding sequences' contexts (KV read)",
    ),
    TRAIN_FIELD,
    Field {
        name: "length_drift",
        kind: Kind::Part,
        unit: "",
        default: Value::None,
        range: Range::Any,
        choices: &["length_drift"],
        omit_at_default: true,
        doc: "Answer lengths that change with the policy version: LengthDrift(...) (None: one distribution)",
    },
];

/// The scenario field named `name`.
pub fn field(name: &str) -> Option<&'static Field> {
    SCENARIO.iter().find(|f| f.name == name)
}

/// `|mu|` of lognormal lengths: at most 100 (with `sigma <= 10`, every quantile and the mean of
/// the untruncated distribution are finite and > 0).
pub const LENGTHS_MU: Bound = Bound {
    extra: " (the log of the median length in tokens)",
    ..bound("lengths.mu", -100.0, 100.0, "[-100, 100]", "")
};
pub const LENGTHS_SIGMA: Bound = bound("lengths.sigma", 0.0, 10.0, "[0, 10]", "");
/// The longest answer accepted: 2^40 tokens (every sum formed from lengths stays far below the f64
/// limit).
pub const LENGTHS_MAX_TOKENS: Bound = bound("lengths.max_tokens", 1.0, 1_099_511_627_776.0, "[1, 2**40]", " tokens");
pub const LENGTHS_GROUP_CORRELATION: Bound = bound("lengths.group_correlation", 0.0, 1.0, "[0, 1)", "");
/// Each empirical length: 2^-40 to 2^40 tokens.
pub const LENGTHS_VALUES: Bound =
    bound("lengths.values", 1.0 / 1_099_511_627_776.0, 1_099_511_627_776.0, "[2**-40, 2**40]", " tokens");
pub const BATCH_ORDER_SHARE: Bound = bound("pipeline.batch_order.share", 0.0, 1.0, "(0, 1]", "");
// ---- length drift (`Scenario.length_drift`, the `LengthDrift` part)
/// `LengthDrift.rate`: per version (linear, exp) or per unit of ln(1 + version) (log).
pub const LENGTH_DRIFT_RATE: Bound = bound("length_drift.rate", -1.0, 100.0, "[-1, 100]", "");
/// Each scale of a `LengthDrift` table.
pub const LENGTH_DRIFT_SCALE: Bound = bound("length_drift.table", 0.0, 1e6, "(0, 1e6]", "");
/// The cap of drifted lengths (None on the Python side: the length distribution's limit).
pub const LENGTH_DRIFT_MAX_TOKENS: Bound =
    bound("length_drift.max_tokens", 1.0, 1_099_511_627_776.0, "[1, 2**40]", " tokens");
pub const LENGTH_DRIFT_FEEDBACK: Bound = bound("length_drift.feedback", 0.0, 1.0, "[0, 1]", "");
const LENGTH_DRIFT: Part = Part {
    class: "LengthDrift",
    kind: "length_drift",
    of: "length_drift",
    fields: &[
        part_str("kind", &["linear", "log", "exp", "table"], "How the length scale grows with the policy version"),
        part_real(
            "rate",
            LENGTH_DRIFT_RATE,
            Value::Float(0.0),
            "Per version (linear: 1 + rate v; exp: exp(rate v)) or per ln(1 + v) (log: 1 + rate ln(1 + v))",
        ),
        array("table", "", Value::Reals(&[]), "(version, scale) pairs, linear in between (kind table)"),
        part_real(
            "max_tokens",
            LENGTH_DRIFT_MAX_TOKENS,
            Value::None,
            "Cap of the scaled lengths (None: the length distribution's generation limit)",
        ),
        part_real(
            "feedback",
            LENGTH_DRIFT_FEEDBACK,
            Value::Float(0.0),
            "Share of the trained-vs-generated log length gap the next policy's lengths move by (0: none)",
        ),
    ],
    doc: "Answer lengths that drift with the policy version: each answer's tokens scaled by scale(version)",
};

// ---- multi-turn agentic rollouts (`Scenario.agentic`, the `Agentic` part)
/// Largest `Agentic.max_turns`.
pub const MAX_TURNS: u64 = 1 << 20;
/// What a distribution field accepts besides a number.
const DIST_EXTRA: &str = ", or LogNormal(...) / Empirical(...)";
/// A constant tool latency (a distribution's own fields are checked as its part's: `LogNormal` /
/// `Empirical`, the cap in seconds).
pub const AGENTIC_TOOL_LATENCY_S: Bound =
    Bound { extra: DIST_EXTRA, ..bound("agentic.tool_latency_s", 0.0, 1e9, "[0, 1e9]", " seconds") };
/// A constant observation length.
pub const AGENTIC_OBSERVATION_TOKENS: Bound =
    Bound { extra: DIST_EXTRA, ..bound("agentic.observation_tokens", 0.0, 1e9, "[0, 1e9]", " tokens") };
pub const AGENTIC_STOP_PROB: Bound = bound("agentic.stop_prob", 0.0, 1.0, "[0, 1]", "");
/// Each item of `Agentic.turn_scale` (messages name it `agentic.turn_scale[i]`).
pub const AGENTIC_TURN_SCALE: Bound = bound("agentic.turn_scale", 1e-6, 1e6, "[1e-6, 1e6]", "");
/// The scenario's range; the engine also needs it above `prompt_tokens` (and, with
/// `kv_cache_tokens`, at most `kv_cache_tokens - 1`). `None` (no bound) is sent as `INFINITY`.
pub const AGENTIC_MAX_CONTEXT_TOKENS: Bound =
    Bound { extra: ", or None (no bound)", ..bound("agentic.max_context_tokens", 0.0, 1e12, "(0, 1e12]", " tokens") };
pub const AGENTIC_ENV_OVERHEAD_S: Bound = bound("agentic.env_overhead_s", 0.0, 1e9, "[0, 1e9]", " seconds");
pub const AGENTIC_FAILURE_RATE: Bound = bound("agentic.failure_rate", 0.0, 1.0, "[0, 1)", "");

/// A number or a distribution (`LogNormal` / `Empirical`) of `unit`, in `b`'s range.
const fn dist(name: &'static str, b: Bound, default: f64, doc: &'static str) -> Field {
    Field { kind: Kind::Dist, choices: &["lognormal", "empirical"], ..part_real(name, b, Value::Float(default), doc) }
}

/// An optional count of the `Agentic` part in `[1, MAX_COUNT]` (None: unbounded; the wire dict
/// sends 0).
const fn agentic_count(name: &'static str, doc: &'static str) -> Field {
    Field {
        range: Range::Int { lo: 1, hi: MAX_COUNT as u64, extra: ", or None (unbounded)" },
        ..part_int(name, 1, MAX_COUNT as u64, Value::None, doc)
    }
}

/// The `Agentic` part: every field's name, unit, default, range and doc (the Python class
/// `rollsim.Agentic` takes them from here; the engine's `AgenticConfig::validate` checks them).
pub const AGENTIC: Part = Part {
    class: "Agentic",
    kind: "agentic",
    of: "agentic",
    fields: &[
        part_int("max_turns", 1, MAX_TURNS, Value::Int(10), "Turns per trajectory at most (1: a single-turn run)"),
        dist(
            "tool_latency_s",
            AGENTIC_TOOL_LATENCY_S,
            1.0,
            "Seconds one tool call runs: a number, or a distribution (a table of a scenario file)",
        ),
        dist(
            "observation_tokens",
            AGENTIC_OBSERVATION_TOKENS,
            100.0,
            "Tokens a tool call appends to the context: a number, or a distribution (a table of a scenario file)",
        ),
        part_real(
            "stop_prob",
            AGENTIC_STOP_PROB,
            Value::Float(0.0),
            "Probability that a trajectory ends after a turn (before max_turns)",
        ),
        Field {
            range: Range::Real(AGENTIC_TURN_SCALE),
            ..array(
                "turn_scale",
                "",
                Value::Reals(&[]),
                "Turn k decodes a lengths draw times turn_scale[min(k, len - 1)] (empty: every turn as is)",
            )
        },
        part_real(
            "max_context_tokens",
            AGENTIC_MAX_CONTEXT_TOKENS,
            Value::None,
            "Prompt + generated + observed tokens at most, > prompt_tokens: the trajectory ends there (None: no bound)",
        ),
        part_str("kv_policy", &["keep", "drop", "hold"], "What a request does with its slot and KV during a tool call"),
        flag_field("sticky", true, "A returning request goes back to its previous instance when that has an idle slot"),
        agentic_count("env_slots", "Concurrent environments: calls queue FIFO for a free one (None: unbounded)"),
        agentic_count(
            "max_trajectories",
            "Trajectories in flight at most, >= group_size: no new group starts beyond it (None: unbounded)",
        ),
        part_real(
            "env_overhead_s",
            AGENTIC_ENV_OVERHEAD_S,
            Value::Float(0.0),
            "Seconds added to every call (sandbox start, request round trip)",
        ),
        part_real(
            "failure_rate",
            AGENTIC_FAILURE_RATE,
            Value::Float(0.0),
            "Probability that a call fails (known when it returns)",
        ),
        part_str("on_failure", &["drop", "retry"], "A failed call drops its trajectory's group, or is submitted again"),
        flag_field(
            "switch_version_at_turn",
            true,
            "A returning request's next turn uses the rollout's current weights (False: the version it had)",
        ),
    ],
    doc: "Multi-turn agentic trajectories: turns of decoding separated by tool calls to a pool of environments",
};

/// A bool of a part (always sent).
const fn flag_field(name: &'static str, default: bool, doc: &'static str) -> Field {
    Field { omit_at_default: false, ..flag(name, default, doc) }
}

/// Largest `OffPolicy.k`.
pub const MAX_K: u64 = 1_000_000;

const fn part_real(name: &'static str, b: Bound, default: Value, doc: &'static str) -> Field {
    Field {
        name,
        kind: Kind::Float,
        unit: unit_of(b.unit),
        default,
        range: Range::Real(b),
        choices: &[],
        omit_at_default: false,
        doc,
    }
}

const fn part_int(name: &'static str, lo: u64, hi: u64, default: Value, doc: &'static str) -> Field {
    Field {
        name,
        kind: Kind::Int,
        unit: "",
        default,
        range: Range::Int { lo, hi, extra: "" },
        choices: &[],
        omit_at_default: false,
        doc,
    }
}

const fn part_str(name: &'static str, choices: &'static [&'static str], doc: &'static str) -> Field {
    Field {
        name,
        kind: Kind::Str,
        unit: "",
        default: Value::Str(choices[0]),
        range: Range::Any,
        choices,
        omit_at_default: false,
        doc,
    }
}

const fn array(name: &'static str, unit: &'static str, default: Value, doc: &'static str) -> Field {
    Field { name, kind: Kind::Array, unit, default, range: Range::Any, choices: &[], omit_at_default: false, doc }
}

/// One part of a scenario (a length distribution or a pipeline): its class, the scenario field it
/// is the value of and its fields, whose messages are named `<field>.<name>` (`lengths.mu`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Part {
    /// The class of the Python API (`LogNormal`).
    pub class: &'static str,
    /// `kind` of the wire dict (`lognormal`); the same for `Synchronous`, `OneStepAsync` and
    /// `OffPolicy` (`off_policy`, with their fixed `k`).
    pub kind: &'static str,
    /// The scenario field (or part field) it is the value of: `lengths`, `pipeline`,
    /// `pipeline.batch_order`.
    pub of: &'static str,
    pub fields: &'static [Field],
    pub doc: &'static str,
}

const OVER_SAMPLING_FIELD: Field = part_real(
    "over_sampling",
    OVER_SAMPLING,
    Value::None,
    "Extra groups submitted per batch, as a fraction of a batch (math.inf: every slot busy; None: one batch)",
);
const KEEP_PARTIAL: Field = Field {
    omit_at_default: false,
    ..flag("keep_partial", false, "Stopped answers are resumed in the next batch instead of aborted")
};
const U32_MAX: u64 = u32::MAX as u64;

/// Every part, in the order of the Python API's classes; each part's fields in the order of its
/// dataclass fields.
pub const PARTS: &[Part] = &[
    Part {
        class: "LogNormal",
        kind: "lognormal",
        of: "lengths",
        fields: &[
            part_real("mu", LENGTHS_MU, Value::Float(7.6), "Mean of the log-length (the log of the median length)"),
            part_real("sigma", LENGTHS_SIGMA, Value::Float(1.0), "Standard deviation of the log-length"),
            part_real(
                "max_tokens",
                LENGTHS_MAX_TOKENS,
                Value::Float(16384.0),
                "Truncation of the answers (the generation limit)",
            ),
            part_real(
                "group_correlation",
                LENGTHS_GROUP_CORRELATION,
                Value::Float(0.0),
                "Log-length correlation of two answers of one prompt",
            ),
        ],
        doc: "Lognormal answer lengths, min(exp(N(mu, sigma^2)), max_tokens)",
    },
    Part {
        class: "Empirical",
        kind: "empirical",
        of: "lengths",
        fields: &[
            Field {
                range: Range::Real(LENGTHS_VALUES),
                ..array("values", "tokens", Value::Required, "Lengths drawn from with replacement (required)")
            },
            array("weights", "", Value::None, "Counts of the values, >= 0, summing to at most 2**64 (None: equal)"),
            part_real(
                "max_tokens",
                LENGTHS_MAX_TOKENS,
                Value::None,
                "The generation limit of the data (None: the longest value)",
            ),
            Field {
                kind: Kind::Str,
                ..array("name", "", Value::None, "Label of the data set in reports (None: no label)")
            },
            array("groups", "", Value::None, "One group (prompt) key per value: a group draws one prompt's values"),
        ],
        doc: "Answer lengths drawn from measured data",
    },
    Part {
        class: "Synchronous",
        kind: "off_policy",
        of: "pipeline",
        fields: &[OVER_SAMPLING_FIELD, KEEP_PARTIAL],
        doc: "Generate a batch with the current weights, train it, update (OffPolicy(0))",
    },
    Part {
        class: "OneStepAsync",
        kind: "off_policy",
        of: "pipeline",
        fields: &[OVER_SAMPLING_FIELD, KEEP_PARTIAL],
        doc: "Generate batch i+1 while batch i trains (OffPolicy(1))",
    },
    Part {
        class: "OffPolicy",
        kind: "off_policy",
        of: "pipeline",
        fields: &[
            part_int("k", 0, MAX_K, Value::Int(1), "Batches generation may run ahead of training"),
            OVER_SAMPLING_FIELD,
            KEEP_PARTIAL,
        ],
        doc: "Generation up to k batches ahead of training",
    },
    Part {
        class: "FullyAsync",
        kind: "fully_async",
        of: "pipeline",
        fields: &[
            part_int("max_staleness", 0, U32_MAX, Value::None, "Groups staler than this are dropped (None: no cap)"),
            part_str("on_stale", &["drop", "requeue"], "What the staleness cap does to a group"),
            part_int(
                "admission_eta",
                0,
                U32_MAX,
                Value::None,
                "AReaL admission control: new groups wait beyond eta versions ahead (None: off)",
            ),
            part_int(
                "max_lag_samples",
                1,
                (1 << 63) - 1,
                Value::None,
                "Samples started and neither trained nor dropped, at most (None: no bound)",
            ),
            part_int(
                "max_ready_groups",
                1,
                U32_MAX,
                Value::None,
                "Finished groups waiting, at most: the oldest are dropped (None: no bound)",
            ),
            Field {
                kind: Kind::Part,
                ..part_str(
                    "batch_order",
                    &["fifo", "oldest_first"],
                    "Which finished groups a batch takes: fifo, oldest_first or LengthBalanced(...)",
                )
            },
            part_str(
                "on_update",
                &["continue", "abort_drop", "abort_resubmit", "wait", "keep_recompute", "keep_stale"],
                "What in-flight requests do when the weights change",
            ),
            part_str("lag_release", &["take", "sync"], "When trained samples stop counting against max_lag_samples"),
        ],
        doc: "Streaming: a freed slot starts new work at once; the trainer trains whenever a batch is ready",
    },
    Part {
        class: "LengthBalanced",
        kind: "length_balanced",
        of: "pipeline.batch_order",
        fields: &[
            array(
                "edges",
                "tokens",
                Value::Reals(&[1000.0, 8000.0]),
                "Bucket boundaries, strictly increasing (a group is bucketed by its longest answer)",
            ),
            array("quotas", "", Value::None, "Minimum groups per batch of each bucket (None: share of the expected)"),
            part_real(
                "share",
                BATCH_ORDER_SHARE,
                Value::Float(0.9),
                "Share of the expected bucket shares, for default quotas",
            ),
        ],
        doc: "Length-balanced batches: a quota of groups from each length bucket",
    },
    TRAIN_RANKS,
    LENGTH_DRIFT,
    AGENTIC,
];

/// The cap of a tool latency drawn from a distribution: 1 to 2^40 seconds (the lengths' cap, in
/// seconds).
pub const TOOL_LATENCY_MAX_S: Bound =
    bound("agentic.tool_latency_s.max_s", 1.0, 1_099_511_627_776.0, "[1, 2**40]", " seconds");
/// Each empirical tool latency: 2^-40 to 2^40 seconds.
pub const TOOL_LATENCY_VALUES: Bound = bound(
    "agentic.tool_latency_s.values",
    1.0 / 1_099_511_627_776.0,
    1_099_511_627_776.0,
    "[2**-40, 2**40]",
    " seconds",
);

/// The tables of a tool latency in seconds (`agentic.tool_latency_s` of a scenario file): the
/// length distributions in seconds, with their cap named `max_s` (the Python API's `LogNormal` /
/// `Empirical`, whose `max_tokens` is then seconds) and without the group keys (a call's latency
/// does not depend on its prompt). The observation lengths are tokens: they are a `lengths` table.
pub const SECONDS_PARTS: &[Part] = &[
    Part {
        class: "LogNormal",
        kind: "lognormal",
        of: "agentic.tool_latency_s",
        fields: &[
            part_real(
                "mu",
                Bound { field: "agentic.tool_latency_s.mu", extra: " (the log of the median seconds)", ..LENGTHS_MU },
                Value::Required,
                "Mean of the log-latency (the log of the median seconds)",
            ),
            part_real(
                "sigma",
                Bound { field: "agentic.tool_latency_s.sigma", ..LENGTHS_SIGMA },
                Value::Float(1.0),
                "Standard deviation of the log-latency",
            ),
            part_real("max_s", TOOL_LATENCY_MAX_S, Value::Required, "Cap of one call's latency"),
        ],
        doc: "Lognormal tool latencies, min(exp(N(mu, sigma^2)), max_s) seconds",
    },
    Part {
        class: "Empirical",
        kind: "empirical",
        of: "agentic.tool_latency_s",
        fields: &[
            Field {
                range: Range::Real(TOOL_LATENCY_VALUES),
                ..array("values", "seconds", Value::Required, "Latencies drawn from with replacement (required)")
            },
            array("weights", "", Value::None, "Counts of the values, >= 0, summing to at most 2**64 (None: equal)"),
            part_real("max_s", TOOL_LATENCY_MAX_S, Value::None, "The cap of the data (None: the longest value)"),
            Field { kind: Kind::Str, ..array("name", "", Value::None, "Label of the data (None: no label)") },
        ],
        doc: "Tool latencies drawn from measured data",
    },
];

/// The part of class `class` (`"LogNormal"`).
pub fn part(class: &str) -> Option<&'static Part> {
    PARTS.iter().find(|p| p.class == class)
}

/// The field `name` of the part of class `class`.
pub fn part_field(class: &str, name: &str) -> Option<&'static Field> {
    part(class).and_then(|p| p.fields.iter().find(|f| f.name == name))
}

/// The type of a result value or column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    F64,
    U64,
    I64,
    U32,
    Bool,
}

impl Dtype {
    /// numpy's name of the type (`"float64"`, `"uint32"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::F64 => "float64",
            Dtype::U64 => "uint64",
            Dtype::I64 => "int64",
            Dtype::U32 => "uint32",
            Dtype::Bool => "bool",
        }
    }
    /// Bytes per value.
    pub const fn size(self) -> usize {
        match self {
            Dtype::F64 | Dtype::U64 | Dtype::I64 => 8,
            Dtype::U32 => 4,
            Dtype::Bool => 1,
        }
    }
}

/// One summary value or one column of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub dtype: Dtype,
    pub unit: &'static str,
    pub doc: &'static str,
}

const fn col(name: &'static str, dtype: Dtype, unit: &'static str, doc: &'static str) -> Column {
    Column { name, dtype, unit, doc }
}

use Dtype::{Bool, F64, I64, U32, U64};

/// The run's summary ([`crate::Summary`]), in the order the engine hands it over.
pub const SUMMARY: &[Column] = &[
    col("steps", U64, "", "Training steps completed by the end of the run"),
    col("steps_started", U64, "", "Training steps started (the last may still be running)"),
    col("end_s", F64, "seconds", "Simulated time covered (the time of the last event processed)"),
    col("rollout_utilization", F64, "", "Share of slot time with a request: slot_busy_s / (rollout_slots * end_s)"),
    col(
        "slot_busy_s",
        F64,
        "slot-seconds",
        "Time slots spent with a request (decoding, prefilling, paused or waiting for KV)",
    ),
    col("slot_idle_s", F64, "slot-seconds", "Time slots spent without work"),
    col("trainer_busy_s", F64, "seconds", "Time the trainer spent in steps"),
    col("trainer_idle_s", F64, "seconds", "Time the trainer spent waiting for a batch"),
    col("samples_started", U64, "", "Samples started"),
    col("samples_finished", U64, "", "Samples whose answer finished"),
    col("samples_trained", U64, "", "Samples consumed by a training step"),
    col(
        "samples_dropped",
        U64,
        "",
        "Samples not trained and discarded: stale, aborted, or pushed out of a bounded queue",
    ),
    col("samples_aborted", U64, "", "Of the dropped: aborted in flight"),
    col("groups_requeued", U64, "", "Groups sent back for regeneration (on_stale='requeue')"),
    col(
        "staleness_at_finish_mean",
        F64,
        "versions",
        "Mean staleness measured against the rollout's version when the sample finished",
    ),
    col("staleness_group_mean", F64, "versions", "Mean over trained groups of the staleness of the oldest member"),
    col("tokens_prefilled", F64, "tokens", "Prefill tokens, all of them (prompts and recomputation)"),
    col("tokens_recomputed", F64, "tokens", "Prefill tokens caused by weight updates or preemption"),
    col("preemptions", U64, "", "Requests preempted for KV capacity"),
    col("kv_wait_s", F64, "slot-seconds", "Time requests spent on a slot waiting for KV (within slot_busy_s)"),
    col("stalled", Bool, "", "Nothing could happen any more before the horizon: the run ends at the stall"),
    col("samples_ready", U64, "", "Finished, neither trained nor dropped at the end"),
    col("samples_in_flight", U64, "", "Started and not finished at the end"),
    col("drop_fraction", F64, "", "samples_dropped / (samples_trained + samples_dropped)"),
    col("staleness_mean", F64, "versions", "Mean staleness of the trained samples (NaN if none)"),
    col("staleness_max", U64, "versions", "Largest staleness of a trained sample"),
    col("staleness_mean_short", F64, "versions", "Mean staleness of trained answers shorter than 1000 tokens"),
    col("staleness_mean_long", F64, "versions", "Mean staleness of trained answers longer than 8000 tokens"),
    col("samples_trained_short", U64, "", "Trained answers shorter than 1000 tokens"),
    col("samples_trained_long", U64, "", "Trained answers longer than 8000 tokens"),
    col("tokens_generated", F64, "tokens", "Answer tokens decoded"),
    col("tokens_trained", F64, "tokens", "Answer tokens of the trained samples"),
    col("tokens_wasted", F64, "tokens", "Answer tokens decoded and thrown away (dropped or aborted)"),
    col("tokens_pending", F64, "tokens", "Answer tokens decoded, neither trained nor wasted at the end"),
    col("events", U64, "", "Events processed"),
    col(
        "ready_queue_growth_per_step",
        F64,
        "samples/step",
        "Least-squares slope of the ready queue over the second half of the steps",
    ),
    col(
        "generation_outruns_training",
        Bool,
        "",
        "The ready queue grows without bound (an unbounded streaming pipeline)",
    ),
    col(
        "throughput_ratio",
        F64,
        "",
        "Rollout throughput over training throughput, samples per second, from the mean length",
    ),
];

/// The agentic part of a run's summary (`Scenario::agentic`): keys of `Result.summary` with
/// `Scenario.agentic`, and columns of `simulate_many` / sweep frames after [`SUMMARY`]'s (there 0 for
/// counts and NaN for the others when a scenario is not agentic).
pub const AGENTIC_SUMMARY: &[Column] = &[
    col("turns", U64, "", "Agentic: turns decoded to their end, of every trajectory"),
    col("tool_calls", U64, "", "Agentic: tool calls submitted (retries included)"),
    col("tool_retries", U64, "", "Agentic: failed tool calls submitted again (on_failure = retry)"),
    col("trajectories_truncated", U64, "", "Agentic: trajectories ended at max_context_tokens"),
    col("trajectories_failed", U64, "", "Agentic: trajectories ended by a failed tool call (on_failure = drop)"),
    col("tokens_observed", F64, "tokens", "Agentic: observation tokens appended by tool calls"),
    col(
        "tokens_prefilled_turns",
        F64,
        "tokens",
        "Agentic: prefill tokens of later turns (observations, or whole contexts)",
    ),
    col("env_busy_s", F64, "environment-seconds", "Agentic: environments busy with calls within the run"),
    col("env_wait_s", F64, "seconds", "Agentic: time calls queued for a free environment"),
    col("env_utilization", F64, "", "Agentic: env_busy_s / (env_slots * end_s); NaN when env_slots is unbounded"),
    col("env_mean_busy", F64, "", "Agentic: mean tool calls running (env_busy_s / end_s)"),
    col("gpu_hold_s", F64, "slot-seconds", "Agentic: slots held idle during tool calls (kv_policy = hold)"),
    col(
        "gpu_prefill_s",
        F64,
        "slot-seconds",
        "Agentic: slot time prefilling before end_s (tokens_prefilled / prefill_tokens_per_s, less the prefill still ahead at end_s)",
    ),
    col(
        "gpu_decode_s",
        F64,
        "slot-seconds",
        "Agentic: the rest of slot_busy_s (KV waiting excluded): decoding (and stalled in a rollout pause, or with \
         prefill_mode = shared queued behind other prompts)",
    ),
    col(
        "kv_evictions",
        U64,
        "",
        "Agentic: cached KV of requests in tool calls evicted for running ones (kv_policy = keep, kv_cache_tokens)",
    ),
];

/// The learning sums of a run ([`crate::record::LearnSums`]): columns of `simulate_many` / sweep
/// frames after [`AGENTIC_SUMMARY`]'s, from which `rollsim.learning` derives clip, truncation and
/// ESS fractions and the length gap of summary-mode runs (NaN for a failed run).
pub const LEARNING_SUMMARY: &[Column] = &[
    col("tokens_stale_0", F64, "tokens", "Learning: trained tokens at staleness 0 (each span at its own)"),
    col("tokens_stale_1", F64, "tokens", "Learning: trained tokens at staleness 1 (each span at its own)"),
    col("tokens_stale_2", F64, "tokens", "Learning: trained tokens at staleness 2 (each span at its own)"),
    col("tokens_stale_3", F64, "tokens", "Learning: trained tokens at staleness 3 (each span at its own)"),
    col("tokens_stale_4", F64, "tokens", "Learning: trained tokens at staleness 4 (each span at its own)"),
    col("tokens_stale_5", F64, "tokens", "Learning: trained tokens at staleness 5 (each span at its own)"),
    col("tokens_stale_6", F64, "tokens", "Learning: trained tokens at staleness 6 (each span at its own)"),
    col("tokens_stale_7", F64, "tokens", "Learning: trained tokens at staleness 7 (each span at its own)"),
    col("tokens_stale_8", F64, "tokens", "Learning: trained tokens at staleness 8 (each span at its own)"),
    col("tokens_stale_9", F64, "tokens", "Learning: trained tokens at staleness 9 (each span at its own)"),
    col("tokens_stale_10", F64, "tokens", "Learning: trained tokens at staleness 10 (each span at its own)"),
    col("tokens_stale_11", F64, "tokens", "Learning: trained tokens at staleness 11 (each span at its own)"),
    col("tokens_stale_12", F64, "tokens", "Learning: trained tokens at staleness 12 (each span at its own)"),
    col("tokens_stale_13", F64, "tokens", "Learning: trained tokens at staleness 13 (each span at its own)"),
    col("tokens_stale_14", F64, "tokens", "Learning: trained tokens at staleness 14 (each span at its own)"),
    col("tokens_stale_15", F64, "tokens", "Learning: trained tokens at staleness 15 (each span at its own)"),
    col(
        "tokens_stale_16_plus",
        F64,
        "tokens",
        "Learning: trained tokens at staleness 16 or more (the learning statistics are NaN when > 0)",
    ),
    col("tokens_drawn", F64, "tokens", "Learning: drawn lengths of every sample started, summed"),
];

/// The engine's columns of the samples frame ([`crate::SampleColumns`]), one row per sample started.
pub const SAMPLES: &[Column] = &[
    col("length_tokens", F64, "tokens", "Answer length drawn"),
    col("group_id", U32, "", "Group (prompt) of the sample"),
    col("version_end", U32, "", "Policy version that produced the last token so far"),
    col("version_finish", U32, "", "Rollout's policy version when the sample finished (null if it did not)"),
    col("n_versions", U32, "", "Token spans with distinct policy versions"),
    col("aborted", Bool, "", "Aborted in flight"),
    col("start_s", F64, "seconds", "Start of the request"),
    col("finish_s", F64, "seconds", "End of the answer (the abort time if aborted; NaN while in flight)"),
    col("version_start", U32, "", "Policy version at the start"),
    col("trained_step", I64, "", "Training step that consumed the sample (-1: none)"),
    col("dropped", Bool, "", "Discarded without training"),
    col("slot", U32, "", "Slot that generated the sample"),
];

/// The samples frame's columns with `Scenario.agentic` (after [`SAMPLES`]'s and the frame's own;
/// absent without it): [`crate::pipeline::agentic::AgenticColumns`].
pub const AGENTIC_SAMPLES: &[Column] = &[
    col("turns", U32, "", "Agentic: turns decoded to their end"),
    col("tokens_observed", F64, "tokens", "Agentic: observation tokens its tool calls appended to the context"),
    col("tool_s", F64, "seconds", "Agentic: time in tool calls, queueing for an environment included"),
    col("env_wait_s", F64, "seconds", "Agentic: time its tool calls queued for a free environment"),
    col(
        "prefill_tokens",
        F64,
        "tokens",
        "Agentic: prefill tokens of its later turns (observations, or whole contexts whose KV was dropped)",
    ),
    col("tool_retries", U32, "", "Agentic: failed tool calls called again (on_failure = retry)"),
    col("truncated", Bool, "", "Agentic: ended at max_context_tokens"),
    col("failed", Bool, "", "Agentic: ended by a failed tool call (on_failure = drop)"),
];

/// The turns frame of an agentic run (`Result.turns`, [`crate::pipeline::agentic::TurnColumns`]):
/// one row per turn decoded to its end, in the order turns end.
pub const TURNS: &[Column] = &[
    col("sample_id", U32, "", "Trajectory (row of the samples frame)"),
    col("turn", U32, "", "Turn of the trajectory, 0 for the first"),
    col("slot", U32, "", "Slot the turn ran on"),
    col("start_s", F64, "seconds", "When the turn was placed on its slot (its prefill, then decoding)"),
    col("end_s", F64, "seconds", "When the turn ended"),
    col("version", U32, "", "Policy version of its tokens (of its last span)"),
    col(
        "call_end_s",
        F64,
        "seconds",
        "When the tool call after it returns (null: the trajectory ended with this turn)",
    ),
];

/// The engine's columns of the segments frame ([`crate::record::SegmentColumns`]), one row per
/// token span of one policy version within one answer.
pub const SEGMENTS: &[Column] = &[
    col("sample_id", U32, "", "Sample (row of the samples frame)"),
    col("version", U32, "", "Policy version of the span"),
    col("first_token", F64, "tokens", "First token of the span"),
    col("last_token", F64, "tokens", "End of the span (exclusive)"),
];

/// The engine's columns of the steps frame ([`crate::StepColumns`]), one row per training step
/// started.
pub const STEPS: &[Column] = &[
    col("tokens_wasted", F64, "tokens", "Since the previous step started: tokens generated and thrown away"),
    col(
        "tokens_recomputed",
        F64,
        "tokens",
        "Since the previous step started: tokens prefilled again after a weight update",
    ),
    col("slot_idle_s", F64, "slot-seconds", "Since the previous step started: slot time with no work"),
    col("start_s", F64, "seconds", "Start of the step"),
    col("end_s", F64, "seconds", "End of the step"),
    col("staleness_mean", F64, "versions", "Mean staleness of the batch"),
    col("staleness_max", U32, "versions", "Largest staleness in the batch"),
    col("wait_s", F64, "seconds", "Trainer idle time before the step"),
    col("samples", U32, "", "Samples in the batch"),
    col("ready_after", U32, "samples", "Finished samples still waiting after the batch was taken"),
    col("tokens", F64, "tokens", "Answer tokens of the batch"),
];

/// Every frame: name and engine columns.
pub const FRAMES: &[(&str, &[Column])] = &[("steps", STEPS), ("samples", SAMPLES), ("segments", SEGMENTS)];

// ---- the per-rank training model (`Scenario.train`, class `TrainRanks`): one block ----------------

/// `Scenario.train`: the per-rank training model (None: a step is `train_step_s + train_s_per_token
/// x tokens`).
const TRAIN_FIELD: Field = Field {
    name: "train",
    kind: Kind::Part,
    unit: "",
    default: Value::None,
    range: Range::Any,
    choices: &["train_ranks"],
    omit_at_default: true,
    doc: "Per-rank training: the step waits for the slowest data-parallel rank, TrainRanks(...) (None: off)",
};

/// How a batch's samples reach the data-parallel ranks (`TrainRanks.dispatch`), in the order of
/// [`crate::pipeline::trainer::Dispatch`].
pub const DISPATCHES: &[&str] = &["contiguous", "round_robin", "balanced", "balanced_minibatch", "lpt", "packed"];
/// Largest `TrainRanks.dp_ranks`.
pub const MAX_RANKS: u64 = 1 << 20;
/// Seconds per token of a rank's sequences.
pub const TRAIN_RANK_S_PER_TOKEN: Bound = bound("train.s_per_token", 0.0, 1e3, "[0, 1e3]", " seconds/token");
/// Seconds per squared token of each sequence (attention).
pub const TRAIN_RANK_S_PER_TOKEN_SQ: Bound = bound("train.s_per_token_sq", 0.0, 1.0, "[0, 1]", " seconds/token^2");
/// Fixed seconds per mini-batch (optimizer step, exposed collectives).
pub const TRAIN_RANK_FIXED_S: Bound = bound("train.fixed_s", 0.0, 1e9, "[0, 1e9]", " seconds");
/// Micro-batch token budget of `dispatch="packed"`.
pub const TRAIN_RANK_MAX_TOKENS: Bound = bound("train.max_tokens_per_gpu", 1.0, 1e12, "[1, 1e12]", " tokens");

/// The `TrainRanks` part: every field's name, unit, default, range and doc.
pub const TRAIN_RANKS: Part = Part {
    class: "TrainRanks",
    kind: "train_ranks",
    of: "train",
    fields: &[
        part_int("dp_ranks", 1, MAX_RANKS, Value::Int(1), "Data-parallel ranks the batch is split over"),
        part_str("dispatch", DISPATCHES, "How the batch's samples reach the ranks"),
        part_real(
            "s_per_token",
            TRAIN_RANK_S_PER_TOKEN,
            Value::Float(0.0),
            "Seconds one rank spends per token of a sequence (prompt + answer)",
        ),
        part_real(
            "s_per_token_sq",
            TRAIN_RANK_S_PER_TOKEN_SQ,
            Value::Float(0.0),
            "Seconds one rank spends per squared token of a sequence (causal attention)",
        ),
        part_real(
            "fixed_s",
            TRAIN_RANK_FIXED_S,
            Value::Float(0.0),
            "Fixed seconds per mini-batch (optimizer step, exposed collectives)",
        ),
        part_int(
            "mini_batches",
            1,
            MAX_COUNT as u64,
            Value::Int(1),
            "Optimizer steps per training step; each waits for the slowest rank",
        ),
        part_real(
            "max_tokens_per_gpu",
            TRAIN_RANK_MAX_TOKENS,
            Value::None,
            "Micro-batch token budget of dispatch='packed' (None: any other dispatch)",
        ),
    ],
    doc: "Per-rank training: each mini-batch takes as long as its slowest data-parallel rank",
};

/// The steps frame's columns with `Scenario.train` (after [`STEPS`]'s; absent without it).
pub const RANK_STEPS: &[Column] = &[
    col(
        "rank_slowest_s",
        F64,
        "seconds",
        "Per-rank training: the slowest rank's seconds, summed over the step's mini-batches",
    ),
    col("rank_mean_s", F64, "seconds", "Per-rank training: the mean rank's seconds, summed over mini-batches"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_units_have_no_leading_space() {
        let mut names: Vec<&str> = SCENARIO.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SCENARIO.len());
        for f in SCENARIO {
            assert!(!f.unit.starts_with(' '), "{}", f.name);
            if let Range::Real(b) = f.range {
                assert_eq!(b.field, f.name);
            }
        }
        for (_, cols) in FRAMES.iter().chain(
            [
                ("summary", SUMMARY),
                ("agentic", AGENTIC_SUMMARY),
                ("agentic_samples", AGENTIC_SAMPLES),
                ("turns", TURNS),
                ("ranks", RANK_STEPS),
                ("learning", LEARNING_SUMMARY),
            ]
            .iter(),
        ) {
            let mut n: Vec<&str> = cols.iter().map(|c| c.name).collect();
            n.sort_unstable();
            n.dedup();
            assert_eq!(n.len(), cols.len());
        }
    }

    #[test]
    fn parts_name_their_bounds_and_defaults_are_in_range() {
        for p in PARTS.iter().chain(SECONDS_PARTS) {
            for f in p.fields {
                if let Range::Real(b) = f.range {
                    assert_eq!(b.field, format!("{}.{}", p.of, f.name));
                }
                match (f.default, f.range) {
                    (Value::Float(v), Range::Real(b)) => assert!(b.contains(v), "{}", f.name),
                    (Value::Int(v), Range::Int { lo, hi, .. }) => assert!((lo..=hi).contains(&v), "{}", f.name),
                    (Value::Str(s), _) => assert!(f.choices.contains(&s), "{}", f.name),
                    _ => {}
                }
            }
        }
        assert!(!LENGTHS_GROUP_CORRELATION.contains(1.0) && LENGTHS_GROUP_CORRELATION.contains(0.0));
        assert!(!BATCH_ORDER_SHARE.contains(0.0) && BATCH_ORDER_SHARE.contains(1.0));
        assert!(!BATCH_ORDER_SHARE.contains(f64::NAN));
        // a tool latency in seconds becomes a length distribution: the same ranges
        assert_eq!((TOOL_LATENCY_MAX_S.lo, TOOL_LATENCY_MAX_S.hi), (LENGTHS_MAX_TOKENS.lo, LENGTHS_MAX_TOKENS.hi));
        assert_eq!((TOOL_LATENCY_VALUES.lo, TOOL_LATENCY_VALUES.hi), (LENGTHS_VALUES.lo, LENGTHS_VALUES.hi));
    }

    #[test]
    fn defaults_are_in_range() {
        for f in SCENARIO {
            match (f.default, f.range) {
                (Value::Float(v), Range::Real(b)) => {
                    assert!(b.check(v).is_ok() || (v.is_infinite() && !b.extra.is_empty()), "{}", f.name)
                }
                (Value::Int(v), Range::Int { lo, hi, .. }) => assert!((lo..=hi).contains(&v), "{}", f.name),
                (Value::Str(s), _) => assert!(f.choices.contains(&s), "{}", f.name),
                _ => {}
            }
        }
    }
}
