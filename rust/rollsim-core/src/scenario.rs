//! What to simulate.

use crate::error::{Error, Result};
use crate::lengths::{LengthDrift, Lengths};
pub use crate::pipeline::agentic::AgenticConfig;

/// How generation and training are interleaved.
#[derive(Debug, Clone, PartialEq)]
pub enum Pipeline {
    /// Batch pipelines. `k = 0` is synchronous (generate a batch, train it, repeat); `k = 1` is
    /// one-step off-policy (batch i+1 is generated while batch i trains, with the weights from
    /// before training batch i); `k > 1` lets generation run up to `k` batches ahead of training.
    /// A batch always uses the newest policy version available when its generation starts.
    OffPolicy { k: u32, partial: PartialRollout },
    /// Streaming: a freed slot immediately starts new work with the newest version; the trainer
    /// takes `batch_size` finished samples (whole groups) whenever it is idle.
    FullyAsync(Streaming),
}

impl Pipeline {
    /// The chapter's fully asynchronous pipeline with an optional drop-at-consumption cap.
    pub fn fully_async(max_staleness: Option<u32>) -> Self {
        Pipeline::FullyAsync(Streaming { max_staleness, ..Streaming::default() })
    }
    /// A batch pipeline without over-sampling.
    pub fn off_policy(k: u32) -> Self {
        Pipeline::OffPolicy { k, partial: PartialRollout::default() }
    }
}

/// Over-sampling and partial rollout in batch pipelines (verl `over_sample_rate`, slime
/// `--over-sampling-batch-size` and `--partial-rollout`, APRIL, Kimi k1.5).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PartialRollout {
    /// Extra prompts submitted per batch, as a fraction of the batch (`None`: no over-sampling,
    /// exactly `batch_size` answers; `Some(f64::INFINITY)`: keep every slot busy until the batch
    /// is full). When `batch_size` answers have finished, the rest is stopped.
    pub over_sampling: Option<f64>,
    /// Stopped answers are kept and resumed in the next batch with the new weights (re-prefill of
    /// prompt + partial answer); otherwise they are aborted and their tokens wasted.
    pub keep_partial: bool,
}

/// What a staleness cap does with a sample that is too stale when it would be consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnStale {
    /// Drop it (the chapter, PRIME-RL, NeMo-RL eviction).
    #[default]
    Drop,
    /// Drop it and regenerate the same prompt first (tinker-style re-queue).
    Requeue,
}

/// Which ready groups a training batch takes.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum BatchOrder {
    /// First finished, first trained (the chapter).
    #[default]
    Fifo,
    /// Oldest policy version first (AReaL), then finish order.
    OldestFirst,
    /// Each length bucket contributes at least its quota: buckets split at `edges` (tokens, by the
    /// group's longest answer), `quotas[b]` groups from bucket `b` per batch (summing to at most the
    /// batch); the trainer waits until every bucket has its quota, and fills the rest of the batch
    /// with the oldest finished groups of any bucket.
    LengthBalanced { edges: Vec<f64>, quotas: Vec<u32> },
}

/// What happens to in-flight requests when the rollout's weights change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnUpdate {
    /// They keep generating with their start version (the chapter).
    #[default]
    Continue,
    /// They are aborted and their groups dropped (vLLM `pause_generation(mode="abort")`).
    AbortDrop,
    /// They are aborted and resubmitted as prompt + partial answer (AReaL): one prefill of the
    /// context so far, then decoding goes on with the new version.
    AbortResubmit,
    /// New requests wait until every in-flight one has finished; then the weights change
    /// (vLLM `mode="wait"`): the pool drains.
    Wait,
    /// Frozen and resumed with the new weights, KV recomputed (vLLM `mode="keep",
    /// clear_cache=True`, SGLang `retract`): one prefill of the context so far.
    KeepRecompute,
    /// Resumed at once with the new weights on the old KV (vLLM `keep, clear_cache=False`, SGLang
    /// `in_place`, PipelineRL): no cost, tokens mix versions.
    KeepStale,
}

/// When a trained sample stops counting against `max_lag_samples`, so that a new one may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LagRelease {
    /// When the trainer takes its batch: generation resumes at once, with the weights the rollout
    /// has, while the step trains (with a bound of one batch every batch after the first has
    /// staleness 1; verl-project/verl#4449 read verl's rollouter this way, but its code resets the
    /// count at a parameter sync: `Sync`).
    #[default]
    Take,
    /// Once the step that trains it has ended and the rollout has loaded the new weights: with a
    /// bound of one batch, generation and training alternate and every sample has staleness 0
    /// (verl's fully async rollouter: `reset_staleness` after the weights are loaded,
    /// `verl/experimental/fully_async_policy/fully_async_rollouter.py`).
    Sync,
}

/// Which version a staleness cap (`Streaming::max_staleness`) is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StalenessCheck {
    /// The version that started the sample (the oldest member of its group): AReaL's "head"
    /// offpolicyness, and the check miles adopted in radixark/miles#2296.
    #[default]
    Start,
    /// The rollout's version when the sample was emitted (finished): lets through groups started
    /// up to one more version back (what miles checked before radixark/miles#2296).
    Finish,
}

