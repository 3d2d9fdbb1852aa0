//! The protocol loop of one client connection ([`serve_frames`]), whatever its transport: one
//! connection, many matches.
//!
//! The loop knows no transport: it reads [`Frame`]s and writes server messages to an
//! [`Outbox`]. The WebSocket adapter (`ws.rs`) turns text frames into frames and drains the
//! outbox into text frames; the Socket.IO adapter (`sio.rs`) does the same with events. Each
//! frame is one protocol message, rate limited per connection ([`RateLimit`]) and decoded
//! strictly; bad input gets a typed `game.error` and never harms the connection's other
//! matches. Each `game.sync` starts a subscription (`subscription.rs`) that the loop owns: an
//! unsubscribe, or the end of the loop, stops it. A client has at most one `match` or `actor`
//! board command pending per match (another one is answered COMMAND_PENDING); `queue`
//! commands (real-time input) may be several sent at once. Whatever their policy, the
//! commands of one connection for one match reach the match in the order of their frames
//! ([`Lane`]): each goes to the match once the one before it was answered, so a held arrow
//! key moves the player along the path it was pressed for, through one process or a cluster
//! (a lane holds at most [`LANE_DEPTH`] unanswered commands; the next is answered
//! RATE_LIMITED). A command or a status read runs in a task of its own until the match API
//! answers it (the API bounds each call by its timeout), so that an answer in flight still
//! reaches the transport's writer, which ends once every clone of the outbox is gone. The loop ends when the client closes, when its outbox
//! overflows, when it keeps sending over its rate or when the gateway shuts down ([`Ended`]).
//! A spectator's bearer may only sync the match its grant names; an agent's bearer (`Scope::Agent`) may only sync, command and read
//! receipts of the match its grant names (its principal, `agent:<seat>`, makes the match treat
//! it as that seat alone); anything else is FORBIDDEN.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use futures::{Stream, StreamExt};
use juegoland_protocol::{
    AckStatus, ClientMessage, CommandEnvelope, ErrorCode, ErrorMessage, ServerMessage, decode_client,
};
use tokio_util::task::AbortOnDropHandle;
use tracing::{Instrument, info_span};
use uuid::Uuid;

use crate::auth::Bearer;
use crate::gateway::{Gateway, host_error};
use crate::limits::{Refusal, TokenBucket};
use crate::outbox::Outbox;
use crate::subscription::{Viewer, subscribe};

/// How long a client message waits for room in the outgoing queue before the client is
/// taken for one that does not read.
const ROOM_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A connection's message rate: a [`TokenBucket`] whose refusals are counted too (`strikes`:
/// each refusal adds one, the rate takes them away), so that a connection that keeps sending
/// over its rate can be told apart from a burst.
struct RateLimit {
    bucket: TokenBucket,
    strikes: f64,
    sustained: f64,
}

/// What the rate limit says of one message.
#[derive(Debug, PartialEq, Eq)]
enum Rate {
    Allowed,
    /// Over the rate: answered RATE_LIMITED.
    Limited,
    /// Over the rate for long enough: the connection is closed.
    Sustained,
}

impl RateLimit {
    fn new(rate: u32, burst: u32, sustained: u32) -> Self {
        let bucket = TokenBucket::new(f64::from(rate), burst, tokio::time::Instant::now());
        Self { bucket, strikes: 0.0, sustained: f64::from(sustained.max(1)) }
    }

    /// Takes one token, or counts a refusal.
    fn allow(&mut self) -> Rate {
        let now = tokio::time::Instant::now();
        let worth = self.bucket.refill(now);
        self.strikes = (self.strikes - worth).max(0.0);
        if self.bucket.take(now) {
            Rate::Allowed
        } else {
            self.strikes += 1.0;
            if self.strikes > self.sustained { Rate::Sustained } else { Rate::Limited }
        }
    }
}

/// How many commands of one connection for one match may wait unanswered at the edge: a
/// held key's repeats for a second or more (the connection's rate limit bounds the rest).
pub(crate) const LANE_DEPTH: usize = 64;

/// The commands of one connection for one match, in frame order. Each command's task waits
/// for the one sent before it to be answered (`last`) before it calls the match, so the
/// match receives them in the order the client sent them, whichever path reaches it (the
/// host's mailbox in process, a gRPC call to the owner in a cluster): spawned tasks alone
/// run in any order.
struct Lane {
    /// Resolves (closed) once the newest command of the lane was answered.
    last: tokio::sync::oneshot::Receiver<()>,
    /// The lane's commands not answered yet.
    waiting: Arc<std::sync::atomic::AtomicUsize>,
}

