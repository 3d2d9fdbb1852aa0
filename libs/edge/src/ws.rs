//! The protocol loop of one client connection, and its WebSocket transport: one connection,
//! many matches.
//!
//! The loop ([`serve_frames`]) knows no transport: it reads [`Frame`]s and writes server
//! messages to an [`Outbox`]. The WebSocket adapter ([`serve`]) turns text frames into
//! frames and drains the outbox into text frames; the Socket.IO adapter (`sio.rs`) does the
//! same with events. Each text frame is one protocol message, decoded strictly; bad input
//! gets a typed `game.error` and never harms the connection's other matches. Each
//! `game.sync` opens a subscription that runs the sync barrier: the bus receiver is installed
//! FIRST, then the committed snapshot is read and sent while what the bus delivers meanwhile
//! is buffered, then buffered publications above its revision are delivered in order; any
//! gap, or a buffer past [`BARRIER_MAX_REVISIONS`] / [`BARRIER_MAX_BYTES`], starts a new sync
//! instead of delivering an incomplete sequence. A cursor goes out every `cursor_interval`
//! per subscription (the first at a random point of the first interval, so that
//! subscriptions opened together do not read their cursors together); a cursor ahead of what
//! the subscription delivered starts a new sync unless the missing publication arrives within
//! [`CURSOR_GRACE`].
//!
//! Bounds. A connection's outgoing queue holds `outgoing_queue` messages; a client that lets
//! it overflow (it does not read) is disconnected, so a slow client never makes the gateway
//! buffer without limit nor holds up the subscriptions and commands that write to it. On
//! shutdown ([`Shutdown`]) every WebSocket connection gets a close frame (1001, going away)
//! and every Socket.IO session is closed by socketioxide.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, close_code};
use futures::stream::BoxStream;
use futures::{FutureExt, SinkExt, Stream, StreamExt};
use juegoland_api::{MatchError, Matches, SyncReply};
use juegoland_bus::{Bus, BusItem};
use juegoland_core::Publication;
use juegoland_protocol::{
    AckStatus, ClientMessage, CommandEnvelope, Cursor, ErrorCode, ErrorMessage, MessageType, ServerMessage, Snapshot,
    SyncRequest, decode_client, encode,
};
use socketioxide::SocketIo;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::{Instrument, debug, info, info_span, warn};
use uuid::Uuid;

use crate::metrics::EdgeMetrics;

/// The most revisions a subscription buffers during its sync barrier (while its snapshot is
/// read); past it, it drops the buffer and syncs again (`spec/protocol.md`, sync barrier).
pub const BARRIER_MAX_REVISIONS: usize = 128;
/// The most bytes of publications a subscription buffers during its sync barrier. The seat is
/// known only once the snapshot is read, so every recipient's publication counts.
pub const BARRIER_MAX_BYTES: usize = 8 << 20;
/// How long a subscription whose cursor shows a revision it has not delivered waits for that
/// publication before it syncs again: a cursor read right after a commit often overtakes the
/// publication, which is then only milliseconds away.
pub const CURSOR_GRACE: Duration = Duration::from_secs(1);
/// How long a WebSocket closing on shutdown may take to send its close frame (a client that
/// does not read gets none).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Gateway settings.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    pub cursor_interval: Duration,
    /// Outgoing messages queued per connection (WebSocket: waiting for the socket; Socket.IO:
    /// also socketioxide's buffer of the session). A client that lets the queue overflow does
    /// not read, and is disconnected. Default 256.
    pub outgoing_queue: usize,
    /// Client messages per second each connection may send on average; above it they are
    /// answered with `RATE_LIMITED` (retry the same command) and not processed.
    pub messages_per_second: u32,
    /// How many messages a connection may send in a burst above the average.
    pub burst: u32,
    /// Closes the connections when the process stops.
    pub shutdown: Shutdown,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            cursor_interval: Duration::from_secs(15),
            outgoing_queue: 256,
            messages_per_second: 50,
            burst: 100,
            shutdown: Shutdown::default(),
        }
    }
}

/// Closes a gateway's client sessions when the process stops: the shell calls
/// [`Shutdown::close_sessions`] on SIGTERM, before it stops serving HTTP. WebSocket connections
/// get a close frame (1001, going away) and Socket.IO sessions are closed by socketioxide
/// (`SocketIo::close`: an engine.io close packet), so clients reconnect (to another gateway)
/// at once rather than finding a dead connection later. Sessions that start afterwards are
/// closed at once.
#[derive(Clone, Default)]
pub struct Shutdown(Arc<ShutdownState>);

