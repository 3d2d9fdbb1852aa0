//! A protocol connection spoken by hand over either transport: the JSON protocol on a
//! WebSocket (`/v1/ws`), or Socket.IO's engine.io v4 text packets on a WebSocket
//! (`/socket.io`), so a test runs the same messages over both.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The server refused the connection's token (`401`, or Socket.IO's UNAUTHENTICATED).
#[derive(Debug)]
pub struct Refused;

type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// A protocol connection over either transport.
pub struct Conn {
    pub ws: Ws,
    pub transport: Transport,
}

/// The protocol's two transports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    WebSocket,
    /// Engine.io v4 text packets over a WebSocket, by hand (`socketio.rs` does the same).
    SocketIo,
}

impl Conn {
    /// A WebSocket connection (the transport of the test's own set-up).
    pub async fn open(addr: &str, token: &str) -> Result<Conn, Refused> {
        Conn::open_on(Transport::WebSocket, addr, token).await
    }

    /// A connection with `token` over `transport`; `Err(Refused)` when its token is refused.
    pub async fn open_on(transport: Transport, addr: &str, token: &str) -> Result<Conn, Refused> {
        let url = match transport {
            Transport::WebSocket => format!("ws://{addr}/v1/ws?access_token={token}"),
            Transport::SocketIo => format!("ws://{addr}/socket.io/?EIO=4&transport=websocket"),
        };
        let ws = match tokio_tungstenite::connect_async(url).await {
            Ok((ws, _)) => ws,
            Err(tokio_tungstenite::tungstenite::Error::Http(r)) if r.status() == 401 => return Err(Refused),
            Err(e) => panic!("websocket connect: {e}"),
        };
        let mut conn = Conn { ws, transport };
        if transport == Transport::SocketIo {
            let open = conn.packet(Duration::from_secs(5)).await.expect("the engine.io open packet");
            assert!(open.starts_with('0'), "{open}");
            conn.ws.send(Message::Text(format!("40{}", json!({ "token": token })).into())).await.expect("send CONNECT");
            let connected = conn.packet(Duration::from_secs(5)).await.expect("the CONNECT answer");
            assert!(connected.starts_with("40"), "{connected}");
            // A refused token: an UNAUTHENTICATED event, then a disconnect, right away.
            if let Some(p) = conn.packet(Duration::from_millis(300)).await {
                let refused = p.starts_with("42") && p.contains("UNAUTHENTICATED");
                assert!(refused, "an unexpected first packet: {p}");
                return Err(Refused);
            }
        }
        Ok(conn)
    }

    /// The next engine.io text packet within `wait`, pings answered on the way.
    pub async fn packet(&mut self, wait: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) if t.as_str() == "2" => {
                    let _ = self.ws.send(Message::Text("3".into())).await;
                }
                Ok(Some(Ok(Message::Text(t)))) => return Some(t.as_str().to_owned()),
                Ok(Some(Ok(_))) => {}
                Ok(_) => panic!("the connection closed"),
                Err(_) => return None,
            }
        }
    }

    /// Sends one text frame as it is (an engine.io packet of a test's own making).
    pub async fn send_raw(&mut self, text: &str) {
        self.ws.send(Message::Text(text.to_owned().into())).await.expect("send");
    }

    pub async fn send(&mut self, v: &Value) {
        let text = match self.transport {
            Transport::WebSocket => v.to_string(),
            Transport::SocketIo => format!("42{}", json!([v["type"], v])),
        };
        self.ws.send(Message::Text(text.into())).await.expect("send");
    }

    /// The first message `answers` accepts within `wait`, every text received on the way
    /// appended to `seen`; `None` when none came.
    pub async fn answer(
        &mut self,
        wait: Duration,
        seen: &mut Vec<String>,
        answers: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let now = tokio::time::Instant::now();
            let text = self.packet(deadline.saturating_duration_since(now)).await?;
            seen.push(text.clone());
            let v: Value = match self.transport {
                Transport::WebSocket => serde_json::from_str(&text).expect("server sends JSON"),
                Transport::SocketIo => match text.strip_prefix("42") {
                    Some(event) => serde_json::from_str::<Value>(event).expect("an event")[1].clone(),
                    None => continue,
                },
            };
            if answers(&v) {
                return Some(v);
            }
        }
    }
}
