//! The knowledge operations of the interfaces: memory impact and link votes, documents, types,
//! slots, checklists, goals and entity resolution. Each validates as the CLI does (the same
//! engine calls and records) and reads only through the principal-scoped view: an entity the
//! principal may not see is answered as an unknown one.

use ctxgraph::{
    CandidateStatus, DEFAULT_SEARCH_COST, DocumentFormat, DocumentInput, Engine, EntityArg,
    EntityDecision, GoalDraft, IngestOutcome, LinkLookup, NextOptions, Principal, entity_id,
};
use serde_json::{Map, Value};

use super::{Service, page_size, status_of};
use crate::error::ServiceError;
use crate::wire::*;

/// Most pairs an entity-candidate listing returns by default.
const DEFAULT_PAIRS: usize = 50;

/// An existing entity the principal may see, named by its id (`person:alice`) or by a bare name
/// that exactly one entity type has an entity of (as the CLI takes it).
fn existing_entity(
    e: &Engine,
    who: &Principal,
    field: &str,
    arg: &str,
) -> Result<String, ServiceError> {
    let snap = e.reader(who)?;
    let scoped = &snap;
    let not_found = || {
        ServiceError::not_found(
            "entity.not_found",
            format!(
                "{field} {arg:?}: no entity has this id or name (give an id such as concept:alien, or an entity_type to create it)"
            ),
        )
    };
    if let Some(t) = e.schema().entity_type_of(arg) {
        let id = entity_id(t, &arg[t.len() + 1..]);
        return if scoped.sees_entity(&id)? { Ok(id) } else { Err(not_found()) };
    }
    let types: Vec<String> = e
        .schema()
        .enum_def("entity_type")
        .map(|d| d.values.iter().map(|v| v.name.clone()).collect())
        .unwrap_or_default();
    let mut found = Vec::new();
    for t in &types {
        let id = entity_id(t, arg);
        if scoped.sees_entity(&id)? {
            found.push(id);
        }
    }
    match found.len() {
        0 => Err(not_found()),
        1 => Ok(found.remove(0)),
        _ => Err(ServiceError::bad_request(
            "entity.ambiguous",
            format!(
                "{field} {arg:?} names {} entities: {}; give one of these ids",
                found.len(),
                found.join(", ")
            ),
        )),
    }
}

/// An entity for a write: a name to create with `entity_type`, otherwise an existing entity.
fn entity_for_write(
    e: &Engine,
    who: &Principal,
    field: &str,
    arg: &str,
    entity_type: Option<&str>,
) -> Result<EntityArg, ServiceError> {
    match entity_type {
        Some(t) => Ok(EntityArg::Named { name: arg.to_owned(), entity_type: t.to_owned() }),
        None => Ok(EntityArg::Id(existing_entity(e, who, field, arg)?)),
    }
}

