//! The web client (`clients/web`), built by Vite into `assets/web` (committed) and embedded at
//! compile time (`build.rs`): `/` is its `index.html`, `/assets/…` its script and styles,
//! `/games/<id>/…` the catalog games' public presentation files (covers, sounds).
//!
//! File names carry no content hash, so every answer says `no-cache` with an `ETag` (a hash of
//! the bytes, computed once): a browser revalidates and gets `304 Not Modified` while the
//! binary is the same.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

mod files {
    include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));
}

/// One embedded file and how it is served.
pub(crate) struct Asset {
    pub(crate) bytes: &'static [u8],
    pub(crate) media_type: &'static str,
    etag: HeaderValue,
}

fn media_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("wav") => "audio/wav",
        Some("ogg") => "audio/ogg",
        Some("mp3") => "audio/mpeg",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// FNV-1a, 64 bits: an entity tag only needs to change when the bytes do.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// Every embedded file by its URL path (`/index.html`, `/assets/app.js`, …).
pub(crate) fn all() -> &'static BTreeMap<&'static str, Asset> {
    static ALL: OnceLock<BTreeMap<&'static str, Asset>> = OnceLock::new();
    ALL.get_or_init(|| {
        files::FILES
            .iter()
            .map(|(path, bytes)| {
                let etag = HeaderValue::from_str(&format!("\"{:016x}\"", fnv1a(bytes))).expect("an ASCII tag");
                (*path, Asset { bytes, media_type: media_type(path), etag })
            })
            .collect()
    })
}

/// The answer for `path` (`/` is `/index.html`), or `None` when no such file is embedded.
pub(crate) fn serve(path: &str, headers: &HeaderMap) -> Option<Response> {
    let path = if path == "/" { "/index.html" } else { path };
    let asset = all().get(path)?;
    let cache = (header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if headers.get(header::IF_NONE_MATCH) == Some(&asset.etag) {
        return Some((StatusCode::NOT_MODIFIED, [(header::ETAG, asset.etag.clone()), cache]).into_response());
    }
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(asset.media_type)),
        (header::ETAG, asset.etag.clone()),
        cache,
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    ];
    Some((headers, asset.bytes).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundle_is_embedded_with_its_entry_points() {
        let all = all();
        for path in ["/index.html", "/assets/app.js", "/games/conecta4/images/cover.svg"] {
            assert!(
                all.contains_key(path),
                "{path} is not embedded; rebuild the client: npm run build --prefix clients/web"
            );
        }
        let index = std::str::from_utf8(all["/index.html"].bytes).expect("UTF-8 HTML");
        assert!(index.contains("/assets/app.js"), "index.html does not load /assets/app.js");
    }

    #[test]
    fn an_unchanged_file_revalidates_with_304() {
        let first = serve("/", &HeaderMap::new()).expect("index.html");
        assert_eq!(first.status(), StatusCode::OK);
        let etag = first.headers()[header::ETAG].clone();
        let mut headers = HeaderMap::new();
        headers.insert(header::IF_NONE_MATCH, etag);
        assert_eq!(serve("/index.html", &headers).expect("index.html").status(), StatusCode::NOT_MODIFIED);
        assert!(serve("/nope.js", &HeaderMap::new()).is_none());
    }
}
