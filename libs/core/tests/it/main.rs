//! Integration tests of the engine core: a harness that plays the role of the match actor
//! and the store (in memory), the acceptance rows that belong to the core, property tests
//! through the pipeline, and a fixture game for `actor` counters and cooperative results.

mod acceptance;
mod check;
mod fixture;
mod harness;
mod props;
mod recover;
