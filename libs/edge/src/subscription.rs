//! A subscription ([`subscribe`]): one `game.sync` of a connection, which runs the sync
//! barrier and then delivers its seat's snapshots in revision order, with cursors and resyncs.
//!
//! The bus receiver is installed FIRST, then the committed snapshot is read and sent while
//! what the bus delivers meanwhile is buffered ([`Barrier`]), then buffered publications above
//! its revision are delivered in order; any gap, or a buffer past [`BARRIER_MAX_REVISIONS`] /
//! [`BARRIER_MAX_BYTES`], starts a new sync instead of delivering an incomplete sequence. A
//! cursor goes out every `cursor_interval` per subscription (the first at a random point of
//! the first interval, so that subscriptions opened together do not read their cursors
//! together); a cursor ahead of what the subscription delivered starts a new sync unless the
//! missing publication arrives within [`CURSOR_GRACE`]. Each resync is counted by its reason
//! ([`Resync`]). A subscription runs in a task owned by its connection's protocol loop
//! (`connection.rs`), which stops it.

use std::time::Duration;

use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use juegoland_api::SyncReply;
use juegoland_bus::BusItem;
use juegoland_core::Publication;
use juegoland_protocol::{Cursor, ErrorCode, ErrorMessage, MessageType, ServerMessage, Snapshot, SyncRequest};
use tracing::{Instrument, debug, info_span, warn};
use uuid::Uuid;

use crate::gateway::{BARRIER_MAX_BYTES, BARRIER_MAX_REVISIONS, CURSOR_GRACE, Gateway, host_error};
use crate::outbox::Outbox;

/// Why a subscription resynced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resync {
    Gap,
    BusLag,
    Cursor,
    /// More than the barrier's bound arrived while a snapshot was read.
    BarrierOverflow,
}

impl Resync {
    /// Every reason (the metrics start each at 0).
    pub(crate) const ALL: [Resync; 4] = [Resync::Gap, Resync::BusLag, Resync::Cursor, Resync::BarrierOverflow];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Resync::Gap => "gap",
            Resync::BusLag => "bus-lag",
            Resync::Cursor => "cursor",
            Resync::BarrierOverflow => "barrier-overflow",
        }
    }
}

/// What the bus delivers while a subscription reads a snapshot, up to the barrier's bound.
#[derive(Default)]
struct Barrier {
    items: Vec<BusItem>,
    /// Distinct revisions among the buffered publications.
    revisions: usize,
    last_revision: Option<u64>,
    bytes: usize,
    /// Past the bound: what was buffered is dropped and the subscription syncs again.
    overflowed: bool,
}

impl Barrier {
    fn push(&mut self, item: BusItem) {
        if self.overflowed {
            return;
        }
        if let BusItem::Publication(p) = &item {
            if self.last_revision != Some(p.revision) {
                self.revisions += 1;
                self.last_revision = Some(p.revision);
            }
            self.bytes += p.encoded.len();
            if self.revisions > BARRIER_MAX_REVISIONS || self.bytes > BARRIER_MAX_BYTES {
                self.overflowed = true;
                self.items = Vec::new();
                return;
            }
        }
        self.items.push(item);
    }
}

/// What to do after handling one bus item.
enum Step {
    Continue,
    Resync(Resync),
    /// The connection is gone, or the subscription cannot go on.
    Stop,
}

