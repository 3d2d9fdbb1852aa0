//! The `game_commands` fuzz target: see `juegoland_fuzz::games` for its input and what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| juegoland_fuzz::games::run(data));
