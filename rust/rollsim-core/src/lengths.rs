//! Answer-length distributions, in tokens.

use crate::error::{Error, Result};
use crate::rng::Source;
use crate::schema;
use std::sync::Arc;

/// The longest answer accepted, tokens (2^40; the Python API's `rollsim.lengths.MAX_TOKENS`): every
/// sum formed from lengths (a batch's or a run's tokens, value x weight over a histogram) stays
/// far below the f64 limit.
pub const MAX_TOKENS: f64 = schema::LENGTHS_MAX_TOKENS.hi;
/// The shortest empirical length accepted, tokens (2^-40; `rollsim.lengths.MIN_TOKENS`).
pub const MIN_TOKENS: f64 = schema::LENGTHS_VALUES.lo;
/// Largest total of empirical weights (2^64; `rollsim.lengths.MAX_WEIGHT_SUM`).
pub const MAX_WEIGHT_SUM: f64 = 18_446_744_073_709_551_616.0;
/// `|mu|` bound of lognormal lengths (`rollsim.lengths.MU_BOUND`).
pub const MU_BOUND: f64 = schema::LENGTHS_MU.hi;
/// `sigma` bound of lognormal lengths (`rollsim.lengths.MAX_SIGMA`): with `|mu| <= 100` every
/// quantile and the mean of the untruncated distribution are finite and > 0.
pub const MAX_SIGMA: f64 = schema::LENGTHS_SIGMA.hi;

/// Where answer lengths come from. Lengths are `f64` tokens: lognormal draws are continuous,
/// as in the chapter's model.
#[derive(Debug, Clone, PartialEq)]
pub enum Lengths {
    /// `min(exp(N(mu, sigma^2)), max_tokens)`. With `group_correlation = rho > 0`, the answers of
    /// one prompt share a difficulty: `log length = mu + sigma (sqrt(rho) z_prompt + sqrt(1 - rho)
    /// z_answer)`, so each answer keeps the same marginal distribution and two answers of one prompt
    /// have log-length correlation rho.
    LogNormal { mu: f64, sigma: f64, max_tokens: f64, group_correlation: f64 },
    /// Draws with replacement from `values`, optionally weighted by counts.
    ///
    /// In `rng = "python"` mode a draw equals CPython's `rng.choices(values, weights)[0]`:
    /// `values[floor(random() * n)]` without weights, bisection of `random() * total` in the running
    /// sums of the weights otherwise.
    ///
    /// With `group_offsets` (grouped data, e.g. several answers per prompt), a group draws one
    /// prompt uniformly and then its answers uniformly from that prompt's values
    /// `values[offsets[p]..offsets[p + 1]]` (weights are not used then).
    Empirical { values: Arc<[f64]>, cum_weights: Option<Arc<[f64]>>, group_offsets: Option<Arc<[usize]>> },
}

impl Lengths {
    /// Builds an empirical distribution; `weights` are counts (histogram) and may be absent.
    pub fn empirical(values: Vec<f64>, weights: Option<Vec<f64>>) -> Result<Self> {
        check_values(&values)?;
        let cum_weights = match weights {
            None => None,
            Some(w) => {
                check_weight_count(values.len(), w.len())?;
                let mut acc = 0.0;
                let cum: Vec<f64> = w
                    .iter()
                    .map(|x| {
                        acc += x;
                        acc
                    })
                    .collect();
                check_cum_weights(&cum)?;
                Some(cum.into())
            }
        };
        Ok(Lengths::Empirical { values: values.into(), cum_weights, group_offsets: None })
    }

    /// Grouped empirical data: `values` sorted by group, `offsets` (length groups + 1, from 0 to
    /// `values.len()`, strictly increasing) delimit the groups.
    pub fn grouped(values: Vec<f64>, offsets: Vec<usize>) -> Result<Self> {
        check_values(&values)?;
        check_offsets(values.len(), &offsets)?;
        Ok(Lengths::Empirical { values: values.into(), cum_weights: None, group_offsets: Some(offsets.into()) })
    }

