//! The webhook endpoints of a deliverer's start-up configuration: one endpoint from the
//! command line (`--webhook URL` with `--webhook-secret` or `--webhook-secret-file`, id
//! `default`), or any number from a JSON file (`--webhooks-file`):
//!
//! ```json
//! {"endpoints": [
//!   {"id": "ratings", "url": "https://ratings.example/hooks/juegoland",
//!    "secretFile": "/etc/juegoland/webhook-secrets/ratings", "kinds": ["finished", "cancelled"]},
//!   {"id": "history", "url": "http://history.platform:8080/feed", "secret": "…"}
//! ]}
//! ```
//!
//! The file is strict (unknown fields are refused, like every stored format here): a typo
//! must not silently turn a filter off. An endpoint's `id` names its durable cursor and its
//! metrics, so renaming an endpoint starts it again from the feed's beginning; its URL may
//! change freely. A relative `secretFile` is relative to the file's directory; a secret
//! file's trailing whitespace (the newline an editor adds) is not part of the secret.
//!
//! A deliverer writes its configured endpoints into the store when it starts
//! ([`write_configured`], origin `config`), where the platform API lists them beside those it
//! registered; a configured endpoint whose secret changed keeps signing with the old one too
//! for the rotation overlap. A deliverer delivers the endpoints the API registered and, of
//! the configured ones, those of its own configuration: one no longer configured anywhere is
//! delivered by nobody, and stays listed until `DELETE /v1/webhooks/{id}` removes it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use juegoland_store::{StoreError, WebhookEndpoint, WebhookEndpoints, WebhookOrigin};
use serde::Deserialize;
use tracing::warn;

/// The id of the endpoint given with `--webhook`.
pub const DEFAULT_ENDPOINT: &str = "default";

/// One endpoint, checked.
#[derive(Clone)]
pub struct Endpoint {
    /// Names the endpoint's cursor in the store and its metrics (`webhook` label): 1 to 64
    /// characters of `a-z`, `0-9`, `-`, `_`, `.`.
    pub id: String,
    /// `http://` or `https://`.
    pub url: hyper::Uri,
    /// The HMAC key of its signatures.
    pub secret: Vec<u8>,
    /// Only these feed kinds are sent (the others are passed over, the cursor moving past
    /// them); `None`: every kind.
    pub kinds: Option<BTreeSet<String>>,
}

impl std::fmt::Debug for Endpoint {
    /// Without the secret, and without the URL's path and query (they may carry a token).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("id", &self.id)
            .field("scheme", &self.url.scheme_str())
            .field("host", &self.url.host())
            .field("kinds", &self.kinds)
            .finish_non_exhaustive()
    }
}

/// Why the webhook configuration was refused (the process does not start).
#[derive(Debug, thiserror::Error)]
pub enum WebhookConfigError {
    #[error("read the webhooks file {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the webhooks file {} is not a webhook list: {source}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("webhook {id:?}: an id is 1 to 64 characters of a-z, 0-9, '-', '_' and '.'")]
    Id { id: String },
    #[error("webhook {id:?} is configured twice")]
    Duplicate { id: String },
    #[error("webhook {id}: url {url:?} {why}")]
    Url { id: String, url: String, why: String },
    #[error("webhook {id}: {why}")]
    Secret { id: String, why: &'static str },
    #[error("webhook {id}: read the secret file {}", path.display())]
    SecretFile {
        id: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("webhook {id}: {why}")]
    Kinds { id: String, why: String },
    #[error("webhook options: {0}")]
    Options(String),
}

/// The file's shape.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    endpoints: Vec<FileEndpoint>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileEndpoint {
    id: String,
    url: String,
    #[serde(default)]
    secret: Option<String>,
    #[serde(default)]
    secret_file: Option<PathBuf>,
    #[serde(default)]
    kinds: Option<Vec<String>>,
}

/// Where a secret comes from.
pub enum SecretSource<'a> {
    Inline(&'a str),
    File(PathBuf),
}

/// Refuses an id that is not 1 to 64 characters of `a-z`, `0-9`, `-`, `_`, `.`.
pub(crate) fn check_id(id: &str) -> Result<(), String> {
    let valid = (1..=64).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.'));
    if valid { Ok(()) } else { Err(format!("{id:?}: an id is 1 to 64 characters of a-z, 0-9, '-', '_' and '.'")) }
}

