//! The seats AI agents may play (engine spec § Seats): one profile, and what an agent is told.

use juegoland_sdk::{AgentLimits, AgentMode, AgentProfile, Difficulty, VirtualPlayers};

/// What an agent reads before it plays Conecta 4 (`instructions` of the MCP server, and the
/// agent grant's answer).
pub const INSTRUCTIONS: &str = "\
Conecta 4 (Connect Four). Two seats, p0 and p1, take turns dropping one disc into a column of \
an upright grid; the disc falls to the lowest empty cell of that column. The first seat with \
`connect` discs (4 by default) in a row, a column or a diagonal wins; a full grid with no line \
is a draw. p0 moves first.

The view: `rows` and `columns` give the grid's size and `connect` the line length; \
`grid[row][column]` is \"p0\", \"p1\" or null (empty), row 0 being the BOTTOM row; \
`moveCount` counts the discs dropped, `lastMove` is the last disc ({row, column, seat}), \
`line` the winning cells once someone won, and `clock` (only in timed matches) the seconds \
each seat has left. The context: `seat` is your disc (\"p0\" or \"p1\"), `yourTurn` whether \
you are to move.

Acting: when it is your turn the offers are one concrete `drop` action per column that is \
not full, `{\"type\": \"drop\", \"payload\": {\"column\": c}}` with c counted from 0 at the \
left. Play exactly one of them. Good play: win at once when a column completes your line, \
else block a column that would complete the rival's, prefer central columns, and avoid \
dropping right under a cell the rival needs.";

/// The declaration: one `default` profile playing against the other seat.
pub fn virtual_players() -> VirtualPlayers {
    VirtualPlayers {
        instructions: INSTRUCTIONS.to_owned(),
        profiles: vec![AgentProfile {
            id: "default".to_owned(),
            display_name: "AI player".to_owned(),
            modes: vec![AgentMode::Versus],
            difficulties: vec![Difficulty::Beginner, Difficulty::Intermediate, Difficulty::Expert],
            limits: AgentLimits { think_time_ms: 30_000, commands_per_minute: 30 },
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
