//! Helpers shared by the engine's integration tests: digests of every result column, the summary as
//! named values, the DeepSeek-R1 length histogram the Python goldens use, and a deterministic
//! pseudo-random generator of valid scenarios that sets every field.
//!
//! The destructuring patterns and struct literals below name every field on purpose (no `..`): a
//! field added to `Scenario`, `Summary` or a column set does not compile here until the tests
//! digest it, compare it and generate it.

#![allow(dead_code)]

use std::sync::OnceLock;

use rollsim_core::record::SegmentColumns;
use rollsim_core::scenario::{BatchOrder, Decode, LagRelease, OnStale, OnUpdate, PartialRollout, Prefill, Streaming};
use rollsim_core::{Lengths, Pipeline, RngKind, RunResult, SampleColumns, Scenario, StepColumns, Summary};

/// FNV-1a (64 bit) over bytes: a small, dependency-free digest of result columns.
#[derive(Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn bytes(&mut self, b: &[u8]) {
        for x in b {
            self.0 ^= *x as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    pub fn name(&mut self, s: &str) {
        self.bytes(s.as_bytes());
        self.bytes(&[0]);
    }
    pub fn f64s(&mut self, name: &str, v: &[f64]) {
        self.name(name);
        for x in v {
            self.bytes(&x.to_bits().to_le_bytes());
        }
    }
    pub fn u32s(&mut self, name: &str, v: &[u32]) {
        self.name(name);
        for x in v {
            self.bytes(&x.to_le_bytes());
        }
    }
    pub fn i64s(&mut self, name: &str, v: &[i64]) {
        self.name(name);
        for x in v {
            self.bytes(&x.to_le_bytes());
        }
    }
    pub fn bools(&mut self, name: &str, v: &[bool]) {
        self.name(name);
        for x in v {
            self.bytes(&[*x as u8]);
        }
    }
    pub fn finish(self) -> u64 {
        self.0
    }
}

pub fn digest_samples(c: &SampleColumns) -> u64 {
    let SampleColumns {
        length_tokens,
        group_id,
        start_s,
        finish_s,
        version_start,
        version_end,
        version_finish,
        n_versions,
        trained_step,
        dropped,
        aborted,
        slot,
    } = c;
    let mut h = Fnv::default();
    h.f64s("length_tokens", length_tokens);
    h.u32s("group_id", group_id);
    h.f64s("start_s", start_s);
    h.f64s("finish_s", finish_s);
    h.u32s("version_start", version_start);
    h.u32s("version_end", version_end);
    h.u32s("version_finish", version_finish);
    h.u32s("n_versions", n_versions);
    h.i64s("trained_step", trained_step);
    h.bools("dropped", dropped);
    h.bools("aborted", aborted);
    h.u32s("slot", slot);
    h.finish()
}

pub fn digest_segments(c: &SegmentColumns) -> u64 {
    let SegmentColumns { sample_id, version, first_token, last_token } = c;
    let mut h = Fnv::default();
    h.u32s("sample_id", sample_id);
    h.u32s("version", version);
    h.f64s("first_token", first_token);
    h.f64s("last_token", last_token);
    h.finish()
}

pub fn digest_steps(c: &StepColumns) -> u64 {
    let StepColumns {
        start_s,
        end_s,
        staleness_mean,
        staleness_max,
        wait_s,
        samples,
        ready_after,
        tokens,
        tokens_wasted,
        tokens_recomputed,
        slot_idle_s,
        ranks,
    } = c;
    let mut h = Fnv::default();
    h.f64s("start_s", start_s);
    h.f64s("end_s", end_s);
    h.f64s("staleness_mean", staleness_mean);
    h.u32s("staleness_max", staleness_max);
    h.f64s("wait_s", wait_s);
    h.u32s("samples", samples);
    h.u32s("ready_after", ready_after);
    h.f64s("tokens", tokens);
    h.f64s("tokens_wasted", tokens_wasted);
    h.f64s("tokens_recomputed", tokens_recomputed);
    h.f64s("slot_idle_s", slot_idle_s);
    if let Some(r) = ranks {
        h.f64s("rank_slowest_s", &r.rank_slowest_s);
        h.f64s("rank_mean_s", &r.rank_mean_s);
    }
    h.finish()
}

