//! Column-wise recording of a run: per-sample, per-segment and per-step columns (a `Vec` per
//! column, handed to Python as numpy arrays without copying) and the run's summary.

/// Answers shorter than this many tokens are "short" in the summary (the chapter's < 1K).
pub const SHORT_TOKENS: f64 = 1000.0;
/// Answers longer than this many tokens are "long" in the summary (the chapter's > 8K).
pub const LONG_TOKENS: f64 = 8000.0;
/// Marks "no value" in u32 columns (becomes null in Python).
pub const NONE_U32: u32 = u32::MAX;

/// One row per sample started, in start order (`sample_id` = row index).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleColumns {
    pub length_tokens: Vec<f64>,
    pub group_id: Vec<u32>,
    pub start_s: Vec<f64>,
    /// `NaN` while still in flight at the end of the run (for aborted samples: the abort time).
    pub finish_s: Vec<f64>,
    pub version_start: Vec<u32>,
    /// Version that produced the last token so far.
    pub version_end: Vec<u32>,
    /// Rollout's policy version when the sample finished (`NONE_U32` if it did not).
    pub version_finish: Vec<u32>,
    /// Number of token spans (segments) with distinct versions.
    pub n_versions: Vec<u32>,
    /// Training step that consumed the sample; -1 if none.
    pub trained_step: Vec<i64>,
    pub dropped: Vec<bool>,
    /// Aborted in flight (a weight update in `abort_drop` mode, or the end of an over-sampled batch).
    pub aborted: Vec<bool>,
    pub slot: Vec<u32>,
}

/// One row per token span of one policy version within one answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SegmentColumns {
    pub sample_id: Vec<u32>,
    pub version: Vec<u32>,
    /// First token of the span (tokens are continuous positions: lognormal lengths are real).
    pub first_token: Vec<f64>,
    /// End of the span (exclusive).
    pub last_token: Vec<f64>,
}

/// One row per training step started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepColumns {
    pub start_s: Vec<f64>,
    pub end_s: Vec<f64>,
    pub staleness_mean: Vec<f64>,
    pub staleness_max: Vec<u32>,
    /// Trainer idle time before the step, seconds.
    pub wait_s: Vec<f64>,
    pub samples: Vec<u32>,
    /// Finished groups still waiting in the ready queue after the batch was taken, in samples.
    pub ready_after: Vec<u32>,
    pub tokens: Vec<f64>,
    /// Since the previous step started: tokens generated and thrown away (dropped or aborted).
    pub tokens_wasted: Vec<f64>,
    /// Since the previous step started: tokens prefilled again after a weight update.
    pub tokens_recomputed: Vec<f64>,
    /// Since the previous step started: slot-seconds with no work.
    pub slot_idle_s: Vec<f64>,
    /// With `Scenario::train`: the slowest and the mean rank's seconds of each step
    /// ([`crate::schema::RANK_STEPS`]).
    pub ranks: Option<RankColumns>,
}

/// The per-rank columns of the steps frame (`Scenario::train`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankColumns {
    pub rank_slowest_s: Vec<f64>,
    pub rank_mean_s: Vec<f64>,
}

/// Totals of one run. Means are over trained samples; see the README for every definition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Training steps completed by the end of the run.
    pub steps: u64,
    /// Training steps started (a step may still be running at the end).
    pub steps_started: u64,
    /// Simulated time covered, seconds (the time of the last event processed).
    pub end_s: f64,
    pub rollout_utilization: f64,
    pub slot_busy_s: f64,
    pub slot_idle_s: f64,
    pub trainer_busy_s: f64,
    pub trainer_idle_s: f64,
    pub samples_started: u64,
    pub samples_finished: u64,
    pub samples_trained: u64,
    /// Not trained and discarded: stale, aborted, or pushed out of a bounded queue.
    pub samples_dropped: u64,
    /// Of the dropped: aborted in flight.
    pub samples_aborted: u64,
    /// Groups sent back for regeneration (`requeue` staleness control).
    pub groups_requeued: u64,
    /// Finished, not trained, not dropped at the end.
    pub samples_ready: u64,
    pub samples_in_flight: u64,
    pub drop_fraction: f64,
    pub staleness_mean: f64,
    pub staleness_max: u64,
    /// Staleness measured against the rollout's version when the sample finished.
    pub staleness_at_finish_mean: f64,
    /// Per trained group: the staleness of its oldest member.
    pub staleness_group_mean: f64,
    pub staleness_mean_short: f64,
    pub staleness_mean_long: f64,
    pub samples_trained_short: u64,
    pub samples_trained_long: u64,
    pub tokens_generated: f64,
    pub tokens_trained: f64,
    pub tokens_wasted: f64,
    pub tokens_pending: f64,
    /// Prefill tokens, all of them (prompts and recomputation).
    pub tokens_prefilled: f64,
    /// Prefill tokens caused by weight updates (recomputed KV, resubmitted partials, prefix cache
    /// cleared).
    pub tokens_recomputed: f64,
    /// KV-cache capacity: requests preempted (their KV freed, recomputed when they resume), and
    /// the slot-seconds requests spent on a slot waiting for KV (included in `slot_busy_s`).
    pub preemptions: u64,
    pub kv_wait_s: f64,
    pub events: u64,
    /// Least-squares slope of the ready queue after each step, over the second half of the steps
    /// (samples per step). Positive and large: generation outruns training.
    pub ready_queue_growth_per_step: f64,
    pub generation_outruns_training: bool,
    /// Nothing could happen any more before the horizon (no slot event, no trainer event): e.g.
    /// admission control waits for a batch that cannot fill. The run ends at the stall.
    pub stalled: bool,
    pub throughput_ratio: f64,
    /// What the learner's statistics need (`rollsim.learning`), in both modes.
    pub learn: LearnSums,
}

