//! The MCP tools (seed 002 and 003's operations) over the official MCP SDK, served over stdio
//! (`ctxgraph mcp`) and streamable HTTP (`/mcp` in `ctxgraph serve`).
//!
//! Every tool takes the same request type as its HTTP route and calls the same service function.
//! Arguments are parsed inside the tool, not by the SDK, so a wrong type or a missing field is a
//! tool error (`isError: true`) whose structured content is `{"error": {"code", "message",
//! "violations"?}}` with a stable code, never a protocol error: an agent can read it and retry.
//! Successful results are structured content with fixed field names.

use std::future::Future;
use std::marker::PhantomData;

use ctxgraph::Principal;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorBody, ServiceError};
use crate::service::Service;
use crate::wire::*;

mod tools;

/// Tool arguments as sent: any JSON, parsed into `T` by the tool so that a bad argument is a
/// tool error. Its JSON schema is `T`'s.
#[derive(Debug, Clone)]
pub struct Args<T> {
    raw: Value,
    _t: PhantomData<T>,
}

impl<'de, T> Deserialize<'de> for Args<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Args { raw: Value::deserialize(d)?, _t: PhantomData })
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Args<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }

    fn inline_schema() -> bool {
        T::inline_schema()
    }
}

/// A failure as a tool result an agent can read.
fn tool_error(e: &ServiceError) -> CallToolResult {
    CallToolResult::structured_error(serde_json::to_value(ErrorBody::from(e)).unwrap_or_default())
}

fn tool_result<R: Serialize>(r: Result<R, ServiceError>) -> CallToolResult {
    match r.and_then(|v| {
        serde_json::to_value(v).map_err(|e| {
            ServiceError::internal("server.encode", format!("encoding the result: {e}"))
        })
    }) {
        Ok(v) => CallToolResult::structured(v),
        Err(e) => tool_error(&e),
    }
}

/// The ctxgraph MCP server: the tools, over one service, for one principal (stdio) or the
/// principal each HTTP request authenticated as (streamable HTTP).
#[derive(Clone)]
pub struct Tools {
    service: Service,
    principal: Option<Principal>,
    tool_router: ToolRouter<Tools>,
}

impl Tools {
    /// Tools acting as `principal` (stdio), or, with `None`, as the principal the HTTP layer put
    /// in the request's extensions.
    pub fn new(service: Service, principal: Option<Principal>) -> Tools {
        Tools { service, principal, tool_router: Self::all_tools() }
    }

    /// Every tool: those of this file and the knowledge tools of `mcp/tools.rs`.
    fn all_tools() -> ToolRouter<Tools> {
        Self::tool_router() + Self::knowledge_router()
    }

    fn who(&self, ctx: &RequestContext<RoleServer>) -> Result<Principal, ServiceError> {
        if let Some(p) = &self.principal {
            return Ok(p.clone());
        }
        ctx.extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
            .cloned()
            .ok_or_else(|| {
                ServiceError::new(
                    crate::error::ErrorClass::Unauthenticated,
                    "auth.missing_key",
                    "no principal: send Authorization: Bearer <key>",
                )
            })
    }

    /// Parse, authorise and run one operation; every failure is a tool error.
    async fn run<T, R, F, Fut>(
        &self,
        ctx: &RequestContext<RoleServer>,
        args: &Args<T>,
        op: F,
    ) -> Result<CallToolResult, ErrorData>
    where
        T: WireRequest,
        R: Serialize,
        F: FnOnce(Service, Principal, T) -> Fut,
        Fut: Future<Output = Result<R, ServiceError>>,
    {
        let who = match self.who(ctx) {
            Ok(p) => p,
            Err(e) => return Ok(tool_error(&e)),
        };
        let req = match crate::wire::parse_arguments::<T>(&args.raw) {
            Ok(r) => r,
            Err(e) => return Ok(tool_error(&e)),
        };
        Ok(tool_result(op(self.service.clone(), who, req).await))
    }
}

