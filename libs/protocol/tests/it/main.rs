//! The integration suite of `juegoland-protocol`: schema freshness, fixtures, every
//! malformed-input class and property tests.

mod fixtures;
mod malformed;
mod props;
mod schemas;
mod support;