/// Staleness bins of [`LearnSums::tokens_by_staleness`] before the overflow bin.
pub const LEARN_STALENESS_BINS: usize = 16;

/// Sums for the learning-side statistics of a summary-mode run: trained tokens by the staleness of
/// their own span (a partial rollout's early tokens are older than its late ones), as
/// `rollsim.learning.learning` counts them from the segments, and the drawn lengths.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LearnSums {
    /// Trained tokens at staleness `s` (training step - the span's policy version) for
    /// `s < LEARN_STALENESS_BINS`; the last entry holds every larger staleness.
    pub tokens_by_staleness: [f64; LEARN_STALENESS_BINS + 1],
    /// Sum of the drawn lengths of every sample started, tokens.
    pub tokens_drawn: f64,
}

/// A multiplicative hash of a sample id (ids are dense; SipHash would cost more than the work).
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.0 = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IdMap<V> = std::collections::HashMap<u32, V, std::hash::BuildHasherDefault<IdHasher>>;

/// One closed token span of a sample that is not trained yet: its version and tokens, and the
/// next span of the same sample (a chain in [`SpanBook::nodes`]).
#[derive(Clone, Copy)]
struct SpanNode {
    n: f64,
    version: u32,
    next: u32,
}

/// The token spans closed before a sample finished (a partial rollout's, at a weight update), kept
/// until the sample is trained or dropped. A sample's last span is not stored: at training it is
/// `(version_end, length - the stored tokens)`, so a sample with one span costs nothing. The spans
/// are chains in one slab (no allocation per sample); a sample id finds its chain in a table
/// indexed by the id's low bits (ids are consecutive), or in `overflow` when two ids collide.
pub(crate) struct SpanBook {
    /// The last span recorded, `(id, version, tokens)` (`last_id` `NONE_U32`: none): the sample's
    /// last one if `finish` follows for that sample. Three plain fields, not an `Option` of a
    /// tuple: `span` and `finish` stay a compare and a few stores, inlined in every pipeline's loop.
    last_id: u32,
    last_version: u32,
    last_n: f64,
    /// `(id, first node)` at `id & (len - 1)`, or `(NONE_U32, _)`.
    table: Vec<(u32, u32)>,
    overflow: IdMap<u32>,
    nodes: Vec<SpanNode>,
    /// Head of the free nodes' chain.
    free: u32,
    /// Samples with a chain.
    parked: usize,
}

impl SpanBook {
    fn new() -> Self {
        SpanBook {
            last_id: NONE_U32,
            last_version: 0,
            last_n: 0.0,
            table: Vec::new(),
            overflow: IdMap::default(),
            nodes: Vec::new(),
            free: NONE_U32,
            parked: 0,
        }
    }

    /// Makes `node` the head of `id`'s chain.
    fn link(&mut self, id: u32, node: u32) {
        let mask = self.table.len() - 1;
        let slot = self.table[id as usize & mask];
        if slot.0 == id {
            self.nodes[node as usize].next = slot.1;
            self.table[id as usize & mask].1 = node;
            return;
        }
        if !self.overflow.is_empty() && self.link_overflow(id, node) {
            return;
        }
        self.parked += 1;
        if slot.0 == NONE_U32 {
            self.table[id as usize & mask] = (id, node);
        } else {
            self.insert_overflow(id, node);
        }
    }

    /// Makes `node` the head of `id`'s chain if that chain is in `overflow`.
    #[cold]
    #[inline(never)]
    fn link_overflow(&mut self, id: u32, node: u32) -> bool {
        match self.overflow.get_mut(&id) {
            Some(head) => {
                self.nodes[node as usize].next = *head;
                *head = node;
                true
            }
            None => false,
        }
    }

    /// A new chain whose table slot is taken.
    #[cold]
    #[inline(never)]
    fn insert_overflow(&mut self, id: u32, node: u32) {
        self.overflow.insert(id, node);
        // grown early: with `overflow` empty, a sample without a chain costs one table load
        if self.overflow.len() > self.table.len() / 64 {
            self.grow();
        }
    }