/// Options of the streaming (fully asynchronous) pipeline.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Streaming {
    /// Staleness cap checked when a group would be consumed (`None`: no cap).
    pub max_staleness: Option<u32>,
    pub on_stale: OnStale,
    /// AReaL's admission control with `eta = max_head_offpolicyness`: start a new group only
    /// while `accepted + in progress + group_size <= (eta + version + 1) * batch_size` (samples).
    pub admission_eta: Option<u32>,
    /// PipelineRL-style bound: start a new group only while the samples started and neither trained
    /// nor dropped, plus the group, stay within `max_lag_samples`.
    pub max_lag_samples: Option<u64>,
    /// When trained samples free their places under `max_lag_samples` (needs it for `Sync`).
    pub lag_release: LagRelease,
    /// Bounded ready queue: on overflow the oldest finished groups are dropped.
    pub max_ready_groups: Option<u32>,
    pub batch_order: BatchOrder,
    pub on_update: OnUpdate,
}

/// How decode speed depends on the batch: the pool is `rollout_slots / slots_per_instance`
/// inference instances; a sequence on an instance running `n` sequences decodes at
/// `decode_tokens_per_s / (1 + slowdown_per_seq * (n - 1))` tokens/s (a decode step costs a base
/// latency plus a per-sequence cost: memory-bound decoding), or at `throughput(n) / n` with a
/// measured `throughput_table`. `slots_per_instance = 0` (default): every slot decodes at
/// `decode_tokens_per_s` whatever the others do (the chapter's model).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decode {
    pub slots_per_instance: u32,
    pub slowdown_per_seq: f64,
    /// `(running sequences, tokens/s of the whole instance)` points, linear in between; batch sizes
    /// strictly increasing from 1 up to at least `slots_per_instance`; throughputs finite and > 0.
    /// Excludes `slowdown_per_seq > 0`; `decode_tokens_per_s` must equal the throughput at 1.
    /// Empty: no table.
    pub throughput_table: Vec<(u32, f64)>,
    /// KV-cache capacity of one instance, tokens (0: unlimited). A running sequence holds its
    /// prompt plus the tokens decoded so far; when an instance's KV would exceed it, the most
    /// recently admitted running sequence is preempted and later resumes after a prefill of its
    /// context (vLLM's recompute preemption). Must be at least `prompt_tokens` + the longest
    /// possible answer + 1, so that any request fits alone.
    pub kv_cache_tokens: f64,
    /// Seconds an instance's decode step adds per token of context of its decoding sequences (the
    /// KV cache they read: prompt + tokens so far, summed over them), on top of `1 / speed(n)`
    /// (0: the speed depends on the batch only). The speed is re-evaluated at every change of the
    /// instance and whenever its clock has advanced by 1/32 of its mean context (piecewise
    /// constant in between).
    pub s_per_context_token: f64,
}

/// Instance throughput (tokens/s) with `n` sequences on board, from a table of `(running
/// sequences, tokens/s)` points: linear between its points, the last point's value beyond it (NaN
/// for an empty table). The one implementation: the Python API calls it.
pub fn table_throughput(t: &[(u32, f64)], n: u32) -> f64 {
    for w in t.windows(2) {
        let ((n0, t0), (n1, t1)) = (w[0], w[1]);
        if n0 <= n && n <= n1 {
            return if n == n0 {
                t0
            } else if n == n1 {
                t1
            } else {
                t0 + (t1 - t0) * ((n - n0) as f64 / (n1 - n0) as f64)
            };
        }
    }
    t.last().map_or(f64::NAN, |p| p.1)
}

/// Prompts and prefill.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prefill {
    /// Prompt length, tokens (>= 0).
    pub prompt_tokens: f64,
    /// Prefill throughput of one slot, tokens per second (`INFINITY`: prefill is free).
    pub prefill_tokens_per_s: f64,
    /// The answers of one group share the prompt's KV (prefix cache): only the first pays.
    pub prefix_sharing: bool,
    /// The prefix cache is cleared on every weight update (groups started before the update pay
    /// the prompt prefill again for answers started after it).
    pub clear_cache_on_update: bool,
    /// Where prefill runs: on its slot, or in the steps its instance shares with decoding.
    pub mode: PrefillMode,
    /// `PrefillMode::Shared`: tokens per engine step (vLLM `max_num_batched_tokens`): the decoding
    /// sequences' tokens first, prompt chunks in the rest; more than `slots_per_instance`.
    pub max_num_batched_tokens: u32,
}