    /// Checks the parameters; errors name the field.
    pub fn validate(&self) -> Result<()> {
        match self {
            Lengths::LogNormal { mu, sigma, max_tokens, group_correlation } => {
                // the ranges and messages of the schema's `LogNormal` part
                schema::LENGTHS_GROUP_CORRELATION.check(*group_correlation)?;
                schema::LENGTHS_MU.check(*mu)?;
                schema::LENGTHS_SIGMA.check(*sigma)?;
                schema::LENGTHS_MAX_TOKENS.check(*max_tokens)
            }
            // the same checks as the constructors, on the stored arrays (no copies: runs validate
            // their scenario, and sweeps run many scenarios sharing one data set)
            Lengths::Empirical { values, cum_weights, group_offsets } => {
                check_values(values)?;
                if let Some(c) = cum_weights {
                    check_weight_count(values.len(), c.len())?;
                    check_cum_weights(c)?;
                }
                if let Some(o) = group_offsets {
                    check_offsets(values.len(), o)?;
                }
                Ok(())
            }
        }
    }

    /// Mean length in tokens (exact for `Empirical`, from the truncated lognormal's closed form otherwise).
    /// The longest answer that can be drawn, tokens (`max_tokens` for lognormal lengths).
    pub fn max_tokens(&self) -> f64 {
        match self {
            Lengths::LogNormal { max_tokens, .. } => *max_tokens,
            Lengths::Empirical { values, cum_weights: Some(c), .. } => {
                let prev = std::iter::once(0.0).chain(c.iter().copied());
                values.iter().zip(c.iter().zip(prev)).filter(|(_, (c, p))| *c > p).map(|(v, _)| *v).fold(0.0, f64::max)
            }
            Lengths::Empirical { values, .. } => values.iter().copied().fold(0.0, f64::max),
        }
    }

    pub fn mean_tokens(&self) -> f64 {
        match self {
            Lengths::LogNormal { mu, sigma, max_tokens, .. } => truncated_lognormal_mean(*mu, *sigma, *max_tokens),
            Lengths::Empirical { values, cum_weights, group_offsets } => match cum_weights {
                None if group_offsets.is_some() => {
                    // a uniformly drawn group, then a uniformly drawn value within it
                    let o = group_offsets.as_ref().unwrap();
                    let g = o.len() - 1;
                    o.windows(2).map(|w| values[w[0]..w[1]].iter().sum::<f64>() / (w[1] - w[0]) as f64).sum::<f64>()
                        / g as f64
                }
                None => values.iter().sum::<f64>() / values.len() as f64,
                Some(c) => {
                    // weights are the steps of the running sums
                    let prev = std::iter::once(0.0).chain(c.iter().copied());
                    values.iter().zip(c.iter().zip(prev)).map(|(v, (c, p))| v * (c - p)).sum::<f64>() / c[c.len() - 1]
                }
            },
        }
    }
}

/// `x` as Python's `repr(float)` writes it (`16384.0`, `1e+300`, `2.5e-07`, `inf`, `nan`), so that
/// the engine's messages read exactly like the Python API's.
fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let a = x.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        let s = format!("{x:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = exp.parse().unwrap_or(0);
        return format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let s = format!("{x}");
    if s.contains('.') {
        s
    } else {
        s + ".0"
    }
}

fn check_values(values: &[f64]) -> Result<()> {
    if values.is_empty() {
        return Err(Error::field("lengths.values", "must hold at least one length"));
    }
    if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| !(**v >= MIN_TOKENS && **v <= MAX_TOKENS)) {
        return Err(Error::field(
            "lengths.values",
            format!(
                "must be in {}{}; item {i} is {}",
                schema::LENGTHS_VALUES.range,
                schema::LENGTHS_VALUES.unit,
                py_float(*v)
            ),
        ));
    }
    Ok(())
}

fn check_weight_count(values: usize, weights: usize) -> Result<()> {
    if weights != values {
        return Err(Error::field(
            "lengths.weights",
            format!("must have one weight per value ({values} values, {weights} weights)"),
        ));
    }
    Ok(())
}

