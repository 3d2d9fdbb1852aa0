//! Deterministic services: the captured instant and labelled randomness.
//!
//! Rules never read a clock or the OS: the engine hands them [`Services`]. Every draw has a
//! label unique within the operation; the real result is appended to a private [`Trace`]
//! with its order, label and parameters. Live, draws come from an [`EntropySource`] the
//! shell provides (secure entropy in production). In replay, the recorded trace is consumed
//! and any request that differs from the recorded one fails.
//!
//! Which call to use:
//! - [`Randomness::uniform`] for an integer in an inclusive range (a die face value);
//! - [`Randomness::weighted`] for an index chosen with exact integer weights (a wheel);
//! - [`Randomness::shuffle`] for a new permutation of a slice (a deck); the input is untouched.
//!
//! All three are unbiased: they use rejection sampling, never a plain modulo.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A source of uniformly distributed 64-bit words.
pub trait EntropySource {
    fn next_u64(&mut self) -> u64;
}

/// SplitMix64: a tiny deterministic generator for tests, fixtures and bots' tie-breaks.
/// It is hand-rolled on purpose (ten lines, no dependency) and is NEVER used for live draws.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl EntropySource for SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Entropy that replays a fixed list of words (then repeats it); for exactness tests.
#[derive(Clone, Debug)]
pub struct ScriptedEntropy {
    words: Vec<u64>,
    next: usize,
}

impl ScriptedEntropy {
    pub fn new(words: Vec<u64>) -> Self {
        assert!(!words.is_empty(), "scripted entropy needs at least one word");
        Self { words, next: 0 }
    }
}

impl EntropySource for ScriptedEntropy {
    fn next_u64(&mut self) -> u64 {
        let w = self.words[self.next % self.words.len()];
        self.next += 1;
        w
    }
}

/// What a draw asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum DrawRequest {
    Uniform { min: i64, max: i64 },
    Weighted { weights: Vec<u64> },
    Shuffle { len: u32 },
}

/// What a draw produced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DrawResult {
    Value(i64),
    Permutation(Vec<u32>),
}

/// One recorded draw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TraceEntry {
    pub order: u32,
    pub label: String,
    pub request: DrawRequest,
    pub result: DrawResult,
}

