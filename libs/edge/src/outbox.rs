//! A connection's outgoing queue ([`Outbox`]) and its backpressure.
//!
//! The protocol loop, its subscriptions and its commands queue server messages without
//! waiting (a send never awaits, so a bus may deliver straight into an outbox); the
//! transport's writer drains them. The queue holds `outgoing_queue` messages; a
//! client that lets it overflow (it does not read) marks the outbox overflowed ([`Overflow`]),
//! which ends the connection, so a slow client never makes the gateway buffer without limit
//! nor holds up the subscriptions and commands that write to it.

use axum::extract::ws::Utf8Bytes;
use juegoland_protocol::{ServerMessage, encode};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::debug;

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
pub(crate) struct Overflow(CancellationToken);

impl Overflow {
    /// Marks the connection as not reading: its loop ends and the transport drops it.
    pub(crate) fn overflow(&self) {
        if !self.0.is_cancelled() {
            debug!("the client does not read its messages; disconnecting");
        }
        self.0.cancel();
    }

    /// Resolves once the connection is marked as not reading.
    pub(crate) async fn cancelled(&self) {
        self.0.cancelled().await;
    }
}

impl Outbox {
    /// An outbox holding up to `queue` messages, and the receiver its writer drains.
    pub(crate) fn channel(queue: usize) -> (Self, mpsc::Receiver<Outgoing>) {
        let (tx, rx) = mpsc::channel(queue);
        (Self { tx, overflowed: Overflow(CancellationToken::new()) }, rx)
    }

    /// Queues a message (see [`Outbox::send_encoded`]).
    pub(crate) fn send(&self, msg: &ServerMessage) -> bool {
        self.send_encoded(msg.message_type(), encode(msg))
    }

    /// Queues a message; false when the connection is gone or its queue overflowed (the
    /// message is dropped, and the connection closes).
    pub(crate) fn send_encoded(&self, kind: &'static str, text: String) -> bool {
        match self.tx.try_send(Outgoing { kind, text: Utf8Bytes::from(text) }) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.overflowed.overflow();
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Waits, at most `within`, until the queue has room for one more message; without room
    /// by then the client does not read, and the outbox is marked overflowed (false). The
    /// protocol loop waits so before each client message: when the writer is merely behind
    /// (a busy runtime), answers to a burst then wait for it instead of overflowing the
    /// queue and closing a client that reads.
    pub(crate) async fn room(&self, within: std::time::Duration) -> bool {
        match tokio::time::timeout(within, self.tx.reserve()).await {
            Ok(Ok(_permit)) => true,
            Ok(Err(_)) => false,
            Err(_) => {
                self.overflowed.overflow();
                false
            }
        }
    }

    /// What marks this outbox overflowed, without holding its queue open.
    pub(crate) fn overflow_handle(&self) -> Overflow {
        self.overflowed.clone()
    }

    /// Resolves once the outbox has overflowed.
    pub(crate) async fn overflowed(&self) {
        self.overflowed.0.cancelled().await;
    }
}