/// Checks running sums of weights: each step (a weight) finite and >= 0, the total > 0.
fn check_cum_weights(cum: &[f64]) -> Result<()> {
    let mut prev = 0.0;
    for (i, c) in cum.iter().enumerate() {
        let w = c - prev;
        if !(w.is_finite() && w >= 0.0) {
            return Err(Error::field("lengths.weights", format!("must be finite and >= 0; item {i} is {w}")));
        }
        prev = *c;
    }
    if prev <= 0.0 {
        return Err(Error::field("lengths.weights", "must not all be zero"));
    }
    if prev > MAX_WEIGHT_SUM {
        return Err(Error::field("lengths.weights", format!("must sum to at most 2**64, got {}", py_float(prev))));
    }
    Ok(())
}

fn check_offsets(values: usize, offsets: &[usize]) -> Result<()> {
    if offsets.len() < 2 || offsets[0] != 0 || *offsets.last().unwrap() != values {
        return Err(Error::field("lengths.groups", "offsets must run from 0 to the number of values"));
    }
    if offsets.windows(2).any(|w| w[1] <= w[0]) {
        return Err(Error::field("lengths.groups", "every group must hold at least one value"));
    }
    Ok(())
}

/// E[min(X, m)] for X ~ LogNormal(mu, sigma), tokens: the one implementation (the Python API's
/// `LogNormal.mean_tokens` calls it).
pub fn truncated_lognormal_mean(mu: f64, sigma: f64, m: f64) -> f64 {
    if sigma == 0.0 {
        return mu.exp().min(m);
    }
    let z = (m.ln() - mu) / sigma;
    // E[X; X < m] + m P(X >= m), at most m whatever the rounding
    ((mu + sigma * sigma / 2.0).exp() * normal_cdf(z - sigma) + m * (1.0 - normal_cdf(z))).min(m)
}

/// The standard normal CDF, `0.5 * (1 + erf(x / sqrt 2))` with the error function of `libm`
/// (fdlibm's, to the last bits).
fn normal_cdf(x: f64) -> f64 {
    0.5 * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
}

/// A length sampler bound to a generator; the engine is generic over it so the hot loop is
/// monomorphized (no dynamic dispatch).
pub trait Draw {
    /// Draws a prompt for a new group (its difficulty, or its index in grouped data). Draws nothing
    /// when answers are independent, so the chapter's stream is one lognormal draw per answer.
    fn prompt(&mut self) -> f64;
    /// Draws one answer's length, in tokens, for `prompt`.
    fn answer(&mut self, prompt: f64) -> f64;
    /// The length of an answer drawn by [`Draw::answer`] (possibly before the current weight
    /// load) as it is generated when its request starts now, tokens. The identity unless the
    /// lengths drift ([`Drifted`]).
    #[inline(always)]
    fn at_start(&mut self, drawn: f64) -> f64 {
        drawn
    }
    /// The rollout loads policy `version` (a weight update): answers started from now on are
    /// drawn for it. Nothing unless the lengths drift.
    #[inline(always)]
    fn set_version(&mut self, _version: u32) {}
    /// A training step took a batch of `samples` answers holding `tokens` tokens (length
    /// feedback). Nothing unless the lengths drift with feedback.
    #[inline(always)]
    fn trained(&mut self, _tokens: f64, _samples: u32) {}
    /// One answer's length before the generation limit, tokens (what a drift scales); the same as
    /// [`Draw::answer`] where the limit is in the data.
    #[inline(always)]
    fn uncapped(&mut self, prompt: f64) -> f64 {
        self.answer(prompt)
    }
}

/// How the answer lengths of the policy change with its version ([`LengthDrift::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriftKind {
    /// `1 + rate * v`.
    Linear,
    /// `1 + rate * ln(1 + v)`.
    Log,
    /// `exp(rate * v)`: `rate` log-tokens per version (the drift `rollsim.calibrate` fits,
    /// `mu_t = mu + drift * t`).
    Exp,
    /// Linear interpolation of `(version, scale)` points, held constant outside them.
    Table,
}

/// Smallest length scale a drift gives (a length stays > 0).
pub const MIN_DRIFT_SCALE: f64 = 1e-6;

