//! Bearer tokens: JWTs whose `sub` is the principal, verified with what the platform's
//! identity provider uses — a shared secret (HS256: the all-in-one, tests, a platform that
//! shares the secret), a public key in PEM (EdDSA, RS256 or ES256) or a JWKS, the provider's
//! set of public keys by `kid`, read from its URL and read again when it rotates them
//! ([`KeySet`]; `juegoland_roles::JwksKeys` fetches it) — with the expected issuers and
//! audiences and a leeway for clock skew ([`Verification`]). Only a secret mints tokens (dev
//! tokens, grants); a process that verifies with public keys never can.
//!
//! A refused token says why ([`TokenError`]: malformed, expired, not yet valid, bad
//! signature, wrong audience, wrong issuer, unknown key, algorithm not accepted, claims not
//! accepted), never with a secret or a claim's value.
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
//! engine's own principals (`bot:`, `replay:`, `agent:`, `spectator:`), makes the token invalid
//! (fail closed). Other claims (`iat`, `nbf`, `jti`, a provider's own) are allowed.

use std::sync::Arc;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Claims {
    /// Empty when missing (refused as claims not accepted).
    #[serde(default)]
    sub: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iat: Option<u64>,
    exp: u64,
    /// The issuer minted tokens name (the first expected one), where one is expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iss: Option<String>,
    /// The audience minted tokens name (the first expected one), where one is expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    aud: Option<Audience>,
    /// The match a spectator's grant names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spectate: Option<Uuid>,
    /// The match and seat an agent's grant names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<AgentClaim>,
}

/// An `aud` claim: one audience or several (RFC 7519 allows both).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
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

    /// What its connections count against (`limits.rs`): the principal playing its own
    /// seats, one agent seat (every agent of seat p1 is `agent:p1`, across matches); `None`
    /// for a spectator's grant, which the platform may hand to any number of viewers.
    pub fn connection_key(&self) -> Option<String> {
        match &self.scope {
            Scope::Seats => Some(self.principal.clone()),
            Scope::Agent { match_id, seat } => Some(format!("agent:{match_id}/{seat}")),
            Scope::Spectate(_) => None,
        }
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

/// What a token's claims must say besides its signature: its issuer and audience, where the
/// deployment names them, and the clock skew tolerated on `exp` and `nbf`.
#[derive(Clone, Debug)]
pub struct Verification {
    /// Accepted `iss` values; empty accepts any issuer (and a token without one).
    pub issuers: Vec<String>,
    /// Accepted `aud` values (a token's `aud` must name one); empty accepts any audience (and
    /// a token without one).
    pub audiences: Vec<String>,
    /// Seconds of clock skew tolerated on `exp` and `nbf`.
    pub leeway_secs: u64,
}

impl Default for Verification {
    fn default() -> Self {
        Self { issuers: Vec::new(), audiences: Vec::new(), leeway_secs: DEFAULT_LEEWAY_SECS }
    }
}

/// The clock skew tolerated by default, in seconds (jsonwebtoken's own default).
pub const DEFAULT_LEEWAY_SECS: u64 = 60;

/// A provider's public keys by `kid` (a JWKS), kept up to date by whoever reads them.
pub trait KeySet: Send + Sync {
    /// The key named `kid` and the one algorithm it verifies.
    fn key(&self, kid: &str) -> Option<(DecodingKey, Algorithm)>;

    /// Reads the set again because a token named a key it does not hold (the provider may
    /// have rotated its keys): done at most so often, by the implementation, so that tokens
    /// naming made-up keys cannot make it fetch on every connection.
    fn refresh(&self) -> futures::future::BoxFuture<'_, ()>;
}

/// The keys of a JWKS document that verify signatures, by `kid`: RSA (RS256/384/512,
/// PS256/384/512), EC (ES256 on P-256, ES384 on P-384) and OKP (EdDSA) keys with an id, whose
/// algorithm is their `alg` or follows from their type. Symmetric (`oct`) keys, keys for
/// encryption and keys without an id are left out: a URL never hands out a shared secret.
pub fn jwk_keys(set: &jsonwebtoken::jwk::JwkSet) -> Vec<(String, DecodingKey, Algorithm)> {
    use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, PublicKeyUse};
    set.keys
        .iter()
        .filter_map(|jwk| {
            let kid = jwk.common.key_id.clone()?;
            if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
                return None;
            }
            let declared = jwk.common.key_algorithm.and_then(|a| a.to_string().parse::<Algorithm>().ok());
            let algorithm = match (&jwk.algorithm, declared) {
                (AlgorithmParameters::OctetKey(_) | AlgorithmParameters::Other(_), _) => return None,
                (_, Some(declared)) => declared,
                (AlgorithmParameters::RSA(_), None) => Algorithm::RS256,
                (AlgorithmParameters::EllipticCurve(p), None) => match p.curve {
                    EllipticCurve::P256 => Algorithm::ES256,
                    EllipticCurve::P384 => Algorithm::ES384,
                    _ => return None,
                },
                (AlgorithmParameters::OctetKeyPair(_), None) => Algorithm::EdDSA,
                _ => return None,
            };
            if matches!(algorithm, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
                return None;
            }
            Some((kid, DecodingKey::from_jwk(jwk).ok()?, algorithm))
        })
        .collect()
}

