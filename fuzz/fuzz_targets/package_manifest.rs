//! The `package_manifest` fuzz target: see `juegoland_fuzz::packages` for its input and what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| juegoland_fuzz::packages::run(data));
