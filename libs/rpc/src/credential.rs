//! Who is calling: the credential one role of the cluster stamps on its gRPC calls to another
//! (`x-juegoland-caller: <role>.<unix seconds>.<hex HMAC-SHA256 of "<role>.<seconds>">`,
//! keyed with the cluster secret every role shares), and its check.
//!
//! A node answers only callers holding the secret; a router answers the requests that assert
//! a principal (a command, a sync, presence, a hand-over, a deadline firing) only from them, and
//! its platform operations from them or from the platform token. A credential is good for
//! [`FRESH`] around its time, so one seen on the wire cannot be kept for later; inside that
//! window it can be replayed by whoever sees it, so the network stays private (the chart's
//! NetworkPolicy), or TLS is put in front.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{KeyInit, Mac};
use tonic::Status;
use tonic::metadata::{MetadataMap, MetadataValue};

/// The metadata key of the credential.
pub const CALLER: &str = "x-juegoland-caller";

/// How far a credential's time may be from the checker's clock.
pub const FRESH: Duration = Duration::from_secs(300);

type Hmac = hmac::Hmac<sha2::Sha256>;

/// The role a call comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Gateway,
    Router,
    Node,
    Scheduler,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Gateway => "gateway",
            Role::Router => "router",
            Role::Node => "node",
            Role::Scheduler => "scheduler",
        }
    }

    fn parse(text: &str) -> Option<Role> {
        [Role::Gateway, Role::Router, Role::Node, Role::Scheduler].into_iter().find(|r| r.as_str() == text)
    }
}

/// The cluster secret (at least 32 bytes).
#[derive(Clone)]
pub struct ClusterKey(Arc<[u8]>);

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(…)")
    }
}

impl ClusterKey {
    pub fn new(secret: &[u8]) -> Result<Self, String> {
        if secret.len() < 32 {
            return Err(format!("the cluster secret is at least 32 bytes, this one is {}", secret.len()));
        }
        Ok(Self(secret.into()))
    }

    fn mac(&self, role: Role, secs: u64) -> Hmac {
        let mut mac = <Hmac as KeyInit>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        mac.update(format!("{}.{secs}", role.as_str()).as_bytes());
        mac
    }

    /// Stamps `metadata` with `role`'s credential, as of now.
    pub fn stamp(&self, role: Role, metadata: &mut MetadataMap) {
        let secs = now_secs();
        let tag = hex::encode(self.mac(role, secs).finalize().into_bytes());
        if let Ok(value) = MetadataValue::try_from(format!("{}.{secs}.{tag}", role.as_str())) {
            metadata.insert(CALLER, value);
        }
    }

    /// The role whose credential `metadata` carries; UNAUTHENTICATED without one, with a
    /// stale one or with a wrong one.
    pub fn verify(&self, metadata: &MetadataMap) -> Result<Role, Status> {
        let refused = |why: &str| Status::unauthenticated(format!("cluster call credential: {why}"));
        let value = metadata.get(CALLER).ok_or_else(|| refused("missing"))?;
        let text = value.to_str().map_err(|_| refused("malformed"))?;
        let mut parts = text.splitn(3, '.');
        let (Some(role), Some(secs), Some(tag)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(refused("malformed"));
        };
        let role = Role::parse(role).ok_or_else(|| refused("unknown role"))?;
        let secs: u64 = secs.parse().map_err(|_| refused("malformed"))?;
        if now_secs().abs_diff(secs) > FRESH.as_secs() {
            return Err(refused("stale"));
        }
        let tag = hex::decode(tag).map_err(|_| refused("malformed"))?;
        self.mac(role, secs).verify_slice(&tag).map_err(|_| refused("wrong"))?;
        Ok(role)
    }
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_call_verifies_and_nothing_else_does() {
        let key = ClusterKey::new(b"a-cluster-secret-of-at-least-32-bytes").unwrap();
        assert!(ClusterKey::new(b"short").is_err());
        let mut metadata = MetadataMap::new();
        key.stamp(Role::Gateway, &mut metadata);
        assert_eq!(key.verify(&metadata).unwrap(), Role::Gateway);
        let other = ClusterKey::new(b"another-cluster-secret-of-32-bytes!!").unwrap();
        assert_eq!(other.verify(&metadata).unwrap_err().code(), tonic::Code::Unauthenticated);
        assert!(key.verify(&MetadataMap::new()).is_err(), "none");
        let text = metadata.get(CALLER).unwrap().to_str().unwrap().to_owned();
        // Another role's name on the same tag, or an old time, does not verify.
        for forged in [text.replacen("gateway", "scheduler", 1), {
            let (_, rest) = text.split_once('.').unwrap();
            let (_, tag) = rest.split_once('.').unwrap();
            format!("gateway.1000.{tag}")
        }] {
            let mut m = MetadataMap::new();
            m.insert(CALLER, MetadataValue::try_from(forged.as_str()).unwrap());
            assert!(key.verify(&m).is_err(), "{forged}");
        }
    }
}
