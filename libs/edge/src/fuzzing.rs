//! A gateway connection driven in process: the fuzz targets' way into the protocol loop
//! (`fuzz/`, through the `fuzzing` feature) and this crate's unit tests.
//!
//! Input goes in as a transport receives it and through that transport's own adapter — a
//! WebSocket message through `ws::frame_of`, a Socket.IO event through the handler
//! socketioxide would route it to (`sio::handler_kind`) and `sio::frame_of` — into the same
//! `connection::serve_frames` a socket feeds; what the loop sends comes back as the
//! (type, JSON text) pairs a transport's writer would send. No socket, no HTTP: the bytes and
//! the loop are the real ones, the network is not.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::ws::Message;
use juegoland_api::Matches;
use juegoland_bus::Bus;
use socketioxide::handler::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::auth::Bearer;
pub use crate::connection::Ended;
use crate::connection::{Frame, serve_frames};
use crate::gateway::{Gateway, GatewayConfig};
use crate::metrics::EdgeMetrics;
use crate::outbox::{Outbox, Outgoing};

/// A WebSocket message as the socket reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WsMessage {
    Text(String),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    Close,
}

/// One input of a client connection, before its transport's adapter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportInput {
    WebSocket(WsMessage),
    /// A Socket.IO event packet: its data, the JSON array `[name, arguments…]`, and how many
    /// binary attachments came with it.
    SocketIo {
        data: String,
        attachments: usize,
    },
}

/// The gateway's shared state over a match API and a bus, with metrics of its own.
#[derive(Clone)]
pub struct Edge {
    gateway: Gateway,
}

impl Edge {
    pub fn new(matches: Arc<dyn Matches>, bus: Arc<dyn Bus>, config: GatewayConfig) -> Self {
        let metrics = EdgeMetrics::new(&prometheus::Registry::new()).expect("fresh metrics register");
        Self { gateway: Gateway { matches, bus, metrics, config, connections: Default::default() } }
    }

    /// Opens an authenticated connection: its protocol loop runs in a task until the input
    /// ends ([`Connection::finish`]), a close arrives, its queue overflows or the gateway
    /// shuts down.
    pub fn connect(&self, bearer: Bearer, queue: usize) -> Connection {
        let (frames, incoming) = mpsc::unbounded_channel();
        let (out, outgoing) = Outbox::channel(queue);
        let frames_stream = futures::stream::unfold(incoming, |mut incoming| async move {
            incoming.recv().await.map(|frame| (frame, incoming))
        });
        let task = tokio::spawn(serve_frames(self.gateway.clone(), bearer, frames_stream, out));
        Connection { frames: Some(frames), outgoing, task }
    }
}

/// A server message as the transport's writer gets it: its `type` and its JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    pub kind: &'static str,
    pub text: String,
}

impl From<Outgoing> for Sent {
    fn from(o: Outgoing) -> Self {
        Sent { kind: o.kind, text: o.text.as_str().to_owned() }
    }
}

/// One client connection of an [`Edge`].
pub struct Connection {
    frames: Option<mpsc::UnboundedSender<Frame>>,
    outgoing: mpsc::Receiver<Outgoing>,
    task: JoinHandle<Ended>,
}

impl Connection {
    /// Hands the loop one input through its transport's adapter. False when the adapter
    /// passes nothing on: a WebSocket ping or pong, a Socket.IO packet that is no event
    /// socketioxide would route (its data is not an array starting with the event's name), or
    /// a loop that has ended.
    pub fn send(&self, input: TransportInput) -> bool {
        let frame = match input {
            TransportInput::WebSocket(message) => {
                let message = match message {
                    WsMessage::Text(text) => Message::Text(text.into()),
                    WsMessage::Binary(bytes) => Message::Binary(bytes.into()),
                    WsMessage::Ping(bytes) => Message::Ping(bytes.into()),
                    WsMessage::Pong(bytes) => Message::Pong(bytes.into()),
                    WsMessage::Close => Message::Close(None),
                };
                crate::ws::frame_of(message)
            }
            TransportInput::SocketIo { data, attachments } => event_name(&data).map(|name| {
                let binaries =
                    (attachments > 0).then(|| std::iter::repeat_n(Bytes::from_static(b"\x00"), attachments).collect());
                crate::sio::frame_of(crate::sio::handler_kind(&name), &Value::Str(data.into(), binaries))
            }),
        };
        match (frame, &self.frames) {
            (Some(frame), Some(frames)) => frames.send(frame).is_ok(),
            _ => false,
        }
    }

