//! The web explorer's static files, built into the binary: the page (`/`), its script and
//! style (hand-written, in `crates/server/ui/`), and Cytoscape.js with its license (copied into
//! `crates/server/ui/dist/` by `crates/server/ui/build.sh` from the pinned npm package). Every
//! response carries a Content-Security-Policy that lets the page load and call nothing but
//! this server.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::{ApiError, AppState};
use crate::error::ServiceError;

/// The policy of every explorer file: nothing from another origin, no inline script, no
/// framing. The one inline style allowed, by its hash, is the stylesheet Cytoscape.js adds for
/// its container (`.__________cytoscape_container`); it sets element styles from script, which
/// `style-src` does not govern.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'sha256-pgvDUBa4IjFA2yuSJ2cqcyxmNYJMborsd0ORcRv9vw8='; img-src 'self' data:; \
                       connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; \
                       frame-ancestors 'none'";

/// The explorer's files: path under `/ui/`, content type, bytes.
pub const ASSETS: &[(&str, &str, &[u8])] = &[
    ("app.js", "text/javascript; charset=utf-8", include_bytes!("../../ui/app.js")),
    ("views.js", "text/javascript; charset=utf-8", include_bytes!("../../ui/views.js")),
    ("graph.js", "text/javascript; charset=utf-8", include_bytes!("../../ui/graph.js")),
    ("style.css", "text/css; charset=utf-8", include_bytes!("../../ui/style.css")),
    (
        "cytoscape.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../ui/dist/cytoscape.min.js"),
    ),
    (
        "cytoscape.LICENSE",
        "text/plain; charset=utf-8",
        include_bytes!("../../ui/dist/cytoscape.LICENSE"),
    ),
];

const INDEX: &[u8] = include_bytes!("../../ui/index.html");

/// The routes: `/` and `/ui/{file}`.
pub(super) fn routes(r: Router<AppState>) -> Router<AppState> {
    r.route("/", get(index)).route("/ui/{file}", get(asset))
}

fn with_headers(content_type: &'static str, body: &'static [u8]) -> Response {
    let mut resp = (StatusCode::OK, body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

async fn index() -> Response {
    with_headers("text/html; charset=utf-8", INDEX)
}

async fn asset(Path(file): Path<String>) -> Result<Response, ApiError> {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, content_type, body)) => Ok(with_headers(content_type, body)),
        None => Err(ApiError(ServiceError::not_found(
            "route.not_found",
            format!("no explorer file {file:?}"),
        ))),
    }
}
