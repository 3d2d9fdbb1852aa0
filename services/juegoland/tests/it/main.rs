//! End-to-end tests against the running `juegoland dev` binary, over real sockets.

mod client;
mod cluster;
mod conecta4;
mod durability;
mod gateway;
mod harness;
mod hundido;
mod logs;
mod operations;
mod scheduler;
mod socketio;
mod tracing;