/// The URL parsed; refused unless `http://` or `https://` with a host.
pub(crate) fn check_url(url: &str) -> Result<hyper::Uri, String> {
    let parsed: hyper::Uri = url.parse().map_err(|e: hyper::http::uri::InvalidUri| format!("{url:?} {e}"))?;
    if !matches!(parsed.scheme_str(), Some("http" | "https")) {
        return Err(format!("{url:?} is not an http:// or https:// URL"));
    }
    if parsed.host().is_none_or(str::is_empty) {
        return Err(format!("{url:?} has no host"));
    }
    Ok(parsed)
}

/// The kinds, each a feed kind, as a sorted set without repeats; refused when empty.
pub(crate) fn check_kinds(kinds: &[String]) -> Result<Vec<String>, String> {
    let allowed = &juegoland_api::FEED_KINDS;
    if kinds.is_empty() {
        return Err("`kinds` is empty (leave it out to send every kind)".into());
    }
    if let Some(kind) = kinds.iter().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("kind {kind:?} is not a feed kind (one of {allowed:?})"));
    }
    Ok(kinds.iter().cloned().collect::<BTreeSet<_>>().into_iter().collect())
}

/// One endpoint as given, checked into an [`Endpoint`].
pub fn endpoint(
    id: &str,
    url: &str,
    secret: Option<SecretSource<'_>>,
    kinds: Option<&[String]>,
) -> Result<Endpoint, WebhookConfigError> {
    check_id(id).map_err(|_| WebhookConfigError::Id { id: id.to_owned() })?;
    let parsed = check_url(url).map_err(|why| WebhookConfigError::Url {
        id: id.to_owned(),
        url: url.to_owned(),
        why: why.strip_prefix(&format!("{url:?} ")).unwrap_or(&why).to_owned(),
    })?;
    let secret = match secret {
        None => {
            return Err(WebhookConfigError::Secret { id: id.to_owned(), why: "no secret: give secret or secretFile" });
        }
        Some(SecretSource::Inline(text)) => text.as_bytes().to_vec(),
        Some(SecretSource::File(path)) => {
            let bytes = std::fs::read(&path).map_err(|source| WebhookConfigError::SecretFile {
                id: id.to_owned(),
                path: path.clone(),
                source,
            })?;
            let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(0, |i| i + 1);
            bytes[..end].to_vec()
        }
    };
    if secret.is_empty() {
        return Err(WebhookConfigError::Secret { id: id.to_owned(), why: "the secret is empty" });
    }
    let kinds = kinds
        .map(|kinds| check_kinds(kinds).map_err(|why| WebhookConfigError::Kinds { id: id.to_owned(), why }))
        .transpose()?
        .map(|kinds| kinds.into_iter().collect());
    Ok(Endpoint { id: id.to_owned(), url: parsed, secret, kinds })
}

/// Writes `configured` into the store as endpoints of origin `config`: a new one is added
/// (resuming the cursor its id already has), a changed one replaced — a changed secret keeps
/// signing beside the new one for `overlap`. An endpoint the API registered under a
/// configured id becomes the configuration's (logged).
pub(crate) async fn write_configured(
    store: &dyn WebhookEndpoints,
    configured: &[Endpoint],
    overlap: std::time::Duration,
) -> Result<(), StoreError> {
    let now_ms = juegoland_actors::shell::now_ms();
    let overlap_ms = i64::try_from(overlap.as_millis()).unwrap_or(i64::MAX);
    for endpoint in configured {
        let url = endpoint.url.to_string();
        let kinds: Option<Vec<String>> = endpoint.kinds.as_ref().map(|k| k.iter().cloned().collect());
        let Some(stored) = store.webhook_endpoint(&endpoint.id).await? else {
            let row = WebhookEndpoint {
                id: endpoint.id.clone(),
                url,
                kinds,
                secret: endpoint.secret.clone(),
                previous_secret: None,
                previous_until_ms: None,
                origin: WebhookOrigin::Config,
                version: 1,
                created_ms: now_ms,
                updated_ms: now_ms,
            };
            // Lost to a concurrent writer: the other deliverer wrote the same configuration.
            store.create_webhook(&row, None).await?;
            continue;
        };
        let same = stored.origin == WebhookOrigin::Config
            && stored.url == url
            && stored.kinds == kinds
            && stored.secret == endpoint.secret;
        if same {
            continue;
        }
        if stored.origin == WebhookOrigin::Api {
            warn!(webhook = %endpoint.id, "the configuration takes over a webhook endpoint the API registered");
        }
        let (previous_secret, previous_until_ms) = if stored.secret == endpoint.secret {
            (stored.previous_secret.clone(), stored.previous_until_ms)
        } else {
            (Some(stored.secret.clone()), Some(now_ms.saturating_add(overlap_ms)))
        };
        let row = WebhookEndpoint {
            url,
            kinds,
            secret: endpoint.secret.clone(),
            previous_secret,
            previous_until_ms,
            origin: WebhookOrigin::Config,
            version: stored.version + 1,
            updated_ms: now_ms,
            ..stored.clone()
        };
        store.update_webhook(&row, stored.version).await?;
    }
    Ok(())
}

