//! Bearer tokens: JWTs whose `sub` is the principal, signed with a shared secret (HS256:
//! the all-in-one, tests, a platform that shares the secret) or verified with a public key
//! (EdDSA, RS256 or ES256: production, where only the platform's identity service holds
//! the private key and gateways can verify but never mint).
//!
//! A token may carry a scope claim: `"spectate": "<match id>"` makes it a spectator's grant
//! for that one match ([`Scope::Spectate`]): its bearer syncs that match as a spectator
//! (`seat: null`) and nothing else — no commands, no receipts, no other match. A token
//! without it is a principal's, whose seats the platform's membership decides
//! ([`Scope::Seats`]). A token may instead carry `"agent": {"match": "<id>", "seat": "pN"}`:
//! the platform's grant of one agent seat of one match ([`Scope::Agent`]), whose principal is
//! `agent:pN` (the principal the match receipts that seat's commands under); its bearer syncs,
//! commands and reads receipts of that match only, as that seat only. A malformed scope claim,
//! both scopes at once, or a principal's token (no scope claim) whose `sub` is one of the
//! engine's own principals (`bot:`, `replay:`, `agent:`), makes the token invalid (fail
//! closed).

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    iat: u64,
    exp: u64,
    /// The match a spectator's grant names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spectate: Option<Uuid>,
    /// The match and seat an agent's grant names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<AgentClaim>,
}

/// The `agent` claim: one seat of one match.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentClaim {
    #[serde(rename = "match")]
    match_id: Uuid,
    seat: String,
}

/// What a verified token lets its bearer do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Play the principal's own seats (held by the platform's CreateMatch call).
    Seats,
    /// Watch one match as a spectator, and nothing else.
    Spectate(Uuid),
    /// Play one agent seat of one match (principal `agent:<seat>`), and nothing else.
    Agent { match_id: Uuid, seat: String },
}

/// The bearer of a valid token: its principal (`sub`) and its scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bearer {
    pub principal: String,
    pub scope: Scope,
}

impl Bearer {
    /// A principal's bearer, playing its own seats.
    pub fn seats(principal: impl Into<String>) -> Self {
        Self { principal: principal.into(), scope: Scope::Seats }
    }

    /// The match this bearer may only watch, if it is a spectator's grant.
    pub fn spectating(&self) -> Option<Uuid> {
        match self.scope {
            Scope::Spectate(match_id) => Some(match_id),
            Scope::Seats | Scope::Agent { .. } => None,
        }
    }

    /// The one match and seat this bearer may play, if it is an agent's grant.
    pub fn agent(&self) -> Option<(Uuid, &str)> {
        match &self.scope {
            Scope::Agent { match_id, seat } => Some((*match_id, seat)),
            Scope::Seats | Scope::Spectate(_) => None,
        }
    }
}

/// The principal (`sub`) of the spectator grants this edge mints for `match_id`: it names the
/// match, and no seat is ever held by it, so even a gateway that ignored the scope claim would
/// give its bearer no seat.
pub fn spectator_principal(match_id: Uuid) -> String {
    format!("{}{match_id}", juegoland_core::state::SPECTATOR_PREFIX)
}

/// The principal (`sub`) of the agent grants for `seat`: the principal the match receipts an
/// agent seat's commands under (`juegoland_core::state::AGENT_PREFIX`). Only an agent seat is
/// held by it, and the grant's scope pins the match.
pub fn agent_principal(seat: &str) -> String {
    format!("{}{seat}", juegoland_core::state::AGENT_PREFIX)
}

/// Verifies tokens, and signs them when it holds a secret.
#[derive(Clone)]
pub struct Tokens {
    /// `None` when verifying with a public key: such a gateway cannot mint tokens.
    encoding: Option<EncodingKey>,
    decoding: DecodingKey,
    algorithm: Algorithm,
    validation: Validation,
    ttl_secs: u64,
}

#[derive(Debug, thiserror::Error)]
#[error("invalid token")]
pub struct InvalidToken;

