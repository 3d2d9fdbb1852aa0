//! A private schema with the workspace migrations applied, and a pool on it.

use std::time::Duration;

use juegoland_testkit::TestSchema;
use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::PgPoolOptions;

/// The PostgreSQL migrations, as `juegoland_store::PgStore` applies them when it connects.
static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

pub struct Db {
    schema: TestSchema,
    pub pool: PgPool,
}

impl Db {
    /// A new schema for `test`, migrated.
    pub async fn start(test: &str) -> Db {
        let schema = TestSchema::create("cluster", test).await;
        let pool = Db::pool_on(&schema).await;
        MIGRATOR.run(&pool).await.expect("run the migrations");
        Db { schema, pool }
    }

    /// A schema for `test` WITHOUT the migrations (no `nodes` table).
    pub async fn unmigrated(test: &str) -> Db {
        let schema = TestSchema::create("cluster", test).await;
        let pool = Db::pool_on(&schema).await;
        Db { schema, pool }
    }

    /// Another pool on the same schema (one a test may close to play an outage).
    pub async fn second_pool(&self) -> PgPool {
        Db::pool_on(&self.schema).await
    }

    async fn pool_on(schema: &TestSchema) -> PgPool {
        PgPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(5))
            .connect_with(schema.options())
            .await
            .expect("connect to the test schema")
    }

    /// Closes the pool and drops the schema; call it last, once the test has passed.
    pub async fn finish(self) {
        self.pool.close().await;
        self.schema.drop_schema().await;
    }
}
