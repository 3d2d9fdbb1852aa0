//! Webhook signatures: HMAC-SHA256 over the delivery's timestamp and body, in one header, as
//! Stripe signs its webhooks.
//!
//! A delivery carries `Juegoland-Signature: t=<unix seconds>,v1=<hex>`, where `<hex>` is the
//! lowercase hex HMAC-SHA256, keyed with the endpoint's secret, of the bytes
//! `<unix seconds>.<body>` (the timestamp's decimal digits, a full stop, then the body exactly
//! as received). A receiver recomputes it over the raw body before parsing it, compares in
//! constant time, and refuses a timestamp too far from its own clock (a replayed delivery).
//! Each attempt is signed anew, so a retry after a long outage carries a fresh timestamp.
//! [`verify`] is that check; README "Webhooks" shows it in other languages.

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The header that carries a delivery's signature.
pub const SIGNATURE_HEADER: &str = "juegoland-signature";

/// How far a delivery's timestamp may be from the receiver's clock by default.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &[u8], timestamp: u64, body: &[u8]) -> HmacSha256 {
    // HMAC takes a key of any length.
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC accepts keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The signature header's value for `body` sent at `timestamp` (unix seconds).
pub fn sign(secret: &[u8], timestamp: u64, body: &[u8]) -> String {
    sign_with(&[secret], timestamp, body)
}

/// The signature header's value with one `v1` per key, in order: while a rotated-out secret
/// still signs, a receiver holding either secret verifies the delivery.
pub fn sign_with(secrets: &[&[u8]], timestamp: u64, body: &[u8]) -> String {
    let mut header = format!("t={timestamp}");
    for secret in secrets {
        header.push_str(",v1=");
        header.push_str(&hex::encode(mac(secret, timestamp, body).finalize().into_bytes()));
    }
    header
}

/// Why a delivery's signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the signature header is not `t=<unix seconds>,v1=<hex>`")]
    Malformed,
    #[error("the signature's timestamp is {age_secs} s away from this clock (tolerance {tolerance_secs} s)")]
    OutsideTolerance { age_secs: u64, tolerance_secs: u64 },
    #[error("no v1 signature matches the body")]
    Mismatch,
}

/// Checks `header` (the [`SIGNATURE_HEADER`]'s value) against `body` and `secret` at `now`
/// (unix seconds): a well-formed header, a timestamp within `tolerance` of `now`, and one of
/// its `v1` signatures (a sender rotating secrets may send several) equal, compared in
/// constant time.
pub fn verify(secret: &[u8], header: &str, body: &[u8], now: u64, tolerance: Duration) -> Result<(), SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = Some(t.parse::<u64>().map_err(|_| SignatureError::Malformed)?),
            Some(("v1", sig)) => signatures.push(hex::decode(sig).map_err(|_| SignatureError::Malformed)?),
            // Other schemes a later sender may add are not ours to judge.
            Some(_) => {}
            None => return Err(SignatureError::Malformed),
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    let age_secs = now.abs_diff(timestamp);
    if age_secs > tolerance.as_secs() {
        return Err(SignatureError::OutsideTolerance { age_secs, tolerance_secs: tolerance.as_secs() });
    }
    let expected = mac(secret, timestamp, body);
    if signatures.iter().any(|sig| expected.clone().verify_slice(sig).is_ok()) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scheme's known answer, as another implementation computes it:
    /// `printf '1700000000.{"events":[]}' | openssl dgst -sha256 -hmac whsec_test`.
    #[test]
    fn signs_the_timestamp_and_the_body() {
        let header = sign(b"whsec_test", 1_700_000_000, br#"{"events":[]}"#);
        assert_eq!(header, "t=1700000000,v1=4f6f9b7a41398ad124e52a1320534f978e522923f3f2b2724e31d7a9dbf78a7f");
    }

    #[test]
    fn verifies_its_own_signature_and_refuses_everything_else() {
        let body = br#"{"webhook":"ratings","events":[]}"#;
        let header = sign(b"s3cret", 1_000, body);
        let tolerance = DEFAULT_TOLERANCE;
        assert_eq!(verify(b"s3cret", &header, body, 1_100, tolerance), Ok(()));
        assert_eq!(verify(b"wrong", &header, body, 1_100, tolerance), Err(SignatureError::Mismatch));
        assert_eq!(verify(b"s3cret", &header, b"{}", 1_100, tolerance), Err(SignatureError::Mismatch));
        assert_eq!(
            verify(b"s3cret", &header, body, 1_301, tolerance),
            Err(SignatureError::OutsideTolerance { age_secs: 301, tolerance_secs: 300 })
        );
        let rotated = format!("{header},v1={}", "00".repeat(32));
        assert_eq!(verify(b"s3cret", &rotated, body, 1_000, tolerance), Ok(()), "any v1 may match");
        let both = sign_with(&[b"new-secret", b"s3cret"], 1_000, body);
        assert!(both.starts_with(&format!("{},v1=", sign(b"new-secret", 1_000, body))), "the new one first: {both}");
        for secret in [&b"new-secret"[..], b"s3cret"] {
            assert_eq!(verify(secret, &both, body, 1_000, tolerance), Ok(()), "either secret verifies");
        }
        assert_eq!(verify(b"older", &both, body, 1_000, tolerance), Err(SignatureError::Mismatch));
        for malformed in ["", "t=1000", "v1=00", "t=x,v1=00", "t=1000,v1=zz", "nonsense"] {
            assert_eq!(
                verify(b"s3cret", malformed, body, 1_000, tolerance),
                Err(SignatureError::Malformed),
                "{malformed}"
            );
        }
    }
}