/// Every summary value by name, as `f64` (counts and flags converted).
pub fn summary_fields(s: &Summary) -> Vec<(&'static str, f64)> {
    let Summary {
        steps,
        steps_started,
        end_s,
        rollout_utilization,
        slot_busy_s,
        slot_idle_s,
        trainer_busy_s,
        trainer_idle_s,
        samples_started,
        samples_finished,
        samples_trained,
        samples_dropped,
        samples_aborted,
        groups_requeued,
        samples_ready,
        samples_in_flight,
        drop_fraction,
        staleness_mean,
        staleness_max,
        staleness_at_finish_mean,
        staleness_group_mean,
        staleness_mean_short,
        staleness_mean_long,
        samples_trained_short,
        samples_trained_long,
        tokens_generated,
        tokens_trained,
        tokens_wasted,
        tokens_pending,
        tokens_prefilled,
        tokens_recomputed,
        preemptions,
        kv_wait_s,
        events,
        ready_queue_growth_per_step,
        generation_outruns_training,
        stalled,
        throughput_ratio,
        learn: _, // derived from the spans the goldens already pin
    } = s;
    let b = |x: &bool| if *x { 1.0 } else { 0.0 };
    vec![
        ("steps", *steps as f64),
        ("steps_started", *steps_started as f64),
        ("end_s", *end_s),
        ("rollout_utilization", *rollout_utilization),
        ("slot_busy_s", *slot_busy_s),
        ("slot_idle_s", *slot_idle_s),
        ("trainer_busy_s", *trainer_busy_s),
        ("trainer_idle_s", *trainer_idle_s),
        ("samples_started", *samples_started as f64),
        ("samples_finished", *samples_finished as f64),
        ("samples_trained", *samples_trained as f64),
        ("samples_dropped", *samples_dropped as f64),
        ("samples_aborted", *samples_aborted as f64),
        ("groups_requeued", *groups_requeued as f64),
        ("samples_ready", *samples_ready as f64),
        ("samples_in_flight", *samples_in_flight as f64),
        ("drop_fraction", *drop_fraction),
        ("staleness_mean", *staleness_mean),
        ("staleness_max", *staleness_max as f64),
        ("staleness_at_finish_mean", *staleness_at_finish_mean),
        ("staleness_group_mean", *staleness_group_mean),
        ("staleness_mean_short", *staleness_mean_short),
        ("staleness_mean_long", *staleness_mean_long),
        ("samples_trained_short", *samples_trained_short as f64),
        ("samples_trained_long", *samples_trained_long as f64),
        ("tokens_generated", *tokens_generated),
        ("tokens_trained", *tokens_trained),
        ("tokens_wasted", *tokens_wasted),
        ("tokens_pending", *tokens_pending),
        ("tokens_prefilled", *tokens_prefilled),
        ("tokens_recomputed", *tokens_recomputed),
        ("preemptions", *preemptions as f64),
        ("kv_wait_s", *kv_wait_s),
        ("events", *events as f64),
        ("ready_queue_growth_per_step", *ready_queue_growth_per_step),
        ("generation_outruns_training", b(generation_outruns_training)),
        ("stalled", b(stalled)),
        ("throughput_ratio", *throughput_ratio),
    ]
}

/// A digest of everything a run produced: every summary value (bit for bit) and every column.
pub fn digest_run(r: &RunResult) -> u64 {
    let mut h = Fnv::default();
    for (name, v) in summary_fields(&r.summary) {
        h.f64s(name, &[v]);
    }
    h.bytes(&r.samples.as_ref().map_or(0, digest_samples).to_le_bytes());
    h.bytes(&r.segments.as_ref().map_or(0, digest_segments).to_le_bytes());
    h.bytes(&digest_steps(&r.steps).to_le_bytes());
    h.finish()
}

