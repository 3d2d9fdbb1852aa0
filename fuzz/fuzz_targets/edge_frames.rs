//! The `edge_frames` fuzz target: see `juegoland_fuzz::edge` for its input and what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| juegoland_fuzz::edge::run(data));
