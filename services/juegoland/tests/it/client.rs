//! A test client: starts the binary, speaks HTTP/1.1 for the API and the protocol over a
//! real WebSocket. The HTTP client is a few lines over a TCP stream on purpose: the tests
//! need exactly one request per connection and no HTTP client crate is otherwise needed.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// A running `juegoland dev` process, killed (SIGKILL) on drop.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    /// Where it serves its metrics, when started with `--metrics-http`.
    pub metrics: Option<SocketAddr>,
    /// The data directory this server created for itself (removed on drop).
    _own_dir: Option<DataDir>,
}

/// A fresh, empty data directory for one test's embedded store, removed when dropped.
pub struct DataDir(std::path::PathBuf);

impl std::ops::Deref for DataDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn data_dir() -> DataDir {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "juegoland-it-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    ));
    std::fs::create_dir_all(&dir).expect("create a data dir");
    DataDir(dir)
}

impl Server {
    /// A server with its own fresh embedded store.
    pub fn start(extra: &[&str]) -> Server {
        let dir = data_dir();
        let mut server = Server::start_in(&dir, extra);
        server._own_dir = Some(dir);
        server
    }

    /// A server on the embedded store in `dir` (which may hold earlier matches).
    pub fn start_in(dir: &std::path::Path, extra: &[&str]) -> Server {
        Server::start_in_with_env(dir, extra, &[])
    }

    /// Like `start_in`, with extra environment variables (`FAILPOINTS` for crash tests).
    pub fn start_in_with_env(dir: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        Server::spawn(dir, extra, env, Stdio::inherit())
    }

    /// A server with its own fresh embedded store whose log (stderr) goes to `log`, with
    /// extra environment variables (`RUST_LOG=debug` for a scan of everything it logs).
    pub fn start_logged(extra: &[&str], env: &[(&str, &str)], log: &std::path::Path) -> Server {
        let dir = data_dir();
        let file = std::fs::File::create(log).expect("create the server's log file");
        let mut server = Server::spawn(&dir, extra, env, Stdio::from(file));
        server._own_dir = Some(dir);
        server
    }

    fn spawn(dir: &std::path::Path, extra: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_juegoland"))
            .args(["dev", "--http", "127.0.0.1:0", "--data-dir"])
            .arg(dir)
            .args(extra)
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start the juegoland binary");
        // "listening on http://ADDR/ [metrics http://ADDR/]"
        let line = crate::harness::announced_line(&mut child, "listening on ");
        let words: Vec<&str> = line.split_whitespace().collect();
        let address = |word: Option<&&str>| -> Option<SocketAddr> {
            word?.strip_prefix("http://")?.strip_suffix('/')?.parse().ok()
        };
        let addr = address(words.get(2)).unwrap_or_else(|| panic!("unexpected first line: {line:?}"));
        let metrics = words.iter().position(|w| *w == "metrics").and_then(|i| address(words.get(i + 1)));
        Server { child, addr, metrics, _own_dir: None }
    }

    /// One HTTP request; returns (status, JSON body).
    pub async fn http(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        http(&self.addr.to_string(), method, path, body).await
    }

    pub async fn token(&self, principal: &str) -> String {
        let (status, body) = self.http("POST", "/v1/dev/tokens", Some(json!({ "principal": principal }))).await;
        assert_eq!(status, 200, "{body}");
        body["token"].as_str().expect("token").to_owned()
    }

    pub async fn create(&self, seats: Value) -> String {
        let (status, body) =
            self.http("POST", "/v1/matches", Some(json!({ "game": "conecta4", "seats": seats, "config": {} }))).await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["revision"], 0);
        body["matchId"].as_str().expect("matchId").to_owned()
    }

    pub async fn connect(&self, principal: &str) -> Client {
        let token = self.token(principal).await;
        let url = format!("ws://{}/v1/ws?access_token={token}", self.addr);
        let (ws, _) = tokio_tungstenite::connect_async(url).await.expect("websocket connect");
        Client { ws, backlog: Default::default() }
    }
}