/// The private randomness trace of one operation. Never published.
pub type Trace = Vec<TraceEntry>;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RandomError {
    #[error("randomness label {0:?} used twice in one operation")]
    DuplicateLabel(String),
    #[error("invalid randomness request for label {label:?}: {reason}")]
    InvalidRequest { label: String, reason: &'static str },
    #[error("replay diverged at draw {order}: expected {expected}, rules asked {actual}")]
    ReplayMismatch { order: u32, expected: String, actual: String },
    #[error("replay trace exhausted at draw {0}")]
    TraceExhausted(u32),
    #[error("replay left {0} recorded draws unconsumed")]
    TraceNotConsumed(usize),
    #[error("recorded result for label {0:?} is out of bounds")]
    CorruptTrace(String),
}

enum Mode<'a> {
    Live(&'a mut dyn EntropySource),
    Replay { recorded: &'a [TraceEntry] },
}

/// Labelled randomness for one operation.
pub struct Randomness<'a> {
    mode: Mode<'a>,
    trace: Trace,
    labels: BTreeSet<String>,
}

impl<'a> Randomness<'a> {
    pub fn live(entropy: &'a mut dyn EntropySource) -> Self {
        Self { mode: Mode::Live(entropy), trace: Vec::new(), labels: BTreeSet::new() }
    }

    pub fn replay(recorded: &'a [TraceEntry]) -> Self {
        Self { mode: Mode::Replay { recorded }, trace: Vec::new(), labels: BTreeSet::new() }
    }

    /// An integer in `min..=max`.
    pub fn uniform(&mut self, label: &str, min: i64, max: i64) -> Result<i64, RandomError> {
        if min > max {
            return Err(invalid(label, "min is greater than max"));
        }
        let request = DrawRequest::Uniform { min, max };
        let span = (max as i128 - min as i128 + 1) as u128;
        self.draw(
            label,
            request,
            |e| {
                let v = if span > u64::MAX as u128 { e.next_u64() as i128 } else { below(e, span as u64) as i128 };
                DrawResult::Value((min as i128 + v) as i64)
            },
            |r| matches!(r, DrawResult::Value(v) if (min..=max).contains(v)),
        )
        .map(|r| match r {
            DrawResult::Value(v) => v,
            DrawResult::Permutation(_) => unreachable!("checked by the validator"),
        })
    }

    /// An index into `weights`, each chosen with probability weight / sum, exactly.
    pub fn weighted(&mut self, label: &str, weights: &[u64]) -> Result<usize, RandomError> {
        if weights.is_empty() {
            return Err(invalid(label, "no options"));
        }
        if weights.contains(&0) {
            return Err(invalid(label, "weights must be positive"));
        }
        let total = weights
            .iter()
            .try_fold(0u64, |acc, w| acc.checked_add(*w))
            .ok_or_else(|| invalid(label, "weights overflow"))?;
        let n = weights.len() as i64;
        let request = DrawRequest::Weighted { weights: weights.to_vec() };
        self.draw(
            label,
            request,
            |e| {
                let mut x = below(e, total);
                let mut index = 0;
                for (i, w) in weights.iter().enumerate() {
                    if x < *w {
                        index = i;
                        break;
                    }
                    x -= w;
                }
                DrawResult::Value(index as i64)
            },
            |r| matches!(r, DrawResult::Value(v) if (0..n).contains(v)),
        )
        .map(|r| match r {
            DrawResult::Value(v) => v as usize,
            DrawResult::Permutation(_) => unreachable!("checked by the validator"),
        })
    }

    /// A new sequence with the items of `items` in a uniformly random order.
    pub fn shuffle<T: Clone>(&mut self, label: &str, items: &[T]) -> Result<Vec<T>, RandomError> {
        let len = u32::try_from(items.len()).map_err(|_| invalid(label, "too many items"))?;
        let request = DrawRequest::Shuffle { len };
        let result = self.draw(
            label,
            request,
            |e| {
                let mut perm: Vec<u32> = (0..len).collect();
                for i in (1..perm.len()).rev() {
                    let j = below(e, i as u64 + 1) as usize;
                    perm.swap(i, j);
                }
                DrawResult::Permutation(perm)
            },
            |r| match r {
                DrawResult::Permutation(p) => is_permutation(p, len),
                DrawResult::Value(_) => false,
            },
        )?;
        match result {
            DrawResult::Permutation(p) => Ok(p.iter().map(|i| items[*i as usize].clone()).collect()),
            DrawResult::Value(_) => unreachable!("checked by the validator"),
        }
    }

    fn draw(
        &mut self,
        label: &str,
        request: DrawRequest,
        live: impl FnOnce(&mut dyn EntropySource) -> DrawResult,
        valid: impl Fn(&DrawResult) -> bool,
    ) -> Result<DrawResult, RandomError> {
        if !self.labels.insert(label.to_owned()) {
            return Err(RandomError::DuplicateLabel(label.to_owned()));
        }
        let order = self.trace.len() as u32;
        let result = match &mut self.mode {
            Mode::Live(entropy) => live(&mut **entropy),
            Mode::Replay { recorded } => {
                let entry = recorded.get(order as usize).ok_or(RandomError::TraceExhausted(order))?;
                if entry.label != label || entry.request != request {
                    return Err(RandomError::ReplayMismatch {
                        order,
                        expected: format!("{} {:?}", entry.label, entry.request),
                        actual: format!("{label} {request:?}"),
                    });
                }
                if !valid(&entry.result) {
                    return Err(RandomError::CorruptTrace(label.to_owned()));
                }
                entry.result.clone()
            }
        };
        self.trace.push(TraceEntry { order, label: label.to_owned(), request, result: result.clone() });
        Ok(result)
    }

    /// Ends the operation and returns its trace. In replay, fails if recorded draws remain.
    pub fn finish(self) -> Result<Trace, RandomError> {
        if let Mode::Replay { recorded } = self.mode
            && recorded.len() > self.trace.len()
        {
            return Err(RandomError::TraceNotConsumed(recorded.len() - self.trace.len()));
        }
        Ok(self.trace)
    }

    /// The draws recorded so far in this operation.
    pub fn trace(&self) -> &[TraceEntry] {
        &self.trace
    }
}

fn invalid(label: &str, reason: &'static str) -> RandomError {
    RandomError::InvalidRequest { label: label.to_owned(), reason }
}

/// A uniform integer in `0..n` (n > 0) by rejection sampling: no modulo bias.
pub fn below(e: &mut dyn EntropySource, n: u64) -> u64 {
    debug_assert!(n > 0);
    // Accept x < limit, where limit is the largest multiple of n that fits in 2^64.
    let rem = ((u64::MAX % n) + 1) % n;
    if rem == 0 {
        return e.next_u64() % n;
    }
    let limit = u64::MAX - rem + 1;
    loop {
        let x = e.next_u64();
        if x < limit {
            return x % n;
        }
    }
}

fn is_permutation(p: &[u32], len: u32) -> bool {
    if p.len() != len as usize {
        return false;
    }
    let mut seen = vec![false; p.len()];
    p.iter().all(|i| {
        let i = *i as usize;
        i < seen.len() && !std::mem::replace(&mut seen[i], true)
    })
}

/// What rules get for one operation: the captured instant and labelled randomness.
pub struct Services<'a> {
    now_ms: i64,
    pub random: Randomness<'a>,
}

impl<'a> Services<'a> {
    pub fn new(now_ms: i64, random: Randomness<'a>) -> Self {
        Self { now_ms, random }
    }

