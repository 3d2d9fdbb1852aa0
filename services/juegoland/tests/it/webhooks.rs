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

use crate::client::{Server, data_dir, http_raw, http_with};

const SECRET: &str = "whsec-all-in-one-0123456789abcdef0123456789";
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

const PLATFORM: &str = "platform-token-for-webhooks";

/// One platform API call with the platform token; (status, JSON body or null).
async fn api(server: &Server, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let auth = format!("Bearer {PLATFORM}");
    let mut headers = vec![("Authorization", auth.as_str())];
    if !body.is_empty() {
        headers.push(("Content-Type", "application/json"));
    }
    let (status, _, text) = http_with(&server.addr.to_string(), method, path, &headers, body.as_bytes()).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The events a request carried, by kind and id.
fn kinds_and_ids(r: &Received) -> Vec<(String, String)> {
    let body: Value = serde_json::from_slice(&r.body).expect("a JSON body");
    let events = body["events"].as_array().expect("events");
    events.iter().map(|e| (e["kind"].as_str().unwrap().to_owned(), e["id"].as_str().unwrap().to_owned())).collect()
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// Whether `secret` verifies the request's signature.
fn signed_by(r: &Received, secret: &str) -> bool {
    let header = r.header(SIGNATURE_HEADER).expect("signed");
    verify(secret.as_bytes(), header, &r.body, now_secs(), DEFAULT_TOLERANCE).is_ok()
}

/// `/v1/webhooks` on the all-in-one: an endpoint registered, changed, rotated, replayed,
/// pinged and removed through the API — each taking effect in the running deliverer, and the
/// registration surviving a restart — beside one from the configuration, which the API shows
/// but does not change; every mistake answered with its field.
#[tokio::test]
async fn webhook_endpoints_are_managed_through_the_platform_api_while_the_server_runs() {
    let receiver = WebhookReceiver::start().await;
    receiver.answer(Answer::Status(204));
    let dir = data_dir();
    let mut args = webhook_args(&receiver.url("/configured"));
    args.extend(
        ["--webhook-kinds", "finished", "--webhook-refresh-ms", "100", "--platform-token", PLATFORM].map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start_in(&dir, &args);
    // The platform token guards every call.
    let (status, _, _) = http_with(&server.addr.to_string(), "GET", "/v1/webhooks", &[], b"").await;
    assert_eq!(status, 401);
    let before = create_with_token(&server).await;

    // Registered: from now on (the match created before is not sent), a secret made and shown once.
    let (status, registered) = api(
        &server,
        "POST",
        "/v1/webhooks",
        Some(json!({ "id": "ratings", "url": receiver.url("/ratings"), "kinds": ["cancelled", "finished"] })),
    )
    .await;
    assert_eq!(status, 201, "{registered}");
    let first_secret = registered["secret"].as_str().unwrap().to_owned();
    assert!(first_secret.starts_with("whsec_") && first_secret.len() == 70, "{first_secret}");
    assert_eq!(registered["webhook"]["origin"], "api");
    assert_eq!(registered["webhook"]["kinds"], json!(["cancelled", "finished"]));
    let (status, again) =
        api(&server, "POST", "/v1/webhooks", Some(json!({ "id": "ratings", "url": receiver.url("/x") }))).await;
    assert_eq!((status, again["code"].as_str(), again["field"].as_str()), (409, Some("WEBHOOK_EXISTS"), Some("id")));

    cancel_with_token(&server, &before).await;
    let got =
        receiver.wait_until(WAIT, "the cancellation at /ratings", |r| r.iter().any(|x| x.path == "/ratings")).await;
    let first = got.iter().find(|x| x.path == "/ratings").unwrap();
    assert_eq!(kinds_and_ids(first).iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["cancelled"]);
    assert_eq!(first.header("juegoland-webhook"), Some("ratings"));
    assert!(signed_by(first, &first_secret));

    // A ping: one signed request with no events, its outcome answered.
    let (status, ping) = api(&server, "POST", "/v1/webhooks/ratings/ping", None).await;
    assert_eq!(
        (status, ping["outcome"].as_str(), ping["status"].as_u64()),
        (200, Some("delivered"), Some(204)),
        "{ping}"
    );
    let pinged = receiver.received().into_iter().rev().find(|x| x.path == "/ratings").unwrap();
    let body: Value = serde_json::from_slice(&pinged.body).unwrap();
    assert_eq!(body, json!({ "webhook": "ratings", "events": [], "ping": true }));
    assert!(signed_by(&pinged, &first_secret));

    // Rotated with an overlap: each delivery is signed by both secrets; without one, by the new only.
    let (status, rotated) =
        api(&server, "POST", "/v1/webhooks/ratings/rotation", Some(json!({ "overlapMs": 600000 }))).await;
    assert_eq!(status, 200, "{rotated}");
    let second_secret = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(second_secret, first_secret);
    assert!(rotated["webhook"]["previousSecretUntilMs"].as_i64().is_some(), "{rotated}");
    let deliveries = |r: &[Received], path: &str| {
        r.iter().filter(|x| x.path == path && !x.body.windows(6).any(|w| w == b"\"ping\"")).count()
    };
    settle().await;
    let seen = deliveries(&receiver.received(), "/ratings");
    let overlapped = create_with_token(&server).await;
    cancel_with_token(&server, &overlapped).await;
    let got = receiver.wait_until(WAIT, "a delivery after the rotation", |r| deliveries(r, "/ratings") > seen).await;
    let after_rotation = got.iter().rev().find(|x| x.path == "/ratings").unwrap();
    assert!(signed_by(after_rotation, &second_secret) && signed_by(after_rotation, &first_secret));
    let custom = "a-secret-of-our-own-choosing";
    let (status, rotated) =
        api(&server, "POST", "/v1/webhooks/ratings/rotation", Some(json!({ "secret": custom, "overlapMs": 0 }))).await;
    assert_eq!((status, rotated["secret"].as_str()), (200, Some(custom)), "{rotated}");
    assert_eq!(rotated["webhook"]["previousSecretUntilMs"], Value::Null);
    let (status, _) = api(&server, "POST", "/v1/webhooks/ratings/ping", None).await;
    assert_eq!(status, 200);
    let pinged = receiver.received().into_iter().rev().find(|x| x.path == "/ratings").unwrap();
    assert!(signed_by(&pinged, custom) && !signed_by(&pinged, &second_secret), "the old secret no longer signs");

    // Changed: a new URL and every kind, from the next delivery.
    let (status, changed) =
        api(&server, "PATCH", "/v1/webhooks/ratings", Some(json!({ "url": receiver.url("/moved"), "kinds": null })))
            .await;
    assert_eq!((status, changed["kinds"].clone()), (200, Value::Null), "{changed}");
    settle().await;
    let moved = create_with_token(&server).await;
    let got = receiver.wait_until(WAIT, "the creation at /moved", |r| r.iter().any(|x| x.path == "/moved")).await;
    let at_moved: Vec<(String, String)> = got.iter().filter(|x| x.path == "/moved").flat_map(kinds_and_ids).collect();
    assert_eq!(at_moved, [("created".to_owned(), format!("{moved}/0"))]);

    // It survives a restart, and the deliverer picks it up again.
    drop(server);
    let server = Server::start_in(&dir, &args);
    let (status, listed) = api(&server, "GET", "/v1/webhooks", None).await;
    assert_eq!(status, 200, "{listed}");
    let listed: Vec<(&str, &str)> = listed["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["id"].as_str().unwrap(), w["origin"].as_str().unwrap()))
        .collect();
    assert_eq!(listed, [("default", "config"), ("ratings", "api")]);

    // Replayed from the feed's beginning: every event again, in feed order.
    let (status, _) = api(&server, "POST", "/v1/webhooks/ratings/replay", Some(json!({ "after": "0-0" }))).await;
    assert_eq!(status, 200);
    let fed = feed_ids_with_token(&server).await;
    let seen = receiver.received().len();
    let got = receiver
        .wait_until(WAIT, "the whole feed again at /moved", |r| {
            r[seen..].iter().filter(|x| x.path == "/moved").flat_map(ids).collect::<Vec<_>>().len() >= fed.len()
        })
        .await;
    let replayed: Vec<String> = got[seen..].iter().filter(|x| x.path == "/moved").flat_map(ids).collect();
    assert_eq!(replayed[..fed.len()], fed[..], "the feed again, in its order");
    let (_, described) = api(&server, "GET", "/v1/webhooks/ratings", None).await;
    assert_eq!(described["heldBy"], "all-in-one", "{described}");

    // The configured endpoint is shown, not changed.
    for (method, path, body) in [
        ("PATCH", "/v1/webhooks/default", Some(json!({ "url": receiver.url("/elsewhere") }))),
        ("POST", "/v1/webhooks/default/rotation", None),
    ] {
        let (status, refused) = api(&server, method, path, body).await;
        assert_eq!((status, refused["code"].as_str()), (409, Some("WEBHOOK_CONFIGURED")), "{path}: {refused}");
    }

    // Every mistake names its field, and changes nothing.
    let mistakes = [
        ("POST", "/v1/webhooks", json!({ "id": "Bad Id", "url": receiver.url("/x") }), 400, "id"),
        ("POST", "/v1/webhooks", json!({ "id": "x", "url": "ftp://example.com/" }), 400, "url"),
        ("POST", "/v1/webhooks", json!({ "id": "x", "url": receiver.url("/x"), "kinds": ["ended"] }), 400, "kinds"),
        ("POST", "/v1/webhooks", json!({ "id": "x", "url": receiver.url("/x"), "kinds": [] }), 400, "kinds"),
        ("POST", "/v1/webhooks", json!({ "id": "x", "url": receiver.url("/x"), "secret": "short" }), 400, "secret"),
        ("POST", "/v1/webhooks", json!({ "id": "x", "url": receiver.url("/x"), "after": "later" }), 400, "after"),
        ("POST", "/v1/webhooks", json!({ "id": "x", "url": receiver.url("/x"), "urls": [] }), 400, "urls"),
        ("PATCH", "/v1/webhooks/ratings", json!({ "url": "not a url" }), 400, "url"),
        ("POST", "/v1/webhooks/ratings/rotation", json!({ "overlapMs": 2_592_000_001u64 }), 400, "overlapMs"),
        ("POST", "/v1/webhooks/ratings/replay", json!({ "after": "x-y" }), 400, "after"),
    ];
    for (method, path, body, expected, field) in mistakes {
        let (status, refused) = api(&server, method, path, Some(body.clone())).await;
        assert_eq!((status, refused["field"].as_str()), (expected, Some(field)), "{body}: {refused}");
        assert!(refused["message"].as_str().is_some_and(|m| !m.is_empty()), "{refused}");
    }
    let (status, missing) = api(&server, "GET", "/v1/webhooks/nobody", None).await;
    assert_eq!((status, missing["code"].as_str()), (404, Some("WEBHOOK_NOT_FOUND")));
    let (status, _, _) = http_with(
        &server.addr.to_string(),
        "POST",
        "/v1/webhooks",
        &[("Authorization", &format!("Bearer {PLATFORM}")), ("Content-Type", "text/plain")],
        b"{}",
    )
    .await;
    assert_eq!(status, 415);
    let (_, listed) = api(&server, "GET", "/v1/webhooks", None).await;
    assert_eq!(listed["webhooks"].as_array().unwrap().len(), 2, "no mistake registered anything");

    // Removed: nothing more is sent to it.
    let (status, _) = api(&server, "DELETE", "/v1/webhooks/ratings", None).await;
    assert_eq!(status, 204);
    let (status, _) = api(&server, "DELETE", "/v1/webhooks/ratings", None).await;
    assert_eq!(status, 404);
    settle().await;
    let seen = receiver.received().len();
    let last = create_with_token(&server).await;
    cancel_with_token(&server, &last).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let later = receiver.received();
    assert!(later[seen..].iter().all(|x| x.path != "/moved"), "a removed endpoint gets nothing");
}

/// Waits for the deliverer to read a change (`--webhook-refresh-ms 100`, a few times over).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(500)).await;
}

async fn create_with_token(server: &Server) -> String {
    let body = json!({ "game": "conecta4", "seats": { "p0": "alice", "p1": "bob" } });
    let (status, created) = api(server, "POST", "/v1/matches", Some(body)).await;
    assert_eq!(status, 201, "{created}");
    created["matchId"].as_str().unwrap().to_owned()
}

async fn cancel_with_token(server: &Server, id: &str) {
    let path = format!("/v1/matches/{id}/cancellation");
    let (status, body) = api(server, "POST", &path, Some(json!({ "reasonCode": "platform.test" }))).await;
    assert_eq!(status, 200, "{body}");
}

async fn feed_ids_with_token(server: &Server) -> Vec<String> {
    let (status, page) = api(server, "GET", "/v1/feed?limit=100", None).await;
    assert_eq!(status, 200, "{page}");
    page["events"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect()
}

/// In a cluster: an endpoint registered through a router (its rows in the cluster's
/// PostgreSQL) is picked up by a scheduler replica started without any webhook
/// configuration, which delivers the feed of matches the router created; a removal through
/// the router stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_registers_endpoints_that_the_scheduler_replicas_deliver() {
    use crate::harness::{Cluster, Proc, scheduler_args};
    let cluster = Cluster::start("webhook_api", 1, 1).await;
    let url = cluster.schema.url();
    let replica = Proc::spawn(scheduler_args(
        &url,
        &cluster.router_urls(),
        "replica-a",
        &["--webhook-refresh-ms", "100", "--webhook-poll-ms", "50"],
    ));
    let router = cluster.routers[0].http.trim_start_matches("http://").trim_end_matches('/').to_owned();
    let receiver = WebhookReceiver::start().await;
    receiver.answer(Answer::Status(200));
    let call = |method: &'static str, path: String, body: Option<Value>| {
        let router = router.clone();
        async move { crate::client::http(&router, method, &path, body).await }
    };

    let (status, registered) = call(
        "POST",
        "/v1/webhooks".into(),
        Some(json!({ "id": "ratings", "url": receiver.url("/cluster"), "after": "0-0" })),
    )
    .await;
    assert_eq!(status, 201, "{registered}");
    let secret = registered["secret"].as_str().unwrap().to_owned();
    let (status, created) =
        call("POST", "/v1/matches".into(), Some(json!({ "game": "conecta4", "seats": { "p0": "ana", "p1": "ben" } })))
            .await;
    assert_eq!(status, 201, "{created}");
    let id = created["matchId"].as_str().unwrap();
    let got =
        receiver.wait_until(WAIT, "the creation delivered", |r| acknowledged(r).contains(&format!("{id}/0"))).await;
    assert!(got.iter().all(|r| signed_by(r, &secret) && r.header("juegoland-webhook") == Some("ratings")));
    let (status, listed) = call("GET", "/v1/webhooks".into(), None).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["webhooks"][0]["heldBy"], "replica-a", "{listed}");
    let (status, ping) = call("POST", "/v1/webhooks/ratings/ping".into(), None).await;
    assert_eq!((status, ping["outcome"].as_str()), (200, Some("delivered")), "{ping}");

    let (status, _) = call("DELETE", "/v1/webhooks/ratings".into(), None).await;
    assert_eq!(status, 204);
    settle().await;
    let seen = receiver.received().len();
    let (status, _) =
        call("POST", "/v1/matches".into(), Some(json!({ "game": "conecta4", "seats": { "p0": "cy", "p1": "di" } })))
            .await;
    assert_eq!(status, 201);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(receiver.received().len(), seen, "a removed endpoint gets nothing");
    drop(replica);
    cluster.stop().await;
}

/// The README's Python verifier, run as a receiver would: it accepts a real signature (and
/// either of a rotation's two), and answers False — never an exception — to a wrong secret,
/// an old timestamp and malformed headers.
#[test]
fn the_readmes_python_verifier_accepts_real_signatures_and_survives_malformed_headers() {
    use juegoland_roles::signature::{sign, sign_with};
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let start =
        readme.find("```python\nimport hashlib, hmac, time").expect("the README's verifier") + "```python\n".len();
    let code = &readme[start..start + readme[start..].find("```").unwrap()];
    let body = br#"{"webhook":"ratings","events":[]}"#;
    let now = now_secs();
    let cases: Vec<(String, &str, bool)> = vec![
        (sign(b"s3cret", now, body), "s3cret", true),
        (sign_with(&[b"new-secret", b"s3cret"], now, body), "s3cret", true),
        (sign_with(&[b"new-secret", b"s3cret"], now, body), "new-secret", true),
        (sign(b"s3cret", now, body), "wrong", false),
        (sign(b"s3cret", now - 3600, body), "s3cret", false),
        ("t=\u{b2},v1=00".to_owned(), "s3cret", false),
        (format!("t={now},v1=\u{e9}\u{e9}"), "s3cret", false),
        (format!("t={now}"), "s3cret", false),
        ("".to_owned(), "s3cret", false),
        ("v1=00,t=,x".to_owned(), "s3cret", false),
        (format!("t=-{now},v1=00"), "s3cret", false),
    ];
    let mut script = format!(
        "{code}\nimport json, sys\nbody = {body:?}.encode()\nresults = []\n",
        body = std::str::from_utf8(body).unwrap()
    );
    for (header, secret, _) in &cases {
        let header = serde_json::to_string(header).unwrap();
        script.push_str(&format!("results.append(verify({secret:?}.encode(), json.loads({header:?}), body))\n"));
    }
    script.push_str("print(json.dumps(results))\n");
    let out = std::process::Command::new("python3").arg("-c").arg(&script).output().expect("python3");
    assert!(out.status.success(), "the verifier raised:\n{}", String::from_utf8_lossy(&out.stderr));
    let results: Vec<bool> = serde_json::from_slice(&out.stdout).expect("a JSON list");
    let expected: Vec<bool> = cases.iter().map(|(_, _, ok)| *ok).collect();
    assert_eq!(results, expected, "{cases:?}");
}
