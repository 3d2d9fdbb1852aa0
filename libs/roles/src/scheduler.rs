//! The deadline scheduler: fires due deadlines through their matches, safely with any number
//! of replicas.
//!
//! Each replica polls the store for a batch of due pending deadlines and claims them for a
//! lease ([`Store::claim_deadlines`]: no other replica gets them meanwhile), then fires each
//! through a [`Matches`] with its generation — the [`Host`](juegoland_actors::Host) in the
//! all-in-one process, `RouterCalls` (through the routers) in a cluster. The match
//! checks the generation under its lock and commits the consumption with the transition, so
//! safety never rests on a claim: a replica that dies leaves claims that expire and are
//! claimed again, and a firing that races another (or a replaced generation) is refused as
//! stale. What each answer means:
//!
//! | answer | outcome | the claim |
//! |---|---|---|
//! | a revision | `fired`: committed as `fired` with the transition | consumed |
//! | `STALE_DEADLINE`, `MATCH_NOT_FOUND` | `stale`: replaced, cancelled or already fired | dropped |
//! | `MATCH_FINISHED` | `stale`; the store cancels the finished match's deadline | dropped |
//! | `UNAVAILABLE`, an internal failure, a rules refusal | `failed`: retried | expires after the lease |
//!
//! A failed firing is retried by whichever replica claims it once the lease has passed: the
//! lease is the retry back-off, so an outage costs one attempt per deadline and lease.
//!
//! Between polls the loop sleeps for the poll interval, or less when the store knows a
//! deadline due sooner; a full batch is followed at once by the next one. At most
//! `concurrency` firings are in flight, and the loop claims no more than it can start.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use juegoland_actors::shell::now_ms;
use juegoland_api::{MatchError, Matches, Refusal};
use juegoland_core::LifecycleRequest;
use juegoland_store::{DueDeadline, Store};
use prometheus::{Gauge, Histogram, IntCounterVec, IntGauge};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tracing::{Instrument, debug, error, info, info_span, warn};

/// How a scheduler replica polls and fires.
#[derive(Clone, Debug)]
pub struct SchedulerOptions {
    /// This replica's claimant id in the store (unique per running replica).
    pub claimant: String,
    /// The longest sleep between two polls.
    pub poll_interval: Duration,
    /// The most deadlines claimed per poll.
    pub batch: usize,
    /// How long a claim keeps other replicas away; longer than a firing may take (the
    /// routers' retry budget) and the back-off of a failed firing.
    pub lease: Duration,
    /// The most firings in flight at once.
    pub concurrency: usize,
    /// How often the pending deadlines are counted for the gauge.
    pub count_every: Duration,
    /// How long past its due instant a deadline is left to the owning node's local timer
    /// (the fast path) before this replica claims it.
    pub grace: Duration,
}

impl SchedulerOptions {
    /// The defaults for `claimant`: poll every 250 ms, 256 per batch, 10 s leases, 64
    /// firings in flight, count every 5 s, 200 ms of grace for the nodes' local timers.
    pub fn new(claimant: impl Into<String>) -> Self {
        Self {
            claimant: claimant.into(),
            poll_interval: Duration::from_millis(250),
            batch: 256,
            lease: Duration::from_secs(10),
            concurrency: 64,
            count_every: Duration::from_secs(5),
            grace: Duration::from_millis(200),
        }
    }
}

/// The scheduler's metrics.
#[derive(Clone)]
pub struct SchedulerMetrics {
    /// Firings by outcome: `fired`, `stale`, `failed`.
    pub deadlines: IntCounterVec,
    /// From a deadline's due instant to its committed transition, seconds.
    pub lag_seconds: Histogram,
    /// Deadlines pending in the store (claimed or not, due or not).
    pub pending: IntGauge,
    /// How far past its due instant the earliest pending deadline is (0 when none is due):
    /// the lag of the deadline that has waited longest, fired or not yet. Counted with
    /// `pending`; every replica reads the same store.
    pub overdue_seconds: Gauge,
}