#[derive(Default)]
struct ShutdownState {
    /// Becomes true when the shutdown begins.
    begun: watch::Sender<bool>,
    /// Open client sessions, WebSocket and Socket.IO.
    sessions: watch::Sender<usize>,
    /// The Socket.IO servers to close.
    socket_io: Mutex<Vec<SocketIo>>,
}

impl fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shutdown")
            .field("begun", &*self.0.begun.borrow())
            .field("sessions", &*self.0.sessions.borrow())
            .finish()
    }
}

impl Shutdown {
    /// Closes every client session and waits until all are gone or `grace` has passed;
    /// returns how many were still open then.
    pub async fn close_sessions(&self, grace: Duration) -> usize {
        self.0.begun.send_replace(true);
        let open = *self.0.sessions.borrow();
        info!(sessions = open, "closing client sessions");
        let servers: Vec<SocketIo> = self.0.socket_io.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut sessions = self.0.sessions.subscribe();
        let closed = async {
            futures::future::join_all(servers.iter().map(|io| io.close())).await;
            let _ = sessions.wait_for(|n| *n == 0).await;
        };
        let _ = tokio::time::timeout(grace, closed).await;
        *self.0.sessions.borrow()
    }

    /// Resolves once the shutdown has begun (at once if it has).
    pub(crate) async fn begun(&self) {
        let mut begun = self.0.begun.subscribe();
        let _ = begun.wait_for(|b| *b).await;
    }

    pub(crate) fn has_begun(&self) -> bool {
        *self.0.begun.borrow()
    }

    /// Registers a Socket.IO server for [`Shutdown::close_sessions`] to close.
    pub(crate) fn add_socket_io(&self, io: SocketIo) {
        self.0.socket_io.lock().unwrap_or_else(|p| p.into_inner()).push(io);
    }

    /// Counts an open session until the guard is dropped.
    pub(crate) fn session(&self) -> SessionGuard {
        self.0.sessions.send_modify(|n| *n += 1);
        SessionGuard(self.clone())
    }
}

/// An open client session, counted by its [`Shutdown`].
pub(crate) struct SessionGuard(Shutdown);

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.0.0.sessions.send_modify(|n| *n -= 1);
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

/// Sends protocol messages to the connection's writer, never waiting: a full queue means the
/// client does not read, and marks the outbox overflowed, which ends the connection.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: mpsc::Sender<Outgoing>,
    overflowed: Overflow,
}

/// Marks an outbox overflowed, for a transport's writer that finds the client not reading
/// further down (socketioxide's buffer); unlike an [`Outbox`] it does not keep the queue open.
#[derive(Clone)]
pub(crate) struct Overflow(Arc<watch::Sender<bool>>);

impl Overflow {
    /// Marks the connection as not reading: its loop ends and the transport drops it.
    pub(crate) fn overflow(&self) {
        if !self.0.send_replace(true) {
            debug!("the client does not read its messages; disconnecting");
        }
    }
}

impl Outbox {
    /// An outbox holding up to `queue` messages, and the receiver its writer drains.
    pub(crate) fn channel(queue: usize) -> (Self, mpsc::Receiver<Outgoing>) {
        let (tx, rx) = mpsc::channel(queue);
        (Self { tx, overflowed: Overflow(Arc::new(watch::Sender::new(false))) }, rx)
    }

    async fn send(&self, msg: &ServerMessage) -> bool {
        self.send_encoded(msg.message_type(), encode(msg)).await
    }

