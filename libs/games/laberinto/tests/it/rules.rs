//! Every rule of the Laberinto profile through the engine, one named test each.

use juegoland_laberinto::model::{Bearing, Exit};
use juegoland_laberinto::{Direction, FINISH_DEADLINE};
use juegoland_protocol::RejectionCode;
use serde_json::json;

use crate::engine::{Match, applied, at, rejected};

/// A rejected command left the state, its revision and its state sequence unchanged.
fn unchanged(m: &mut Match, seat: &str, at_ms: i64, action: &str, payload: serde_json::Value) -> RejectionCode {
    let before = m.state().clone();
    let code = rejected(&m.send_at(seat, at_ms, action, payload));
    let after = m.state();
    assert_eq!(after.revision, before.revision, "a rejection changes no revision");
    assert_eq!(after.position, before.position, "nor the state (its sequence included)");
    code
}

#[test]
fn cooldown_a_move_inside_the_players_cooldown_is_rejected_and_each_player_has_their_own_clock() {
    let mut m = Match::scenario(json!({"cooldownMs": 150}), |_| {});
    applied(&m.mv_at("p0", 2_000, "east"));
    // p1's clock is its own: it moves 1 ms after p0.
    applied(&m.mv_at("p1", 2_001, "west"));
    let code = unchanged(&mut m, "p0", 2_149, "move", json!({"direction": "east"}));
    assert_eq!(code, RejectionCode::IllegalAction);
    applied(&m.mv_at("p0", 2_150, "east"));
    assert_eq!(m.data().players["p0"].cell, at(0, 2));
    // A drop is not a move: no cooldown, but it does not reset the move clock either.
    assert_eq!(m.data().players["p1"].last_move_ms, Some(2_001));
}

#[test]
fn wall_a_move_into_a_wall_or_off_the_map_is_rejected() {
    let mut m = Match::scenario(json!({}), |d| {
        // Close the wall east of p0's start.
        d.cells[0] &= !Direction::East.bit();
        d.cells[1] &= !Direction::West.bit();
    });
    assert_eq!(unchanged(&mut m, "p0", 2_000, "move", json!({"direction": "east"})), RejectionCode::IllegalAction);
    assert_eq!(unchanged(&mut m, "p0", 2_001, "move", json!({"direction": "north"})), RejectionCode::IllegalAction);
    assert_eq!(unchanged(&mut m, "p0", 2_002, "move", json!({"direction": "west"})), RejectionCode::IllegalAction);
    applied(&m.mv_at("p0", 2_003, "south"));
}

#[test]
fn out_of_order_instant_a_command_earlier_than_the_players_last_accepted_one_is_rejected() {
    let mut m = Match::scenario(json!({}), |_| {});
    applied(&m.mv_at("p0", 5_000, "east"));
    assert_eq!(unchanged(&mut m, "p0", 4_999, "move", json!({"direction": "east"})), RejectionCode::IllegalAction);
    // The rival's clock is not p0's: an earlier instant is fine for p1's first command.
    applied(&m.mv_at("p1", 4_000, "west"));
    applied(&m.mv_at("p0", 5_000, "east"));
}

#[test]
fn countdown_commands_are_rejected_until_the_deadline_starts_the_race() {
    let mut m = Match::new(json!({"countdownMs": 3000}), 1);
    assert_eq!(m.state().position.flow.phase, "countdown");
    assert_eq!(m.state().deadlines["countdown"].due_ms, crate::engine::START_MS + 3000);
    let code = unchanged(&mut m, "p0", 2_000, "move", json!({"direction": "east"}));
    assert_eq!(code, RejectionCode::ActorNotEnabled, "nobody acts in the countdown");
    m.fire_at("countdown", 4_000).unwrap();
    assert_eq!(m.state().position.flow.phase, "racing");
    assert_eq!(m.state().position.flow.actors.len(), 2);
    assert_eq!(m.data().seq, 1);
}

#[test]
fn positions_never_block_and_a_meeting_emits_one_event_and_bumps_the_meeting_sequence() {
    let mut m = Match::scenario(json!({}), |d| {
        d.players.get_mut("p1").unwrap().cell = at(0, 1);
    });
    applied(&m.mv_at("p0", 2_000, "east"));
    assert_eq!(m.data().players["p0"].cell, m.data().players["p1"].cell, "two players share a cell");
    assert_eq!(m.data().meeting_seq, 1);
    let events = &m.log.last().unwrap().events;
    assert_eq!(events.iter().filter(|e| e["kind"] == "met").count(), 1, "{events:?}");
    applied(&m.mv_at("p0", 2_001, "east"));
    assert_eq!(m.data().meeting_seq, 1, "leaving is no meeting");
}