/// The endpoints of the webhooks file at `path`.
pub fn from_file(path: &Path) -> Result<Vec<Endpoint>, WebhookConfigError> {
    let text = std::fs::read(path).map_err(|source| WebhookConfigError::Read { path: path.to_owned(), source })?;
    let file: File =
        serde_json::from_slice(&text).map_err(|source| WebhookConfigError::Parse { path: path.to_owned(), source })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut seen = BTreeSet::new();
    let mut endpoints = Vec::with_capacity(file.endpoints.len());
    for e in file.endpoints {
        let secret = match (&e.secret, e.secret_file) {
            (Some(text), None) => Some(SecretSource::Inline(text)),
            (None, Some(file)) => Some(SecretSource::File(dir.join(file))),
            (None, None) => None,
            (Some(_), Some(_)) => {
                return Err(WebhookConfigError::Secret { id: e.id, why: "give secret or secretFile, not both" });
            }
        };
        let endpoint = endpoint(&e.id, &e.url, secret, e.kinds.as_deref())?;
        if !seen.insert(endpoint.id.clone()) {
            return Err(WebhookConfigError::Duplicate { id: endpoint.id });
        }
        endpoints.push(endpoint);
    }
    Ok(endpoints)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn temp_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("juegoland-webhook-config-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_file_lists_endpoints_with_secrets_inline_or_in_files_relative_to_it() {
        let dir = temp_dir("ok");
        write(&dir, "ratings.secret", "s3cret\n");
        let file = write(
            &dir,
            "hooks.json",
            r#"{"endpoints": [
                {"id": "ratings", "url": "https://ratings.example/hooks?token=x", "secretFile": "ratings.secret",
                 "kinds": ["finished", "cancelled"]},
                {"id": "history", "url": "http://127.0.0.1:9/feed", "secret": "inline"}
            ]}"#,
        );
        let endpoints = from_file(&file).expect("a valid file");
        assert_eq!(endpoints.len(), 2);
        assert_eq!((endpoints[0].id.as_str(), endpoints[0].secret.as_slice()), ("ratings", &b"s3cret"[..]));
        let kinds: Vec<&str> = endpoints[0].kinds.as_ref().unwrap().iter().map(String::as_str).collect();
        assert_eq!(kinds, ["cancelled", "finished"]);
        assert_eq!((endpoints[1].secret.as_slice(), endpoints[1].kinds.is_none()), (&b"inline"[..], true));
        let shown = format!("{endpoints:?}");
        assert!(!shown.contains("s3cret") && !shown.contains("token"), "{shown}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The configuration written into the store: added once, unchanged when the same, a new
    /// secret signing beside the old one for the overlap, an API endpoint of a configured id
    /// taken over; nothing removed.
    #[tokio::test]
    async fn the_configuration_is_written_into_the_store_with_an_overlap_for_a_new_secret() {
        use juegoland_store::MemoryStore;
        let store = MemoryStore::new();
        let overlap = std::time::Duration::from_secs(3600);
        let first = endpoint("ratings", "https://r.example/h", Some(SecretSource::Inline("one")), None).unwrap();
        write_configured(&store, std::slice::from_ref(&first), overlap).await.unwrap();
        let written = store.webhook_endpoint("ratings").await.unwrap().unwrap();
        assert_eq!(
            (written.origin, written.version, written.secret.as_slice()),
            (WebhookOrigin::Config, 1, &b"one"[..])
        );
        write_configured(&store, std::slice::from_ref(&first), overlap).await.unwrap();
        assert_eq!(store.webhook_endpoint("ratings").await.unwrap().unwrap().version, 1, "the same: not rewritten");

        let kinds = ["finished".to_owned()];
        let second =
            endpoint("ratings", "https://r.example/h", Some(SecretSource::Inline("two")), Some(&kinds)).unwrap();
        write_configured(&store, std::slice::from_ref(&second), overlap).await.unwrap();
        let rotated = store.webhook_endpoint("ratings").await.unwrap().unwrap();
        assert_eq!((rotated.version, rotated.kinds.clone()), (2, Some(vec!["finished".to_owned()])));
        let now = juegoland_actors::shell::now_ms();
        assert_eq!(rotated.signing_secrets(now), [&b"two"[..], &b"one"[..]], "both sign during the overlap");
        assert_eq!(rotated.signing_secrets(now + 3_600_001), [&b"two"[..]], "then only the new one");

        let api = WebhookEndpoint { id: "history".into(), origin: WebhookOrigin::Api, ..rotated.clone() };
        assert!(store.create_webhook(&api, None).await.unwrap());
        let history = endpoint("history", "https://h.example/", Some(SecretSource::Inline("h")), None).unwrap();
        write_configured(&store, &[history], overlap).await.unwrap();
        assert_eq!(store.webhook_endpoint("history").await.unwrap().unwrap().origin, WebhookOrigin::Config);
        assert!(store.webhook_endpoint("ratings").await.unwrap().is_some(), "not configured here: left alone");
    }

    #[test]
    fn every_mistake_is_refused_with_what_is_wrong() {
        let dir = temp_dir("errors");
        let cases = [
            (
                r#"{"endpoints": [{"id": "a", "url": "http://x/", "secret": "s", "kind": ["finished"]}]}"#,
                "unknown field `kind`",
            ),
            (r#"{"endpoints": [{"id": "A b", "url": "http://x/", "secret": "s"}]}"#, "an id is 1 to 64"),
            (r#"{"endpoints": [{"id": "a", "url": "ftp://x/", "secret": "s"}]}"#, "not an http:// or https://"),
            (r#"{"endpoints": [{"id": "a", "url": "/relative", "secret": "s"}]}"#, "not an http"),
            (r#"{"endpoints": [{"id": "a", "url": "http://x/"}]}"#, "no secret"),
            (r#"{"endpoints": [{"id": "a", "url": "http://x/", "secret": ""}]}"#, "the secret is empty"),
            (r#"{"endpoints": [{"id": "a", "url": "http://x/", "secret": "s", "secretFile": "f"}]}"#, "not both"),
            (r#"{"endpoints": [{"id": "a", "url": "http://x/", "secretFile": "missing"}]}"#, "read the secret file"),
            (
                r#"{"endpoints": [{"id": "a", "url": "http://x/", "secret": "s", "kinds": ["ended"]}]}"#,
                "kind \"ended\"",
            ),
            (r#"{"endpoints": [{"id": "a", "url": "http://x/", "secret": "s", "kinds": []}]}"#, "`kinds` is empty"),
            (
                r#"{"endpoints": [{"id": "a", "url": "http://x/", "secret": "s"}, {"id": "a", "url": "http://y/", "secret": "t"}]}"#,
                "configured twice",
            ),
        ];
        for (text, expected) in cases {
            let file = write(&dir, "hooks.json", text);
            let error = from_file(&file).expect_err(text);
            let message =
                format!("{error}: {}", std::error::Error::source(&error).map(|s| s.to_string()).unwrap_or_default());
            assert!(message.contains(expected), "{text}: {message}");
        }
        let missing = from_file(&dir.join("nope.json")).expect_err("no file");
        assert!(matches!(missing, WebhookConfigError::Read { .. }), "{missing}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