/// One subscription: the sync barrier, then live delivery, cursors and resyncs.
pub(crate) async fn subscribe(
    gateway: Gateway,
    principal: String,
    req: SyncRequest,
    subscription_id: String,
    out: Outbox,
) {
    let match_id = req.match_id;
    let error =
        |code: ErrorCode| ErrorMessage::new(code).with_match_id(match_id).with_request_id(req.request_id.clone());
    // Step 1: install the receiver FIRST; publications arriving from now on are buffered.
    let publications = match gateway.bus.subscribe(match_id).await {
        Ok(s) => s,
        Err(e) => {
            warn!(match_id = %match_id, error = %e, "bus subscribe failed");
            gateway.metrics.errors.with_label_values(&[ErrorCode::Unavailable.as_str()]).inc();
            out.send(&error(ErrorCode::Unavailable).into()).await;
            return;
        }
    };
    let mut live =
        Live { gateway, principal, match_id, subscription_id, out, publications, seat: String::new(), revision: 0 };
    // Step 2: read a committed revision R, buffering what the bus delivers meanwhile.
    let (reply, barrier) = match live.read_buffered().await {
        Some((Ok(r), barrier)) => (r, barrier),
        Some((Err(e), _)) => {
            live.out.send(&ErrorMessage { request_id: Some(req.request_id.clone()), ..e }.into()).await;
            return;
        }
        None => {
            // The bus ended the stream (it is shutting down): the client hears why and may
            // sync again, rather than wait for an answer that never comes.
            live.gateway.metrics.errors.with_label_values(&[ErrorCode::Unavailable.as_str()]).inc();
            live.out.send(&error(ErrorCode::Unavailable).into()).await;
            return;
        }
    };
    let compatible = req.accept.iter().any(|t| {
        t.id == reply.game.id
            && t.rules_version == reply.game.rules_version
            && t.view_schema_version == reply.view_schema_version
            && t.event_schema_version == reply.event_schema_version
    });
    if !compatible {
        live.gateway.metrics.errors.with_label_values(&[ErrorCode::IncompatibleClient.as_str()]).inc();
        live.out.send(&error(ErrorCode::IncompatibleClient).into()).await;
        return;
    }
    live.seat = reply.seat.clone();
    live.revision = reply.revision;
    // Step 3: the sync snapshot, with the request's id and no events.
    if !live.out.send(&with_ids(reply.snapshot, &live.subscription_id, Some(&req.request_id))).await {
        return;
    }
    let metrics = live.gateway.metrics.clone();
    metrics.subscriptions.inc();
    let _guard = GaugeGuard(metrics.subscriptions.clone());
    debug!(match_id = %match_id, subscription_id = live.subscription_id, revision = live.revision, "subscribed");
    // Step 4: what was buffered meanwhile, above R, in order (step 5 on a gap or overflow).
    if !live.deliver_barrier(barrier).await {
        return;
    }
    live.follow().await;
}

/// A subscription past its sync answer: its seat, the revision it has delivered, and the bus
/// stream it follows.
struct Live {
    gateway: Gateway,
    principal: String,
    match_id: Uuid,
    subscription_id: String,
    out: Outbox,
    publications: BoxStream<'static, BusItem>,
    seat: String,
    revision: u64,
}

impl Live {
    /// Reads the committed snapshot while buffering what the bus delivers meanwhile, up to
    /// the barrier's bound; `None` when the bus stream ended.
    async fn read_buffered(&mut self) -> Option<(Result<SyncReply, ErrorMessage>, Barrier)> {
        let mut barrier = Barrier::default();
        let read = read(&self.gateway, self.match_id, &self.principal);
        let mut read = std::pin::pin!(read);
        let reply = loop {
            tokio::select! {
                reply = &mut read => break reply,
                item = self.publications.next() => match item {
                    Some(item) => barrier.push(item),
                    None => return None,
                },
            }
        };
        // What arrived while the read was answered counts too.
        while let Some(Some(item)) = self.publications.next().now_or_never() {
            barrier.push(item);
        }
        Some((reply, barrier))
    }

    /// Delivers what a barrier buffered, resyncing on a gap or an overflow; false when the
    /// subscription ends.
    async fn deliver_barrier(&mut self, barrier: Barrier) -> bool {
        let mut barrier = barrier;
        loop {
            let mut resync = barrier.overflowed.then_some(Resync::BarrierOverflow);
            if resync.is_none() {
                for item in std::mem::take(&mut barrier.items) {
                    match self.on_item(item).await {
                        Step::Continue => {}
                        Step::Resync(reason) => {
                            resync = Some(reason);
                            break;
                        }
                        Step::Stop => return false,
                    }
                }
            }
            // Step 5: a gap or an overflow starts a new sync instead of an incomplete
            // sequence; what arrives during its read is a barrier of its own.
            let Some(reason) = resync else { return true };
            match self.resync(reason).await {
                Some(next) => barrier = next,
                None => return false,
            }
        }
    }