/// Verifies tokens, and signs them when it holds a secret.
#[derive(Clone)]
pub struct Tokens {
    /// `None` when verifying with public keys only: such a process cannot mint tokens.
    encoding: Option<EncodingKey>,
    /// The shared secret's key (HS256 tokens).
    secret: Option<DecodingKey>,
    /// A public key in PEM and its algorithm.
    public: Option<(DecodingKey, Algorithm)>,
    /// A provider's keys by `kid`.
    key_set: Option<Arc<dyn KeySet>>,
    verification: Verification,
    ttl_secs: u64,
}

/// Why a token was refused. Its text is safe to show the bearer: it names the class of the
/// failure, never a secret or a claim's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is malformed")]
    Malformed,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token is meant for another audience")]
    WrongAudience,
    #[error("the token is from another issuer")]
    WrongIssuer,
    #[error("the token is signed with a key this server does not know")]
    UnknownKey,
    #[error("the token's signing algorithm is not accepted here")]
    Algorithm,
    #[error("the token's claims are not accepted")]
    Claims,
}

impl TokenError {
    /// The reason class as a short word (`expired`, `wrong_audience`…): the same in an HTTP
    /// answer's `WWW-Authenticate`, a log line and a client's typed error.
    pub fn reason(self) -> &'static str {
        match self {
            TokenError::Malformed => "malformed",
            TokenError::Expired => "expired",
            TokenError::NotYetValid => "not_yet_valid",
            TokenError::BadSignature => "bad_signature",
            TokenError::WrongAudience => "wrong_audience",
            TokenError::WrongIssuer => "wrong_issuer",
            TokenError::UnknownKey => "unknown_key",
            TokenError::Algorithm => "algorithm_not_accepted",
            TokenError::Claims => "claims_not_accepted",
        }
    }

    fn of(e: &jsonwebtoken::errors::Error) -> Self {
        use jsonwebtoken::errors::ErrorKind;
        match e.kind() {
            ErrorKind::ExpiredSignature => TokenError::Expired,
            ErrorKind::ImmatureSignature => TokenError::NotYetValid,
            ErrorKind::InvalidSignature => TokenError::BadSignature,
            ErrorKind::InvalidAudience => TokenError::WrongAudience,
            ErrorKind::InvalidIssuer => TokenError::WrongIssuer,
            ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName | ErrorKind::UnsupportedAlgorithm => {
                TokenError::Algorithm
            }
            // A required audience or issuer that the token does not name at all.
            ErrorKind::MissingRequiredClaim(claim) if claim == "aud" => TokenError::WrongAudience,
            ErrorKind::MissingRequiredClaim(claim) if claim == "iss" => TokenError::WrongIssuer,
            ErrorKind::MissingRequiredClaim(_) | ErrorKind::InvalidClaimFormat(_) | ErrorKind::InvalidSubject => {
                TokenError::Claims
            }
            ErrorKind::InvalidEcdsaKey | ErrorKind::InvalidEddsaKey | ErrorKind::InvalidRsaKey(_) => {
                TokenError::BadSignature
            }
            _ => TokenError::Malformed,
        }
    }
}