#[test]
fn meeting_swap_a_meeting_returns_every_carried_key_to_its_owner() {
    let mut m = Match::scenario(json!({}), |d| {
        // p1 carries p0's key; p0 carries nothing.
        d.ground_keys.insert("p0".into(), None);
        d.players.get_mut("p1").unwrap().inventory = Some("p0".into());
        d.players.get_mut("p1").unwrap().cell = at(0, 1);
    });
    applied(&m.mv_at("p0", 2_000, "east"));
    let d = m.data();
    assert_eq!(d.players["p0"].inventory.as_deref(), Some("p0"));
    assert_eq!(d.players["p1"].inventory, None);
}

#[test]
fn crossed_keys_swap_atomically_at_a_meeting() {
    let mut m = Match::scenario(json!({}), |d| {
        d.ground_keys.insert("p0".into(), None);
        d.ground_keys.insert("p1".into(), None);
        d.players.get_mut("p0").unwrap().inventory = Some("p1".into());
        d.players.get_mut("p1").unwrap().inventory = Some("p0".into());
        d.players.get_mut("p1").unwrap().cell = at(1, 0);
    });
    applied(&m.mv_at("p1", 2_000, "north"));
    let d = m.data();
    assert_eq!(d.players["p0"].inventory.as_deref(), Some("p0"));
    assert_eq!(d.players["p1"].inventory.as_deref(), Some("p1"));
    assert!(d.ground_keys.values().all(Option::is_none), "no key duplicated on the ground");
}

#[test]
fn the_lowest_owner_ground_key_is_picked_up_only_with_an_empty_slot() {
    let mut m = Match::scenario(json!({}), |d| {
        d.ground_keys.insert("p0".into(), Some(at(0, 1)));
        d.ground_keys.insert("p1".into(), Some(at(0, 1)));
    });
    applied(&m.mv_at("p0", 2_000, "east"));
    assert_eq!(m.data().players["p0"].inventory.as_deref(), Some("p0"), "the lowest owner first");
    applied(&m.mv_at("p0", 2_001, "west"));
    applied(&m.mv_at("p0", 2_002, "east"));
    assert_eq!(m.data().ground_keys["p1"], Some(at(0, 1)), "a full slot picks nothing up");
    applied(&m.send_at("p0", 2_003, "drop", json!({})));
    assert_eq!(m.data().ground_keys["p0"], Some(at(0, 1)), "a drop places the key on the current cell");
    assert_eq!(unchanged(&mut m, "p0", 2_004, "drop", json!({})), RejectionCode::IllegalAction, "an empty slot");
}

#[test]
fn vision_effect_reset_an_artifact_sets_ten_moves_without_stacking_and_only_moves_count_down() {
    let mut m = Match::scenario(json!({}), |d| d.artifacts = vec![at(0, 1), at(0, 3)]);
    applied(&m.mv_at("p0", 2_000, "east"));
    assert_eq!(m.data().players["p0"].vision_moves, 10);
    assert_eq!(juegoland_laberinto::view::radius(&m.data(), "p0"), 6);
    applied(&m.mv_at("p0", 2_001, "east"));
    assert_eq!(m.data().players["p0"].vision_moves, 9);
    // A failed move does not count down.
    unchanged(&mut m, "p0", 2_002, "move", json!({"direction": "north"}));
    assert_eq!(m.data().players["p0"].vision_moves, 9);
    applied(&m.mv_at("p0", 2_003, "east"));
    assert_eq!(m.data().players["p0"].vision_moves, 10, "a second artifact resets to ten, no stacking");
    assert!(m.data().artifacts.is_empty(), "consumed on entry");
    for i in 0..10 {
        applied(&m.mv_at("p0", 2_010 + i, if i % 2 == 0 { "south" } else { "north" }));
    }
    assert_eq!(m.data().players["p0"].vision_moves, 0);
    assert_eq!(juegoland_laberinto::view::radius(&m.data(), "p0"), 3);
}

#[test]
fn compass_cleared_the_bearing_stays_through_rejections_and_clears_on_the_next_successful_move() {
    let mut m = Match::scenario(json!({}), |d| {
        d.compasses.insert("p0".into(), at(0, 1));
        d.exits.insert("p0".into(), Exit { cell: at(6, 5), side: Direction::South, open: false });
    });
    applied(&m.mv_at("p0", 2_000, "east"));
    assert_eq!(m.data().players["p0"].compass, Some(Bearing::Se), "a bearing to the own exit, no coordinate");
    unchanged(&mut m, "p0", 2_001, "move", json!({"direction": "north"}));
    assert_eq!(m.data().players["p0"].compass, Some(Bearing::Se), "kept through a rejection");
    applied(&m.mv_at("p0", 2_002, "east"));
    assert_eq!(m.data().players["p0"].compass, None, "cleared by the next successful move");
    applied(&m.mv_at("p0", 2_003, "west"));
    assert_eq!(m.data().players["p0"].compass, Some(Bearing::Se), "re-activated by entering it again");
    // The rival's compass gives p0 nothing.
    let mut m = Match::scenario(json!({}), |d| d.compasses.insert("p1".into(), at(0, 1)).map(|_| ()).unwrap());
    applied(&m.mv_at("p0", 2_000, "east"));
    assert_eq!(m.data().players["p0"].compass, None);
}

