//! `validate_position`: the invariants of a Brisca position. An error is corruption.

use juegoland_sdk::{Corrupt, Pos, check_conservation};

use crate::cards::{TOTAL_POINTS, face, points};
use crate::table::{HAND, STOCK, TABLE, TRUMP, hand_zone, won_zone};
use crate::{Brisca, PHASE, STAGE_FOLLOW, STAGE_LEAD, main_deck, table};

fn corrupt(message: impl Into<String>) -> Corrupt {
    Corrupt(message.into())
}

pub(crate) fn position(p: &Pos<Brisca>) -> Result<(), Corrupt> {
    let (config, data) = (&p.config, &p.data);
    config.check().map_err(|e| corrupt(e.to_string()))?;
    let t = table(config);
    let n = t.players;
    let seats = t.seats();
    if p.participants.keys().cloned().collect::<Vec<_>>() != seats {
        return Err(corrupt(format!("a {n}-player match has seats p0..p{}", n - 1)));
    }
    // Every card in exactly one zone, and only the zones of the contract.
    check_conservation(&data.zones, main_deck().instances()).map_err(|e| corrupt(e.to_string()))?;
    let mut expected: Vec<String> =
        [STOCK, TRUMP, TABLE, "supply"].iter().map(|z| (*z).to_owned()).chain((0..2).map(won_zone)).collect();
    expected.extend(seats.iter().map(|s| hand_zone(s)));
    expected.sort();
    let mut zones: Vec<String> = data.zones.iter().map(|(z, _)| z.to_owned()).collect();
    zones.sort();
    if zones != expected {
        return Err(corrupt(format!("zones {zones:?}, expected {expected:?}")));
    }
    if data.zones.count("supply") != 0 {
        return Err(corrupt("the deal leaves the supply empty"));
    }
    // Points add up to 120 over every zone.
    let all: u32 = data.zones.iter().flat_map(|(_, z)| z.cards.iter()).filter_map(face).map(|f| points(f.rank)).sum();
    if all != TOTAL_POINTS {
        return Err(corrupt(format!("the cards hold {all} points, not {TOTAL_POINTS}")));
    }
    // The trump: one face-up card of the trump suit, under which the stock lies.
    let trump = t.cards(data, TRUMP);
    if trump.len() > 1 || (trump.is_empty() && data.zones.count(STOCK) > 0) {
        return Err(corrupt("the face-up trump is one card, drawn only after the stock"));
    }
    if let Some(card) = trump.first()
        && face(card).map(|f| f.suit) != Some(data.trump_suit)
    {
        return Err(corrupt("the face-up trump is not of the trump suit"));
    }
    // The trick on the table, in turn order from the leader.
    if data.table.len() != data.zones.count(TABLE) || data.table.len() >= n {
        return Err(corrupt("the table's seats do not match its cards, or a complete trick was left on it"));
    }
    let mut s = data.leader.clone();
    for played in &data.table {
        if *played != s {
            return Err(corrupt(format!("{played} played out of turn (expected {s})")));
        }
        s = crate::table::next_seat(&s, n);
    }
    // Hands: equal sizes, minus one for the seats that have played to this trick.
    let base = t.cards(data, &hand_zone(&data.leader)).len() + usize::from(!data.table.is_empty());
    for seat in &seats {
        let size = t.cards(data, &hand_zone(seat)).len();
        let want = if data.table.contains(seat) { base - 1 } else { base };
        if size != want || size > HAND {
            return Err(corrupt(format!("{seat} holds {size} cards, expected {want}")));
        }
    }
    let won = data.zones.count(&won_zone(0)) + data.zones.count(&won_zone(1));
    if won != data.tricks as usize * n {
        return Err(corrupt(format!("{won} won cards after {} tricks", data.tricks)));
    }
    if p.flow.phase != PHASE || p.flow.round != data.tricks {
        return Err(corrupt("the phase is playing and the round counts the tricks"));
    }
    match &p.result {
        None => {
            let to_play = t.to_play(data);
            let stage = if data.table.is_empty() { STAGE_LEAD } else { STAGE_FOLLOW };
            if p.flow.actors.len() != 1 || p.flow.stage_of(&to_play) != Some(stage) {
                return Err(corrupt(format!("{to_play} must be the one actor, in stage {stage}")));
            }
            if t.cards(data, &hand_zone(&to_play)).is_empty() {
                return Err(corrupt("the actor has no card"));
            }
        }
        Some(_) => {
            if !p.flow.actors.is_empty() {
                return Err(corrupt("a finished match has no actors"));
            }
        }
    }
    Ok(())
}
