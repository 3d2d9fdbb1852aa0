//! The WebSocket transport of the protocol, at `/v1/ws` ([`serve`]).
//!
//! Each text frame is one protocol message for the connection's protocol loop
//! (`connection.rs`), and a writer task drains the loop's outbox into text frames. Pings and
//! pongs are the transport's business; a binary frame is unreadable; a close frame or a read
//! error ends the connection. When the loop ends because the client closed, the writer sends
//! what is still queued (answers of commands in flight included) and closes the socket; the
//! edge's limits (`limits.rs`) close it with a code: 1008 for a client that let its queue
//! overflow (it does not read), went silent past the idle timeout (the writer pings every
//! `ping_interval`) or stayed over its message rate, 1009 for a message over the size limit;
//! on shutdown every connection gets a close frame (1001, going away). A close frame goes out
//! only if the socket takes it within [`CLOSE_TIMEOUT`]; otherwise the socket is dropped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, close_code};
use futures::stream::SplitSink;
use futures::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::auth::Bearer;
use crate::connection::{Ended, Frame, serve_frames};
use crate::gateway::Gateway;
use crate::limits::{Permit, Refusal};
use crate::outbox::{Outbox, Outgoing, Overflow};

/// How long a WebSocket closing on shutdown may take to send its close frame (a client that
/// does not read gets none).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// How the server closes a connection: the close frame its writer sends last (none: a plain
/// close), and whether it must go out now rather than after the answers in flight.
#[derive(Clone, Default)]
struct Closing {
    frame: Arc<Mutex<Option<CloseFrame>>>,
    now: CancellationToken,
}

impl Closing {
    fn set(&self, code: u16, reason: &'static str) {
        let mut frame = self.frame.lock().unwrap_or_else(|p| p.into_inner());
        frame.get_or_insert(CloseFrame { code, reason: Utf8Bytes::from_static(reason) });
    }

