//! Structured logs: `juegoland dev` with `JUEGOLAND_LOG_FORMAT=json` (and its own crates at
//! `debug`) plays a whole Hundido match between two WebSocket clients. Every line it writes on
//! stderr is one JSON object; the line of every command names its match, command, seat and
//! revision and carries the command's trace and span ids; and no line shows a command payload,
//! a projection or hidden state (any ship's placement, in any form).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use juegoland_conformance::Pattern;
use serde_json::{Value, json};

use crate::client::{Client, DataDir, data_dir, http, uuid};
use crate::harness::announced_line;

/// A `juegoland dev` process logging JSON, its stderr collected line by line.
struct Logged {
    child: Child,
    addr: String,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    _dir: DataDir,
}

impl Logged {
    fn start() -> Logged {
        let dir = data_dir();
        let mut child = Command::new(env!("CARGO_BIN_EXE_juegoland"))
            .args(["dev", "--http", "127.0.0.1:0", "--data-dir"])
            .arg(&*dir)
            .env("JUEGOLAND_LOG_FORMAT", "json")
            .env("RUST_LOG", "info,juegoland=debug")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the juegoland binary");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("stderr");
        let reader = std::thread::spawn({
            let lines = lines.clone();
            move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    lines.lock().expect("the lines' lock").push(line);
                }
            }
        });
        let line = announced_line(&mut child, "listening on ");
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|s| s.strip_suffix('/'))
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        Logged { child, addr, lines, reader: Some(reader), _dir: dir }
    }

    async fn connect(&self, principal: &str) -> Client {
        let (status, body) = http(&self.addr, "POST", "/v1/dev/tokens", Some(json!({ "principal": principal }))).await;
        assert_eq!(status, 200, "{body}");
        Client::connect_to(&self.addr, body["token"].as_str().expect("a token")).await
    }

    /// Stops the process; every line it wrote on stderr.
    fn stop(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            reader.join().expect("the stderr reader");
        }
        std::mem::take(&mut *self.lines.lock().expect("the lines' lock"))
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const FLEET: [(&str, u64); 5] = [("carrier", 5), ("battleship", 4), ("cruiser", 3), ("submarine", 3), ("destroyer", 2)];

fn accept() -> Value {
    json!([{"id":"hundido","rulesVersion":"1.0.0","viewSchemaVersion":1,"eventSchemaVersion":1}])
}

fn offer<'a>(snap: &'a Value, action: &str) -> Option<&'a Value> {
    snap["actions"].as_array()?.iter().find(|o| o["type"] == action)
}

/// The commands sent, with their payloads, and the revision each was applied at.
#[derive(Default)]
struct Sent {
    payloads: Vec<Value>,
    applied: BTreeMap<String, u64>,
}

impl Sent {
    /// Sends one command and waits for its ack, which must be `applied`.
    async fn command(&mut self, c: &mut Client, m: &str, precondition: &Value, action: &str, payload: Value) -> u64 {
        let command_id = uuid();
        c.send(&json!({"protocolVersion":1,"type":"game.command","matchId":m,"commandId":command_id,
            "precondition":precondition,"action":{"type":action,"payload":payload}}))
            .await;
        let (ack, _) = c.recv_type("game.ack").await;
        assert_eq!((ack["status"].as_str(), ack["commandId"].as_str()), (Some("applied"), Some(&*command_id)), "{ack}");
        let revision = ack["revision"].as_u64().expect("an applied ack's revision");
        self.payloads.push(payload);
        self.applied.insert(command_id, revision);
        revision
    }
}

/// Plays a whole match: both fleets placed in rows 0, 2, 4, 6, 8 from column 0, then alice
/// sinks bob's fleet while bob shoots at water. What was sent, and the ships' placements.
async fn play(server: &Logged, m: &str) -> (Sent, Vec<Value>) {
    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;
    let mut sent = Sent::default();
    let mut ships = Vec::new();
    let mut preconditions = Vec::new();
    for (who, request) in [(&mut alice, "a"), (&mut bob, "b")] {
        who.send(&json!({"protocolVersion":1,"type":"game.sync","requestId":request,"matchId":m,"accept":accept()}))
            .await;
        let (snap, _) = who.recv_type("game.snapshot").await;
        preconditions.push(offer(&snap, "placeShip").expect("a seat may place")["precondition"].clone());
    }
    for (i, (ship, _)) in FLEET.iter().enumerate() {
        for (who, precondition) in [&mut alice, &mut bob].into_iter().zip(preconditions.iter_mut()) {
            let placement = json!({"ship":ship,"row":2 * i as u64,"column":0,"orientation":"horizontal"});
            sent.command(who, m, precondition, "placeShip", placement.clone()).await;
            precondition["actorRevision"] = json!(precondition["actorRevision"].as_u64().unwrap() + 1);
            ships.push(placement);
        }
    }
    sent.command(&mut alice, m, &preconditions[0], "ready", json!({})).await;
    let mut revision = sent.command(&mut bob, m, &preconditions[1], "ready", json!({})).await;
    let mut targets: Vec<(u64, u64)> =
        FLEET.iter().enumerate().flat_map(|(i, (_, size))| (0..*size).map(move |c| (2 * i as u64, c))).collect();
    let mut water: Vec<(u64, u64)> = (0..5).flat_map(|r| (0..10).map(move |c| (2 * r + 1, c))).collect();
    loop {
        let latest = alice.recv_revision(revision).await;
        if !latest["result"].is_null() {
            assert_eq!(latest["result"]["participants"]["p0"]["outcome"], "win");
            break;
        }
        let (shooter, (row, column)) = match offer(&latest, "fire") {
            Some(_) => (&mut alice, targets.remove(0)),
            None => (&mut bob, water.remove(0)),
        };
        let precondition = json!({"kind":"match","revision":revision});
        revision = sent.command(shooter, m, &precondition, "fire", json!({"row":row,"column":column})).await;
    }
    (sent, ships)
}