/// Bitwise equality of floats (NaN equals NaN).
pub fn same_f64s(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// DeepSeek-R1 production output lengths (the histogram `rollsim.datasets.deepseek_r1_serving`
/// loads from `python/rollsim/datasets/`), clipped at `max_tokens` as the Python `Empirical` does.
pub fn deepseek_r1(max_tokens: f64) -> Lengths {
    static DATA: OnceLock<(Vec<f64>, Vec<f64>)> = OnceLock::new();
    let (tokens, counts) = DATA.get_or_init(|| {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../python/rollsim/datasets/deepseek_r1_serving_output_tokens.csv.gz"
        );
        let out = std::process::Command::new("gzip")
            .args(["-dc", path])
            .output()
            .unwrap_or_else(|e| panic!("these tests read {path} with `gzip -dc`: {e}"));
        assert!(out.status.success(), "gzip -dc {path} failed");
        let text = String::from_utf8(out.stdout).expect("UTF-8 CSV");
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("tokens,count"));
        lines
            .map(|l| {
                let (a, b) = l.split_once(',').expect("two columns");
                (a.parse::<f64>().expect("tokens"), b.parse::<f64>().expect("count"))
            })
            .unzip()
    });
    let values = tokens.iter().map(|v| v.min(max_tokens)).collect();
    Lengths::empirical(values, Some(counts.clone())).expect("valid histogram")
}

/// SplitMix64: the test generator's own source (independent of the engine's generators).
pub struct Gen(u64);

impl Gen {
    pub fn new(seed: u64) -> Self {
        Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x1234_5678)
    }
    pub fn u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform integer in [lo, hi].
    pub fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.u64() % (hi - lo + 1)
    }
    pub fn float(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    /// A float rounded to 1/8 (exact binary values keep runs readable).
    pub fn eighths(&mut self, lo: f64, hi: f64) -> f64 {
        (self.float(lo, hi) * 8.0).round() / 8.0
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.u64() as usize % xs.len()]
    }
}

/// Which lengths the generator may use.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum LengthKinds {
    /// Lognormal (its draws use the platform's `exp`/`ln`) and empirical.
    Any,
    /// Empirical only: runs are bit-identical on every platform (see docs/determinism.md).
    EmpiricalOnly,
}

/// The fields beyond the chapter's that a generated scenario changes from their defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Extra {
    Group,
    Decode,
    Prefill,
    Pause,
    OnStale,
    Admission,
    Lag,
    ReadyBound,
    Order,
    OnUpdate,
    PerToken,
    Correlation,
}

const EXTRAS: [Extra; 12] = [
    Extra::Group,
    Extra::Decode,
    Extra::Prefill,
    Extra::Pause,
    Extra::OnStale,
    Extra::Admission,
    Extra::Lag,
    Extra::ReadyBound,
    Extra::Order,
    Extra::OnUpdate,
    Extra::PerToken,
    Extra::Correlation,
];

