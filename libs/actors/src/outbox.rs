//! The outbox after a commit: the dispatched marks, gathered off the actors' path, and the
//! sweeper that re-dispatches what a crash or a bus failure left behind and measures the
//! backlog.

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_api::MatchError;
use tracing::{Instrument, info_span, warn};
use uuid::Uuid;

use crate::host::{Host, Shared};

impl Host {
    pub(crate) fn spawn_sweeper(&self) {
        let weak = Arc::downgrade(&self.shared);
        let interval = self.shared.config.sweep_interval;
        let cancel = self.shared.cancel.clone();
        // The sweeper's owner is the host: it ends at `Host::stop` or when the host is dropped.
        self.shared.tasks.spawn(async move {
            let mut tick = tokio::time::interval(interval);
            loop {
                tokio::select! {
                    () = cancel.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let Some(shared) = weak.upgrade() else { return };
                if let Err(e) = sweep(&shared).await {
                    warn!(error = %e, "outbox sweep failed");
                }
                measure_backlog(&shared).await;
            }
        });
    }
}

impl Shared {
    /// Gathers the mark of `revision` of `match_id`, dispatched (the marker writes it).
    pub(crate) fn mark_dispatched(&self, match_id: Uuid, revision: u64) {
        let mut marks = self.marks.lock();
        let newest = marks.entry(match_id).or_insert(revision);
        *newest = (*newest).max(revision);
    }

    /// Writes the gathered marks in one store call. A failure is left to the sweeper, which
    /// sends those revisions again.
    async fn write_marks(&self) {
        let marks: Vec<(Uuid, u64)> = std::mem::take(&mut *self.marks.lock()).into_iter().collect();
        if !marks.is_empty()
            && let Err(e) = self.store.mark_dispatched(&marks).await
        {
            warn!(error = %e, marks = marks.len(), "could not mark the outbox dispatched; the sweeper will resend");
        }
    }
}

/// Writes the gathered dispatched marks every `HostConfig::mark_interval`: one store call
/// for every match dispatched meanwhile, with its newest revision (a match that moved five
/// times is one mark), instead of a call per few publications. Ends at `Host::stop` after
/// writing what is gathered, or when the host is dropped.
pub(crate) fn spawn_marker(shared: &Arc<Shared>) {
    let weak = Arc::downgrade(shared);
    let (interval, cancel) = (shared.config.mark_interval, shared.cancel.clone());
    shared.tasks.spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let stopping = tokio::select! {
                () = cancel.cancelled() => true,
                _ = tick.tick() => false,
            };
            let Some(shared) = weak.upgrade() else { return };
            shared.write_marks().await;
            if stopping {
                return;
            }
        }
    });
}

/// Re-dispatches outbox rows left undispatched (after a crash or a bus failure) for
/// `HostConfig::redispatch_after`. This host's gathered marks are written first, and younger
/// rows are left alone (another node's marks may still be gathering), so what was dispatched
/// is not sent again.
async fn sweep(shared: &Shared) -> Result<(), MatchError> {
    const LIMIT: usize = 512;
    shared.write_marks().await;
    let rows = shared.store.undispatched(LIMIT, shared.config.redispatch_after).await?;
    let full = rows.len() == LIMIT;
    let mut by_revision: BTreeMap<(Uuid, u64), Vec<juegoland_core::Publication>> = BTreeMap::new();
    for row in rows {
        by_revision.entry((row.publication.match_id, row.publication.revision)).or_default().push(row.publication);
    }
    // A full page may end in the middle of a revision: leave the last revision for the next
    // round rather than publish part of it and mark all of it (unless it is all there is).
    if full && by_revision.len() > 1 {
        by_revision.pop_last();
    }
    for ((match_id, revision), pubs) in by_revision {
        // The re-dispatch joins the trace of the commit that wrote the rows; the publications
        // keep that commit's context, so the deliveries continue it too.
        let span =
            info_span!(parent: None, "outbox.redispatch", match_id = %match_id, revision, publications = pubs.len());
        if let Some(trace_context) = pubs.first().and_then(|p| p.trace_context.as_deref()) {
            juegoland_telemetry::set_parent_from_text(&span, trace_context);
        }
        match shared.bus.publish(&pubs).instrument(span).await {
            Ok(()) => {
                shared.store.mark_dispatched(&[(match_id, revision)]).await?;
                shared.metrics.dispatch.with_label_values(&["swept"]).inc();
            }
            Err(e) => {
                shared.metrics.dispatch.with_label_values(&["failed"]).inc();
                return Err(MatchError::Unavailable(e.to_string()));
            }
        }
    }
    Ok(())
}

/// Sets the outbox backlog gauges from the store (left as they were when it cannot answer).
async fn measure_backlog(shared: &Shared) {
    match shared.store.outbox_backlog(shared.config.redispatch_after).await {
        Ok(backlog) => {
            // The age first: a reader that sees no rows sees no age either.
            shared.metrics.outbox_backlog_age.set(backlog.oldest_age.map_or(0.0, |age| age.as_secs_f64()));
            shared.metrics.outbox_backlog.set(i64::try_from(backlog.rows).unwrap_or(i64::MAX));
        }
        Err(e) => warn!(error = %e, "could not measure the outbox backlog"),
    }
}