/// Text that only a payload, a projection or the match's state would put in a line.
const FORBIDDEN: [&str; 16] = [
    "carrier",
    "battleship",
    "cruiser",
    "submarine",
    "destroyer",
    "orientation",
    "horizontal",
    "vertical",
    "fleet",
    "payload",
    "protocolVersion",
    "\"view\"",
    "\"row\"",
    "\"column\"",
    // The same keys inside a JSON string of the line.
    "\\\"row\\\"",
    "\\\"column\\\"",
];

/// Every JSON value a line holds: the line, and any of its strings that is JSON text itself.
fn values(line: &Value) -> Vec<Value> {
    let mut out = vec![line.clone()];
    if let Value::Object(fields) = line {
        for v in fields.values() {
            if let Some(nested) = v.as_str().and_then(|s| serde_json::from_str::<Value>(s.trim()).ok()) {
                out.push(nested);
            }
        }
    }
    out
}

fn hex(v: &Value, len: usize) -> bool {
    v.as_str().is_some_and(|s| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[tokio::test]
async fn json_logs_name_every_command_and_never_show_private_data() {
    let server = Logged::start();
    let (status, body) = http(
        &server.addr,
        "POST",
        "/v1/matches",
        Some(json!({"game":"hundido","seats":{"p0":"alice","p1":"bob"},"config":{}})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let m = body["matchId"].as_str().expect("a match id").to_owned();
    let (sent, ships) = play(&server, &m).await;
    let raw = server.stop();

    // Every line is one JSON object with the common keys.
    assert!(raw.len() > sent.applied.len(), "a line per command at least; got {} lines", raw.len());
    let lines: Vec<Value> = raw
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {l}")))
        .collect();
    for line in &lines {
        for key in ["timestamp", "level", "target", "message"] {
            assert!(line[key].is_string(), "no {key:?} in {line}");
        }
    }

    // Every command has its line, with the match, the command, the seat and the revision of
    // its span and the ids of its trace; every line of one command is in one trace.
    for (command_id, revision) in &sent.applied {
        let of_command: Vec<&Value> = lines.iter().filter(|l| l["command_id"] == *command_id).collect();
        let applied = of_command
            .iter()
            .find(|l| l["message"] == "command applied")
            .unwrap_or_else(|| panic!("no `command applied` line for {command_id}; its lines: {of_command:#?}"));
        assert_eq!(applied["match_id"], m, "{applied}");
        assert_eq!(applied["revision"], *revision, "{applied}");
        assert_eq!(applied["span"], "match.command", "{applied}");
        assert_eq!(applied["outcome"], "applied", "{applied}");
        assert!(["p0", "p1"].contains(&applied["seat"].as_str().unwrap_or_default()), "{applied}");
        assert!(hex(&applied["trace_id"], 32) && hex(&applied["span_id"], 16), "{applied}");
        let traces: BTreeSet<&str> = of_command.iter().filter_map(|l| l["trace_id"].as_str()).collect();
        assert_eq!(traces.len(), 1, "the lines of command {command_id} are in one trace: {of_command:#?}");
    }

    // Nothing private, in any line: no payload, no projection, no placement of any ship.
    let mut patterns: Vec<Pattern> = ships.iter().map(|s| Pattern::object(s.clone())).collect();
    patterns.extend(
        sent.payloads.iter().filter(|p| p.as_object().is_some_and(|o| !o.is_empty())).cloned().map(Pattern::object),
    );
    let payload_texts: Vec<String> =
        sent.payloads.iter().filter(|p| p.as_object().is_some_and(|o| !o.is_empty())).map(Value::to_string).collect();
    for (text, line) in raw.iter().zip(&lines) {
        for forbidden in FORBIDDEN.iter().copied().chain(payload_texts.iter().map(String::as_str)) {
            assert!(!text.contains(forbidden), "a log line shows {forbidden:?}: {text}");
        }
        for value in values(line) {
            if let Some(p) = patterns.iter().find(|p| p.occurs_in(&value)) {
                panic!("a log line shows {p:?}: {text}");
            }
        }
    }
    println!("{} JSON lines, {} commands, none showing a payload or a ship", lines.len(), sent.applied.len());
}