impl Lane {
    fn new() -> Self {
        let (done, last) = tokio::sync::oneshot::channel();
        drop(done);
        Lane { last, waiting: Arc::default() }
    }

    fn waiting(&self) -> usize {
        self.waiting.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// A subscription of the connection: its match and its task, which stops when the handle is
/// dropped (on unsubscribe, or with the loop).
struct Subscription {
    match_id: Uuid,
    task: AbortOnDropHandle<()>,
}

/// Why a connection's protocol loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The client closed the connection (or it broke).
    Closed,
    /// The client did not read and its outgoing queue overflowed.
    Overflowed,
    /// The gateway is shutting down.
    Shutdown,
    /// The client kept sending over its message rate (`EdgeLimits::sustained_refusals`).
    RateSustained,
}

/// What a transport hands the protocol loop.
pub(crate) enum Frame {
    /// One protocol message as JSON text. `named` is the message type the transport
    /// labelled it with (a Socket.IO event name); a message of another type is malformed.
    Text { bytes: Bytes, named: Option<&'static str> },
    /// Input that cannot be a protocol message: a binary frame, an unknown Socket.IO event
    /// or an event without exactly one JSON argument.
    Unreadable,
    /// The client closed the connection.
    Close,
}

/// The protocol loop of one authenticated connection, whatever its transport: reads frames
/// until the stream ends or yields [`Frame::Close`], the outbox overflows or the gateway shuts
/// down, then stops the connection's subscriptions and says why it ended. The transport's
/// writer ends once every clone of `out` is gone.
pub(crate) async fn serve_frames(
    gateway: Gateway,
    bearer: Bearer,
    frames: impl Stream<Item = Frame>,
    out: Outbox,
) -> Ended {
    let principal = bearer.principal.clone();
    // A spectator's grant: it syncs the one match it names as a spectator, and nothing else.
    let spectating = bearer.spectating();
    let spectator_only = || {
        gateway.metrics.errors.with_label_values(&[ErrorCode::Forbidden.as_str()]).inc();
        let mut e = ErrorMessage::new(ErrorCode::Forbidden);
        e.message_key = juegoland_api::SPECTATOR_ONLY_KEY.into();
        e
    };
    // An agent's grant: it plays the one match it names, as its seat (its principal is that
    // seat's agent principal, which the match maps to that seat alone).
    let agent_match = bearer.agent().map(|(match_id, _)| match_id);
    let outside_grant = |match_id: uuid::Uuid| agent_match.is_some_and(|m| m != match_id);
    let agent_only = || {
        gateway.metrics.errors.with_label_values(&[ErrorCode::Forbidden.as_str()]).inc();
        let mut e = ErrorMessage::new(ErrorCode::Forbidden);
        e.message_key = juegoland_api::AGENT_ONLY_KEY.into();
        e
    };
    let mut frames = std::pin::pin!(frames);
    let mut subscriptions: HashMap<String, Subscription> = HashMap::new();
    let pending: Arc<pending::PendingSet> = Arc::default();
    let mut lanes: HashMap<Uuid, Lane> = HashMap::new();
    let limits = &gateway.config.limits;
    let mut limit = RateLimit::new(limits.messages_per_second, limits.burst, limits.sustained_refusals);
    let shutdown = gateway.config.shutdown.clone();
    let mut ended = Ended::Closed;

    loop {
        let frame = tokio::select! {
            biased;
            () = shutdown.begun() => {
                ended = Ended::Shutdown;
                break;
            }
            () = out.overflowed() => {
                ended = Ended::Overflowed;
                break;
            }
            frame = frames.next() => match frame {
                Some(frame) => frame,
                None => break,
            },
        };
        // Room for its answer first (`Outbox::room`): a writer that is behind catches up; a
        // client that does not read leaves none.
        if !matches!(frame, Frame::Close) && !out.room(ROOM_WAIT).await {
            ended = Ended::Overflowed;
            break;
        }
        if matches!(frame, Frame::Text { .. } | Frame::Unreadable) {
            match limit.allow() {
                Rate::Allowed => {}
                Rate::Limited => {
                    Refusal::RateLimited.count(&gateway.metrics.refused);
                    gateway.metrics.errors.with_label_values(&[ErrorCode::RateLimited.as_str()]).inc();
                    // Named after the message it refuses, when that message reads (the
                    // client resends that one).
                    let e = ErrorMessage::new(ErrorCode::RateLimited);
                    let e = match &frame {
                        Frame::Text { bytes, .. } => match decode_client(bytes) {
                            Ok(message) => message.answered_by(e),
                            Err(_) => e,
                        },
                        _ => e,
                    };
                    out.send(&e.into());
                    continue;
                }
                Rate::Sustained => {
                    Refusal::RateSustained.count(&gateway.metrics.refused);
                    ended = Ended::RateSustained;
                    break;
                }
            }
        }
        let (bytes, named) = match &frame {
            Frame::Text { bytes, named } => (bytes, *named),
            Frame::Unreadable => {
                gateway.metrics.errors.with_label_values(&[ErrorCode::MalformedMessage.as_str()]).inc();
                out.send(&ErrorMessage::new(ErrorCode::MalformedMessage).into());
                continue;
            }
            Frame::Close => break,
        };
        let msg = match decode_client(bytes) {
            Ok(m) => m,
            Err(e) => {
                gateway.metrics.errors.with_label_values(&[e.code().as_str()]).inc();
                out.send(&e.to_error_message().into());
                continue;
            }
        };
        if named.is_some_and(|name| name != msg.message_type()) {
            // A Socket.IO event whose name is not its message's type.
            gateway.metrics.errors.with_label_values(&[ErrorCode::MalformedMessage.as_str()]).inc();
            out.send(&ErrorMessage::new(ErrorCode::MalformedMessage).into());
            continue;
        }
        gateway.metrics.messages.with_label_values(&[msg.message_type()]).inc();
        match msg {
            ClientMessage::Sync(req) if spectating.is_some_and(|m| m != req.match_id) => {
                out.send(&spectator_only().with_match_id(req.match_id).with_request_id(req.request_id).into());
            }
            ClientMessage::Command(envelope) if spectating.is_some() => {
                let e = spectator_only().with_match_id(envelope.match_id).with_command_id(envelope.command_id);
                out.send(&e.into());
            }
            ClientMessage::CommandStatus(req) if spectating.is_some() => {
                out.send(&spectator_only().with_match_id(req.match_id).with_command_id(req.command_id).into());
            }
            ClientMessage::Sync(req) if outside_grant(req.match_id) => {
                out.send(&agent_only().with_match_id(req.match_id).with_request_id(req.request_id).into());
            }
            ClientMessage::Command(envelope) if outside_grant(envelope.match_id) => {
                let e = agent_only().with_match_id(envelope.match_id).with_command_id(envelope.command_id);
                out.send(&e.into());
            }
            ClientMessage::CommandStatus(req) if outside_grant(req.match_id) => {
                out.send(&agent_only().with_match_id(req.match_id).with_command_id(req.command_id).into());
            }
            ClientMessage::Sync(req) => {
                subscriptions.retain(|_, s| !s.task.is_finished());
                if subscriptions.len() >= limits.max_subscriptions {
                    // Each subscription is a task fed by the bus: a connection may not pile
                    // them up (unsubscribe first).
                    Refusal::Subscriptions.count(&gateway.metrics.refused);
                    gateway.metrics.errors.with_label_values(&[ErrorCode::RateLimited.as_str()]).inc();
                    let e = ErrorMessage::new(ErrorCode::RateLimited)
                        .with_match_id(req.match_id)
                        .with_request_id(req.request_id);
                    out.send(&e.into());
                    continue;
                }
                let viewer = match spectating {
                    Some(_) => Viewer::Spectator,
                    None => Viewer::Seat(principal.clone()),
                };
                let subscription_id = format!("s-{}", juegoland_api::random_uuid());
                let match_id = req.match_id;
                let task = AbortOnDropHandle::new(tokio::spawn(subscribe(
                    gateway.clone(),
                    viewer,
                    req,
                    subscription_id.clone(),
                    out.clone(),
                )));
                subscriptions.insert(subscription_id, Subscription { match_id, task });
            }
            ClientMessage::Command(envelope) => {
                let (match_id, command_id) = (envelope.match_id, envelope.command_id);
                // The one-pending-command rule is for `match` and `actor` commands; `queue`
                // commands may be several in flight, bounded by the match's FIFO.
                let queued = envelope.precondition == juegoland_protocol::Precondition::Queue;
                if !queued && !pending.insert(match_id) {
                    let e = ErrorMessage::new(ErrorCode::CommandPending)
                        .with_match_id(match_id)
                        .with_command_id(command_id);
                    gateway.metrics.errors.with_label_values(&[ErrorCode::CommandPending.as_str()]).inc();
                    out.send(&e.into());
                    continue;
                }
                // Lanes with nothing in flight are forgotten.
                lanes.retain(|_, lane| lane.waiting() > 0);
                let lane = lanes.entry(match_id).or_insert_with(Lane::new);
                if lane.waiting() >= LANE_DEPTH {
                    if !queued {
                        pending.remove(match_id);
                    }
                    gateway.metrics.errors.with_label_values(&[ErrorCode::RateLimited.as_str()]).inc();
                    let e =
                        ErrorMessage::new(ErrorCode::RateLimited).with_match_id(match_id).with_command_id(command_id);
                    out.send(&e.into());
                    continue;
                }
                lane.waiting.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                let (done, next) = tokio::sync::oneshot::channel::<()>();
                let before = std::mem::replace(&mut lane.last, next);
                let waiting = lane.waiting.clone();
                let (gateway, principal, out, pending) =
                    (gateway.clone(), principal.clone(), out.clone(), pending.clone());
                tokio::spawn(async move {
                    // Closed once the command before it was answered.
                    let _ = before.await;
                    let answer = command(&gateway, &principal, envelope).await;
                    waiting.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
                    if !queued {
                        pending.remove(match_id);
                    }
                    out.send(&answer);
                    drop(done);
                });
            }
            ClientMessage::CommandStatus(req) => {
                let (gateway, principal, out) = (gateway.clone(), principal.clone(), out.clone());
                tokio::spawn(async move {
                    let answer = match gateway.matches.command_status(req.match_id, &principal, req.command_id).await {
                        Ok(m) => m,
                        Err(e) => host_error(&gateway, &e, Some(req.match_id)).with_command_id(req.command_id).into(),
                    };
                    out.send(&answer);
                });
            }
            ClientMessage::Unsubscribe(req) => {
                // A subscription belongs to its connection: another connection's id is
                // simply not found here.
                match subscriptions.remove(&req.subscription_id) {
                    Some(s) if s.match_id == req.match_id => s.task.abort(),
                    other => {
                        if let Some(s) = other {
                            subscriptions.insert(req.subscription_id.clone(), s);
                        }
                        let e = ErrorMessage::new(ErrorCode::SubscriptionNotFound)
                            .with_match_id(req.match_id)
                            .with_subscription_id(req.subscription_id);
                        out.send(&e.into());
                    }
                }
            }
        }
    }
    // Dropping the handles stops the subscriptions.
    drop(subscriptions);
    ended
}

/// One client command, in a `gateway.command` span (trace-only): the root of the command's trace (clients
/// send no trace context), which the call to the router (or the host, in one process)
/// continues. It names the match and the command and records the answer's status or error
/// code; never the action or its payload.
async fn command(gateway: &Gateway, principal: &str, envelope: CommandEnvelope) -> ServerMessage {
    let (match_id, command_id) = (envelope.match_id, envelope.command_id);
    let span = info_span!(
        target: juegoland_telemetry::TRACE_ONLY,
        parent: None,
        "gateway.command",
        match_id = %match_id,
        command_id = %command_id,
        outcome = tracing::field::Empty,
    );
    async move {
        let _timer = gateway.metrics.command_seconds.start_timer();
        let answer = match gateway.matches.command(principal, envelope).await {
            Ok(answer) => {
                if let ServerMessage::Error(e) = &answer {
                    gateway.metrics.errors.with_label_values(&[e.code.as_str()]).inc();
                }
                answer
            }
            Err(e) => host_error(gateway, &e, Some(match_id)).with_command_id(command_id).into(),
        };
        let outcome = match &answer {
            ServerMessage::Ack(ack) if ack.status == AckStatus::Applied => "applied",
            ServerMessage::Ack(_) => "rejected",
            ServerMessage::Error(e) => e.code.as_str(),
            _ => "other",
        };
        tracing::Span::current().record("outcome", outcome);
        answer
    }
    .instrument(span)
    .await
}

mod pending {
    use std::collections::HashSet;
    use std::sync::Mutex;

