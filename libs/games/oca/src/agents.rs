//! The seats AI agents may play (engine spec § Seats): one profile, and what an agent is told.

use juegoland_sdk::{AgentLimits, AgentMode, AgentProfile, Difficulty, VirtualPlayers};

/// What an agent reads before it plays La Oca (`instructions` of the MCP server, and the
/// agent grant's answer).
pub const INSTRUCTIONS: &str = "\
La Oca (the Game of the Goose). 2 to 4 seats race their pieces from square 0 (off the \
board) to square 63; p0 rolls first. The server throws the dice (one, or two when `dice` is \
2) and moves your piece for you; past 63 the excess counts back from 63. The square reached \
applies its effect once: a goose jumps to the next goose and rolls again (59 wins at once), \
a bridge (6 and 12) or a dice square (26 and 53) jumps to its pair and rolls again, the maze \
(42) goes back to 30, death (58) back to 1, the inn (19) loses one turn, the prison (52) two, \
and the well (31) holds the piece until another piece falls in. The first piece on 63 wins; \
the others lose.

The view: `positions` (seat → square, 0 off the board), `turnsLost` (seat → turns it still \
loses), `well` (the seat held in the well, or null), `lastRoll` (the last throw and its \
seat), `dice`, and `clock` in timed matches. The context: `seat` and `yourTurn`. Each roll \
comes with a `piece.moved` event carrying the whole resolved path.

Acting: there is no choice to make. On your turn the only offer is the concrete `roll` \
action, `{\"type\": \"roll\", \"payload\": {}}`; send it, then wait for your next turn (a \
goose, a bridge or a dice square gives you another roll at once). In timed matches the \
server rolls for you when your time runs out.";

/// The declaration: one `default` profile racing the other seats.
pub fn virtual_players() -> VirtualPlayers {
    VirtualPlayers {
        instructions: INSTRUCTIONS.to_owned(),
        profiles: vec![AgentProfile {
            id: "default".to_owned(),
            display_name: "AI player".to_owned(),
            modes: vec![AgentMode::Versus],
            difficulties: vec![Difficulty::Beginner],
            limits: AgentLimits { think_time_ms: 15_000, commands_per_minute: 30 },
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
