//! Abuse while the honest load plays (`--attack`, issue 25): attackers from another source
//! address (`--attack-from`, 127.0.0.2 by default: Linux answers the whole 127/8 on
//! loopback, so the server's per-address cap sees the attacker apart from the honest
//! players) hit the same WebSocket endpoint, and the summary reports what the server did
//! to them next to the honest players' latencies and the server's memory.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use clap::ValueEnum;
use futures::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use crate::play::PlayContext;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attack {
    /// Opens WebSocket connections as fast as it can and holds them (never reads).
    Flood,
    /// Sends HTTP request heads a byte every 100 ms, reopening what the server closes.
    Slowloris,
    /// Connections (with a 4 KiB receive buffer) that send a message every 25 ms (each
    /// answered) and never read.
    SlowReader,
    /// Sends commands as fast as the socket takes them, reading the answers.
    Storm,
    /// Sends 2 MiB messages (single and fragmented), reconnecting after each close.
    Oversize,
}

impl Attack {
    pub fn name(self) -> &'static str {
        match self {
            Attack::Flood => "flood",
            Attack::Slowloris => "slowloris",
            Attack::SlowReader => "slow-reader",
            Attack::Storm => "storm",
            Attack::Oversize => "oversize",
        }
    }
}

/// What the attackers saw, for the summary.
#[derive(Default)]
pub struct AttackStats {
    /// Connections (TCP or WebSocket) the attackers opened.
    pub opened: AtomicU64,
    /// Upgrades answered 503 (the connection caps).
    pub refused: AtomicU64,
    /// Connections the server closed (a close frame, EOF or reset).
    pub closed_by_server: AtomicU64,
    /// Messages (or head bytes) the attackers sent.
    pub sent: AtomicU64,
    /// RATE_LIMITED answers the attackers read.
    pub rate_limited: AtomicU64,
    /// The most WebSocket connections the flood held at once.
    pub held_peak: AtomicU64,
}

impl AttackStats {
    pub fn json(&self, attack: Attack, attackers: usize) -> serde_json::Value {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        serde_json::json!({
            "kind": attack.name(),
            "attackers": attackers,
            "opened": n(&self.opened),
            "refused": n(&self.refused),
            "closedByServer": n(&self.closed_by_server),
            "sent": n(&self.sent),
            "rateLimited": n(&self.rate_limited),
            "heldPeak": n(&self.held_peak),
        })
    }
}

/// Where and as whom the attackers connect.
pub struct Target {
    /// The WebSocket endpoint's address.
    pub addr: SocketAddr,
    /// Its host:port, as the `Host` header says it.
    pub authority: String,
    pub from: IpAddr,
    /// Where tokens come from (the players' source).
    pub ctx: Arc<PlayContext>,
}

impl Target {
    /// `ws_url` (`ws://host:port/v1/ws`) resolved; attackers bind to `from`.
    pub async fn resolve(ws_url: &str, from: IpAddr, ctx: Arc<PlayContext>) -> anyhow::Result<Target> {
        let authority = ws_url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .ok_or_else(|| anyhow::anyhow!("{ws_url}: the attack needs a ws:// endpoint"))?
            .to_owned();
        let addr = tokio::net::lookup_host(&authority)
            .await?
            .find(|a| a.is_ipv4() == from.is_ipv4())
            .ok_or_else(|| anyhow::anyhow!("{authority}: no address of the family of {from}"))?;
        Ok(Target { addr, authority, from, ctx })
    }

