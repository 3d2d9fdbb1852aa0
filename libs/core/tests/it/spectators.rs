//! Spectators: a game that defines a spectator projection gets one publication for spectators
//! (recipient `None`, seat `null`, its visible events, no offers) in every revision while they
//! follow the match (`LiveMatch::set_watched`); a game that does not gets none, and a
//! spectator's sync snapshot is a fault there.

use juegoland_protocol::{Precondition, ServerMessage};
use juegoland_sdk::Recipient;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::harness::Harness;

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).expect("publications are JSON")
}

#[test]
fn every_revision_of_a_game_with_spectators_publishes_their_snapshot() {
    let mut h = Harness::conecta4();
    for column in [3, 3, 4] {
        h.drop_disc(column).ack();
    }
    for revision in 1..=3u64 {
        let of_revision: Vec<_> = h.publications.iter().filter(|p| p.revision == revision).collect();
        let recipients: Vec<Option<&str>> = of_revision.iter().map(|p| p.recipient.as_deref()).collect();
        assert_eq!(recipients, [Some("p0"), Some("p1"), None], "revision {revision}");
        let spectator = json_of(&of_revision[2].encoded);
        let seat = json_of(&of_revision[0].encoded);
        assert_eq!(spectator["seat"], Value::Null);
        assert_eq!(spectator["actions"], json!([]), "spectators are offered nothing");
        assert_eq!(spectator["fromRevision"], revision - 1);
        // Conecta 4 is public: the spectator sees the seats' board and the same events, under
        // ids of its own.
        assert_eq!(spectator["view"], seat["view"]);
        let types = |v: &Value| v["events"].as_array().unwrap().iter().map(|e| e["type"].clone()).collect::<Vec<_>>();
        assert_eq!(types(&spectator), types(&seat));
        assert!(!types(&spectator).is_empty());
        assert_ne!(spectator["events"][0]["eventId"], seat["events"][0]["eventId"]);
    }
    match h.live.snapshot(Recipient::Spectator, &h.engine).expect("a spectator snapshot") {
        ServerMessage::Snapshot(s) => {
            assert_eq!((s.seat, s.revision, s.actions.len(), s.events.len()), (None, 3, 0, 0));
        }
        other => panic!("expected a snapshot, got {other:?}"),
    }
    assert!(h.live.spectators());
}

#[test]
fn a_match_nobody_watches_publishes_to_its_seats_alone() {
    let mut h = Harness::conecta4();
    h.live.set_watched(false);
    h.drop_disc(3).ack();
    h.live.set_watched(true);
    h.drop_disc(3).ack();
    let recipients = |revision: u64| {
        h.publications.iter().filter(|p| p.revision == revision).map(|p| p.recipient.clone()).collect::<Vec<_>>()
    };
    assert_eq!(recipients(1), [Some("p0".to_owned()), Some("p1".to_owned())], "nobody watches revision 1");
    assert_eq!(recipients(2), [Some("p0".to_owned()), Some("p1".to_owned()), None], "a spectator watches revision 2");
    // A spectator who comes later syncs first: its snapshot needs no publication.
    assert!(h.live.snapshot(Recipient::Spectator, &h.engine).is_ok());
}

#[test]
fn a_game_without_a_spectator_projection_publishes_nothing_for_spectators() {
    let mut h = Harness::new("prep", &[("p0", "ann"), ("p1", "ben")], json!({}), 3);
    let pre =
        Precondition::Actor { phase_epoch: h.state().phase_epoch, actor_revision: h.state().actor_revisions["p0"] };
    let env = h.envelope(Uuid::from_u128(7), pre, "mark", json!({ "value": 1 }));
    assert_eq!(h.run("ann", &env).ack().status, juegoland_protocol::AckStatus::Applied);
    assert!(!h.publications.is_empty());
    assert!(h.publications.iter().all(|p| p.recipient.is_some()), "a publication for spectators");
    assert!(!h.live.spectators());
    let fault = h.live.snapshot(Recipient::Spectator, &h.engine).expect_err("no spectator projection");
    assert!(fault.0.contains("no spectator projection"), "{}", fault.0);
}