/// Where a request's prefill runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrefillMode {
    /// On its slot, at `prefill_tokens_per_s`, beside the other slots' work (with instances, in
    /// clock tokens at the speed with the request on board).
    #[default]
    PerSlot,
    /// A shared, compute-bound resource of its instance (vLLM / SGLang chunked prefill): the
    /// instance's prompt tokens wait in one queue, first come first served, and are prefilled at
    /// `prefill_tokens_per_s` (the instance's) in the steps it runs for its decoding sequences.
    /// With `b` sequences decoding and prompts waiting, a step carries their `b` tokens and a
    /// chunk of `max_num_batched_tokens - b` prompt tokens, and lasts `1 / speed(b) + chunk /
    /// prefill_tokens_per_s`: decoding slows by the share of the step the chunk takes, and the
    /// prompts are prefilled at `chunk / step` tokens/s (at `prefill_tokens_per_s` when nothing
    /// decodes). A request decodes once its whole prompt is prefilled (fluid steps: the last
    /// chunk of a prompt is not rounded to a step). With KV capacity, a request in the queue holds
    /// the KV of its prompt + tokens done from its admission; preemption takes the most recently
    /// admitted decoding request.
    Shared,
}

impl Default for Prefill {
    fn default() -> Self {
        // the schema's defaults
        Prefill {
            prompt_tokens: default_f64("prompt_tokens"),
            prefill_tokens_per_s: default_f64("prefill_tokens_per_s"),
            prefix_sharing: default_bool("prefix_sharing"),
            clear_cache_on_update: default_bool("clear_cache_on_update"),
            mode: PrefillMode::PerSlot,
            max_num_batched_tokens: default_int("max_num_batched_tokens") as u32,
        }
    }
}

/// Which random number generator draws the lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RngKind {
    /// CPython's `random.Random(seed)`, bit for bit (reproduces the chapter).
    Python,
    /// Xoshiro256++ with a ziggurat normal.
    Fast,
}

/// One scenario: the rollout pool, the trainer, the length distribution and the pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Concurrent sequences in the rollout pool.
    pub rollout_slots: u32,
    /// Decode speed of one sequence, tokens per second.
    pub decode_tokens_per_s: f64,
    /// Samples per training step.
    pub batch_size: u32,
    /// Fixed seconds per training step (including the weight sync and any pause).
    pub train_step_s: f64,
    /// Seconds per token of the batch, added to each step (forward/backward/optimizer scale with
    /// the tokens trained; include an optional log-prob recompute phase here).
    pub train_s_per_token: f64,
    /// Simulated time, seconds.
    pub horizon_s: f64,
    pub lengths: Lengths,
    pub pipeline: Pipeline,
    /// Answers per prompt (GRPO group). `batch_size` counts samples and must be a multiple.
    pub group_size: u32,
    pub decode: Decode,
    pub prefill: Prefill,
    /// Seconds the rollout pool stops at every weight update it loads (pause, load the weights,
    /// resume): in-flight requests resume this much later, requests started meanwhile begin at the
    /// end of the pause. 0: the update is instant for the rollout.
    pub rollout_pause_s: f64,
    pub seed: u64,
    pub rng: RngKind,
    /// Multi-turn agentic rollouts (`None`: one answer per sample).
    pub agentic: Option<AgenticConfig>,
    /// Sync cadence: the rollout loads new weights only after every `sync_every`-th training
    /// step (verl `trigger_parameter_sync_step`); in between it keeps the weights it has, and the
    /// staleness of what it generates counts that version. 1: after every step.
    pub sync_every: u32,
    /// Which version `max_staleness` is checked against (streaming pipeline with a cap only).
    pub staleness_check: StalenessCheck,
    /// Per-rank training (`None`: a step is `train_step_s + train_s_per_token x tokens`).
    pub train: Option<TrainRanks>,
    /// Answer lengths that change with the policy version the request starts under (`None`: every
    /// answer from `lengths` as it is).
    pub length_drift: Option<LengthDrift>,
}

/// How a batch's samples reach the data-parallel ranks ([`schema::DISPATCHES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    /// Equal consecutive chunks (a group stays on one rank).
    Contiguous,
    /// Sample `i` to rank `i mod ranks`.
    RoundRobin,
    /// Equal-count Karmarkar-Karp partitions of the whole batch (verl `trainer.balance_batch`).
    Balanced,
    /// The same, mini-batch by mini-batch (verl `keep_minibatch`).
    BalancedMinibatch,
    /// Greedy longest-first into equal-count ranks, each training heaviest first.
    Lpt,
    /// First-fit-decreasing micro-batches of at most `max_tokens_per_gpu` tokens, dealt heaviest
    /// first to the least loaded rank.
    Packed,
}

impl Dispatch {
    /// The dispatch named `name` (one of [`schema::DISPATCHES`]).
    pub fn from_name(name: &str) -> Option<Self> {
        use Dispatch::*;
        [Contiguous, RoundRobin, Balanced, BalancedMinibatch, Lpt, Packed]
            .into_iter()
            .zip(schema::DISPATCHES)
            .find(|(_, n)| **n == name)
            .map(|(d, _)| d)
    }
}

/// The per-rank training model (`rollsim.TrainRanks`): the batch's sequences (prompt + answer,
/// `T` tokens each) are assigned to `dp_ranks` ranks by `dispatch`; each rank cuts its sequences
/// into `mini_batches` consecutive parts, and a mini-batch lasts `fixed_s` plus its slowest rank's
/// `sum(s_per_token x T + s_per_token_sq x T^2)`. The step adds that, summed over mini-batches, to
/// `train_step_s + train_s_per_token x tokens`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainRanks {
    pub dp_ranks: u32,
    pub dispatch: Dispatch,
    pub s_per_token: f64,
    pub s_per_token_sq: f64,
    pub fixed_s: f64,
    pub mini_batches: u32,
    /// `dispatch = Packed` only (0 otherwise).
    pub max_tokens_per_gpu: f64,
}

