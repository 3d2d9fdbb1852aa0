//! The seats AI agents may play (engine spec § Seats): one profile, and what an agent is told.

use juegoland_sdk::{AgentLimits, AgentMode, AgentProfile, Difficulty, VirtualPlayers};

/// What an agent reads before it plays Hundido (`instructions` of the MCP server, and the
/// agent grant's answer).
pub const INSTRUCTIONS: &str = "\
Hundido (battleship). Two seats, p0 and p1, each hide a fleet on their own board, then take \
turns firing at the rival's board; the first to sink the whole rival fleet wins.

Phase `placement` (both seats at once): place every ship of the fleet, then declare ready. \
Cells are {row, column}, both counted from 0. A ship placed at {row, column} with \
orientation \"horizontal\" covers `size` cells to the right (columns column..column+size-1), \
with \"vertical\" `size` cells downwards (rows row..row+size-1). Ships must stay on the board \
and never overlap; with adjacency \"noTouch\" they may not even share an edge or a corner. \
Placing a ship that is already placed moves it. The offer `placeShip` is parametrized: build \
its payload yourself, `{\"ship\": name, \"row\": r, \"column\": c, \"orientation\": \
\"horizontal\"|\"vertical\"}`, following the schema and the offer's constraints (rows, \
columns, fleet, adjacency). Once `view.own.unplaced` is empty the concrete offer `ready` \
(payload {}) appears; send it to finish your placement. Your placement is private.

Phase `battle`: p0 fires first. On your turn (`context.yourTurn`) the parametrized offer \
`fire` takes `{\"row\": r, \"column\": c}` of the rival's board; a cell you already fired at \
is illegal. Water passes the turn; a hit or a sinking passes it too unless \
`view.keepTurnOnHit`. The view: `rows`, `columns`, the `fleet` (ship names and sizes), \
`own` (your ships with their cells, the hits they took and whether each is sunk, the ships \
still unplaced, your readiness) and `seats` (for p0 then p1: ready, ships placed, every shot \
that seat fired with its outcome water/hit/sunk, the sunk ships with their cells, ships \
afloat). Your own shots are in the entry of your seat. Good play: fire on a checkerboard \
pattern until a hit, then try the four neighbours of the hit and follow the line of \
consecutive hits until the ship sinks; never fire next to a sunk ship when adjacency is \
\"noTouch\".";

/// The declaration: one `default` profile playing against the other seat. Placement and a
/// whole battle take many commands (five placements, `ready`, up to a hundred shots), hence
/// the higher command rate than the turn games'.
pub fn virtual_players() -> VirtualPlayers {
    VirtualPlayers {
        instructions: INSTRUCTIONS.to_owned(),
        profiles: vec![AgentProfile {
            id: "default".to_owned(),
            display_name: "AI admiral".to_owned(),
            modes: vec![AgentMode::Versus],
            difficulties: vec![Difficulty::Beginner, Difficulty::Intermediate, Difficulty::Expert],
            limits: AgentLimits { think_time_ms: 30_000, commands_per_minute: 60 },
        }],
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_declaration_is_valid() {
        assert_eq!(super::virtual_players().check(), Ok(()));
    }
}
