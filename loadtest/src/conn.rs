//! One player's connection: a WebSocket speaking the JSON protocol (typed messages out with
//! `juegoland_protocol::encode_client`, strictly decoded messages in), or gRPC straight to a
//! router, as a platform back end playing for its users would: the router's `Call` with a
//! command, a sync, and the views of later revisions by polling the revision and reading a
//! sync when it moved (the router API has no push). Both look the same to the players.

use std::collections::VecDeque;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use juegoland_api::{MatchReply, MatchRequest};
use juegoland_protocol::{ClientMessage, ServerMessage, decode_server, encode_client};
use juegoland_rpc::pb::router_client::RouterClient;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tonic::transport::Channel;
use uuid::Uuid;

/// Why the connection failed; the harness counts these by [`ConnError::key`].
#[derive(Debug)]
pub enum ConnError {
    Connect(String),
    Closed,
    Timeout,
    Decode(String),
    /// A gRPC call failed (the status is in the text).
    Rpc(String),
}

impl ConnError {
    pub fn key(&self) -> &'static str {
        match self {
            ConnError::Connect(_) => "ws connect",
            ConnError::Closed => "ws closed",
            ConnError::Timeout => "ws timeout",
            ConnError::Decode(_) => "ws undecodable message",
            ConnError::Rpc(_) => "grpc call failed",
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
            ConnError::Rpc(e) => write!(f, "gRPC call failed: {e}"),
        }
    }
}

pub enum Conn {
    Ws(Box<WebSocketStream<MaybeTlsStream<TcpStream>>>),
    Grpc(Box<GrpcConn>),
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
        Ok(Conn::Ws(Box::new(ws)))
    }

    /// Plays as `principal` through the router behind `channel`, polling every `poll` for
    /// newer revisions.
    pub fn grpc(
        channel: Channel,
        principal: String,
        poll: Duration,
        key: Option<juegoland_rpc::credential::ClusterKey>,
    ) -> Conn {
        Conn::Grpc(Box::new(GrpcConn {
            key,
            client: RouterClient::new(channel),
            principal,
            match_id: None,
            seen: 0,
            inbox: VecDeque::new(),
            poll,
        }))
    }

    pub async fn send(&mut self, msg: &ClientMessage) -> Result<(), ConnError> {
        match self {
            Conn::Ws(ws) => ws.send(Message::text(encode_client(msg))).await.map_err(|_| ConnError::Closed),
            Conn::Grpc(g) => g.send(msg).await,
        }
    }

    /// The next protocol message, waiting at most `timeout`.
    pub async fn recv(&mut self, timeout: Duration) -> Result<ServerMessage, ConnError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let ws = match self {
            Conn::Ws(ws) => ws,
            Conn::Grpc(g) => return g.recv(deadline).await,
        };
        loop {
            let next = tokio::time::timeout_at(deadline, ws.next()).await.map_err(|_| ConnError::Timeout)?;
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

/// A player on the router's gRPC API: what a call answers waits in `inbox` for `recv`.
pub struct GrpcConn {
    /// Stamps each call as a gateway's (a router acts for a principal only on such calls).
    key: Option<juegoland_rpc::credential::ClusterKey>,
    client: RouterClient<Channel>,
    principal: String,
    /// The match of the last sync: the one whose revisions are polled.
    match_id: Option<Uuid>,
    /// The newest revision read.
    seen: u64,
    inbox: VecDeque<ServerMessage>,
    poll: Duration,
}

fn rpc_error(status: tonic::Status) -> ConnError {
    ConnError::Rpc(format!("{:?}: {}", status.code(), status.message()))
}

impl GrpcConn {
    /// One match request through the router.
    async fn call(&mut self, request: MatchRequest) -> Result<MatchReply, ConnError> {
        let mut call = tonic::Request::new(juegoland_rpc::request_to_pb(&request));
        if let Some(key) = &self.key {
            key.stamp(juegoland_rpc::credential::Role::Gateway, call.metadata_mut());
        }
        let reply = self.client.call(call).await.map_err(rpc_error)?;
        juegoland_rpc::reply(reply.into_inner()).map_err(|e| ConnError::Decode(e.to_string()))
    }

    async fn send(&mut self, msg: &ClientMessage) -> Result<(), ConnError> {
        match msg {
            ClientMessage::Sync(req) => {
                self.match_id = Some(req.match_id);
                self.sync(Some(req.request_id.clone())).await
            }
            ClientMessage::Command(envelope) => {
                let request = MatchRequest::Command { principal: self.principal.clone(), envelope: envelope.clone() };
                match self.call(request).await? {
                    MatchReply::Message(message) => self.inbox.push_back(message),
                    other => return Err(ConnError::Decode(format!("a command was answered with {other:?}"))),
                }
                Ok(())
            }
            other => Err(ConnError::Decode(format!("{} is not played over gRPC", other.message_type()))),
        }
    }

    /// Reads the match's snapshot for this principal into the inbox: the answer to the sync
    /// `request_id`, or (`None`) the view of a newer revision.
    async fn sync(&mut self, request_id: Option<String>) -> Result<(), ConnError> {
        let match_id = self.match_id.ok_or(ConnError::Closed)?;
        let message = match self.call(MatchRequest::Sync { match_id, principal: self.principal.clone() }).await? {
            MatchReply::Snapshot(s) => match s.snapshot {
                ServerMessage::Snapshot(mut snapshot) => {
                    self.seen = self.seen.max(snapshot.revision);
                    snapshot.request_id = request_id;
                    ServerMessage::Snapshot(snapshot)
                }
                other => return Err(ConnError::Decode(format!("a sync answered {}", other.message_type()))),
            },
            MatchReply::Message(ServerMessage::Error(mut e)) => {
                e.request_id = request_id;
                ServerMessage::Error(e)
            }
            other => return Err(ConnError::Decode(format!("a sync was answered with {other:?}"))),
        };
        self.inbox.push_back(message);
        Ok(())
    }

    async fn recv(&mut self, deadline: tokio::time::Instant) -> Result<ServerMessage, ConnError> {
        loop {
            if let Some(message) = self.inbox.pop_front() {
                return Ok(message);
            }
            let match_id = self.match_id.ok_or(ConnError::Closed)?;
            let revision = match tokio::time::timeout_at(deadline, self.call(MatchRequest::Revision { match_id }))
                .await
                .map_err(|_| ConnError::Timeout)??
            {
                MatchReply::Revision(revision) => revision,
                other => return Err(ConnError::Decode(format!("a revision was answered with {other:?}"))),
            };
            if revision > self.seen {
                self.sync(None).await?;
                continue;
            }
            if tokio::time::Instant::now() + self.poll >= deadline {
                return Err(ConnError::Timeout);
            }
            tokio::time::sleep(self.poll).await;
        }
    }
}