/// A valid scenario drawn from `seed`. Every field is set explicitly; each field beyond the
/// chapter's keeps its default unless the draw changes it: about a third of the scenarios change
/// none (chapter-shaped), a third exactly one (so a field the fast path ignored would show up as a
/// difference on its own), the rest several at once.
pub fn scenario(seed: u64, kinds: LengthKinds) -> Scenario {
    let mut g = Gen::new(seed);
    let u = g.unit();
    let extras: Vec<Extra> = if u < 0.3 {
        vec![]
    } else if u < 0.65 {
        vec![g.pick(&EXTRAS)]
    } else {
        EXTRAS.iter().copied().filter(|_| g.chance(0.35)).collect()
    };
    let on = |e: Extra| extras.contains(&e);

    let group_size = if on(Extra::Group) { g.pick(&[2u32, 3, 4]) } else { 1 };
    let batch_size = group_size * g.int(1, 12) as u32;
    let per = g.pick(&[1u32, 2, 4, 8]);
    let rollout_slots = per * g.int(1, 40 / per as u64) as u32;
    let fully_async = g.chance(0.7);

    // lengths
    let empirical = kinds == LengthKinds::EmpiricalOnly || g.chance(0.5);
    let lengths = if empirical {
        let n = g.int(1, 30) as usize;
        let values: Vec<f64> = (0..n).map(|_| g.int(1, 6000) as f64).collect();
        if on(Extra::Correlation) && n >= 2 {
            // grouped data: prompts of a few values each
            let mut offsets = vec![0usize];
            while *offsets.last().unwrap() < n {
                let next = (*offsets.last().unwrap() + g.int(1, 4) as usize).min(n);
                offsets.push(next);
            }
            Lengths::grouped(values, offsets).expect("valid groups")
        } else if g.chance(0.5) {
            let mut weights: Vec<f64> =
                (0..n).map(|_| g.int(0, 9) as f64 + if g.chance(0.2) { 0.0 } else { 0.5 }).collect();
            if weights.iter().all(|w| *w == 0.0) {
                weights[0] = 1.0;
            }
            Lengths::empirical(values, Some(weights)).expect("valid weights")
        } else {
            Lengths::empirical(values, None).expect("valid values")
        }
    } else {
        Lengths::LogNormal {
            mu: g.float(5.0, 8.0),
            sigma: g.float(0.0, 1.4),
            max_tokens: g.pick(&[2048.0, 8192.0, 16384.0]),
            group_correlation: if on(Extra::Correlation) { g.float(0.1, 0.9) } else { 0.0 },
        }
    };
    let longest = lengths.max_tokens();

    let prompt_tokens = if on(Extra::Prefill) { g.pick(&[0.0, 100.0, 300.0]) } else { 0.0 };
    let prefill = if on(Extra::Prefill) {
        Prefill {
            prompt_tokens,
            prefill_tokens_per_s: g.pick(&[f64::INFINITY, 2000.0, 5000.0]),
            prefix_sharing: g.chance(0.5),
            clear_cache_on_update: g.chance(0.5),
            ..Prefill::default()
        }
    } else {
        let d = Prefill::default();
        Prefill {
            prompt_tokens: d.prompt_tokens,
            prefill_tokens_per_s: d.prefill_tokens_per_s,
            prefix_sharing: d.prefix_sharing,
            clear_cache_on_update: d.clear_cache_on_update,
            ..d
        }
    };

    let mut decode_tokens_per_s = g.eighths(10.0, 60.0);
    let decode = if on(Extra::Decode) {
        let table = per > 1 && g.chance(0.3);
        let throughput_table = if table {
            let mut t = vec![(1u32, decode_tokens_per_s)];
            let mut n = 1;
            let mut tp = decode_tokens_per_s;
            while n < per {
                n = (n * 2).min(per);
                tp *= g.float(1.2, 1.9);
                t.push((n, (tp * 8.0).round() / 8.0));
            }
            t
        } else {
            vec![]
        };
        let kv = g.chance(0.5);
        Decode {
            slots_per_instance: per,
            slowdown_per_seq: if table { 0.0 } else { g.pick(&[0.0, 0.01, 0.05, 0.2]) },
            throughput_table,
            kv_cache_tokens: if kv {
                (prompt_tokens + longest + 1.0) * g.float(1.0, 3.0).floor().max(1.0) + g.eighths(0.0, 500.0)
            } else {
                0.0
            },
            ..Decode::default()
        }
    } else {
        let d = Decode::default();
        Decode {
            slots_per_instance: if g.chance(0.3) { per } else { d.slots_per_instance },
            slowdown_per_seq: d.slowdown_per_seq,
            throughput_table: d.throughput_table,
            kv_cache_tokens: d.kv_cache_tokens,
            ..Decode::default()
        }
    };
    if let Some(&(_, tp)) = decode.throughput_table.first() {
        decode_tokens_per_s = tp;
    }

    let groups_per_batch = batch_size / group_size;
    let pipeline = if fully_async {
        let d = Streaming::default();
        let order = if on(Extra::Order) { g.int(0, 2) } else { 0 };
        Pipeline::FullyAsync(Streaming {
            max_staleness: if g.chance(0.5) { Some(g.int(0, 4) as u32) } else { d.max_staleness },
            on_stale: if on(Extra::OnStale) { OnStale::Requeue } else { d.on_stale },
            admission_eta: if on(Extra::Admission) { Some(g.int(0, 3) as u32) } else { d.admission_eta },
            max_lag_samples: if on(Extra::Lag) {
                Some(batch_size as u64 + g.int(0, 3 * batch_size as u64))
            } else {
                d.max_lag_samples
            },
            max_ready_groups: if on(Extra::ReadyBound) {
                Some(groups_per_batch + g.int(0, 10) as u32)
            } else {
                d.max_ready_groups
            },
            batch_order: match order {
                0 => d.batch_order,
                1 => BatchOrder::OldestFirst,
                _ => {
                    let q0 = g.int(0, groups_per_batch as u64 / 2) as u32;
                    let q1 = g.int(0, (groups_per_batch - q0) as u64) as u32;
                    BatchOrder::LengthBalanced { edges: vec![800.0, 3000.0], quotas: vec![q0, q1, 0] }
                }
            },
            // drawn last (below), so that the other fields' draws stay as they were
            lag_release: d.lag_release,
            on_update: if on(Extra::OnUpdate) {
                g.pick(&[
                    OnUpdate::AbortDrop,
                    OnUpdate::AbortResubmit,
                    OnUpdate::Wait,
                    OnUpdate::KeepRecompute,
                    OnUpdate::KeepStale,
                ])
            } else {
                d.on_update
            },
        })
    } else {
        let d = PartialRollout::default();
        let over = g.u64() % 4;
        Pipeline::OffPolicy {
            k: g.int(0, 3) as u32,
            partial: PartialRollout {
                over_sampling: match over {
                    0 => d.over_sampling,
                    1 => Some(f64::INFINITY),
                    _ => Some(g.eighths(0.0, 2.0)),
                },
                keep_partial: if over == 0 { d.keep_partial } else { g.chance(0.5) },
            },
        }
    };

    let mut sc = Scenario {
        rollout_slots,
        decode_tokens_per_s,
        batch_size,
        train_step_s: g.eighths(0.0, 200.0),
        train_s_per_token: if on(Extra::PerToken) { g.pick(&[0.001, 0.004, 0.01]) } else { 0.0 },
        horizon_s: g.eighths(50.0, 6000.0),
        lengths,
        pipeline,
        group_size,
        decode,
        prefill,
        rollout_pause_s: if on(Extra::Pause) { g.pick(&[0.5, 3.0, 20.0]) } else { 0.0 },
        seed: g.u64(),
        rng: if g.chance(0.5) { RngKind::Fast } else { RngKind::Python },
        agentic: None,
        sync_every: 1,
        staleness_check: rollsim_core::scenario::StalenessCheck::Start,
        train: None,
        length_drift: None,
    };
    if let Pipeline::FullyAsync(o) = &mut sc.pipeline {
        if o.max_lag_samples.is_some() && g.chance(0.5) {
            o.lag_release = LagRelease::Sync;
        }
    }
    sc
}

/// `tests/batched_cases.py`'s `base` and `grouped` (the goldens' scenarios): 4 instances of 16 slots.
pub fn golden_bases() -> (Scenario, Scenario) {
    let base = Scenario {
        rollout_slots: 64,
        decode_tokens_per_s: 40.0,
        batch_size: 128,
        train_step_s: 90.0,
        horizon_s: 4.0 * 3600.0,
        lengths: deepseek_r1(16384.0),
        decode: Decode { slots_per_instance: 16, slowdown_per_seq: 0.01, ..Decode::default() },
        seed: 3,
        ..Scenario::default()
    };
    let grouped = Scenario {
        group_size: 4,
        prefill: Prefill { prompt_tokens: 500.0, prefill_tokens_per_s: 20000.0, ..Prefill::default() },
        ..base.clone()
    };
    (base, grouped)
}