#[tool_router]
impl Tools {
    #[tool(
        description = "Record a fact: a claim {subject, predicate, object} about entities, with an optional source (stored verbatim, never fetched), confidence in [0, 1] and cites (the id of the document sentence it was read from, see show_document). Entity names are matched by id, exact name or spelling variant (case, punctuation, word order); a near spelling or a partial name is never attached: give subject_type/object_type (person, project, decision, concept, source) to create the entity, which is then proposed as a candidate for the same thing as the near one (see entity_candidates), or name the existing entity by id. Predicates: mentioned_in, decided_in, reports_to, depends_on, resolved_by, blocked_by, tagged, belongs_to, also_known_as (an alias: object is the other name, and names then resolve through it). Returns the fact id and how each name resolved."
    )]
    async fn record_fact(
        &self,
        Parameters(args): Parameters<Args<RecordFactRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.record_fact(&who, req).await }).await
    }

    #[tool(
        description = "Recall an entity by name (forgiving: id, exact name, spelling variant, near spelling or part of its name, e.g. Smith for Alice Smith) with every fact about it, true facts first, each with confidence, sources and contradictions. Use it to answer 'what do we know about X'."
    )]
    async fn recall_entity(
        &self,
        Parameters(args): Parameters<Args<RecallEntityRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.recall_entity(&who, req).await }).await
    }

    #[tool(
        description = "Recall the context for a question: the events, entities, memories and summaries that matter, ranked, each with the path that found it, its provenance and confidence, plus explicit unknowns. Constraints: session, trace, agent, since/until (RFC 3339), tags (any of), location (a scope path or below), labels (node types returned), min_confidence; options: k (1-100), intent (why, when, who_what, related, overview, lookup; classified from the question when absent), budget_tokens, diversity, as_of. The same pack as POST /v1/recall and `ctxgraph recall --json`; an argument it does not know is an error (request.unknown_field), never ignored."
    )]
    async fn recall(
        &self,
        Parameters(args): Parameters<Args<RecallRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.recall(&who, req).await }).await
    }

    #[tool(
        description = "Save a memory: a decision, checkpoint, insight or context, with its topic and reasoning. Decisions on one topic form an evolution chain; name the memory a decision replaces in supersedes. created_by says who decided: user (a person, the default), llm (you, on your own) or system. Returns the memory id (give memory_id to choose it)."
    )]
    async fn save_memory(
        &self,
        Parameters(args): Parameters<Args<SaveMemoryRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.save_memory(&who, req).await }).await
    }

    #[tool(
        description = "Record how a decision (or other memory) turned out: outcome success, failed or partial, with the reason (optional) and created_by (user, llm or system). Failed decisions show up as blocked in the weekly rollup."
    )]
    async fn evolve_outcome(
        &self,
        Parameters(args): Parameters<Args<OutcomeRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.outcome(&who, req).await }).await
    }

    #[tool(
        description = "Link two memories explicitly: from → to with link_type supersedes, implements, outcome_of, relates_to or temporal, a confidence in [0, 1], a reason and created_by (user, llm or system). To remove or weaken a wrong link, use unlink_memories."
    )]
    async fn link_memories(
        &self,
        Parameters(args): Parameters<Args<LinkRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.link(&who, req).await }).await
    }

    #[tool(
        description = "The evolution of a topic: its decisions from the latest back along supersedes links, each with its outcomes and the memories implementing it. Use it to answer 'how did we get to the current decision on X'."
    )]
    async fn evolution(
        &self,
        Parameters(args): Parameters<Args<EvolutionRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.evolution(&who, req).await }).await
    }

    #[tool(
        description = "The weekly rollup: decisions made, outcomes recorded, decisions still open, blocked decisions, blocked_by facts and suggested next actions for a window (the last seven days by default)."
    )]
    async fn weekly_rollup(
        &self,
        Parameters(args): Parameters<Args<RollupRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.rollup(&who, req).await }).await
    }

    #[tool(
        description = "Record one agent event (a tool call, a message, a decision step) in the event envelope: event_id, event_type, occurred_at (RFC 3339), session_id, agent_id, and optionally parent_event_id, trace_id, tool_name, status, payload, entities, scope ({audience, allow_roles, deny_roles, tags, location, time_range}) and pii ({pii_cleared, pending_review, pii_redacted}). Returns accepted or duplicate with the log position, or a tool error listing every broken rule."
    )]
    async fn ingest_event(
        &self,
        Parameters(args): Parameters<Args<IngestEventArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move {
            let mut r = s.ingest(&who, IngestRequest { events: vec![req.event] }).await?;
            let item = r.results.pop().ok_or_else(|| {
                ServiceError::internal("server.no_outcome", "ingesting reported no outcome")
            })?;
            if item.status == "rejected" {
                let mut e = ServiceError::new(
                    crate::error::ErrorClass::Invalid,
                    item.code.as_deref().unwrap_or("envelope.invalid"),
                    "the event was refused: see violations",
                );
                e.violations = item.violations;
                return Err(e);
            }
            Ok(item)
        })
        .await
    }

    #[tool(
        description = "Forget an event, a session, an entity or a memory for good (admins only): its content is removed from the store, with everything derived from it (embeddings, index entries, summaries, links), and stays forgotten after a rebuild. kind is event, session, entity or memory; id is its id; reason is kept in the audit (do not repeat the content there). Returns the forget record's id and how many records were redacted."
    )]
    async fn forget(
        &self,
        Parameters(args): Parameters<Args<ForgetRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.forget(&who, req).await }).await
    }

    #[tool(
        description = "Record a decision receipt (write-time provenance of a stateful change such as a deploy, a promotion or a config rollout): task, actor, approvals, referenced_inputs (events, entities, documents, configs, spans), policies_checked ([{id, result: allow|deny}]), exceptions ([{id, justification}]), action, outcome ({status, notes, follow_ups}), timestamps ({requested, committed}). Cited events and entities must exist. Recall then uses receipts as provenance anchors for why-questions."
    )]
    async fn record_receipt(
        &self,
        Parameters(args): Parameters<Args<ReceiptsRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.add_receipts(&who, req).await }).await
    }

    #[tool(
        description = "List decision receipts, newest committed first, filtered by task, actor, committed window (since, until) and policy (ID or ID=allow|deny). Use it to answer 'what was approved for X, by whom, under which policies'."
    )]
    async fn list_receipts(
        &self,
        Parameters(args): Parameters<Args<ReceiptListQuery>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.receipts(&who, req).await }).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ctxgraph", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "ctxgraph is long-term memory: record facts and events, save decisions and their outcomes, and recall context for a question. Errors come back as tool results with a stable error code.",
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tool list with its schemas is a golden file (`crates/server/mcp-tools.json`): a change
    /// to what agents see shows up as a reviewed diff. `UPDATE_GOLDEN=1` rewrites it.
    #[test]
    fn tool_list_matches_the_golden_file() {
        let mut tools = Tools::all_tools().list_all();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut doc = serde_json::to_string_pretty(&tools).unwrap();
        doc.push('\n');
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp-tools.json");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&path, &doc).unwrap();
        }
        let golden = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            golden == doc,
            "{} is out of date: run UPDATE_GOLDEN=1 cargo test -p ctxgraph-server tool_list and review the diff",
            path.display()
        );
    }

    #[test]
    fn bad_arguments_are_invalid_arguments() {
        let e = crate::wire::parse_arguments::<RecallRequest>(&serde_json::json!([1])).unwrap_err();
        assert_eq!(e.code, "mcp.invalid_arguments");
        let e = crate::wire::parse_arguments::<RecallRequest>(&serde_json::json!({"k": 3}))
            .unwrap_err();
        assert!(e.message.contains("question"), "{}", e.message);
        let ok: RecallRequest =
            crate::wire::parse_arguments(&serde_json::json!({"query": "why", "top_k": 3})).unwrap();
        assert_eq!((ok.question.as_str(), ok.k), ("why", Some(3)));
        let e = crate::wire::parse_arguments::<RecallRequest>(
            &serde_json::json!({"query": "why", "tag": "prod"}),
        )
        .unwrap_err();
        assert_eq!(e.code, "request.unknown_field");
    }

    /// Every tool's schema says what it accepts and nothing more: an agent sees that other
    /// arguments are refused.
    #[test]
    fn every_tool_schema_refuses_other_properties() {
        for tool in Tools::tool_router().list_all() {
            assert_eq!(
                tool.input_schema.get("additionalProperties"),
                Some(&Value::Bool(false)),
                "{}",
                tool.name
            );
        }
    }
}
