//! The Socket.IO transport of the protocol (socketioxide, at its default path `/socket.io`).
//!
//! The same messages as on the WebSocket: an event's name is the message type and its single
//! argument the whole message object (`type` and `protocolVersion` included); each server
//! message goes out as an event named by its `type` with the message as its argument. The
//! token comes in the handshake's `auth.token`; without a valid one the socket gets a
//! `game.error` UNAUTHENTICATED event and is disconnected.
//!
//! Incoming events feed the transport-agnostic protocol loop (`connection::serve_frames`): the
//! argument's JSON text is taken from the packet as the client sent it, so the strict decoder
//! sees the exact bytes (duplicate keys, depth, size). An event name that is no client
//! message type, an event without exactly one argument, binary attachments or an event whose
//! name is not its message's type are answered MALFORMED_MESSAGE. Acknowledgement callbacks
//! are never called: answers are protocol messages. Disconnecting ends the loop like a closed
//! WebSocket.
//!
//! Limits (`limits.rs`). A connect beyond the connection caps is refused with a
//! `connect_error` packet (`UNAVAILABLE: …`); engine.io's heartbeat pings every `ping_interval`
//! and closes a session that does not answer within `idle_timeout`; the message rate is the
//! protocol loop's, and a connection that stays over it is disconnected.
//!
//! Backpressure. Socket.IO queues a session's packets in socketioxide's buffer, bounded by
//! `max_buffer_size` (the limits' `outgoing_queue`, 256); an emit into a full buffer fails
//! with `InternalChannelFull`. That means the client does not read: the protocol loop ends
//! (its subscriptions with it, so nothing more is queued for it) and the socket is
//! disconnected. socketioxide's `disconnect` itself needs room for its DISCONNECT packet, so
//! it is retried until it goes out or the session is gone; engine.io's heartbeat closes a
//! session whose ping finds the buffer full, so that takes at most one ping interval (`ping_interval`).
//! A client that emits faster than its loop consumes (more than 256 queued events) is
//! disconnected the same way.
//!
//! Shutdown. The layer's `SocketIo` is registered with the gateway's [`Shutdown`], which
//! closes every session with `SocketIo::close` (an engine.io close packet: clients reconnect,
//! to another gateway). Each session's task is spawned on the [`Shutdown`], which counts it
//! as open until its protocol loop has ended.
//!
//! The handlers are socketioxide handler types of this module rather than async closures:
//! socketioxide runs an async handler in a task of its own, which would let two events of one
//! client overtake each other; [`Forward`] queues each event synchronously in arrival order,
//! and [`Connect`] installs them before the CONNECT packet goes out, so no early event finds
//! no handler.