use crate::schema::{self, Range, Value};
pub use crate::schema::{
    Bound, DECODE_SLOWDOWN_PER_SEQ, DECODE_TOKENS_PER_S, HORIZON_S, KV_CACHE_TOKENS, LOGPROB_S_PER_TOKEN, MAX_COUNT,
    OVER_SAMPLING, PREFILL_TOKENS_PER_S, PROMPT_TOKENS, ROLLOUT_PAUSE_S, TABLE_THROUGHPUT, TRAIN_STEP_S,
    TRAIN_S_PER_TOKEN, WEIGHT_SYNC_S,
};

/// Largest accepted k for `OffPolicy`.
pub const MAX_K: u32 = schema::MAX_K as u32;

/// Every bound of the engine's scenario (those of [`schema::SCENARIO`] and the pipeline's).
pub const BOUNDS: [Bound; 11] = [
    DECODE_TOKENS_PER_S,
    TRAIN_STEP_S,
    TRAIN_S_PER_TOKEN,
    HORIZON_S,
    ROLLOUT_PAUSE_S,
    PROMPT_TOKENS,
    PREFILL_TOKENS_PER_S,
    DECODE_SLOWDOWN_PER_SEQ,
    KV_CACHE_TOKENS,
    TABLE_THROUGHPUT,
    OVER_SAMPLING,
];

/// `name`'s integer range in [`schema::SCENARIO`], as `u32` bounds.
fn int_range(name: &str) -> (u32, u32) {
    match schema::field(name).map(|f| f.range) {
        Some(Range::Int { lo, hi, .. }) => (lo.min(u32::MAX as u64) as u32, hi.min(u32::MAX as u64) as u32),
        _ => unreachable!("{name} is an integer field of the schema"),
    }
}

/// Checks an integer field of a pipeline part against its range in [`schema::PARTS`]:
/// `pipeline.k: must be in [0, 1000000], got 1000001`.
fn check_part_int(class: &str, path: &'static str, v: u64) -> Result<()> {
    let name = path.split_once('.').map_or(path, |(_, n)| n); // `pipeline.k`, `train.dp_ranks`
    let f = schema::part_field(class, name).unwrap_or_else(|| unreachable!("{class}.{name} is a part field"));
    match f.range {
        Range::Int { lo, hi, .. } if (lo..=hi).contains(&v) => Ok(()),
        Range::Int { lo, hi, .. } => Err(Error::field(path, format!("must be in [{lo}, {hi}], got {v}"))),
        _ => unreachable!("{class}.{name} is an integer field"),
    }
}

/// Checks an integer field against its range in [`schema::SCENARIO`]:
/// `rollout_slots: must be in [1, 16777216], got 0`.
fn check_int(name: &'static str, v: u32) -> Result<()> {
    let (lo, hi) = int_range(name);
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(Error::field(name, format!("must be in [{lo}, {hi}], got {v}")))
    }
}

/// The default of a real field of [`schema::SCENARIO`] (`None` defaults: 0, the engine's "none").
fn default_f64(name: &str) -> f64 {
    match schema::field(name).map(|f| f.default) {
        Some(Value::Float(v)) => v,
        Some(Value::None) => 0.0,
        _ => unreachable!("{name} is a real field of the schema"),
    }
}

/// The default of an integer field of [`schema::SCENARIO`].
fn default_int(name: &str) -> u64 {
    match schema::field(name).map(|f| f.default) {
        Some(Value::Int(v)) => v,
        _ => unreachable!("{name} is an integer field of the schema"),
    }
}

/// The default of a boolean field of [`schema::SCENARIO`].
fn default_bool(name: &str) -> bool {
    match schema::field(name).map(|f| f.default) {
        Some(Value::Bool(v)) => v,
        _ => unreachable!("{name} is a boolean field of the schema"),
    }
}

/// A float as Python's `repr` prints it (`1e-320`, `30.0`, `1e+16`, `1e-05`, `inf`, `nan`), so
/// that the engine's messages read like the Python API's. Rust's `{:?}` already switches to
/// exponent notation at the same thresholds (below 1e-4, from 1e16) with the same shortest
/// digits; only the exponent is spelled differently.
pub fn show(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let s = format!("{v:?}");
    match s.split_once('e') {
        None => s,
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
    }
}

