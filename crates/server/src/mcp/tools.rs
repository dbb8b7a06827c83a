//! The knowledge tools (`service/tools.rs`): memory impact and search, link votes, documents,
//! types, slots, checklists, goals and entity resolution. [`Tools::new`] adds them to the tools
//! of `mcp.rs`.

use ctxgraph::EntityDecision;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use super::{Args, Tools};
use crate::wire::*;

#[tool_router(router = knowledge_router, vis = "pub(super)")]
impl Tools {
    #[tool(
        description = "What came after a memory (usually a decision): the memories that implement it, its outcomes and what followed in its session, walked along IMPLEMENTS, OUTCOME_OF and TEMPORAL links, plus the memories that supersede it. Use it before changing or reverting a decision, to see what depends on it. Example: {\"memory_id\": \"m1\"}."
    )]
    async fn memory_impact(
        &self,
        Parameters(args): Parameters<Args<ImpactRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.memory_impact(&who, req).await }).await
    }

    #[tool(
        description = "Search decision memory with a question (\"why did we abandon JWT?\"): the best matching memories, the evolution chain of the decision the question is about, the evidence behind it and the outcomes, with a summary sentence. Give context (a memory id you are looking at) to boost memories connected to it. Use it for questions about past decisions; use recall for events and everything else."
    )]
    async fn search_memories(
        &self,
        Parameters(args): Parameters<Args<MemorySearchRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.search_memories(&who, req).await }).await
    }

    #[tool(
        description = "Delete (vote delete, the default) or down-vote (vote downvote: halves its confidence) a link between two memories, automatic or explicit, when it is wrong. The link must exist and be live: from and to as the link runs (an error names the reverse link when only that one exists). The vote is kept as a record."
    )]
    async fn unlink_memories(
        &self,
        Parameters(args): Parameters<Args<UnlinkRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.unlink(&who, req).await }).await
    }

    #[tool(
        description = "Store a source document (markdown or plain text) under its url (kept verbatim, never fetched): it is split into sections, paragraphs and sentences, each sentence citable by id (`{document_id}/tN`) from record_fact's cites. The same url with new text is the next version. Use it to keep the text a fact comes from."
    )]
    async fn add_document(
        &self,
        Parameters(args): Parameters<Args<DocumentRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.add_document(&who, req).await }).await
    }

    #[tool(
        description = "Show a stored document by id or url (its latest version): sections, paragraphs and sentences with their ids (what record_fact's cites takes) and the entities each mentions."
    )]
    async fn show_document(
        &self,
        Parameters(args): Parameters<Args<DocumentShowRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.show_document(&who, req).await }).await
    }

    #[tool(
        description = "Declare a type (a lightweight class such as Film or CVE) that entities can be instances of (add_instance) and checklists can expect (relation INSTANCE_OF). Declaring it again identically is a duplicate."
    )]
    async fn define_type(
        &self,
        Parameters(args): Parameters<Args<TypeRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.define_type(&who, req).await }).await
    }

    #[tool(
        description = "Record that an entity is an instance of a declared type (INSTANCE_OF). Name an existing entity by id or unique name, or give entity_type to create it."
    )]
    async fn add_instance(
        &self,
        Parameters(args): Parameters<Args<InstanceRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.add_instance(&who, req).await }).await
    }

    #[tool(
        description = "List the declared types with their instances. Use it to see which types exist before add_instance or define_checklist."
    )]
    async fn list_types(
        &self,
        Parameters(args): Parameters<Args<ListQuery>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.list_types(&who, req).await }).await
    }

    #[tool(
        description = "Record one observed value of an entity's slot (an attribute such as genre = drama), with confidence and source. Observations accumulate: the slot keeps the highest confidence and every source. Name an existing entity, or give entity_type to create it."
    )]
    async fn set_slot(
        &self,
        Parameters(args): Parameters<Args<SlotRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.set_slot(&who, req).await }).await
    }

    #[tool(
        description = "An entity's slot values (with confidence and sources) and the types it is an instance of. Use it to see what is known about an entity's attributes."
    )]
    async fn entity_slots(
        &self,
        Parameters(args): Parameters<Args<EntitySlotsRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.entity_slots(&who, req).await }).await
    }

    #[tool(
        description = "Define a checklist: what must be known to answer a kind of question, as slot specs {name, expect_labels, relation HAS_SLOT|INSTANCE_OF, required, cardinality one|many}. Every problem is reported at once. A checklist is immutable: give a changed one a new name."
    )]
    async fn define_checklist(
        &self,
        Parameters(args): Parameters<Args<ChecklistRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.define_checklist(&who, req).await })
            .await
    }

    #[tool(description = "List the defined checklists with their slot specs.")]
    async fn list_checklists(
        &self,
        Parameters(args): Parameters<Args<ListQuery>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.list_checklists(&who, req).await }).await
    }

    #[tool(
        description = "Check a checklist against one entity: each spec satisfied, missing (required or optional) or with too many values, and whether the entity is complete. Use it to find what is still unknown before answering."
    )]
    async fn check_checklist(
        &self,
        Parameters(args): Parameters<Args<CheckRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.check_checklist(&who, req).await }).await
    }

    #[tool(
        description = "Given candidate entities, a checklist and the answers already known (known: {spec: value}, which rule out contradicting candidates first), the slot to ask the user about next: the spec whose answer best tells the candidates apart (expected information gain in bits, candidates grouped by answer), with every spec ranked. Use it to choose the one question that narrows a search fastest."
    )]
    async fn next_question(
        &self,
        Parameters(args): Parameters<Args<NextQuestionRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.next_question(&who, req).await }).await
    }

    #[tool(
        description = "Record a user's long-term goal, linked to the user and to the checklists it influences (each must be defined). Give create_user to create the user entity."
    )]
    async fn add_goal(
        &self,
        Parameters(args): Parameters<Args<GoalRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.add_goal(&who, req).await }).await
    }

    #[tool(description = "List goals, of one user or all, with the checklists they influence.")]
    async fn list_goals(
        &self,
        Parameters(args): Parameters<Args<GoalListQuery>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.list_goals(&who, req).await }).await
    }

    #[tool(
        description = "Pairs of entities that may be the same thing (near spellings, shared words, similar names), proposed by entity resolution and never merged on their own, and the pairs already decided. status: candidate (default), merged, rejected or all. Use it before merge_entities or reject_entities."
    )]
    async fn entity_candidates(
        &self,
        Parameters(args): Parameters<Args<CandidatesQuery>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move { s.entity_candidates(&who, req).await })
            .await
    }

    #[tool(
        description = "Decide that two entities are the same thing (a recorded decision that rebuilds keep; a later reject replaces it). Only when you are sure: see entity_candidates."
    )]
    async fn merge_entities(
        &self,
        Parameters(args): Parameters<Args<EntityDecisionRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move {
            s.decide_entities(&who, EntityDecision::Merge, req).await
        })
        .await
    }

    #[tool(
        description = "Decide that two entities are different things, so they are never proposed as the same again (a recorded decision; a later merge replaces it)."
    )]
    async fn reject_entities(
        &self,
        Parameters(args): Parameters<Args<EntityDecisionRequest>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.run(&ctx, &args, |s, who, req| async move {
            s.decide_entities(&who, EntityDecision::Reject, req).await
        })
        .await
    }
}
