//! Integration tests of the engine core: a harness that plays the role of the match actor
//! and the store (in memory), the acceptance rows that belong to the core, property tests
//! through the pipeline, and a fixture game for `actor` counters and cooperative results.

mod acceptance;
mod agents;
mod check;
mod choice;
mod expiry;
mod fixture;
mod golden;
mod harness;
mod props;
mod queue;
mod recover;
mod seats;
mod spectators;
mod tap;
