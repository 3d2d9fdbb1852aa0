//! The WebSocket transport of the protocol, at `/v1/ws` ([`serve`]).
//!
//! Each text frame is one protocol message for the connection's protocol loop
//! (`connection.rs`), and a writer task drains the loop's outbox into text frames. Pings and
//! pongs are the transport's business; a binary frame is unreadable; a close frame or a read
//! error ends the connection. When the loop ends because the client closed, the writer sends
//! what is still queued (answers of commands in flight included) and closes the socket; a
//! client that let its queue overflow gets its socket dropped; on shutdown every connection
//! gets a close frame (1001, going away) if it goes out within [`CLOSE_TIMEOUT`].

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, close_code};
use futures::{SinkExt, StreamExt};

use crate::connection::{Ended, Frame, serve_frames};
use crate::gateway::Gateway;
use crate::outbox::Outbox;

/// How long a WebSocket closing on shutdown may take to send its close frame (a client that
/// does not read gets none).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

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
                    Some(first) => {
                        // What is ready goes out in one write: frames are buffered and
                        // flushed once. A mover's ack and its snapshot come from two tasks a
                        // moment apart, so the writer yields once before it flushes.
                        let mut next = Some(first);
                        let mut yielded = false;
                        while let Some(message) = next {
                            if sink.feed(Message::Text(message.text)).await.is_err() {
                                return;
                            }
                            next = rx.try_recv().ok();
                            if next.is_none() && !yielded {
                                yielded = true;
                                tokio::task::yield_now().await;
                                next = rx.try_recv().ok();
                            }
                        }
                        if sink.flush().await.is_err() {
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