    /// The captured instant of this operation, in milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    pub fn finish(self) -> Result<Trace, RandomError> {
        self.random.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_then_replay_gives_identical_draws() {
        let mut e = SplitMix64(7);
        let mut live = Randomness::live(&mut e);
        let a = live.uniform("die", 1, 6).unwrap();
        let b = live.weighted("wheel", &[1, 5, 2]).unwrap();
        let c = live.shuffle("deck", &["a", "b", "c", "d", "e"]).unwrap();
        let trace = live.finish().unwrap();
        assert_eq!(trace.len(), 3);

        let mut replay = Randomness::replay(&trace);
        assert_eq!(replay.uniform("die", 1, 6).unwrap(), a);
        assert_eq!(replay.weighted("wheel", &[1, 5, 2]).unwrap(), b);
        assert_eq!(replay.shuffle("deck", &["a", "b", "c", "d", "e"]).unwrap(), c);
        assert_eq!(replay.finish().unwrap(), trace);
    }

    #[test]
    fn replay_asking_different_draws_fails() {
        let mut e = SplitMix64(1);
        let mut live = Randomness::live(&mut e);
        live.uniform("die", 1, 6).unwrap();
        live.uniform("die2", 1, 6).unwrap();
        let trace = live.finish().unwrap();

        let mut other_label = Randomness::replay(&trace);
        assert!(matches!(other_label.uniform("dice", 1, 6), Err(RandomError::ReplayMismatch { .. })));

        let mut other_bounds = Randomness::replay(&trace);
        assert!(matches!(other_bounds.uniform("die", 1, 8), Err(RandomError::ReplayMismatch { .. })));

        let mut too_few = Randomness::replay(&trace);
        too_few.uniform("die", 1, 6).unwrap();
        assert_eq!(too_few.finish(), Err(RandomError::TraceNotConsumed(1)));

        let mut too_many = Randomness::replay(&trace);
        too_many.uniform("die", 1, 6).unwrap();
        too_many.uniform("die2", 1, 6).unwrap();
        assert_eq!(too_many.uniform("die3", 1, 6), Err(RandomError::TraceExhausted(2)));
    }

    #[test]
    fn labels_are_unique_and_requests_validated() {
        let mut e = SplitMix64(1);
        let mut r = Randomness::live(&mut e);
        r.uniform("x", 0, 1).unwrap();
        assert!(matches!(r.uniform("x", 0, 1), Err(RandomError::DuplicateLabel(_))));
        assert!(matches!(r.uniform("y", 2, 1), Err(RandomError::InvalidRequest { .. })));
        assert!(matches!(r.weighted("z", &[]), Err(RandomError::InvalidRequest { .. })));
        assert!(matches!(r.weighted("w", &[1, 0]), Err(RandomError::InvalidRequest { .. })));
        assert!(matches!(r.weighted("v", &[u64::MAX, 1]), Err(RandomError::InvalidRequest { .. })));
    }

    #[test]
    fn weighted_choice_honours_weights_exactly() {
        // With weights summing to 6, the words 0..6 map one to one onto the six slots, so
        // over one pass of the script each option is chosen exactly `weight` times.
        let weights = [1u64, 2, 3];
        let mut e = ScriptedEntropy::new((0..6).collect());
        let mut counts = [0u32; 3];
        for i in 0..6 {
            let mut r = Randomness::live(&mut e);
            counts[r.weighted(&format!("w{i}"), &weights).unwrap()] += 1;
        }
        assert_eq!(counts, [1, 2, 3]);
    }

    #[test]
    fn below_rejects_the_biased_tail() {
        // n = 3: 2^64 mod 3 = 1, so the single top word u64::MAX must be rejected.
        let mut e = ScriptedEntropy::new(vec![u64::MAX, 4]);
        assert_eq!(below(&mut e, 3), 1);
        // A power of two never rejects.
        let mut e = ScriptedEntropy::new(vec![u64::MAX]);
        assert_eq!(below(&mut e, 8), 7);
    }

    #[test]
    fn replay_rejects_a_forged_result() {
        let trace = vec![TraceEntry {
            order: 0,
            label: "die".into(),
            request: DrawRequest::Uniform { min: 1, max: 6 },
            result: DrawResult::Value(9),
        }];
        let mut r = Randomness::replay(&trace);
        assert!(matches!(r.uniform("die", 1, 6), Err(RandomError::CorruptTrace(_))));
    }

    #[test]
    fn shuffle_returns_a_permutation_and_leaves_input_alone() {
        let items: Vec<u32> = (0..52).collect();
        let mut e = SplitMix64(3);
        let mut r = Randomness::live(&mut e);
        let mut s = r.shuffle("deck", &items).unwrap();
        assert_eq!(items, (0..52).collect::<Vec<_>>());
        assert_ne!(s, items);
        s.sort();
        assert_eq!(s, items);
    }
}
