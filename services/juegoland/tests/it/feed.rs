//! The platform's feed of match lifecycle events (`GET /v1/feed`) through the all-in-one:
//! what a results and ratings consumer reads, at its own pace, from a cursor.

use serde_json::{Value, json};

use crate::client::Server;

async fn create(server: &Server, game: &str, seats: Value) -> String {
    let (status, body) = server.http("POST", "/v1/matches", Some(json!({ "game": game, "seats": seats }))).await;
    assert_eq!(status, 201, "{body}");
    body["matchId"].as_str().unwrap().to_owned()
}

async fn feed(server: &Server, query: &str) -> Value {
    let (status, page) = server.http("GET", &format!("/v1/feed{query}"), None).await;
    assert_eq!(status, 200, "{page}");
    page
}

fn kinds(page: &Value) -> Vec<(String, String)> {
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["match"]["matchId"].as_str().unwrap().to_owned(), e["kind"].as_str().unwrap().to_owned()))
        .collect()
}

/// Creations, a withdrawal that leaves a three-player La Oca going, a cancellation and a
/// withdrawal that ends La Oca each write one event, in order, with the match as it was; a
/// consumer paging with `next` reads each once, and resuming at the end reads nothing.
#[tokio::test]
async fn the_feed_tells_each_lifecycle_event_once_in_order() {
    let server = Server::start(&[]);
    let c4 = create(&server, "conecta4", json!({ "p0": "alice", "p1": "bob" })).await;
    let oca = create(&server, "oca", json!({ "p0": "dora", "p1": "eve", "p2": "fay" })).await;
    let post = |path: String, body: Value| {
        let server = &server;
        async move {
            let (status, answer) = server.http("POST", &path, Some(body)).await;
            assert_eq!(status, 200, "{path}: {answer}");
        }
    };
    post(format!("/v1/matches/{oca}/withdrawals"), json!({ "seat": "p2" })).await;
    post(format!("/v1/matches/{c4}/cancellation"), json!({ "reasonCode": "platform.abandoned" })).await;
    post(format!("/v1/matches/{oca}/withdrawals"), json!({ "seat": "p1" })).await;

    let all = feed(&server, "").await;
    let expected = [
        (c4.clone(), "created"),
        (oca.clone(), "created"),
        (oca.clone(), "seatChanged"),
        (c4.clone(), "cancelled"),
        (oca.clone(), "finished"),
    ]
    .map(|(m, k)| (m, k.to_owned()));
    assert_eq!(kinds(&all), expected, "{all}");
    let events = all["events"].as_array().unwrap();
    assert_eq!(events[2]["match"]["seats"][2]["status"], "withdrawn", "{}", events[2]);
    assert_eq!(events[2]["match"]["status"], "active");
    assert_eq!(events[3]["match"]["result"], json!({ "kind": "cancelled", "reasonCode": "platform.abandoned" }));
    assert_eq!(events[4]["match"]["result"]["participants"]["p0"]["outcome"], "win", "{}", events[4]);
    assert_eq!(events[0]["id"], format!("{c4}/0"));
    assert_eq!(all["next"], events[4]["cursor"]);

    // Two at a time: the same events, each once.
    let mut paged = Vec::new();
    let mut query = "?limit=2".to_owned();
    loop {
        let page = feed(&server, &query).await;
        let got = kinds(&page);
        paged.extend(got.clone());
        if got.is_empty() {
            assert_eq!(page["next"], all["next"], "an empty page keeps the cursor");
            break;
        }
        query = format!("?limit=2&after={}", page["next"].as_str().unwrap());
    }
    assert_eq!(paged, expected);

    for (query, field) in [("?after=x", "after"), ("?limit=0", "limit"), ("?limit=101", "limit")] {
        let (status, body) = server.http("GET", &format!("/v1/feed{query}"), None).await;
        assert_eq!((status, body["field"].as_str()), (400, Some(field)), "{query}: {body}");
    }
}
