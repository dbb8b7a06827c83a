//! The HTTP API: versioned JSON routes under `/v1`, bearer-key auth, JSON errors, the OpenAPI
//! document, health, readiness, metrics, and the MCP endpoint at `/mcp`.
//!
//! Errors are `{"error": {"code", "message", "violations"?}}` with the status of their class:
//! malformed JSON 400, a body of the wrong shape 422, a refused record 422, no key or an unknown
//! key 401, a missing role 403, nothing visible of that id 404, a body over [`BODY_LIMIT`] or a
//! question over its limits 413, a busy store or a request past its deadline 503 (with
//! `Retry-After`).

use std::sync::Arc;

use axum::extract::{FromRequest, FromRequestParts, MatchedPath, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use ctxgraph::Principal;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi;

use crate::error::{ErrorBody, ErrorClass, ServiceError};
use crate::mcp::Tools;
use crate::service::Service;
use crate::wire::*;

mod explore;
mod tools;
pub mod ui;

/// Largest request body: 8 MiB (a batch of a few thousand events).
pub const BODY_LIMIT: usize = 8 * 1024 * 1024;

#[derive(Clone)]
struct AppState {
    service: Service,
}

/// A service error as an HTTP response.
#[derive(Debug)]
pub struct ApiError(pub ServiceError);

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        ApiError(e)
    }
}

fn status(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::BadRequest => StatusCode::BAD_REQUEST,
        ErrorClass::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorClass::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorClass::Forbidden => StatusCode::FORBIDDEN,
        ErrorClass::NotFound => StatusCode::NOT_FOUND,
        ErrorClass::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorClass::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        ErrorClass::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ErrorClass::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorClass::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = status(self.0.class);
        let mut resp = (code, Json(ErrorBody::from(&self.0))).into_response();
        if code == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if code == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        resp
    }
}

/// The principal a request authenticated as (`Authorization: Bearer <key>`).
pub struct Auth(pub Principal);

fn bearer(parts: &Parts) -> Result<&str, ServiceError> {
    let missing = || {
        ServiceError::new(
            ErrorClass::Unauthenticated,
            "auth.missing_key",
            "no API key: send Authorization: Bearer <key> (ctxgraph principal add prints one)",
        )
    };
    let value = parts.headers.get(header::AUTHORIZATION).ok_or_else(missing)?;
    let value = value.to_str().map_err(|_| missing())?;
    let key = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .ok_or_else(missing)?;
    Ok(key.trim())
}

impl FromRequestParts<AppState> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let key = bearer(parts)?;
        Ok(Auth(state.service.authenticate(key)?))
    }
}

/// A JSON body whose rejections are JSON errors with stable codes.
pub struct Body<T>(pub T);

impl<T: WireRequest, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        // Forgiving: a body without a content type is read as JSON; one that names another
        // type is refused.
        let declared = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
        if let Some(ct) = declared
            && !(ct.starts_with("application/json") || ct.contains("+json"))
        {
            return Err(ApiError(ServiceError::bad_request(
                "request.content_type",
                format!("content type {ct:?}: send the body as JSON (application/json)"),
            )));
        }
        let bytes = axum::body::Bytes::from_request(req, state).await.map_err(|r| {
            if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ServiceError::new(
                    ErrorClass::TooLarge,
                    "request.too_large",
                    format!("the body is larger than {BODY_LIMIT} bytes: split the batch"),
                )
            } else {
                ServiceError::bad_request("request.body", r.body_text())
            }
        })?;
        Ok(Body(crate::wire::parse_body(&bytes)?))
    }
}

/// Query parameters whose rejections are JSON errors; a parameter the route does not know is
/// `request.unknown_field`, as in a body.
pub struct Query<T>(pub T);

impl<T: WireRequest, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(Query(v)),
            Err(r) => {
                let text = r.body_text();
                Err(ApiError(
                    unknown_field_error::<T>(&text)
                        .unwrap_or_else(|| ServiceError::bad_request("request.query", text)),
                ))
            }
        }
    }
}

type ApiResult<T> = Result<Json<T>, ApiError>;

