//! The integration suite of `juegoland-protocol`: schema freshness, fixtures, every
//! malformed-input class and property tests.

// The library is pure, but this suite reads fixtures and committed schemas from disk and
// rewrites the schemas when `UPDATE_SCHEMAS=1` is set; that IO is the point of these tests.
#![allow(clippy::disallowed_methods)]

mod fixtures;
mod malformed;
mod props;
mod schemas;
mod support;