impl SchedulerMetrics {
    pub fn new(registry: &prometheus::Registry) -> prometheus::Result<Self> {
        let deadlines = IntCounterVec::new(
            prometheus::Opts::new("juegoland_scheduler_deadlines_total", "Deadline firings, by outcome"),
            &["outcome"],
        )?;
        let lag_seconds = Histogram::with_opts(
            prometheus::HistogramOpts::new(
                "juegoland_scheduler_lag_seconds",
                "From a deadline's due instant to its committed transition",
            )
            .buckets(prometheus::exponential_buckets(0.001, 2.0, 17)?),
        )?;
        let pending = IntGauge::new("juegoland_scheduler_pending", "Deadlines pending in the store")?;
        let overdue_seconds = Gauge::new(
            "juegoland_scheduler_overdue_seconds",
            "How far past its due instant the earliest pending deadline is (0 when none is due)",
        )?;
        registry.register(Box::new(deadlines.clone()))?;
        registry.register(Box::new(lag_seconds.clone()))?;
        registry.register(Box::new(pending.clone()))?;
        registry.register(Box::new(overdue_seconds.clone()))?;
        for outcome in [Outcome::Fired, Outcome::Stale, Outcome::Failed] {
            deadlines.with_label_values(&[outcome.label()]);
        }
        Ok(Self { deadlines, lag_seconds, pending, overdue_seconds })
    }
}

/// What became of one firing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Fired,
    Stale,
    Failed,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Fired => "fired",
            Outcome::Stale => "stale",
            Outcome::Failed => "failed",
        }
    }
}

/// A running scheduler replica: a task that polls, claims and fires until stopped.
pub struct Scheduler {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Scheduler {
    /// Starts the replica's loop over `store` (claims) and `matches` (firings).
    pub fn start(
        store: Arc<dyn Store>,
        matches: Arc<dyn Matches>,
        options: SchedulerOptions,
        metrics: SchedulerMetrics,
    ) -> Scheduler {
        let (stop, stop_rx) = watch::channel(false);
        let span = info_span!("scheduler", claimant = %options.claimant);
        let looper = Loop { store, matches, options, metrics };
        let task = tokio::spawn(looper.run(stop_rx).instrument(span));
        Scheduler { stop, task }
    }

    /// Stops claiming, lets the firings in flight finish, and gives back the claims of those
    /// that failed, so another replica retries them at once instead of after the lease.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        if let Err(e) = self.task.await
            && e.is_panic()
        {
            std::panic::resume_unwind(e.into_panic());
        }
    }
}

struct Loop {
    store: Arc<dyn Store>,
    matches: Arc<dyn Matches>,
    options: SchedulerOptions,
    metrics: SchedulerMetrics,
}

impl Loop {
    async fn run(self, mut stop: watch::Receiver<bool>) {
        let me = Arc::new(self);
        let mut firing: JoinSet<(DueDeadline, Outcome)> = JoinSet::new();
        // Claims of failed firings, still held (until their lease passes) and given back on
        // stop; oldest first.
        let mut failed: VecDeque<(Instant, DueDeadline)> = VecDeque::new();
        let mut counted_at: Option<Instant> = None;
        info!("scheduler polling");
        // A dropped handle stops the loop like `stop`.
        while !*stop.borrow() && stop.has_changed().is_ok() {
            if counted_at.is_none_or(|t| t.elapsed() >= me.options.count_every) {
                counted_at = Some(Instant::now());
                match me.store.pending_deadlines().await {
                    Ok(n) => me.metrics.pending.set(i64::try_from(n).unwrap_or(i64::MAX)),
                    Err(e) => warn!(error = %e, "could not count pending deadlines"),
                }
                let now = now_ms();
                match me.store.due_deadlines(now, 1).await {
                    Ok(due) => {
                        let overdue_ms = due.first().map_or(0, |d| now.saturating_sub(d.due_ms).max(0));
                        me.metrics.overdue_seconds.set(overdue_ms as f64 / 1_000.0);
                    }
                    Err(e) => warn!(error = %e, "could not read the earliest due deadline"),
                }
            }
            let room = me.options.concurrency.saturating_sub(firing.len()).min(me.options.batch);
            let sleep = if room > 0 { me.poll(room, &mut firing).await } else { me.options.poll_interval };
            // With no room, wait for a firing to finish instead of sleeping.
            tokio::select! {
                _ = stop.changed() => {}
                Some(done) = firing.join_next(), if room == 0 => me.reaped(done, &mut failed),
                _ = tokio::time::sleep(sleep), if room > 0 => {}
            }
            while let Some(done) = firing.try_join_next() {
                me.reaped(done, &mut failed);
            }
            while failed.front().is_some_and(|(at, _)| at.elapsed() > me.options.lease) {
                failed.pop_front();
            }
        }
        info!(in_flight = firing.len(), "scheduler stopping");
        while let Some(done) = firing.join_next().await {
            me.reaped(done, &mut failed);
        }
        let failed: Vec<DueDeadline> = failed.into_iter().map(|(_, d)| d).collect();
        if let Err(e) = me.store.release_deadlines(&me.options.claimant, &failed).await {
            warn!(error = %e, "could not release the claims of failed firings; they expire with their lease");
        }
        info!(released = failed.len(), "scheduler stopped");
    }

