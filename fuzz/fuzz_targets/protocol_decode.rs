//! The `protocol_decode` fuzz target: see `juegoland_fuzz::protocol` for its input and what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| juegoland_fuzz::protocol::run(data));
