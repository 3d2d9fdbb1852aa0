//! The packages' JSON Schemas (draft 2020-12), generated from the Rust types exactly as the
//! protocol's are ([`juegoland_protocol::schema::SchemaFile`]): `package` (both manifests),
//! `component`, `resource-set`, `lock` and `presentation-plan`, each with the id
//! `urn:juegoland:<name>:1`. They are committed under `libs/packages/schemas/`; a test fails
//! when they are stale, and `UPDATE_SCHEMAS=1 cargo test -p juegoland-packages` regenerates
//! them. The sixth contract, the protocol, publishes its own under `libs/protocol/schemas/`.

use juegoland_protocol::schema::SchemaFile;
use juegoland_sdk::components::ComponentDefinition;
use schemars::JsonSchema;

use crate::lock::Lock;
use crate::manifest::{FORMAT_VERSION, Manifest};
use crate::plan::PresentationPlan;
use crate::resource::ResourceSet;

/// The id of a package contract's schema: `urn:juegoland:<name>:1`.
pub fn schema_id(name: &str) -> String {
    format!("urn:juegoland:{name}:{FORMAT_VERSION}")
}

fn file<T: JsonSchema>(name: &str) -> SchemaFile {
    SchemaFile::with_id::<T>(name, schema_id(name))
}

/// Every schema this crate publishes.
pub fn schema_files() -> Vec<SchemaFile> {
    vec![
        file::<Manifest>("package"),
        file::<ComponentDefinition>("component"),
        file::<ResourceSet>("resource-set"),
        file::<Lock>("lock"),
        file::<PresentationPlan>("presentation-plan"),
    ]
}