    /// Queues a message; false when the connection is gone or its queue overflowed (the
    /// message is dropped, and the connection closes).
    async fn send_encoded(&self, kind: &'static str, text: String) -> bool {
        match self.tx.try_send(Outgoing { kind, text: Utf8Bytes::from(text) }) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.overflowed.overflow();
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// What marks this outbox overflowed, without holding its queue open.
    pub(crate) fn overflow_handle(&self) -> Overflow {
        self.overflowed.clone()
    }

    /// Resolves once the outbox has overflowed.
    async fn overflowed(&self) {
        let mut overflowed = self.overflowed.0.subscribe();
        let _ = overflowed.wait_for(|o| *o).await;
    }
}

/// Why a connection's protocol loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The client closed the connection (or it broke).
    Closed,
    /// The client did not read and its outgoing queue overflowed.
    Overflowed,
    /// The gateway is shutting down.
    Shutdown,
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

/// Serves one authenticated WebSocket connection until it closes, overflows or the gateway
/// shuts down.
pub(crate) async fn serve(gateway: Gateway, principal: String, socket: WebSocket) {
    let _session = gateway.config.shutdown.session();
    let (mut sink, stream) = socket.split();
    let (out, mut rx) = Outbox::channel(gateway.config.outgoing_queue);
    let (going_away, mut go_away) = tokio::sync::oneshot::channel::<()>();
    let mut writer = tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                _ = &mut go_away => {
                    let frame = CloseFrame { code: close_code::AWAY, reason: Utf8Bytes::from_static("server shutting down") };
                    let _ = sink.send(Message::Close(Some(frame))).await;
                    return;
                }
                message = rx.recv() => match message {
                    Some(message) => {
                        if sink.send(Message::Text(message.text)).await.is_err() {
                            return;
                        }
                    }
                    None => break,
                },
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
    match serve_frames(gateway.clone(), principal, frames, out).await {
        Ended::Closed => {
            let _ = (&mut writer).await;
        }
        // Dropping the socket is all a client that does not read can get.
        Ended::Overflowed => writer.abort(),
        Ended::Shutdown => {
            let _ = going_away.send(());
            if tokio::time::timeout(CLOSE_TIMEOUT, &mut writer).await.is_err() {
                writer.abort();
            }
        }
    }
    gateway.metrics.connections.dec();
}

/// The protocol loop of one authenticated connection, whatever its transport: reads frames
/// until the stream ends or yields [`Frame::Close`], the outbox overflows or the gateway shuts
/// down, then aborts the connection's subscriptions and says why it ended. The transport's
/// writer ends once every clone of `out` is gone.
pub(crate) async fn serve_frames(
    gateway: Gateway,
    principal: String,
    frames: impl Stream<Item = Frame>,
    out: Outbox,
) -> Ended {
    let mut frames = std::pin::pin!(frames);
    let mut subscriptions: HashMap<String, Subscription> = HashMap::new();
    let pending: Arc<pending::PendingSet> = Arc::default();
    let mut limit = RateLimit::new(gateway.config.messages_per_second, gateway.config.burst);
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
                let subscription_id = format!("s-{}", juegoland_api::random_uuid());
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
    ended
}

/// One client command, in a `gateway.command` span: the root of the command's trace (clients
/// send no trace context), which the call to the router (or the host, in one process)
/// continues. It names the match and the command and records the answer's status or error
/// code; never the action or its payload.
async fn command(gateway: &Gateway, principal: &str, envelope: CommandEnvelope) -> ServerMessage {
    let (match_id, command_id) = (envelope.match_id, envelope.command_id);
    let span = info_span!(
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

fn host_error(gateway: &Gateway, e: &MatchError, match_id: Option<Uuid>) -> ErrorMessage {
    if !matches!(e, MatchError::NotFound) {
        warn!(error = %e, "host call failed");
    }
    let msg = e.to_error_message(match_id);
    gateway.metrics.errors.with_label_values(&[msg.code.as_str()]).inc();
    msg
}

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
async fn subscribe(gateway: Gateway, principal: String, req: SyncRequest, subscription_id: String, out: Outbox) {
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
    use std::sync::atomic::{AtomicU64, Ordering};

    use juegoland_api::{MatchReply, MatchRequest};
    use juegoland_bus::LocalBus;
    use juegoland_core::{GameKey, Registry};
    use serde_json::{Value, json};
    use tokio::sync::Semaphore;

    use super::*;

    /// A match host for one match whose snapshot reads each wait for a permit from the test,
    /// so it can publish while a subscription is inside its sync barrier.
    struct GatedMatches {
        registry: Arc<Registry>,
        permits: Semaphore,
        /// The committed revision every read and cursor answers.
        committed: AtomicU64,
        reads: AtomicU64,
    }

    impl GatedMatches {
        fn new() -> Arc<Self> {
            Arc::new(Self {
                registry: Arc::new(Registry::new()),
                permits: Semaphore::new(0),
                committed: AtomicU64::new(0),
                reads: AtomicU64::new(0),
            })
        }

        /// Waits until `n` reads have started.
        async fn reads_started(&self, n: u64) {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            while self.reads.load(Ordering::SeqCst) < n {
                assert!(tokio::time::Instant::now() < deadline, "read {n} did not start within 5 s");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    }

    #[async_trait::async_trait]
    impl Matches for GatedMatches {
        fn registry(&self) -> &Arc<Registry> {
            &self.registry
        }

        async fn call(&self, request: MatchRequest) -> Result<MatchReply, MatchError> {
            match request {
                MatchRequest::Sync { match_id, .. } => Ok(MatchReply::Snapshot(Box::new(self.read(match_id).await))),
                MatchRequest::Revision { .. } => Ok(MatchReply::Revision(self.committed.load(Ordering::SeqCst))),
                _ => Err(MatchError::NotFound),
            }
        }
    }

    impl GatedMatches {
        /// A sync read: counted, then held until a permit is given.
        async fn read(&self, match_id: Uuid) -> SyncReply {
            self.reads.fetch_add(1, Ordering::SeqCst);
            self.permits.acquire().await.expect("the semaphore stays open").forget();
            let revision = self.committed.load(Ordering::SeqCst);
            let snapshot = Snapshot {
                match_id,
                subscription_id: String::new(),
                request_id: None,
                from_revision: None,
                revision,
                seat: Some("p0".into()),
                view: json!({}),
                context: json!({}),
                actions: Vec::new(),
                result: None,
                events: Vec::new(),
            };
            SyncReply {
                seat: "p0".into(),
                revision,
                game: GameKey { id: "g".into(), rules_version: "1".into() },
                view_schema_version: 1,
                event_schema_version: 1,
                snapshot: ServerMessage::Snapshot(Box::new(snapshot)),
            }
        }
    }

    struct Harness {
        matches: Arc<GatedMatches>,
        bus: Arc<LocalBus>,
        gateway: Gateway,
        match_id: Uuid,
    }

    impl Harness {
        fn new(config: GatewayConfig) -> Harness {
            let matches = GatedMatches::new();
            let bus = Arc::new(LocalBus::default());
            let metrics = EdgeMetrics::new(&prometheus::Registry::new()).expect("metrics");
            let gateway = Gateway { matches: matches.clone(), bus: bus.clone(), metrics, config };
            Harness { matches, bus, gateway, match_id: Uuid::from_u128(0x5eed) }
        }

        /// A connection that has sent one `game.sync` and then stays open; its loop's task
        /// and the receiving end of its outbox.
        fn connect_and_sync(&self, queue: usize) -> (JoinHandle<Ended>, mpsc::Receiver<Outgoing>) {
            let sync = json!({
                "protocolVersion": 1, "type": "game.sync", "requestId": "r1", "matchId": self.match_id,
                "accept": [{"id": "g", "rulesVersion": "1", "viewSchemaVersion": 1, "eventSchemaVersion": 1}]
            });
            let frames = futures::stream::iter([Frame::Text { bytes: Bytes::from(sync.to_string()), named: None }])
                .chain(futures::stream::pending());
            let (out, rx) = Outbox::channel(queue);
            (tokio::spawn(serve_frames(self.gateway.clone(), "alice".into(), frames, out)), rx)
        }

        /// Publishes revision `revision` for both seats, p0's carrying `padding` bytes.
        async fn publish(&self, revision: u64, padding: usize) {
            let publications: Vec<Publication> = ["p0", "p1"]
                .into_iter()
                .map(|seat| {
                    let encoded = json!({
                        "type": "game.snapshot", "subscriptionId": "", "revision": revision,
                        "padding": if seat == "p0" { "x".repeat(padding) } else { String::new() },
                    });
                    Publication {
                        match_id: self.match_id,
                        revision,
                        recipient: Some(seat.into()),
                        encoded: encoded.to_string().into(),
                        trace_context: None,
                    }
                })
                .collect();
            self.bus.publish(&publications).await.expect("publish");
            // Publications arrive over time: let the subscription take each in.
            tokio::task::yield_now().await;
        }

        fn resyncs(&self, reason: Resync) -> u64 {
            self.gateway.metrics.resyncs.with_label_values(&[reason.as_str()]).get()
        }
    }

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

    #[tokio::test]
    async fn a_client_that_does_not_read_is_disconnected_when_its_queue_overflows() {
        let h = Harness::new(GatewayConfig::default());
        // Undecodable frames, each answered with an error, into a queue of 4 nobody drains.
        let frames =
            futures::stream::iter((0..10).map(|_| Frame::Text { bytes: Bytes::from_static(b"not json"), named: None }))
                .chain(futures::stream::pending());
        let (out, _rx) = Outbox::channel(4);
        let ended =
            tokio::time::timeout(Duration::from_secs(5), serve_frames(h.gateway.clone(), "alice".into(), frames, out))
                .await;
        assert_eq!(ended.ok(), Some(Ended::Overflowed));
    }

    #[tokio::test]
    async fn shutdown_ends_every_connection_and_waits_for_its_sessions() {
        let h = Harness::new(GatewayConfig::default());
        let shutdown = h.gateway.config.shutdown.clone();
        let (connection, _rx) = h.connect_and_sync(64);
        h.matches.permits.add_permits(1);
        let session = shutdown.session();
        let closing = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { shutdown.close_sessions(Duration::from_secs(5)).await }
        });
        assert_eq!(connection.await.expect("the loop"), Ended::Shutdown);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!closing.is_finished(), "close_sessions waits for the open session");
        drop(session);
        assert_eq!(closing.await.expect("close_sessions"), 0);
        // A connection that starts afterwards ends at once.
        let (late, _rx) = h.connect_and_sync(64);
        assert_eq!(late.await.expect("the loop"), Ended::Shutdown);
    }
}