impl Tokens {
    /// Signs and verifies with a shared secret (HS256).
    pub fn new(secret: &[u8], ttl_secs: u64) -> Result<Self, jsonwebtoken::errors::Error> {
        let encoding = Some(EncodingKey::from_secret(secret)?);
        Ok(Self::with(encoding, DecodingKey::from_secret(secret)?, Algorithm::HS256, ttl_secs))
    }

    /// Verifies with a public key in PEM (Ed25519 → EdDSA, RSA → RS256, P-256 → ES256);
    /// only tokens signed with that algorithm are accepted, and none can be issued here.
    pub fn with_public_key(pem: &[u8]) -> Result<Self, jsonwebtoken::errors::Error> {
        let (decoding, algorithm) = match DecodingKey::from_ed_pem(pem) {
            Ok(k) => (k, Algorithm::EdDSA),
            Err(_) => match DecodingKey::from_rsa_pem(pem) {
                Ok(k) => (k, Algorithm::RS256),
                Err(_) => (DecodingKey::from_ec_pem(pem)?, Algorithm::ES256),
            },
        };
        Ok(Self::with(None, decoding, algorithm, 0))
    }

    fn with(encoding: Option<EncodingKey>, decoding: DecodingKey, algorithm: Algorithm, ttl_secs: u64) -> Self {
        let mut validation = Validation::new(algorithm);
        validation.set_required_spec_claims(&["sub", "exp"]);
        Self { encoding, decoding, algorithm, validation, ttl_secs }
    }

    /// A token for `principal`, valid for the configured time. Fails on a verify-only
    /// instance (a public key).
    pub fn issue(&self, principal: &str) -> Result<String, jsonwebtoken::errors::Error> {
        self.sign(&Claims::of(principal))
    }

    /// A spectator's grant for `match_id` (principal [`spectator_principal`]), valid for the
    /// configured time. Fails on a verify-only instance: there the platform's identity service
    /// mints it, with the same `spectate` claim.
    pub fn issue_spectator(&self, match_id: Uuid) -> Result<String, jsonwebtoken::errors::Error> {
        self.sign(&Claims { spectate: Some(match_id), ..Claims::of(&spectator_principal(match_id)) })
    }

    /// An agent's grant for `seat` of `match_id` (principal [`agent_principal`]), valid for the
    /// configured time. Fails on a verify-only instance: there the platform's identity service
    /// mints it, with the same `agent` claim.
    pub fn issue_agent(&self, match_id: Uuid, seat: &str) -> Result<String, jsonwebtoken::errors::Error> {
        let agent = Some(AgentClaim { match_id, seat: seat.to_owned() });
        self.sign(&Claims { agent, ..Claims::of(&agent_principal(seat)) })
    }

    /// How long the tokens this instance mints are valid, in seconds.
    pub fn ttl_secs(&self) -> u64 {
        self.ttl_secs
    }

    /// The same verifier, unable to mint: a process that must never issue tokens (a router,
    /// whose key is a throwaway no gateway knows) answers a grant `TOKENS_NOT_MINTED_HERE`.
    pub fn without_minting(self) -> Self {
        Self { encoding: None, ..self }
    }

    /// Whether this instance can mint tokens (it holds a secret, not only a public key).
    pub fn can_issue(&self) -> bool {
        self.encoding.is_some()
    }

    fn sign(&self, claims: &Claims) -> Result<String, jsonwebtoken::errors::Error> {
        let Some(encoding) = &self.encoding else {
            return Err(jsonwebtoken::errors::ErrorKind::InvalidKeyFormat.into());
        };
        let now = unix_now();
        let claims = Claims { iat: now, exp: now + self.ttl_secs, ..claims.clone() };
        jsonwebtoken::encode(&Header::new(self.algorithm), &claims, encoding)
    }

