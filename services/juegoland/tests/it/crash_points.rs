//! A SIGKILL at each step of a group commit (the crash points of `libs/store/src/crash.rs`),
//! on both backends, while matches are played concurrently so that batches carry commits of
//! several matches: after a restart no acknowledged command is lost, none took effect twice,
//! a command that got no answer took effect once or not at all (its status says which, and a
//! retry agrees), the publications the crash held back are dispatched, and every match
//! replays to its stored state (the store audit).

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;

use juegoland_store::audit::SeenApplied;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::client::{Client, Server, command, data_dir, uuid};
use crate::durability::Backend;

/// Matches played at once: enough for batches of several commits.
const MATCHES: usize = 12;

#[tokio::test]
async fn sigkill_when_an_embedded_batch_is_taken() {
    sigkill_at(Backend::Embedded, "store-batch-taken").await;
}

#[tokio::test]
async fn sigkill_after_one_commit_of_an_embedded_batch_is_written() {
    sigkill_at(Backend::Embedded, "store-batch-commit-written").await;
}

#[tokio::test]
async fn sigkill_before_an_embedded_batch_commits() {
    sigkill_at(Backend::Embedded, "store-batch-before-commit").await;
}

#[tokio::test]
async fn sigkill_after_an_embedded_batch_commits_before_any_answer() {
    sigkill_at(Backend::Embedded, "store-batch-committed").await;
}

#[tokio::test]
async fn sigkill_when_a_postgres_batch_is_taken() {
    sigkill_on_postgres("store-batch-taken", "batch_taken").await;
}

#[tokio::test]
async fn sigkill_after_a_postgres_batch_commits_before_any_answer() {
    sigkill_on_postgres("store-batch-committed", "batch_committed").await;
}

#[tokio::test]
async fn sigkill_before_postgres_watermarks_commit() {
    sigkill_on_postgres("store-marks-before-commit", "marks").await;
}

async fn sigkill_on_postgres(point: &str, test: &str) {
    let schema = juegoland_testkit::TestSchema::create("juegoland_crash", test).await;
    sigkill_at(Backend::Postgres(Box::new(schema)), point).await;
}

/// One command a player sent before the crash, and its answer if one came.
struct Sent {
    match_id: String,
    principal: String,
    command: Value,
    /// The revision of a `game.ack` that said applied.
    acked: Option<u64>,
    /// A `game.ack` that said something else, or a `game.error` (the match had ended).
    refused: bool,
}

