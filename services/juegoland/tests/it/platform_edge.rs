//! The platform API's door: JSON bodies only (a cross-site form or a simple `fetch` can never
//! call it), no token minting on a server whose platform API is guarded, and metrics that are
//! never public (behind the platform token, or on a listener of their own).

use serde_json::{Value, json};

use crate::client::{Server, http_with};

const PLATFORM: &str = "platform-edge-credential";

/// Every route that takes a body refuses anything but JSON with `415 UNSUPPORTED_MEDIA_TYPE`
/// naming the `Content-Type`, and nothing it would have done is done.
#[tokio::test]
async fn the_platform_api_takes_json_bodies_only() {
    let server = Server::start(&[]);
    let addr = server.addr.to_string();
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let create = json!({ "game": "conecta4", "seats": { "p0": "cross", "p1": "site" } }).to_string();
    let routes = [
        ("/v1/matches".to_owned(), create.clone()),
        (format!("/v1/matches/{m}/withdrawals"), json!({ "seat": "p0" }).to_string()),
        (format!("/v1/matches/{m}/cancellation"), json!({ "reasonCode": "x" }).to_string()),
        (format!("/v1/matches/{m}/replays"), json!({ "speedPercent": 100 }).to_string()),
        (format!("/v1/matches/{m}/agents"), json!({ "seat": "p1" }).to_string()),
        ("/v1/dev/tokens".to_owned(), json!({ "principal": "mallory" }).to_string()),
        ("/v1/webhooks".to_owned(), json!({ "id": "cross", "url": "http://127.0.0.1:9/" }).to_string()),
        ("/v1/webhooks/cross/replay".to_owned(), json!({ "after": "0-0" }).to_string()),
    ];
    let content_types: [&[(&str, &str)]; 5] = [
        &[("Content-Type", "text/plain")],
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &[("Content-Type", "multipart/form-data; boundary=x")],
        &[("Content-Type", "application/jsonp")],
        // A body and no content type at all.
        &[],
    ];
    for (path, body) in &routes {
        for headers in content_types {
            let (status, head, text) = http_with(&addr, "POST", path, headers, body.as_bytes()).await;
            let what = format!("POST {path} with {headers:?} → {status} {text}");
            assert_eq!(status, 415, "{what}");
            assert!(head.contains("content-type: application/json"), "{what}");
            let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {what}"));
            assert_eq!(answer["code"], "UNSUPPORTED_MEDIA_TYPE", "{what}");
            assert_eq!(answer["field"], "Content-Type", "{what}");
        }
    }
    // Nothing happened: no match of "cross", the match is as created (revision 0, active).
    let (status, listed) = server.http("GET", "/v1/matches?principal=cross", None).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["matches"], json!([]), "a refused creation created a match: {listed}");
    let (_, described) = server.http("GET", &format!("/v1/matches/{m}"), None).await;
    assert_eq!(
        (described["revision"].as_u64(), described["status"].as_str()),
        (Some(0), Some("active")),
        "{described}"
    );

    let (_, webhooks) = server.http("GET", "/v1/webhooks", None).await;
    assert_eq!(webhooks["webhooks"], json!([]), "a refused registration registered: {webhooks}");

    // JSON with parameters, in any case, is JSON; a POST without a body needs no type.
    let json_types = ["application/json; charset=utf-8", "Application/JSON"];
    for content_type in json_types {
        let headers = [("Content-Type", content_type)];
        let (status, _, text) = http_with(&addr, "POST", "/v1/matches", &headers, create.as_bytes()).await;
        assert_eq!(status, 201, "{content_type}: {text}");
    }
    let replays = format!("/v1/matches/{m}/replays");
    let (status, _, text) = http_with(&addr, "POST", &replays, &[], b"").await;
    assert_ne!(status, 415, "an empty body needs no content type: {text}");
}

