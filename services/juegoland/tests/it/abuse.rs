//! Abuse at the edge (issue 25), over real sockets against the `juegoland dev` binary: each
//! limit of `juegoland_edge::EdgeLimits` answers in its typed way, counts its refusal, and
//! leaves the other clients of the process served.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::{Frame, FrameHeader};

use crate::client::{Client, Server, command, uuid};
use crate::harness::metric_sum;

/// `juegoland_edge_refused_total{reason}` on `server`.
async fn refused(server: &Server, reason: &str) -> f64 {
    let (_, metrics) = server.http("GET", "/metrics", None).await;
    let metrics = metrics.as_str().expect("the metrics are text").to_owned();
    let line = format!("juegoland_edge_refused_total{{reason=\"{reason}\"}}");
    metric_sum(
        &metrics.lines().filter(|l| l.starts_with(&line)).collect::<Vec<_>>().join("\n"),
        "juegoland_edge_refused_total",
    )
}

/// `mover` drops a disc in `column` at `revision` and gets it applied; `other` sees the
/// revision it made.
async fn play(mover: &mut Client, other: &mut Client, m: &str, revision: u64, column: u64) {
    mover.drop_disc(m, &uuid(), revision, column).await;
    let (ack, _) = mover.recv_type("game.ack").await;
    assert_eq!(ack["status"], "applied", "{ack}");
    assert_eq!(ack["revision"], revision + 1, "{ack}");
    other.recv_revision(revision + 1).await;
}

/// A match between `a` and `b`, both connected and synced.
async fn playing(server: &Server, a: &str, b: &str) -> (String, Client, Client) {
    let m = server.create(json!({ "p0": a, "p1": b })).await;
    let (mut ca, mut cb) = (server.connect(a).await, server.connect(b).await);
    assert_eq!(ca.sync(&m, "a").await["type"], "game.snapshot");
    assert_eq!(cb.sync(&m, "b").await["type"], "game.snapshot");
    (m, ca, cb)
}

/// Completes a WebSocket handshake on a raw TCP stream (for frames no client library sends).
async fn raw_ws(server: &Server, principal: &str) -> TcpStream {
    let token = server.token(principal).await;
    let mut s = TcpStream::connect(server.addr).await.expect("connect");
    let head = format!(
        "GET /v1/ws?access_token={token} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        server.addr
    );
    s.write_all(head.as_bytes()).await.expect("write the upgrade");
    let mut got = Vec::new();
    while !got.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(s.read(&mut byte).await.expect("read the answer"), 1, "the upgrade is answered");
        got.push(byte[0]);
    }
    assert!(got.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&got));
    s
}

/// A client frame (masked, as a client must) with this first byte and payload.
fn client_frame(first: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [7u8, 1, 2, 3];
    let mut out = vec![first];
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n if n <= 0xffff => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// Reads a raw stream until the server ends it (EOF or reset) within `within`; what it read.
async fn until_closed(s: &mut TcpStream, within: Duration) -> Vec<u8> {
    let mut got = Vec::new();
    let read = tokio::time::timeout(within, async {
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server closed the connection within {within:?}");
    got
}

/// The close code of the first server close frame in `bytes` (unmasked server frames).
fn close_code_in(bytes: &[u8]) -> Option<u16> {
    let mut i = 0;
    while i + 2 <= bytes.len() {
        let (opcode, len7) = (bytes[i] & 0x0f, usize::from(bytes[i + 1] & 0x7f));
        let (len, start) = match len7 {
            126 => (usize::from(u16::from_be_bytes([*bytes.get(i + 2)?, *bytes.get(i + 3)?])), i + 4),
            127 => (usize::try_from(u64::from_be_bytes(bytes.get(i + 2..i + 10)?.try_into().ok()?)).ok()?, i + 10),
            n => (n, i + 2),
        };
        if opcode == 0x8 {
            return Some(u16::from_be_bytes([*bytes.get(start)?, *bytes.get(start + 1)?]));
        }
        i = start + len;
    }
    None
}

#[tokio::test]
async fn a_flood_beyond_the_connection_caps_is_refused_while_a_connected_client_keeps_playing() {
    let server = Server::start(&["--max-connections-per-address", "4"]);
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    let token = server.token("mallory").await;
    let url = format!("ws://{}/v1/ws?access_token={token}", server.addr);
    // Two more fit under the cap of four from this address; the flood beyond it is refused
    // with 503 and Retry-After, as JSON.
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(tokio_tungstenite::connect_async(&url).await.expect("under the cap").0);
    }
    for _ in 0..20 {
        match tokio_tungstenite::connect_async(&url).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 503);
                assert_eq!(response.headers()["retry-after"], "5");
                let body: Value = serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
                assert_eq!(body["code"], "UNAVAILABLE", "{body}");
            }
            other => panic!("a connection beyond the cap was not refused: {other:?}"),
        }
    }
    assert_eq!(refused(&server, "address_cap").await, 20.0);
    // The connected clients keep playing; a closed connection gives its place back.
    play(&mut alice, &mut bob, &m, 0, 3).await;
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_again, _) = tokio_tungstenite::connect_async(&url).await.expect("a freed place is taken");
    play(&mut bob, &mut alice, &m, 1, 4).await;

    // The process's cap counts every address.
    let server = Server::start(&["--max-connections", "2"]);
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    let token = server.token("mallory").await;
    let url = format!("ws://{}/v1/ws?access_token={token}", server.addr);
    match tokio_tungstenite::connect_async(&url).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => assert_eq!(response.status(), 503),
        other => panic!("a connection beyond the process cap was not refused: {other:?}"),
    }
    assert_eq!(refused(&server, "process_cap").await, 1.0);
    play(&mut alice, &mut bob, &m, 0, 3).await;
}

