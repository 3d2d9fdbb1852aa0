//! A subscription ([`subscribe`]): one `game.sync` of a connection, which runs the sync
//! barrier and then delivers its seat's snapshots in revision order, with cursors and resyncs.
//! A spectator's subscription ([`Viewer::Spectator`]) is the same machine over the
//! spectators' publications (recipient `None`) and the match's spectator snapshot.
//!
//! The subscription is a [`Sink`] of the bus ([`Bus::watch`]), installed FIRST; then the
//! committed snapshot is read and sent while what the bus delivers meanwhile is buffered
//! ([`Barrier`]), then buffered publications above its revision are delivered in order; any
//! gap, or a buffer past [`BARRIER_MAX_REVISIONS`] / [`BARRIER_MAX_BYTES`], starts a new sync
//! instead of delivering an incomplete sequence. Once live, the bus hands each publication to
//! the sink on the task that delivers it (the match's own, in one process), which queues the
//! seat's next snapshot on the connection's outbox there and then: no task of the
//! subscription wakes for a publication. The subscription's task wakes only to read a
//! snapshot (the first, and each resync the sink asks for) and for cursors: one goes out every
//! `cursor_interval` per subscription (the first at a random point of the first interval, so
//! that subscriptions opened together do not read their cursors together); a cursor ahead of
//! what the subscription delivered starts a new sync unless the missing publication arrives
//! within [`CURSOR_GRACE`]. Each resync is counted by its reason ([`Resync`]). The task is
//! owned by its connection's protocol loop (`connection.rs`), which stops it.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use juegoland_api::SyncReply;
use juegoland_bus::{Delivery, Sink};
use juegoland_core::Publication;
use juegoland_protocol::{Cursor, ErrorCode, ErrorMessage, MessageType, ServerMessage, Snapshot, SyncRequest};
use tokio::sync::Notify;
use tracing::{debug, info_span, warn};
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

/// What the bus delivered while a subscription read a snapshot, up to the barrier's bound.
#[derive(Default)]
struct Barrier {
    /// Publications, and `None` for a gap.
    items: Vec<Option<Publication>>,
    /// Distinct revisions among the buffered publications.
    revisions: usize,
    last_revision: Option<u64>,
    bytes: usize,
    /// Past the bound: what was buffered is dropped and the subscription syncs again.
    overflowed: bool,
}

impl Barrier {
    fn push(&mut self, item: Option<&Publication>) {
        if self.overflowed {
            return;
        }
        if let Some(p) = item {
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
        self.items.push(item.cloned());
    }
}

/// Who a subscription follows the match as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Viewer {
    /// The seat the principal holds (the platform's membership decides which).
    Seat(String),
    /// An authorized spectator (the connection's bearer is a grant for this match): the
    /// spectators' publications (recipient `None`), `seat: null`.
    Spectator,
}

impl Viewer {
    /// The subscription's kind and its seat's controller, as the subscriptions gauge labels
    /// them: a seat followed by an agent's grant (principal `agent:<seat>`) is `agent`'s.
    pub(crate) fn labels(&self) -> [&'static str; 2] {
        match self {
            Viewer::Seat(p) if p.starts_with(juegoland_core::state::AGENT_PREFIX) => ["seat", "agent"],
            Viewer::Seat(_) => ["seat", "human"],
            Viewer::Spectator => ["spectator", ""],
        }
    }
}

/// Where a subscription stands, as its sink and its task share it.
enum Phase {
    /// A snapshot is being read: what the bus delivers is buffered.
    Reading(Barrier),
    /// Delivering the seat's publications straight from the bus, in order.
    Live,
    /// Live delivery found a hole: the task syncs again (what arrives until it starts reading
    /// is committed before that read, so the new snapshot covers it).
    Resync(Resync),
    /// Nothing more is delivered: the connection is gone, or the bus ended (`true`).
    Stopped { bus_ended: bool },
}

struct State {
    phase: Phase,
    /// The recipient it delivers: a seat, or `None` for a spectator.
    seat: Option<String>,
    /// The revision delivered last.
    revision: u64,
}

/// A subscription's sink: the bus calls it; it queues the seat's next snapshot on the
/// connection's outbox, or wakes the subscription's task for what it cannot do itself.
struct Live {
    match_id: Uuid,
    subscription_id: String,
    out: Outbox,
    state: Mutex<State>,
    /// Wakes the task: a resync to run, or the subscription stopped.
    wake: Notify,
}

