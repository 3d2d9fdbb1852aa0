//! Resources (files a client loads) and resource sets (how a component's definitions are
//! drawn from them).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One resource a package ships.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resource {
    pub id: String,
    /// A normalized relative path inside the package.
    pub path: String,
    #[serde(rename = "type")]
    pub kind: ResourceType,
    pub load: Load,
    /// The phase a `phase` load waits for; only with `load: phase`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
    /// A translation key for the alternative text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alt: Option<String>,
    /// Pixels; required for images and atlases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// Named regions of an atlas; each must fit inside the image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<Region>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ResourceType {
    Image,
    Atlas,
    Sound,
    Font,
    /// A presentation module exporting a GraphicDefinition: it draws a fresh SVG from
    /// (resource id, slot, definition, language), sets no timers and sends no commands.
    Graphic,
}

impl ResourceType {
    pub fn name(self) -> &'static str {
        match self {
            ResourceType::Image => "image",
            ResourceType::Atlas => "atlas",
            ResourceType::Sound => "sound",
            ResourceType::Font => "font",
            ResourceType::Graphic => "graphic",
        }
    }

    /// Whether the resource must declare its dimensions.
    pub fn has_dimensions(self) -> bool {
        matches!(self, ResourceType::Image | ResourceType::Atlas)
    }

    /// The media types a file of this resource type may have.
    pub fn media_types(self) -> &'static [&'static str] {
        match self {
            ResourceType::Image | ResourceType::Atlas => &["image/svg+xml", "image/png", "image/webp"],
            ResourceType::Sound => &["audio/wav", "audio/ogg", "audio/mpeg"],
            ResourceType::Font => &["font/woff2"],
            ResourceType::Graphic => &["text/javascript"],
        }
    }
}

/// When a client loads a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Load {
    /// With the catalog (cover, thumbnail, icon).
    Catalog,
    /// Before the board is shown.
    Board,
    /// When the named phase starts.
    Phase,
    /// On first use.
    Lazy,
}

/// What a client shows when a resource fails to load.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum Fallback {
    /// A translated text.
    Text { key: String },
    /// Another resource of the same package (which may fall back in turn).
    Resource { id: String },
    /// Nothing: allowed only for optional resources.
    Omit,
}

/// A rectangle of an atlas, in pixels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Region {
    pub id: String,
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

/// The `format` of a resource-set file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ResourceSetFormat {
    #[serde(rename = "juegoland.resource-set")]
    ResourceSet,
}

/// A resource set: slots by definition id, an optional back and the aspect ratio. Its slots
/// name resources of the package that ships the set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSet {
    pub format: ResourceSetFormat,
    #[schemars(extend("const" = 1))]
    pub format_version: u32,
    pub aspect_ratio: AspectRatio,
    /// By definition id (a card's id, a piece type's id).
    pub slots: BTreeMap<String, Slot>,
    /// What a face-down card shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub back: Option<Slot>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AspectRatio {
    pub width: u32,
    pub height: u32,
}

/// How one definition is drawn: a resource, and for an atlas its region, for a graphic the
/// slot name it is drawn with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Slot {
    pub resource: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
}