/// One token opening connection after connection is refused beyond the principal's cap (429,
/// over WebSocket and Socket.IO alike), while the same principal's connected tabs and other
/// principals from the same address keep playing; a spectator's grant is not counted.
#[tokio::test]
async fn one_principal_flooding_connections_is_refused_beyond_its_cap() {
    let server = Server::start(&["--max-connections-per-principal", "3"]);
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    let alice_url = format!("ws://{}/v1/ws?access_token={}", server.addr, server.token("alice").await);
    let mut tabs = Vec::new();
    for _ in 0..2 {
        tabs.push(tokio_tungstenite::connect_async(&alice_url).await.expect("under the cap").0);
    }
    for _ in 0..10 {
        match tokio_tungstenite::connect_async(&alice_url).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 429);
                let body: Value = serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
                assert_eq!(body["code"], "RATE_LIMITED", "{body}");
            }
            other => panic!("a connection beyond the principal's cap was not refused: {other:?}"),
        }
    }
    assert_eq!(refused(&server, "principal_cap").await, 10.0);
    let carol = format!("ws://{}/v1/ws?access_token={}", server.addr, server.token("carol").await);
    let _carol = tokio_tungstenite::connect_async(&carol).await.expect("another principal, same address");
    let (status, grant) = server.http("POST", &format!("/v1/matches/{m}/spectators"), Some(json!({}))).await;
    assert_eq!(status, 201, "{grant}");
    let watch = format!("ws://{}/v1/ws?access_token={}", server.addr, grant["token"].as_str().unwrap());
    let mut watchers = Vec::new();
    for _ in 0..5 {
        watchers.push(tokio_tungstenite::connect_async(&watch).await.expect("spectators are not counted").0);
    }
    play(&mut alice, &mut bob, &m, 0, 3).await;
    drop(tabs.pop());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_again, _) = tokio_tungstenite::connect_async(&alice_url).await.expect("a freed place is taken");
    play(&mut bob, &mut alice, &m, 1, 4).await;
}