    /// A message the loop sent, if one is queued.
    pub fn try_recv(&mut self) -> Option<Sent> {
        self.outgoing.try_recv().ok().map(Sent::from)
    }

    /// The next message the loop sends; `None` once the loop and every task writing for it
    /// are done.
    pub async fn recv(&mut self) -> Option<Sent> {
        self.outgoing.recv().await.map(Sent::from)
    }

    /// Whether the protocol loop has ended.
    pub fn has_ended(&self) -> bool {
        self.task.is_finished()
    }

    /// Ends the input (a client whose connection breaks) and waits for the loop: why it
    /// ended, and every message still sent after it (answers of commands in flight
    /// included), until the last writer is gone.
    pub async fn finish(mut self) -> (Ended, Vec<Sent>) {
        self.frames = None;
        let ended = (&mut self.task).await.expect("the protocol loop does not panic");
        let mut rest = Vec::new();
        while let Some(sent) = self.recv().await {
            rest.push(sent);
        }
        (ended, rest)
    }
}

/// The event name socketioxide reads from an event packet's data: the first element of the
/// array, a string; `None` for data it would not deliver as an event.
fn event_name(data: &str) -> Option<String> {
    let parts: Vec<&serde_json::value::RawValue> = serde_json::from_str(data).ok()?;
    serde_json::from_str::<String>(parts.first()?.get()).ok()
}

#[cfg(test)]
mod tests {
    use juegoland_protocol::{ErrorCode, ServerMessage, decode_server};

    use super::*;
    use crate::harness::Harness;

    fn error_code(sent: &Sent) -> ErrorCode {
        match decode_server(sent.text.as_bytes()).expect("a server message") {
            ServerMessage::Error(e) => e.code,
            other => panic!("expected a game.error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn inputs_go_through_their_transports_adapters() {
        let h = Harness::new(GatewayConfig::default());
        let edge = Edge { gateway: h.gateway.clone() };
        let mut c = edge.connect(Bearer::seats("alice"), 16);
        // Pings are the transport's; a binary frame and a Socket.IO event whose argument is not
        // its name's message are unreadable or malformed; data that is no event never arrives.
        assert!(!c.send(TransportInput::WebSocket(WsMessage::Ping(vec![1]))));
        assert!(c.send(TransportInput::WebSocket(WsMessage::Binary(vec![0, 1]))));
        let unsubscribe = r#"{"protocolVersion":1,"type":"game.unsubscribe","matchId":"0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69","subscriptionId":"s-1"}"#;
        assert!(c.send(TransportInput::SocketIo { data: format!(r#"["game.sync",{unsubscribe}]"#), attachments: 0 }));
        assert!(
            c.send(TransportInput::SocketIo { data: format!(r#"["game.unsubscribe",{unsubscribe}]"#), attachments: 1 })
        );
        assert!(!c.send(TransportInput::SocketIo { data: "{}".into(), attachments: 0 }));
        assert!(
            c.send(TransportInput::SocketIo { data: format!(r#"["game.unsubscribe",{unsubscribe}]"#), attachments: 0 })
        );
        let mut codes = Vec::new();
        for _ in 0..4 {
            codes.push(error_code(&c.recv().await.expect("an answer")));
        }
        assert_eq!(
            codes,
            [
                ErrorCode::MalformedMessage,
                ErrorCode::MalformedMessage,
                ErrorCode::MalformedMessage,
                ErrorCode::SubscriptionNotFound
            ]
        );
        assert!(c.send(TransportInput::WebSocket(WsMessage::Close)));
        let (ended, rest) = c.finish().await;
        assert_eq!((ended, rest), (Ended::Closed, Vec::new()));
    }
}