    /// Handles one live item: drops what the last snapshot covers, delivers the next
    /// revision, and asks for a resync on a jump or a gap.
    async fn on_item(&mut self, item: BusItem) -> Step {
        match item {
            BusItem::Publication(p) if p.recipient.as_deref() == Some(self.seat.as_str()) => {
                self.on_publication(&p).await
            }
            BusItem::Publication(_) => Step::Continue,
            BusItem::Gap => Step::Resync(Resync::BusLag),
        }
    }

    async fn on_publication(&mut self, p: &Publication) -> Step {
        if p.revision <= self.revision {
            Step::Continue
        } else if p.revision == self.revision + 1 {
            self.revision = p.revision;
            let send = self.out.send_encoded(Snapshot::TYPE, p.for_subscription(&self.subscription_id));
            let sent = match p.trace_context.as_deref() {
                // The delivery continues the trace of the commit that produced the revision.
                Some(trace_context) => {
                    let span = info_span!(
                        parent: None,
                        "gateway.deliver",
                        match_id = %self.match_id,
                        revision = p.revision,
                        seat = %self.seat,
                        subscription_id = %self.subscription_id,
                    );
                    juegoland_telemetry::set_parent_from_text(&span, trace_context);
                    send.instrument(span).await
                }
                None => send.await,
            };
            if sent { Step::Continue } else { Step::Stop }
        } else {
            Step::Resync(Resync::Gap)
        }
    }

    /// Reads and sends a fresh snapshot; the barrier of what arrived meanwhile, or `None`
    /// when the subscription ends.
    async fn resync(&mut self, reason: Resync) -> Option<Barrier> {
        self.gateway.metrics.resyncs.with_label_values(&[reason.as_str()]).inc();
        debug!(match_id = %self.match_id, subscription_id = self.subscription_id, reason = reason.as_str(), "resync");
        match self.read_buffered().await? {
            (Ok(r), barrier) => {
                self.revision = r.revision;
                self.out.send(&with_ids(r.snapshot, &self.subscription_id, None)).await.then_some(barrier)
            }
            (Err(e), _) => {
                self.out.send(&e.with_subscription_id(self.subscription_id.clone()).into()).await;
                None
            }
        }
    }

    /// Live delivery, cursors and resyncs until the subscription ends.
    async fn follow(&mut self) {
        let interval = self.gateway.config.cursor_interval;
        // The first cursor comes at a random point of the first interval, so subscriptions
        // opened together (a reconnect storm, a gateway restart) do not read their cursors
        // together ever after.
        let phase = juegoland_api::random_uuid().as_u128() % interval.as_micros().max(1);
        let first = tokio::time::Instant::now() + Duration::from_micros(phase as u64);
        let mut cursor = tokio::time::interval_at(first, interval);
        // A cursor showed this committed revision before its publication arrived: it gets
        // until the deadline to come.
        let mut behind: Option<(u64, tokio::time::Instant)> = None;
        loop {
            let grace_over = async {
                match behind {
                    Some((_, deadline)) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            let step = tokio::select! {
                item = self.publications.next() => match item {
                    Some(item) => self.on_item(item).await,
                    None => Step::Stop,
                },
                _ = cursor.tick() => match self.gateway.matches.revision(self.match_id).await {
                    Ok(committed) => {
                        let c = Cursor {
                            match_id: self.match_id,
                            subscription_id: self.subscription_id.clone(),
                            revision: committed,
                        };
                        if !self.out.send(&c.into()).await {
                            return;
                        }
                        if committed > self.revision && behind.is_none() {
                            behind = Some((committed, tokio::time::Instant::now() + CURSOR_GRACE.min(interval)));
                        }
                        Step::Continue
                    }
                    Err(_) => Step::Continue,
                },
                () = grace_over => match behind.take() {
                    // Our own delivery fell behind a publication that never came.
                    Some((committed, _)) if committed > self.revision => Step::Resync(Resync::Cursor),
                    _ => Step::Continue,
                },
            };
            match step {
                Step::Continue => {}
                Step::Stop => return,
                Step::Resync(reason) => {
                    behind = None;
                    match self.resync(reason).await {
                        Some(barrier) => {
                            if !self.deliver_barrier(barrier).await {
                                return;
                            }
                        }
                        None => return,
                    }
                }
            }
        }
    }
}

async fn read(gateway: &Gateway, match_id: Uuid, principal: &str) -> Result<SyncReply, ErrorMessage> {
    match gateway.matches.sync(match_id, principal).await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(e)) => {
            // A refusal (FORBIDDEN, …) is a game.error like any other; `host_error` counts its own.
            gateway.metrics.errors.with_label_values(&[e.code.as_str()]).inc();
            Err(e)
        }
        Err(e) => Err(host_error(gateway, &e, Some(match_id))),
    }
}