/// The HTTP layer under a flood from one address: connections beyond its cap are closed
/// before a byte is read (upgraded ones leave the count, so a player's WebSockets are not
/// bounded by it), a body trickled slower than its timeout is answered 408 and its memory
/// given back, and a JSON body over 256 KiB is refused 413 — while a connected client plays.
#[tokio::test]
async fn http_connection_floods_slow_bodies_and_large_bodies_are_bounded() {
    let server = Server::start(&["--max-http-connections-per-address", "8", "--body-timeout-ms", "500"]);
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    // Idle connections: eight are held, the rest closed at once.
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(TcpStream::connect(server.addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for _ in 0..5 {
        let mut extra = TcpStream::connect(server.addr).await.unwrap();
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(2), extra.read(&mut byte)).await;
        assert!(matches!(read, Ok(Ok(0) | Err(_))), "a connection beyond the cap was kept: {read:?}");
    }
    play(&mut alice, &mut bob, &m, 0, 3).await;
    drop(idle);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(refused(&server, "http_address_cap").await >= 5.0);
    // Upgraded connections are the client connections' to count: more than eight play.
    let url = format!("ws://{}/v1/ws?access_token={}", server.addr, server.token("carol").await);
    let mut sockets = Vec::new();
    for _ in 0..12 {
        sockets.push(tokio_tungstenite::connect_async(&url).await.expect("an upgraded connection").0);
    }
    drop(sockets);
    tokio::time::sleep(Duration::from_millis(200)).await;

    // A body that trickles: 408 once its time is up.
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST /v1/matches HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{",
        server.addr
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("REQUEST_TIMEOUT") && started.elapsed() < Duration::from_secs(3), "{answer}");
    assert_eq!(refused(&server, "body_timeout").await, 1.0);

    // A body over the JSON limit.
    let config = "x".repeat(300 << 10);
    let (status, body) = server
        .http(
            "POST",
            "/v1/matches",
            Some(json!({"game": "conecta4", "seats": {"p0": "a", "p1": "b"}, "config": {"pad": config}})),
        )
        .await;
    assert_eq!((status, body["code"].as_str()), (413, Some("PAYLOAD_TOO_LARGE")), "{status}");
    play(&mut bob, &mut alice, &m, 1, 4).await;
}

/// Socket.IO handshakes allocate a session before any token is read: an address's new
/// sessions beyond its allowance are refused 429 before they are allocated, and a session
/// that joins nothing is gone after the head timeout — while a connected client plays.
#[tokio::test]
async fn a_flood_of_socket_io_handshakes_is_bounded() {
    let server = Server::start(&["--sessions-per-second", "1", "--session-burst", "3", "--head-timeout-ms", "500"]);
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    let addr = server.addr.to_string();
    let handshake = "/socket.io/?EIO=4&transport=polling";
    let mut sids = Vec::new();
    for _ in 0..3 {
        let (status, _, body) = crate::client::http_with(&addr, "GET", handshake, &[], b"").await;
        assert_eq!(status, 200, "{body}");
        let open: Value = serde_json::from_str(body.trim_start_matches('0')).expect("an engine.io open packet");
        sids.push(open["sid"].as_str().unwrap().to_owned());
    }
    for _ in 0..5 {
        let (status, head, body) = crate::client::http_with(&addr, "GET", handshake, &[], b"").await;
        assert_eq!(status, 429, "{body}");
        assert!(head.contains("retry-after: 5") && body.contains("RATE_LIMITED"), "{head}{body}");
    }
    assert_eq!(refused(&server, "session_rate").await, 5.0);
    // A session's own requests are not handshakes; one that joined nothing is gone.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let poll = format!("/socket.io/?EIO=4&transport=polling&sid={}", sids[0]);
    let (status, _, body) = crate::client::http_with(&addr, "GET", &poll, &[], b"").await;
    assert_ne!(status, 429, "{body}");
    assert_ne!(status, 200, "a session that joined nothing is still open: {body}");
    play(&mut alice, &mut bob, &m, 0, 3).await;
}

#[tokio::test]
async fn an_address_closed_for_abuse_too_often_is_refused_429_while_its_connected_clients_play() {
    let server = Server::start(&["--abusive-close-burst", "2", "--abusive-closes-per-minute", "6"]);
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    let token = server.token("mallory").await;
    let url = format!("ws://{}/v1/ws?access_token={token}", server.addr);
    // Honest reconnections are never refused, however fast.
    for _ in 0..20 {
        let (ws, _) = tokio_tungstenite::connect_async(&url).await.expect("an honest reconnection");
        drop(ws);
    }
    // Two connections closed 1009 for an oversized message use the allowance up...
    for _ in 0..2 {
        let mut s = raw_ws(&server, "mallory").await;
        s.write_all(&client_frame(0x81, &vec![b'x'; 200_000])).await.expect("send");
        assert_eq!(close_code_in(&until_closed(&mut s, Duration::from_secs(5)).await), Some(1009));
    }
    assert_eq!(refused(&server, "too_large").await, 2.0);
    // ...so the address's next connection is refused with 429 and Retry-After, as JSON.
    match tokio_tungstenite::connect_async(&url).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 429);
            assert_eq!(response.headers()["retry-after"], "5");
            let body: Value = serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
            assert_eq!(body["code"], "RATE_LIMITED", "{body}");
        }
        other => panic!("a connection from an abusive address was not refused: {other:?}"),
    }
    assert_eq!(refused(&server, "abusive_address").await, 1.0);
    // The connections it already holds keep playing.
    play(&mut alice, &mut bob, &m, 0, 3).await;
    play(&mut bob, &mut alice, &m, 1, 4).await;
}