    /// Doubles the table and places every chain again.
    #[cold]
    fn grow(&mut self) {
        let mut heads: Vec<(u32, u32)> = self.table.iter().copied().filter(|(id, _)| *id != NONE_U32).collect();
        heads.extend(self.overflow.drain());
        self.table = vec![(NONE_U32, NONE_U32); self.table.len() * 2];
        let mask = self.table.len() - 1;
        for (id, head) in heads {
            let slot = &mut self.table[id as usize & mask];
            if slot.0 == NONE_U32 {
                *slot = (id, head);
            } else {
                self.overflow.insert(id, head);
            }
        }
    }

    #[cold]
    fn first_table(&mut self) {
        self.table = vec![(NONE_U32, NONE_U32); 1024];
    }

    #[inline]
    fn park(&mut self, (id, version, n): (u32, u32, f64)) {
        if self.table.is_empty() {
            self.first_table();
        }
        let node = SpanNode { n, version, next: NONE_U32 };
        let idx = if self.free != NONE_U32 {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        self.link(id, idx);
    }

    /// Whether `id`'s chain is in the table (`parked > 0`).
    #[inline(always)]
    fn in_table(&self, id: u32) -> bool {
        self.table[id as usize & (self.table.len() - 1)].0 == id
    }

    /// Removes `id`'s chain and returns its head (`NONE_U32`: none). Only when `parked > 0`.
    #[inline(never)]
    fn take(&mut self, id: u32) -> u32 {
        let mask = self.table.len() - 1;
        let slot = &mut self.table[id as usize & mask];
        if slot.0 == id {
            slot.0 = NONE_U32;
            self.parked -= 1;
            return slot.1;
        }
        if self.overflow.is_empty() {
            NONE_U32
        } else {
            self.take_overflow(id)
        }
    }

    #[cold]
    #[inline(never)]
    fn take_overflow(&mut self, id: u32) -> u32 {
        match self.overflow.remove(&id) {
            Some(head) => {
                self.parked -= 1;
                head
            }
            None => NONE_U32,
        }
    }

    #[inline(always)]
    fn span(&mut self, id: u32, version: u32, n: f64) {
        if self.last_id != NONE_U32 {
            self.park_last();
        }
        (self.last_id, self.last_version, self.last_n) = (id, version, n);
    }

    /// Stores the last span recorded (another sample's span follows it: a partial rollout's).
    #[cold]
    #[inline(never)]
    fn park_last(&mut self) {
        self.park((self.last_id, self.last_version, self.last_n));
    }

    /// Sample `id` finished: the span just recorded for it is its last (not stored).
    #[inline(always)]
    fn finish(&mut self, id: u32) {
        if self.last_id == id {
            self.last_id = NONE_U32;
        }
    }

    /// Sample `id` is dropped: its spans are forgotten.
    #[inline(always)]
    fn forget(&mut self, id: u32) {
        if self.last_id == id {
            self.last_id = NONE_U32;
        }
        if self.parked > 0 {
            self.forget_parked(id);
        }
    }

    #[inline(never)]
    fn forget_parked(&mut self, id: u32) {
        let mut h = self.take(id);
        while h != NONE_U32 {
            let next = self.nodes[h as usize].next;
            self.nodes[h as usize].next = self.free;
            self.free = h;
            h = next;
        }
    }

    /// Sample `id` of `length` tokens, whose last span has `version_end`, is trained at `step`.
    /// Inlined: a sample with no stored span (none at all, or its table slot not its own while
    /// nothing overflows) costs one add.
    #[inline(always)]
    fn train(&mut self, sums: &mut LearnSums, id: u32, length: f64, version_end: u32, step: u32) {
        let rest = if self.parked == 0 || (self.overflow.is_empty() && !self.in_table(id)) {
            length
        } else {
            self.train_parked(sums, id, length, step)
        };
        sums.tokens_by_staleness[learn_bin(step, version_end)] += rest;
    }

    /// The stored spans of sample `id` into `sums`: returns `length` minus their tokens (its last
    /// span's), subtracted in the order of the chain.
    #[inline(never)]
    fn train_parked(&mut self, sums: &mut LearnSums, id: u32, length: f64, step: u32) -> f64 {
        let mut h = self.take(id);
        let mut rest = length;
        while h != NONE_U32 {
            let node = self.nodes[h as usize];
            sums.tokens_by_staleness[learn_bin(step, node.version)] += node.n;
            rest -= node.n;
            self.nodes[h as usize].next = self.free;
            self.free = h;
            h = node.next;
        }
        rest
    }
}

/// The bin of [`LearnSums::tokens_by_staleness`] of a span of `version` trained at `step`.
#[inline(always)]
fn learn_bin(step: u32, version: u32) -> usize {
    (step.saturating_sub(version) as usize).min(LEARN_STALENESS_BINS)
}

/// Everything a run produced. `samples` and `segments` are `None` in summary mode.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunResult {
    pub summary: Summary,
    /// Multi-turn agentic runs: their totals and per-trajectory columns.
    pub agentic: Option<crate::pipeline::agentic::AgenticResult>,
    pub samples: Option<SampleColumns>,
    pub segments: Option<SegmentColumns>,
    pub steps: StepColumns,
}