#[test]
fn exit_needs_own_key_an_exit_opens_only_under_its_owners_key() {
    let exit = Exit { cell: at(6, 1), side: Direction::South, open: false };
    let mut m = Match::scenario(json!({}), |d| {
        d.exits.insert("p0".into(), exit);
        d.ground_keys.insert("p1".into(), None);
        d.players.get_mut("p0").unwrap().inventory = Some("p1".into());
        d.players.get_mut("p0").unwrap().cell = at(5, 1);
    });
    applied(&m.mv_at("p0", 2_000, "south"));
    assert!(!m.data().exits["p0"].open, "the rival's key opens nothing");
    assert_eq!(unchanged(&mut m, "p0", 2_001, "move", json!({"direction": "south"})), RejectionCode::IllegalAction);
    let mut m = Match::scenario(json!({}), |d| {
        d.exits.insert("p0".into(), exit);
        d.ground_keys.insert("p0".into(), None);
        d.players.get_mut("p0").unwrap().inventory = Some("p0".into());
        d.players.get_mut("p0").unwrap().cell = at(5, 1);
        d.players.get_mut("p1").unwrap().cell = at(5, 6);
    });
    applied(&m.mv_at("p0", 2_000, "south"));
    assert!(m.data().exits["p0"].open);
    assert!(!m.finished(), "opening is not finishing");
    // The rival cannot leave through p0's exit.
    let mut d = m.data();
    d.players.get_mut("p1").unwrap().cell = at(6, 1);
    m.set_data(d);
    assert_eq!(unchanged(&mut m, "p1", 2_001, "move", json!({"direction": "south"})), RejectionCode::IllegalAction);
    applied(&m.mv_at("p0", 2_002, "south"));
    assert_eq!(m.data().finish.as_ref().map(|f| f.first.as_str()), Some("p0"));
}

/// Both players stand on their own open exits.
fn both_at_open_exits() -> Match {
    Match::scenario(json!({}), |d| {
        d.exits.insert("p0".into(), Exit { cell: at(6, 1), side: Direction::South, open: true });
        d.exits.insert("p1".into(), Exit { cell: at(0, 5), side: Direction::North, open: true });
        d.players.get_mut("p0").unwrap().cell = at(6, 1);
        d.players.get_mut("p1").unwrap().cell = at(0, 5);
    })
}

fn outcomes(m: &Match) -> (serde_json::Value, serde_json::Value) {
    let r = m.result();
    (r["participants"]["p0"]["outcome"].clone(), r["participants"]["p1"]["outcome"].clone())
}

#[test]
fn finish_window_draw_at_0_ms() {
    let mut m = both_at_open_exits();
    applied(&m.mv_at("p0", 10_000, "south"));
    assert!(!m.finished());
    assert_eq!(m.state().deadlines[FINISH_DEADLINE].due_ms, 10_201, "the window's deadline, strictly after 200 ms");
    applied(&m.mv_at("p1", 10_000, "north"));
    assert_eq!(outcomes(&m), (json!("draw"), json!("draw")));
    assert!(m.state().deadlines.is_empty(), "the window's deadline is cancelled");
}

#[test]
fn finish_window_draw_at_200_ms() {
    let mut m = both_at_open_exits();
    applied(&m.mv_at("p1", 10_000, "north"));
    applied(&m.mv_at("p0", 10_200, "south"));
    assert_eq!(outcomes(&m), (json!("draw"), json!("draw")));
}

#[test]
fn winner_at_201_ms_by_the_deadline() {
    let mut m = both_at_open_exits();
    applied(&m.mv_at("p0", 10_000, "south"));
    // Early (a skewed clock): the window is still open, the rules refuse.
    assert!(m.fire_at(FINISH_DEADLINE, 10_200).is_err());
    assert!(!m.finished());
    m.fire_at(FINISH_DEADLINE, 10_201).unwrap();
    assert_eq!(outcomes(&m), (json!("win"), json!("loss")));
}

#[test]
fn winner_at_201_ms_by_the_rivals_late_exit() {
    let mut m = both_at_open_exits();
    applied(&m.mv_at("p0", 10_000, "south"));
    // p0 is out of the race: it has no stage to act in.
    assert_eq!(m.state().position.flow.stage_of("p0"), Some("out"));
    applied(&m.mv_at("p1", 10_201, "north"));
    assert_eq!(outcomes(&m), (json!("win"), json!("loss")), "the clock advance finalizes the first");
}

#[test]
fn withdrawal_in_the_race_loses_and_in_the_countdown_cancels() {
    let mut m = Match::scenario(json!({}), |_| {});
    m.withdraw("p1");
    assert_eq!(outcomes(&m), (json!("win"), json!("loss")));
    let mut m = Match::new(json!({}), 3);
    m.withdraw("p0");
    assert_eq!(m.result()["kind"], "cancelled");
}
