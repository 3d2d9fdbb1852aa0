//! Rolling dice and spinning wheels through labelled randomness.
//!
//! Both draw with [`Randomness::weighted`] and the declared integer weights, so each face or
//! sector comes up with probability weight / total exactly (no modulo bias), and the draw is
//! recorded in the private trace under `label` and replays from it.

use super::definition::{DiceDefinition, DieFace, WheelDefinition, WheelSector};
use crate::random::{RandomError, Randomness};

/// Rolls `die` once; returns the face that came up.
pub fn roll<'d>(die: &'d DiceDefinition, label: &str, random: &mut Randomness<'_>) -> Result<&'d DieFace, RandomError> {
    let index = random.weighted(label, &die.weights())?;
    Ok(&die.faces[index])
}

/// Spins `wheel` once; returns the sector it stopped on.
pub fn spin<'w>(
    wheel: &'w WheelDefinition,
    label: &str,
    random: &mut Randomness<'_>,
) -> Result<&'w WheelSector, RandomError> {
    let index = random.weighted(label, &wheel.weights())?;
    Ok(&wheel.sectors[index])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::random::{ScriptedEntropy, SplitMix64};

    #[test]
    fn roll_honours_weights_exactly() {
        // Weights 1, 2, 3 sum to 6: the words 0..6 map one to one onto the six slots, so one
        // pass of the script gives each face exactly `weight` times.
        let die = DiceDefinition {
            faces: vec![
                DieFace { value: 10, weight: 1 },
                DieFace { value: 20, weight: 2 },
                DieFace { value: 30, weight: 3 },
            ],
        };
        let mut entropy = ScriptedEntropy::new((0..6).collect());
        let mut values = Vec::new();
        for i in 0..6 {
            let mut r = Randomness::live(&mut entropy);
            values.push(roll(&die, &format!("roll{i}"), &mut r).unwrap().value);
        }
        assert_eq!(values, [10, 20, 20, 30, 30, 30]);
    }

    #[test]
    fn fair_die_maps_each_slot_to_one_face() {
        let die = DiceDefinition::fair(6);
        let mut entropy = ScriptedEntropy::new((0..6).rev().collect());
        let mut r = Randomness::live(&mut entropy);
        let values: Vec<i64> = (0..6).map(|i| roll(&die, &format!("d{i}"), &mut r).unwrap().value).collect();
        assert_eq!(values, [6, 5, 4, 3, 2, 1]);
    }

    #[test]
    fn rolls_and_spins_replay_from_the_trace() {
        let die = DiceDefinition::fair(6);
        let wheel: WheelDefinition = serde_json::from_value(json!({"sectors": [
            {"id": "lose", "value": 0, "weight": 5}, {"id": "win", "value": 100, "weight": 1}]}))
        .unwrap();
        let mut entropy = SplitMix64(9);
        let mut live = Randomness::live(&mut entropy);
        let a = roll(&die, "turn1/die", &mut live).unwrap().clone();
        let s = spin(&wheel, "turn1/wheel", &mut live).unwrap().clone();
        let trace = live.finish().unwrap();

        let mut replay = Randomness::replay(&trace);
        assert_eq!(roll(&die, "turn1/die", &mut replay).unwrap(), &a);
        assert_eq!(spin(&wheel, "turn1/wheel", &mut replay).unwrap(), &s);
        assert_eq!(replay.finish().unwrap(), trace);
    }

    #[test]
    fn an_invalid_die_is_refused_not_panicked() {
        let mut entropy = SplitMix64(1);
        let mut r = Randomness::live(&mut entropy);
        assert!(matches!(
            roll(&DiceDefinition { faces: vec![] }, "x", &mut r),
            Err(RandomError::InvalidRequest { .. })
        ));
    }
}
