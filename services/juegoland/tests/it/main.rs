//! End-to-end tests against the running `juegoland dev` binary, over real sockets.

mod client;
mod cluster;
mod conecta4;
mod crash_points;
mod data_dir;
mod durability;
mod gateway;
mod harness;
mod http_errors;
mod hundido;
mod logs;
mod migration;
mod operations;
mod page;
mod publish;
mod scheduler;
mod socketio;
mod tracing;
mod versions;
