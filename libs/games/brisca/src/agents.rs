//! The seats AI agents may play (engine spec § Seats): one profile, and what an agent is told.

use juegoland_sdk::{AgentLimits, AgentMode, AgentProfile, Difficulty, VirtualPlayers};

/// What an agent reads before it plays Brisca (`instructions` of the MCP server, and the
/// agent grant's answer).
pub const INSTRUCTIONS: &str = "\
Brisca, with the Spanish 40-card deck (suits oros, copas, espadas, bastos; ranks 1-7 and 10 \
sota, 11 caballo, 12 rey). Two players, or two teams of two (team0 = p0+p2, team1 = p1+p3, \
partners share the result). Each seat holds three cards; a card turned face up names the \
trump suit. Seats play one card each to a trick, in seat order from the leader. There is no \
obligation to follow suit unless the match's `mustFollow` rule is on (then the offers only \
contain the cards you may play). The highest trump wins the trick, else the highest card of \
the suit led, in the order 1 (as), 3 (tres), 12 (rey), 11 (caballo), 10 (sota), 7, 6, 5, 4, \
2. The trick's winner takes its points, draws first, then the others, and leads the next \
trick; once the stock is empty the hands are played out. Points: as 11, tres 10, rey 4, \
caballo 3, sota 2, the rest 0 (120 in all); more than 60 wins, 60-60 is a draw.

The view: `hand` (your cards as {suit, rank}), `trump` (the face-up trump card until it is \
drawn) and `trumpSuit`, `table` (the current trick: {seat, card} in play order), `hands` \
(how many cards every other seat holds, a partner's included: you never see their faces), \
`stock` (face-down cards left), `points` (your side's points, every side's at the end) and \
`lastTrick`. The context: `seat`, `side`, `partner` (with four players) and `yourTurn`.

Acting: on your turn the offers are one concrete `play` per card you may play, \
`{\"type\": \"play\", \"payload\": {\"card\": {\"suit\": s, \"rank\": r}}}`, and, when the rules \
allow it, `exchangeTrump` ({}): swap the trump 7 in your hand for the face-up trump (with \
the `twoTakesLow` rule the trump 2 may take a face-up 7, 6, 5 or 4). Play exactly one offer. \
Good play: win tricks that carry points cheaply, keep high trumps for tricks worth taking, \
throw worthless cards (2, 4, 5, 6, 7 of a non-trump suit) on tricks you cannot win, and never \
give points to a rival who will take the trick.";

/// The declaration: one `default` profile, alone against another seat or in a team.
pub fn virtual_players() -> VirtualPlayers {
    VirtualPlayers {
        instructions: INSTRUCTIONS.to_owned(),
        profiles: vec![AgentProfile {
            id: "default".to_owned(),
            display_name: "AI player".to_owned(),
            modes: vec![AgentMode::Versus, AgentMode::Team],
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