/// Answer lengths that change during training: every answer started under policy version `v` is
/// drawn from the base distribution with its tokens scaled by `scale(v)` (times the feedback
/// factor), then cut at `max_tokens` (the generation limit: the cap applies to the scaled length).
#[derive(Debug, Clone, PartialEq)]
pub struct LengthDrift {
    pub kind: DriftKind,
    /// Per version (`Linear`, `Exp`) or per unit of `ln(1 + v)` (`Log`); unused for tables.
    pub rate: f64,
    /// `(version, scale)` points, versions strictly increasing and >= 0 (`Table` only).
    pub table: Vec<(f64, f64)>,
    /// The cap of the scaled lengths, tokens (the caller resolves "the distribution's limit").
    pub max_tokens: f64,
    /// Length feedback, in [0, 1]: at every weight load the policy's log length scale moves this
    /// fraction of the way from the mean length generated since the previous load to the mean
    /// length trained since then. 0: none.
    pub feedback: f64,
}

impl LengthDrift {
    /// The length scale of policy version `v` (without feedback), at least [`MIN_DRIFT_SCALE`].
    pub fn scale(&self, v: f64) -> f64 {
        let s = match self.kind {
            DriftKind::Linear => 1.0 + self.rate * v,
            DriftKind::Log => 1.0 + self.rate * v.ln_1p(),
            DriftKind::Exp => (self.rate * v).exp(),
            DriftKind::Table => {
                let t = &self.table;
                match t.iter().position(|(x, _)| *x > v) {
                    Some(0) => t[0].1,
                    None => t[t.len() - 1].1,
                    Some(i) => {
                        let ((x0, y0), (x1, y1)) = (t[i - 1], t[i]);
                        y0 + (y1 - y0) * ((v - x0) / (x1 - x0))
                    }
                }
            }
        };
        // NaN never (rates and table values are finite); an infinite exp is cut at the cap
        s.max(MIN_DRIFT_SCALE)
    }

    /// Checks the parameters; errors name the field (`length_drift.rate: must be in [-1, 100], got 200.0`).
    pub fn validate(&self) -> Result<()> {
        schema::LENGTH_DRIFT_RATE.check(self.rate)?;
        if self.kind == DriftKind::Table {
            if self.table.is_empty() {
                return Err(Error::field("length_drift.table", "must hold at least one (version, scale) pair"));
            }
            let bad_version = |(i, (v, _)): (usize, &(f64, f64))| {
                !(v.is_finite() && *v >= 0.0) || (i > 0 && *v <= self.table[i - 1].0)
            };
            if let Some((i, _)) = self.table.iter().enumerate().find(|p| bad_version(*p)) {
                return Err(Error::field(
                    "length_drift.table",
                    format!(
                        "versions must be finite, >= 0 and strictly increasing; item {i} has version {}",
                        py_float(self.table[i].0)
                    ),
                ));
            }
            if let Some((i, (_, s))) =
                self.table.iter().enumerate().find(|(_, (_, s))| !schema::LENGTH_DRIFT_SCALE.contains(*s))
            {
                return Err(Error::field(
                    "length_drift.table",
                    format!(
                        "scales must be in {}; item {i} has scale {}",
                        schema::LENGTH_DRIFT_SCALE.range,
                        py_float(*s)
                    ),
                ));
            }
        }
        schema::LENGTH_DRIFT_MAX_TOKENS.check(self.max_tokens)?;
        schema::LENGTH_DRIFT_FEEDBACK.check(self.feedback)
    }
}

/// A sampler whose lengths drift with the policy version ([`LengthDrift`]): draws come from
/// `inner` uncapped (the same random stream as without a drift), and each answer's length is
/// scaled by the scale of the version its request starts under and cut at the cap.
pub struct Drifted<D> {
    pub inner: D,
    pub drift: LengthDrift,
    /// The scale of the rollout's version (with the feedback factor).
    scale: f64,
    /// ln of the feedback factor.
    feedback_log: f64,
    /// Since the last weight load: tokens and answers started, tokens and answers trained.
    started: (f64, u64),
    trained: (f64, u64),
}

impl<D: Draw> Drifted<D> {
    pub fn new(inner: D, drift: LengthDrift) -> Self {
        let scale = drift.scale(0.0);
        Drifted { inner, drift, scale, feedback_log: 0.0, started: (0.0, 0), trained: (0.0, 0) }
    }
}

