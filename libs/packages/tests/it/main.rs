//! The integration tests of `juegoland-packages`.

mod catalog;
mod plans;
mod publish;
mod rejections;
mod schemas;
mod support;