/// The accumulator the pipelines write into.
pub(crate) struct Recorder {
    pub samples: Option<SampleColumns>,
    pub segments: Option<SegmentColumns>,
    pub steps: StepColumns,
    pub s: Summary,
    pub agentic: Option<crate::pipeline::agentic::AgenticResult>,
    staleness_sum: u64,
    finish_staleness_sum: i64,
    group_staleness_sum: u64,
    groups_trained: u64,
    short_sum: u64,
    long_sum: u64,
    /// Counters at the previous step start, for the per-step columns.
    mark_wasted: f64,
    mark_recomputed: f64,
    mark_idle: f64,
    spans: SpanBook,
}

impl Recorder {
    pub fn new(record_samples: bool) -> Self {
        Recorder {
            samples: record_samples.then(SampleColumns::default),
            segments: record_samples.then(SegmentColumns::default),
            steps: StepColumns::default(),
            s: Summary::default(),
            agentic: None,
            staleness_sum: 0,
            finish_staleness_sum: 0,
            group_staleness_sum: 0,
            groups_trained: 0,
            short_sum: 0,
            long_sum: 0,
            mark_wasted: 0.0,
            mark_recomputed: 0.0,
            mark_idle: 0.0,
            spans: SpanBook::new(),
        }
    }

    /// A sample of `length` tokens starts. The counters inline in the pipelines' loops, the
    /// samples columns (samples mode) are pushed out of line.
    #[inline(always)]
    pub fn start(&mut self, length: f64, start_s: f64, version: u32, slot: u32, group: u32) {
        self.s.samples_started += 1;
        self.s.learn.tokens_drawn += length;
        if let Some(c) = &mut self.samples {
            c.start(length, start_s, version, slot, group);
        }
    }

    /// A token span of one version ended (at a weight update, an abort, or the finish).
    #[inline]
    pub fn segment(&mut self, id: u32, version: u32, first: f64, last: f64) {
        self.spans.span(id, version, last - first);
        self.segment_columns(id, version, first, last);
    }

    #[inline(always)]
    fn segment_columns(&mut self, id: u32, version: u32, first: f64, last: f64) {
        if let Some(c) = &mut self.segments {
            c.sample_id.push(id);
            c.version.push(version);
            c.first_token.push(first);
            c.last_token.push(last);
        }
    }

    /// Sample `id` finished decoding at `finish_s`; `decoded` tokens were decoded in its last run.
    #[inline]
    pub fn finish(
        &mut self,
        id: u32,
        decoded: f64,
        finish_s: f64,
        version_end: u32,
        version_finish: u32,
        n_versions: u32,
    ) {
        self.spans.finish(id);
        self.finished(id, decoded, finish_s, version_end, version_finish, n_versions);
    }