impl Server {
    /// Waits for the process to exit on its own (e.g. an injected crash); its exit status.
    pub fn wait_exit(mut self) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(std::time::Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Server {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Client {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// Messages passed over by `recv_type`, delivered first by later receives.
    backlog: std::collections::VecDeque<Value>,
}

impl Client {
    /// The WebSocket itself, for frames and close codes the protocol client does not show.
    pub fn into_ws(self) -> WebSocketStream<MaybeTlsStream<TcpStream>> {
        self.ws
    }

    /// A protocol connection to `ws://addr/v1/ws` with `token`.
    pub async fn connect_to(addr: &str, token: &str) -> Client {
        let url = format!("ws://{addr}/v1/ws?access_token={token}");
        let (ws, _) = tokio_tungstenite::connect_async(url).await.expect("websocket connect");
        Client { ws, backlog: Default::default() }
    }
}

pub const ACCEPT: &str = r#"[{"id":"conecta4","rulesVersion":"1.0.0","viewSchemaVersion":1,"eventSchemaVersion":1}]"#;

impl Client {
    pub async fn send(&mut self, v: &Value) {
        self.send_text(&v.to_string()).await;
    }

    /// Sends `v`; false when the connection is gone (a crash test's server died).
    pub async fn try_send(&mut self, v: &Value) -> bool {
        self.ws.send(Message::Text(v.to_string().into())).await.is_ok()
    }

    pub async fn send_text(&mut self, text: &str) {
        self.ws.send(Message::Text(text.into())).await.expect("send");
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.ws.send(Message::Binary(bytes.into())).await.expect("send");
    }

    /// The next protocol message but `game.cursor` (5 s timeout), the backlog first. A cursor
    /// (the periodic "last committed revision" fact, first sent at a random point of its
    /// interval) can land between any two messages; a test that wants one asks
    /// [`Self::recv_type`] for it.
    pub async fn recv(&mut self) -> Value {
        loop {
            let v = match self.backlog.pop_front() {
                Some(v) => v,
                None => self.recv_network().await,
            };
            if v["type"] != "game.cursor" {
                return v;
            }
        }
    }

    async fn recv_network(&mut self) -> Value {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(5), self.ws.next())
                .await
                .expect("a message within 5 s")
                .expect("connection open")
                .expect("frame");
            if let Message::Text(t) = msg {
                let v: Value = serde_json::from_str(t.as_str()).expect("server sends JSON");
                assert_eq!(v["protocolVersion"], 1, "{v}");
                return v;
            }
        }
    }

    /// The first message of `ty` (from the backlog, then the network); the messages of other
    /// types it passes over stay in the backlog for later receives, in order.
    pub async fn recv_type(&mut self, ty: &str) -> (Value, Vec<Value>) {
        if let Some(i) = self.backlog.iter().position(|v| v["type"] == ty) {
            let v = self.backlog.remove(i).expect("index in range");
            return (v, Vec::new());
        }
        let mut skipped = Vec::new();
        loop {
            let v = self.recv_network().await;
            if v["type"] == ty {
                self.backlog.extend(skipped.iter().cloned());
                return (v, skipped);
            }
            skipped.push(v);
        }
    }

    /// The first message about `match_id` whose type is one of `types` (from the backlog,
    /// then the network); the others stay in the backlog, in order.
    pub async fn recv_about(&mut self, match_id: &str, types: &[&str]) -> Value {
        let wanted = |v: &Value| v["matchId"] == match_id && types.iter().any(|t| v["type"] == *t);
        if let Some(i) = self.backlog.iter().position(wanted) {
            return self.backlog.remove(i).expect("index in range");
        }
        loop {
            let v = self.recv_network().await;
            if wanted(&v) {
                return v;
            }
            self.backlog.push_back(v);
        }
    }

    /// Receives snapshots until the one of `revision`; every snapshot on the way must be
    /// contiguous (fromRevision = previous revision).
    pub async fn recv_revision(&mut self, revision: u64) -> Value {
        loop {
            let (snap, _) = self.recv_type("game.snapshot").await;
            let r = snap["revision"].as_u64().expect("revision");
            assert!(r <= revision, "skipped past revision {revision}: {snap}");
            if r == revision {
                return snap;
            }
        }
    }

    /// The next message if one arrives within `ms` (backlog first).
    pub async fn try_recv(&mut self, ms: u64) -> Option<Value> {
        if let Some(v) = self.backlog.pop_front() {
            return Some(v);
        }
        match tokio::time::timeout(Duration::from_millis(ms), self.ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => Some(serde_json::from_str(t.as_str()).expect("server sends JSON")),
            _ => None,
        }
    }

    /// Nothing but cursors arrives within `ms`. A `game.cursor` (the periodic "last committed
    /// revision" fact, first sent at a random point of its interval) says nothing new, so it
    /// does not break the silence.
    pub async fn expect_silence(&mut self, ms: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
        while let Ok(Some(Ok(Message::Text(t)))) = tokio::time::timeout_at(deadline, self.ws.next()).await {
            let v: Value = serde_json::from_str(t.as_str()).expect("server sends JSON");
            assert_eq!(v["type"], "game.cursor", "unexpected message: {t}");
        }
    }

    pub async fn sync(&mut self, match_id: &str, request_id: &str) -> Value {
        self.send(&json!({
            "protocolVersion": 1, "type": "game.sync", "requestId": request_id, "matchId": match_id,
            "accept": serde_json::from_str::<Value>(ACCEPT).unwrap()
        }))
        .await;
        self.recv().await
    }

    /// Syncs and returns the answer to this request, discarding whatever arrives before it
    /// (live snapshots of earlier subscriptions still in flight).
    pub async fn sync_answer(&mut self, match_id: &str, request_id: &str) -> Value {
        let first = self.sync(match_id, request_id).await;
        let mut v = first;
        while v["requestId"] != request_id {
            v = self.recv().await;
        }
        v
    }

    /// Syncs `match_id` of `game` (its 1.0.0 rules) and returns the answer to this request,
    /// discarding whatever arrives before it.
    pub async fn sync_answer_for(&mut self, match_id: &str, request_id: &str, game: &str) -> Value {
        self.send(&crate::spectators::sync(match_id, request_id, game)).await;
        loop {
            let v = self.recv().await;
            if v["requestId"] == request_id {
                return v;
            }
        }
    }

    pub async fn drop_disc(&mut self, match_id: &str, command_id: &str, revision: u64, column: u64) -> Value {
        let cmd = command(match_id, command_id, revision, column);
        self.send(&cmd).await;
        cmd
    }
}

pub fn command(match_id: &str, command_id: &str, revision: u64, column: u64) -> Value {
    json!({
        "protocolVersion": 1, "type": "game.command", "matchId": match_id, "commandId": command_id,
        "precondition": { "kind": "match", "revision": revision },
        "action": { "type": "drop", "payload": { "column": column } }
    })
}

/// One HTTP/1.1 request to `addr` (`host:port`); returns (status, JSON body).
pub async fn http(addr: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let (status, _, body) = http_raw(addr, method, path, body.as_bytes()).await;
    (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

/// One HTTP/1.1 request with `body` as JSON; returns (status, the response head (lower
/// case), the body text).
pub async fn http_raw(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, String, String) {
    http_with(addr, method, path, &[("Content-Type", "application/json")], body).await
}

/// One HTTP/1.1 request with exactly the extra `headers` given (no content type unless
/// given); returns (status, the response head (lower case), the body text).
pub async fn http_with(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.expect("write");
    // A server may answer (413) before reading a large body, then close.
    let _ = s.write_all(body).await;
    let mut raw = Vec::new();
    // After an early answer the close may be a reset: what arrived before it is the answer.
    let read = s.read_to_end(&mut raw).await;
    let text = String::from_utf8(raw).expect("utf-8 response");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no response head ({read:?}): {text:?}"));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status");
    (status, head.to_lowercase(), body.to_owned())
}

pub fn uuid() -> String {
    uuid::Uuid::from_u128(rand_u128()).to_string()
}

fn rand_u128() -> u128 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    let n = N.fetch_add(1, Ordering::Relaxed) as u128;
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    (t << 20) ^ n ^ (u128::from(std::process::id()) << 100)
}