    /// A TCP connection from the attackers' address; `small_buffer` asks for a 4 KiB receive
    /// buffer, so that a client that does not read fills it fast.
    async fn tcp(&self, small_buffer: bool) -> std::io::Result<TcpStream> {
        let socket = if self.from.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
        if small_buffer {
            socket.set_recv_buffer_size(4096)?;
        }
        socket.bind(SocketAddr::new(self.from, 0))?;
        let stream = socket.connect(self.addr).await?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// A WebSocket as `principal`; `Err(true)` when the upgrade was refused (503 at a cap, 429
    /// over the address's rate of new connections).
    async fn ws(&self, principal: &str, small_buffer: bool) -> Result<WebSocketStream<TcpStream>, bool> {
        let token = self.ctx.tokens.token(principal).await.map_err(|_| false)?;
        let stream = self.tcp(small_buffer).await.map_err(|_| false)?;
        let url = format!("ws://{}/v1/ws?access_token={token}", self.authority);
        match tokio_tungstenite::client_async(url, stream).await {
            Ok((ws, _)) => Ok(ws),
            Err(tokio_tungstenite::tungstenite::Error::Http(r)) if matches!(r.status().as_u16(), 429 | 503) => {
                Err(true)
            }
            Err(_) => Err(false),
        }
    }

    /// A WebSocket as `principal`, counted opened; a failed attempt (counted refused on a
    /// 503) waits a pause and answers `None`, for the caller's loop to try again.
    async fn opened(
        &self,
        principal: &str,
        small_buffer: bool,
        stats: &AttackStats,
    ) -> Option<WebSocketStream<TcpStream>> {
        match self.ws(principal, small_buffer).await {
            Ok(ws) => {
                stats.opened.fetch_add(1, Ordering::Relaxed);
                Some(ws)
            }
            Err(refused) => {
                if refused {
                    stats.refused.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(PAUSE).await;
                None
            }
        }
    }
}

/// Runs `attackers` attackers of `attack` until `stop`.
pub async fn run(
    attack: Attack,
    attackers: usize,
    target: Arc<Target>,
    matches: Arc<Vec<uuid::Uuid>>,
    stats: Arc<AttackStats>,
    stop: Arc<AtomicBool>,
) {
    let tasks = (0..attackers).map(|i| {
        let (target, matches, stats, stop) = (target.clone(), matches.clone(), stats.clone(), stop.clone());
        tokio::spawn(async move {
            match attack {
                Attack::Flood => flood(&target, &stats, &stop).await,
                Attack::Slowloris => slowloris(&target, &stats, &stop).await,
                Attack::SlowReader => slow_reader(&target, &stats, &stop).await,
                Attack::Storm => storm(&target, &matches, i, &stats, &stop).await,
                Attack::Oversize => oversize(&target, &stats, &stop).await,
            }
        })
    });
    let tasks: Vec<_> = tasks.collect();
    for t in tasks {
        let _ = t.await;
    }
}

const PAUSE: Duration = Duration::from_millis(50);

async fn flood(target: &Target, stats: &AttackStats, stop: &AtomicBool) {
    static HELD: AtomicU64 = AtomicU64::new(0);
    let mut held = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        match target.ws("lt-attacker", false).await {
            Ok(ws) => {
                stats.opened.fetch_add(1, Ordering::Relaxed);
                held.push(ws);
                let now = HELD.fetch_add(1, Ordering::Relaxed) + 1;
                stats.held_peak.fetch_max(now, Ordering::Relaxed);
            }
            Err(true) => {
                stats.refused.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(PAUSE).await;
            }
            Err(false) => tokio::time::sleep(PAUSE).await,
        }
    }
    HELD.fetch_sub(held.len() as u64, Ordering::Relaxed);
}

async fn slowloris(target: &Target, stats: &AttackStats, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = target.tcp(false).await else {
            tokio::time::sleep(PAUSE).await;
            continue;
        };
        stats.opened.fetch_add(1, Ordering::Relaxed);
        let head = format!("GET /v1/games HTTP/1.1\r\nHost: {}\r\nX-Slow: ", target.authority);
        if s.write_all(head.as_bytes()).await.is_err() {
            continue;
        }
        loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            if s.write_all(b"x").await.is_err() {
                stats.closed_by_server.fetch_add(1, Ordering::Relaxed);
                break;
            }
            stats.sent.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn slow_reader(target: &Target, stats: &AttackStats, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let Some(mut ws) = target.opened("lt-attacker", true, stats).await else { continue };
        loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            // A sync of a match that does not exist: answered MATCH_NOT_FOUND, never read.
            let sync = format!(
                r#"{{"protocolVersion":1,"type":"game.sync","requestId":"r","matchId":"{}","accept":[]}}"#,
                uuid::Uuid::nil()
            );
            if ws.send(Message::Text(sync.into())).await.is_err() {
                stats.closed_by_server.fetch_add(1, Ordering::Relaxed);
                break;
            }
            stats.sent.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

async fn storm(target: &Target, matches: &[uuid::Uuid], i: usize, stats: &AttackStats, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let Some(match_id) = matches.get(i % matches.len().max(1)).copied() else { return };
        let Some(mut ws) = target.opened(&format!("lt-attacker-{i}"), false, stats).await else { continue };
        let command = |n: u64| {
            format!(
                r#"{{"protocolVersion":1,"type":"game.command","matchId":"{match_id}","commandId":"{}","precondition":{{"kind":"match","revision":0}},"action":{{"type":"drop","payload":{{"column":{}}}}}}}"#,
                uuid::Uuid::from_u128((u128::from(n) << 64) | i as u128),
                n % 7
            )
        };
        let mut n = 0u64;
        'connection: loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            n += 1;
            if ws.send(Message::Text(command(n).into())).await.is_err() {
                stats.closed_by_server.fetch_add(1, Ordering::Relaxed);
                break;
            }
            stats.sent.fetch_add(1, Ordering::Relaxed);
            // Read what is there without waiting.
            while let Ok(next) = tokio::time::timeout(Duration::ZERO, ws.next()).await {
                match next {
                    Some(Ok(Message::Text(t))) => {
                        if t.as_str().contains("\"RATE_LIMITED\"") {
                            stats.rate_limited.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                        stats.closed_by_server.fetch_add(1, Ordering::Relaxed);
                        break 'connection;
                    }
                    Some(Ok(_)) => {}
                }
            }
            if n.is_multiple_of(64) {
                tokio::task::yield_now().await;
            }
        }
        tokio::time::sleep(PAUSE).await;
    }
}

async fn oversize(target: &Target, stats: &AttackStats, stop: &AtomicBool) {
    // Both messages are built (and masked) once: the attacker's CPU is not the server's. The
    // single frame announces 2 MiB in its header; the fragmented message is 16 KiB fragments,
    // each under any frame limit, so the server reads until the whole passes its limit.
    let big = "x".repeat(2 << 20);
    let single = frame(0x81, big.as_bytes());
    let chunks: Vec<&[u8]> = big.as_bytes().chunks(16 << 10).collect();
    let last = chunks.len() - 1;
    let split: Vec<u8> =
        chunks.iter().enumerate().flat_map(|(i, c)| frame((u8::from(i == last) << 7) | u8::from(i == 0), c)).collect();
    let mut fragmented = false;
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = target.tcp(false).await else {
            tokio::time::sleep(PAUSE).await;
            continue;
        };
        let Ok(token) = target.ctx.tokens.token("lt-attacker").await else { return };
        stats.opened.fetch_add(1, Ordering::Relaxed);
        let head = format!(
            "GET /v1/ws?access_token={token} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
            target.authority
        );
        if s.write_all(head.as_bytes()).await.is_err() {
            continue;
        }
        let mut answer = [0u8; 512];
        if s.read(&mut answer).await.unwrap_or(0) == 0 {
            continue;
        }
        if !answer.starts_with(b"HTTP/1.1 101") {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(PAUSE).await;
            continue;
        }
        let bytes = if fragmented { &split } else { &single };
        fragmented = !fragmented;
        let _ = s.write_all(bytes).await;
        stats.sent.fetch_add(1, Ordering::Relaxed);
        let mut sink = [0u8; 4096];
        while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(2), s.read(&mut sink)).await {
            if n == 0 {
                break;
            }
        }
        stats.closed_by_server.fetch_add(1, Ordering::Relaxed);
    }
}

/// A masked client frame with this first byte.
fn frame(first: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [9u8, 8, 7, 6];
    let mut out = vec![first, 0x80 | 127];
    out.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}