/// A key repeated in a body is refused naming its path — never the last one silently winning
/// (`{"p0": "alice", "p0": "mallory"}` would seat mallory) — and nothing is created.
#[tokio::test]
async fn a_repeated_key_is_refused_naming_it() {
    let server = Server::start(&[]);
    let addr = server.addr.to_string();
    let json = [("Content-Type", "application/json")];
    let bodies = [
        (r#"{"game":"conecta4","seats":{"p0":"alice","p0":"mallory","p1":"bob"}}"#, "seats.p0"),
        (r#"{"game":"conecta4","seats":{"p0":"alice","p1":"bob"},"config":{"rows":6,"rows":12}}"#, "config.rows"),
        (r#"{"game":"conecta4","game":"oca","seats":{"p0":"alice","p1":"bob"}}"#, "game"),
    ];
    for (body, field) in bodies {
        let (status, _, text) = http_with(&addr, "POST", "/v1/matches", &json, body.as_bytes()).await;
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (status, answer["code"].as_str(), answer["field"].as_str()),
            (400, Some("INVALID_REQUEST"), Some(field)),
            "{body}: {text}"
        );
    }
    let (_, listed) = server.http("GET", "/v1/matches", None).await;
    assert_eq!(listed["matches"], json!([]), "{listed}");
}

/// With a platform token, `POST /v1/dev/tokens` is not served at all, and `/metrics` answers
/// only the platform's bearer.
#[tokio::test]
async fn a_guarded_server_mints_no_tokens_and_guards_its_metrics() {
    let server = Server::start(&["--platform-token", PLATFORM]);
    let addr = server.addr.to_string();
    let json = [("Content-Type", "application/json")];
    let body = json!({ "principal": "alice" }).to_string();
    let (status, _, text) = http_with(&addr, "POST", "/v1/dev/tokens", &json, body.as_bytes()).await;
    assert_eq!(status, 404, "a guarded server minted a token: {text}");
    let bearer = format!("Bearer {PLATFORM}");
    let (status, _, text) =
        http_with(&addr, "POST", "/v1/dev/tokens", &[json[0], ("Authorization", &bearer)], body.as_bytes()).await;
    assert_eq!(status, 404, "not even to the platform: {text}");

    let (status, _, text) = http_with(&addr, "GET", "/metrics", &[], b"").await;
    assert_eq!(status, 401, "{text}");
    let (status, _, text) = http_with(&addr, "GET", "/metrics", &[("Authorization", "Bearer wrong")], b"").await;
    assert_eq!(status, 401, "{text}");
    let (status, _, text) = http_with(&addr, "GET", "/metrics", &[("Authorization", &bearer)], b"").await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("juegoland_build_info"), "{text}");
    // Health stays open: a load balancer's probe holds no credential.
    let (status, _, _) = http_with(&addr, "GET", "/healthz", &[], b"").await;
    assert_eq!(status, 200);

    // Without a platform token the dev profile still mints tokens.
    let open = Server::start(&[]);
    let (status, token) = open.http("POST", "/v1/dev/tokens", Some(json!({ "principal": "alice" }))).await;
    assert_eq!(status, 200, "{token}");
}

/// `--metrics-http`: metrics on a listener of their own, open there, and the public listener
/// serves none.
#[tokio::test]
async fn metrics_on_a_listener_of_their_own_are_not_on_the_public_one() {
    let server = Server::start(&["--platform-token", PLATFORM, "--metrics-http", "127.0.0.1:0"]);
    let metrics = server.metrics.expect("the metrics listener's address on the announced line").to_string();
    let (status, _, text) = http_with(&metrics, "GET", "/metrics", &[], b"").await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("juegoland_build_info"), "{text}");
    let (status, _, _) = http_with(&metrics, "GET", "/readyz", &[], b"").await;
    assert_eq!(status, 200);
    let bearer = format!("Bearer {PLATFORM}");
    let (status, _, text) =
        http_with(&server.addr.to_string(), "GET", "/metrics", &[("Authorization", &bearer)], b"").await;
    assert_eq!(status, 404, "the public listener still serves metrics: {text}");
}

