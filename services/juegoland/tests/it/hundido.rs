//! Hundido end to end: two clients place their fleets at the same time from two
//! connections, ready up, and play the battle to a result over real WebSockets.

use serde_json::{Value, json};

use crate::client::{Client, Server, uuid};

const FLEET: [(&str, u64); 5] = [("carrier", 5), ("battleship", 4), ("cruiser", 3), ("submarine", 3), ("destroyer", 2)];

fn accept() -> Value {
    json!([{"id":"hundido","rulesVersion":"1.0.0","viewSchemaVersion":1,"eventSchemaVersion":1}])
}

async fn sync(c: &mut Client, m: &str, request: &str) -> Value {
    c.send(&json!({"protocolVersion":1,"type":"game.sync","requestId":request,"matchId":m,"accept":accept()})).await;
    let snap = c.recv().await;
    assert_eq!(snap["type"], "game.snapshot", "{snap}");
    assert_eq!(snap["requestId"], request);
    snap
}

fn offer<'a>(snap: &'a Value, action: &str) -> Option<&'a Value> {
    snap["actions"].as_array()?.iter().find(|o| o["type"] == action)
}

fn command(m: &str, precondition: &Value, action: &str, payload: Value) -> Value {
    json!({"protocolVersion":1,"type":"game.command","matchId":m,"commandId":uuid(),
        "precondition":precondition,"action":{"type":action,"payload":payload}})
}

/// Sends without waiting; the caller collects the ack later.
async fn place(c: &mut Client, m: &str, precondition: &Value, ship: &str, row: u64) {
    let payload = json!({"ship":ship,"row":row,"column":0,"orientation":"horizontal"});
    c.send(&command(m, precondition, "placeShip", payload)).await;
}

#[tokio::test]
async fn a_full_match_with_simultaneous_placement_from_two_connections() {
    let server = Server::start(&[]);
    let (status, body) = server
        .http("POST", "/v1/matches", Some(json!({"game":"hundido","seats":{"p0":"alice","p1":"bob"},"config":{}})))
        .await;
    assert_eq!(status, 201, "{body}");
    let m = body["matchId"].as_str().unwrap().to_owned();
    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;
    let a0 = sync(&mut alice, &m, "a").await;
    let b0 = sync(&mut bob, &m, "b").await;
    // Both place from the same snapshot epoch, each with its own actor revision.
    let mut pa = offer(&a0, "placeShip").expect("alice may place")["precondition"].clone();
    let mut pb = offer(&b0, "placeShip").expect("bob may place")["precondition"].clone();
    assert_eq!(pa["kind"], "actor");
    assert_eq!(pa["phaseEpoch"], pb["phaseEpoch"]);
    for (i, (ship, _)) in FLEET.iter().enumerate() {
        let row = 2 * i as u64;
        // Interleaved: neither waits for the other's placement to be applied.
        place(&mut alice, &m, &pa, ship, row).await;
        place(&mut bob, &m, &pb, ship, row).await;
        let (aa, _) = alice.recv_type("game.ack").await;
        let (ab, _) = bob.recv_type("game.ack").await;
        assert_eq!(aa["status"], "applied", "{aa}");
        assert_eq!(ab["status"], "applied", "{ab}");
        // Only one's own actor revision moves; the epoch stays: no needless conflict.
        pa["actorRevision"] = json!(pa["actorRevision"].as_u64().unwrap() + 1);
        pb["actorRevision"] = json!(pb["actorRevision"].as_u64().unwrap() + 1);
    }
    let stale_placement =
        command(&m, &pa, "placeShip", json!({"ship":"destroyer","row":9,"column":5,"orientation":"horizontal"}));
    alice.send(&command(&m, &pa, "ready", json!({}))).await;
    assert_eq!(alice.recv_type("game.ack").await.0["status"], "applied");
    bob.send(&command(&m, &pb, "ready", json!({}))).await;
    assert_eq!(bob.recv_type("game.ack").await.0["status"], "applied");
    // The battle started: a placement prepared before the barrier is stale.
    alice.send(&stale_placement).await;
    let (late, _) = alice.recv_type("game.ack").await;
    assert_eq!(late["status"], "rejected");
    assert_eq!(late["code"], "STALE_EPOCH", "{late}");

    // Battle: alice sinks bob's fleet; bob fires at water (odd rows).
    let mut targets: Vec<(u64, u64)> = Vec::new();
    for (i, (_, size)) in FLEET.iter().enumerate() {
        for c in 0..*size {
            targets.push((2 * i as u64, c));
        }
    }
    let mut water: Vec<(u64, u64)> = (0..5).flat_map(|r| (0..10).map(move |c| (2 * r + 1, c))).collect();
    let mut sounds = Vec::new();
    // Alice's subscription, opened at the start, has delivered every revision: 10 placements
    // and 2 readies.
    let mut latest = alice.recv_revision(12).await;
    assert_eq!(latest["context"]["phase"], "battle", "{latest}");
    while latest["result"].is_null() {
        let rev = latest["revision"].as_u64().unwrap();
        let (shooter, cell) = match offer(&latest, "fire") {
            Some(o) => {
                assert_eq!(o["schema"], "urn:juegoland:game:hundido:action:fire:1", "a parametrized offer");
                (&mut alice, targets.remove(0))
            }
            None => (&mut bob, water.remove(0)),
        };
        shooter
            .send(&command(&m, &json!({"kind":"match","revision":rev}), "fire", json!({"row":cell.0,"column":cell.1})))
            .await;
        let (ack, _) = shooter.recv_type("game.ack").await;
        assert_eq!(ack["status"], "applied", "{ack}");
        latest = alice.recv_revision(rev + 1).await;
        for e in latest["events"].as_array().unwrap() {
            if e["type"] == "shot.fired" {
                sounds.push(e["data"]["outcome"].as_str().unwrap().to_owned());
            }
        }
    }
    assert_eq!(latest["result"]["participants"]["p0"]["outcome"], "win");
    assert_eq!(latest["result"]["participants"]["p1"]["outcome"], "loss");
    // The clients could pick water, hit and sink sounds from visible events alone.
    for outcome in ["water", "hit", "sunk"] {
        assert!(sounds.iter().any(|s| s == outcome), "{outcome} in {sounds:?}");
    }
}
