//! The protocol loop of one client connection, and its WebSocket transport: one connection,
//! many matches.
//!
//! The loop ([`serve_frames`]) knows no transport: it reads [`Frame`]s and writes server
//! messages to an [`Outbox`]. The WebSocket adapter ([`serve`]) turns text frames into
//! frames and drains the outbox into text frames; the Socket.IO adapter (`sio.rs`) does the
//! same with events. Each text frame is one protocol message, decoded strictly; bad input
//! gets a typed `game.error` and never harms the connection's other matches. Each
//! `game.sync` opens a subscription that runs the sync barrier: the bus receiver is installed
//! FIRST, then the committed snapshot is read and sent, then buffered publications above its
//! revision are delivered in order; any gap starts a new sync instead of delivering an
//! incomplete sequence. A cursor goes out every `cursor_interval` per subscription.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{Message, Utf8Bytes, WebSocket};
use futures::{SinkExt, Stream, StreamExt};
use juegoland_actors::{HostError, Matches, SyncReply};
use juegoland_bus::{Bus, BusItem};
use juegoland_protocol::{
    ClientMessage, CommandEnvelope, Cursor, ErrorCode, ErrorMessage, MessageType, ServerMessage, Snapshot, SyncRequest,
    decode_client, encode,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{debug, warn};
use uuid::Uuid;

use crate::metrics::EdgeMetrics;

/// Gateway settings.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    pub cursor_interval: Duration,
    /// Outgoing messages queued per connection before the connection is considered dead.
    pub outgoing_queue: usize,
    /// Client messages per second each connection may send on average; above it they are
    /// answered with `RATE_LIMITED` (retry the same command) and not processed.
    pub messages_per_second: u32,
    /// How many messages a connection may send in a burst above the average.
    pub burst: u32,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self { cursor_interval: Duration::from_secs(15), outgoing_queue: 1024, messages_per_second: 50, burst: 100 }
    }
}

/// A token bucket: `rate` tokens a second up to `burst`. Hand-rolled (a dozen lines) rather
/// than a crate because it is per connection, single-threaded and needs nothing else.
struct RateLimit {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: tokio::time::Instant,
}

impl RateLimit {
    fn new(rate: u32, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self { rate: f64::from(rate), burst, tokens: burst, last: tokio::time::Instant::now() }
    }

    /// Takes one token; false when the connection is over its rate.
    fn allow(&mut self) -> bool {
        let now = tokio::time::Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.last).as_secs_f64() * self.rate).min(self.burst);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[derive(Clone)]
pub(crate) struct Gateway {
    pub matches: Arc<dyn Matches>,
    pub bus: Arc<dyn Bus>,
    pub metrics: EdgeMetrics,
    pub config: GatewayConfig,
}

struct Subscription {
    match_id: Uuid,
    task: JoinHandle<()>,
}

/// One server message for the connection's writer: its wire `type` (a Socket.IO event name)
/// and its JSON text.
pub(crate) struct Outgoing {
    pub kind: &'static str,
    pub text: Utf8Bytes,
}

/// Sends protocol messages to the connection's writer.
#[derive(Clone)]
pub(crate) struct Outbox(mpsc::Sender<Outgoing>);

impl Outbox {
    /// An outbox holding up to `queue` messages, and the receiver its writer drains.
    pub(crate) fn channel(queue: usize) -> (Self, mpsc::Receiver<Outgoing>) {
        let (tx, rx) = mpsc::channel(queue);
        (Self(tx), rx)
    }

    async fn send(&self, msg: &ServerMessage) -> bool {
        self.send_encoded(msg.message_type(), encode(msg)).await
    }