#[tokio::test]
async fn a_slowloris_http_head_is_closed_after_the_timeout() {
    let server = Server::start(&["--head-timeout-ms", "500"]);
    let mut slow = TcpStream::connect(server.addr).await.expect("connect");
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").await.expect("write");
    // One header byte every 100 ms: the head never completes within the timeout.
    let dribble = async {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if slow.write_all(b"X").await.is_err() {
                return;
            }
        }
    };
    let closed = tokio::time::timeout(Duration::from_secs(5), dribble).await;
    assert!(closed.is_ok(), "the slow head's connection was closed");
    // Others are served meanwhile and after; the refusal is counted once.
    let (status, _) = server.http("GET", "/v1/games", None).await;
    assert_eq!(status, 200);
    assert_eq!(refused(&server, "head_timeout").await, 1.0);
}

#[tokio::test]
async fn a_client_that_never_reads_is_closed_and_the_others_keep_being_served() {
    let server = Server::start(&["--outgoing-queue", "16", "--rate-limit", "1000000", "--rate-burst", "1000000"]);
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    let mut mallory = raw_ws(&server, "mallory").await;
    // Every message is answered (MALFORMED_MESSAGE) and mallory reads none of the answers:
    // once the socket's buffers are full, its queue overflows.
    let junk = client_frame(0x81, b"not json");
    let burst: Vec<u8> = junk.iter().copied().cycle().take(junk.len() * 1000).collect();
    let mut overflowed = false;
    for _ in 0..200 {
        if mallory.write_all(&burst).await.is_err() {
            overflowed = true;
            break;
        }
        if refused(&server, "slow_reader").await >= 1.0 {
            overflowed = true;
            break;
        }
    }
    // With no room in its queue, the server waits a moment (2 s) for the client to read
    // before it gives up on it; the kernel's buffers may have taken every byte by then.
    for _ in 0..100 {
        if overflowed {
            break;
        }
        overflowed = refused(&server, "slow_reader").await >= 1.0;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(overflowed, "the server never gave up on a client that does not read");
    // The others are served while and after the slow reader is dropped.
    play(&mut alice, &mut bob, &m, 0, 3).await;
    until_closed(&mut mallory, Duration::from_secs(10)).await;
    assert_eq!(refused(&server, "slow_reader").await, 1.0);
    play(&mut bob, &mut alice, &m, 1, 4).await;
}

#[tokio::test]
async fn a_silent_websocket_and_a_slowloris_frame_are_closed_after_the_idle_timeout() {
    let server = Server::start(&["--idle-timeout-ms", "800", "--ping-interval-ms", "200"]);
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    // A connection that sends nothing, and one that sends a frame a byte at a time.
    let mut silent = raw_ws(&server, "mallory").await;
    let mut slow = raw_ws(&server, "mallory").await;
    let frame = client_frame(0x81, &command(&m, &uuid(), 0, 3).to_string().into_bytes());
    let dribble = async {
        for byte in &frame {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if slow.write_all(&[*byte]).await.is_err() {
                return;
            }
        }
        panic!("the whole frame went out: the slow sender was never closed");
    };
    let abuse = async {
        tokio::time::timeout(Duration::from_secs(5), dribble).await.expect("the slow frame's sender was closed");
        until_closed(&mut silent, Duration::from_secs(5)).await
    };
    // Meanwhile clients that answer the pings (tungstenite does while it reads) stay, past
    // the timeout.
    let live = async {
        let until = tokio::time::Instant::now() + Duration::from_secs(3);
        while tokio::time::Instant::now() < until {
            let _ = alice.try_recv(100).await;
            let _ = bob.try_recv(100).await;
        }
    };
    let (got, ()) = tokio::join!(abuse, live);
    assert_eq!(close_code_in(&got), Some(1008), "{got:?}");
    assert!(refused(&server, "idle").await >= 2.0);
    play(&mut alice, &mut bob, &m, 0, 3).await;
    // Nothing the slow frame carried was applied: the next move is still at revision 1.
    play(&mut bob, &mut alice, &m, 1, 3).await;
}

#[tokio::test]
async fn an_oversized_message_closes_with_1009_whole_or_fragmented_and_nothing_is_applied() {
    // The default limit, 128 KiB.
    let server = Server::start(&[]);
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    // A move padded past the limit: one frame, then four fragments each under the limit.
    let padded = |n: usize| {
        let mut c = command(&m, &uuid(), 0, 3);
        c["pad"] = Value::String("x".repeat(n));
        c.to_string().into_bytes()
    };
    for fragmented in [false, true] {
        let mut mallory = server.connect("alice").await.into_ws();
        let body = padded(200_000);
        if fragmented {
            let chunks: Vec<&[u8]> = body.chunks(50_000).collect();
            for (i, chunk) in chunks.iter().enumerate() {
                let opcode = if i == 0 { OpCode::Data(Data::Text) } else { OpCode::Data(Data::Continue) };
                let header = FrameHeader { is_final: i + 1 == chunks.len(), opcode, ..FrameHeader::default() };
                let frame = Frame::from_payload(header, chunk.to_vec().into());
                if mallory.send(Message::Frame(frame)).await.is_err() {
                    break;
                }
            }
        } else {
            let _ = mallory.send(Message::Text(String::from_utf8(body).unwrap().into())).await;
        }
        let closed = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match mallory.next().await {
                    Some(Ok(Message::Close(Some(frame)))) => return Some(frame.code),
                    Some(Ok(_)) => continue,
                    _ => return None,
                }
            }
        })
        .await
        .expect("the server closed the connection");
        assert_eq!(closed, Some(CloseCode::Size), "fragmented: {fragmented}");
    }
    assert_eq!(refused(&server, "too_large").await, 2.0);
    // Nothing was applied: the first move of the match is still at revision 0.
    play(&mut alice, &mut bob, &m, 0, 3).await;
}