impl Default for Scenario {
    /// The chapter's scenario: 256 slots at 30 tokens/s, 512 samples per step, 60 s per step, 2 hours,
    /// lengths `min(lognormal(7.6, 1.0), 16384)`, fully asynchronous without a cap, seed 0.
    /// The numbers are the schema's defaults ([`schema::SCENARIO`]).
    fn default() -> Self {
        let count = |name| default_int(name) as u32;
        Scenario {
            rollout_slots: count("rollout_slots"),
            decode_tokens_per_s: default_f64("decode_tokens_per_s"),
            batch_size: count("batch_size"),
            train_step_s: default_f64("train_step_s"),
            train_s_per_token: default_f64("train_s_per_token"),
            horizon_s: default_f64("horizon_s"),
            lengths: Lengths::LogNormal { mu: 7.6, sigma: 1.0, max_tokens: 16384.0, group_correlation: 0.0 },
            pipeline: Pipeline::fully_async(None),
            group_size: count("group_size"),
            decode: Decode::default(),
            prefill: Prefill::default(),
            rollout_pause_s: default_f64("rollout_pause_s"),
            seed: default_int("seed"),
            rng: RngKind::Fast,
            agentic: None,
            sync_every: count("sync_every"),
            staleness_check: StalenessCheck::Start,
            train: None,
            length_drift: None,
        }
    }
}

impl Scenario {
    /// The version the rollout holds once the trainer has reached `version`: the last one a
    /// sync brought (`version` rounded down to a multiple of `sync_every`).
    #[inline]
    pub fn synced_version(&self, version: u32) -> u32 {
        version - version % self.sync_every
    }

    /// Whether decode speed depends on the number of sequences per instance.
    #[inline]
    pub fn decode_is_batched(&self) -> bool {
        let d = &self.decode;
        d.slots_per_instance > 0
            && (d.slowdown_per_seq > 0.0
                || !d.throughput_table.is_empty()
                || d.kv_cache_tokens > 0.0
                || self.prefill.mode == PrefillMode::Shared
                || d.s_per_context_token > 0.0)
    }

    /// Decode speed of one sequence on an instance running `n` sequences, `[n - 1]` for
    /// `n = 1..=slots_per_instance` (empty without instances).
    pub fn speed_by_batch(&self) -> Vec<f64> {
        (1..=self.decode.slots_per_instance).map(|n| self.speed_at(n)).collect()
    }

    /// Decode speed of one sequence on an instance running `n >= 1` sequences, tokens/s (without
    /// instances: `decode_tokens_per_s`).
    pub fn decode_speed(&self, n: u32) -> f64 {
        if self.decode.slots_per_instance == 0 {
            self.decode_tokens_per_s
        } else {
            self.speed_at(n)
        }
    }

    /// Decode speed of one sequence on an instance running `n >= 1` sequences, tokens/s.
    fn speed_at(&self, n: u32) -> f64 {
        let d = &self.decode;
        if d.throughput_table.is_empty() {
            self.decode_tokens_per_s / (1.0 + d.slowdown_per_seq * (n as f64 - 1.0))
        } else {
            table_throughput(&d.throughput_table, n) / n as f64
        }
    }

    /// Decode speed of one sequence with every slot busy (every instance full), tokens/s.
    pub fn full_pool_speed(&self) -> f64 {
        if self.decode_is_batched() {
            self.speed_at(self.decode.slots_per_instance)
        } else {
            self.decode_tokens_per_s
        }
    }

    /// Duration of a training step over a batch of `tokens` tokens, seconds (the trainer's model).
    #[inline]
    pub fn step_s(&self, tokens: f64) -> f64 {
        crate::pipeline::trainer::TrainModel::of(self).step_s(tokens)
    }