impl Tokens {
    /// Signs and verifies with a shared secret (HS256).
    pub fn new(secret: &[u8], ttl_secs: u64) -> Result<Self, jsonwebtoken::errors::Error> {
        Ok(Self {
            encoding: Some(EncodingKey::from_secret(secret)?),
            secret: Some(DecodingKey::from_secret(secret)?),
            ..Self::none(ttl_secs)
        })
    }

    /// Verifies with a public key in PEM (Ed25519 → EdDSA, RSA → RS256, P-256 → ES256);
    /// only tokens signed with that algorithm are accepted, and none can be issued here.
    pub fn with_public_key(pem: &[u8]) -> Result<Self, jsonwebtoken::errors::Error> {
        Self::none(0).and_public_key(pem)
    }

    /// A verifier that accepts nothing yet, minting tokens valid for `ttl_secs` once it has a
    /// secret: the start of a set of keys ([`Tokens::and_public_key`], [`Tokens::and_key_set`]).
    pub fn none(ttl_secs: u64) -> Self {
        Self {
            encoding: None,
            secret: None,
            public: None,
            key_set: None,
            verification: Verification::default(),
            ttl_secs,
        }
    }

    /// Also verifies with a public key in PEM (its algorithm as in [`Tokens::with_public_key`]).
    pub fn and_public_key(self, pem: &[u8]) -> Result<Self, jsonwebtoken::errors::Error> {
        let public = match DecodingKey::from_ed_pem(pem) {
            Ok(k) => (k, Algorithm::EdDSA),
            Err(_) => match DecodingKey::from_rsa_pem(pem) {
                Ok(k) => (k, Algorithm::RS256),
                Err(_) => (DecodingKey::from_ec_pem(pem)?, Algorithm::ES256),
            },
        };
        Ok(Self { public: Some(public), ..self })
    }

    /// Also verifies with a provider's keys by `kid` (a JWKS).
    pub fn and_key_set(self, key_set: Arc<dyn KeySet>) -> Self {
        Self { key_set: Some(key_set), ..self }
    }

    /// Checks issuers, audiences and the leeway as `verification` says; tokens minted here
    /// name its first issuer and first audience.
    pub fn verifying(self, verification: Verification) -> Self {
        Self { verification, ..self }
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

    /// Whether this instance can mint tokens (it holds a secret, not only public keys).
    pub fn can_issue(&self) -> bool {
        self.encoding.is_some()
    }

    fn sign(&self, claims: &Claims) -> Result<String, jsonwebtoken::errors::Error> {
        let Some(encoding) = &self.encoding else {
            return Err(jsonwebtoken::errors::ErrorKind::InvalidKeyFormat.into());
        };
        let now = unix_now();
        let claims = Claims {
            iat: Some(now),
            exp: now + self.ttl_secs,
            iss: self.verification.issuers.first().cloned(),
            aud: self.verification.audiences.first().cloned().map(Audience::One),
            ..claims.clone()
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, encoding)
    }

    /// The bearer of a valid token, reading the provider's keys again once when the token
    /// names a key they do not hold (a rotation). What a connection calls.
    pub async fn authenticate(&self, token: &str) -> Result<Bearer, TokenError> {
        match (self.verify(token), &self.key_set) {
            (Err(TokenError::UnknownKey), Some(keys)) => {
                keys.refresh().await;
                self.verify(token)
            }
            (verified, _) => verified,
        }
    }

    /// The bearer of a valid, unexpired token: its principal and scope, with the keys held
    /// now. A refusal is logged at debug with its reason and the token's `kid`.
    pub fn verify(&self, token: &str) -> Result<Bearer, TokenError> {
        let Ok(header) = jsonwebtoken::decode_header(token) else {
            tracing::debug!(reason = TokenError::Malformed.reason(), "token refused");
            return Err(TokenError::Malformed);
        };
        let verified = self.verify_with(token, &header);
        if let Err(e) = &verified {
            tracing::debug!(reason = e.reason(), kid = header.kid.as_deref(), alg = ?header.alg, "token refused");
        }
        verified
    }

    fn verify_with(&self, token: &str, header: &Header) -> Result<Bearer, TokenError> {
        let (key, algorithm) = self.key_for(header)?;
        let mut validation = Validation::new(algorithm);
        validation.set_required_spec_claims(&["sub", "exp"]);
        validation.leeway = self.verification.leeway_secs;
        validation.validate_nbf = true;
        if self.verification.audiences.is_empty() {
            validation.validate_aud = false;
        } else {
            // jsonwebtoken checks a present `aud` only: one that is missing must fail too.
            validation.set_audience(&self.verification.audiences);
            validation.required_spec_claims.insert("aud".to_owned());
        }
        if !self.verification.issuers.is_empty() {
            validation.set_issuer(&self.verification.issuers);
            validation.required_spec_claims.insert("iss".to_owned());
        }
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|e| TokenError::of(&e))?;
        let claims = data.claims;
        if juegoland_core::principal_shape(&claims.sub).is_err() {
            return Err(TokenError::Claims);
        }
        let scope = match (claims.spectate, claims.agent) {
            // The engine's own principals (`bot:pN`, `replay:pN`, `agent:pN`) hold seats of
            // every match by name alone: a principal's token naming one would play those seats
            // everywhere (an agent's without its grant's match pin). Only a scoped grant
            // carries such a principal.
            (None, None) if juegoland_core::is_reserved_principal(&claims.sub) => return Err(TokenError::Claims),
            (None, None) => Scope::Seats,
            (Some(match_id), None) => Scope::Spectate(match_id),
            // The agent claim names a seat, and its principal must be that seat's agent one.
            (None, Some(AgentClaim { match_id, seat })) => {
                if seat.is_empty() || seat.len() > 16 || claims.sub != agent_principal(&seat) {
                    return Err(TokenError::Claims);
                }
                Scope::Agent { match_id, seat }
            }
            (Some(_), Some(_)) => return Err(TokenError::Claims),
        };
        Ok(Bearer { principal: claims.sub, scope })
    }

