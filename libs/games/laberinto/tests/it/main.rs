//! Integration tests of Laberinto through the real engine: every rule of the profile
//! ([`rules`]), the projection and its records ([`records`]), properties of random play
//! ([`props`]), privacy ([`privacy`]), what a seat knows and the bot's use of it
//! ([`knowledge`]), whole matches with bots and replay ([`matches`]).

mod engine;
mod knowledge;
mod matches;
mod privacy;
mod props;
mod rules;