    /// [`Recorder::segment`] of sample `id`'s last span (`version`, tokens `first..last`), then
    /// [`Recorder::finish`]: the same records, with the span book touched only when another
    /// sample's span is pending (it is stored, as `segment` would); this span is not (`finish`
    /// would take it back at once).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn finish_with_span(
        &mut self,
        id: u32,
        version: u32,
        first: f64,
        last: f64,
        decoded: f64,
        finish_s: f64,
        version_finish: u32,
        n_versions: u32,
    ) {
        if self.spans.last_id != NONE_U32 {
            self.spans.park_last();
            self.spans.last_id = NONE_U32;
        }
        self.segment_columns(id, version, first, last);
        self.finished(id, decoded, finish_s, version, version_finish, n_versions);
    }

    /// A sample of one token span (`version`, tokens `0..length`) finished at `finish_s`:
    /// [`Recorder::segment`] and [`Recorder::finish`] where no span is pending (the fully
    /// async loop, which records no other span before its end), so the span book is not touched.
    #[inline(always)]
    pub fn finish_whole(&mut self, id: u32, length: f64, finish_s: f64, version: u32, version_finish: u32) {
        debug_assert_eq!(self.spans.last_id, NONE_U32, "a span is pending");
        self.segment_columns(id, version, 0.0, length);
        self.finished(id, length, finish_s, version, version_finish, 1);
    }

    #[inline(always)]
    fn finished(
        &mut self,
        id: u32,
        decoded: f64,
        finish_s: f64,
        version_end: u32,
        version_finish: u32,
        n_versions: u32,
    ) {
        self.s.samples_finished += 1;
        self.s.events += 1;
        self.s.tokens_generated += decoded;
        if let Some(c) = &mut self.samples {
            let i = id as usize;
            c.finish_s[i] = finish_s;
            c.version_end[i] = version_end;
            c.version_finish[i] = version_finish;
            c.n_versions[i] = n_versions;
        }
    }

    /// Tokens decoded by a request that stopped without finishing (update split or abort).
    #[inline]
    pub fn decoded(&mut self, tokens: f64) {
        self.s.tokens_generated += tokens;
    }

    #[inline]
    pub fn prefill(&mut self, tokens: f64, recomputed: bool) {
        self.s.tokens_prefilled += tokens;
        if recomputed {
            self.s.tokens_recomputed += tokens;
        }
    }

    /// A finished sample is discarded: `wasted` tokens were generated for nothing.
    #[inline]
    pub fn drop_sample(&mut self, id: u32, wasted: f64) {
        self.s.samples_dropped += 1;
        self.s.tokens_wasted += wasted;
        self.spans.forget(id);
        if let Some(c) = &mut self.samples {
            c.dropped[id as usize] = true;
        }
    }

    /// A sample still in flight at the end of the run: the policy version of its last token so far
    /// and its token spans (set at its finish or abort otherwise), once its open span is closed.
    #[inline]
    pub fn in_flight_versions(&mut self, id: u32, version_end: u32, n_versions: u32) {
        if n_versions == 0 {
            return; // nothing decoded yet: the versions it started with stand
        }
        if let Some(c) = &mut self.samples {
            let i = id as usize;
            c.version_end[i] = version_end;
            c.n_versions[i] = n_versions;
        }
    }

    /// An in-flight sample is aborted at `t` with `wasted` tokens decoded so far.
    #[inline]
    pub fn abort_sample(&mut self, id: u32, wasted: f64, t: f64, version_end: u32, n_versions: u32) {
        self.s.samples_aborted += 1;
        self.drop_sample(id, wasted);
        if let Some(c) = &mut self.samples {
            let i = id as usize;
            c.aborted[i] = true;
            c.finish_s[i] = t;
            c.version_end[i] = version_end;
            c.n_versions[i] = n_versions;
        }
    }

    /// Records that step `step` (trained at policy version `step`) consumed a sample that started
    /// at `version` and whose last token span has `version_end`.
    #[inline]
    pub fn train_sample(
        &mut self,
        id: u32,
        length: f64,
        version: u32,
        version_end: u32,
        version_finish: u32,
        step: u32,
    ) -> u32 {
        self.spans.train(&mut self.s.learn, id, length, version_end, step);
        self.trained(id, length, step - version, version_finish, step)
    }

    /// [`Recorder::train_sample`] for a sample of one span (its start's `version`) where no span
    /// is stored (the fully async loop's samples, which [`Recorder::finish_whole`] recorded).
    #[inline(always)]
    pub fn train_whole(&mut self, id: u32, length: f64, version: u32, version_finish: u32, step: u32) -> u32 {
        debug_assert_eq!(self.spans.parked, 0, "a span is stored");
        let st = step - version;
        self.s.learn.tokens_by_staleness[(st as usize).min(LEARN_STALENESS_BINS)] += length;
        self.trained(id, length, st, version_finish, step)
    }

    /// The counters of a trained sample at staleness `st`.
    #[inline(always)]
    fn trained(&mut self, id: u32, length: f64, st: u32, version_finish: u32, step: u32) -> u32 {
        self.s.samples_trained += 1;
        self.s.tokens_trained += length;
        self.staleness_sum += st as u64;
        self.finish_staleness_sum += step as i64 - version_finish as i64;
        self.s.staleness_max = self.s.staleness_max.max(st as u64);
        if length < SHORT_TOKENS {
            self.s.samples_trained_short += 1;
            self.short_sum += st as u64;
        } else if length > LONG_TOKENS {
            self.s.samples_trained_long += 1;
            self.long_sum += st as u64;
        }
        if let Some(c) = &mut self.samples {
            c.trained_step[id as usize] = step as i64;
        }
        st
    }

    /// A trained group whose oldest member has staleness `st`.
    #[inline]
    pub fn train_group(&mut self, st: u32) {
        self.groups_trained += 1;
        self.group_staleness_sum += st as u64;
    }

    /// A step starts; `slot_idle_s` is the idle slot-time integrated up to now.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        start_s: f64,
        end_s: f64,
        wait_s: f64,
        staleness_sum: u64,
        staleness_max: u32,
        samples: u32,
        ready_after: u32,
        tokens: f64,
        slot_idle_s: f64,
    ) {
        self.s.steps_started += 1;
        let st = &mut self.steps;
        st.start_s.push(start_s);
        st.end_s.push(end_s);
        st.staleness_mean.push(if samples > 0 { staleness_sum as f64 / samples as f64 } else { 0.0 });
        st.staleness_max.push(staleness_max);
        st.wait_s.push(wait_s);
        st.samples.push(samples);
        st.ready_after.push(ready_after);
        st.tokens.push(tokens);
        st.tokens_wasted.push(self.s.tokens_wasted - self.mark_wasted);
        st.tokens_recomputed.push(self.s.tokens_recomputed - self.mark_recomputed);
        st.slot_idle_s.push(slot_idle_s - self.mark_idle);
        self.mark_wasted = self.s.tokens_wasted;
        self.mark_recomputed = self.s.tokens_recomputed;
        self.mark_idle = slot_idle_s;
    }

    /// The ranks' part of the step being recorded (`Scenario::train`), before [`Recorder::step`].
    pub fn rank_step(&mut self, slowest_s: f64, mean_s: f64) {
        let r = self.steps.ranks.get_or_insert_with(RankColumns::default);
        r.rank_slowest_s.push(slowest_s);
        r.rank_mean_s.push(mean_s);
    }

    /// Fills the derived totals once the run has ended at `end_s`. `slot_busy_s` must be final.
    pub fn finish_run(mut self, end_s: f64, slots: u32, detect_outrun: bool, batch: u32) -> RunResult {
        let s = &mut self.s;
        s.end_s = end_s;
        s.steps = self.steps.end_s.iter().filter(|e| **e <= end_s).count() as u64;
        let capacity = slots as f64 * end_s;
        s.rollout_utilization = if capacity > 0.0 { (s.slot_busy_s / capacity).clamp(0.0, 1.0) } else { 0.0 };
        s.slot_idle_s = (capacity - s.slot_busy_s).max(0.0);
        // fold from +0.0: `sum()` of f64 starts at -0.0, which a run without steps printed as "-0.0"
        s.trainer_busy_s = self
            .steps
            .start_s
            .iter()
            .zip(&self.steps.end_s)
            .map(|(t0, t1)| (end_s.min(*t1) - t0).max(0.0))
            .fold(0.0, |a, b| a + b);
        s.trainer_idle_s = (end_s - s.trainer_busy_s).max(0.0);
        s.samples_in_flight = s.samples_started - s.samples_finished - s.samples_aborted;
        s.samples_ready = s.samples_finished - s.samples_trained - (s.samples_dropped - s.samples_aborted);
        let consumed = s.samples_trained + s.samples_dropped;
        s.drop_fraction = if consumed > 0 { s.samples_dropped as f64 / consumed as f64 } else { 0.0 };
        let mean = |sum: f64, n: u64| if n > 0 { sum / n as f64 } else { f64::NAN };
        s.staleness_mean = mean(self.staleness_sum as f64, s.samples_trained);
        s.staleness_at_finish_mean = mean(self.finish_staleness_sum as f64, s.samples_trained);
        s.staleness_group_mean = mean(self.group_staleness_sum as f64, self.groups_trained);
        s.staleness_mean_short = mean(self.short_sum as f64, s.samples_trained_short);
        s.staleness_mean_long = mean(self.long_sum as f64, s.samples_trained_long);
        s.events += s.steps;
        s.ready_queue_growth_per_step = growth(&self.steps.ready_after);
        s.generation_outruns_training = detect_outrun
            && self.steps.ready_after.len() >= 6
            && s.ready_queue_growth_per_step > 0.01 * batch as f64
            && *self.steps.ready_after.last().unwrap() as f64 >= batch as f64;
        RunResult {
            summary: self.s,
            agentic: self.agentic,
            samples: self.samples,
            segments: self.segments,
            steps: self.steps,
        }
    }
}

