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
        ("DELETE", "/v1/matches", vec![], 405, "METHOD_NOT_ALLOWED", None),
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
            Some("seats.p1"),
        ),
        // Found by a platform developer (issue 41): each refusal names the field itself.
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "conecta4", "seats": seats, "config": {"connect": 9}})),
            400,
            "INVALID_CONFIG",
            Some("config.connect"),
        ),
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "brisca", "seats": {"p0": "a", "p1": "b", "p2": "c", "p3": "d"}})),
            400,
            "INVALID_CONFIG",
            Some("config.players"),
        ),
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "conecta4", "seats": {"p0": "x".repeat(129), "p1": "b"}})),
            400,
            "INVALID_SEATS",
            Some("seats.p0"),
        ),
        ("GET", "/v1/matches?limit=abc", vec![], 400, "INVALID_REQUEST", Some("limit")),
        ("GET", "/v1/matches?colour=red", vec![], 400, "INVALID_REQUEST", Some("colour")),
        ("GET", "/v1/feed?limit=-1", vec![], 400, "INVALID_REQUEST", Some("limit")),
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "conecta4", "seats": seats, "config": {"rows": "six"}})),
            400,
            "INVALID_CONFIG",
            Some("config.rows"),
        ),
        ("POST", "/v1/matches", body(json!({"game": "nope", "seats": seats})), 404, "UNKNOWN_GAME", Some("game")),
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "conecta4", "rulesVersion": "9.9.9", "seats": seats})),
            404,
            "UNKNOWN_RULES_VERSION",
            Some("rulesVersion"),
        ),
        ("POST", "/v1/matches", big, 413, "PAYLOAD_TOO_LARGE", None),
        ("POST", "/v1/matches/not-a-uuid/withdrawals", body(json!({"seat": "p0"})), 404, "MATCH_NOT_FOUND", None),
        ("POST", &withdrawals, body(json!({"seat": "p9"})), 409, "UNKNOWN_SEAT", Some("seat")),
        ("POST", &withdrawals, body(json!({"seat": 1})), 400, "INVALID_REQUEST", Some("seat")),
        ("POST", "/v1/dev/tokens", body(json!({"principal": ""})), 400, "INVALID_PRINCIPAL", Some("principal")),
        // One rule for a principal everywhere: 1 to 128 characters, no control character.
        (
            "POST",
            "/v1/dev/tokens",
            body(json!({"principal": "alice\u{0}"})),
            400,
            "INVALID_PRINCIPAL",
            Some("principal"),
        ),
        (
            "POST",
            "/v1/dev/tokens",
            body(json!({"principal": "a".repeat(129)})),
            400,
            "INVALID_PRINCIPAL",
            Some("principal"),
        ),
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "conecta4", "seats": {"p0": "alice\n", "p1": "bob"}})),
            400,
            "INVALID_SEATS",
            Some("seats.p0"),
        ),
        (
            "POST",
            "/v1/matches",
            body(json!({"game": "conecta4", "seats": {"p0": "a".repeat(100_000), "p1": "bob"}})),
            400,
            "INVALID_SEATS",
            Some("seats.p0"),
        ),
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
        // A refusal that names a field says what is wrong with it, not only where.
        let message = body["message"].as_str().unwrap();
        assert!(!message.contains("..="), "no Rust ranges in messages: {what}");
        if let Some(path) = field.filter(|f| f.contains('.')) {
            assert!(message.starts_with(&format!("{path}: ")), "the message starts with its field: {what}");
        }
    }
}

/// Every game's config refusal names the field, the value and the constraint (jsonschema's
/// own message at the schema's error path), and the catalog gives each game's config schema
/// and what an empty config means.
#[tokio::test]
async fn a_bad_config_names_its_field_value_and_range_for_every_game() {
    let server = Server::start(&[]);
    let (status, catalog) = server.http("GET", "/v1/games", None).await;
    assert_eq!(status, 200, "{catalog}");
    let games = catalog.as_array().unwrap();
    assert!(games.len() >= 6, "{catalog}");
    for game in games {
        let id = game["id"].as_str().unwrap();
        let schema = &game["configSchema"];
        assert_eq!(schema["type"], "object", "{id}: {schema}");
        assert!(game["defaultConfig"].is_object(), "{id}: an empty config is the defaults: {game}");
        // An integer property past its maximum, else an unknown property.
        let properties = schema["properties"].as_object().cloned().unwrap_or_default();
        let (config, field, value) =
            match properties.iter().find_map(|(name, p)| Some((name, p["maximum"].as_u64()? + 1))) {
                Some((name, past)) => (json!({ name: past }), format!("config.{name}"), past.to_string()),
                None => (json!({ "nope": 1 }), "config.nope".to_owned(), "no such field".to_owned()),
            };
        let seats: serde_json::Map<String, Value> =
            (0..game["minSeats"].as_u64().unwrap()).map(|i| (format!("p{i}"), json!(format!("player-{i}")))).collect();
        let body = json!({ "game": id, "seats": seats, "config": config });
        let (status, refused) = server.http("POST", "/v1/matches", Some(body)).await;
        assert_eq!(
            (status, refused["code"].as_str(), refused["field"].as_str()),
            (400, Some("INVALID_CONFIG"), Some(field.as_str())),
            "{id}: {refused}"
        );
        let message = refused["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("{field}: ")) && message.contains(&value), "{id}: {message}");
    }
}