impl<D: Draw> Draw for Drifted<D> {
    #[inline]
    fn prompt(&mut self) -> f64 {
        self.inner.prompt()
    }
    #[inline]
    fn answer(&mut self, prompt: f64) -> f64 {
        self.inner.uncapped(prompt)
    }
    #[inline]
    fn at_start(&mut self, drawn: f64) -> f64 {
        let n = (drawn * self.scale).min(self.drift.max_tokens);
        self.started.0 += n;
        self.started.1 += 1;
        n
    }
    fn set_version(&mut self, version: u32) {
        if self.drift.feedback > 0.0 && self.started.1 > 0 && self.trained.1 > 0 {
            let generated = self.started.0 / self.started.1 as f64;
            let trained = self.trained.0 / self.trained.1 as f64;
            self.feedback_log += self.drift.feedback * (trained.ln() - generated.ln());
        }
        self.started = (0.0, 0);
        self.trained = (0.0, 0);
        let factor = if self.feedback_log == 0.0 { 1.0 } else { self.feedback_log.exp() };
        self.scale = (self.drift.scale(version as f64) * factor).max(MIN_DRIFT_SCALE);
    }
    fn trained(&mut self, tokens: f64, samples: u32) {
        self.trained.0 += tokens;
        self.trained.1 += samples as u64;
    }
}

pub struct LogNormalDraw<S> {
    pub src: S,
    pub mu: f64,
    pub sigma: f64,
    pub max_tokens: f64,
    /// sigma * sqrt(rho), sigma * sqrt(1 - rho)
    pub sigma_prompt: f64,
    pub sigma_answer: f64,
}

impl<S: Source> LogNormalDraw<S> {
    pub fn new(src: S, mu: f64, sigma: f64, max_tokens: f64, rho: f64) -> Self {
        LogNormalDraw {
            src,
            mu,
            sigma,
            max_tokens,
            sigma_prompt: sigma * rho.sqrt(),
            sigma_answer: sigma * (1.0 - rho).sqrt(),
        }
    }
}

impl<S: Source> Draw for LogNormalDraw<S> {
    #[inline]
    fn prompt(&mut self) -> f64 {
        if self.sigma_prompt > 0.0 {
            self.src.normal()
        } else {
            0.0
        }
    }
    #[inline]
    fn answer(&mut self, prompt: f64) -> f64 {
        if self.sigma_prompt > 0.0 {
            self.src.lognormal(self.mu + self.sigma_prompt * prompt, self.sigma_answer).min(self.max_tokens)
        } else {
            self.src.lognormal(self.mu, self.sigma).min(self.max_tokens)
        }
    }
    #[inline]
    fn uncapped(&mut self, prompt: f64) -> f64 {
        if self.sigma_prompt > 0.0 {
            self.src.lognormal(self.mu + self.sigma_prompt * prompt, self.sigma_answer)
        } else {
            self.src.lognormal(self.mu, self.sigma)
        }
    }
}

pub struct EmpiricalDraw<S> {
    pub src: S,
    pub values: Arc<[f64]>,
    pub cum_weights: Option<Arc<[f64]>>,
    pub group_offsets: Option<Arc<[usize]>>,
}

impl<S: Source> Draw for EmpiricalDraw<S> {
    #[inline]
    fn prompt(&mut self) -> f64 {
        match &self.group_offsets {
            None => 0.0,
            Some(o) => {
                let g = o.len() - 1;
                ((self.src.uniform() * g as f64) as usize).min(g - 1) as f64
            }
        }
    }