/// One summary value, typed as the schema declares it ([`crate::schema::SUMMARY`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    U64(u64),
    F64(f64),
    Bool(bool),
}

impl Summary {
    /// Every value with its name, in the order of [`crate::schema::SUMMARY`] (a test checks the
    /// names and types against it).
    pub fn values(&self) -> [(&'static str, Num); 38] {
        use Num::{Bool as B, F64 as F, U64 as U};
        [
            ("steps", U(self.steps)),
            ("steps_started", U(self.steps_started)),
            ("end_s", F(self.end_s)),
            ("rollout_utilization", F(self.rollout_utilization)),
            ("slot_busy_s", F(self.slot_busy_s)),
            ("slot_idle_s", F(self.slot_idle_s)),
            ("trainer_busy_s", F(self.trainer_busy_s)),
            ("trainer_idle_s", F(self.trainer_idle_s)),
            ("samples_started", U(self.samples_started)),
            ("samples_finished", U(self.samples_finished)),
            ("samples_trained", U(self.samples_trained)),
            ("samples_dropped", U(self.samples_dropped)),
            ("samples_aborted", U(self.samples_aborted)),
            ("groups_requeued", U(self.groups_requeued)),
            ("staleness_at_finish_mean", F(self.staleness_at_finish_mean)),
            ("staleness_group_mean", F(self.staleness_group_mean)),
            ("tokens_prefilled", F(self.tokens_prefilled)),
            ("tokens_recomputed", F(self.tokens_recomputed)),
            ("preemptions", U(self.preemptions)),
            ("kv_wait_s", F(self.kv_wait_s)),
            ("stalled", B(self.stalled)),
            ("samples_ready", U(self.samples_ready)),
            ("samples_in_flight", U(self.samples_in_flight)),
            ("drop_fraction", F(self.drop_fraction)),
            ("staleness_mean", F(self.staleness_mean)),
            ("staleness_max", U(self.staleness_max)),
            ("staleness_mean_short", F(self.staleness_mean_short)),
            ("staleness_mean_long", F(self.staleness_mean_long)),
            ("samples_trained_short", U(self.samples_trained_short)),
            ("samples_trained_long", U(self.samples_trained_long)),
            ("tokens_generated", F(self.tokens_generated)),
            ("tokens_trained", F(self.tokens_trained)),
            ("tokens_wasted", F(self.tokens_wasted)),
            ("tokens_pending", F(self.tokens_pending)),
            ("events", U(self.events)),
            ("ready_queue_growth_per_step", F(self.ready_queue_growth_per_step)),
            ("generation_outruns_training", B(self.generation_outruns_training)),
            ("throughput_ratio", F(self.throughput_ratio)),
        ]
    }
}

/// One recorded column, typed as the schema declares it ([`crate::schema::FRAMES`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Col {
    F64(Vec<f64>),
    I64(Vec<i64>),
    U32(Vec<u32>),
    Bool(Vec<bool>),
}