#[tokio::test]
async fn a_command_storm_on_one_match_is_rate_limited_while_another_match_is_served() {
    let server = Server::start(&["--rate-limit", "50", "--rate-burst", "100", "--rate-sustained", "1000"]);
    let (storm, mut mallory, _victim) = playing(&server, "mallory", "victim").await;
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    // 400 commands at once: the burst goes through (COMMAND_PENDING or stale answers), the
    // rest is answered RATE_LIMITED with its recovery, and the connection stays.
    for _ in 0..400 {
        mallory.send(&command(&storm, &uuid(), 0, 3)).await;
    }
    play(&mut alice, &mut bob, &m, 0, 3).await;
    let mut limited = 0;
    for _ in 0..400 {
        let v = mallory.recv().await;
        if v["code"] == "RATE_LIMITED" {
            assert_eq!(v["recovery"], "retry-same-command", "{v}");
            limited += 1;
        }
    }
    assert!(limited >= 250, "{limited} of 400 limited");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(mallory.sync_answer(&storm, "still").await["type"], "game.snapshot", "a burst does not disconnect");
    play(&mut bob, &mut alice, &m, 1, 3).await;
    // A storm that goes on is closed with 1008.
    let mut ws = mallory.into_ws();
    let storm_text = command(&storm, &uuid(), 0, 3).to_string();
    let mut closed = None;
    'storm: for _ in 0..5_000 {
        if ws.send(Message::Text(storm_text.clone().into())).await.is_err() {
            break;
        }
        while let Ok(Some(next)) = tokio::time::timeout(Duration::from_millis(0), ws.next()).await {
            match next {
                Ok(Message::Close(frame)) => {
                    closed = frame.map(|f| f.code);
                    break 'storm;
                }
                Ok(_) => {}
                Err(_) => break 'storm,
            }
        }
    }
    if closed.is_none() {
        closed = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(Ok(next)) = ws.next().await {
                if let Message::Close(frame) = next {
                    return frame.map(|f| f.code);
                }
            }
            None
        })
        .await
        .expect("the storming connection was closed");
    }
    assert_eq!(closed, Some(CloseCode::Policy));
    assert_eq!(refused(&server, "rate_sustained").await, 1.0);
    play(&mut alice, &mut bob, &m, 2, 4).await;
}