async fn sigkill_at(backend: Backend, point: &str) {
    let dir = data_dir();
    let args = backend.args();
    let args_ref: Vec<&str> = args.iter().map(String::as_str).collect();
    // The matches are created (and their tokens minted) by a server without crash points,
    // so the armed one below reaches its points only through play: every batch it writes is
    // moves and their dispatched marks, from many matches at once.
    let mut matches = Vec::new();
    {
        let server = Server::start_in(&dir, &args_ref);
        for i in 0..MATCHES {
            let seats = [format!("a{i}"), format!("b{i}")];
            let m = server.create(json!({ "p0": seats[0], "p1": seats[1] })).await;
            let tokens = [server.token(&seats[0]).await, server.token(&seats[1]).await];
            matches.push((m, seats, tokens));
        }
    }
    // The 11th time a batch's point is reached, with play in full swing (twelve matches of
    // a few dozen moves make well over 11 batches even if every batch took a move of each).
    // The watermarks' transaction comes once per `mark_interval` (200 ms) with marks to
    // write, and the matches may finish in a few of those: its first.
    // The point inside a batch is reached once per commit, up to twelve times a batch, so
    // its 11th time could be the first batch's: its 61st is several batches into play.
    let arm = match point {
        "store-marks-before-commit" => format!("{point}=return"),
        "store-batch-commit-written" => format!("{point}=60*off->return"),
        _ => format!("{point}=10*off->return"),
    };
    let server = Server::start_in_with_env(&dir, &args_ref, &[("FAILPOINTS", &arm)]);
    let players: Vec<_> = matches
        .into_iter()
        .map(|(m, seats, tokens)| tokio::spawn(play(server.addr.to_string(), m, seats, tokens)))
        .collect();
    let mut sent = Vec::new();
    for p in players {
        sent.extend(p.await.expect("a player task"));
    }
    let status = server.wait_exit();
    assert_eq!(status.signal(), Some(9), "the crash point {point} killed the server: {status:?}");
    // Play was under way: something took effect before the kill (checked below, once the
    // store is read again). How much of it was answered depends on the machine's load: the
    // answers to committed batches may still be on their way when the kill comes (a full run
    // once saw 2 after ten batches, another none), and the checks below hold every command
    // sent, answered or not, to its rule.
    let mut took_effect = sent.iter().filter(|s| s.acked.is_some()).count();

    let server = Server::start_in(&dir, &args_ref);
    let mut clients: BTreeMap<String, Client> = BTreeMap::new();
    let mut seen = Vec::new();
    for s in &sent {
        if s.refused {
            continue;
        }
        if !clients.contains_key(&s.principal) {
            clients.insert(s.principal.clone(), server.connect(&s.principal).await);
        }
        let client = clients.get_mut(&s.principal).expect("connected");
        let id = &s.command["commandId"];
        client
            .send(&json!({"protocolVersion":1,"type":"game.command-status","matchId":s.match_id,"commandId":id}))
            .await;
        let status = answer_to(client, id).await;
        let stored = (status["type"] == "game.ack").then(|| {
            assert_eq!(status["status"], "applied", "{status}");
            status["revision"].as_u64().expect("revision")
        });
        if let Some(revision) = s.acked {
            assert_eq!(stored, Some(revision), "an acknowledged command survives the crash: {status}");
            continue;
        }
        // No answer before the crash: a retry of the same command agrees with its status.
        assert!(stored.is_some() || status["type"] == "game.command-unknown", "{status}");
        took_effect += usize::from(stored.is_some());
        client.send(&s.command).await;
        let retry = answer_to(client, id).await;
        let expected = s.command["precondition"]["revision"].as_u64().expect("precondition") + 1;
        assert_eq!(
            (retry["status"].as_str(), retry["revision"].as_u64(), retry["duplicate"].as_bool()),
            (Some("applied"), Some(expected), Some(stored.is_some())),
            "the retry of a command that {} before the crash: {retry}",
            if stored.is_some() { "took effect" } else { "had not taken effect" }
        );
        seen.push(seen_applied(s, expected));
    }
    assert!(took_effect >= 1, "play was under way when {point} struck: no command had taken effect");
    seen.extend(sent.iter().filter_map(|s| s.acked.map(|r| seen_applied(s, r))));
    // The sweeper (every second) dispatches what the crash held back.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    drop(clients);
    drop(server);

    let store = backend.store(&dir).await;
    assert!(
        store.undispatched(100, std::time::Duration::ZERO).await.unwrap().is_empty(),
        "every publication was dispatched"
    );
    let ids: BTreeSet<Uuid> = sent.iter().map(|s| s.match_id.parse().unwrap()).collect();
    let registry = juegoland_catalog::registry().expect("the catalog");
    let report = juegoland_store::audit::audit(&*store, &registry, &seen, Some(&ids)).await.expect("read the store");
    assert!(report.passed(), "the audit after a SIGKILL at {point}: {:?}", report.problems);
    // Every revision is a command a client knows applied: nothing took effect unseen.
    let mut applied: BTreeMap<Uuid, u64> = BTreeMap::new();
    seen.iter().for_each(|s| *applied.entry(s.match_id).or_default() += 1);
    for id in &ids {
        let stored = store.load(*id).await.unwrap().expect("stored").revision();
        assert_eq!(stored, applied.get(id).copied().unwrap_or(0), "match {id}'s revisions are its applied commands");
    }
    drop(store);
    if let Backend::Postgres(schema) = backend {
        schema.drop_schema().await;
    }
}

fn seen_applied(s: &Sent, revision: u64) -> SeenApplied {
    SeenApplied {
        match_id: s.match_id.parse().unwrap(),
        principal: s.principal.clone(),
        command_id: s.command["commandId"].as_str().unwrap().parse().unwrap(),
        revision,
    }
}

/// The answer to the command `id` on `client` (other messages are passed over).
async fn answer_to(client: &mut Client, id: &Value) -> Value {
    loop {
        let v = client.recv().await;
        if v["commandId"] == *id && v["type"] != "game.snapshot" {
            return v;
        }
    }
}

/// Plays match `m` from its two seats (`rev % 7` as the column: a few dozen moves to a win)
/// until the server dies or the match ends; every command sent, with its answer if any.
async fn play(addr: String, m: String, seats: [String; 2], tokens: [String; 2]) -> Vec<Sent> {
    let mut clients = Vec::new();
    for token in &tokens {
        clients.push(Client::connect_to(&addr, token).await);
    }
    let mut sent = Vec::new();
    for revision in 0u64.. {
        let seat = (revision % 2) as usize;
        let cmd = command(&m, &uuid(), revision, revision % 7);
        let client = &mut clients[seat];
        if !client.try_send(&cmd).await {
            break;
        }
        let mut entry =
            Sent { match_id: m.clone(), principal: seats[seat].clone(), command: cmd, acked: None, refused: false };
        let answer = loop {
            match client.try_recv(10_000).await {
                None => break None,
                Some(v) if v["type"] == "game.error" => break Some(v),
                Some(v) if v["type"] == "game.ack" && v["commandId"] == entry.command["commandId"] => break Some(v),
                Some(_) => {}
            }
        };
        match answer {
            Some(a) if a["status"] == "applied" => entry.acked = a["revision"].as_u64(),
            Some(_) => entry.refused = true,
            None => {}
        }
        let go_on = entry.acked.is_some();
        sent.push(entry);
        if !go_on {
            break;
        }
    }
    sent
}