/// The router: `/v1` routes, `/openapi.json`, `/healthz`, `/readyz`, `/metrics` and `/mcp`.
/// `shutdown` ends the MCP sessions when the server stops.
pub fn router(service: Service, shutdown: CancellationToken) -> Router {
    let state = AppState { service: service.clone() };
    let mcp_service = service.clone();
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = shutdown;
    let mcp = StreamableHttpService::new(
        move || Ok(Tools::new(mcp_service.clone(), None)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mcp = Router::new()
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(state.clone(), mcp_auth));
    let v1 = Router::new()
        .route("/v1/events", post(ingest))
        .route("/v1/events/{id}", get(event))
        .route("/v1/sessions/{id}/timeline", get(timeline))
        .route("/v1/recall", post(recall))
        .route("/v1/search", post(search))
        .route("/v1/facts", post(record_fact))
        .route("/v1/facts/{id}/retract", post(retract_fact))
        .route("/v1/entities/recall", post(recall_entity))
        .route("/v1/memories", post(save_memory).get(memories))
        .route("/v1/memories/links", post(link_memories))
        .route("/v1/memories/search", post(search_memories))
        .route("/v1/memories/rollup", get(rollup))
        .route("/v1/memories/{id}", get(memory))
        .route("/v1/memories/{id}/outcome", post(outcome))
        .route("/v1/memories/{id}/impact", get(impact))
        .route("/v1/topics/{topic}/evolution", get(evolution))
        .route("/v1/stats", get(stats))
        .route("/v1/principals", get(principals))
        .route("/v1/forget", post(forget))
        .route("/v1/forgotten", get(forgotten))
        .route("/v1/receipts", post(add_receipts).get(receipts))
        .route("/v1/traces", post(traces));
    let v1 = ui::routes(explore::routes(tools::routes(v1)))
        .route("/openapi.json", get(openapi_json))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), count_request))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT));
    v1.merge(mcp)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// Count every routed request by route template and status.
async fn count_request(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let resp = next.run(req).await;
    state.service.metrics().request(&route, resp.status().as_u16());
    resp
}

/// Authenticate MCP requests and hand the principal to the tools through the extensions.
async fn mcp_auth(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let who = bearer(&parts).and_then(|key| state.service.authenticate(key));
    let status = match who {
        Ok(p) => {
            parts.extensions.insert(p);
            req = Request::from_parts(parts, body);
            let resp = next.run(req).await;
            state.service.metrics().request("/mcp", resp.status().as_u16());
            return resp;
        }
        Err(e) => e,
    };
    let resp = ApiError(status).into_response();
    state.service.metrics().request("/mcp", resp.status().as_u16());
    resp
}

async fn not_found(req: Request) -> ApiError {
    ApiError(ServiceError::not_found(
        "route.not_found",
        format!("no route {} {}: see /openapi.json", req.method(), req.uri().path()),
    ))
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError(ServiceError::new(
        ErrorClass::MethodNotAllowed,
        "route.method_not_allowed",
        format!("{} is not allowed on {}: see /openapi.json", req.method(), req.uri().path()),
    ))
}