use std::fmt::Display;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::body::Bytes;
use juegoland_protocol::{
    CommandEnvelope, CommandStatusRequest, ErrorCode, ErrorMessage, MessageType, SyncRequest, UnsubscribeRequest,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use socketioxide::adapter::LocalAdapter;
use socketioxide::handler::{ConnectHandler, MessageHandler, Value};
use socketioxide::layer::SocketIoLayer;
use socketioxide::socket::Socket;
use socketioxide::{SendError, SocketError, SocketIo};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tracing::{debug, warn};

use crate::auth::{Bearer, TokenError, Tokens};
use crate::connection::{Ended, Frame, serve_frames};
use crate::gateway::Gateway;
use crate::limits::{Permit, Refusal, RemoteAddr};
use crate::outbox::{Outbox, Outgoing, Overflow};
use crate::shutdown::Shutdown;

/// The event names a client may emit: the client message types.
const CLIENT_TYPES: [&str; 4] =
    [SyncRequest::TYPE, CommandEnvelope::TYPE, CommandStatusRequest::TYPE, UnsubscribeRequest::TYPE];

/// Events queued per connection for its protocol loop. The loop only falls this far behind
/// when the client stops reading its answers while it keeps sending, and such a client is
/// disconnected.
const INCOMING_QUEUE: usize = 256;

/// How often a disconnect refused because the socket's buffer is full is tried again.
const DISCONNECT_RETRY: Duration = Duration::from_millis(100);

type Sock = Socket<LocalAdapter>;

/// The Socket.IO layer of the gateway, serving namespace `/` at `/socket.io`.
pub(crate) fn layer(gateway: Gateway, tokens: Tokens) -> SocketIoLayer {
    let limits = &gateway.config.limits;
    // The largest Socket.IO packet and engine.io payload accepted: room for a message of the
    // WebSocket's limit in its envelope, so the protocol decoder answers anything above its
    // own 64 KiB limit with MESSAGE_TOO_LARGE.
    let max_payload = 2 * limits.max_message_bytes;
    // engine.io's heartbeat is the idle timeout: a session that answers no ping within
    // `idle_timeout` is closed.
    let (layer, io) = SocketIo::builder()
        .max_buffer_size(limits.outgoing_queue)
        .max_payload(max_payload as u64)
        .ws_max_message_size(max_payload)
        .ws_max_frame_size(max_payload)
        .ping_interval(limits.ping_interval)
        .ping_timeout(limits.idle_timeout)
        // A session that joins no namespace (a handshake left there) goes after the head's
        // time, not socketioxide's 45 s: sessions are allocated before any token is read.
        .connect_timeout(limits.head_timeout)
        .build_layer();
    gateway.config.shutdown.add_socket_io(io.clone());
    io.ns("/", Connect { gateway, tokens });
    layer
}

/// The connect handler of namespace `/`.
#[derive(Clone)]
struct Connect {
    gateway: Gateway,
    tokens: Tokens,
}

/// The type marker of [`Connect`] as a socketioxide connect handler.
struct Handshake;

/// Marks a socket whose handshake carried no valid token, and why (none at all: `None`).
#[derive(Clone)]
struct Unauthenticated(Option<TokenError>);

impl ConnectHandler<LocalAdapter, Handshake> for Connect {
    /// Runs before the CONNECT packet goes out: a valid token starts the connection here, so
    /// its event handlers are in place before the client can emit anything.
    fn call_middleware<'a>(
        &'a self,
        socket: Arc<Sock>,
        auth: &'a Option<Value>,
    ) -> Pin<Box<dyn Future<Output = Result<(), Box<dyn Display + Send>>> + Send + 'a>> {
        Box::pin(async move {
            let bearer = match bearer(&self.tokens, auth.as_ref()).await {
                Ok(bearer) => bearer,
                Err(refused) => {
                    socket.extensions.insert(Unauthenticated(refused));
                    return Ok(());
                }
            };
            let gateway = &self.gateway;
            let address = socket.req_parts().extensions.get::<RemoteAddr>().map(|r| r.0);
            match gateway.connections.open(&gateway.config.limits, address, bearer.connection_key().as_deref()) {
                Ok(permit) => {
                    start(gateway.clone(), bearer, &socket, permit);
                    Ok(())
                }
                Err(refusal) => {
                    // A `connect_error` packet with this message; the client retries later.
                    refusal.count(&gateway.metrics.refused);
                    let message = match refusal {
                        Refusal::AddressCap => "UNAVAILABLE: too many connections from this address; retry later",
                        Refusal::PrincipalCap => {
                            "RATE_LIMITED: too many connections for this principal; close one first"
                        }
                        Refusal::AbusiveAddress => {
                            "RATE_LIMITED: connections from this address were closed for abuse too often; retry later"
                        }
                        _ => "UNAVAILABLE: this gateway is full; retry later",
                    };
                    Err(Box::new(message) as Box<dyn Display + Send>)
                }
            }
        })
    }

    /// Runs once the socket is connected: one without a valid token gets UNAUTHENTICATED, as
    /// a `game.error` event whose message key says why (`error.unauthenticated.expired`, …;
    /// `error.unauthenticated` without a token), and is disconnected.
    fn call(&self, socket: Arc<Sock>, _auth: Option<Value>) {
        let Some(Unauthenticated(refused)) = socket.extensions.get::<Unauthenticated>() else {
            return;
        };
        let mut error = ErrorMessage::new(ErrorCode::Unauthenticated);
        if let Some(reason) = refused {
            error.message_key = format!("{}.{}", error.message_key, reason.reason()).into();
        }
        let e = juegoland_protocol::encode(&error.into());
        match RawValue::from_string(e) {
            Ok(message) => {
                if let Err(e) = socket.emit(ErrorMessage::TYPE, &message) {
                    debug!(error = %e, "socket.io unauthenticated answer not sent");
                }
            }
            Err(e) => warn!(error = %e, "encoded error is not json"),
        }
        let _ = socket.disconnect();
    }
}

