//! Packages: the unit a game is delivered in (spec/packages.md).
//!
//! Owns: the Rust types of the package contracts — the game manifest (`game.json`), the
//! library manifest (`package.json`, `kind: components | assets`), component files (the
//! SDK's [`ComponentDefinition`](juegoland_sdk::components::ComponentDefinition)), resource
//! sets, the lock and presentation plans — their generated JSON Schemas ([`schema`]),
//! validation levels 1-3 ([`Package::from_files`], [`validate`]), the digests and the lock
//! ([`lock`]), and publishing a package directory into an immutable registry ([`publish`]).
//!
//! Must not use: the network, a database, tokio, or any game's crate: a rules module reaches
//! the publisher through the SDK's [`ErasedGame`](juegoland_sdk::ErasedGame), passed in by a
//! service. Digests use the protocol's one canonicalization (JCS,
//! [`juegoland_protocol::digest_hex`]).
//!
//! # Which function to use
//!
//! - Read a package directory: [`Package::read_dir`] (level 1 included).
//! - Check it against its dependencies: [`validate::resolve`], then
//!   [`validate::check_references`] and [`validate::check_art`].
//! - Publish it: [`publish::Publisher::publish`], which runs the seven steps in order.
//! - Serve a published package's public files: [`public::public_lock`], [`public::public_file`].
//! - Check a presentation plan: [`plan::PresentationPlan::validate`].
//!
//! Every rejection is a [`Rejection`]: the file, a JSON pointer to the field, and a typed
//! [`Kind`] whose message says what to fix.

pub mod error;
pub mod lock;
pub mod manifest;
mod package;
pub mod plan;
pub mod public;
pub mod publish;
pub mod resource;
pub mod rules;
pub mod schema;
mod structure;
pub mod validate;

pub use error::{Kind, Rejection};
pub use package::{Package, escape, parse_document, split_dependency};
pub use structure::{check_path, check_version};