impl Sink for Live {
    fn deliver(&self, delivery: Delivery<'_>) {
        let mut state = self.state();
        match (&mut state.phase, delivery) {
            (Phase::Reading(_), Delivery::Ended) => self.stop(&mut state, true),
            (Phase::Reading(barrier), Delivery::Publication(p)) => barrier.push(Some(p)),
            (Phase::Reading(barrier), Delivery::Gap) => barrier.push(None),
            (Phase::Live, delivery) => self.live(&mut state, delivery),
            (Phase::Resync(_), Delivery::Ended) => self.stop(&mut state, true),
            (Phase::Resync(_) | Phase::Stopped { .. }, _) => {}
        }
    }
}

impl Live {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stop(&self, state: &mut State, bus_ended: bool) {
        state.phase = Phase::Stopped { bus_ended };
        self.wake.notify_one();
    }

    fn resync(&self, state: &mut State, reason: Resync) {
        state.phase = Phase::Resync(reason);
        self.wake.notify_one();
    }

    /// One delivery while live: drops what the last snapshot covers and other seats'
    /// publications, sends the next revision, asks for a resync on a jump or a gap.
    fn live(&self, state: &mut State, delivery: Delivery<'_>) {
        match delivery {
            Delivery::Publication(p) if p.recipient == state.seat => {
                if p.revision <= state.revision {
                } else if p.revision == state.revision + 1 {
                    state.revision = p.revision;
                    if !self.send(state, p) {
                        self.stop(state, false);
                    }
                } else {
                    self.resync(state, Resync::Gap);
                }
            }
            Delivery::Publication(_) => {}
            Delivery::Gap => self.resync(state, Resync::BusLag),
            Delivery::Ended => self.stop(state, true),
        }
    }

    /// Queues the seat's snapshot of `p`; false when the connection is gone.
    fn send(&self, state: &State, p: &Publication) -> bool {
        let text = p.for_subscription(&self.subscription_id);
        match p.trace_context.as_deref() {
            // The delivery continues the trace of the commit that produced the revision.
            Some(trace_context) => {
                let span = info_span!(
                    parent: None,
                    "gateway.deliver",
                    match_id = %self.match_id,
                    revision = p.revision,
                    seat = state.seat.as_deref().unwrap_or("spectator"),
                    subscription_id = %self.subscription_id,
                );
                juegoland_telemetry::set_parent_from_text(&span, trace_context);
                span.in_scope(|| self.out.send_encoded(Snapshot::TYPE, text))
            }
            None => self.out.send_encoded(Snapshot::TYPE, text),
        }
    }

    /// Starts reading a snapshot: what arrives from now on is buffered.
    fn begin_reading(&self) {
        let mut state = self.state();
        if !matches!(state.phase, Phase::Stopped { .. }) {
            state.phase = Phase::Reading(Barrier::default());
        }
    }

    /// Sends a snapshot read at `revision`, then what its barrier buffered above it, in
    /// order, and goes live — unless the barrier overflowed or held a hole, when the task is
    /// asked to sync again. All under the lock, so no live delivery comes between.
    fn deliver_snapshot(&self, snapshot: &ServerMessage, seat: Option<&str>, revision: u64) -> bool {
        let mut state = self.state();
        if !matches!(state.phase, Phase::Reading(_)) {
            // Stopped meanwhile.
            return false;
        }
        let Phase::Reading(barrier) = std::mem::replace(&mut state.phase, Phase::Live) else {
            unreachable!("checked above")
        };
        state.seat = seat.map(str::to_owned);
        state.revision = revision;
        if !self.out.send(snapshot) {
            self.stop(&mut state, false);
            return false;
        }
        if barrier.overflowed {
            self.resync(&mut state, Resync::BarrierOverflow);
            return true;
        }
        for item in barrier.items {
            if !matches!(state.phase, Phase::Live) {
                break;
            }
            let delivery = match &item {
                Some(p) => Delivery::Publication(p),
                None => Delivery::Gap,
            };
            self.live(&mut state, delivery);
        }
        true
    }
}

/// What the task finds when its sink wakes it.
enum Woken {
    Resync(Resync),
    Stopped { bus_ended: bool },
    Nothing,
}