    /// Checks every field; the error names the first bad one and its allowed range. The ranges
    /// ([`BOUNDS`]) and messages are the Python API's (`rollsim.Scenario`), so that both sides
    /// refuse the same values with the same words; they keep every summary value finite.
    pub fn validate(&self) -> Result<()> {
        check_int("rollout_slots", self.rollout_slots)?;
        DECODE_TOKENS_PER_S.check(self.decode_tokens_per_s)?;
        check_int("batch_size", self.batch_size)?;
        TRAIN_S_PER_TOKEN.check(self.train_s_per_token)?;
        TRAIN_STEP_S.check(self.train_step_s)?;
        HORIZON_S.check(self.horizon_s)?;
        if self.group_size == 0 || self.group_size > self.batch_size || self.batch_size % self.group_size != 0 {
            return Err(Error::field(
                "group_size",
                format!("must be >= 1 and divide batch_size ({}), got {}", self.batch_size, self.group_size),
            ));
        }
        let d = &self.decode;
        if d.slots_per_instance > 0 && self.rollout_slots % d.slots_per_instance != 0 {
            return Err(Error::field(
                "slots_per_instance",
                format!("must divide rollout_slots ({}), got {}", self.rollout_slots, d.slots_per_instance),
            ));
        }
        DECODE_SLOWDOWN_PER_SEQ.check(d.slowdown_per_seq)?;
        if d.slowdown_per_seq > 0.0 && d.slots_per_instance == 0 {
            // it would do nothing: independent slots never share a batch
            return Err(Error::field(
                "decode_slowdown_per_seq",
                "needs slots_per_instance > 0 (the batched instances it slows), got slots_per_instance=0",
            ));
        }
        ROLLOUT_PAUSE_S.check(self.rollout_pause_s)?;
        check_int("sync_every", self.sync_every)?;
        if self.staleness_check == StalenessCheck::Finish
            && !matches!(&self.pipeline, Pipeline::FullyAsync(o) if o.max_staleness.is_some())
        {
            return Err(Error::field(
                "staleness_check",
                "'finish' changes how max_staleness is checked: it needs FullyAsync(max_staleness=...)",
            ));
        }
        let p = &self.prefill;
        PROMPT_TOKENS.check(p.prompt_tokens)?;
        if p.prefill_tokens_per_s != f64::INFINITY {
            PREFILL_TOKENS_PER_S.check(p.prefill_tokens_per_s)?;
        }
        self.validate_table()?;
        self.validate_kv()?;
        self.validate_prefill_mode()?;
        schema::DECODE_S_PER_CONTEXT_TOKEN.check(d.s_per_context_token)?;
        if d.s_per_context_token > 0.0 && d.slots_per_instance == 0 {
            return Err(Error::field(
                "decode_s_per_context_token",
                "needs slots_per_instance > 0 (the instances whose steps it lengthens), got slots_per_instance=0",
            ));
        }
        if let Some(a) = &self.agentic {
            a.validate(self)?;
        }
        if let Some(t) = &self.train {
            self.validate_train(t)?;
        }
        if let Some(d) = &self.length_drift {
            d.validate()?;
        }
        match &self.pipeline {
            Pipeline::OffPolicy { k, partial } => {
                check_part_int("OffPolicy", "pipeline.k", *k as u64)?;
                if let Some(o) = partial.over_sampling {
                    if o != f64::INFINITY {
                        OVER_SAMPLING.check(o)?;
                    }
                }
            }
            Pipeline::FullyAsync(o) => {
                if let Some(m) = o.max_ready_groups {
                    check_part_int("FullyAsync", "pipeline.max_ready_groups", m as u64)?;
                }
                if let Some(m) = o.max_lag_samples {
                    if m < self.group_size as u64 {
                        return Err(Error::field(
                            "pipeline.max_lag_samples",
                            format!("must be >= group_size ({}), got {m}", self.group_size),
                        ));
                    }
                }
                if o.lag_release == LagRelease::Sync && o.max_lag_samples.is_none() {
                    return Err(Error::field(
                        "pipeline.lag_release",
                        "'sync' releases places under max_lag_samples: it needs max_lag_samples",
                    ));
                }
                if let BatchOrder::LengthBalanced { edges, quotas } = &o.batch_order {
                    if quotas.len() != edges.len() + 1 {
                        return Err(Error::field("pipeline.batch_order", "needs one quota per bucket (edges + 1)"));
                    }
                    if edges.windows(2).any(|w| w[1] <= w[0]) || edges.iter().any(|e| !(e.is_finite() && *e > 0.0)) {
                        return Err(Error::field("pipeline.batch_order", "edges must be finite, > 0 and increasing"));
                    }
                    let groups = self.batch_size / self.group_size;
                    if quotas.iter().map(|q| *q as u64).sum::<u64>() > groups as u64 {
                        return Err(Error::field(
                            "pipeline.batch_order",
                            format!("quotas must sum to at most the groups per batch ({groups})"),
                        ));
                    }
                }
            }
        }
        self.lengths.validate()
    }

    fn validate_train(&self, t: &TrainRanks) -> Result<()> {
        const C: &str = "TrainRanks";
        check_part_int(C, "train.dp_ranks", t.dp_ranks as u64)?;
        check_part_int(C, "train.mini_batches", t.mini_batches as u64)?;
        schema::TRAIN_RANK_S_PER_TOKEN.check(t.s_per_token)?;
        schema::TRAIN_RANK_S_PER_TOKEN_SQ.check(t.s_per_token_sq)?;
        schema::TRAIN_RANK_FIXED_S.check(t.fixed_s)?;
        let (b, k, m) = (self.batch_size, t.dp_ranks, t.mini_batches);
        if t.max_tokens_per_gpu != 0.0 {
            schema::TRAIN_RANK_MAX_TOKENS.check(t.max_tokens_per_gpu)?;
        }
        if t.dispatch == Dispatch::Packed {
            if t.max_tokens_per_gpu == 0.0 {
                return Err(Error::field(
                    "train.max_tokens_per_gpu",
                    "dispatch='packed' needs the micro-batch token budget, got None",
                ));
            }
            self.lengths.validate()?;
            let (prompt, longest) = (self.prefill.prompt_tokens, self.lengths.max_tokens());
            if t.max_tokens_per_gpu < prompt + longest {
                return Err(Error::field(
                    "train.max_tokens_per_gpu",
                    format!(
                        "must be >= prompt_tokens + the longest possible answer = {} + {} = {} tokens, got {}",
                        show(prompt),
                        show(longest),
                        show(prompt + longest),
                        show(t.max_tokens_per_gpu)
                    ),
                ));
            }
            return Ok(());
        }
        if t.max_tokens_per_gpu != 0.0 {
            return Err(Error::field("train.max_tokens_per_gpu", "applies to dispatch='packed' only, got a budget"));
        }
        let per = if t.dispatch == Dispatch::BalancedMinibatch { k as u64 * m as u64 } else { k as u64 };
        if b as u64 % per != 0 {
            let what = if t.dispatch == Dispatch::BalancedMinibatch { "dp_ranks x mini_batches" } else { "dp_ranks" };
            return Err(Error::field(
                "train.dp_ranks",
                format!("{what} ({per}) must divide batch_size ({b}): every rank trains as many samples"),
            ));
        }
        if m > b / k {
            return Err(Error::field(
                "train.mini_batches",
                format!("must be at most the samples of one rank (batch_size / dp_ranks = {}), got {m}", b / k),
            ));
        }
        Ok(())
    }