    /// The key that verifies a token with `header`: the secret for HS256 only; for an
    /// asymmetric algorithm the provider's key its `kid` names, else the PEM key when the
    /// algorithms agree. Never a secret for a public-key algorithm or the reverse (no
    /// algorithm confusion).
    fn key_for(&self, header: &Header) -> Result<(DecodingKey, Algorithm), TokenError> {
        if header.alg == Algorithm::HS256 {
            return self.secret.clone().map(|k| (k, Algorithm::HS256)).ok_or(TokenError::Algorithm);
        }
        if let (Some(keys), Some(kid)) = (&self.key_set, &header.kid) {
            match keys.key(kid) {
                Some(found) => return Ok(found),
                None if self.public.as_ref().is_none_or(|(_, a)| *a != header.alg) => {
                    return Err(TokenError::UnknownKey);
                }
                None => {}
            }
        }
        match &self.public {
            Some((key, algorithm)) if *algorithm == header.alg => Ok((key.clone(), *algorithm)),
            _ if self.key_set.is_some() => Err(TokenError::UnknownKey),
            _ => Err(TokenError::Algorithm),
        }
    }
}

/// The longest principal (`sub`) a token may carry, in characters: a seat's bound.
pub use juegoland_core::MAX_PRINCIPAL_CHARS;

impl Claims {
    /// A principal's claims, with no scope and no times yet.
    fn of(principal: &str) -> Self {
        Self { sub: principal.to_owned(), iat: None, exp: 0, iss: None, aud: None, spectate: None, agent: None }
    }
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
        let claims = Claims { iat: Some(now), exp: now.saturating_add_signed(exp_offset), ..Claims::of(sub) };
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

/// Tokens as identity providers make them: audiences, issuers, no `iat`, `nbf`, clock skew,
/// public keys by `kid` and their rotation, and a refusal that names its reason.
#[cfg(test)]
mod providers {
    use std::sync::Mutex;

    use jsonwebtoken::jwk::JwkSet;
    use serde_json::{Value, json};

    use super::*;

    /// The test's identity provider keys (`tests/fixtures/idp-keys.json`).
    fn fixture(name: &str) -> (EncodingKey, Value) {
        let keys: Value = serde_json::from_str(include_str!("../tests/fixtures/idp-keys.json")).unwrap();
        let pem = keys[name]["private"].as_str().unwrap();
        let key = match name {
            "rsa" => EncodingKey::from_rsa_pem(pem.as_bytes()),
            "ec" => EncodingKey::from_ec_pem(pem.as_bytes()),
            _ => EncodingKey::from_ed_pem(pem.as_bytes()),
        };
        (key.unwrap(), keys[name]["jwk"].clone())
    }