/// The bearer of the handshake's `auth.token`; `Err(None)` without one.
async fn bearer(tokens: &Tokens, auth: Option<&Value>) -> Result<Bearer, Option<TokenError>> {
    /// The handshake's auth object; other fields are the client's business.
    #[derive(Deserialize)]
    struct Auth {
        token: Option<String>,
    }
    let auth: Option<Auth> = auth.and_then(|a| serde_json::from_str(a.as_str()?).ok());
    let Some(token) = auth.and_then(|a| a.token) else { return Err(None) };
    tokens.authenticate(&token).await.map_err(Some)
}

/// Starts the protocol loop of an authenticated socket: its event handlers feed the loop,
/// and a writer emits what the loop sends.
fn start(gateway: Gateway, bearer: Bearer, socket: &Arc<Sock>, permit: Permit) {
    let (tx, mut rx) = mpsc::channel(INCOMING_QUEUE);
    for kind in CLIENT_TYPES {
        socket.on(kind, Forward { tx: tx.clone(), shutdown: gateway.config.shutdown.clone(), kind: Some(kind) });
    }
    socket.on_fallback(Forward { tx: tx.clone(), shutdown: gateway.config.shutdown.clone(), kind: None });
    socket.on_disconnect(move || {
        let tx = tx.clone();
        async move {
            let _ = tx.send(Frame::Close).await;
        }
    });
    // The writer holds the socket weakly: the socket owns the handlers that feed the loop,
    // so a strong reference would keep a socket that never connected alive forever.
    let weak = Arc::downgrade(socket);
    let shutdown = gateway.config.shutdown.clone();
    shutdown.spawn_session(async move {
        let permit = permit;
        gateway.metrics.connections.inc();
        let (out, outgoing) = Outbox::channel(gateway.config.limits.outgoing_queue);
        let writer = tokio::spawn(write(weak.clone(), outgoing, out.overflow_handle()));
        let frames = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
        let ended = serve_frames(gateway.clone(), bearer, frames, out).await;
        let _ = writer.await;
        gateway.metrics.connections.dec();
        match ended {
            // `SocketIo::close` ends the session: no DISCONNECT packet, so the client
            // reconnects.
            Ended::Shutdown => {}
            Ended::Overflowed => {
                Refusal::SlowReader.count(&gateway.metrics.refused);
                disconnect(weak, &gateway.config.shutdown).await;
            }
            Ended::RateSustained => {
                permit.abused();
                disconnect(weak, &gateway.config.shutdown).await;
            }
            Ended::Closed => disconnect(weak, &gateway.config.shutdown).await,
        }
    });
}

/// Disconnects the socket, retrying while its buffer has no room for the DISCONNECT packet,
/// until it goes out or the session is gone (engine.io's heartbeat closes a session whose
/// buffer stays full). Not on shutdown, where `SocketIo::close` closes every session.
async fn disconnect(socket: Weak<Sock>, shutdown: &Shutdown) {
    loop {
        let Some(s) = socket.upgrade().filter(|s| s.connected()) else { return };
        if shutdown.has_begun() {
            return;
        }
        match s.disconnect() {
            Err(SocketError::InternalChannelFull) => tokio::time::sleep(DISCONNECT_RETRY).await,
            Ok(()) | Err(SocketError::Closed) => return,
        }
    }
}

