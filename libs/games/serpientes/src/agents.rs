//! The seats AI agents may play (engine spec § Seats): one profile, and what an agent is told.

use juegoland_sdk::{AgentLimits, AgentMode, AgentProfile, Difficulty, VirtualPlayers};

/// What an agent reads before it plays Serpientes y escaleras (`instructions` of the MCP
/// server, and the agent grant's answer).
pub const INSTRUCTIONS: &str = "\
Serpientes y escaleras (snakes and ladders) on the classic 100-square board. 1 to 6 seats race \
their pieces from square 0 (off the board) to square 100; p0 rolls first, then the others in \
seat order. The server rolls one die and moves your piece for you: it counts forward, then \
climbs the ladder or slides down the snake that starts on the square it reached. Past 100, \
the match's `finish` decides: \"exact\" (the piece does not move) or \"bounce\" (it counts up \
to 100 and back by the excess). The first piece on 100 wins; the others lose.

The view: `positions` (seat → square, 0 off the board), `lastRoll` (the last roll and its \
seat), `finish`, and `clock` in timed matches. The context: `seat` and `yourTurn`. Each roll \
comes with a `piece.moved` event carrying the whole resolved path (step, bounce, ladder or \
snake).

Acting: there is no choice to make. On your turn the only offer is the concrete `roll` \
action, `{\"type\": \"roll\", \"payload\": {}}`; send it, then wait for your next turn. In \
timed matches the server rolls for you when your time runs out.";

/// The declaration: one `default` profile, racing others or alone (the solo race).
pub fn virtual_players() -> VirtualPlayers {
    VirtualPlayers {
        instructions: INSTRUCTIONS.to_owned(),
        profiles: vec![AgentProfile {
            id: "default".to_owned(),
            display_name: "AI player".to_owned(),
            modes: vec![AgentMode::Solo, AgentMode::Versus],
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