    fn sign(alg: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, key).unwrap()
    }

    /// A JWKS that a test can change, and counts its reads.
    struct FakeJwks {
        published: Mutex<Vec<Value>>,
        held: Mutex<Vec<(String, DecodingKey, Algorithm)>>,
        reads: Mutex<u32>,
    }

    impl FakeJwks {
        fn publish(&self, keys: Vec<Value>) {
            *self.published.lock().unwrap() = keys;
        }
    }

    impl KeySet for FakeJwks {
        fn key(&self, kid: &str) -> Option<(DecodingKey, Algorithm)> {
            self.held.lock().unwrap().iter().find(|(k, ..)| k == kid).map(|(_, key, alg)| (key.clone(), *alg))
        }

        fn refresh(&self) -> futures::future::BoxFuture<'_, ()> {
            Box::pin(async move {
                *self.reads.lock().unwrap() += 1;
                let set: JwkSet = serde_json::from_value(json!({ "keys": *self.published.lock().unwrap() })).unwrap();
                *self.held.lock().unwrap() = jwk_keys(&set);
            })
        }
    }

    fn with_kid(mut jwk: Value, kid: &str) -> Value {
        jwk["kid"] = json!(kid);
        jwk
    }

    #[test]
    fn a_provider_s_claims_verify_and_a_refusal_names_its_reason() {
        let secret = Tokens::new(b"shared-secret", 60).unwrap();
        let key = EncodingKey::from_secret(b"shared-secret").unwrap();
        let now = unix_now();
        let token = |claims: Value| sign(Algorithm::HS256, None, &key, &claims);
        // An `aud`, no `iat`, and a provider's own claims: accepted where no audience is set.
        let shaped = json!({"sub": "auth0|alice", "exp": now + 60, "aud": ["juegoland", "other"],
                            "iss": "https://idp.example/", "azp": "x", "scope": "openid", "nbf": now - 5});
        assert_eq!(secret.verify(&token(shaped.clone())).unwrap(), Bearer::seats("auth0|alice"));
        // Where they are set, the audience and the issuer must match.
        let expecting = |issuers: &[&str], audiences: &[&str]| {
            secret.clone().verifying(Verification {
                issuers: issuers.iter().map(|s| (*s).to_owned()).collect(),
                audiences: audiences.iter().map(|s| (*s).to_owned()).collect(),
                leeway_secs: 30,
            })
        };
        let strict = expecting(&["https://idp.example/"], &["juegoland"]);
        assert!(strict.verify(&token(shaped.clone())).is_ok());
        let cases = [
            (expecting(&[], &["payments"]), shaped.clone(), TokenError::WrongAudience),
            (expecting(&["https://other.example/"], &[]), shaped.clone(), TokenError::WrongIssuer),
            (
                strict.clone(),
                json!({"sub": "a", "exp": now + 60, "iss": "https://idp.example/"}),
                TokenError::WrongAudience,
            ),
            (strict.clone(), json!({"sub": "a", "exp": now + 60, "aud": "juegoland"}), TokenError::WrongIssuer),
            (
                strict.clone(),
                json!({"sub": "a", "exp": now - 31, "aud": "juegoland", "iss": "https://idp.example/"}),
                TokenError::Expired,
            ),
            (
                strict.clone(),
                json!({"sub": "a", "exp": now + 60, "nbf": now + 31, "aud": "juegoland",
                                    "iss": "https://idp.example/"}),
                TokenError::NotYetValid,
            ),
            (
                strict.clone(),
                json!({"exp": now + 60, "aud": "juegoland", "iss": "https://idp.example/"}),
                TokenError::Claims,
            ),
            (
                strict.clone(),
                json!({"sub": "x".repeat(129), "exp": now + 60, "aud": "juegoland",
                                    "iss": "https://idp.example/"}),
                TokenError::Claims,
            ),
            (
                strict.clone(),
                json!({"sub": "alice\u{0}", "exp": now + 60, "aud": "juegoland", "iss": "https://idp.example/"}),
                TokenError::Claims,
            ),
        ];
        for (verifier, claims, reason) in cases {
            assert_eq!(verifier.verify(&token(claims.clone())), Err(reason), "{claims}");
        }
        // Within the leeway a token just expired, or just about to start, still verifies.
        let skewed =
            json!({"sub": "a", "exp": now - 20, "nbf": now + 20, "aud": "juegoland", "iss": "https://idp.example/"});
        assert!(strict.verify(&token(skewed)).is_ok());
        // Tokens minted here carry the first issuer and audience, so they verify here.
        assert_eq!(strict.verify(&strict.issue("alice").unwrap()).unwrap(), Bearer::seats("alice"));
        assert_eq!(strict.verify("not.a.token"), Err(TokenError::Malformed));
        let forged = sign(Algorithm::HS256, None, &EncodingKey::from_secret(b"guess").unwrap(), &shaped);
        assert_eq!(secret.verify(&forged), Err(TokenError::BadSignature));
        for e in [TokenError::Expired, TokenError::WrongAudience, TokenError::UnknownKey] {
            assert!(!e.reason().is_empty() && !e.to_string().contains("secret"));
        }
    }

    #[tokio::test]
    async fn keys_by_kid_verify_their_algorithms_and_a_rotation_is_read_once() {
        let (rsa, rsa_jwk) = fixture("rsa");
        let (ec, ec_jwk) = fixture("ec");
        let (ed_a, ed_a_jwk) = fixture("ed_a");
        let (ed_b, ed_b_jwk) = fixture("ed_b");
        let jwks = Arc::new(FakeJwks { published: Mutex::default(), held: Mutex::default(), reads: Mutex::default() });
        jwks.publish(vec![with_kid(rsa_jwk, "r1"), with_kid(ec_jwk, "e1"), with_kid(ed_a_jwk, "a")]);
        jwks.refresh().await;
        *jwks.reads.lock().unwrap() = 0;
        let verifier = Tokens::none(0).and_key_set(jwks.clone());
        let now = unix_now();
        let claims = json!({"sub": "alice", "exp": now + 60});
        for (alg, kid, key) in
            [(Algorithm::RS256, "r1", &rsa), (Algorithm::ES256, "e1", &ec), (Algorithm::EdDSA, "a", &ed_a)]
        {
            assert_eq!(
                verifier.authenticate(&sign(alg, Some(kid), key, &claims)).await.unwrap(),
                Bearer::seats("alice")
            );
        }
        // A key under another key's kid, or another algorithm than the key's: refused.
        let wrong = sign(Algorithm::EdDSA, Some("a"), &ed_b, &claims);
        assert_eq!(verifier.authenticate(&wrong).await, Err(TokenError::BadSignature));
        let confused = sign(Algorithm::HS256, Some("r1"), &EncodingKey::from_secret(b"x").unwrap(), &claims);
        assert_eq!(verifier.authenticate(&confused).await, Err(TokenError::Algorithm));
        assert!(!verifier.can_issue());
        // The provider rotates to key b: the first token naming it makes one read, and then
        // verifies; tokens naming a key nobody published are refused as unknown.
        jwks.publish(vec![with_kid(ed_b_jwk, "b")]);
        let rotated = sign(Algorithm::EdDSA, Some("b"), &ed_b, &claims);
        assert_eq!(verifier.verify(&rotated), Err(TokenError::UnknownKey), "not held before the read");
        assert!(verifier.authenticate(&rotated).await.is_ok());
        assert_eq!(*jwks.reads.lock().unwrap(), 1);
        let unknown = sign(Algorithm::EdDSA, Some("nobody"), &ed_b, &claims);
        assert_eq!(verifier.authenticate(&unknown).await, Err(TokenError::UnknownKey));
        // Keys without an id, symmetric keys and encryption keys are never taken from a set.
        let set: JwkSet = serde_json::from_value(json!({"keys": [
            {"kty": "oct", "kid": "s", "k": "c2VjcmV0"},
            {"kty": "OKP", "crv": "Ed25519", "x": "Jgt3BcL8IL-UIHqx_zw4YvNNd_w6tH4QbcZC8ss8Buw"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "enc", "use": "enc", "x": "Jgt3BcL8IL-UIHqx_zw4YvNNd_w6tH4QbcZC8ss8Buw"},
        ]}))
        .unwrap();
        assert!(jwk_keys(&set).is_empty());
    }
}