/// Ingest a batch of event records, one result per record.
#[utoipa::path(post, path = "/v1/events", tag = "events", request_body = IngestRequest,
    responses((status = 200, description = "One result per record; accepted ones are durable", body = IngestResponse),
        (status = "4XX", description = "Bad request, key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn ingest(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<IngestRequest>,
) -> ApiResult<IngestResponse> {
    Ok(Json(s.service.ingest(&who, req).await?))
}

/// One event by id.
#[utoipa::path(get, path = "/v1/events/{id}", tag = "events", params(("id" = String, Path, description = "Event id")),
    responses((status = 200, description = "The event", body = NodeDto),
        (status = "4XX", description = "Unknown or hidden event, bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn event(
    State(s): State<AppState>,
    Auth(who): Auth,
    Path(id): Path<String>,
) -> ApiResult<NodeDto> {
    Ok(Json(s.service.event(&who, id).await?))
}

/// A session's events in time order, a page at a time.
#[utoipa::path(get, path = "/v1/sessions/{id}/timeline", tag = "events",
    params(("id" = String, Path, description = "Session id"), PageQuery),
    responses((status = 200, description = "A page of events", body = TimelinePage),
        (status = "4XX", description = "Bad cursor or key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn timeline(
    State(s): State<AppState>,
    Auth(who): Auth,
    Path(id): Path<String>,
    Query(page): Query<PageQuery>,
) -> ApiResult<TimelinePage> {
    Ok(Json(s.service.timeline(&who, id, page).await?))
}

/// The context pack for a question.
#[utoipa::path(post, path = "/v1/recall", tag = "recall", request_body = RecallRequest,
    responses((status = 200, description = "The context pack", body = ContextPackDto),
        (status = "4XX", description = "Bad request or key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn recall(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<RecallRequest>,
) -> ApiResult<ContextPackDto> {
    Ok(Json(s.service.recall(&who, req).await?))
}

/// Full-text search.
#[utoipa::path(post, path = "/v1/search", tag = "recall", request_body = SearchRequest,
    responses((status = 200, description = "Hits, best first", body = SearchResponse),
        (status = "4XX", description = "Bad request or key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn search(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<SearchRequest>,
) -> ApiResult<SearchResponse> {
    Ok(Json(s.service.search(&who, req).await?))
}

/// Record a claim.
#[utoipa::path(post, path = "/v1/facts", tag = "facts", request_body = RecordFactRequest,
    responses((status = 200, description = "The fact the claim supports", body = FactRecorded),
        (status = "4XX", description = "Refused claim, bad key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn record_fact(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<RecordFactRequest>,
) -> ApiResult<FactRecorded> {
    Ok(Json(s.service.record_fact(&who, req).await?))
}

/// Retract a fact.
#[utoipa::path(post, path = "/v1/facts/{id}/retract", tag = "facts", params(("id" = String, Path, description = "Fact id")),
    request_body = RetractFactRequest,
    responses((status = 200, description = "The retraction", body = Written),
        (status = "4XX", description = "Unknown fact, bad key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn retract_fact(
    State(s): State<AppState>,
    Auth(who): Auth,
    Path(id): Path<String>,
    Body(req): Body<RetractFactRequest>,
) -> ApiResult<Written> {
    Ok(Json(s.service.retract_fact(&who, id, req).await?))
}

/// An entity and the facts about it.
#[utoipa::path(post, path = "/v1/entities/recall", tag = "facts", request_body = RecallEntityRequest,
    responses((status = 200, description = "The entity and its facts", body = EntityFacts),
        (status = "4XX", description = "No or several matching entities, bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn recall_entity(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<RecallEntityRequest>,
) -> ApiResult<EntityFacts> {
    Ok(Json(s.service.recall_entity(&who, req).await?))
}

/// Save a memory.
#[utoipa::path(post, path = "/v1/memories", tag = "memories", request_body = SaveMemoryRequest,
    responses((status = 200, description = "The memory id", body = Written),
        (status = "4XX", description = "Refused memory, bad key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn save_memory(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<SaveMemoryRequest>,
) -> ApiResult<Written> {
    Ok(Json(s.service.save_memory(&who, req).await?))
}

/// Memories, newest first, a page at a time.
#[utoipa::path(get, path = "/v1/memories", tag = "memories", params(MemoryListQuery),
    responses((status = 200, description = "A page of memories", body = MemoryPage),
        (status = "4XX", description = "Bad cursor or key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn memories(
    State(s): State<AppState>,
    Auth(who): Auth,
    Query(q): Query<MemoryListQuery>,
) -> ApiResult<MemoryPage> {
    Ok(Json(s.service.memories(&who, q).await?))
}

/// One memory.
#[utoipa::path(get, path = "/v1/memories/{id}", tag = "memories", params(("id" = String, Path, description = "Memory id")),
    responses((status = 200, description = "The memory", body = MemoryDto),
        (status = "4XX", description = "Unknown or hidden memory, bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn memory(
    State(s): State<AppState>,
    Auth(who): Auth,
    Path(id): Path<String>,
) -> ApiResult<MemoryDto> {
    Ok(Json(s.service.memory(&who, id).await?))
}

/// Record a memory's outcome.
#[utoipa::path(post, path = "/v1/memories/{id}/outcome", tag = "memories", params(("id" = String, Path, description = "Memory id")),
    request_body = OutcomeRequest,
    responses((status = 200, description = "The outcome id", body = Written),
        (status = "4XX", description = "Refused outcome, bad key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn outcome(
    State(s): State<AppState>,
    Auth(who): Auth,
    Path(id): Path<String>,
    Body(mut req): Body<OutcomeRequest>,
) -> ApiResult<Written> {
    req.memory_id = Some(id);
    Ok(Json(s.service.outcome(&who, req).await?))
}

/// Link two memories.
#[utoipa::path(post, path = "/v1/memories/links", tag = "memories", request_body = LinkRequest,
    responses((status = 200, description = "The link id", body = Written),
        (status = "4XX", description = "Refused link, bad key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn link_memories(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<LinkRequest>,
) -> ApiResult<Written> {
    Ok(Json(s.service.link(&who, req).await?))
}

/// What depends on a memory.
#[utoipa::path(get, path = "/v1/memories/{id}/impact", tag = "memories",
    params(("id" = String, Path, description = "Memory id"), AsOfQuery),
    responses((status = 200, description = "The impact walk", body = ImpactDto),
        (status = "4XX", description = "Unknown or hidden memory, bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn impact(
    State(s): State<AppState>,
    Auth(who): Auth,
    Path(id): Path<String>,
    Query(q): Query<AsOfQuery>,
) -> ApiResult<ImpactDto> {
    Ok(Json(s.service.impact(&who, id, q).await?))
}

/// A topic's decision chain.
#[utoipa::path(get, path = "/v1/topics/{topic}/evolution", tag = "memories",
    params(("topic" = String, Path, description = "Topic"), AsOfQuery),
    responses((status = 200, description = "The chain, latest first", body = EvolutionDto),
        (status = "4XX", description = "No visible decision on the topic, bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn evolution(
    State(s): State<AppState>,
    Auth(who): Auth,
    Path(topic): Path<String>,
    Query(q): Query<AsOfQuery>,
) -> ApiResult<EvolutionDto> {
    Ok(Json(s.service.evolution(&who, EvolutionRequest { topic, as_of: q.as_of }).await?))
}

/// Contextual memory search.
#[utoipa::path(post, path = "/v1/memories/search", tag = "memories", request_body = MemorySearchRequest,
    responses((status = 200, description = "Hits with the evolution of the top decision", body = MemoryContextDto),
        (status = "4XX", description = "Bad request or key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn search_memories(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<MemorySearchRequest>,
) -> ApiResult<MemoryContextDto> {
    Ok(Json(s.service.search_memories(&who, req).await?))
}

/// The rollup of a window (the last seven days by default).
#[utoipa::path(get, path = "/v1/memories/rollup", tag = "memories", params(RollupRequest),
    responses((status = 200, description = "The rollup", body = RollupDto),
        (status = "4XX", description = "Bad window or key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn rollup(
    State(s): State<AppState>,
    Auth(who): Auth,
    Query(q): Query<RollupRequest>,
) -> ApiResult<RollupDto> {
    Ok(Json(s.service.rollup(&who, q).await?))
}

/// Counts of what the principal may see.
#[utoipa::path(get, path = "/v1/stats", tag = "admin",
    responses((status = 200, description = "Visible counts", body = StatsDto),
        (status = "4XX", description = "Bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn stats(State(s): State<AppState>, Auth(who): Auth) -> ApiResult<StatsDto> {
    Ok(Json(s.service.stats(&who).await?))
}

/// Every principal (admins only; keys are never shown).
#[utoipa::path(get, path = "/v1/principals", tag = "admin",
    responses((status = 200, description = "Principals", body = PrincipalList),
        (status = "4XX", description = "Bad key, not an admin", body = ErrorBody)),
    security(("bearer" = [])))]
async fn principals(State(s): State<AppState>, Auth(who): Auth) -> ApiResult<PrincipalList> {
    Ok(Json(s.service.principals(&who).await?))
}

/// Forget an event, a session, an entity or a memory for good (admins only).
#[utoipa::path(post, path = "/v1/forget", tag = "admin", request_body = ForgetRequest,
    responses((status = 200, description = "Forgotten: content removed from the store", body = ForgetResponse),
        (status = "4XX", description = "Unknown target, bad key, not an admin", body = ErrorBody)),
    security(("bearer" = [])))]
async fn forget(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<ForgetRequest>,
) -> ApiResult<ForgetResponse> {
    Ok(Json(s.service.forget(&who, req).await?))
}

/// The forget audit: what was forgotten, when, by whom and why, without content (admins only).
#[utoipa::path(get, path = "/v1/forgotten", tag = "admin",
    responses((status = 200, description = "The audit, oldest first", body = ForgottenList),
        (status = "4XX", description = "Bad key, not an admin", body = ErrorBody)),
    security(("bearer" = [])))]
async fn forgotten(State(s): State<AppState>, Auth(who): Auth) -> ApiResult<ForgottenList> {
    Ok(Json(s.service.forgotten(&who).await?))
}

/// Record decision receipts, one result per receipt.
#[utoipa::path(post, path = "/v1/receipts", tag = "receipts", request_body = ReceiptsRequest,
    responses((status = 200, description = "One result per receipt", body = IngestResponse),
        (status = "4XX", description = "Bad request, key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn add_receipts(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<ReceiptsRequest>,
) -> ApiResult<IngestResponse> {
    Ok(Json(s.service.add_receipts(&who, req).await?))
}

/// Receipts by task, actor, committed window and policy, newest first.
#[utoipa::path(get, path = "/v1/receipts", tag = "receipts", params(ReceiptListQuery),
    responses((status = 200, description = "Receipts the principal may see", body = ReceiptList),
        (status = "4XX", description = "Bad filter or key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn receipts(
    State(s): State<AppState>,
    Auth(who): Auth,
    Query(q): Query<ReceiptListQuery>,
) -> ApiResult<ReceiptList> {
    Ok(Json(s.service.receipts(&who, q).await?))
}

/// OTLP/HTTP trace export (`application/x-protobuf` or `application/json`, optionally
/// `Content-Encoding: gzip`): GenAI spans become events; refused spans are reported as partial
/// success.
#[utoipa::path(post, path = "/v1/traces", tag = "events",
    request_body(content = Vec<u8>, description = "ExportTraceServiceRequest", content_type = "application/x-protobuf"),
    responses((status = 200, description = "ExportTraceServiceResponse in the request's encoding"),
        (status = "4XX", description = "Undecodable body, unknown content type, bad key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn traces(
    State(s): State<AppState>,
    Auth(who): Auth,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let content_type =
        headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let encoding = ctxgraph_otlp::Encoding::from_content_type(content_type).ok_or_else(|| {
        ApiError(ServiceError::new(
            ErrorClass::UnsupportedMediaType,
            "request.content_type",
            format!(
                "content type {content_type:?}: send application/x-protobuf or application/json"
            ),
        ))
    })?;
    let body = decoded_body(&headers, body)?;
    let out = s.service.traces(&who, body, encoding).await?;
    Ok(([(header::CONTENT_TYPE, encoding.content_type())], out.body).into_response())
}

/// Largest OTLP body once decompressed: four times [`BODY_LIMIT`] (traces compress well, and
/// a small compressed body must not expand without bound).
const DECODED_LIMIT: u64 = 4 * BODY_LIMIT as u64;

/// The body as sent, or decompressed for `Content-Encoding: gzip` (OTLP exporters compress by
/// default). Another encoding is a 415 `request.content_encoding`; a body that does not
/// decompress a 400 `otlp.decode`; one that expands past [`DECODED_LIMIT`] a 413.
fn decoded_body(
    headers: &axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Result<Vec<u8>, ApiError> {
    use std::io::Read;
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map_or(String::new(), |v| v.trim().to_ascii_lowercase());
    match encoding.as_str() {
        "" | "identity" => Ok(body.to_vec()),
        "gzip" | "x-gzip" => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(body.as_ref())
                .take(DECODED_LIMIT + 1)
                .read_to_end(&mut out)
                .map_err(|e| {
                    ServiceError::bad_request(
                        "otlp.decode",
                        format!("the gzip body does not decompress: {e}"),
                    )
                })?;
            if out.len() as u64 > DECODED_LIMIT {
                return Err(ApiError(ServiceError::new(
                    ErrorClass::TooLarge,
                    "request.too_large",
                    format!(
                        "the body decompresses to more than {DECODED_LIMIT} bytes: send smaller batches"
                    ),
                )));
            }
            Ok(out)
        }
        other => Err(ApiError(ServiceError::new(
            ErrorClass::UnsupportedMediaType,
            "request.content_encoding",
            format!("content encoding {other:?}: send the body uncompressed or as gzip"),
        ))),
    }
}

/// Alive.
#[utoipa::path(get, path = "/healthz", tag = "admin", responses((status = 200, description = "The process serves requests")))]
async fn healthz() -> &'static str {
    "ok\n"
}

/// Ready: the data directory and the principal registry can be read.
#[utoipa::path(get, path = "/readyz", tag = "admin",
    responses((status = 200, description = "Ready"), (status = 500, description = "Not ready", body = ErrorBody)))]
async fn readyz(State(s): State<AppState>) -> Result<&'static str, ApiError> {
    s.service.ready()?;
    Ok("ready\n")
}

/// The role that may read `/metrics`. The metrics cover every tenant (their names, counts and
/// lags), so they are for the server's operator, not for a tenant's admin.
pub const ROLE_METRICS: &str = "metrics";

/// Prometheus metrics (text exposition format), for a principal with the `metrics` role.
#[utoipa::path(get, path = "/metrics", tag = "admin",
    responses((status = 200, description = "Metrics", content_type = "text/plain"),
        (status = "4XX", description = "Bad key, no metrics role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn metrics(
    State(s): State<AppState>,
    Auth(who): Auth,
) -> Result<impl IntoResponse, ApiError> {
    if !who.has_role(ROLE_METRICS) {
        return Err(ApiError(ServiceError::forbidden(format!(
            "principal {:?} may not read the metrics, which name every tenant: it needs the {ROLE_METRICS} role",
            who.name()
        ))));
    }
    // A scale-out store's lag moves as its workers fold, not as this server writes: read now.
    s.service.read_scale_out_lags().await;
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], s.service.metrics().render()))
}

/// The OpenAPI document of this API.
async fn openapi_json() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], openapi_document())
}

struct BearerScheme;

impl utoipa::Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
        if let Some(c) = openapi.components.as_mut() {
            c.add_security_scheme(
                "bearer",
                SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
            );
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "ctxgraph", description = "Long-term memory for AI agents: events, facts, decision memories and recall over one context graph. Every route but /healthz, /readyz and /openapi.json needs Authorization: Bearer <key>; /metrics needs a principal with the metrics role."),
    paths(ingest, event, timeline, recall, search, record_fact, retract_fact, recall_entity, save_memory,
        memories, memory, outcome, link_memories, impact, evolution, search_memories, rollup, stats,
        principals, forget, forgotten, add_receipts, receipts, traces, healthz, readyz, metrics),
    modifiers(&BearerScheme)
)]
struct ApiDoc;

/// The OpenAPI 3.1 document, pretty-printed (the golden file `crates/server/openapi.json`).
pub fn openapi_document() -> String {
    let mut doc = ApiDoc::openapi();
    doc.merge(tools::ToolsDoc::openapi());
    doc.merge(explore::ExploreDoc::openapi());
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    let mut text = doc.to_pretty_json().unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The OpenAPI document is a golden file: a change to the wire shows up as a reviewed diff.
    /// `UPDATE_GOLDEN=1 cargo test -p ctxgraph-server openapi` rewrites it.
    #[test]
    fn openapi_document_matches_the_golden_file() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi.json");
        let doc = openapi_document();
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&path, &doc).unwrap();
        }
        let golden = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            golden == doc,
            "{} is out of date: run UPDATE_GOLDEN=1 cargo test -p ctxgraph-server openapi and review the diff",
            path.display()
        );
    }

    #[test]
    fn every_route_is_documented() {
        let doc: serde_json::Value = serde_json::from_str(&openapi_document()).unwrap();
        let paths = doc["paths"].as_object().unwrap();
        for p in [
            "/v1/events",
            "/v1/recall",
            "/v1/facts",
            "/v1/memories",
            "/v1/memories/rollup",
            "/metrics",
        ] {
            assert!(paths.contains_key(p), "{p}");
        }
        assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    }
}
