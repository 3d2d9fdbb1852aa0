//! The integration tests of `juegoland-packages`.

mod rejections;
mod schemas;
mod support;
