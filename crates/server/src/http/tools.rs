//! The HTTP routes of the knowledge operations (`service/tools.rs`): link votes, documents,
//! types, slots, checklists, goals and entity resolution, with their OpenAPI document, merged
//! into the API's by [`super::openapi_document`].

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use ctxgraph::EntityDecision;
use utoipa::OpenApi;

use super::{ApiResult, AppState, Auth, Body, Query};
use crate::error::ErrorBody;
use crate::wire::*;

/// The routes, added to the `/v1` router.
pub(super) fn routes(r: Router<AppState>) -> Router<AppState> {
    r.route("/v1/memories/links/vote", post(unlink_memories))
        .route("/v1/documents", post(add_document))
        .route("/v1/documents/show", post(show_document))
        .route("/v1/types", post(define_type).get(list_types))
        .route("/v1/types/instances", post(add_instance))
        .route("/v1/slots", post(set_slot))
        .route("/v1/slots/of", post(entity_slots))
        .route("/v1/checklists", post(define_checklist).get(list_checklists))
        .route("/v1/checklists/check", post(check_checklist))
        .route("/v1/checklists/next", post(next_question))
        .route("/v1/goals", post(add_goal).get(list_goals))
        .route("/v1/entities/candidates", get(entity_candidates))
        .route("/v1/entities/merge", post(merge_entities))
        .route("/v1/entities/reject", post(reject_entities))
}

#[derive(OpenApi)]
#[openapi(paths(
    unlink_memories,
    add_document,
    show_document,
    define_type,
    list_types,
    add_instance,
    set_slot,
    entity_slots,
    define_checklist,
    list_checklists,
    check_checklist,
    next_question,
    add_goal,
    list_goals,
    entity_candidates,
    merge_entities,
    reject_entities
))]
pub(super) struct ToolsDoc;