/// One subscription: the sync barrier, then live delivery (by the sink), cursors and resyncs.
pub(crate) async fn subscribe(
    gateway: Gateway,
    viewer: Viewer,
    req: SyncRequest,
    subscription_id: String,
    out: Outbox,
) {
    let match_id = req.match_id;
    let error =
        |code: ErrorCode| ErrorMessage::new(code).with_match_id(match_id).with_request_id(req.request_id.clone());
    let live = Arc::new(Live {
        match_id,
        subscription_id,
        out,
        state: Mutex::new(State { phase: Phase::Reading(Barrier::default()), seat: None, revision: 0 }),
        wake: Notify::new(),
    });
    // Step 1: install the sink FIRST; publications arriving from now on are buffered.
    let _watching = match gateway.bus.watch(match_id, live.clone()).await {
        Ok(w) => w,
        Err(e) => {
            warn!(match_id = %match_id, error = %e, "bus subscribe failed");
            gateway.metrics.errors.with_label_values(&[ErrorCode::Unavailable.as_str()]).inc();
            live.out.send(&error(ErrorCode::Unavailable).into());
            return;
        }
    };
    let mut task = Task { gateway, viewer, live };
    // Step 2: read a committed revision R, buffering what the bus delivers meanwhile.
    let reply = match task.read().await {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            task.live.out.send(&ErrorMessage { request_id: Some(req.request_id.clone()), ..e }.into());
            return;
        }
        None => {
            // The bus ended the subscription (it is shutting down): the client hears why and
            // may sync again, rather than wait for an answer that never comes.
            task.gateway.metrics.errors.with_label_values(&[ErrorCode::Unavailable.as_str()]).inc();
            task.live.out.send(&error(ErrorCode::Unavailable).into());
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
        task.gateway.metrics.errors.with_label_values(&[ErrorCode::IncompatibleClient.as_str()]).inc();
        task.live.out.send(&error(ErrorCode::IncompatibleClient).into());
        return;
    }
    // Step 3: the sync snapshot, with the request's id and no events; step 4: what was
    // buffered meanwhile, above R, in order (step 5, a new sync, on a gap or an overflow).
    let snapshot = with_ids(reply.snapshot, &task.live.subscription_id, Some(&req.request_id));
    if !task.live.deliver_snapshot(&snapshot, reply.seat.as_deref(), reply.revision) {
        return;
    }
    let gauge = task.gateway.metrics.subscriptions.with_label_values(&task.viewer.labels());
    gauge.inc();
    let _guard = GaugeGuard(gauge);
    // A seat's human is here: the match hands the seat back if a bot stood in for it, and
    // follows its hand-over policy once this subscription and the seat's others end. A
    // spectator is here: the match's revisions carry the spectators' publication while its
    // presence is renewed.
    let _presence = match (&task.viewer, &reply.seat) {
        (Viewer::Seat(principal), Some(_)) => {
            Some(Presence::announce(&task.gateway, match_id, principal, &task.live.subscription_id).await)
        }
        (Viewer::Spectator, None) => {
            let principal = crate::auth::spectator_principal(match_id);
            Some(Presence::announce(&task.gateway, match_id, &principal, &task.live.subscription_id).await)
        }
        _ => None,
    };
    debug!(match_id = %match_id, subscription_id = task.live.subscription_id, revision = reply.revision, "subscribed");
    task.follow().await;
}

/// A subscription's task: its snapshot reads, cursors and resyncs.
struct Task {
    gateway: Gateway,
    viewer: Viewer,
    live: Arc<Live>,
}

impl Task {
    /// What the sink left for the task.
    fn woken(&self) -> Woken {
        match self.live.state().phase {
            Phase::Resync(reason) => Woken::Resync(reason),
            Phase::Stopped { bus_ended } => Woken::Stopped { bus_ended },
            Phase::Reading(_) | Phase::Live => Woken::Nothing,
        }
    }

    /// Reads the committed snapshot while the sink buffers what the bus delivers; `None`
    /// when the bus ended the subscription meanwhile.
    async fn read(&self) -> Option<Result<SyncReply, ErrorMessage>> {
        let read = read(&self.gateway, self.live.match_id, &self.viewer);
        let mut read = std::pin::pin!(read);
        loop {
            tokio::select! {
                reply = &mut read => return Some(reply),
                () = self.live.wake.notified() => {
                    if let Woken::Stopped { bus_ended: true } = self.woken() {
                        return None;
                    }
                }
            }
        }
    }

    /// Reads and sends a fresh snapshot, then what arrived meanwhile; false when the
    /// subscription ends.
    async fn resync(&self, reason: Resync) -> bool {
        self.gateway.metrics.resyncs.with_label_values(&[reason.as_str()]).inc();
        debug!(match_id = %self.live.match_id, subscription_id = self.live.subscription_id, reason = reason.as_str(), "resync");
        self.live.begin_reading();
        match self.read().await {
            Some(Ok(r)) => {
                let snapshot = with_ids(r.snapshot, &self.live.subscription_id, None);
                self.live.deliver_snapshot(&snapshot, r.seat.as_deref(), r.revision)
            }
            Some(Err(e)) => {
                self.live.out.send(&e.with_subscription_id(self.live.subscription_id.clone()).into());
                false
            }
            None => false,
        }
    }

