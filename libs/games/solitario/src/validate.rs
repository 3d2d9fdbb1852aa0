//! `validate_position`: the global invariants of a Solitario position. A failure means
//! corruption (a bug or tampered storage), never a user error.

use juegoland_sdk::components::SUPPLY;
use juegoland_sdk::{ComponentSet, Corrupt, MatchResult, Outcome, ParticipantStatus, Pos, check_conservation};

use crate::model::{FOUNDATIONS, Pile, TABLEAU_COLUMNS};
use crate::table::{Table, stacks_on, zone_specs};
use crate::{PHASE, REASON_ALL_FOUNDATIONS, REASON_GAVE_UP, REASON_WITHDRAWAL, SEAT, STAGE, Solitario};

fn corrupt(message: impl Into<String>) -> Corrupt {
    Corrupt(message.into())
}

pub(crate) fn position(p: &Pos<Solitario>, set: &ComponentSet) -> Result<(), Corrupt> {
    let seats: Vec<&str> = p.participants.keys().map(String::as_str).collect();
    if seats != [SEAT] {
        return Err(corrupt(format!("participants must be exactly p0, found {seats:?}")));
    }
    let complete = cards(p, set)?;
    let data = &p.data;

    let flow = &p.flow;
    if flow.phase != PHASE {
        return Err(corrupt(format!("unknown phase {:?}", flow.phase)));
    }
    if flow.turn != data.moves || flow.round != data.recycles {
        return Err(corrupt(format!(
            "turn {} and round {} must be the moves ({}) and recycles ({})",
            flow.turn, flow.round, data.moves, data.recycles
        )));
    }
    if data.recycles > data.moves {
        return Err(corrupt("more recycles than moves"));
    }

    let withdrawn = p.participants[SEAT].status == ParticipantStatus::Withdrawn;
    match &p.result {
        None => {
            if complete {
                return Err(corrupt("all cards are on the foundations but the match is active"));
            }
            if withdrawn {
                return Err(corrupt("p0 withdrew but the match is active"));
            }
            if flow.actors.len() != 1 || flow.stage_of(SEAT) != Some(STAGE) {
                return Err(corrupt(format!("an active match has exactly one actor, p0 in stage {STAGE}")));
            }
        }
        Some(result) => {
            if !flow.actors.is_empty() {
                return Err(corrupt("a finished match has no actors"));
            }
            let (reason, participants) = match result {
                // The rules never cancel; the engine or an administrator may, and no one wins.
                MatchResult::Cancelled { .. } => return Ok(()),
                MatchResult::Completed { reason_code, participants } => (reason_code.as_str(), participants),
            };
            let outcome = participants.get(SEAT).map(|r| r.outcome);
            if participants.len() != 1 || outcome.is_none() {
                return Err(corrupt("a completed result lists exactly p0"));
            }
            let expected = match reason {
                REASON_ALL_FOUNDATIONS if complete => Outcome::Win,
                REASON_ALL_FOUNDATIONS => return Err(corrupt("a win with cards off the foundations")),
                _ if complete => return Err(corrupt("all cards are on the foundations but the result is not a win")),
                REASON_GAVE_UP => Outcome::Loss,
                REASON_WITHDRAWAL if withdrawn => Outcome::Loss,
                REASON_WITHDRAWAL => return Err(corrupt("a withdrawal result but p0 did not withdraw")),
                other => return Err(corrupt(format!("unknown result reason {other:?}"))),
            };
            if outcome != Some(expected) {
                return Err(corrupt(format!("reason {reason} needs p0 outcome {expected:?}, found {outcome:?}")));
            }
        }
    }
    Ok(())
}

/// The card invariants: zones, conservation, orientation, knowledge, sequences. Returns
/// whether every card is on a foundation.
pub(crate) fn cards(p: &Pos<Solitario>, set: &ComponentSet) -> Result<bool, Corrupt> {
    let data = &p.data;
    let zones = &data.zones;
    let mut expected: Vec<String> = zone_specs().into_iter().map(|(pile, _)| pile.name()).collect();
    expected.push(SUPPLY.to_owned());
    expected.sort();
    let found: Vec<&str> = zones.iter().map(|(id, _)| id).collect();
    if found != expected {
        return Err(corrupt(format!("zones must be {expected:?}, found {found:?}")));
    }
    for (pile, visibility) in zone_specs() {
        let zone = zones.zone(&pile.name()).expect("checked above");
        if !zone.ordered || zone.owner.is_some() || zone.visibility != visibility {
            return Err(corrupt(format!("zone {} must be ordered, unowned and {visibility:?}", pile.name())));
        }
    }
    if zones.count(SUPPLY) != 0 {
        return Err(corrupt("the supply must be empty after the deal"));
    }
    check_conservation(zones, set.instances()).map_err(|e| corrupt(format!("conservation: {e}")))?;
    if let Some(card) = data.face_up.iter().find(|c| !data.known.contains(*c)) {
        return Err(corrupt(format!("{card} is face up but not known")));
    }
    if let Some(card) = data.known.iter().find(|c| set.instance(c).is_none()) {
        return Err(corrupt(format!("{card} is known but is not an instance")));
    }

    let table = Table::new(set);
    let card = |id| table.card(id).map_err(|e| corrupt(e.to_string()));
    let pile = |pile: Pile| &zones.zone(&pile.name()).expect("checked above").cards;

    if pile(Pile::Stock).iter().any(|c| data.face_up.contains(c)) {
        return Err(corrupt("a stock card is face up"));
    }
    for p in [Pile::Waste].into_iter().chain((0..FOUNDATIONS).map(Pile::Foundation)) {
        if pile(p).iter().any(|c| !data.face_up.contains(c)) {
            return Err(corrupt(format!("a card in {} is face down", p.name())));
        }
    }
    for c in 0..TABLEAU_COLUMNS {
        let column = pile(Pile::Tableau(c));
        let down = column.iter().take_while(|id| !data.face_up.contains(*id)).count();
        if column[down..].iter().any(|id| !data.face_up.contains(id)) {
            return Err(corrupt(format!("tableau{c} has a face-down card above a face-up one")));
        }
        if down > 0 && down == column.len() {
            return Err(corrupt(format!("tableau{c} has a face-down top card (it must have been turned up)")));
        }
        if let Some(id) = column[..down].iter().find(|id| data.known.contains(*id)) {
            return Err(corrupt(format!("{id} is face down in tableau{c} yet known")));
        }
        let up = column[down..].iter().map(card).collect::<Result<Vec<_>, _>>()?;
        if up.windows(2).any(|w| !stacks_on(&w[1], &w[0])) {
            return Err(corrupt(format!("the face-up cards of tableau{c} are not a descending alternating sequence")));
        }
    }
    let mut suits = Vec::new();
    for f in 0..FOUNDATIONS {
        let cards = pile(Pile::Foundation(f)).iter().map(card).collect::<Result<Vec<_>, _>>()?;
        for (i, c) in cards.iter().enumerate() {
            if usize::from(c.rank) != i + 1 || c.suit != cards[0].suit {
                return Err(corrupt(format!("foundation{f} is not a same-suit sequence from the ace")));
            }
        }
        if let Some(first) = cards.first() {
            if suits.contains(&first.suit) {
                return Err(corrupt(format!("two foundations hold {}", first.suit)));
            }
            suits.push(first.suit.clone());
        }
    }
    Ok(table.on_foundations(data) == set.instances().len())
}