/// A malformed protocol message is told what is wrong with it (never echoing its values), and
/// a message over the rate is refused naming the match and the request it was.
#[tokio::test]
async fn protocol_errors_say_what_and_which_message() {
    let server = Server::start(&["--rate-limit", "1", "--rate-burst", "1"]);
    let mut alice = server.connect("alice").await;
    alice.send(&json!({"protocolVersion": 1, "matchId": "0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69"})).await;
    let (error, _) = alice.recv_type("game.error").await;
    assert_eq!(error["code"], "MALFORMED_MESSAGE", "{error}");
    assert!(error["detail"].as_str().unwrap().contains("missing field `type`"), "{error}");
    // Over the rate (one message a second, a burst of one): the refusal names the sync.
    let m = crate::client::uuid();
    let sync = |request: &str| {
        json!({"protocolVersion": 1, "type": "game.sync", "requestId": request, "matchId": m,
                                       "accept": serde_json::from_str::<Value>(crate::client::ACCEPT).unwrap()})
    };
    alice.send(&sync("r-1")).await;
    alice.send(&sync("r-2")).await;
    let limited = loop {
        let (error, _) = alice.recv_type("game.error").await;
        if error["code"] == "RATE_LIMITED" {
            break error;
        }
    };
    assert_eq!(limited["matchId"].as_str(), Some(m.as_str()), "{limited}");
    assert!(["r-1", "r-2"].contains(&limited["requestId"].as_str().unwrap_or_default()), "{limited}");
}

/// DNS rebinding: the dev server on loopback answers its own host names only — a request
/// for another name (a page whose name an attacker points at 127.0.0.1) reaches nothing, not
/// the API, not the WebSocket, not Socket.IO — and answers more names when told.
#[tokio::test]
async fn a_loopback_server_answers_its_own_host_names_only() {
    let server = Server::start(&["--allowed-host", "lobby.test"]);
    let addr = server.addr.to_string();
    let port = server.addr.port();
    // One request with exactly the `Host` headers given.
    let http_with = |addr: &str, method: &str, path: &str, hosts: &[(&str, &str)], _: &[u8]| {
        let (addr, head) = (addr.to_owned(), format!("{method} {path} HTTP/1.1\r\n"));
        let hosts: String = hosts.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
            s.write_all(format!("{head}{hosts}Connection: close\r\n\r\n").as_bytes()).await.unwrap();
            let mut raw = Vec::new();
            let _ = s.read_to_end(&mut raw).await;
            let text = String::from_utf8_lossy(&raw).into_owned();
            let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
            let status: u16 = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
            (status, head.to_owned(), body.to_owned())
        }
    };
    for path in ["/v1/games", "/v1/matches", "/v1/ws", "/socket.io/?EIO=4&transport=polling", "/healthz"] {
        for host in ["attacker.example".to_owned(), format!("attacker.example:{port}"), "127.0.0.1.nip.io".to_owned()] {
            let (status, _, text) = http_with(&addr, "GET", path, &[("Host", &host)], b"").await;
            let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            assert_eq!((status, answer["code"].as_str()), (421, Some("MISDIRECTED_REQUEST")), "{host}{path}: {text}");
        }
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "LocalHost".to_owned(),
        format!("app.localhost:{port}"),
        "lobby.test".to_owned(),
    ] {
        let (status, _, text) = http_with(&addr, "GET", "/v1/games", &[("Host", &host)], b"").await;
        assert_eq!(status, 200, "{host}: {text}");
    }
    // Two names, or none, are no name.
    let own = format!("127.0.0.1:{port}");
    for hosts in [&[("Host", own.as_str()), ("Host", "attacker.example")][..], &[]] {
        let (status, _, text) = http_with(&addr, "GET", "/v1/games", hosts, b"").await;
        assert!(status == 421 || status == 400, "{hosts:?}: {status} {text}");
    }
}