    use uuid::Uuid;

    /// The matches with a board command in flight on one connection.
    #[derive(Default)]
    pub struct PendingSet(Mutex<HashSet<Uuid>>);

    impl PendingSet {
        /// False if a command for `match_id` is already pending.
        pub fn insert(&self, match_id: Uuid) -> bool {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(match_id)
        }

        pub fn remove(&self, match_id: Uuid) {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(&match_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::gateway::GatewayConfig;
    use crate::harness::Harness;

    #[tokio::test]
    async fn a_burst_waits_for_a_writer_that_is_behind_instead_of_overflowing() {
        let h = Harness::new(GatewayConfig::default());
        // Forty undecodable frames at once, each answered, into a queue of 4 that a slow
        // writer drains: every answer arrives and the connection is not taken for a slow
        // reader.
        let frames =
            futures::stream::iter((0..40).map(|_| Frame::Text { bytes: Bytes::from_static(b"not json"), named: None }));
        let (out, mut rx) = Outbox::channel(4);
        let writer = tokio::spawn(async move {
            let mut n = 0;
            while rx.recv().await.is_some() {
                n += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            n
        });
        let ended = serve_frames(h.gateway.clone(), Bearer::seats("alice"), frames, out).await;
        assert_eq!(ended, Ended::Closed);
        assert_eq!(writer.await.unwrap(), 40);
    }

    /// Found by a player holding an arrow key in Laberinto: each command ran in its own task,
    /// so a burst of `queue` commands reached the match scrambled (a path walked out of
    /// order, legal moves rejected as walls). Here the first command's way to the match is
    /// the longest; they still arrive in the order sent, on each match, while the lane of
    /// one match does not hold up another's.
    #[tokio::test]
    async fn a_connection_s_commands_reach_each_match_in_the_order_sent() {
        let h = Harness::new(GatewayConfig::default());
        let other = Uuid::from_u128(0x07e1);
        let command = |match_id: Uuid, i: u8| {
            let id = Uuid::from_u128(0xc0de_0000 + u128::from(i));
            let text = serde_json::json!({
                "protocolVersion": 1, "type": "game.command", "matchId": match_id, "commandId": id,
                "precondition": {"kind": "queue"}, "action": {"type": "move", "payload": {}}
            });
            (id, Frame::Text { bytes: Bytes::from(text.to_string()), named: None })
        };
        let mut sent = Vec::new();
        let mut frames = Vec::new();
        for i in 0..8 {
            let (id, frame) = command(h.match_id, i);
            sent.push(id);
            frames.push(frame);
        }
        let (elsewhere, frame) = command(other, 9);
        frames.push(frame);
        let (out, mut rx) = Outbox::channel(64);
        let frames = futures::stream::iter(frames).chain(futures::stream::pending());
        let connection = tokio::spawn(serve_frames(h.gateway.clone(), Bearer::seats("alice"), frames, out));
        for _ in 0..9 {
            tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.expect("every command answered");
        }
        let arrived = h.matches.commands.lock().unwrap().clone();
        let here: Vec<Uuid> = arrived.iter().copied().filter(|id| *id != elsewhere).collect();
        assert_eq!(here, sent, "one match's commands arrive in the order sent");
        // The other match's command (a short way) did not wait behind the first match's lane.
        let position = arrived.iter().position(|id| *id == elsewhere).unwrap();
        assert!(position < 7, "another match's lane waited: {arrived:?}");
        connection.abort();
    }

    /// A lane holds at most [`LANE_DEPTH`] unanswered commands: the next is RATE_LIMITED (to
    /// be sent again), and never reaches the match.
    #[tokio::test]
    async fn a_lane_full_of_unanswered_commands_refuses_the_next() {
        let h = Harness::new(GatewayConfig::default());
        let frames: Vec<Frame> = (0..=LANE_DEPTH as u128)
            .map(|i| {
                let text = serde_json::json!({
                    "protocolVersion": 1, "type": "game.command", "matchId": h.match_id,
                    "commandId": Uuid::from_u128(0xfeed_0000 + i),
                    "precondition": {"kind": "queue"}, "action": {"type": "move", "payload": {}}
                });
                Frame::Text { bytes: Bytes::from(text.to_string()), named: None }
            })
            .collect();
        let (out, mut rx) = Outbox::channel(64);
        let frames = futures::stream::iter(frames).chain(futures::stream::pending());
        let connection = tokio::spawn(serve_frames(h.gateway.clone(), Bearer::seats("alice"), frames, out));
        let mut limited = 0;
        for _ in 0..=LANE_DEPTH {
            let answer = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.expect("an answer").unwrap();
            limited += usize::from(answer.text.as_str().contains("RATE_LIMITED"));
        }
        assert_eq!(limited, 1);
        assert_eq!(h.matches.commands.lock().unwrap().len(), LANE_DEPTH);
        connection.abort();
    }

    #[tokio::test]
    async fn a_client_that_does_not_read_is_disconnected_when_its_queue_overflows() {
        let h = Harness::new(GatewayConfig::default());
        // Undecodable frames, each answered with an error, into a queue of 4 nobody drains.
        let frames =
            futures::stream::iter((0..10).map(|_| Frame::Text { bytes: Bytes::from_static(b"not json"), named: None }))
                .chain(futures::stream::pending());
        let (out, _rx) = Outbox::channel(4);
        let ended = tokio::time::timeout(
            ROOM_WAIT + Duration::from_secs(5),
            serve_frames(h.gateway.clone(), Bearer::seats("alice"), frames, out),
        )
        .await;
        assert_eq!(ended.ok(), Some(Ended::Overflowed));
    }
}
