//! ctxgraph over the network: the HTTP API, the MCP tools (stdio and streamable HTTP) and the
//! [`Service`] behind both.
//!
//! - [`Service`]: a data directory (principal registry + one store per tenant); one async
//!   function per operation, taking the [`ctxgraph::Principal`] and a request type of [`wire`].
//!   Writes need a writing role; reads go through [`ctxgraph::Scoped`], the policy choke point.
//! - [`http::router`]: the `/v1` routes, `/openapi.json`, health, readiness, metrics, and the
//!   MCP endpoint `/mcp`; [`serve`] runs it with graceful shutdown.
//! - [`mcp::Tools`]: the MCP tools; [`serve_stdio`] runs them over stdin/stdout.
//!
//! This is the only crate that knows HTTP, MCP or JSON wire shapes: engine types are converted
//! by hand in [`wire`].

#![warn(missing_docs)]

pub mod error;
pub mod http;
pub mod mcp;
mod metrics;
mod service;
pub mod wire;

use std::future::Future;

pub use error::{ErrorBody, ErrorClass, ServiceError, ViolationDto};
pub use metrics::Metrics;
pub use service::{MAX_BATCH, Service};

/// Serve the HTTP API (and `/mcp`) on `listener` until `shutdown` completes, then stop accepting
/// connections and finish the requests in flight: every write acknowledged is committed before
/// its response is sent, so nothing acknowledged is lost.
pub async fn serve(
    service: Service,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let token = tokio_util::sync::CancellationToken::new();
    let app = http::router(service, token.clone());
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            token.cancel();
        })
        .await
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// Serve the MCP tools over stdin/stdout as `principal` until the client closes the stream.
pub async fn serve_stdio(
    service: Service,
    principal: ctxgraph::Principal,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use rmcp::ServiceExt;
    let running = mcp::Tools::new(service, Some(principal)).serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
