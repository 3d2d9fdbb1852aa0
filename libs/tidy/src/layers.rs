//! The layer table: which workspace directory belongs to which layer, and which layer may
//! depend on which. It mirrors the table in `shared/style.md` ("The layers (the direction
//! rule)"); change both together.

use std::fmt;

/// A layer of the workspace. Dependencies point one way: services use libs; libs never use
/// services; rules use only the SDK; the engine core knows no game by name and does no IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    /// `libs/sdk`: the rules contract and component library. Depends on no workspace crate.
    Sdk,
    /// `libs/games/*`: one rules module per game. Uses only the SDK.
    Game,
    /// `libs/protocol`: wire types, the strict decoder, JCS. Uses only the SDK.
    Protocol,
    /// `libs/core`: the engine pipeline, counters, receipts, replay. Uses the SDK and the
    /// protocol, knows no game by name and does no IO.
    Core,
    /// `libs/packages`: manifests, lock, digest. Uses the SDK and the protocol; no network,
    /// no database.
    Package,
    /// Every other `libs/*` crate (store, bus, actors, edge, telemetry, cluster, tidy, …).
    Infra,
    /// `services/*`: the binaries, the only shell that does IO.
    Service,
    /// `loadtest` and the fuzz targets (`fuzz`, a side workspace: [`crate::side`]): tools,
    /// held to the same rules as a service.
    Tool,
}

impl Layer {
    /// Every layer, in dependency order.
    pub const ALL: [Layer; 8] = [
        Layer::Sdk,
        Layer::Game,
        Layer::Protocol,
        Layer::Core,
        Layer::Package,
        Layer::Infra,
        Layer::Service,
        Layer::Tool,
    ];

    /// The layer's short name, as used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Sdk => "sdk",
            Layer::Game => "game",
            Layer::Protocol => "protocol",
            Layer::Core => "core",
            Layer::Package => "package",
            Layer::Infra => "infra",
            Layer::Service => "service",
            Layer::Tool => "tool",
        }
    }

    /// Where crates of this layer live, as used in messages.
    pub fn home(self) -> &'static str {
        match self {
            Layer::Sdk => "libs/sdk",
            Layer::Game => "libs/games/<game>",
            Layer::Protocol => "libs/protocol",
            Layer::Core => "libs/core",
            Layer::Package => "libs/packages",
            Layer::Infra => "libs/<name>",
            Layer::Service => "services/<name>",
            Layer::Tool => "loadtest or fuzz",
        }
    }

    /// Pure layers: deterministic, synchronous, no IO. Their normal dependency closure is
    /// checked against [`crate::deps::IMPURE_CRATES`] and their nearest `clippy.toml` must
    /// carry the bans in [`crate::clippy`].
    pub fn is_pure(self) -> bool {
        matches!(self, Layer::Sdk | Layer::Game | Layer::Protocol | Layer::Core)
    }

    /// Whether the layer lives in `libs/` (anything a dev-dependency may use).
    pub fn is_lib(self) -> bool {
        !matches!(self, Layer::Service | Layer::Tool)
    }

    /// The layers a crate of this layer may use through normal and build dependencies.
    /// Dev-dependencies may additionally use any lib (see [`Layer::may_dev_depend_on`]).
    pub fn allowed(self) -> &'static [Layer] {
        match self {
            Layer::Sdk => &[],
            Layer::Game => &[Layer::Sdk],
            Layer::Protocol => &[Layer::Sdk],
            Layer::Core => &[Layer::Sdk, Layer::Protocol],
            Layer::Package => &[Layer::Sdk, Layer::Protocol],
            Layer::Infra => &[Layer::Sdk, Layer::Protocol, Layer::Core, Layer::Package, Layer::Game, Layer::Infra],
            // A service or tool uses any lib, never another service or tool.
            Layer::Service | Layer::Tool => {
                &[Layer::Sdk, Layer::Game, Layer::Protocol, Layer::Core, Layer::Package, Layer::Infra]
            }
        }
    }

    /// Whether a normal or build dependency from `self` to `to` is allowed.
    pub fn may_depend_on(self, to: Layer) -> bool {
        self.allowed().contains(&to)
    }

    /// Whether a dev-dependency from `self` to `to` is allowed: anything a normal
    /// dependency may use, plus any lib (tests may use the whole library tree).
    pub fn may_dev_depend_on(self, to: Layer) -> bool {
        self.may_depend_on(to) || to.is_lib()
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The directory of the dev-only guard itself: nothing may use it except as a
/// dev-dependency.
pub const DEV_ONLY_DIRS: &[&str] = &["libs/tidy"];

/// The layer of a workspace crate, from its directory relative to the workspace root
/// (`/`-separated, e.g. `libs/games/conecta4`). `None` means the crate is in no layer,
/// which fails the direction check: a new kind of crate must choose its layer here.
pub fn layer_of(dir: &str) -> Option<Layer> {
    let parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        ["libs", "sdk"] => Some(Layer::Sdk),
        ["libs", "games", _] => Some(Layer::Game),
        ["libs", "protocol"] => Some(Layer::Protocol),
        ["libs", "core"] => Some(Layer::Core),
        ["libs", "packages"] => Some(Layer::Package),
        // `libs/games` itself is the games' folder, not a crate.
        ["libs", "games"] => None,
        // The guard is infra, and dev-only (see `DEV_ONLY_DIRS`).
        ["libs", "tidy"] => Some(Layer::Infra),
        ["libs", _] => Some(Layer::Infra),
        ["services", _] => Some(Layer::Service),
        ["loadtest"] | ["fuzz"] => Some(Layer::Tool),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_map_to_layers() {
        let cases = [
            ("libs/sdk", Some(Layer::Sdk)),
            ("libs/games/conecta4", Some(Layer::Game)),
            ("libs/protocol", Some(Layer::Protocol)),
            ("libs/core", Some(Layer::Core)),
            ("libs/packages", Some(Layer::Package)),
            ("libs/store", Some(Layer::Infra)),
            ("libs/tidy", Some(Layer::Infra)),
            ("services/juegoland", Some(Layer::Service)),
            ("loadtest", Some(Layer::Tool)),
            ("fuzz", Some(Layer::Tool)),
            ("libs/games", None),
            ("libs/store/sqlite", None),
            ("tools/xtask", None),
            ("", None),
        ];
        for (dir, want) in cases {
            assert_eq!(layer_of(dir), want, "{dir}");
        }
    }

    #[test]
    fn direction_table() {
        use Layer::*;
        assert!(Sdk.allowed().is_empty());
        assert!(Game.may_depend_on(Sdk) && !Game.may_depend_on(Game));
        assert!(Core.may_depend_on(Protocol) && !Core.may_depend_on(Game));
        assert!(Infra.may_depend_on(Infra) && !Infra.may_depend_on(Service));
        assert!(!Service.may_depend_on(Service) && !Tool.may_depend_on(Service));
        assert!(!Service.may_depend_on(Tool));
        assert!(Sdk.may_dev_depend_on(Core) && !Sdk.may_dev_depend_on(Service));
    }
}