    /// Records a finished firing task: a failed firing's claim is remembered for release.
    fn reaped(
        &self,
        done: Result<(DueDeadline, Outcome), tokio::task::JoinError>,
        failed: &mut VecDeque<(Instant, DueDeadline)>,
    ) {
        match done {
            Ok((due, Outcome::Failed)) => failed.push_back((Instant::now(), due)),
            Ok(_) => {}
            Err(e) if e.is_panic() => error!(error = %e, "a firing task panicked"),
            Err(_) => {}
        }
    }

    /// Claims up to `room` due deadlines and starts firing them; returns how long to sleep
    /// before the next poll.
    async fn poll(self: &Arc<Self>, room: usize, firing: &mut JoinSet<(DueDeadline, Outcome)>) -> Duration {
        let grace = i64::try_from(self.options.grace.as_millis()).unwrap_or(0);
        // A deadline is claimable once its grace for the owner's local timer has passed.
        let now = now_ms() - grace;
        let claimed = match self.store.claim_deadlines(&self.options.claimant, now, self.options.lease, room).await {
            Ok(claimed) => claimed,
            Err(e) => {
                warn!(error = %e, "could not claim due deadlines; retrying");
                return self.options.poll_interval;
            }
        };
        let full = claimed.len() == room;
        if !claimed.is_empty() {
            debug!(claimed = claimed.len(), "claimed due deadlines");
        }
        for due in claimed {
            let me = self.clone();
            firing.spawn(async move {
                let outcome = me.fire(&due).await;
                (due, outcome)
            });
        }
        if full {
            // More may be due right now.
            return Duration::ZERO;
        }
        match self.store.next_deadline_due(now).await {
            Ok(Some(next)) => {
                let until = u64::try_from(next.saturating_add(grace).saturating_sub(now_ms())).unwrap_or(0);
                self.options.poll_interval.min(Duration::from_millis(until))
            }
            Ok(None) => self.options.poll_interval,
            Err(e) => {
                warn!(error = %e, "could not read the next due deadline");
                self.options.poll_interval
            }
        }
    }

    /// Fires one claimed deadline and records the outcome.
    async fn fire(&self, due: &DueDeadline) -> Outcome {
        let span = info_span!(
            "scheduler.fire",
            match_id = %due.match_id,
            deadline_id = %due.deadline_id,
            generation = due.generation,
            outcome = tracing::field::Empty,
        );
        let outcome = self.fire_in_span(due).instrument(span.clone()).await;
        span.record("outcome", outcome.label());
        self.metrics.deadlines.with_label_values(&[outcome.label()]).inc();
        outcome
    }

    async fn fire_in_span(&self, due: &DueDeadline) -> Outcome {
        let request = LifecycleRequest::FireDeadline { id: due.deadline_id.clone(), generation: due.generation };
        match self.matches.lifecycle(due.match_id, request).await {
            Ok(revision) => {
                let lag_ms = now_ms().saturating_sub(due.due_ms).max(0);
                self.metrics.lag_seconds.observe(lag_ms as f64 / 1_000.0);
                debug!(revision, lag_ms, "deadline fired");
                Outcome::Fired
            }
            Err(MatchError::Refused { refusal: Refusal::StaleDeadline, .. } | MatchError::NotFound) => {
                debug!("stale deadline dropped");
                Outcome::Stale
            }
            Err(MatchError::Refused { refusal: Refusal::MatchFinished, .. }) => {
                // The rules left a deadline in a finished match: it can never fire.
                if let Err(e) = self.store.cancel_finished_deadlines(std::slice::from_ref(due)).await {
                    warn!(error = %e, "could not cancel the deadline of a finished match");
                }
                debug!("deadline of a finished match dropped");
                Outcome::Stale
            }
            Err(e @ MatchError::Refused { refusal: Refusal::DeadlineNotDue, .. }) => {
                // The match's clock is behind this replica's: the claim's lease passes first.
                warn!(error = %e, "the match says the deadline is not due yet; retried when its claim expires");
                Outcome::Failed
            }
            Err(e @ (MatchError::Unavailable(_) | MatchError::NotOwner(_))) => {
                warn!(error = %e, "match unavailable; the deadline is retried when its claim expires");
                Outcome::Failed
            }
            Err(e) => {
                error!(error = %e, "firing failed; the deadline is retried when its claim expires");
                Outcome::Failed
            }
        }
    }
}