    fn take(&self) -> Option<CloseFrame> {
        self.frame.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Serves one authenticated WebSocket connection until it closes, overflows, goes silent,
/// exceeds a limit or the gateway shuts down; `permit` holds its place among the process's
/// connections (and hears of a close for abuse).
pub(crate) async fn serve(gateway: Gateway, bearer: Bearer, socket: WebSocket, permit: Permit) {
    let permit = Arc::new(permit);
    let _session = gateway.config.shutdown.session();
    let limits = gateway.config.limits.clone();
    let (sink, stream) = socket.split();
    let (out, rx) = Outbox::channel(limits.outgoing_queue);
    let (going_away, go_away) = tokio::sync::oneshot::channel::<()>();
    let closing = Closing::default();
    let mut writer =
        tokio::spawn(write(sink, rx, go_away, out.overflow_handle(), closing.clone(), limits.ping_interval));
    gateway.metrics.connections.inc();
    let idle = limits.idle_timeout;
    // Pings and pongs are the transport's business, but they count as signs of life: a
    // connection that delivers no complete message for the idle timeout (a client gone
    // silent, or one sending a frame a byte at a time) is closed with 1008. A message over
    // the size limit closes it with 1009; any other read error ends it like a close frame.
    let frames = futures::stream::unfold(stream, {
        let (closing, refused, permit) = (closing.clone(), gateway.metrics.refused.clone(), permit.clone());
        move |mut stream| {
            let (closing, refused, permit) = (closing.clone(), refused.clone(), permit.clone());
            async move {
                loop {
                    let frame = match tokio::time::timeout(idle, stream.next()).await {
                        Err(_) => {
                            Refusal::Idle.count(&refused);
                            closing.set(close_code::POLICY, "idle: no message or pong within the idle timeout");
                            Frame::Close
                        }
                        Ok(None) => return None,
                        Ok(Some(Ok(message))) => match frame_of(message) {
                            Some(frame) => frame,
                            None => continue,
                        },
                        Ok(Some(Err(e))) => {
                            if too_large(e) {
                                Refusal::TooLarge.count(&refused);
                                permit.abused();
                                closing.set(close_code::SIZE, "message too large");
                            }
                            Frame::Close
                        }
                    };
                    return Some((frame, stream));
                }
            }
        }
    });
    match serve_frames(gateway.clone(), bearer, frames, out).await {
        Ended::Closed => {
            let _ = (&mut writer).await;
        }
        Ended::Overflowed => {
            // The writer sends 1008 if the socket takes it, and stops.
            Refusal::SlowReader.count(&gateway.metrics.refused);
            if tokio::time::timeout(2 * CLOSE_TIMEOUT, &mut writer).await.is_err() {
                writer.abort();
            }
        }
        Ended::RateSustained => {
            permit.abused();
            closing.set(close_code::POLICY, "rate limit exceeded");
            closing.now.cancel();
            if tokio::time::timeout(2 * CLOSE_TIMEOUT, &mut writer).await.is_err() {
                writer.abort();
            }
        }
        Ended::Shutdown => {
            let _ = going_away.send(());
            if tokio::time::timeout(CLOSE_TIMEOUT, &mut writer).await.is_err() {
                writer.abort();
            }
        }
    }
    gateway.metrics.connections.dec();
}

/// Whether a read error is a message or frame over the size limit.
fn too_large(e: axum::Error) -> bool {
    matches!(e.into_inner().downcast_ref::<tungstenite::Error>(), Some(tungstenite::Error::Capacity(_)))
}

/// The connection's writer: drains the outbox into text frames, pings every `ping_every`, and
/// closes the socket — with 1001 on shutdown, 1008 when the client does not read (its outbox
/// overflowed) or must go now, and otherwise with the [`Closing`] frame, if any, once the
/// outbox is done.
async fn write(
    mut sink: SplitSink<WebSocket, Message>,
    mut rx: mpsc::Receiver<Outgoing>,
    mut go_away: tokio::sync::oneshot::Receiver<()>,
    overflow: Overflow,
    closing: Closing,
    ping_every: Duration,
) {
    let slow = || CloseFrame { code: close_code::POLICY, reason: Utf8Bytes::from_static("too slow to read") };
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + ping_every, ping_every);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let close = loop {
        let written = tokio::select! {
            biased;
            _ = &mut go_away => {
                break Some(CloseFrame { code: close_code::AWAY, reason: Utf8Bytes::from_static("server shutting down") });
            }
            () = overflow.cancelled() => break Some(slow()),
            () = closing.now.cancelled() => break closing.take(),
            _ = ping.tick() => {
                tokio::select! {
                    biased;
                    () = overflow.cancelled() => break Some(slow()),
                    r = sink.send(Message::Ping(Bytes::new())) => r,
                }
            }
            message = rx.recv() => match message {
                Some(first) => tokio::select! {
                    biased;
                    () = overflow.cancelled() => break Some(slow()),
                    () = closing.now.cancelled() => break closing.take(),
                    r = write_batch(&mut sink, first, &mut rx) => r,
                },
                None => break closing.take(),
            },
        };
        if written.is_err() {
            return;
        }
    };
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, async {
        match close {
            Some(frame) => sink.send(Message::Close(Some(frame))).await,
            None => sink.close().await,
        }
    })
    .await;
}

/// Sends `first` and whatever else is ready in one write: frames are buffered and flushed
/// once. A mover's ack and its snapshot come from two tasks a moment apart, so it yields once
/// before it flushes.
async fn write_batch(
    sink: &mut SplitSink<WebSocket, Message>,
    first: Outgoing,
    rx: &mut mpsc::Receiver<Outgoing>,
) -> Result<(), axum::Error> {
    let mut next = Some(first);
    let mut yielded = false;
    while let Some(message) = next {
        sink.feed(Message::Text(message.text)).await?;
        next = rx.try_recv().ok();
        if next.is_none() && !yielded {
            yielded = true;
            tokio::task::yield_now().await;
            next = rx.try_recv().ok();
        }
    }
    sink.flush().await
}

/// What the protocol loop gets for one WebSocket message: a text frame is one protocol
/// message, a binary frame is unreadable, a close frame closes; pings and pongs are the
/// transport's business (`None`).
pub(crate) fn frame_of(message: Message) -> Option<Frame> {
    Some(match message {
        Message::Text(t) => Frame::Text { bytes: Bytes::from(t), named: None },
        Message::Binary(_) => Frame::Unreadable,
        Message::Ping(_) | Message::Pong(_) => return None,
        Message::Close(_) => Frame::Close,
    })
}