    /// `prefill_mode` and `max_num_batched_tokens`.
    fn validate_prefill_mode(&self) -> Result<()> {
        let (p, spi) = (&self.prefill, self.decode.slots_per_instance);
        check_int("max_num_batched_tokens", p.max_num_batched_tokens)?;
        if p.mode == PrefillMode::PerSlot {
            if p.max_num_batched_tokens as u64 != default_int("max_num_batched_tokens") {
                return Err(Error::field(
                    "max_num_batched_tokens",
                    format!(
                        "applies only with prefill_mode = 'shared' (the budget of a shared step), got {} with \
                         prefill_mode = 'per_slot'",
                        p.max_num_batched_tokens
                    ),
                ));
            }
            return Ok(());
        }
        if spi == 0 {
            return Err(Error::field(
                "prefill_mode",
                "'shared' shares an instance's steps between prefill and decoding: it needs slots_per_instance > 0, \
                 got slots_per_instance=0",
            ));
        }
        if p.max_num_batched_tokens <= spi {
            return Err(Error::field(
                "max_num_batched_tokens",
                format!(
                    "must be > slots_per_instance ({spi}) with prefill_mode = 'shared' (a step holds every decoding \
                     sequence's token and at least one prompt token), got {}",
                    p.max_num_batched_tokens
                ),
            ));
        }
        Ok(())
    }

    fn validate_kv(&self) -> Result<()> {
        const F: &str = "kv_cache_tokens";
        let kv = self.decode.kv_cache_tokens;
        if kv == 0.0 {
            return Ok(()); // unlimited (None in the Python API)
        }
        KV_CACHE_TOKENS.check(kv)?;
        if self.decode.slots_per_instance == 0 {
            return Err(Error::field(
                F,
                "needs slots_per_instance > 0 (the capacity is per instance), got slots_per_instance=0",
            ));
        }
        self.lengths.validate()?;
        let longest = match &self.length_drift {
            Some(d) => d.max_tokens, // the cap of the drifted lengths
            None => self.lengths.max_tokens(),
        };
        let prompt = self.prefill.prompt_tokens;
        let need = prompt + longest + 1.0;
        if kv < need {
            return Err(Error::field(
                F,
                format!(
                    "must be >= prompt_tokens + the longest possible answer + 1 = {prompt} + {longest} + 1 = {need} \
                     (a request must fit alone, or the run could deadlock), got {kv}"
                ),
            ));
        }
        Ok(())
    }

    fn validate_table(&self) -> Result<()> {
        const F: &str = "decode_throughput_table";
        let d = &self.decode;
        let t = &d.throughput_table;
        if t.is_empty() {
            return Ok(());
        }
        if d.slots_per_instance == 0 {
            return Err(Error::field(
                F,
                "needs slots_per_instance > 0 (the instances it describes), got slots_per_instance=0",
            ));
        }
        for (i, (n, tp)) in t.iter().enumerate() {
            if *n == 0 || *n > MAX_COUNT {
                return Err(Error::field(
                    F,
                    format!("batch sizes must be integers in [1, {MAX_COUNT}]; item {i} has {n}"),
                ));
            }
            if !(TABLE_THROUGHPUT.lo..=TABLE_THROUGHPUT.hi).contains(tp) {
                return Err(Error::field(
                    F,
                    format!("throughputs must be in {} tokens/s; item {i} has {}", TABLE_THROUGHPUT.range, show(*tp)),
                ));
            }
            if i > 0 && *n <= t[i - 1].0 {
                let prev = t[i - 1].0;
                return Err(Error::field(
                    F,
                    format!("batch sizes must be strictly increasing; item {i} has {n} after {prev}"),
                ));
            }
        }
        if t[0].0 != 1 {
            return Err(Error::field(F, format!("must start at batch size 1, got {}", t[0].0)));
        }
        let last = t[t.len() - 1].0;
        if last < d.slots_per_instance {
            return Err(Error::field(
                F,
                format!("must reach slots_per_instance ({}): its last batch size is {last}", d.slots_per_instance),
            ));
        }
        if d.slowdown_per_seq > 0.0 {
            return Err(Error::field(
                F,
                format!(
                    "excludes decode_slowdown_per_seq > 0 (one speed model), got decode_slowdown_per_seq={}",
                    d.slowdown_per_seq
                ),
            ));
        }
        if self.decode_tokens_per_s != t[0].1 {
            return Err(Error::field(
                "decode_tokens_per_s",
                format!(
                    "must equal decode_throughput_table's speed at one sequence ({} tokens/s) when the table is set, got {}",
                    t[0].1, self.decode_tokens_per_s
                ),
            ));
        }
        Ok(())
    }

