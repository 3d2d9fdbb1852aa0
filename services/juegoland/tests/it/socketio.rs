//! The protocol over Socket.IO, spoken by a client from the JavaScript ecosystem:
//! `socket.io-client` from npm, run with node (`tests/js/play.mjs`). Two players play a
//! whole Conecta 4 match through a gateway of the cluster, and clients without a valid token
//! are refused with UNAUTHENTICATED.
//!
//! The tests need Node.js 20+ and npm; they install `tests/js/node_modules` with `npm ci`
//! when it is missing and FAIL (never skip) when node or npm are unavailable.

use std::path::PathBuf;
use std::process::{Command, Output};

use juegoland_edge::Tokens;

use crate::client::Server;
use crate::harness::{Cluster, Seen, audit, create, metric_sum};

/// The directory of the JavaScript client tests.
fn js_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js")
}

/// Runs `program` in the JavaScript directory; a missing program fails the test with what to
/// install.
fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program).args(args).current_dir(js_dir()).output().unwrap_or_else(|e| {
        panic!("cannot run `{program}` ({e}): the Socket.IO tests need Node.js 20+ and npm on the PATH")
    })
}

/// Makes sure `socket.io-client` is installed, running `npm ci` once if it is not. Test
/// processes may run concurrently, so the check and the install hold a file lock.
fn ensure_node_modules() {
    let version = run("node", &["--version"]);
    assert!(version.status.success(), "`node --version` failed: {}", String::from_utf8_lossy(&version.stderr));
    let lock_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("juegoland-npm-ci.lock");
    let lock = std::fs::File::create(&lock_path).expect("create the npm lock file");
    lock.lock().expect("lock the npm lock file");
    // npm writes its hidden lockfile last, so it marks a complete install.
    if !js_dir().join("node_modules/.package-lock.json").exists() {
        let out = run("npm", &["ci", "--no-audit", "--no-fund"]);
        assert!(
            out.status.success(),
            "`npm ci` in {} failed:\n{}{}",
            js_dir().display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
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
    let secret = "socketio-test-secret";
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
