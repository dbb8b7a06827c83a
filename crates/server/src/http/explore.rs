//! The HTTP routes of the explorer's reads (`service/explore.rs`): a node by id with its
//! provenance and edge groups, a page of its neighbours, who a key reads as, and the store's
//! own figures and retention tiers, with their OpenAPI document, merged into the API's by
//! [`super::openapi_document`].

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::routing::get;
use utoipa::OpenApi;

use super::{ApiResult, AppState, Auth, Query};
use crate::error::ErrorBody;
use crate::wire::*;

/// The routes, added to the `/v1` router.
pub(super) fn routes(r: Router<AppState>) -> Router<AppState> {
    r.route("/v1/nodes/{id}", get(node))
        .route("/v1/nodes/{id}/neighbors", get(neighbors))
        .route("/v1/stats/store", get(store_stats))
        .route("/v1/stats/retention", get(retention))
        .route("/v1/whoami", get(whoami))
}

#[derive(OpenApi)]
#[openapi(paths(node, neighbors, store_stats, retention, whoami))]
pub(super) struct ExploreDoc;

/// The visible nodes of an id, each with its provenance and its edges by type and direction
/// (counted up to 100 per group).
#[utoipa::path(get, path = "/v1/nodes/{id}", tag = "graph",
    params(("id" = String, Path, description = "Node id"), NodeQuery),
    responses((status = 200, description = "The nodes of this id", body = NodeList),
        (status = "4XX", description = "No visible node of this id, bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn node(
    State(s): State<AppState>,
    Auth(who): Auth,
    Path(id): Path<String>,
    Query(q): Query<NodeQuery>,
) -> ApiResult<NodeList> {
    Ok(Json(s.service.node(&who, id, q).await?))
}

/// A page of a node's neighbours over one edge type and direction, whose other ends are
/// visible.
#[utoipa::path(get, path = "/v1/nodes/{id}/neighbors", tag = "graph",
    params(("id" = String, Path, description = "Node id"), NeighborsQuery),
    responses((status = 200, description = "A page of neighbours", body = NeighborPage),
        (status = "4XX", description = "No visible node, bad direction, cursor or key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn neighbors(
    State(s): State<AppState>,
    Auth(who): Auth,
    Path(id): Path<String>,
    Query(q): Query<NeighborsQuery>,
) -> ApiResult<NeighborPage> {
    Ok(Json(s.service.neighbors(&who, id, q).await?))
}

/// Events per retention tier now, and how many earlier passes archived (the store's owner
/// only: it counts every event).
#[utoipa::path(get, path = "/v1/stats/retention", tag = "admin",
    responses((status = 200, description = "Events per tier", body = RetentionDto),
        (status = "4XX", description = "Bad key, not the store's owner", body = ErrorBody)),
    security(("bearer" = [])))]
async fn retention(State(s): State<AppState>, Auth(who): Auth) -> ApiResult<RetentionDto> {
    Ok(Json(s.service.retention(&who).await?))
}

/// The store's own figures: log length, lags, nodes and edges per type, size (the store's
/// owner only: they read past the access policy).
#[utoipa::path(get, path = "/v1/stats/store", tag = "admin",
    responses((status = 200, description = "The store's figures", body = StoreStatsDto),
        (status = "4XX", description = "Bad key, not the store's owner", body = ErrorBody)),
    security(("bearer" = [])))]
async fn store_stats(State(s): State<AppState>, Auth(who): Auth) -> ApiResult<StoreStatsDto> {
    Ok(Json(s.service.store_stats(&who).await?))
}

/// Who the key reads as: name, tenant, roles, and whether it is the store's owner.
#[utoipa::path(get, path = "/v1/whoami", tag = "admin",
    responses((status = 200, description = "The principal", body = WhoAmI),
        (status = "4XX", description = "Bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn whoami(State(s): State<AppState>, Auth(who): Auth) -> Json<WhoAmI> {
    Json(s.service.whoami(&who))
}