fn with_ids(msg: ServerMessage, subscription_id: &str, request_id: Option<&str>) -> ServerMessage {
    match msg {
        ServerMessage::Snapshot(mut s) => {
            s.subscription_id = subscription_id.to_owned();
            s.request_id = request_id.map(str::to_owned);
            ServerMessage::Snapshot(s)
        }
        other => other,
    }
}

struct GaugeGuard(prometheus::IntGauge);

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use serde_json::Value;
    use tokio::sync::mpsc;

    use super::*;
    use crate::gateway::GatewayConfig;
    use crate::harness::Harness;
    use crate::outbox::Outgoing;

    /// The next message of the outbox: its type, its revision (if any) and whether it has a
    /// `requestId` (the sync answer) or a `fromRevision` (a live snapshot).
    async fn next(rx: &mut mpsc::Receiver<Outgoing>) -> (String, Option<u64>, &'static str) {
        let message = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("a message within 5 s")
            .expect("the connection is open");
        let v: Value = serde_json::from_str(message.text.as_str()).expect("json");
        let kind = match (v.get("requestId"), v.get("subscriptionId")) {
            (Some(_), _) => "answer",
            (None, Some(s)) if s.as_str().is_some_and(|s| s.starts_with("s-")) => "for-subscription",
            _ => "other",
        };
        (v["type"].as_str().unwrap_or_default().to_owned(), v["revision"].as_u64(), kind)
    }

    /// Nothing but cursors for 100 ms: a cursor is a heartbeat that comes at a random point of
    /// its first interval, not a delivery (it flaked this in CI).
    async fn quiet(rx: &mut mpsc::Receiver<Outgoing>) {
        let until = tokio::time::Instant::now() + Duration::from_millis(100);
        while let Ok(Some(m)) = tokio::time::timeout_at(until, rx.recv()).await {
            let v: Value = serde_json::from_str(m.text.as_str()).expect("json");
            assert_eq!(v["type"], "game.cursor", "unexpected message {}", m.text.as_str());
        }
    }

    #[tokio::test]
    async fn publications_during_the_barrier_are_delivered_after_the_snapshot_in_order() {
        let h = Harness::new(GatewayConfig::default());
        let (_loop, mut rx) = h.connect_and_sync(64);
        h.matches.reads_started(1).await;
        // While the snapshot is read: revisions 1..=5; the read then answers revision 2.
        for revision in 1..=5 {
            h.publish(revision, 0).await;
        }
        h.matches.committed.store(2, Ordering::SeqCst);
        h.matches.permits.add_permits(1);
        assert_eq!(next(&mut rx).await, ("game.snapshot".into(), Some(2), "answer"));
        for revision in 3..=5 {
            assert_eq!(next(&mut rx).await, ("game.snapshot".into(), Some(revision), "for-subscription"));
        }
        quiet(&mut rx).await;
        assert_eq!(h.matches.reads.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn more_revisions_than_the_barrier_holds_start_a_new_sync() {
        let h = Harness::new(GatewayConfig::default());
        let (_loop, mut rx) = h.connect_and_sync(64);
        h.matches.reads_started(1).await;
        let last = BARRIER_MAX_REVISIONS as u64 + 1;
        for revision in 1..=last {
            h.publish(revision, 0).await;
        }
        h.matches.committed.store(1, Ordering::SeqCst);
        h.matches.permits.add_permits(1);
        // The answer, then instead of revisions 2..=129 from a dropped buffer, a new sync.
        assert_eq!(next(&mut rx).await, ("game.snapshot".into(), Some(1), "answer"));
        h.matches.reads_started(2).await;
        h.matches.committed.store(last, Ordering::SeqCst);
        h.matches.permits.add_permits(1);
        assert_eq!(next(&mut rx).await, ("game.snapshot".into(), Some(last), "for-subscription"));
        assert_eq!(h.resyncs(Resync::BarrierOverflow), 1);
        // Live delivery goes on from there.
        h.publish(last + 1, 0).await;
        assert_eq!(next(&mut rx).await, ("game.snapshot".into(), Some(last + 1), "for-subscription"));
        quiet(&mut rx).await;
    }

    #[tokio::test]
    async fn more_bytes_than_the_barrier_holds_start_a_new_sync() {
        let h = Harness::new(GatewayConfig::default());
        let (_loop, mut rx) = h.connect_and_sync(64);
        h.matches.reads_started(1).await;
        // Three revisions of 3 MiB each: few revisions, but past 8 MiB.
        for revision in 1..=3 {
            h.publish(revision, 3 << 20).await;
        }
        h.matches.permits.add_permits(1);
        assert_eq!(next(&mut rx).await, ("game.snapshot".into(), Some(0), "answer"));
        h.matches.reads_started(2).await;
        h.matches.committed.store(3, Ordering::SeqCst);
        h.matches.permits.add_permits(1);
        assert_eq!(next(&mut rx).await, ("game.snapshot".into(), Some(3), "for-subscription"));
        assert_eq!(h.resyncs(Resync::BarrierOverflow), 1);
        quiet(&mut rx).await;
    }

    #[tokio::test]
    async fn a_cursor_ahead_of_delivery_waits_for_the_publication_before_resyncing() {
        let config = GatewayConfig { cursor_interval: Duration::from_millis(200), ..GatewayConfig::default() };
        let h = Harness::new(config);
        let (_loop, mut rx) = h.connect_and_sync(64);
        h.matches.permits.add_permits(1);
        assert_eq!(next(&mut rx).await, ("game.snapshot".into(), Some(0), "answer"));
        // Revision 1 is committed and its publication is on its way when the cursor reads.
        h.matches.committed.store(1, Ordering::SeqCst);
        loop {
            match next(&mut rx).await {
                // A cursor read before the commit (the first comes at a random point).
                (kind, Some(0), _) if kind == "game.cursor" => continue,
                cursor => break assert_eq!(cursor, ("game.cursor".into(), Some(1), "for-subscription")),
            }
        }
        h.publish(1, 0).await;
        assert_eq!(next(&mut rx).await, ("game.snapshot".into(), Some(1), "for-subscription"));
        // Revision 2's publication never comes: after the grace, a new sync.
        h.matches.committed.store(2, Ordering::SeqCst);
        h.matches.permits.add_permits(1);
        loop {
            match next(&mut rx).await {
                (kind, Some(1), _) if kind == "game.cursor" => continue,
                cursor => break assert_eq!(cursor, ("game.cursor".into(), Some(2), "for-subscription")),
            }
        }
        let resynced = loop {
            match next(&mut rx).await {
                (kind, ..) if kind == "game.cursor" => continue,
                other => break other,
            }
        };
        assert_eq!(resynced, ("game.snapshot".into(), Some(2), "for-subscription"));
        assert_eq!(h.resyncs(Resync::Cursor), 1);
        assert_eq!(h.matches.reads.load(Ordering::SeqCst), 2);
    }
}
