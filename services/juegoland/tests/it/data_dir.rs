//! The data directory of `juegoland dev` as a new user meets it: one process at a time (a
//! second one refuses to start and names the first; a killed one leaves nothing locked),
//! the token secret kept across restarts, and `juegoland replay` refusing to pass over a
//! store that is not there.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use juegoland_testkit::TestSchema;
use serde_json::json;

use crate::client::{Client, Server, data_dir};

/// Runs the binary with `args` to its exit (at most 20 s: a process that should have refused
/// to start but serves instead fails the test rather than hanging it).
fn run_to_exit(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_juegoland"))
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the juegoland binary");
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("`juegoland {args:?}` is still running; stdout: {}", String::from_utf8_lossy(&out.stdout));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn dev_in(dir: &Path) -> Output {
    run_to_exit(&["dev", "--http", "127.0.0.1:0", "--data-dir", dir.to_str().unwrap()])
}

#[tokio::test]
async fn a_second_process_on_one_data_directory_refuses_to_start_and_names_the_first() {
    let dir = data_dir();
    let first = Server::start_in(&dir, &[]);
    let m = first.create(json!({ "p0": "alice", "p1": "bob" })).await;

    let second = dev_in(&dir);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "the second process must not start: {stderr}");
    assert!(stderr.contains("in use by another process"), "{stderr}");
    assert!(stderr.contains(&format!("pid {} (juegoland)", first.pid())), "names the holder: {stderr}");
    assert!(stderr.contains(&dir.join(juegoland_store::LOCK_FILE).display().to_string()), "names the lock: {stderr}");
    // Nor does `replay` open it under the server's feet.
    let replay = run_to_exit(&["replay", "--data-dir", dir.to_str().unwrap()]);
    assert!(!replay.status.success());
    assert!(String::from_utf8_lossy(&replay.stderr).contains("in use by another process"));

    // A killed holder leaves nothing locked: the next process starts and has the match.
    drop(first);
    let next = Server::start_in(&dir, &[]);
    let mut alice = next.connect("alice").await;
    assert_eq!(alice.sync(&m, "after").await["revision"], 0);
}

#[tokio::test]
async fn tokens_survive_a_restart_and_a_new_secret_is_made_only_when_asked() {
    let dir = data_dir();
    let server = Server::start_in(&dir, &[]);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let token = server.token("alice").await;
    drop(server);

    // A tab keeps its token across a restart of the process.
    let server = Server::start_in(&dir, &[]);
    let mut alice = Client::connect_to(&server.addr.to_string(), &token).await;
    assert_eq!(alice.sync(&m, "after-restart").await["revision"], 0);
    drop((alice, server));

    // Asked for a new secret, the old tokens are refused.
    let server = Server::start_in(&dir, &["--new-jwt-secret"]);
    let url = format!("ws://{}/v1/ws?access_token={token}", server.addr);
    match tokio_tungstenite::connect_async(url).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 401),
        other => panic!("expected the old token to be refused, got {other:?}"),
    }
    let fresh = server.token("alice").await;
    drop(server);
    let server = Server::start_in(&dir, &[]);
    Client::connect_to(&server.addr.to_string(), &fresh).await;

    // In memory, nothing is kept: no secret is written.
    let other = data_dir();
    let server = Server::start_in(&other, &["--in-memory"]);
    server.token("alice").await;
    assert!(!other.join("dev-token-secret").exists());
}

#[tokio::test]
async fn replay_of_a_missing_or_empty_store_fails_and_names_it() {
    let dir = data_dir();
    let typo = dir.join("typo");
    let cases: [(&Path, &str); 2] = [(&typo, "no such directory"), (&dir, "no database file")];
    for (path, why) in cases {
        let out = run_to_exit(&["replay", "--data-dir", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains(&path.display().to_string()) && stderr.contains(why), "{stderr}");
    }
    assert!(!typo.exists(), "replay created nothing");

    // A store that holds no match proves nothing either.
    drop(Server::start_in(&dir, &[]));
    let out = run_to_exit(&["replay", "--data-dir", dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("holds no matches") && stderr.contains(&dir.display().to_string()), "{stderr}");

    // A database without the schema.
    let schema = TestSchema::create("juegoland_e2e", "replay_no_schema").await;
    let out = run_to_exit(&["replay", "--database-url", &schema.url()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("no Juegoland schema"), "{stderr}");
    schema.drop_schema().await;
}

/// Only the data directory's owner reads it: the directory 0700, the database and its WAL
/// files and the token secret 0600 — a new directory, and one made world-readable by hand
/// before a restart.
#[tokio::test]
async fn the_data_directory_is_its_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let dir = data_dir();
    let fresh = dir.join("fresh");
    for round in 0..2 {
        let server = Server::start_in(&fresh, &[]);
        server.create(json!({ "p0": "alice", "p1": "bob" })).await;
        assert_eq!(mode(&fresh), 0o700, "round {round}: the directory");
        for file in ["juegoland.sqlite3", "juegoland.sqlite3-wal", "juegoland.sqlite3-shm", "dev-token-secret"] {
            let path = fresh.join(file);
            if path.exists() {
                assert_eq!(mode(&path), 0o600, "round {round}: {file}");
            } else {
                assert_ne!(file, "juegoland.sqlite3", "no database");
            }
        }
        drop(server);
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(fresh.join("juegoland.sqlite3"), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}

/// A token secret short enough to search offline for is refused at start, naming the flag.
#[test]
fn a_short_token_secret_is_refused() {
    for args in [
        &["dev", "--in-memory", "--http", "127.0.0.1:0", "--jwt-secret", "a"][..],
        &["dev", "--in-memory", "--http", "127.0.0.1:0", "--jwt-secret", "thirty-one-bytes-is-not-enough"],
    ] {
        let out = run_to_exit(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert!(stderr.contains("--jwt-secret") && stderr.contains("at least 32 bytes"), "{stderr}");
    }
}
