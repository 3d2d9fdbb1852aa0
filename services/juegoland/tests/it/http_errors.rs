//! Every error of the HTTP API is JSON of one shape — `{"code", "message", "field"?}` — the
//! handlers' refusals, unknown paths and methods, and every rejection axum makes before a
//! handler runs (body too large, no upgrade on the WebSocket route…).

use serde_json::{Value, json};

use crate::client::{Server, http_raw};

/// A request (method, path, body) and the answer it must get (status, code, field).
type Case<'a> = (&'a str, &'a str, Vec<u8>, u16, &'a str, Option<&'a str>);

#[tokio::test]
async fn every_error_of_the_http_api_is_json_of_one_shape() {
    let server = Server::start(&[]);
    let addr = server.addr.to_string();
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let seats = json!({ "p0": "a", "p1": "b" });
    let body = |v: Value| v.to_string().into_bytes();
    let big = vec![b' '; 3 << 20];
    let withdrawals = format!("/v1/matches/{m}/withdrawals");
    let cases: Vec<Case> = vec![
        ("GET", "/nope", vec![], 404, "NOT_FOUND", None),
        ("GET", "/v1/matches/x/y/z", vec![], 404, "NOT_FOUND", None),
        ("DELETE", "/v1/games", vec![], 405, "METHOD_NOT_ALLOWED", None),
        ("GET", "/v1/matches", vec![], 405, "METHOD_NOT_ALLOWED", None),
        ("POST", "/v1/matches", b"not json".to_vec(), 400, "INVALID_REQUEST", None),
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "conecta4", "seats": seats})).into_iter().chain(*b" x").collect(),
            400,
            "INVALID_REQUEST",
            None,
        ),
        ("POST", "/v1/matches", body(json!({"game": 4, "seats": seats})), 400, "INVALID_REQUEST", Some("game")),
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "conecta4", "seats": {"p0": "a", "p1": {"bot": 5}}})),
            400,
            "INVALID_REQUEST",
            Some("seats.p1"),
        ),
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "conecta4", "seats": {"p0": "a"}})),
            400,
            "INVALID_SEATS",
            Some("seats"),
        ),
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "conecta4", "seats": seats, "config": {"rows": "six"}})),
            400,
            "INVALID_CONFIG",
            Some("config"),
        ),
        ("POST", "/v1/matches", body(json!({"game": "nope", "seats": seats})), 404, "UNKNOWN_GAME", Some("game")),
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "conecta4", "rulesVersion": "9.9.9", "seats": seats})),
            404,
            "UNKNOWN_GAME",
            Some("rulesVersion"),
        ),
        ("POST", "/v1/matches", big, 413, "PAYLOAD_TOO_LARGE", None),
        ("POST", "/v1/matches/not-a-uuid/withdrawals", body(json!({"seat": "p0"})), 404, "MATCH_NOT_FOUND", None),
        ("POST", &withdrawals, body(json!({"seat": "p9"})), 409, "UNKNOWN_SEAT", Some("seat")),
        ("POST", &withdrawals, body(json!({"seat": 1})), 400, "INVALID_REQUEST", Some("seat")),
        ("POST", "/v1/dev/tokens", body(json!({"principal": ""})), 400, "INVALID_PRINCIPAL", Some("principal")),
        ("GET", "/v1/ws", vec![], 400, "INVALID_REQUEST", None),
        ("GET", "/v1/ws?access_token=forged", vec![], 400, "INVALID_REQUEST", None),
    ];
    for (method, path, request, status, code, field) in cases {
        let (got, head, text) = http_raw(&addr, method, path, &request).await;
        let what = format!("{method} {path} → {got} {text}");
        assert_eq!(got, status, "{what}");
        assert!(head.contains("content-type: application/json"), "{what}\n{head}");
        let body: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {what}"));
        let keys: Vec<&str> = body.as_object().expect("an object").keys().map(String::as_str).collect();
        assert!(keys.iter().all(|k| ["code", "message", "field"].contains(k)), "one shape: {what}");
        assert_eq!(body["code"], code, "{what}");
        assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}");
        assert_eq!(body["field"].as_str(), field, "{what}");
        if got == 405 {
            assert!(head.contains("\r\nallow: "), "a 405 says what is allowed: {head}");
        }
    }
}