fn recorded(outcome: IngestOutcome, what: String) -> Recorded {
    let (status, position) = status_of(outcome);
    let summary = match outcome {
        IngestOutcome::New(_) => format!("recorded {what}"),
        IngestOutcome::Duplicate(_) => format!("{what} was already recorded; nothing written"),
    };
    Recorded { status: status.into(), position, summary }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Service {
    /// What depends on a memory (by its id in the request).
    pub async fn memory_impact(
        &self,
        who: &Principal,
        req: ImpactRequest,
    ) -> Result<ImpactDto, ServiceError> {
        self.impact(who, req.memory_id, AsOfQuery { as_of: req.as_of }).await
    }

    /// Delete or down-vote a link between two memories the principal may see; a link that
    /// does not exist (or was deleted) is an error, not a silent success.
    pub async fn unlink(
        &self,
        who: &Principal,
        req: UnlinkRequest,
    ) -> Result<Written, ServiceError> {
        let mut r = Map::new();
        r.insert("record_type".into(), "memory_link_vote".into());
        r.insert("from".into(), req.from.clone().into());
        r.insert("to".into(), req.to.clone().into());
        r.insert("link_type".into(), req.link_type.clone().into());
        r.insert("vote".into(), req.vote.clone().into());
        r.insert("created_at".into(), super::now().into());
        if let Some(reason) = &req.reason {
            r.insert("reason".into(), reason.clone().into());
        }
        if let Some(c) = &req.created_by {
            r.insert("created_by".into(), c.clone().into());
        }
        let owner = who.clone();
        let (id, outcome) = self
            .write(who, move |engine| {
                // Validation first: a bad link type or vote is named before the lookup.
                let valid = engine
                    .validate(&Value::Object(r).to_string())
                    .map_err(ctxgraph::Error::from)?;
                let snap = engine.reader(&owner)?;
                let missing = |why: String| {
                    ServiceError::not_found(
                        "memory.unknown_link",
                        format!(
                            "no {} link from {:?} to {:?}{why}",
                            req.link_type, req.from, req.to
                        ),
                    )
                };
                match snap.memory_link(&req.from, &req.to, &req.link_type)? {
                    LinkLookup::Found => {}
                    LinkLookup::Deleted => return Err(missing(": it was deleted".into())),
                    LinkLookup::Reversed => {
                        return Err(missing(format!(
                            "; there is one from {:?} to {:?}: swap from and to",
                            req.to, req.from
                        )));
                    }
                    LinkLookup::Missing => return Err(missing(String::new())),
                    LinkLookup::UnknownMemory => {
                        return Err(ServiceError::not_found(
                            "memory.not_found",
                            format!("no memory {:?} or {:?}", req.from, req.to),
                        ));
                    }
                }
                drop(snap);
                super::save_one(engine, &valid)
            })
            .await?;
        let (status, position) = status_of(outcome);
        Ok(Written { id, status: status.into(), position })
    }

    // -----------------------------------------------------------------------------------------
    // Documents.

    /// Ingest a source document.
    pub async fn add_document(
        &self,
        who: &Principal,
        req: DocumentRequest,
    ) -> Result<DocumentAdded, ServiceError> {
        let format = match req.format.as_deref().map(|f| f.trim().to_ascii_lowercase()) {
            None => ctxgraph::format_for_path(&req.url),
            Some(f) if f == "markdown" || f == "md" => DocumentFormat::Markdown,
            Some(f) if f == "text" || f == "txt" => DocumentFormat::Text,
            Some(f) => {
                return Err(ServiceError::bad_request(
                    "request.document_format",
                    format!("format {f:?}: write markdown or text"),
                ));
            }
        };
        let input = DocumentInput {
            url: req.url,
            text: req.text,
            format,
            title: req.title,
            extract: req.extract,
            ingested_at: None,
        };
        let done = self.write(who, move |engine| Ok(engine.add_document(&input)?)).await?;
        let (status, position) = status_of(done.outcome);
        let summary = match done.outcome {
            IngestOutcome::New(_) => format!(
                "stored document {} (version {}) with {} and {}; cite a sentence as {}/tN",
                done.document_id,
                done.version,
                plural(done.sentences, "sentence", "sentences"),
                plural(done.mentions, "entity mention", "entity mentions"),
                done.document_id
            ),
            IngestOutcome::Duplicate(_) => format!(
                "document {} was already stored with this text; nothing written",
                done.document_id
            ),
        };
        Ok(DocumentAdded {
            status: status.into(),
            position,
            document_id: done.document_id,
            version: done.version,
            previous: done.previous,
            sentences: done.sentences,
            mentions: done.mentions,
            summary,
        })
    }

    /// A document version with its sections and citable sentences.
    pub async fn show_document(
        &self,
        who: &Principal,
        req: DocumentShowRequest,
    ) -> Result<DocumentDto, ServiceError> {
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            match snap.document(&req.id)? {
                Some(d) => Ok(DocumentDto::from(&d)),
                None => Err(ServiceError::not_found(
                    "document.not_found",
                    format!("no document has id or URL {:?}", req.id),
                )),
            }
        })
        .await
    }

    // -----------------------------------------------------------------------------------------
    // Types and slots.

    /// Declare a type.
    pub async fn define_type(
        &self,
        who: &Principal,
        req: TypeRequest,
    ) -> Result<Recorded, ServiceError> {
        let what = format!("type {}", req.name);
        let outcome = self
            .write(who, move |e| Ok(e.declare_type(&req.name, req.description.as_deref())?))
            .await?;
        Ok(recorded(outcome, what))
    }

    /// Make an entity an instance of a declared type.
    pub async fn add_instance(
        &self,
        who: &Principal,
        req: InstanceRequest,
    ) -> Result<Recorded, ServiceError> {
        let what = format!("{} INSTANCE_OF {}", req.entity, req.type_name);
        let owner = who.clone();
        let outcome = self
            .write(who, move |e| {
                let entity =
                    entity_for_write(e, &owner, "entity", &req.entity, req.entity_type.as_deref())?;
                Ok(e.add_instance(&entity, &req.type_name)?)
            })
            .await?;
        Ok(recorded(outcome, what))
    }

    /// The declared types with their visible instances.
    pub async fn list_types(
        &self,
        who: &Principal,
        q: ListQuery,
    ) -> Result<TypeList, ServiceError> {
        let limit = page_size(q.limit)?;
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            let all = snap.types()?;
            let types: Vec<TypeDto> = all.iter().take(limit).map(TypeDto::from).collect();
            let summary = match types.len() {
                0 => "no types are declared (define_type declares one)".to_owned(),
                n => format!(
                    "{}: {}",
                    plural(n, "type", "types"),
                    types
                        .iter()
                        .map(|t| format!(
                            "{} ({})",
                            t.name,
                            plural(t.instances.len(), "instance", "instances")
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            Ok(TypeList { types, summary })
        })
        .await
    }

    /// Record one observed slot value of an entity.
    pub async fn set_slot(
        &self,
        who: &Principal,
        req: SlotRequest,
    ) -> Result<Recorded, ServiceError> {
        let what = format!("{} {} = {}", req.entity, req.slot, req.value);
        let owner = who.clone();
        let outcome = self
            .write(who, move |e| {
                let entity =
                    entity_for_write(e, &owner, "entity", &req.entity, req.entity_type.as_deref())?;
                Ok(e.set_slot(
                    &entity,
                    &req.slot,
                    &req.value,
                    req.confidence,
                    req.source.as_deref(),
                )?)
            })
            .await?;
        Ok(recorded(outcome, what))
    }

    /// A visible entity's slot values and types.
    pub async fn entity_slots(
        &self,
        who: &Principal,
        req: EntitySlotsRequest,
    ) -> Result<EntitySlots, ServiceError> {
        self.read(who, move |e, who| {
            let id = existing_entity(e, who, "entity", &req.entity)?;
            let snap = e.reader(who)?;
            let (slots, types) = snap.slots_of(&id)?.unwrap_or_default();
            let types: Vec<String> = types.into_iter().map(|(_, name)| name).collect();
            let values: Vec<String> =
                slots.iter().map(|f| format!("{} = {}", f.slot, f.value)).collect();
            let summary = format!(
                "{id}: {}; {}",
                if types.is_empty() {
                    "an instance of no type".to_owned()
                } else {
                    format!("an instance of {}", types.join(", "))
                },
                if values.is_empty() { "no slot values".to_owned() } else { values.join(", ") }
            );
            Ok(EntitySlots {
                entity: id,
                types,
                slots: slots.iter().map(SlotFillDto::from).collect(),
                summary,
            })
        })
        .await
    }

    // -----------------------------------------------------------------------------------------
    // Checklists and goals.

    /// Define a checklist, validated as a checklist file is: every problem named at once.
    pub async fn define_checklist(
        &self,
        who: &Principal,
        req: ChecklistRequest,
    ) -> Result<Recorded, ServiceError> {
        let what = format!(
            "checklist {} with {}",
            req.name,
            plural(req.slots.len(), "slot spec", "slot specs")
        );
        let text = serde_json::to_string(&req).map_err(|e| {
            ServiceError::internal("server.encode", format!("encoding the checklist: {e}"))
        })?;
        let outcome = self.write(who, move |e| Ok(e.define_checklist_file(&text)?)).await?;
        Ok(recorded(outcome, what))
    }

    /// The defined checklists.
    pub async fn list_checklists(
        &self,
        who: &Principal,
        q: ListQuery,
    ) -> Result<ChecklistList, ServiceError> {
        let limit = page_size(q.limit)?;
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            let all = snap.checklists()?;
            let checklists: Vec<ChecklistDto> =
                all.iter().take(limit).map(ChecklistDto::from).collect();
            let summary = match checklists.len() {
                0 => "no checklists are defined (define_checklist defines one)".to_owned(),
                n => format!(
                    "{}: {}",
                    plural(n, "checklist", "checklists"),
                    checklists
                        .iter()
                        .map(|c| format!(
                            "{} ({})",
                            c.name,
                            c.slots.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                        ))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            };
            Ok(ChecklistList { checklists, summary })
        })
        .await
    }

    /// Which specs of a checklist a visible entity satisfies.
    pub async fn check_checklist(
        &self,
        who: &Principal,
        req: CheckRequest,
    ) -> Result<CheckDto, ServiceError> {
        self.read(who, move |e, who| {
            let id = existing_entity(e, who, "entity", &req.entity)?;
            let snap = e.reader(who)?;
            match snap.check_checklist(&req.checklist, &id)? {
                Some(r) => Ok(CheckDto::from(&r)),
                None => Err(ServiceError::not_found(
                    "entity.not_found",
                    format!("entity {:?}: no entity has this id or name", req.entity),
                )),
            }
        })
        .await
    }

    /// The slot to ask about next to tell visible candidates apart, with every spec's gain.
    pub async fn next_question(
        &self,
        who: &Principal,
        req: NextQuestionRequest,
    ) -> Result<NextQuestionDto, ServiceError> {
        self.read(who, move |e, who| {
            let mut ids = Vec::with_capacity(req.candidates.len());
            for (i, c) in req.candidates.iter().enumerate() {
                ids.push(existing_entity(e, who, &format!("candidates[{i}]"), c)?);
            }
            // Resolved before the reader below: one connection holds one read transaction.
            let user =
                req.user.as_deref().map(|u| existing_entity(e, who, "user", u)).transpose()?;
            let snap = e.reader(who)?;
            let scoped = &snap;
            let hidden = |id: String| {
                ServiceError::not_found(
                    "entity.not_found",
                    format!("candidate {id:?}: no entity has this id"),
                )
            };
            let known: Vec<(String, String)> = req.known.into_iter().collect();
            let (kept, ruled_out) =
                scoped.filter_candidates(&req.checklist, &ids, &known)?.map_err(hidden)?;
            if kept.is_empty() {
                return Err(ServiceError::not_found(
                    "checklist.no_candidates",
                    format!(
                        "the known answers rule out every candidate ({}): check them, or widen the candidates",
                        ruled_out.iter().map(|(c, s)| format!("{c} by {s}")).collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            let options = NextOptions {
                user,
                search_cost: req.search_cost.unwrap_or(DEFAULT_SEARCH_COST),
                search: req.search.unwrap_or(true),
            };
            let r = scoped.next_slot(&req.checklist, &kept, &options)?.map_err(hidden)?;
            Ok(NextQuestionDto::new(&r, &ruled_out))
        })
        .await
    }

    /// Add a user's goal.
    pub async fn add_goal(
        &self,
        who: &Principal,
        req: GoalRequest,
    ) -> Result<Recorded, ServiceError> {
        let what = format!("goal {:?} of {}", req.name, req.user);
        let owner = who.clone();
        let outcome = self
            .write(who, move |e| {
                let user = if req.create_user {
                    EntityArg::Named { name: req.user.clone(), entity_type: "user".into() }
                } else {
                    EntityArg::Id(existing_entity(e, &owner, "user", &req.user)?)
                };
                let draft = GoalDraft {
                    name: req.name,
                    user,
                    description: req.description,
                    horizon: req.horizon,
                    priority: req.priority,
                    influences: req.influences,
                    prefers: req.prefers.into_iter().map(|p| (p.slot, p.value)).collect(),
                };
                Ok(e.add_goal(&draft)?)
            })
            .await?;
        Ok(recorded(outcome, what))
    }

    /// Goals of one user or all, whose user the principal may see.
    pub async fn list_goals(
        &self,
        who: &Principal,
        q: GoalListQuery,
    ) -> Result<GoalList, ServiceError> {
        self.read(who, move |e, who| {
            let user = q.user.as_deref().map(|u| existing_entity(e, who, "user", u)).transpose()?;
            let snap = e.reader(who)?;
            let goals: Vec<GoalDto> =
                snap.goals(user.as_deref())?.iter().map(GoalDto::from).collect();
            let summary = match goals.len() {
                0 => "no goals (add_goal adds one)".to_owned(),
                n => format!(
                    "{}: {}",
                    plural(n, "goal", "goals"),
                    goals
                        .iter()
                        .map(|g| format!("{:?} of {}", g.name, g.user_id))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            Ok(GoalList { goals, summary })
        })
        .await
    }

    // -----------------------------------------------------------------------------------------
    // Entity resolution.

    /// Pairs of visible entities that may be one thing, and the decided pairs.
    pub async fn entity_candidates(
        &self,
        who: &Principal,
        q: CandidatesQuery,
    ) -> Result<CandidateList, ServiceError> {
        let status = match q.status.as_deref().map(str::trim) {
            None | Some("candidate") => Some(CandidateStatus::Candidate),
            Some("merged") => Some(CandidateStatus::Merged),
            Some("rejected") => Some(CandidateStatus::Rejected),
            Some("all") => None,
            Some(other) => {
                return Err(ServiceError::bad_request(
                    "request.candidate_status",
                    format!("status {other:?}: write candidate, merged, rejected or all"),
                ));
            }
        };
        let limit = match q.limit {
            None => DEFAULT_PAIRS,
            l => page_size(l)?,
        };
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            let pairs: Vec<CandidateDto> =
                snap.entity_candidates(status, limit)?.iter().map(CandidateDto::from).collect();
            let summary = match pairs.first() {
                None => {
                    "no such pairs (entity resolution proposes candidates when it runs)".to_owned()
                }
                Some(p) => format!(
                    "{}; the first: {} and {} ({}, {:.2}: {})",
                    plural(pairs.len(), "pair", "pairs"),
                    p.a.id,
                    p.b.id,
                    p.status,
                    p.confidence,
                    p.justification
                ),
            };
            Ok(CandidateList { pairs, summary })
        })
        .await
    }

    /// Merge or reject a pair of visible entities (an `entity_decision` record, decided by the
    /// principal).
    pub async fn decide_entities(
        &self,
        who: &Principal,
        decision: EntityDecision,
        req: EntityDecisionRequest,
    ) -> Result<Recorded, ServiceError> {
        let owner = who.clone();
        let (a, b, outcome) = self
            .write(who, move |e| {
                let a = existing_entity(e, &owner, "a", &req.a)?;
                let b = existing_entity(e, &owner, "b", &req.b)?;
                let outcome =
                    e.decide_entities(decision, &a, &b, req.reason.as_deref(), Some(owner.name()))?;
                Ok((a, b, outcome))
            })
            .await?;
        let done = match decision {
            EntityDecision::Merge => "merged (one thing)",
            EntityDecision::Reject => "rejected (different things)",
        };
        Ok(recorded(outcome, format!("{a} and {b} as {done}")))
    }
}
