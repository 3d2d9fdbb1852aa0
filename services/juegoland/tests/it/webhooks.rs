//! Webhooks through the all-in-one binary: `juegoland dev --webhook URL --webhook-secret S`
//! POSTs the platform feed's events of real matches (created, a seat changed, cancelled,
//! finished) to a receiver on loopback, signed and in feed order; a receiver that refuses
//! them gets them again once it answers 2xx; and a process killed while the receiver held a
//! request delivers that request's events again after its restart, from the durable cursor
//! in its data directory, without repeating what was acknowledged.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use juegoland_roles::signature::{DEFAULT_TOLERANCE, SIGNATURE_HEADER, SignatureError, verify};
use juegoland_testkit::{Answer, Received, WebhookReceiver};
use serde_json::{Value, json};

use crate::client::{Server, data_dir, http_raw};

const SECRET: &str = "whsec-all-in-one";
const WAIT: Duration = Duration::from_secs(30);

fn ids(r: &Received) -> Vec<String> {
    let body: Value = serde_json::from_slice(&r.body).expect("a JSON body");
    body["events"].as_array().expect("events").iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect()
}

fn acknowledged(received: &[Received]) -> Vec<String> {
    received.iter().filter(|r| r.acknowledged()).flat_map(ids).collect()
}

async fn create(server: &Server, game: &str, seats: Value) -> String {
    let (status, body) = server.http("POST", "/v1/matches", Some(json!({ "game": game, "seats": seats }))).await;
    assert_eq!(status, 201, "{body}");
    body["matchId"].as_str().unwrap().to_owned()
}

async fn post(server: &Server, path: &str, body: Value) {
    let (status, answer) = server.http("POST", path, Some(body)).await;
    assert_eq!(status, 200, "{path}: {answer}");
}