impl Col {
    /// The column's [`crate::schema::Dtype`].
    pub fn dtype(&self) -> crate::schema::Dtype {
        use crate::schema::Dtype;
        match self {
            Col::F64(_) => Dtype::F64,
            Col::I64(_) => Dtype::I64,
            Col::U32(_) => Dtype::U32,
            Col::Bool(_) => Dtype::Bool,
        }
    }
}

impl SampleColumns {
    /// The row of a sample that starts ([`Recorder::start`]).
    #[inline(never)]
    fn start(&mut self, length: f64, start_s: f64, version: u32, slot: u32, group: u32) {
        self.length_tokens.push(length);
        self.group_id.push(group);
        self.start_s.push(start_s);
        self.finish_s.push(f64::NAN);
        self.version_start.push(version);
        self.version_end.push(version);
        self.version_finish.push(NONE_U32);
        self.n_versions.push(1);
        self.trained_step.push(-1);
        self.dropped.push(false);
        self.aborted.push(false);
        self.slot.push(slot);
    }

    /// The columns with their names, in the order of [`crate::schema::SAMPLES`].
    pub fn into_named(self) -> Vec<(&'static str, Col)> {
        vec![
            ("length_tokens", Col::F64(self.length_tokens)),
            ("group_id", Col::U32(self.group_id)),
            ("version_end", Col::U32(self.version_end)),
            ("version_finish", Col::U32(self.version_finish)),
            ("n_versions", Col::U32(self.n_versions)),
            ("aborted", Col::Bool(self.aborted)),
            ("start_s", Col::F64(self.start_s)),
            ("finish_s", Col::F64(self.finish_s)),
            ("version_start", Col::U32(self.version_start)),
            ("trained_step", Col::I64(self.trained_step)),
            ("dropped", Col::Bool(self.dropped)),
            ("slot", Col::U32(self.slot)),
        ]
    }
}

impl SegmentColumns {
    /// The columns with their names, in the order of [`crate::schema::SEGMENTS`].
    pub fn into_named(self) -> Vec<(&'static str, Col)> {
        vec![
            ("sample_id", Col::U32(self.sample_id)),
            ("version", Col::U32(self.version)),
            ("first_token", Col::F64(self.first_token)),
            ("last_token", Col::F64(self.last_token)),
        ]
    }
}

impl StepColumns {
    /// The columns with their names, in the order of [`crate::schema::STEPS`] (then
    /// [`crate::schema::RANK_STEPS`]'s with `Scenario::train`).
    pub fn into_named(self) -> Vec<(&'static str, Col)> {
        let mut v = vec![
            ("tokens_wasted", Col::F64(self.tokens_wasted)),
            ("tokens_recomputed", Col::F64(self.tokens_recomputed)),
            ("slot_idle_s", Col::F64(self.slot_idle_s)),
            ("start_s", Col::F64(self.start_s)),
            ("end_s", Col::F64(self.end_s)),
            ("staleness_mean", Col::F64(self.staleness_mean)),
            ("staleness_max", Col::U32(self.staleness_max)),
            ("wait_s", Col::F64(self.wait_s)),
            ("samples", Col::U32(self.samples)),
            ("ready_after", Col::U32(self.ready_after)),
            ("tokens", Col::F64(self.tokens)),
        ];
        if let Some(r) = self.ranks {
            v.push(("rank_slowest_s", Col::F64(r.rank_slowest_s)));
            v.push(("rank_mean_s", Col::F64(r.rank_mean_s)));
        }
        v
    }
}

