//! The cluster's own gRPC calls with a cluster secret: a node answers only another role's
//! stamped call; a router acts for a principal or the engine (a sync, a command, a deadline
//! firing) only on one, and makes a platform operation on one or with the platform token —
//! never for a caller that merely reaches its port. The roles' own traffic (routers to nodes,
//! the HTTP API) keeps working with the secret.

use juegoland_api::MatchRequest;
use juegoland_core::LifecycleRequest;
use juegoland_rpc::credential::{ClusterKey, Role};
use juegoland_rpc::pb;
use serde_json::json;
use tonic::Code;

use crate::harness::{Cluster, NodeClient, RouterClient};

const CLUSTER_SECRET: &str = "the-internal-calls-cluster-secret-0123456789";
const PLATFORM: &str = "internal-calls-platform-token";

/// How one call to a router or a node is made: bare, with the platform token, or stamped.
#[derive(Clone, Copy, Debug)]
enum As {
    Nobody,
    Platform,
    Stamped(Role),
    WrongSecret,
}

fn request(message: &MatchRequest, who: As) -> tonic::Request<pb::MatchRequest> {
    let mut request = tonic::Request::new(juegoland_rpc::request_to_pb(message));
    match who {
        As::Nobody => {}
        As::Platform => {
            request.metadata_mut().insert("authorization", format!("Bearer {PLATFORM}").parse().unwrap());
        }
        As::Stamped(role) => ClusterKey::new(CLUSTER_SECRET.as_bytes()).unwrap().stamp(role, request.metadata_mut()),
        As::WrongSecret => {
            let other = ClusterKey::new(b"not-the-cluster-secret-but-32-bytes!!").unwrap();
            other.stamp(Role::Gateway, request.metadata_mut());
        }
    }
    request
}

async fn router(client: &mut RouterClient, message: &MatchRequest, who: As) -> Result<(), Code> {
    client.call(request(message, who)).await.map(|_| ()).map_err(|s| s.code())
}

async fn node(client: &mut NodeClient, message: &MatchRequest, who: As) -> Result<(), Code> {
    client.call(request(message, who)).await.map(|_| ()).map_err(|s| s.code())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_clusters_roles_act_for_a_principal_or_the_engine() {
    let env = [("JUEGOLAND_CLUSTER_SECRET", CLUSTER_SECRET), ("JUEGOLAND_PLATFORM_TOKEN", PLATFORM)];
    let cluster = Cluster::start_with_env("internal_calls", 1, 1, &env).await;
    // The HTTP API, through the router to the node (both stamping their calls).
    let addr = cluster.routers[0].http.trim_start_matches("http://").trim_end_matches('/').to_owned();
    let create = json!({ "game": "conecta4", "seats": { "p0": "alice", "p1": "bob" } }).to_string();
    let auth = format!("Bearer {PLATFORM}");
    let headers = [("Authorization", auth.as_str()), ("Content-Type", "application/json")];
    let (status, _, body) = crate::client::http_with(&addr, "POST", "/v1/matches", &headers, create.as_bytes()).await;
    assert_eq!(status, 201, "{body}");
    let created: serde_json::Value = serde_json::from_str(&body).unwrap();
    let match_id: uuid::Uuid = created["matchId"].as_str().unwrap().parse().unwrap();

    let mut r = cluster.client(0).await;
    let sync = MatchRequest::Sync { match_id, principal: "bob".into() };
    let fire = MatchRequest::Lifecycle {
        match_id,
        request: LifecycleRequest::FireDeadline { id: "turn".into(), generation: 1 },
    };
    let control = MatchRequest::Lifecycle {
        match_id,
        request: LifecycleRequest::Control { seat: "p1".into(), stand_in: Some("default".into()) },
    };
    let describe = MatchRequest::Describe { match_id };
    // Acting for a principal or the engine: a role's credential only.
    for message in [&sync, &fire, &control] {
        for who in [As::Nobody, As::Platform, As::WrongSecret] {
            assert_eq!(router(&mut r, message, who).await, Err(Code::Unauthenticated), "{message:?} as {who:?}");
        }
    }
    assert_eq!(router(&mut r, &sync, As::Stamped(Role::Gateway)).await, Ok(()));
    // A platform operation: the platform token or a role's credential.
    assert_eq!(router(&mut r, &describe, As::Nobody).await, Err(Code::Unauthenticated));
    assert_eq!(router(&mut r, &describe, As::Platform).await, Ok(()));
    assert_eq!(router(&mut r, &describe, As::Stamped(Role::Scheduler)).await, Ok(()));
    let feed = r.read_feed(pb::ReadFeedRequest { after: String::new(), limit: 10 }).await;
    assert_eq!(feed.err().map(|s| s.code()), Some(Code::Unauthenticated));

    // A node: a role's credential for anything.
    let mut n = NodeClient::connect(cluster.nodes[0].grpc.clone()).await.expect("connect to the node");
    for who in [As::Nobody, As::Platform, As::WrongSecret] {
        assert_eq!(node(&mut n, &describe, who).await, Err(Code::Unauthenticated), "{who:?}");
        assert_eq!(node(&mut n, &sync, who).await, Err(Code::Unauthenticated), "{who:?}");
    }
    assert_eq!(node(&mut n, &describe, As::Stamped(Role::Router)).await, Ok(()));
    let status = n.status(pb::NodeStatusRequest {}).await;
    assert_eq!(status.err().map(|s| s.code()), Some(Code::Unauthenticated));
    cluster.stop().await;
}
