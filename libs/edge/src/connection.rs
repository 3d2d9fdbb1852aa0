//! The protocol loop of one client connection ([`serve_frames`]), whatever its transport: one
//! connection, many matches.
//!
//! The loop knows no transport: it reads [`Frame`]s and writes server messages to an
//! [`Outbox`]. The WebSocket adapter (`ws.rs`) turns text frames into frames and drains the
//! outbox into text frames; the Socket.IO adapter (`sio.rs`) does the same with events. Each
//! frame is one protocol message, rate limited per connection ([`RateLimit`]) and decoded
//! strictly; bad input gets a typed `game.error` and never harms the connection's other
//! matches. Each `game.sync` starts a subscription (`subscription.rs`) that the loop owns: an
//! unsubscribe, or the end of the loop, stops it. A client has at most one board command
//! pending per match (another one is answered COMMAND_PENDING); a command or a status read
//! runs in a task of its own until the match API answers it (the API bounds each call by its
//! timeout), so that an answer in flight still reaches the transport's writer, which ends once
//! every clone of the outbox is gone. The loop ends when the client closes, when its outbox
//! overflows or when the gateway shuts down ([`Ended`]).

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

use crate::gateway::{Gateway, host_error};
use crate::outbox::Outbox;
use crate::subscription::subscribe;

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

/// A subscription of the connection: its match and its task, which stops when the handle is
/// dropped (on unsubscribe, or with the loop).
struct Subscription {
    match_id: Uuid,
    task: AbortOnDropHandle<()>,
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

/// The protocol loop of one authenticated connection, whatever its transport: reads frames
/// until the stream ends or yields [`Frame::Close`], the outbox overflows or the gateway shuts
/// down, then stops the connection's subscriptions and says why it ended. The transport's
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
            out.send(&ErrorMessage::new(ErrorCode::RateLimited).into());
            continue;
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
            ClientMessage::Sync(req) => {
                subscriptions.retain(|_, s| !s.task.is_finished());
                let subscription_id = format!("s-{}", juegoland_api::random_uuid());
                let match_id = req.match_id;
                let task = AbortOnDropHandle::new(tokio::spawn(subscribe(
                    gateway.clone(),
                    principal.clone(),
                    req,
                    subscription_id.clone(),
                    out.clone(),
                )));
                subscriptions.insert(subscription_id, Subscription { match_id, task });
            }
            ClientMessage::Command(envelope) => {
                let (match_id, command_id) = (envelope.match_id, envelope.command_id);
                if !pending.insert(match_id) {
                    let e = ErrorMessage::new(ErrorCode::CommandPending)
                        .with_match_id(match_id)
                        .with_command_id(command_id);
                    gateway.metrics.errors.with_label_values(&[ErrorCode::CommandPending.as_str()]).inc();
                    out.send(&e.into());
                    continue;
                }
                let (gateway, principal, out, pending) =
                    (gateway.clone(), principal.clone(), out.clone(), pending.clone());
                tokio::spawn(async move {
                    let answer = command(&gateway, &principal, envelope).await;
                    pending.remove(match_id);
                    out.send(&answer);
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
}
