//! One player's WebSocket connection speaking the JSON protocol: typed messages out
//! (`juegoland_protocol::encode_client`), strictly decoded messages in.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use juegoland_protocol::{ClientMessage, ServerMessage, decode_server, encode_client};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Why the connection failed; the harness counts these by [`ConnError::key`].
#[derive(Debug)]
pub enum ConnError {
    Connect(String),
    Closed,
    Timeout,
    Decode(String),
}

impl ConnError {
    pub fn key(&self) -> &'static str {
        match self {
            ConnError::Connect(_) => "ws connect",
            ConnError::Closed => "ws closed",
            ConnError::Timeout => "ws timeout",
            ConnError::Decode(_) => "ws undecodable message",
        }
    }
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Connect(e) => write!(f, "connect: {e}"),
            ConnError::Closed => write!(f, "the server closed the connection"),
            ConnError::Timeout => write!(f, "no message in time"),
            ConnError::Decode(e) => write!(f, "undecodable server message: {e}"),
        }
    }
}

pub struct Conn {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Conn {
    /// Opens `ws_url` (`ws://host:port/v1/ws`) with `token`.
    pub async fn connect(ws_url: &str, token: &str) -> Result<Conn, ConnError> {
        let url = format!("{ws_url}?access_token={token}");
        let connect = tokio_tungstenite::connect_async(url);
        let (ws, _) = tokio::time::timeout(Duration::from_secs(10), connect)
            .await
            .map_err(|_| ConnError::Connect("timed out".into()))?
            .map_err(|e| ConnError::Connect(e.to_string()))?;
        if let MaybeTlsStream::Plain(s) = ws.get_ref() {
            // Small frames both ways: Nagle would add up to 40 ms to every move.
            let _ = s.set_nodelay(true);
        }
        Ok(Conn { ws })
    }

    pub async fn send(&mut self, msg: &ClientMessage) -> Result<(), ConnError> {
        self.ws.send(Message::text(encode_client(msg))).await.map_err(|_| ConnError::Closed)
    }

    /// The next protocol message, waiting at most `timeout`.
    pub async fn recv(&mut self, timeout: Duration) -> Result<ServerMessage, ConnError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let next = tokio::time::timeout_at(deadline, self.ws.next()).await.map_err(|_| ConnError::Timeout)?;
            match next {
                Some(Ok(Message::Text(text))) => {
                    return decode_server(text.as_bytes()).map_err(|e| ConnError::Decode(e.to_string()));
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                Some(Ok(Message::Binary(_))) => return Err(ConnError::Decode("a binary frame".into())),
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return Err(ConnError::Closed),
            }
        }
    }
}