    /// The bearer of a valid, unexpired token: its principal and scope.
    pub fn verify(&self, token: &str) -> Result<Bearer, InvalidToken> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).map_err(|_| InvalidToken)?;
        if data.claims.sub.is_empty() {
            return Err(InvalidToken);
        }
        let scope = match (data.claims.spectate, data.claims.agent) {
            // The engine's own principals (`bot:pN`, `replay:pN`, `agent:pN`) hold seats of
            // every match by name alone: a principal's token naming one would play those seats
            // everywhere (an agent's without its grant's match pin). Only a scoped grant
            // carries such a principal.
            (None, None) if is_reserved(&data.claims.sub) => return Err(InvalidToken),
            (None, None) => Scope::Seats,
            (Some(match_id), None) => Scope::Spectate(match_id),
            // The agent claim names a seat, and its principal must be that seat's agent one.
            (None, Some(AgentClaim { match_id, seat })) => {
                if seat.is_empty() || seat.len() > 16 || data.claims.sub != agent_principal(&seat) {
                    return Err(InvalidToken);
                }
                Scope::Agent { match_id, seat }
            }
            (Some(_), Some(_)) => return Err(InvalidToken),
        };
        Ok(Bearer { principal: data.claims.sub, scope })
    }
}

impl Claims {
    /// A principal's claims, with no scope and no times yet.
    fn of(principal: &str) -> Self {
        Self { sub: principal.to_owned(), iat: 0, exp: 0, spectate: None, agent: None }
    }
}

/// Whether `principal` is one the engine itself acts under (`juegoland_core::state::RESERVED_PREFIXES`).
fn is_reserved(principal: &str) -> bool {
    juegoland_core::state::RESERVED_PREFIXES.iter().any(|p| principal.starts_with(p))
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_verify_and_forged_ones_do_not() {
        let t = Tokens::new(b"secret-one", 60).unwrap();
        let token = t.issue("alice").unwrap();
        assert_eq!(t.verify(&token).unwrap(), Bearer::seats("alice"));
        let other = Tokens::new(b"secret-two", 60).unwrap();
        assert!(other.verify(&token).is_err());
        assert!(t.verify("not-a-token").is_err());
    }

    // A throwaway Ed25519 key pair made for this test (`openssl genpkey -algorithm ed25519`).
    const PRIVATE: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJpz+CxvnBvej29fwDM26IQRGXTiCrKUViRufCTyBd+c\n-----END PRIVATE KEY-----\n";
    const PUBLIC: &str = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAfcyB4ZrP1E11E/Vk29EMlbdP9xoZOsXy5IgHUrRsbL4=\n-----END PUBLIC KEY-----\n";

    fn signed(algorithm: Algorithm, key: &EncodingKey, sub: &str, exp_offset: i64) -> String {
        let now = unix_now();
        let claims = Claims { iat: now, exp: now.saturating_add_signed(exp_offset), ..Claims::of(sub) };
        jsonwebtoken::encode(&Header::new(algorithm), &claims, key).unwrap()
    }

    #[test]
    fn a_public_key_verifies_what_its_private_key_signed_and_nothing_else() {
        let verifier = Tokens::with_public_key(PUBLIC.as_bytes()).unwrap();
        let private = EncodingKey::from_ed_pem(PRIVATE.as_bytes()).unwrap();
        assert_eq!(verifier.verify(&signed(Algorithm::EdDSA, &private, "alice", 60)).unwrap().principal, "alice");
        // Expired, or an HS256 token made with the public key as its "secret" (algorithm
        // confusion), or anything minted by the verifier itself: refused.
        assert!(verifier.verify(&signed(Algorithm::EdDSA, &private, "alice", -120)).is_err());
        let confused = EncodingKey::from_secret(PUBLIC.as_bytes()).unwrap();
        assert!(verifier.verify(&signed(Algorithm::HS256, &confused, "alice", 60)).is_err());
        assert!(verifier.issue("mallory").is_err(), "a verify-only instance cannot mint tokens");
    }
}

#[cfg(test)]
mod spectators {
    use super::*;