/// Delete or down-vote a live link between two memories.
#[utoipa::path(post, path = "/v1/memories/links/vote", tag = "memories", request_body = UnlinkRequest,
    responses((status = 200, description = "The vote's id", body = Written),
        (status = "4XX", description = "No such live link, unknown memory, bad request, key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn unlink_memories(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<UnlinkRequest>,
) -> ApiResult<Written> {
    Ok(Json(s.service.unlink(&who, req).await?))
}

/// Ingest a source document (split into sections and citable sentences).
#[utoipa::path(post, path = "/v1/documents", tag = "documents", request_body = DocumentRequest,
    responses((status = 200, description = "The document version", body = DocumentAdded),
        (status = "4XX", description = "Bad request, key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn add_document(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<DocumentRequest>,
) -> ApiResult<DocumentAdded> {
    Ok(Json(s.service.add_document(&who, req).await?))
}

/// A document version with its sections and citable sentences.
#[utoipa::path(post, path = "/v1/documents/show", tag = "documents", request_body = DocumentShowRequest,
    responses((status = 200, description = "The document", body = DocumentDto),
        (status = "4XX", description = "No such document, bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn show_document(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<DocumentShowRequest>,
) -> ApiResult<DocumentDto> {
    Ok(Json(s.service.show_document(&who, req).await?))
}

/// Declare a type.
#[utoipa::path(post, path = "/v1/types", tag = "knowledge", request_body = TypeRequest,
    responses((status = 200, description = "Recorded or duplicate", body = Recorded),
        (status = "4XX", description = "Conflicting declaration, bad request, key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn define_type(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<TypeRequest>,
) -> ApiResult<Recorded> {
    Ok(Json(s.service.define_type(&who, req).await?))
}

/// The declared types with their visible instances.
#[utoipa::path(get, path = "/v1/types", tag = "knowledge", params(ListQuery),
    responses((status = 200, description = "The types", body = TypeList),
        (status = "4XX", description = "Bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn list_types(
    State(s): State<AppState>,
    Auth(who): Auth,
    Query(q): Query<ListQuery>,
) -> ApiResult<TypeList> {
    Ok(Json(s.service.list_types(&who, q).await?))
}

/// Make an entity an instance of a declared type.
#[utoipa::path(post, path = "/v1/types/instances", tag = "knowledge", request_body = InstanceRequest,
    responses((status = 200, description = "Recorded or duplicate", body = Recorded),
        (status = "4XX", description = "Unknown entity or type, bad request, key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn add_instance(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<InstanceRequest>,
) -> ApiResult<Recorded> {
    Ok(Json(s.service.add_instance(&who, req).await?))
}

/// Record one observed slot value of an entity.
#[utoipa::path(post, path = "/v1/slots", tag = "knowledge", request_body = SlotRequest,
    responses((status = 200, description = "Recorded or duplicate", body = Recorded),
        (status = "4XX", description = "Unknown entity, bad confidence, key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn set_slot(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<SlotRequest>,
) -> ApiResult<Recorded> {
    Ok(Json(s.service.set_slot(&who, req).await?))
}

/// An entity's slot values and types.
#[utoipa::path(post, path = "/v1/slots/of", tag = "knowledge", request_body = EntitySlotsRequest,
    responses((status = 200, description = "The slots", body = EntitySlots),
        (status = "4XX", description = "Unknown entity, bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn entity_slots(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<EntitySlotsRequest>,
) -> ApiResult<EntitySlots> {
    Ok(Json(s.service.entity_slots(&who, req).await?))
}

/// Define a checklist (every problem is named at once).
#[utoipa::path(post, path = "/v1/checklists", tag = "knowledge", request_body = ChecklistRequest,
    responses((status = 200, description = "Recorded or duplicate", body = Recorded),
        (status = "4XX", description = "Invalid checklist, conflict, bad key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn define_checklist(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<ChecklistRequest>,
) -> ApiResult<Recorded> {
    Ok(Json(s.service.define_checklist(&who, req).await?))
}

/// The defined checklists.
#[utoipa::path(get, path = "/v1/checklists", tag = "knowledge", params(ListQuery),
    responses((status = 200, description = "The checklists", body = ChecklistList),
        (status = "4XX", description = "Bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn list_checklists(
    State(s): State<AppState>,
    Auth(who): Auth,
    Query(q): Query<ListQuery>,
) -> ApiResult<ChecklistList> {
    Ok(Json(s.service.list_checklists(&who, q).await?))
}

/// Which specs of a checklist an entity satisfies.
#[utoipa::path(post, path = "/v1/checklists/check", tag = "knowledge", request_body = CheckRequest,
    responses((status = 200, description = "The check", body = CheckDto),
        (status = "4XX", description = "Unknown checklist or entity, bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn check_checklist(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<CheckRequest>,
) -> ApiResult<CheckDto> {
    Ok(Json(s.service.check_checklist(&who, req).await?))
}

/// The slot to ask about next to tell candidates apart, with every spec's expected information gain.
#[utoipa::path(post, path = "/v1/checklists/next", tag = "knowledge", request_body = NextQuestionRequest,
    responses((status = 200, description = "The ranking", body = NextQuestionDto),
        (status = "4XX", description = "Unknown checklist or candidate, bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn next_question(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<NextQuestionRequest>,
) -> ApiResult<NextQuestionDto> {
    Ok(Json(s.service.next_question(&who, req).await?))
}

/// Add a user's goal influencing checklists.
#[utoipa::path(post, path = "/v1/goals", tag = "knowledge", request_body = GoalRequest,
    responses((status = 200, description = "Recorded or duplicate", body = Recorded),
        (status = "4XX", description = "Unknown user or checklist, bad key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn add_goal(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<GoalRequest>,
) -> ApiResult<Recorded> {
    Ok(Json(s.service.add_goal(&who, req).await?))
}

/// Goals of one user or all.
#[utoipa::path(get, path = "/v1/goals", tag = "knowledge", params(GoalListQuery),
    responses((status = 200, description = "The goals", body = GoalList),
        (status = "4XX", description = "Unknown user, bad key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn list_goals(
    State(s): State<AppState>,
    Auth(who): Auth,
    Query(q): Query<GoalListQuery>,
) -> ApiResult<GoalList> {
    Ok(Json(s.service.list_goals(&who, q).await?))
}

/// Pairs of entities that may be one thing, and decided pairs, best first.
#[utoipa::path(get, path = "/v1/entities/candidates", tag = "entities", params(CandidatesQuery),
    responses((status = 200, description = "The pairs", body = CandidateList),
        (status = "4XX", description = "Bad status or key", body = ErrorBody)),
    security(("bearer" = [])))]
async fn entity_candidates(
    State(s): State<AppState>,
    Auth(who): Auth,
    Query(q): Query<CandidatesQuery>,
) -> ApiResult<CandidateList> {
    Ok(Json(s.service.entity_candidates(&who, q).await?))
}

/// Decide that two entities are one thing.
#[utoipa::path(post, path = "/v1/entities/merge", tag = "entities", request_body = EntityDecisionRequest,
    responses((status = 200, description = "Recorded or duplicate", body = Recorded),
        (status = "4XX", description = "Unknown entity, bad key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn merge_entities(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<EntityDecisionRequest>,
) -> ApiResult<Recorded> {
    Ok(Json(s.service.decide_entities(&who, EntityDecision::Merge, req).await?))
}

/// Decide that two entities are different things.
#[utoipa::path(post, path = "/v1/entities/reject", tag = "entities", request_body = EntityDecisionRequest,
    responses((status = 200, description = "Recorded or duplicate", body = Recorded),
        (status = "4XX", description = "Unknown entity, bad key or role", body = ErrorBody)),
    security(("bearer" = [])))]
async fn reject_entities(
    State(s): State<AppState>,
    Auth(who): Auth,
    Body(req): Body<EntityDecisionRequest>,
) -> ApiResult<Recorded> {
    Ok(Json(s.service.decide_entities(&who, EntityDecision::Reject, req).await?))
}