    /// Cursors and resyncs until the subscription ends; the sink delivers meanwhile.
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
            let resync = tokio::select! {
                () = self.live.wake.notified() => match self.woken() {
                    Woken::Resync(reason) => Some(reason),
                    Woken::Stopped { .. } => return,
                    Woken::Nothing => None,
                },
                _ = cursor.tick() => match self.gateway.matches.revision(self.live.match_id).await {
                    Ok(committed) => {
                        let c = Cursor {
                            match_id: self.live.match_id,
                            subscription_id: self.live.subscription_id.clone(),
                            revision: committed,
                        };
                        if !self.live.out.send(&c.into()) {
                            return;
                        }
                        if committed > self.live.state().revision && behind.is_none() {
                            behind = Some((committed, tokio::time::Instant::now() + CURSOR_GRACE.min(interval)));
                        }
                        None
                    }
                    Err(_) => None,
                },
                () = grace_over => match behind.take() {
                    // Our own delivery fell behind a publication that never came.
                    Some((committed, _)) if committed > self.live.state().revision => Some(Resync::Cursor),
                    _ => None,
                },
            };
            if let Some(reason) = resync {
                behind = None;
                if !self.resync(reason).await {
                    return;
                }
            }
        }
    }
}

async fn read(gateway: &Gateway, match_id: Uuid, viewer: &Viewer) -> Result<SyncReply, ErrorMessage> {
    let reply = match viewer {
        Viewer::Seat(principal) => gateway.matches.sync(match_id, principal).await,
        Viewer::Spectator => gateway.matches.spectate(match_id).await,
    };
    match reply {
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

/// A seat's or a spectator's subscription as the match's presence: announced present when
/// it synced, renewed every `presence_renew` while it lasts (the match forgets an unrenewed
/// presence after its lease, so a gateway that dies without telling cannot keep the seat
/// counted present, nor the match publishing to spectators), and gone (in a task of its own)
/// when it ends, however it ends. A failure only delays a hand-over or a hand-back, or
/// costs a spectator a resync, so it is logged, not answered.
struct Presence {
    gateway: Gateway,
    match_id: Uuid,
    principal: String,
    subscription: String,
    renewal: tokio::task::JoinHandle<()>,
}

impl Presence {
    async fn announce(gateway: &Gateway, match_id: Uuid, principal: &str, subscription: &str) -> Self {
        if let Err(e) = gateway.matches.presence(match_id, principal, subscription, true).await {
            debug!(match_id = %match_id, error = %e, "presence not told");
        }
        let renewal = {
            let (gateway, principal, subscription) = (gateway.clone(), principal.to_owned(), subscription.to_owned());
            tokio::spawn(async move {
                let mut every = tokio::time::interval(gateway.config.presence_renew);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                every.tick().await;
                loop {
                    every.tick().await;
                    if let Err(e) = gateway.matches.presence(match_id, &principal, &subscription, true).await {
                        debug!(match_id = %match_id, error = %e, "presence not renewed");
                    }
                }
            })
        };
        Self {
            gateway: gateway.clone(),
            match_id,
            principal: principal.to_owned(),
            subscription: subscription.to_owned(),
            renewal,
        }
    }
}

impl Drop for Presence {
    fn drop(&mut self) {
        self.renewal.abort();
        let Self { gateway, match_id, principal, subscription, .. } = self;
        let (gateway, match_id, principal, subscription) =
            (gateway.clone(), *match_id, std::mem::take(principal), std::mem::take(subscription));
        // The runtime may be gone (the process is ending); then so is the match's actor here.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = gateway.matches.presence(match_id, &principal, &subscription, false).await {
                    debug!(match_id = %match_id, error = %e, "absence not told");
                }
            });
        }
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

    /// A spectator's subscription tells the match it follows it, under the spectators'
    /// principal, and renews that while it lasts: the match publishes to spectators only
    /// while a renewal holds it (`libs/actors`' presence test). Its end is told too.
    #[tokio::test]
    async fn a_spectator_s_subscription_announces_and_renews_its_presence() {
        let config = GatewayConfig { presence_renew: Duration::from_millis(50), ..GatewayConfig::default() };
        let h = Harness::new(config);
        let spectator = crate::auth::spectator_principal(h.match_id);
        let bearer =
            crate::auth::Bearer { principal: "watcher".into(), scope: crate::auth::Scope::Spectate(h.match_id) };
        let (connection, mut rx) = h.connect_and_sync_as(bearer, 64);
        h.matches.permits.add_permits(1);
        assert_eq!(next(&mut rx).await, ("game.snapshot".into(), Some(0), "answer"));
        let told = || h.matches.presences.lock().unwrap().clone();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while told().len() < 3 {
            assert!(tokio::time::Instant::now() < deadline, "no renewals: {:?}", told());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let subscription = told()[0].1.clone();
        assert!(told().iter().all(|p| *p == (spectator.clone(), subscription.clone(), true)), "{:?}", told());
        connection.abort();
        while told().last().is_none_or(|p| p.2) {
            assert!(tokio::time::Instant::now() < deadline, "no absence: {:?}", told());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(told().last().unwrap(), &(spectator, subscription, false));
    }
}