    #[test]
    fn a_spectator_grant_names_its_match_and_a_forged_scope_is_no_token() {
        let t = Tokens::new(b"secret-one", 60).unwrap();
        let m = Uuid::from_u128(42);
        let bearer = t.verify(&t.issue_spectator(m).unwrap()).unwrap();
        assert_eq!(bearer, Bearer { principal: spectator_principal(m), scope: Scope::Spectate(m) });
        assert_eq!(bearer.spectating(), Some(m));
        assert_eq!(t.verify(&t.issue("alice").unwrap()).unwrap().spectating(), None);
        // A scope claim that is not a match id fails closed: the token is invalid, never a
        // principal's.
        let now = unix_now();
        let claims = serde_json::json!({"sub": "carol", "iat": now, "exp": now + 60, "spectate": "every-match"});
        let key = EncodingKey::from_secret(b"secret-one").unwrap();
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap();
        assert!(t.verify(&token).is_err());
        // A verify-only instance mints no grant.
        let verifier = Tokens::with_public_key(tests_public_key().as_bytes()).unwrap();
        assert!(!verifier.can_issue() && verifier.issue_spectator(m).is_err());
        assert!(t.can_issue());
    }

    pub(super) fn tests_public_key() -> &'static str {
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAfcyB4ZrP1E11E/Vk29EMlbdP9xoZOsXy5IgHUrRsbL4=\n-----END PUBLIC KEY-----\n"
    }
}

#[cfg(test)]
mod agents {
    use super::*;

    #[test]
    fn an_agent_grant_names_its_match_and_seat_and_a_forged_one_is_no_token() {
        let t = Tokens::new(b"secret-one", 60).unwrap();
        let m = Uuid::from_u128(42);
        let bearer = t.verify(&t.issue_agent(m, "p1").unwrap()).unwrap();
        assert_eq!(bearer.principal, "agent:p1");
        assert_eq!(bearer.agent(), Some((m, "p1")));
        assert_eq!(bearer.spectating(), None);
        assert_eq!(t.verify(&t.issue("alice").unwrap()).unwrap().agent(), None);
        let key = EncodingKey::from_secret(b"secret-one").unwrap();
        let now = unix_now();
        let forged = |claims: serde_json::Value| {
            let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap();
            t.verify(&token)
        };
        let agent = serde_json::json!({"match": m, "seat": "p1"});
        assert!(forged(serde_json::json!({"sub": "agent:p1", "iat": now, "exp": now + 60, "agent": agent})).is_ok());
        // A principal that is not the seat's agent principal, a seat-less claim, an unknown
        // field, both scopes at once: each is no token at all (fail closed).
        let cases = [
            serde_json::json!({"sub": "agent:p0", "iat": now, "exp": now + 60, "agent": agent}),
            serde_json::json!({"sub": "alice", "iat": now, "exp": now + 60, "agent": agent}),
            serde_json::json!({"sub": "agent:", "iat": now, "exp": now + 60, "agent": {"match": m, "seat": ""}}),
            serde_json::json!({"sub": "agent:p1", "iat": now, "exp": now + 60, "agent": {"match": m}}),
            serde_json::json!({"sub": "agent:p1", "iat": now, "exp": now + 60,
                               "agent": {"match": m, "seat": "p1", "admin": true}}),
            serde_json::json!({"sub": "agent:p1", "iat": now, "exp": now + 60, "agent": agent, "spectate": m}),
        ];
        for claims in cases {
            assert!(forged(claims.clone()).is_err(), "{claims}");
        }
        let verifier = Tokens::with_public_key(spectators::tests_public_key().as_bytes()).unwrap();
        assert!(verifier.issue_agent(m, "p1").is_err());
    }

    #[test]
    fn a_principal_s_token_naming_an_engine_principal_is_no_token() {
        // Found by the authorization matrix (`services/juegoland/tests/it/authz.rs`, caller
        // `ReservedPrincipal`): a token of `agent:p1` without the agent claim played seat p1
        // of every match whose p1 is an agent seat; `bot:p1` would play every bot's.
        let t = Tokens::new(b"secret-one", 60).unwrap();
        for principal in ["agent:p1", "bot:p0", "replay:p1", "bot:"] {
            assert!(t.verify(&t.issue(principal).unwrap()).is_err(), "{principal}");
        }
        // A name that merely contains one, and the grants that carry them, still verify.
        assert!(t.verify(&t.issue("robot:p1").unwrap()).is_ok());
        assert!(t.verify(&t.issue("alice-agent:p1").unwrap()).is_ok());
        let m = Uuid::from_u128(7);
        assert_eq!(t.verify(&t.issue_agent(m, "p1").unwrap()).unwrap().agent(), Some((m, "p1")));
    }
}