/// The ids of the whole feed, as `GET /v1/feed` pages them.
async fn feed_ids(server: &Server) -> Vec<String> {
    let (status, page) = server.http("GET", "/v1/feed?limit=100", None).await;
    assert_eq!(status, 200, "{page}");
    page["events"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect()
}

fn webhook_args(url: &str) -> Vec<String> {
    [
        "--webhook",
        url,
        "--webhook-secret",
        SECRET,
        "--webhook-poll-ms",
        "50",
        "--webhook-backoff-ms",
        "50",
        "--webhook-backoff-max-ms",
        "200",
        "--webhook-timeout-ms",
        "1000",
        "--webhook-lease-ms",
        "3000",
    ]
    .map(str::to_owned)
    .to_vec()
}

#[tokio::test]
async fn the_all_in_one_delivers_the_feed_signed_in_order_at_least_once_across_a_crash() {
    let receiver = WebhookReceiver::start().await;
    let dir = data_dir();
    let args = webhook_args(&receiver.url("/juegoland"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start_in(&dir, &args);

    let c4 = create(&server, "conecta4", json!({ "p0": "alice", "p1": "bob" })).await;
    let oca = create(&server, "oca", json!({ "p0": "dora", "p1": "eve", "p2": "fay" })).await;
    post(&server, &format!("/v1/matches/{oca}/withdrawals"), json!({ "seat": "p2" })).await;
    post(&server, &format!("/v1/matches/{c4}/cancellation"), json!({ "reasonCode": "platform.abandoned" })).await;
    post(&server, &format!("/v1/matches/{oca}/withdrawals"), json!({ "seat": "p1" })).await;
    let received = receiver.wait_until(WAIT, "five events", |r| acknowledged(r).len() >= 5).await;
    let fed = feed_ids(&server).await;
    assert_eq!(fed.len(), 5);
    assert_eq!(acknowledged(&received), fed, "each event once, in feed order");
    let kinds: Vec<String> = received
        .iter()
        .filter(|r| r.acknowledged())
        .flat_map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            body["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["kind"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(kinds, ["created", "created", "seatChanged", "cancelled", "finished"]);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    for r in &received {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/juegoland"));
        assert_eq!(r.header("juegoland-webhook"), Some("default"));
        let signature = r.header(SIGNATURE_HEADER).expect("signed");
        assert_eq!(verify(SECRET.as_bytes(), signature, &r.body, now, DEFAULT_TOLERANCE), Ok(()));
        let wrong = verify(b"whsec-someone-else", signature, &r.body, now, DEFAULT_TOLERANCE);
        assert_eq!(wrong, Err(SignatureError::Mismatch));
    }

    // Refused: the next event is sent again and again, and counted.
    receiver.answer(Answer::Status(500));
    let refused = create(&server, "conecta4", json!({ "p0": "alice", "p1": "carol" })).await;
    let before = received.len();
    receiver
        .wait_until(WAIT, "two refusals", |r| r[before..].iter().filter(|x| x.answer == Some(500)).count() >= 2)
        .await;
    let (_, _, metrics) = http_raw(&server.addr.to_string(), "GET", "/metrics", b"").await;
    let rejected = r#"juegoland_webhook_deliveries_total{outcome="rejected",webhook="default"}"#;
    let count: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix(rejected).map(|v| v.trim().parse().unwrap()))
        .unwrap_or_else(|| panic!("no {rejected} in\n{metrics}"));
    assert!(count >= 2.0, "{count}");

    // Held, then the process dies: the receiver read the event, the cursor never moved.
    receiver.answer(Answer::Hang);
    let before = receiver.received().len();
    receiver.wait_until(WAIT, "a held request", |r| r[before..].iter().any(|x| x.answer.is_none())).await;
    drop(server);

    receiver.answer(Answer::Status(204));
    let server = Server::start_in(&dir, &args);
    let received = receiver.wait_until(WAIT, "the refused event", |r| acknowledged(r).len() >= 6).await;
    let mut expected = fed.clone();
    expected.push(format!("{refused}/0"));
    assert_eq!(acknowledged(&received), expected, "what was acknowledged is not sent again");
    let tries = received.iter().filter(|r| ids(r) == [format!("{refused}/0")]).count();
    assert!(tries >= 4, "refused twice, held once, then acknowledged: {tries}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(acknowledged(&receiver.received()), expected);
    drop(server);
}

#[tokio::test]
async fn a_bad_webhook_configuration_stops_the_process_with_what_is_wrong() {
    let dir = data_dir();
    for (args, expected) in [
        (vec!["--webhook", "ftp://example/", "--webhook-secret", "k"], "is not an http:// or https:// URL"),
        (vec!["--webhook", "http://127.0.0.1:9/"], "no secret"),
        (
            vec!["--webhook", "http://127.0.0.1:9/", "--webhook-secret", "k", "--webhook-kinds", "ended"],
            "kind \"ended\"",
        ),
        (
            vec!["--webhook", "http://127.0.0.1:9/", "--webhook-secret", "k", "--webhook-lease-ms", "1000"],
            "more than twice the request timeout",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_juegoland"))
            .args(["dev", "--http", "127.0.0.1:0", "--data-dir"])
            .arg(&*dir)
            .args(&args)
            .env("RUST_LOG", "error")
            .output()
            .expect("run juegoland dev");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// Two `juegoland scheduler` replicas with the same webhook over one PostgreSQL, the matches
/// made by a `juegoland dev` on the same database: one replica delivers at a time, and when it
/// is killed (SIGKILL: its lease is not given back) the other takes the endpoint over once the
/// lease lapses, from the durable cursor. Every event is acknowledged, first in feed order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_replicas_deliver_an_endpoint_one_at_a_time_and_hand_it_over_when_one_dies() {
    use crate::harness::{Proc, metric_sum, scheduler_args};
    let schema = juegoland_testkit::TestSchema::create("cluster", "webhook_replicas").await;
    let url = schema.url();
    let platform = Server::start(&["--database-url", &url]);
    let receiver = WebhookReceiver::start().await;
    receiver.delay(Duration::from_millis(20));
    let hook = receiver.url("/hooks");
    let webhook = [
        "--webhook",
        hook.as_str(),
        "--webhook-secret",
        SECRET,
        "--webhook-batch",
        "2",
        "--webhook-poll-ms",
        "50",
        "--webhook-timeout-ms",
        "1000",
        "--webhook-lease-ms",
        "3000",
    ];
    // No deadline is ever due: the routers are never called.
    let routers = "http://127.0.0.1:9";
    let mut replicas = [
        Proc::spawn(scheduler_args(&url, routers, "replica-a", &webhook)),
        Proc::spawn(scheduler_args(&url, routers, "replica-b", &webhook)),
    ];
    for k in 0..6 {
        let m = create(&platform, "conecta4", json!({ "p0": "alice", "p1": format!("bob{k}") })).await;
        if k % 2 == 0 {
            post(&platform, &format!("/v1/matches/{m}/cancellation"), json!({ "reasonCode": "platform.abandoned" }))
                .await;
        }
    }
    let fed = feed_ids(&platform).await;
    assert_eq!(fed.len(), 9);
    let received = receiver.wait_until(WAIT, "every event", |r| acknowledged(r).len() >= fed.len()).await;
    assert_eq!(acknowledged(&received), fed, "each once, in feed order");
    assert_eq!(receiver.most_in_flight(), 1, "one replica delivers at a time");

    let mut held = Vec::new();
    for replica in &replicas {
        held.push(metric_sum(&replica.get("/metrics").await, "juegoland_webhook_held"));
    }
    held.sort_by(f64::total_cmp);
    assert_eq!(held, [0.0, 1.0], "exactly one replica holds the endpoint");
    let holder = (metric_sum(&replicas[0].get("/metrics").await, "juegoland_webhook_held") == 0.0) as usize;
    replicas[holder].kill9();

    let later = create(&platform, "conecta4", json!({ "p0": "alice", "p1": "zoe" })).await;
    let received = receiver
        .wait_until(WAIT, "the event after the failover", |r| acknowledged(r).contains(&format!("{later}/0")))
        .await;
    let mut first_seen: Vec<String> = Vec::new();
    for id in acknowledged(&received) {
        if !first_seen.contains(&id) {
            first_seen.push(id);
        }
    }
    let mut expected = fed.clone();
    expected.push(format!("{later}/0"));
    assert_eq!(first_seen, expected, "every event, first in feed order");
    let survivor = &replicas[1 - holder];
    assert_eq!(metric_sum(&survivor.get("/metrics").await, "juegoland_webhook_held"), 1.0, "it took over");
    assert_eq!(receiver.most_in_flight(), 1);
    drop(replicas);
    drop(platform);
    schema.drop_schema().await;
}
