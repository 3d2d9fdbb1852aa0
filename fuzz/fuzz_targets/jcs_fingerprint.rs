//! The `jcs_fingerprint` fuzz target: see `juegoland_fuzz::jcs` for its input and what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| juegoland_fuzz::jcs::run(data));
