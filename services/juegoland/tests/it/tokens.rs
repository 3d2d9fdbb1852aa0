//! Players' tokens from an identity provider, against the binary: `juegoland dev` verifies
//! RS256 and EdDSA tokens by `kid` from a JWKS URL served here, with the issuer and the
//! audience it is told to expect, tokens shaped as Auth0 issues them (an `aud` list, `azp`,
//! `scope`), a key rotation read when a token first names the new key, and refusals that say
//! why over WebSocket and Socket.IO.

use std::sync::{Arc, Mutex};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::client::Server;
use crate::wire::{Conn, Transport};

const ISSUER: &str = "https://example.eu.auth0.com/";
const AUDIENCE: &str = "https://play.example.com";

/// The test provider's keys (`libs/edge/tests/fixtures/idp-keys.json`): a private key and its
/// public JWK with `kid`.
fn key(name: &str, kid: &str) -> (EncodingKey, Value) {
    let keys: Value = serde_json::from_str(include_str!("../../../../libs/edge/tests/fixtures/idp-keys.json")).unwrap();
    let pem = keys[name]["private"].as_str().unwrap().as_bytes();
    let private = if name == "rsa" { EncodingKey::from_rsa_pem(pem) } else { EncodingKey::from_ed_pem(pem) };
    let mut jwk = keys[name]["jwk"].clone();
    jwk["kid"] = json!(kid);
    (private.unwrap(), jwk)
}

/// A JWKS endpoint on a local port: answers every GET with the keys it holds now, and counts
/// the reads.
struct Jwks {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    reads: Arc<Mutex<u32>>,
}

impl Jwks {
    async fn serve(keys: Vec<Value>) -> Jwks {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/.well-known/jwks.json", listener.local_addr().unwrap());
        let (keys, reads) = (Arc::new(Mutex::new(keys)), Arc::new(Mutex::new(0)));
        let (held, counted) = (keys.clone(), reads.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let body = json!({ "keys": *held.lock().unwrap() }).to_string();
                *counted.lock().unwrap() += 1;
                tokio::spawn(async move {
                    let mut head = [0u8; 4096];
                    let _ = stream.read(&mut head).await;
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(answer.as_bytes()).await;
                });
            }
        });
        Jwks { url, keys, reads }
    }
}

fn token(alg: Algorithm, kid: &str, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

/// An access token as Auth0 issues it for the API `AUDIENCE`, with `changes` applied.
fn claims(sub: &str, changes: Value) -> Value {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut claims = json!({
        "iss": ISSUER, "sub": sub, "aud": [AUDIENCE, format!("{ISSUER}userinfo")],
        "iat": now, "exp": now + 600, "azp": "Xk3l0o2Ys", "scope": "openid profile",
    });
    for (k, v) in changes.as_object().unwrap() {
        match v {
            Value::Null => claims.as_object_mut().unwrap().remove(k),
            v => claims.as_object_mut().unwrap().insert(k.clone(), v.clone()),
        };
    }
    claims
}

/// The refusal of a WebSocket connection with `token`: (status, `WWW-Authenticate`, body).
async fn refusal(addr: &str, token: &str) -> (u16, String, String) {
    match tokio_tungstenite::connect_async(format!("ws://{addr}/v1/ws?access_token={token}")).await {
        Ok(_) => (101, String::new(), String::new()),
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
            let challenge = r.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
            let body = r.body().as_ref().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
            (r.status().as_u16(), challenge, body)
        }
        Err(e) => panic!("websocket connect: {e}"),
    }
}

