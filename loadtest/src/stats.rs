//! What a run measures: counters, HDR latency histograms, errors by code, and what the
//! clients saw applied (for the audit). Latencies and counts are taken only inside the
//! measured window (after the ramp-up); what the audit needs is kept for the whole run.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use juegoland_store::audit::SeenApplied;
use serde::Serialize;
use uuid::Uuid;

/// The latencies a run records.
#[derive(Clone, Copy, Debug)]
pub enum Latency {
    /// From sending a command to its acknowledgement.
    CommandToAck,
    /// From sending a command to receiving a snapshot at (or past) the revision it produced.
    CommandToView,
    /// From dropping a connection to the sync answer on the new one.
    Resync,
    /// Creating a match through the platform API.
    Create,
}

const LATENCIES: usize = 4;

pub struct Stats {
    measuring: AtomicBool,
    pub moves: AtomicU64,
    pub moves_total: AtomicU64,
    pub rejected: AtomicU64,
    pub matches_created: AtomicU64,
    pub matches_finished: AtomicU64,
    pub reconnects: AtomicU64,
    histograms: [Mutex<Histogram<u64>>; LATENCIES],
    errors: Mutex<BTreeMap<String, u64>>,
    errors_total: AtomicU64,
    seen: Mutex<Vec<SeenApplied>>,
    created: Mutex<BTreeSet<Uuid>>,
    /// When the measured window began (monotonic, and as Unix milliseconds).
    window: std::sync::OnceLock<(std::time::Instant, u64)>,
    /// Views received per `TIMELINE_BUCKET` of the window.
    timeline: Mutex<Vec<u32>>,
}

/// The width of one bucket of the views' timeline.
pub const TIMELINE_BUCKET: Duration = Duration::from_millis(100);

/// Views received per bucket of the measured window: when clients stopped seeing views and
/// when they saw them again (the partition tests measure recovery with it).
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ViewTimeline {
    /// The window's start, in milliseconds since the Unix epoch.
    pub start_unix_ms: u64,
    pub bucket_ms: u64,
    /// Views received in each bucket, from the window's start.
    pub views: Vec<u32>,
}

fn histogram() -> Mutex<Histogram<u64>> {
    // Microseconds, 1 µs to 10 min, 3 significant digits.
    Mutex::new(Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds"))
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            measuring: AtomicBool::new(false),
            moves: AtomicU64::new(0),
            moves_total: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            matches_created: AtomicU64::new(0),
            matches_finished: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            histograms: [histogram(), histogram(), histogram(), histogram()],
            errors: Mutex::new(BTreeMap::new()),
            errors_total: AtomicU64::new(0),
            seen: Mutex::new(Vec::new()),
            created: Mutex::new(BTreeSet::new()),
            window: std::sync::OnceLock::new(),
            timeline: Mutex::new(Vec::new()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicking player task must not take the whole run's figures with it.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Stats {
    pub fn start_measuring(&self) {
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let _ = self.window.set((std::time::Instant::now(), unix_ms));
        self.measuring.store(true, Ordering::SeqCst);
    }

    /// The views' timeline of the window so far.
    pub fn timeline(&self) -> ViewTimeline {
        ViewTimeline {
            start_unix_ms: self.window.get().map_or(0, |w| w.1),
            bucket_ms: TIMELINE_BUCKET.as_millis() as u64,
            views: lock(&self.timeline).clone(),
        }
    }

    pub fn measuring(&self) -> bool {
        self.measuring.load(Ordering::Relaxed)
    }

    pub fn latency(&self, which: Latency, d: Duration) {
        if self.measuring() {
            let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX).clamp(1, 600_000_000);
            lock(&self.histograms[which as usize]).saturating_record(micros);
            if let (Latency::CommandToView, Some((start, _))) = (which, self.window.get()) {
                let bucket = (start.elapsed().as_millis() / TIMELINE_BUCKET.as_millis()) as usize;
                let mut timeline = lock(&self.timeline);
                if timeline.len() <= bucket {
                    timeline.resize(bucket + 1, 0);
                }
                timeline[bucket] += 1;
            }
        }
    }

    pub fn count(&self, counter: &AtomicU64) {
        if self.measuring() {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn error(&self, key: impl Into<String>) {
        self.errors_total.fetch_add(1, Ordering::Relaxed);
        *lock(&self.errors).entry(key.into()).or_default() += 1;
    }

    pub fn errors_total(&self) -> u64 {
        self.errors_total.load(Ordering::Relaxed)
    }

    pub fn applied(&self, seen: SeenApplied) {
        self.moves_total.fetch_add(1, Ordering::Relaxed);
        self.count(&self.moves);
        lock(&self.seen).push(seen);
    }

    pub fn created(&self, match_id: Uuid) {
        self.count(&self.matches_created);
        lock(&self.created).insert(match_id);
    }

    pub fn seen(&self) -> Vec<SeenApplied> {
        lock(&self.seen).clone()
    }

    pub fn created_ids(&self) -> BTreeSet<Uuid> {
        lock(&self.created).clone()
    }

    pub fn errors(&self) -> BTreeMap<String, u64> {
        lock(&self.errors).clone()
    }

    pub fn percentiles(&self, which: Latency) -> Percentiles {
        Percentiles::of(&lock(&self.histograms[which as usize]))
    }

    /// The p99 so far, in milliseconds (for the progress line).
    pub fn p99_ms(&self, which: Latency) -> f64 {
        lock(&self.histograms[which as usize]).value_at_quantile(0.99) as f64 / 1000.0
    }
}

/// A latency distribution in milliseconds.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Self {
        let ms = |v: u64| (v as f64 / 1000.0 * 1000.0).round() / 1000.0;
        Self {
            count: h.len(),
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
        }
    }
}
