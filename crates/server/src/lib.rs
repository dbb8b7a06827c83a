//! ctxgraph over the network: the HTTP API, the MCP tools (stdio and streamable HTTP) and the
//! [`Service`] behind both.
//!
//! - [`Service`]: a data directory (principal registry + one store per tenant); one async
//!   function per operation, taking the [`ctxgraph::Principal`] and a request type of [`wire`].
//!   Writes need a writing role; reads go through the caller's [`ctxgraph::Reader`], the policy choke point.
//! - [`http::router`]: the `/v1` routes, `/openapi.json`, health, readiness, metrics, and the
//!   MCP endpoint `/mcp`; [`serve`] runs it with graceful shutdown.
//! - [`mcp::Tools`]: the MCP tools; [`serve_stdio`] runs them over stdin/stdout.
//!
//! This is the only crate that knows HTTP, MCP or JSON wire shapes: engine types are converted
//! by hand in [`wire`].

#![warn(missing_docs)]

pub mod error;
#[cfg(feature = "net")]
pub mod http;
#[cfg(feature = "net")]
pub mod mcp;
#[cfg(feature = "net")]
mod metrics;
#[cfg(feature = "net")]
mod service;
#[cfg(feature = "net")]
mod stdio;
pub mod wire;

pub use error::{ErrorBody, ErrorClass, ServiceError, ViolationDto};
#[cfg(feature = "net")]
pub use metrics::Metrics;
#[cfg(feature = "net")]
pub use service::{
    DEFAULT_DEADLINE, DEFAULT_READ_NICE, MAX_BATCH, MAX_READERS, RequestLimits, SQLITE_HEAP_BUDGET,
    Service, default_readers,
};

#[cfg(feature = "net")]
/// Serve the HTTP API (and `/mcp`) on `listener` until `shutdown` completes, then stop accepting
/// connections and finish the requests in flight, for at most the request deadline
/// ([`RequestLimits::deadline`]): connections still open then (a slow client, a stalled body)
/// are cut. Every write acknowledged is committed before its response is sent, so nothing
/// acknowledged is lost either way. Pending access notes are flushed last.
///
/// Engine work still running on the blocking pool when this returns is not waited for here:
/// the caller's runtime should shut down with a timeout (`Runtime::shutdown_timeout`).
pub async fn serve(
    service: Service,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use std::future::IntoFuture;
    let token = tokio_util::sync::CancellationToken::new();
    let stopping = token.clone();
    let grace = service.limits().deadline;
    let app = http::router(service.clone(), token.clone());
    let graceful = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            token.cancel();
        })
        .into_future();
    let served = tokio::select! {
        served = graceful => served,
        () = async {
            stopping.cancelled().await;
            tokio::time::sleep(grace).await;
        } => Ok(()),
    };
    // Reads noted since the last flush would otherwise be lost with the process.
    service.flush_access().await;
    served
}

#[cfg(feature = "net")]
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

#[cfg(feature = "net")]
/// Serve the MCP tools over stdin/stdout as `principal` until the client closes the stream.
/// A line that is not JSON is answered with a JSON-RPC parse error (code -32700, id null) and
/// the session goes on.
pub async fn serve_stdio(
    service: Service,
    principal: ctxgraph::Principal,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use rmcp::ServiceExt;
    let (input, output, pump) = stdio::pipes(tokio::io::stdin(), tokio::io::stdout());
    let running = mcp::Tools::new(service.clone(), Some(principal)).serve((input, output)).await?;
    let waited = running.waiting().await;
    pump.finish().await;
    waited?;
    service.flush_access().await;
    Ok(())
}
