//! Bearer tokens: HS256 JWTs whose `sub` is the principal.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    iat: u64,
    exp: u64,
}

/// Signs and verifies tokens with one shared secret.
#[derive(Clone)]
pub struct Tokens {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    ttl_secs: u64,
}

#[derive(Debug, thiserror::Error)]
#[error("invalid token")]
pub struct InvalidToken;

impl Tokens {
    pub fn new(secret: &[u8], ttl_secs: u64) -> Result<Self, jsonwebtoken::errors::Error> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_required_spec_claims(&["sub", "exp"]);
        Ok(Self {
            encoding: EncodingKey::from_secret(secret)?,
            decoding: DecodingKey::from_secret(secret)?,
            validation,
            ttl_secs,
        })
    }

    /// A token for `principal`, valid for the configured time.
    pub fn issue(&self, principal: &str) -> Result<String, jsonwebtoken::errors::Error> {
        let now = unix_now();
        let claims = Claims { sub: principal.to_owned(), iat: now, exp: now + self.ttl_secs };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
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
}
