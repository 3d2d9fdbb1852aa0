//! The protocol over Socket.IO, spoken by a client from the JavaScript ecosystem:
//! `socket.io-client` from npm, run with node (`tests/js/play.mjs`). Two players play a
//! whole Conecta 4 match through a gateway of the cluster, and clients without a valid token
//! are refused with UNAUTHENTICATED.
//!
//! The tests need Node.js 20+ and npm; they install `tests/js/node_modules` with `npm ci`
//! when it is missing or was installed from another `package-lock.json`, and FAIL (never
//! skip) when node or npm are unavailable. `page.rs` shares these helpers.

use std::path::PathBuf;
use std::process::{Command, Output};

use juegoland_edge::Tokens;

use crate::client::Server;
use crate::harness::{Cluster, Seen, audit, create, metric_sum};

/// The directory of the JavaScript client tests.
pub(crate) fn js_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js")
}

/// Runs `program` in the JavaScript directory; a missing program fails the test with what to
/// install.
pub(crate) fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program).args(args).current_dir(js_dir()).output().unwrap_or_else(|e| {
        panic!("cannot run `{program}` ({e}): the JavaScript client tests need Node.js 20+ and npm on the PATH")
    })
}

/// Makes sure the packages of `tests/js/package-lock.json` are installed ([`npm_ci`]).
pub(crate) fn ensure_node_modules() {
    let version = run("node", &["--version"]);
    assert!(version.status.success(), "`node --version` failed: {}", String::from_utf8_lossy(&version.stderr));
    npm_ci(&js_dir(), "juegoland-npm-ci.lock");
}

/// Makes sure the packages of `dir`'s `package-lock.json` are installed, running `npm ci`
/// there when `node_modules` is missing or was installed from another lock. Test processes
/// may run concurrently, so the check and the install hold the file lock `lock_name`.
pub(crate) fn npm_ci(dir: &std::path::Path, lock_name: &str) {
    let lock_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(lock_name);
    let lock = std::fs::File::create(&lock_path).expect("create the npm lock file");
    lock.lock().expect("lock the npm lock file");
    // A copy of the lock written after a complete install marks what is installed (`npm ci`
    // removes node_modules first, and the copy with it).
    let wanted = std::fs::read(dir.join("package-lock.json")).expect("read package-lock.json");
    let stamp = dir.join("node_modules/.juegoland-installed-lock.json");
    if std::fs::read(&stamp).ok().as_deref() != Some(wanted.as_slice()) {
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| panic!("cannot run `npm` ({e}): the JavaScript tests need Node.js 20+ and npm"));
        assert!(
            out.status.success(),
            "`npm ci` in {} failed:\n{}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&stamp, &wanted).expect("write the node_modules stamp");
    }
}

/// Runs `play.mjs` with `args` and fails the test with its output unless it succeeds.
fn play(args: &[&str]) -> String {
    ensure_node_modules();
    let mut all = vec!["play.mjs"];
    all.extend_from_slice(args);
    let out = run("node", &all);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "node play.mjs {:?} failed ({}):\n{stdout}{stderr}", args, out.status);
    stdout.into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_io_client_from_npm_plays_a_match_through_the_cluster() {
    let secret = "socketio-test-secret-0123456789abcdef0123456789";
    let (cluster, gateway) = Cluster::start_with_gateway("socketio", 2, secret, &Cluster::shared_redis()).await;
    let tokens = Tokens::new(secret.as_bytes(), 600).unwrap();
    let mut router = cluster.client(0).await;
    let m = create(&mut router).await.to_string();
    let (alice, bob) = (tokens.issue("alice").unwrap(), tokens.issue("bob").unwrap());
    let url = gateway.http.clone();

    // node blocks; the cluster runs in its own processes.
    let out = tokio::task::spawn_blocking(move || play(&[&url, &m, &alice, &bob])).await.expect("the node run");
    assert!(out.contains("p0 (alice) won at revision 7"), "{out}");
    let metrics = gateway.get("/metrics").await;
    assert!(metrics.contains("juegoland_gateway_messages_total{type=\"game.command\"} 7"), "{metrics}");
    assert!(metrics.contains("juegoland_gateway_errors_total{code=\"MALFORMED_MESSAGE\"} 3"), "{metrics}");
    // The clients disconnected: their loops ended and their subscriptions were aborted.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let metrics = gateway.get("/metrics").await;
        let open = metric_sum(&metrics, "juegoland_gateway_connections")
            + metric_sum(&metrics, "juegoland_gateway_subscriptions");
        if open == 0.0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "connections or subscriptions left open:\n{metrics}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    audit(&cluster, &Seen::default()).await;
    drop(gateway);
    cluster.stop().await;
}

#[tokio::test]
async fn a_socket_io_client_without_a_valid_token_gets_unauthenticated() {
    let server = Server::start(&[]);
    let url = format!("http://{}", server.addr);
    let out = tokio::task::spawn_blocking(move || play(&["--unauthenticated", &url])).await.expect("the node run");
    assert!(out.contains("get UNAUTHENTICATED and are disconnected"), "{out}");
}

