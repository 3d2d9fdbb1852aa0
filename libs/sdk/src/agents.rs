//! Virtual players: the seats a game lets AI agents play (engine spec § Seats, the v2
//! virtual-player profile).
//!
//! A game that allows agent seats declares it in its [`Descriptor`](crate::Descriptor)'s
//! `agents` ([`VirtualPlayers`]): the profiles an agent seat may be given at creation, each
//! with the modes it plays in, the difficulties a platform may ask it to play at and its
//! limits (think time, commands per minute), and the game's own instructions — what the view
//! means and how to choose an action — which an agent gets with its grant. Nothing is ever
//! inferred: a game without a declaration has no agent seats, whatever its category.
//!
//! The declaration is typed and checked ([`VirtualPlayers::check`]): the registry refuses a
//! game whose declaration is empty, repeats a profile id or gives a limit of zero.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The seats a game lets AI agents play, and what an agent is told.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VirtualPlayers {
    /// The game's instructions for an agent, as plain text: the rules in short, what the
    /// seat's view and context mean, and how to choose among the offered actions.
    pub instructions: String,
    /// The profiles an agent seat may be given (`{"agent": "<id>"}` at creation).
    pub profiles: Vec<AgentProfile>,
}

/// One agent profile of a game.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentProfile {
    /// Unique within the game; what a creation names.
    pub id: String,
    /// What the platform shows for a seat this profile plays.
    pub display_name: String,
    /// How an agent of this profile takes part.
    pub modes: Vec<AgentMode>,
    /// The levels a platform may ask the agent to play at (told to the agent with its grant;
    /// the engine judges every move the same way whatever the level).
    pub difficulties: Vec<Difficulty>,
    pub limits: AgentLimits,
}

/// How an agent takes part in a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AgentMode {
    /// Alone at the table (a patience game).
    Solo,
    /// Against the other seats, for its own result.
    Versus,
    /// With partners in a team, against the other team.
    Team,
}

impl AgentMode {
    /// The mode's JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Solo => "solo",
            Self::Versus => "versus",
            Self::Team => "team",
        }
    }
}

/// A level of play a platform may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Difficulty {
    Beginner,
    Intermediate,
    Expert,
}

impl Difficulty {
    /// The difficulty's JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Beginner => "beginner",
            Self::Intermediate => "intermediate",
            Self::Expert => "expert",
        }
    }
}

/// What the platform enforces on an agent seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentLimits {
    /// How long the agent may take, in milliseconds, from the revision at which its seat
    /// got something to do to its command.
    pub think_time_ms: u32,
    /// Commands the seat may submit in any sliding minute (a retried command answered from
    /// its receipt does not count).
    pub commands_per_minute: u32,
}

impl VirtualPlayers {
    /// The profile `id`, if declared.
    pub fn profile(&self, id: &str) -> Option<&AgentProfile> {
        self.profiles.iter().find(|p| p.id == id)
    }

    /// Checks the declaration: instructions, at least one profile, non-empty unique ids
    /// made of `[a-z0-9-]`, display names, at least one mode and one difficulty each, no
    /// repeated mode or difficulty, limits above zero. The error names the offending part.
    pub fn check(&self) -> Result<(), String> {
        if self.instructions.trim().is_empty() {
            return Err("agents.instructions is empty".into());
        }
        if self.profiles.is_empty() {
            return Err("agents.profiles is empty: a game without agent seats declares no agents".into());
        }
        for (i, p) in self.profiles.iter().enumerate() {
            let at = format!("agents.profiles[{i}]");
            if p.id.is_empty() || !p.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
                return Err(format!("{at}.id {:?} is not a non-empty [a-z0-9-] id", p.id));
            }
            if self.profiles[..i].iter().any(|q| q.id == p.id) {
                return Err(format!("{at}.id {:?} is declared twice", p.id));
            }
            if p.display_name.trim().is_empty() {
                return Err(format!("{at}.displayName is empty"));
            }
            if p.modes.is_empty() || p.modes.iter().enumerate().any(|(j, m)| p.modes[..j].contains(m)) {
                return Err(format!("{at}.modes must list at least one mode, each once"));
            }
            if p.difficulties.is_empty()
                || p.difficulties.iter().enumerate().any(|(j, d)| p.difficulties[..j].contains(d))
            {
                return Err(format!("{at}.difficulties must list at least one difficulty, each once"));
            }
            if p.limits.think_time_ms == 0 {
                return Err(format!("{at}.limits.thinkTimeMs must be above 0"));
            }
            if p.limits.commands_per_minute == 0 {
                return Err(format!("{at}.limits.commandsPerMinute must be above 0"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared() -> VirtualPlayers {
        VirtualPlayers {
            instructions: "Drop a disc.".into(),
            profiles: vec![AgentProfile {
                id: "default".into(),
                display_name: "AI player".into(),
                modes: vec![AgentMode::Versus],
                difficulties: vec![Difficulty::Beginner, Difficulty::Expert],
                limits: AgentLimits { think_time_ms: 30_000, commands_per_minute: 30 },
            }],
        }
    }

    #[test]
    fn a_declaration_is_checked_part_by_part() {
        assert_eq!(declared().check(), Ok(()));
        type Breaks = fn(&mut VirtualPlayers);
        let broken: [(Breaks, &str); 9] = [
            (|v| v.instructions = " ".into(), "agents.instructions is empty"),
            (|v| v.profiles.clear(), "agents.profiles is empty"),
            (|v| v.profiles[0].id = String::new(), "agents.profiles[0].id \"\""),
            (|v| v.profiles[0].id = "Has Space".into(), "agents.profiles[0].id \"Has Space\""),
            (|v| v.profiles.push(v.profiles[0].clone()), "agents.profiles[1].id \"default\" is declared twice"),
            (|v| v.profiles[0].display_name = String::new(), "agents.profiles[0].displayName is empty"),
            (|v| v.profiles[0].modes = vec![AgentMode::Solo, AgentMode::Solo], "agents.profiles[0].modes"),
            (|v| v.profiles[0].limits.think_time_ms = 0, "agents.profiles[0].limits.thinkTimeMs"),
            (|v| v.profiles[0].limits.commands_per_minute = 0, "agents.profiles[0].limits.commandsPerMinute"),
        ];
        for (breaks, expected) in broken {
            let mut v = declared();
            breaks(&mut v);
            let message = v.check().expect_err(expected);
            assert!(message.starts_with(expected), "{message:?} does not start with {expected:?}");
        }
        let mut no_difficulty = declared();
        no_difficulty.profiles[0].difficulties.clear();
        assert!(no_difficulty.check().unwrap_err().contains("difficulties"));
    }

    #[test]
    fn the_declaration_is_camel_case_json_and_strict() {
        let json = serde_json::to_value(declared()).unwrap();
        assert_eq!(json["profiles"][0]["limits"], serde_json::json!({"thinkTimeMs": 30000, "commandsPerMinute": 30}));
        assert_eq!(json["profiles"][0]["displayName"], "AI player");
        for mode in [AgentMode::Solo, AgentMode::Versus, AgentMode::Team] {
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.as_str());
        }
        for level in [Difficulty::Beginner, Difficulty::Intermediate, Difficulty::Expert] {
            assert_eq!(serde_json::to_value(level).unwrap(), level.as_str());
        }
        let mut unknown = json.clone();
        unknown["profiles"][0]["limits"]["tokens"] = 3.into();
        assert!(serde_json::from_value::<VirtualPlayers>(unknown).is_err());
        assert_eq!(serde_json::from_value::<VirtualPlayers>(json).unwrap(), declared());
    }
}