/// Least-squares slope of `y` against its index, over the second half of the series.
fn growth(y: &[u32]) -> f64 {
    let tail = &y[y.len() / 2..];
    let n = tail.len() as f64;
    if tail.len() < 2 {
        return 0.0;
    }
    let mx = (n - 1.0) / 2.0;
    let my = tail.iter().map(|v| *v as f64).sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, v) in tail.iter().enumerate() {
        let dx = i as f64 - mx;
        sxy += dx * (*v as f64 - my);
        sxx += dx * dx;
    }
    sxy / sxx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{self, Dtype};

    fn same(named: &[(&str, Dtype)], cols: &[schema::Column]) {
        let want: Vec<(&str, Dtype)> = cols.iter().map(|c| (c.name, c.dtype)).collect();
        assert_eq!(named, &want[..]);
    }

    #[test]
    fn summary_and_columns_follow_the_schema() {
        let v: Vec<(&str, Dtype)> = Summary::default()
            .values()
            .iter()
            .map(|(n, x)| {
                (
                    *n,
                    match x {
                        Num::U64(_) => Dtype::U64,
                        Num::F64(_) => Dtype::F64,
                        Num::Bool(_) => Dtype::Bool,
                    },
                )
            })
            .collect();
        same(&v, schema::SUMMARY);
        let types = |c: Vec<(&'static str, Col)>| c.iter().map(|(n, c)| (*n, c.dtype())).collect::<Vec<_>>();
        same(&types(SampleColumns::default().into_named()), schema::SAMPLES);
        same(&types(SegmentColumns::default().into_named()), schema::SEGMENTS);
        same(&types(StepColumns::default().into_named()), schema::STEPS);
    }

    #[test]
    fn span_book_sums_are_the_plain_lists_sums_through_collisions_and_growth() {
        // sample ids up to 3,000 apart, far beyond the first table (1,024 slots): chains collide,
        // spill into the overflow map and make the table grow. The sums must be those of plain
        // per-sample lists of spans, bit for bit: the same additions in the same order (a chain is
        // newest first), whatever the table does.
        let mut rec = Recorder::new(false);
        let mut want = [0.0f64; LEARN_STALENESS_BINS + 1];
        let mut stored: std::collections::HashMap<u32, Vec<(u32, f64)>> = Default::default();
        let mut pending: Option<(u32, u32, f64)> = None;
        let mut live: Vec<u32> = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move |m: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        let (mut next_id, mut trained, mut dropped) = (0u32, 0, 0);
        for i in 0..20_000u32 {
            let step = i / 100; // the training step (the policy version) now
            let op = rnd(10);
            if live.len() < 8 || op < 4 {
                // more starts than ends: up to about 2,000 samples live
                live.push(next_id);
                next_id += 1 + rnd(3_000) as u32;
                continue;
            }
            let k = rnd(live.len() as u64) as usize;
            let id = live[k];
            match op {
                4..=6 => {
                    // a span closes (an update or the finish)
                    let (version, n) = (step.saturating_sub(rnd(3) as u32), (1 + rnd(1_000)) as f64 * 0.37);
                    rec.segment(id, version, 0.0, n);
                    if let Some(p) = pending.replace((id, version, n)) {
                        stored.entry(p.0).or_default().push((p.1, p.2));
                    }
                }
                7 | 8 => {
                    // it finishes (its pending span is its last), then it is trained
                    rec.finish(id, 0.0, 0.0, 0, 0, 1);
                    if matches!(pending, Some((i, _, _)) if i == id) {
                        pending = None;
                    }
                    let (length, version_end) = ((1 + rnd(5_000)) as f64 * 0.71, step.saturating_sub(rnd(20) as u32));
                    rec.train_sample(id, length, 0, version_end, 0, step);
                    let bin = |v: u32| (step.saturating_sub(v) as usize).min(LEARN_STALENESS_BINS);
                    let mut rest = length;
                    for &(v, n) in stored.remove(&id).unwrap_or_default().iter().rev() {
                        want[bin(v)] += n;
                        rest -= n;
                    }
                    want[bin(version_end)] += rest;
                    live.swap_remove(k);
                    trained += 1;
                }
                _ => {
                    rec.drop_sample(id, 0.0);
                    if matches!(pending, Some((i, _, _)) if i == id) {
                        pending = None;
                    }
                    stored.remove(&id);
                    live.swap_remove(k);
                    dropped += 1;
                }
            }
        }
        assert!(rec.spans.table.len() > 1024, "the table grew: {}", rec.spans.table.len());
        assert!(trained > 1_000 && dropped > 500, "{trained} trained, {dropped} dropped");
        assert_eq!(rec.spans.parked, stored.len());
        let got = rec.s.learn.tokens_by_staleness;
        assert!(got.iter().all(|v| *v > 0.0), "{got:?}");
        assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{got:?} vs {want:?}");
    }

    #[test]
    fn growth_of_a_line_is_its_slope() {
        let y: Vec<u32> = (0..10).map(|i| 5 + 3 * i).collect();
        assert!((super::growth(&y) - 3.0).abs() < 1e-12);
        assert_eq!(super::growth(&[4, 4, 4, 4]), 0.0);
    }
}