#[tokio::test]
async fn malformed_frames_never_crash_the_process() {
    let server = Server::start(&[]);
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    let bad: Vec<Vec<u8>> = vec![
        // Reserved bits, reserved opcodes, an unmasked client frame.
        client_frame(0xf1, b"{}"),
        client_frame(0x83, b"{}"),
        client_frame(0x8b, b"{}"),
        vec![0x81, 0x02, b'{', b'}'],
        // Invalid UTF-8 in a text frame, a continuation with nothing to continue.
        client_frame(0x81, &[0xff, 0xfe, 0xfd]),
        client_frame(0x80, b"{}"),
        // A fragmented control frame, a ping over 125 bytes, a close with a bad code.
        client_frame(0x09, b"x"),
        client_frame(0x89, &[b'x'; 200]),
        client_frame(0x88, &[0x03, 0xe7]),
        // A length of 2^63 - 1, and a new message inside a fragmented one.
        {
            let mut f = vec![0x81, 0x80 | 127];
            f.extend_from_slice(&(i64::MAX as u64).to_be_bytes());
            f.extend_from_slice(&[0, 0, 0, 0]);
            f
        },
        [client_frame(0x01, b"{"), client_frame(0x81, b"}")].concat(),
        // Binary and empty text frames, then garbage.
        client_frame(0x82, &[0, 1, 2]),
        client_frame(0x81, b""),
        b"\x00\x01\x02 not a frame at all".to_vec(),
    ];
    for frame in &bad {
        let mut s = raw_ws(&server, "mallory").await;
        let _ = s.write_all(frame).await;
        let _ = tokio::time::timeout(Duration::from_millis(300), s.read(&mut [0u8; 1024])).await;
    }
    // The process is up and the match goes on.
    let (status, _) = server.http("GET", "/healthz", None).await;
    assert_eq!(status, 200);
    play(&mut alice, &mut bob, &m, 0, 3).await;
}

#[tokio::test]
async fn a_connection_may_not_pile_up_subscriptions() {
    let server = Server::start(&["--max-subscriptions", "3"]);
    let (m, mut alice, mut bob) = playing(&server, "alice", "bob").await;
    // `playing` synced once; two more fit, the fourth is refused until one is unsubscribed.
    let mut ids = Vec::new();
    for i in 0..2 {
        let snap = alice.sync_answer(&m, &format!("more-{i}")).await;
        assert_eq!(snap["type"], "game.snapshot", "{snap}");
        ids.push(snap["subscriptionId"].as_str().unwrap().to_owned());
    }
    let refused_sync = alice.sync_answer(&m, "one-too-many").await;
    assert_eq!(refused_sync["code"], "RATE_LIMITED", "{refused_sync}");
    assert_eq!(refused(&server, "subscriptions").await, 1.0);
    alice.send(&json!({"protocolVersion":1,"type":"game.unsubscribe","matchId":m,"subscriptionId":ids[0]})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(alice.sync_answer(&m, "after").await["type"], "game.snapshot");
    play(&mut alice, &mut bob, &m, 0, 3).await;
}

#[tokio::test]
async fn a_socket_io_connect_beyond_the_cap_gets_a_connect_error() {
    use tokio_tungstenite::tungstenite::Message;

    let server = Server::start(&["--max-connections", "1"]);
    let addr = server.addr.to_string();
    let token = server.token("alice").await;
    let mut first = crate::socketio::raw_socket_io(&addr, &token, false).await;
    // The second session's engine.io handshake works; its namespace CONNECT is refused.
    let stream = TcpStream::connect(&addr).await.expect("connect");
    let url = format!("ws://{addr}/socket.io/?EIO=4&transport=websocket");
    let (mut second, _) = tokio_tungstenite::client_async(url, stream).await.expect("websocket handshake");
    let open = crate::socketio::next_packet(&mut second).await.expect("the engine.io open packet");
    assert!(open.starts_with('0'), "{open}");
    second.send(Message::Text(format!("40{}", json!({ "token": token })).into())).await.expect("send CONNECT");
    let refused_connect = crate::socketio::next_packet(&mut second).await.expect("the CONNECT answer");
    assert!(refused_connect.starts_with("44") && refused_connect.contains("UNAVAILABLE"), "{refused_connect}");
    assert_eq!(refused(&server, "process_cap").await, 1.0);
    // The first session still works: an unknown event is answered.
    first.send(Message::Text(r#"42["game.nope",{}]"#.into())).await.expect("emit");
    let answer = crate::socketio::next_packet(&mut first).await.expect("an answer");
    assert!(answer.contains("MALFORMED_MESSAGE"), "{answer}");
}