/// Emits each server message as an event named by its type, until the loop and its tasks are
/// done or the socket is gone. An emit refused because the socket's buffer is full marks the
/// outbox overflowed, which ends the loop.
async fn write(socket: Weak<Sock>, mut outgoing: mpsc::Receiver<Outgoing>, out: Overflow) {
    while let Some(message) = outgoing.recv().await {
        let argument = match RawValue::from_string(message.text.as_str().to_owned()) {
            Ok(a) => a,
            Err(e) => {
                warn!(error = %e, "encoded server message is not json");
                continue;
            }
        };
        let Some(s) = socket.upgrade() else { return };
        match s.emit(message.kind, &argument) {
            Ok(()) => {}
            Err(SendError::Socket(SocketError::InternalChannelFull)) => {
                // The client does not read: more than `outgoing_queue` packets wait for it.
                out.overflow();
                return;
            }
            Err(SendError::Socket(SocketError::Closed)) => return,
            Err(e) => warn!(error = %e, "socket.io emit failed"),
        }
    }
}

/// Queues a socket's events for its protocol loop, synchronously and so in arrival order.
struct Forward {
    tx: mpsc::Sender<Frame>,
    shutdown: Shutdown,
    /// The client message type this handler is registered for; `None` for the fallback that
    /// receives every other event name.
    kind: Option<&'static str>,
}

/// The type marker of [`Forward`] as a socketioxide message handler.
struct Forwarding;

impl MessageHandler<LocalAdapter, Forwarding> for Forward {
    fn call(&self, socket: Arc<Sock>, value: Value, _ack: Option<i64>) {
        let frame = frame_of(self.kind, &value);
        if let Err(TrySendError::Full(_)) = self.tx.try_send(frame) {
            debug!("socket.io client sends faster than it reads; disconnecting");
            let (socket, shutdown) = (Arc::downgrade(&socket), self.shutdown.clone());
            tokio::spawn(async move { disconnect(socket, &shutdown).await });
        }
    }
}

/// The handler an event named `event` reaches: the one registered for its client message
/// type, or the fallback (`None`) for any other name (what the fuzz targets' in-process
/// connection routes by; `layer` registers the same handlers).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn handler_kind(event: &str) -> Option<&'static str> {
    CLIENT_TYPES.into_iter().find(|kind| *kind == event)
}

/// What the protocol loop gets for an event that reached the handler of `kind`: the text of
/// its single argument, labelled with the type it must have; anything else is unreadable.
pub(crate) fn frame_of(kind: Option<&'static str>, value: &Value) -> Frame {
    match (kind, argument(value)) {
        (Some(kind), Some(bytes)) => Frame::Text { bytes, named: Some(kind) },
        _ => Frame::Unreadable,
    }
}

/// The JSON text of an event's single argument, exactly as the client sent it. The packet's
/// data is the array `[name, argument]`; binary attachments are not protocol messages.
fn argument(value: &Value) -> Option<Bytes> {
    let Value::Str(data, binaries) = value else { return None };
    if binaries.as_ref().is_some_and(|b| !b.is_empty()) {
        return None;
    }
    let parts: Vec<&RawValue> = serde_json::from_str(data.as_str()).ok()?;
    match parts.as_slice() {
        [_, argument] => Some(Bytes::copy_from_slice(argument.get().as_bytes())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(data: &str) -> Value {
        Value::Str(data.to_owned().into(), None)
    }

    #[test]
    fn the_argument_keeps_the_clients_exact_text() {
        let text = r#"{"type":"game.sync", "type":"x","n":[1, 2]}"#;
        let got = argument(&event(&format!(r#"["game.sync",{text}]"#))).unwrap();
        assert_eq!(got, text.as_bytes());
    }

    #[test]
    fn an_event_without_exactly_one_argument_is_unreadable() {
        assert_eq!(argument(&event(r#"["game.sync"]"#)), None);
        assert_eq!(argument(&event(r#"["game.sync",{},{}]"#)), None);
        assert_eq!(argument(&event("not json")), None);
    }
}