    async fn send_encoded(&self, kind: &'static str, text: String) -> bool {
        self.0.send(Outgoing { kind, text: Utf8Bytes::from(text) }).await.is_ok()
    }
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

/// Serves one authenticated WebSocket connection until it closes.
pub(crate) async fn serve(gateway: Gateway, principal: String, socket: WebSocket) {
    let (mut sink, stream) = socket.split();
    let (out, mut rx) = Outbox::channel(gateway.config.outgoing_queue);
    let writer = tokio::spawn(async move {
        while let Some(message) = rx.recv().await {
            if sink.send(Message::Text(message.text)).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    gateway.metrics.connections.inc();
    // Pings and pongs are the transport's business; a read error ends the connection like
    // a close frame.
    let frames = futures::stream::unfold(stream, |mut stream| async move {
        loop {
            let frame = match stream.next().await? {
                Ok(Message::Text(t)) => Frame::Text { bytes: Bytes::from(t), named: None },
                Ok(Message::Binary(_)) => Frame::Unreadable,
                Ok(Message::Ping(_) | Message::Pong(_)) => continue,
                Ok(Message::Close(_)) | Err(_) => Frame::Close,
            };
            return Some((frame, stream));
        }
    });
    serve_frames(gateway.clone(), principal, frames, out).await;
    let _ = writer.await;
    gateway.metrics.connections.dec();
}

/// The protocol loop of one authenticated connection, whatever its transport: reads frames
/// until the stream ends or yields [`Frame::Close`], then aborts the connection's
/// subscriptions. The transport's writer ends once every clone of `out` is gone.
pub(crate) async fn serve_frames(gateway: Gateway, principal: String, frames: impl Stream<Item = Frame>, out: Outbox) {
    let mut frames = std::pin::pin!(frames);
    let mut subscriptions: HashMap<String, Subscription> = HashMap::new();
    let pending: Arc<pending::PendingSet> = Arc::default();
    let mut limit = RateLimit::new(gateway.config.messages_per_second, gateway.config.burst);

    while let Some(frame) = frames.next().await {
        if matches!(frame, Frame::Text { .. } | Frame::Unreadable) && !limit.allow() {
            gateway.metrics.errors.with_label_values(&[ErrorCode::RateLimited.as_str()]).inc();
            out.send(&ErrorMessage::new(ErrorCode::RateLimited).into()).await;
            continue;
        }
        let (bytes, named) = match &frame {
            Frame::Text { bytes, named } => (bytes, *named),
            Frame::Unreadable => {
                gateway.metrics.errors.with_label_values(&[ErrorCode::MalformedMessage.as_str()]).inc();
                out.send(&ErrorMessage::new(ErrorCode::MalformedMessage).into()).await;
                continue;
            }
            Frame::Close => break,
        };
        let msg = match decode_client(bytes) {
            Ok(m) => m,
            Err(e) => {
                gateway.metrics.errors.with_label_values(&[e.code().as_str()]).inc();
                out.send(&e.to_error_message().into()).await;
                continue;
            }
        };
        if named.is_some_and(|name| name != msg.message_type()) {
            // A Socket.IO event whose name is not its message's type.
            gateway.metrics.errors.with_label_values(&[ErrorCode::MalformedMessage.as_str()]).inc();
            out.send(&ErrorMessage::new(ErrorCode::MalformedMessage).into()).await;
            continue;
        }
        gateway.metrics.messages.with_label_values(&[msg.message_type()]).inc();
        match msg {
            ClientMessage::Sync(req) => {
                subscriptions.retain(|_, s| !s.task.is_finished());
                let subscription_id = format!("s-{}", juegoland_actors::shell::random_uuid());
                let match_id = req.match_id;
                let task = tokio::spawn(subscribe(
                    gateway.clone(),
                    principal.clone(),
                    req,
                    subscription_id.clone(),
                    out.clone(),
                ));
                subscriptions.insert(subscription_id, Subscription { match_id, task });
            }
            ClientMessage::Command(envelope) => {
                let (match_id, command_id) = (envelope.match_id, envelope.command_id);
                if !pending.insert(match_id) {
                    let e = ErrorMessage::new(ErrorCode::CommandPending)
                        .with_match_id(match_id)
                        .with_command_id(command_id);
                    gateway.metrics.errors.with_label_values(&[ErrorCode::CommandPending.as_str()]).inc();
                    out.send(&e.into()).await;
                    continue;
                }
                let (gateway, principal, out, pending) =
                    (gateway.clone(), principal.clone(), out.clone(), pending.clone());
                tokio::spawn(async move {
                    let answer = command(&gateway, &principal, envelope).await;
                    pending.remove(match_id);
                    out.send(&answer).await;
                });
            }
            ClientMessage::CommandStatus(req) => {
                let (gateway, principal, out) = (gateway.clone(), principal.clone(), out.clone());
                tokio::spawn(async move {
                    let answer = match gateway.matches.command_status(req.match_id, &principal, req.command_id).await {
                        Ok(m) => m,
                        Err(e) => host_error(&gateway, &e, Some(req.match_id)).with_command_id(req.command_id).into(),
                    };
                    out.send(&answer).await;
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
                        out.send(&e.into()).await;
                    }
                }
            }
        }
    }
    for (_, s) in subscriptions {
        s.task.abort();
    }
}

async fn command(gateway: &Gateway, principal: &str, envelope: CommandEnvelope) -> ServerMessage {
    let (match_id, command_id) = (envelope.match_id, envelope.command_id);
    match gateway.matches.command(principal, envelope).await {
        Ok(answer) => {
            if let ServerMessage::Error(e) = &answer {
                gateway.metrics.errors.with_label_values(&[e.code.as_str()]).inc();
            }
            answer
        }
        Err(e) => host_error(gateway, &e, Some(match_id)).with_command_id(command_id).into(),
    }
}

fn host_error(gateway: &Gateway, e: &HostError, match_id: Option<Uuid>) -> ErrorMessage {
    if !matches!(e, HostError::NotFound) {
        warn!(error = %e, "host call failed");
    }
    let msg = e.to_error_message(match_id);
    gateway.metrics.errors.with_label_values(&[msg.code.as_str()]).inc();
    msg
}

/// Why a subscription resynced.
#[derive(Clone, Copy)]
enum Resync {
    Gap,
    BusLag,
    Cursor,
}

impl Resync {
    fn as_str(self) -> &'static str {
        match self {
            Resync::Gap => "gap",
            Resync::BusLag => "bus-lag",
            Resync::Cursor => "cursor",
        }
    }
}

/// One subscription: the sync barrier, then live delivery, cursors and resyncs.
async fn subscribe(gateway: Gateway, principal: String, req: SyncRequest, subscription_id: String, out: Outbox) {
    let match_id = req.match_id;
    let error =
        |code: ErrorCode| ErrorMessage::new(code).with_match_id(match_id).with_request_id(req.request_id.clone());
    // Step 1: install the receiver FIRST; publications arriving from now on are buffered.
    let mut publications = match gateway.bus.subscribe(match_id).await {
        Ok(s) => s,
        Err(e) => {
            warn!(match_id = %match_id, error = %e, "bus subscribe failed");
            out.send(&error(ErrorCode::Unavailable).into()).await;
            return;
        }
    };
    // Step 2: read a committed revision R.
    let reply = match read(&gateway, match_id, &principal).await {
        Ok(r) => r,
        Err(e) => {
            out.send(&ErrorMessage { request_id: Some(req.request_id.clone()), ..e }.into()).await;
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
        out.send(&error(ErrorCode::IncompatibleClient).into()).await;
        return;
    }
    let seat = reply.seat.clone();
    let mut revision = reply.revision;
    // Step 3: the sync snapshot, with the request's id and no events.
    if !out.send(&with_ids(reply.snapshot, &subscription_id, Some(&req.request_id))).await {
        return;
    }
    gateway.metrics.subscriptions.inc();
    let _guard = GaugeGuard(gateway.metrics.subscriptions.clone());
    debug!(match_id = %match_id, subscription_id, revision, "subscribed");

    let mut cursor = tokio::time::interval_at(
        tokio::time::Instant::now() + gateway.config.cursor_interval,
        gateway.config.cursor_interval,
    );
    loop {
        let resync = tokio::select! {
            item = publications.next() => match item {
                // Step 4: drop what the snapshot already covers, deliver the next one.
                Some(BusItem::Publication(p)) if p.recipient.as_deref() == Some(seat.as_str()) => {
                    if p.revision <= revision {
                        None
                    } else if p.revision == revision + 1 {
                        revision = p.revision;
                        if !out.send_encoded(Snapshot::TYPE, p.for_subscription(&subscription_id)).await {
                            return;
                        }
                        None
                    } else {
                        Some(Resync::Gap)
                    }
                }
                Some(BusItem::Publication(_)) => None,
                Some(BusItem::Gap) => Some(Resync::BusLag),
                None => return,
            },
            _ = cursor.tick() => {
                match gateway.matches.revision(match_id).await {
                    Ok(committed) => {
                        let c = Cursor { match_id, subscription_id: subscription_id.clone(), revision: committed };
                        if !out.send(&c.into()).await {
                            return;
                        }
                        // Our own delivery fell behind a publication that never came.
                        (committed > revision).then_some(Resync::Cursor)
                    }
                    Err(_) => None,
                }
            }
        };
        if let Some(reason) = resync {
            // Step 5: a gap or overflow starts a new sync instead of an incomplete sequence.
            gateway.metrics.resyncs.with_label_values(&[reason.as_str()]).inc();
            match read(&gateway, match_id, &principal).await {
                Ok(r) => {
                    revision = r.revision;
                    if !out.send(&with_ids(r.snapshot, &subscription_id, None)).await {
                        return;
                    }
                }
                Err(e) => {
                    out.send(&e.with_subscription_id(subscription_id.clone()).into()).await;
                    return;
                }
            }
        }
    }
}

async fn read(gateway: &Gateway, match_id: Uuid, principal: &str) -> Result<SyncReply, ErrorMessage> {
    match gateway.matches.sync(match_id, principal).await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(e)) => Err(e),
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
