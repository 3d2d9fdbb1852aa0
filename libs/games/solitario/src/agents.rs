//! The seats AI agents may play (engine spec § Seats): one profile, and what an agent is told.

use juegoland_sdk::{AgentLimits, AgentMode, AgentProfile, Difficulty, VirtualPlayers};

/// What an agent reads before it plays Solitario (`instructions` of the MCP server, and the
/// agent grant's answer).
pub const INSTRUCTIONS: &str = "\
Solitario (Klondike, draw one, unlimited passes through the stock). One seat, p0, plays \
alone: move all 52 cards onto the four foundations, each built up by suit from ace (rank 1) \
to king (rank 13).

The view: `stock.count` is how many face-down cards the stock holds (never their faces); \
`waste` lists the drawn cards, bottom first, so its LAST card is the one you can play; \
`tableau` holds the seven columns tableau0..tableau6, bottom first, each card either a face \
{suit, rank, colour} or {\"faceDown\": true}; `foundations` lists foundation0..foundation3, \
each with its `top` card (null when empty) and `count`. The context: `seat` (\"p0\"), `moves` \
(card actions so far) and `recycles` (passes through the stock).

Acting, from the offers: `draw` ({}) turns the stock's top card onto the waste; `recycle` \
({}, only with an empty stock) turns the waste back into the stock; `moveStack` \
(parametrized) takes `{\"from\": pile, \"to\": \"tableauN\", \"count\": n}`: the top n face-up \
cards of `from` onto a column, where the moved run must be descending and alternate red \
and black, its first card one rank below the target's top card and of the other colour, \
and an empty column takes only a king (from the waste or a foundation n is 1); the offer's \
constraints list the `sources` (with the most cards each may move) and the `targets` of at \
least one legal move. `moveToFoundation` (parametrized) takes `{\"from\": \"waste\" or \
\"tableauN\"}` and puts that pile's top card on its foundation; its constraints list the \
sources that can. `giveUp` ({}) ends the match as a loss. A column whose last face-up card \
leaves turns its new top card face up. Good play: move aces and twos to the foundations at \
once, free face-down cards in the longest columns first, keep a king for every empty \
column, and draw when nothing else helps.";

/// The declaration: one `default` profile playing alone. A Klondike game takes a hundred
/// card actions and more, hence the highest command rate of the catalog.
pub fn virtual_players() -> VirtualPlayers {
    VirtualPlayers {
        instructions: INSTRUCTIONS.to_owned(),
        profiles: vec![AgentProfile {
            id: "default".to_owned(),
            display_name: "AI player".to_owned(),
            modes: vec![AgentMode::Solo],
            difficulties: vec![Difficulty::Beginner, Difficulty::Intermediate, Difficulty::Expert],
            limits: AgentLimits { think_time_ms: 30_000, commands_per_minute: 120 },
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
