//! The backends the suite runs against.
//!
//! Redis tests use the REAL server at `redis://127.0.0.1:6379/` (`JUEGOLAND_TEST_REDIS_URL`
//! overrides); each test picks random match ids, so tests run in parallel against one
//! server. A server that is down fails the tests with the command that starts it: they never
//! skip.

use std::sync::Arc;

use juegoland_bus::{Bus, LocalBus, RedisBus, RedisBusConfig};

use crate::suite::{Backend, SMALL};
use crate::support::{redis_url, shared_redis};

pub struct LocalBackend;

#[async_trait::async_trait]
impl Backend for LocalBackend {
    async fn start() -> Self {
        LocalBackend
    }

    fn bus(&self) -> Arc<dyn Bus> {
        Arc::new(LocalBus::default())
    }

    fn small_bus(&self) -> Arc<dyn Bus> {
        Arc::new(LocalBus::new(SMALL))
    }
}

pub struct RedisBackend;

#[async_trait::async_trait]
impl Backend for RedisBackend {
    async fn start() -> Self {
        shared_redis().await;
        RedisBackend
    }

    fn bus(&self) -> Arc<dyn Bus> {
        Arc::new(RedisBus::new(&redis_url(), RedisBusConfig::default()).expect("a redis bus"))
    }

    fn small_bus(&self) -> Arc<dyn Bus> {
        let config = RedisBusConfig { max_len: SMALL, subscriber_buffer: SMALL, ..RedisBusConfig::default() };
        Arc::new(RedisBus::new(&redis_url(), config).expect("a redis bus"))
    }
}