    #[inline]
    fn answer(&mut self, prompt: f64) -> f64 {
        if let Some(o) = &self.group_offsets {
            let p = prompt as usize;
            let (lo, n) = (o[p], o[p + 1] - o[p]);
            let i = ((self.src.uniform() * n as f64) as usize).min(n - 1);
            return self.values[lo + i];
        }
        let n = self.values.len();
        match &self.cum_weights {
            None => {
                let i = (self.src.uniform() * n as f64) as usize;
                self.values[i.min(n - 1)]
            }
            Some(cum) => {
                let x = self.src.uniform() * cum[n - 1];
                // bisect_right(cum, x, 0, n - 1)
                let i = cum[..n - 1].partition_point(|c| *c <= x);
                self.values[i]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_mean_matches_monte_carlo() {
        let m = truncated_lognormal_mean(7.6, 1.0, 16384.0);
        // E[X] untruncated = exp(8.1) = 3294.5; truncation at 16384 removes a little.
        assert!(m < 3294.5 && m > 3100.0, "{m}");
        let mut src = crate::rng::FastRng::new(1);
        let n = 400_000;
        let mc: f64 = (0..n).map(|_| src.lognormal(7.6, 1.0).min(16384.0)).sum::<f64>() / n as f64;
        assert!((mc - m).abs() / m < 0.01, "mc {mc} closed form {m}");
    }

    #[test]
    fn empirical_rejects_bad_input() {
        assert!(Lengths::empirical(vec![], None).is_err());
        assert!(Lengths::empirical(vec![1.0, f64::NAN], None).is_err());
        assert!(Lengths::empirical(vec![1.0, 2.0], Some(vec![0.0, 0.0])).is_err());
        assert!(Lengths::empirical(vec![1.0, 2.0], Some(vec![1.0])).is_err());
    }

    fn message(r: Result<()>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn bounds_match_the_python_api() {
        let big = Lengths::empirical(vec![1.0, 1e308], None).unwrap_err().to_string();
        assert!(big.starts_with("lengths.values: must be in [2**-40, 2**40] tokens; item 1 is "), "{big}");
        assert!(Lengths::empirical(vec![MAX_TOKENS], None).is_ok());
        let w = Lengths::empirical(vec![1.0, 2.0], Some(vec![MAX_WEIGHT_SUM, 1e6])).unwrap_err().to_string();
        assert!(w.starts_with("lengths.weights: must sum to at most 2**64, got "), "{w}");
        assert!(Lengths::empirical(vec![1.0, 2.0], Some(vec![MAX_WEIGHT_SUM, 0.0])).is_ok());
        let ln = |mu: f64, sigma: f64, max_tokens: f64| {
            Lengths::LogNormal { mu, sigma, max_tokens, group_correlation: 0.0 }.validate()
        };
        assert!(ln(100.0, 10.0, MAX_TOKENS).is_ok() && ln(-100.0, 0.0, 1.0).is_ok());
        assert_eq!(
            message(ln(100.5, 1.0, 16384.0)),
            "lengths.mu: must be in [-100, 100] (the log of the median length in tokens), got 100.5"
        );
        assert_eq!(message(ln(7.6, 10.5, 16384.0)), "lengths.sigma: must be in [0, 10], got 10.5");
        assert_eq!(message(ln(7.6, f64::NAN, 16384.0)), "lengths.sigma: must be in [0, 10], got nan");
        assert_eq!(message(ln(1e300, 1.0, 16384.0)).rsplit(' ').next(), Some("1e+300"));
        assert_eq!(
            message(ln(7.6, 1.0, 2.0 * MAX_TOKENS)),
            "lengths.max_tokens: must be in [1, 2**40] tokens, got 2199023255552.0"
        );
        for (x, repr) in [
            (16384.0, "16384.0"),
            (0.5, "0.5"),
            (-3.0, "-3.0"),
            (1e16, "1e+16"),
            (2.5e-7, "2.5e-07"),
            (0.0, "0.0"),
            (1.5e308, "1.5e+308"),
            (f64::NEG_INFINITY, "-inf"),
            (1e-4, "0.0001"),
        ] {
            assert_eq!(py_float(x), repr);
        }
        // the closed-form mean stays finite at the corners of the accepted ranges
        for (mu, sigma) in [(100.0, 10.0), (-100.0, 10.0), (100.0, 0.0), (-100.0, 0.0), (0.0, 5e-324)] {
            let m = truncated_lognormal_mean(mu, sigma, MAX_TOKENS);
            assert!(m.is_finite() && m >= 0.0, "mu {mu} sigma {sigma}: {m}");
        }
    }
}