    /// Rollout throughput over training throughput, in samples per second, from the mean length:
    /// `(rollout_slots * v / mean_tokens) / (batch_size / step_s)` with
    /// `step_s = train_step_s + train_s_per_token * batch_size * mean_tokens` and `v` the decode
    /// speed of one sequence with every slot busy ([`Scenario::full_pool_speed`]).
    /// Above 1, a fully asynchronous pipeline without a cap generates faster than it trains.
    /// With `train`, `step_s` adds `mini_batches x fixed_s` and the ranks' work split evenly over
    /// `dp_ranks` at the mean sequence length (`prompt_tokens + mean_tokens`): a lower bound of the
    /// step (no imbalance, and the mean of `T^2` taken as the square of the mean).
    pub fn throughput_ratio(&self) -> f64 {
        let rollout = self.rollout_slots as f64 * self.full_pool_speed() / self.lengths.mean_tokens();
        let mut step_s =
            self.train_step_s + self.train_s_per_token * self.batch_size as f64 * self.lengths.mean_tokens();
        if let Some(t) = &self.train {
            let seq = self.prefill.prompt_tokens + self.lengths.mean_tokens();
            let work = (t.s_per_token * seq + t.s_per_token_sq * seq * seq) * self.batch_size as f64;
            step_s += t.mini_batches as f64 * t.fixed_s + work / t.dp_ranks as f64;
        }
        rollout * step_s / self.batch_size as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_schema_s() {
        let d = Decode::default();
        assert_eq!(d.slots_per_instance as u64, default_int("slots_per_instance"));
        assert_eq!(d.slowdown_per_seq, default_f64("decode_slowdown_per_seq"));
        assert_eq!(d.kv_cache_tokens, default_f64("kv_cache_tokens"));
        assert!(d.throughput_table.is_empty());
        let sc = Scenario::default();
        assert_eq!((sc.rollout_slots, sc.batch_size, sc.decode_tokens_per_s, sc.train_step_s), (256, 512, 30.0, 60.0));
        assert_eq!((sc.horizon_s, sc.group_size, sc.rng), (7200.0, 1, RngKind::Fast));
        assert_eq!(schema::field("rng").unwrap().default, Value::Str("fast"));
        assert!(sc.prefill.prefill_tokens_per_s.is_infinite() && sc.prefill.prefix_sharing);
    }

    #[test]
    fn show_prints_floats_as_python_repr() {
        for (v, want) in [
            (1e-320, "1e-320"),
            (30.0, "30.0"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (1e-4, "0.0001"),
            (-0.5, "-0.5"),
            (1e308, "1e+308"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
            (123456789012345.0, "123456789012345.0"),
        ] {
            assert_eq!(show(v), want);
        }
    }

    #[test]
    fn degenerate_numbers_are_refused_naming_the_field() {
        type Change = fn(&mut Scenario);
        let cases: [(Change, &str); 6] = [
            (|s| s.decode_tokens_per_s = 1e-320, "decode_tokens_per_s: must be in [1e-6, 1e9] tokens/s, got 1e-320"),
            (|s| s.prefill.prompt_tokens = 1e308, "prompt_tokens: must be in [0, 1e9] tokens, got 1e+308"),
            (|s| s.horizon_s = f64::NAN, "horizon_s: must be in [1e-6, 1e12] seconds, got nan"),
            (
                |s| s.prefill.prefill_tokens_per_s = 0.0,
                "prefill_tokens_per_s: must be in [1e-6, 1e12] tokens/s, or math.inf (free prefill), got 0.0",
            ),
            (
                |s| {
                    s.pipeline = Pipeline::OffPolicy {
                        k: 1,
                        partial: PartialRollout { over_sampling: Some(1e300), keep_partial: false },
                    }
                },
                "pipeline.over_sampling: must be in [0, 1e6], or math.inf (keep every slot busy), got 1e+300",
            ),
            (|s| s.train_s_per_token = 1e4, "train_s_per_token: must be in [0, 1e3] seconds/token, got 10000.0"),
        ];
        for (change, want) in cases {
            let mut sc = Scenario::default();
            change(&mut sc);
            assert_eq!(sc.validate().unwrap_err().to_string(), want);
        }
        // the pipeline parts' integer ranges are the schema's (`schema::PARTS`)
        let mut sc = Scenario {
            pipeline: Pipeline::OffPolicy { k: MAX_K + 1, partial: PartialRollout::default() },
            ..Scenario::default()
        };
        assert_eq!(sc.validate().unwrap_err().to_string(), "pipeline.k: must be in [0, 1000000], got 1000001");
        sc.pipeline = Pipeline::FullyAsync(Streaming { max_ready_groups: Some(0), ..Streaming::default() });
        assert_eq!(
            sc.validate().unwrap_err().to_string(),
            "pipeline.max_ready_groups: must be in [1, 4294967295], got 0"
        );
        let mut sc = Scenario::default();
        sc.prefill.prefill_tokens_per_s = f64::INFINITY;
        sc.decode_tokens_per_s = 1e9;
        sc.horizon_s = 1e12;
        assert!(sc.validate().is_ok());
    }
}
