//! The integration tests embed `migrations/` with `sqlx::migrate!`; rebuild when it changes.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
