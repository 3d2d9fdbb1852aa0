//! Bearer tokens: JWTs whose `sub` is the principal, signed with a shared secret (HS256:
//! the all-in-one, tests, a platform that shares the secret) or verified with a public key
//! (EdDSA, RS256 or ES256: production, where only the platform's identity service holds
//! the private key and gateways can verify but never mint).

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    iat: u64,
    exp: u64,
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
        let Some(encoding) = &self.encoding else {
            return Err(jsonwebtoken::errors::ErrorKind::InvalidKeyFormat.into());
        };
        let now = unix_now();
        let claims = Claims { sub: principal.to_owned(), iat: now, exp: now + self.ttl_secs };
        jsonwebtoken::encode(&Header::new(self.algorithm), &claims, encoding)
    }

    /// The principal of a valid, unexpired token.
    pub fn verify(&self, token: &str) -> Result<String, InvalidToken> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).map_err(|_| InvalidToken)?;
        if data.claims.sub.is_empty() {
            return Err(InvalidToken);
        }
        Ok(data.claims.sub)
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
        assert_eq!(t.verify(&token).unwrap(), "alice");
        let other = Tokens::new(b"secret-two", 60).unwrap();
        assert!(other.verify(&token).is_err());
        assert!(t.verify("not-a-token").is_err());
    }

    // A throwaway Ed25519 key pair made for this test (`openssl genpkey -algorithm ed25519`).
    const PRIVATE: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJpz+CxvnBvej29fwDM26IQRGXTiCrKUViRufCTyBd+c\n-----END PRIVATE KEY-----\n";
    const PUBLIC: &str = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAfcyB4ZrP1E11E/Vk29EMlbdP9xoZOsXy5IgHUrRsbL4=\n-----END PUBLIC KEY-----\n";

    fn signed(algorithm: Algorithm, key: &EncodingKey, sub: &str, exp_offset: i64) -> String {
        let now = unix_now();
        let claims = Claims { sub: sub.into(), iat: now, exp: now.saturating_add_signed(exp_offset) };
        jsonwebtoken::encode(&Header::new(algorithm), &claims, key).unwrap()
    }

    #[test]
    fn a_public_key_verifies_what_its_private_key_signed_and_nothing_else() {
        let verifier = Tokens::with_public_key(PUBLIC.as_bytes()).unwrap();
        let private = EncodingKey::from_ed_pem(PRIVATE.as_bytes()).unwrap();
        assert_eq!(verifier.verify(&signed(Algorithm::EdDSA, &private, "alice", 60)).unwrap(), "alice");
        // Expired, or an HS256 token made with the public key as its "secret" (algorithm
        // confusion), or anything minted by the verifier itself: refused.
        assert!(verifier.verify(&signed(Algorithm::EdDSA, &private, "alice", -120)).is_err());
        let confused = EncodingKey::from_secret(PUBLIC.as_bytes()).unwrap();
        assert!(verifier.verify(&signed(Algorithm::HS256, &confused, "alice", 60)).is_err());
        assert!(verifier.issue("mallory").is_err(), "a verify-only instance cannot mint tokens");
    }
}