// Two threads: the JWKS endpoint answers while the test waits for the server to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_from_an_identity_provider_verify_by_kid_and_refusals_say_why() {
    let (rsa, rsa_jwk) = key("rsa", "2024-rsa");
    let (ed, ed_jwk) = key("ed_a", "2025-ed");
    let jwks = Jwks::serve(vec![rsa_jwk]).await;
    let server = Server::start(&[
        "--jwks-url",
        &jwks.url,
        "--jwt-issuer",
        ISSUER,
        "--jwt-audience",
        AUDIENCE,
        "--jwt-leeway-secs",
        "5",
    ]);
    let addr = server.addr.to_string();
    let alice = "auth0|6571f3a2c9";
    let m = server.create(json!({ "p0": alice, "p1": "auth0|bob" })).await;

    // The provider's token plays the seat the platform gave its subject.
    let good = token(Algorithm::RS256, "2024-rsa", &rsa, &claims(alice, json!({})));
    let mut conn = Conn::open(&addr, &good).await.expect("the provider's token is accepted");
    let accept: Value = serde_json::from_str(crate::client::ACCEPT).unwrap();
    conn.send(&json!({"protocolVersion": 1, "type": "game.sync", "requestId": "r", "matchId": m, "accept": accept}))
        .await;
    let snapshot =
        conn.answer(std::time::Duration::from_secs(10), &mut Vec::new(), |v| v["type"] == "game.snapshot").await;
    assert_eq!(snapshot.expect("a snapshot")["seat"], "p0");

    // The provider rotates to an EdDSA key: the first token naming it makes the server read
    // the JWKS again, and it is accepted.
    let reads = *jwks.reads.lock().unwrap();
    assert_eq!(reads, 1, "the keys were read at start");
    jwks.keys.lock().unwrap().push(ed_jwk);
    let rotated = token(Algorithm::EdDSA, "2025-ed", &ed, &claims(alice, json!({})));
    assert!(Conn::open(&addr, &rotated).await.is_ok(), "a token of the rotated key");
    assert_eq!(*jwks.reads.lock().unwrap(), reads + 1, "one read for the new key");
    // A token naming a key nobody published makes no other read within 10 s of that one
    // (below): made-up key ids cannot make the server fetch on every connection.

    // Each refusal names its reason, and never the secret or a claim.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    // alice's signature over mallory's claims.
    let mallory = token(Algorithm::RS256, "2024-rsa", &rsa, &claims("auth0|mallory", json!({})));
    let tampered = {
        let (ours, theirs): (Vec<&str>, Vec<&str>) = (good.split('.').collect(), mallory.split('.').collect());
        format!("{}.{}.{}", ours[0], theirs[1], ours[2])
    };
    let cases = [
        (
            token(Algorithm::RS256, "2024-rsa", &rsa, &claims(alice, json!({"aud": "https://other.example"}))),
            "wrong_audience",
        ),
        (token(Algorithm::RS256, "2024-rsa", &rsa, &claims(alice, json!({"aud": null}))), "wrong_audience"),
        (
            token(Algorithm::RS256, "2024-rsa", &rsa, &claims(alice, json!({"iss": "https://evil.example/"}))),
            "wrong_issuer",
        ),
        (token(Algorithm::RS256, "2024-rsa", &rsa, &claims(alice, json!({"exp": now - 60}))), "expired"),
        (token(Algorithm::RS256, "2024-rsa", &rsa, &claims(alice, json!({"nbf": now + 120}))), "not_yet_valid"),
        (tampered, "bad_signature"),
        (token(Algorithm::EdDSA, "never-published", &ed, &claims(alice, json!({}))), "unknown_key"),
        ("not-a-token".to_owned(), "malformed"),
    ];
    for (refused, reason) in &cases {
        let (status, challenge, body) = refusal(&addr, refused).await;
        assert_eq!(status, 401, "{reason}: {body}");
        assert_eq!(challenge, format!("Bearer error=\"invalid_token\", error_description=\"{reason}\""), "{body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["code"], "UNAUTHENTICATED");
        assert!(body["message"].as_str().unwrap().contains(reason), "{body}");
    }
    assert_eq!(*jwks.reads.lock().unwrap(), 2, "no read for an unknown key so soon after the last");
    // Over Socket.IO the reason is in the error's message key.
    let expired = &cases[3].0;
    let ws = tokio_tungstenite::connect_async(format!("ws://{addr}/socket.io/?EIO=4&transport=websocket")).await;
    let mut sio = Conn { ws: ws.expect("engine.io connects").0, transport: Transport::SocketIo };
    sio.packet(std::time::Duration::from_secs(5)).await.expect("the open packet");
    sio.send_raw(&format!("40{}", json!({ "token": expired }))).await;
    let refused = sio
        .answer(std::time::Duration::from_secs(5), &mut Vec::new(), |v| v["type"] == "game.error")
        .await
        .expect("an UNAUTHENTICATED event");
    assert_eq!(
        (refused["code"].as_str(), refused["messageKey"].as_str()),
        (Some("UNAUTHENTICATED"), Some("error.unauthenticated.expired"))
    );
}