pub(crate) type RawSocket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// A Socket.IO client by hand — engine.io v4 text packets over a WebSocket — for what
/// socket.io-client cannot be made to do: stop reading. Connected to namespace `/` with
/// `token`; `small_buffer` asks for a 4 KiB receive buffer, so that not reading fills it fast.
pub(crate) async fn raw_socket_io(addr: &str, token: &str, small_buffer: bool) -> RawSocket {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;

    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    if small_buffer {
        socket.set_recv_buffer_size(4096).unwrap();
    }
    let stream = socket.connect(addr.parse().unwrap()).await.expect("connect to the gateway");
    let url = format!("ws://{addr}/socket.io/?EIO=4&transport=websocket");
    let (mut ws, _) = tokio_tungstenite::client_async(url, stream).await.expect("websocket handshake");
    let open = next_packet(&mut ws).await.expect("the engine.io open packet");
    assert!(open.starts_with('0'), "{open}");
    let connect = format!("40{}", serde_json::json!({ "token": token }));
    ws.send(Message::Text(connect.into())).await.expect("send CONNECT");
    let connected = next_packet(&mut ws).await.expect("the CONNECT answer");
    assert!(connected.starts_with("40"), "{connected}");
    ws
}

/// The next engine.io text packet (10 s timeout), answering pings on the way; `None` when
/// the connection ends or the server closes the WebSocket.
pub(crate) async fn next_packet(ws: &mut RawSocket) -> Option<String> {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    loop {
        let message = tokio::time::timeout(std::time::Duration::from_secs(10), ws.next())
            .await
            .expect("a packet or the end within 10 s");
        match message {
            Some(Ok(Message::Text(t))) if t.as_str() == "2" => {
                // A ping; a closed connection shows at the next read.
                let _ = ws.send(Message::Text("3".into())).await;
            }
            Some(Ok(Message::Text(t))) => return Some(t.as_str().to_owned()),
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return None,
            Some(Ok(_)) => continue,
        }
    }
}

/// A Socket.IO client that keeps emitting but never reads: once more than the session's 256
/// packets wait for it, its protocol loop ends (the gateway queues nothing more for it) and
/// it is disconnected as soon as the DISCONNECT packet fits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_io_client_that_does_not_read_is_disconnected() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;

    let secret = "socketio-stubborn-secret-0123456789abcdef0123456789";
    let (cluster, gateway) =
        Cluster::start_with_gateway("socketio_stubborn", 1, secret, &Cluster::shared_redis()).await;
    let tokens = Tokens::new(secret.as_bytes(), 600).unwrap();
    let addr = gateway.http.trim_start_matches("http://").to_owned();
    let mut mallory = raw_socket_io(&addr, &tokens.issue("mallory").unwrap(), true).await;
    crate::gateway::wait_for_connections(&gateway, 1.0).await;
    // An event that is no client message: each is answered with a game.error event. In
    // small batches, so the loop keeps up with what comes in and the answers pile up.
    let mut sent = 0;
    'flood: loop {
        for _ in 0..20 {
            if mallory.send(Message::Text(r#"42["game.nope",{}]"#.into())).await.is_err() {
                // The gateway has dropped the connection already.
                break 'flood;
            }
            sent += 1;
        }
        let open = metric_sum(&gateway.get("/metrics").await, "juegoland_gateway_connections");
        if open == 0.0 {
            break;
        }
        assert!(sent < 50_000, "mallory's loop still runs after {sent} unread answers");
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    println!("mallory's loop ended after {sent} events");
    crate::gateway::wait_for_connections(&gateway, 0.0).await;
    // Reading at last, mallory finds the answers that fitted, then the disconnect.
    let mut packets = 0;
    loop {
        match next_packet(&mut mallory).await {
            Some(p) if p.starts_with("41") || p == "1" => break,
            Some(_) => packets += 1,
            None => break,
        }
    }
    println!("mallory read {packets} packets before the disconnect");
    drop(gateway);
    cluster.stop().await;
}

/// SIGTERM: every Socket.IO session is closed by socketioxide (an engine.io close packet, so
/// clients reconnect elsewhere rather than being told to stay away) and the gateway exits
/// cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_closes_socket_io_sessions() {
    let secret = "socketio-sigterm-secret-0123456789abcdef0123456789";
    let (cluster, mut gateway) =
        Cluster::start_with_gateway("socketio_sigterm", 1, secret, &Cluster::shared_redis()).await;
    let tokens = Tokens::new(secret.as_bytes(), 600).unwrap();
    let addr = gateway.http.trim_start_matches("http://").to_owned();
    let mut carol = raw_socket_io(&addr, &tokens.issue("carol").unwrap(), false).await;
    crate::gateway::wait_for_connections(&gateway, 1.0).await;

    crate::harness::signal(gateway.pid(), "-TERM");
    let mut closed = None;
    while let Some(packet) = next_packet(&mut carol).await {
        if packet == "1" || packet.starts_with("41") {
            closed = Some(packet);
            break;
        }
    }
    assert_eq!(closed.as_deref(), Some("1"), "an engine.io close packet, not a namespace disconnect");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = gateway.child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "the gateway did not exit after SIGTERM");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(status.success(), "the gateway exited with {status}");
    drop(gateway);
    cluster.stop().await;
}
