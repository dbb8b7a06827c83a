//! Knowledge memory: facts with provenance and their source documents (seeds 001 and 002).
//!
//! Writes resolve the caller's wording at write time (`knowledge/resolve.rs`) and append a record
//! that holds the resolved ids, so reprojection never resolves again. Reads (`knowledge/query.rs`)
//! answer "what is true now", "what was true on date D", facts about an entity, contradictions,
//! and documents with their sentences and mentions. The write-back policy itself (merging claims,
//! noisy-or confidence, contradictions kept) is the projection's (`ctxgraph-projection`'s
//! `knowledge.rs`).

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_ontology::{
    DocumentFormat, ObjectKind, RecordKind, ResolvedEntity, Violation, canonical_predicate,
    content_hash, document_id, normalize_name, normalize_time, split_document,
};
use ctxgraph_store::{GraphReader, GraphStore};
use serde_json::{Map, Value};

use crate::engine::{Engine, Projection};
use crate::error::Error;
use crate::ingest::IngestOutcome;
use crate::resolve::names::{NameForms, SKELETON_CONFIDENCE};

mod query;
pub(crate) mod resolve;

pub use query::{
    Contradiction, DocumentSummary, DocumentView, FactEntity, FactQuery, FactView, SectionView,
    SentenceMention, SentenceView,
};
pub use resolve::{MAX_EMBEDDED_CANDIDATES, MIN_NAME_COSINE, NameCandidate, Resolution};

/// Confidence of a mention found by the LLM-free extractor (a new `concept`), lower than a match
/// of an existing entity's name because the extractor only guesses that a capitalised run is a
/// name.
pub const EXTRACTED_CONFIDENCE: f64 = 0.6;
/// Longest run of words compared with entity names when finding mentions.
const MAX_MENTION_WORDS: usize = 6;
/// Shortest normalised name (in characters) matched in sentences, so `a` or `it` is no mention.
const MIN_MENTION_CHARS: usize = 3;

/// An entity as the caller names it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EntityInput {
    /// A name, an alias, a near spelling or an entity id.
    pub name: String,
    /// Its type (aliases such as `person` accepted): restricts matching, and allows creating the
    /// entity when nothing matches.
    pub entity_type: Option<String>,
}

impl EntityInput {
    /// A name without a type.
    pub fn named(name: impl Into<String>) -> Self {
        EntityInput { name: name.into(), entity_type: None }
    }

    /// A name with its type.
    pub fn typed(name: impl Into<String>, entity_type: impl Into<String>) -> Self {
        EntityInput { name: name.into(), entity_type: Some(entity_type.into()) }
    }
}

/// The object of a fact as the caller gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum ObjectInput {
    /// An entity, resolved like the subject.
    Entity(EntityInput),
    /// A string, number or boolean.
    Literal(Value),
    /// Decided by the predicate: an entity for an entity predicate, a string for a literal one,
    /// and for one that allows either (`object = "any"`) an entity when the name resolves to one,
    /// a string literal when nothing matches.
    Either(String),
    /// A slot value (seed 001's `SlotValue`): a slot label and a value.
    SlotValue {
        /// The slot label, e.g. genre.
        slot: String,
        /// The value, e.g. drama.
        value: String,
    },
    /// A declared Type (seed 001's `Type`), by name; an undeclared one is refused
    /// (`slots.unknown_type`).
    Type(String),
}

/// A claim as the caller gives it (seed 002's `record_fact`).
#[derive(Debug, Clone, PartialEq)]
pub struct FactInput {
    /// What the claim is about.
    pub subject: EntityInput,
    /// A controlled predicate (case, `-` and spaces forgiven).
    pub predicate: String,
    /// The object.
    pub object: ObjectInput,
    /// Where it comes from, stored verbatim and never fetched.
    pub source: Option<String>,
    /// In [0, 1]; 1.0 when `None`.
    pub confidence: Option<f64>,
    /// Start of validity (RFC 3339 or a date).
    pub valid_from: Option<String>,
    /// End of validity, exclusive.
    pub valid_to: Option<String>,
    /// The id of the sentence the claim was read from.
    pub cites: Option<String>,
    /// When the claim is made; now when `None`.
    pub asserted_at: Option<String>,
}

impl FactInput {
    /// A claim with no source, validity or citation, at confidence 1.0.
    pub fn new(subject: EntityInput, predicate: impl Into<String>, object: ObjectInput) -> Self {
        FactInput {
            subject,
            predicate: predicate.into(),
            object,
            source: None,
            confidence: None,
            valid_from: None,
            valid_to: None,
            cites: None,
            asserted_at: None,
        }
    }
}

/// What recording a claim did.
#[derive(Debug, Clone, PartialEq)]
pub struct FactOutcome {
    /// New at a log position, or a duplicate of the same claim (same source, validity, citation).
    pub outcome: IngestOutcome,
    /// The fact the claim supports.
    pub fact_id: String,
    /// The claim (record) id.
    pub claim_id: String,
    /// How the subject resolved.
    pub subject: ResolvedEntity,
    /// How the object resolved; `None` for a literal.
    pub object: Option<ResolvedEntity>,
}

/// A document as the caller gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentInput {
    /// Where it came from (a URL, a path, any source string): stored verbatim, never fetched.
    pub url: String,
    /// The text.
    pub text: String,
    /// How to split it.
    pub format: DocumentFormat,
    /// A title (otherwise the first level-1 heading).
    pub title: Option<String>,
    /// Also create `concept` entities for names the LLM-free extractor finds.
    pub extract: bool,
    /// When it is ingested; now when `None`.
    pub ingested_at: Option<String>,
}

/// What ingesting a document did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentOutcome {
    /// New at a log position, or the same URL and content already stored.
    pub outcome: IngestOutcome,
    /// The document (version) id.
    pub document_id: String,
    /// Version number under its URL, from 1.
    pub version: u64,
    /// The version it replaces.
    pub previous: Option<String>,
    /// Sentences in the document.
    pub sentences: usize,
    /// Mentions recorded.
    pub mentions: usize,
}

/// Now, as records store times (see [`record_time`]).
pub(crate) fn now() -> String {
    record_time(chrono::Utc::now())
}

/// A time as records store it: RFC 3339 UTC with milliseconds.
pub(crate) fn record_time(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn entity_json(e: &ResolvedEntity) -> Value {
    serde_json::json!({"id": e.id, "name": e.name, "via": e.via})
}

/// A stand-in for an entity that failed to resolve, so validation still reports every other
/// problem of the same record at once.
fn placeholder() -> ResolvedEntity {
    ResolvedEntity { id: "concept:unresolved".into(), name: "unresolved".into(), via: "id".into() }
}

/// Why a retraction cannot be written: the fact does not exist (nor is claimed earlier in the same
/// batch, `claimed`). `None` when it exists.
pub(crate) fn unknown_fact(
    graph: &dyn GraphReader,
    fact_id: &str,
    claimed: &std::collections::BTreeSet<String>,
) -> Result<Option<Vec<Violation>>, Error> {
    if claimed.contains(fact_id) || graph.node_exists(&NodeKey::new("Fact", fact_id))? {
        return Ok(None);
    }
    Ok(Some(vec![Violation::for_str(
        "$.fact_id",
        fact_id,
        "fact.unknown_fact",
        "no fact with this id (see `ctxgraph fact list`)",
    )]))
}

/// A name that resolved only to another name (a near spelling or a partial name) in a write:
/// never attached silently. With a type, it is a new entity of that name, and the pair is
/// proposed as a `SAME_AS` candidate (`proposals`); without one, an error names the near entity.
#[allow(clippy::too_many_arguments)]
fn near(
    name: &str,
    entity_type: Option<&str>,
    found: ResolvedEntity,
    score: f64,
    path: &str,
    flag: &str,
    violations: &mut Vec<Violation>,
    proposals: &mut Vec<(String, NameCandidate)>,
) -> Result<Option<(ResolvedEntity, bool)>, Error> {
    let via = resolve::NEAR.iter().copied().find(|v| *v == found.via).unwrap_or("one_edit");
    let candidate = NameCandidate { id: found.id, name: found.name, via, score };
    match entity_type {
        Some(t) => {
            let name = name.trim();
            let created = ResolvedEntity {
                id: ctxgraph_ontology::entity_id(t, name),
                name: name.to_owned(),
                via: "created".into(),
            };
            proposals.push((created.id.clone(), candidate));
            Ok(Some((created, true)))
        }
        None => {
            violations.push(Violation::for_str(
                path,
                name,
                "fact.near_entity",
                format!(
                    "no entity has this name; the nearest is {} (\"{}\", {} {:.2}): name it by its id to mean it, or give a type ({flag}) to create a new entity, proposed as a candidate for the same thing",
                    candidate.id, candidate.name, candidate.via, candidate.score
                ),
            ));
            Ok(Some((placeholder(), false)))
        }
    }
}

impl Engine {
    /// Write each (new entity, near entity) pair as an inferred `SAME_AS` candidate, as entity
    /// resolution would, unless the pair already has a `SAME_AS` edge (a decision, or a
    /// candidate). Derived data like resolution's: `resolve_entities` recomputes it.
    fn propose_same_as(&mut self, proposals: &[(String, NameCandidate)]) -> Result<(), Error> {
        let mut w = self.backend.embedded_mut("proposing SAME_AS candidates")?.begin_write()?;
        for (new, near) in proposals {
            let (a, b) = if *new < near.id { (new, &near.id) } else { (&near.id, new) };
            let (ka, kb) = (NodeKey::new("Entity", a), NodeKey::new("Entity", b));
            if a == b || !w.node_exists(&ka)? || !w.node_exists(&kb)? {
                continue;
            }
            let paired = w
                .edges_of(&ka, Some("SAME_AS"), ctxgraph_ontology::graph::Direction::Both)?
                .iter()
                .any(|e| e.key.from == kb || e.key.to == kb);
            if paired {
                continue;
            }
            let mut props = ctxgraph_ontology::graph::Properties::new();
            props.insert("confidence".into(), near.score.into());
            props.insert(
                "justification".into(),
                format!(
                    "written as a new name, {} of `{}` (score {:.2}): proposed, not merged",
                    near.via, near.name, near.score
                )
                .into(),
            );
            props.insert("inferred".into(), true.into());
            let key = self.schema.edge_key("SAME_AS", ka, kb, &props);
            let edge = ctxgraph_ontology::graph::Edge { key, props };
            let violations = self.schema.check_edge(&edge);
            if !violations.is_empty() {
                return Err(Error::Validation(violations.into()));
            }
            w.put_edge(&edge)?;
        }
        w.commit()?;
        Ok(())
    }

    /// Resolve a name to an entity as [`Engine::record_fact`] would, without writing anything,
    /// as `who` may see the entities: one it may not see is neither matched nor listed among
    /// the candidates of an ambiguous name.
    pub fn resolve_entity(
        &self,
        who: &crate::Principal,
        input: &EntityInput,
    ) -> Result<Resolution, Error> {
        let resolution = self.resolve_entity_unscoped(input)?;
        let reader = self.reader(who)?;
        let visible = |id: &str| -> Result<bool, Error> {
            Ok(reader.node(&ctxgraph_ontology::graph::NodeKey::new("Entity", id))?.is_some())
        };
        Ok(match resolution {
            Resolution::Resolved(r, _) if r.via != "created" && !visible(&r.id)? => {
                Resolution::Unknown
            }
            Resolution::Ambiguous(list) => {
                let mut kept = Vec::new();
                for c in list {
                    if visible(&c.id)? {
                        kept.push(c);
                    }
                }
                if kept.is_empty() { Resolution::Unknown } else { Resolution::Ambiguous(kept) }
            }
            other @ (Resolution::Resolved(..) | Resolution::Unknown) => other,
        })
    }

    /// The resolution over every entity, before the caller's view is applied.
    fn resolve_entity_unscoped(&self, input: &EntityInput) -> Result<Resolution, Error> {
        let embedder = self.embedder()?;
        let entity_type = match &input.entity_type {
            Some(t) => Some(
                resolve::entity_type(&self.schema, t, "$.entity_type")
                    .map_err(|v| Error::Validation(vec![v].into()))?,
            ),
            None => None,
        };
        let read = self.backend.begin_read()?;
        resolve::resolve_name(
            &*read,
            &self.schema,
            embedder.as_ref(),
            &input.name,
            entity_type.as_deref(),
        )
    }

    /// Record a claim (seed 002's `record_fact`): resolve subject and object, check everything,
    /// append a `fact` record and project it (the write-back policy of seed 001).
    ///
    /// Every problem is reported at once, and nothing is written when there is one: an unknown
    /// predicate (`fact.unknown_predicate`), a confidence outside [0, 1]
    /// (`fact.confidence_range`), an ambiguous name (`fact.ambiguous_entity`, listing the
    /// candidates), an unknown name without a type (`fact.unknown_entity`), an unknown cited
    /// sentence (`fact.unknown_sentence`). The same claim again (same subject, predicate, object,
    /// source, validity and citation) is a duplicate and changes nothing.
    ///
    /// On a remote store the checks read the graph its workers have folded; the record is
    /// appended and waited for until folded (at most [`crate::REMOTE_FOLD_WAIT`]), and the
    /// derived writes are the workers': stage 2 indexes the fact, stage 3's entity resolution
    /// proposes the `SAME_AS` candidates a store file writes here for a near name.
    ///
    /// ```
    /// use ctxgraph::{Engine, EngineOptions, EntityInput, FactInput, FactQuery, ObjectInput, OpenMode};
    /// # fn main() -> Result<(), ctxgraph::Error> {
    /// # let dir = tempfile::TempDir::new()?;
    /// let mut engine = Engine::open(&dir.path().join("kb.ctxg"), OpenMode::CreateIfMissing, EngineOptions::default())?;
    /// let bob = || ObjectInput::Entity(EntityInput::typed("Bob", "person"));
    /// let mut claim = FactInput::new(EntityInput::typed("Alice", "person"), "reports_to", bob());
    /// claim.confidence = Some(0.6);
    /// claim.source = Some("org chart".into());
    /// engine.record_fact(&claim)?;
    /// // Another source for the same claim; the names now resolve to the existing entities.
    /// let mut again = FactInput::new(EntityInput::named("alice"), "Reports-To", ObjectInput::Either("bob".into()));
    /// again.confidence = Some(0.5);
    /// again.source = Some("hr export".into());
    /// let outcome = engine.record_fact(&again)?;
    /// assert_eq!(outcome.fact_id, "user:alice|reports_to|user:bob");
    /// let facts = engine.owner_reader()?.facts(&FactQuery::default())?;
    /// assert!((facts[0].confidence - 0.8).abs() < 1e-9); // noisy-or: 1 - 0.4 × 0.5
    /// assert_eq!(facts[0].sources, ["hr export", "org chart"]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn record_fact(&mut self, input: &FactInput) -> Result<FactOutcome, Error> {
        let embedder = self.embedder()?;
        let max = self.options().limits.max_name_bytes;
        let mut violations = Vec::new();
        // (new entity, the existing one its name is near, how, score): SAME_AS candidates.
        let mut proposals: Vec<(String, NameCandidate)> = Vec::new();
        let entity = |read: &dyn GraphReader,
                      e: &EntityInput,
                      path: &str,
                      flag: &str,
                      violations: &mut Vec<Violation>,
                      proposals: &mut Vec<(String, NameCandidate)>|
         -> Result<Option<(ResolvedEntity, bool)>, Error> {
            if let Some(v) = resolve::check_name(&e.name, max, &format!("{path}.name")) {
                violations.push(v);
                return Ok(None);
            }
            let t = match &e.entity_type {
                Some(t) => {
                    match resolve::entity_type(&self.schema, t, &format!("{path}.entity_type")) {
                        Ok(t) => Some(t),
                        Err(v) => {
                            violations.push(v);
                            return Ok(None);
                        }
                    }
                }
                None => None,
            };
            let r = resolve::resolve_name(
                read,
                &self.schema,
                embedder.as_ref(),
                &e.name,
                t.as_deref(),
            )?;
            if let Some(v) = resolve::violation(path, &e.name, &r, flag) {
                violations.push(v);
                return Ok(Some((placeholder(), false)));
            }
            match r {
                Resolution::Resolved(found, score)
                    if resolve::NEAR.contains(&found.via.as_str()) =>
                {
                    near(&e.name, t.as_deref(), found, score, path, flag, violations, proposals)
                }
                Resolution::Resolved(e, _) => Ok(Some((e, true))),
                Resolution::Unknown | Resolution::Ambiguous(_) => Ok(None),
            }
        };
        // A slot-value or type object, as its record JSON (validated with the record).
        let mut node_object: Option<Value> = None;
        let (subject, object) = {
            let read = self.backend.begin_read()?;
            let subject = entity(
                &*read,
                &input.subject,
                "$.subject",
                "--subject-type",
                &mut violations,
                &mut proposals,
            )?;
            let object = match &input.object {
                ObjectInput::SlotValue { slot, value } => {
                    node_object = Some(serde_json::json!({"slot": slot, "value": value}));
                    Some((None, None, true))
                }
                ObjectInput::Type(name) => {
                    let id = ctxgraph_ontology::normalize_name(name);
                    if !id.is_empty() && !read.node_exists(&NodeKey::new("Type", &id))? {
                        violations.push(Violation::for_str(
                            "$.object.type",
                            name,
                            "slots.unknown_type",
                            "no type with this name is declared: declare it first (`ctxgraph type add NAME`)",
                        ));
                    }
                    node_object = Some(serde_json::json!({"type": name}));
                    Some((None, None, true))
                }
                ObjectInput::Entity(e) => {
                    entity(&*read, e, "$.object", "--object-type", &mut violations, &mut proposals)?
                        .map(|(e, ok)| (Some(e), None, ok))
                }
                ObjectInput::Literal(v) => Some((None, Some(v.clone()), true)),
                ObjectInput::Either(name) => {
                    let kind = self
                        .schema
                        .predicate(&canonical_predicate(&input.predicate))
                        .map_or(ObjectKind::Any, |p| p.object);
                    let r = match (kind, resolve::check_name(name, max, "$.object.name")) {
                        (ObjectKind::Literal, _) | (_, Some(_)) => Resolution::Unknown,
                        (ObjectKind::Entity | ObjectKind::Any, None) => resolve::resolve_name(
                            &*read,
                            &self.schema,
                            embedder.as_ref(),
                            name,
                            None,
                        )?,
                    };
                    match r {
                        Resolution::Resolved(found, score)
                            if resolve::NEAR.contains(&found.via.as_str()) =>
                        {
                            near(
                                name,
                                None,
                                found,
                                score,
                                "$.object",
                                "--object-type",
                                &mut violations,
                                &mut proposals,
                            )?
                            .map(|(e, ok)| (Some(e), None, ok))
                        }
                        Resolution::Resolved(e, _) => Some((Some(e), None, true)),
                        Resolution::Unknown if kind == ObjectKind::Entity => {
                            violations.extend(resolve::violation(
                                "$.object",
                                name,
                                &r,
                                "--object-type",
                            ));
                            Some((Some(placeholder()), None, false))
                        }
                        Resolution::Unknown => {
                            Some((None, Some(Value::String(name.clone())), true))
                        }
                        Resolution::Ambiguous(_) => {
                            violations.extend(resolve::violation(
                                "$.object",
                                name,
                                &r,
                                "--object-type",
                            ));
                            Some((Some(placeholder()), None, false))
                        }
                    }
                }
            };
            if let Some(id) = &input.cites
                && !read.node_exists(&NodeKey::new("Sentence", id))?
            {
                violations.push(Violation::for_str(
                    "$.cites",
                    id,
                    "fact.unknown_sentence",
                    "no sentence with this id (see `ctxgraph doc show`)",
                ));
            }
            (subject, object)
        };
        let mut record = Map::new();
        record.insert("record_type".into(), "fact".into());
        let subject_entity = subject.as_ref().map_or_else(placeholder, |(e, _)| e.clone());
        record.insert("subject".into(), entity_json(&subject_entity));
        record.insert("predicate".into(), input.predicate.clone().into());
        let object_entity = match &object {
            _ if node_object.is_some() => {
                record.insert("object".into(), node_object.clone().unwrap_or_default());
                None
            }
            Some((Some(e), _, _)) => {
                record.insert("object".into(), entity_json(e));
                Some(e.clone())
            }
            Some((None, Some(v), _)) => {
                record.insert("object".into(), serde_json::json!({"literal": v}));
                None
            }
            _ => {
                record.insert("object".into(), entity_json(&placeholder()));
                None
            }
        };
        if let Some(c) = input.confidence {
            // Not a JSON number (NaN, infinite): validation reports the field as missing a number.
            let value =
                serde_json::Number::from_f64(c).map_or(Value::String(c.to_string()), Value::Number);
            record.insert("confidence".into(), value);
        }
        for (k, v) in [
            ("source", &input.source),
            ("valid_from", &input.valid_from),
            ("valid_to", &input.valid_to),
            ("cites", &input.cites),
        ] {
            if let Some(v) = v {
                record.insert(k.into(), v.clone().into());
            }
        }
        record.insert("asserted_at".into(), input.asserted_at.clone().unwrap_or_else(now).into());
        let validated = self.validate(&Value::Object(record).to_string());
        let record = match validated {
            Ok(r) if violations.is_empty() => r,
            Ok(_) => return Err(Error::Validation(violations.into())),
            Err(e) => {
                violations.extend(e.violations);
                return Err(Error::Validation(violations.into()));
            }
        };
        let ctxgraph_ontology::RecordBody::Fact(f) = record.body() else {
            return Err(Error::Corruption {
                position: 0,
                reason: "a fact record validated as another kind".into(),
            });
        };
        let (fact_id, claim_id) = (f.fact_id.clone(), f.claim_id.clone());
        // The same claim (same id) again is not new evidence, whatever its confidence.
        let existing = self.backend.begin_read()?.get(RecordKind::Fact, &claim_id)?;
        let outcome = match existing {
            Some(entry) => IngestOutcome::Duplicate(entry.position),
            None => self.append_one(&record)?,
        };
        // On a remote store the candidates are stage 3's: its entity resolution proposes them.
        if matches!(outcome, IngestOutcome::New(_)) && !proposals.is_empty() && !self.is_remote() {
            self.propose_same_as(&proposals)?;
        }
        Ok(FactOutcome {
            outcome,
            fact_id,
            claim_id,
            subject: subject_entity,
            object: object_entity,
        })
    }

    /// Retract a fact (a `fact_retraction` record): it is not true from `at` (now when `None`)
    /// on. An unknown fact id is refused (`fact.unknown_fact`) and nothing is written. On a
    /// remote store the fact must be folded already; the retraction is waited for as
    /// [`Engine::record_fact`]'s record is.
    pub fn retract_fact(
        &mut self,
        fact_id: &str,
        reason: Option<&str>,
        at: Option<&str>,
    ) -> Result<IngestOutcome, Error> {
        let mut record = Map::new();
        record.insert("record_type".into(), "fact_retraction".into());
        record.insert("fact_id".into(), fact_id.into());
        record.insert("retracted_at".into(), at.map_or_else(now, str::to_owned).into());
        if let Some(r) = reason {
            record.insert("reason".into(), r.into());
        }
        let mut violations = Vec::new();
        {
            let read = self.backend.begin_read()?;
            if let Some(v) = unknown_fact(&*read, fact_id, &Default::default())? {
                violations.extend(v);
            }
        }
        match self.validate(&Value::Object(record).to_string()) {
            Ok(r) if violations.is_empty() => self.append_one(&r),
            Ok(_) => Err(Error::Validation(violations.into())),
            Err(e) => {
                violations.extend(e.violations);
                Err(Error::Validation(violations.into()))
            }
        }
    }

    /// Ingest a document version (seed 001's sources): split it, find the entities its sentences
    /// mention, and append a `document` record holding the text verbatim.
    ///
    /// The same URL and content again is a no-op ([`IngestOutcome::Duplicate`]); a changed text
    /// under a known URL becomes the next version, linked to the one it replaces. On a remote
    /// store the previous version and the mentioned entities are read from the folded graph,
    /// the record is waited for as [`Engine::record_fact`]'s is, and stage 2 indexes its
    /// sentences.
    pub fn add_document(&mut self, input: &DocumentInput) -> Result<DocumentOutcome, Error> {
        let hash = content_hash(&input.text);
        let id = document_id(&input.url, &hash);
        let tree = split_document(input.format, &input.text);
        let sentences = tree.sentence_count();
        let (previous, version, mentions) = {
            let read = self.backend.begin_read()?;
            if let Some(entry) = read.get(RecordKind::Document, &id)? {
                let node = read.node(&NodeKey::new("Document", &id))?;
                let field = |k: &str| node.as_ref().and_then(|n| n.props.get(k).cloned());
                return Ok(DocumentOutcome {
                    outcome: IngestOutcome::Duplicate(entry.position),
                    document_id: id,
                    version: field("version").and_then(|v| v.as_u64()).unwrap_or(1),
                    previous: None,
                    sentences,
                    mentions: 0,
                });
            }
            let latest = query::latest_version(&*read, &input.url)?;
            let (previous, version) = match latest {
                Some((prev, v)) => (Some(prev), v + 1),
                None => (None, 1),
            };
            let known = resolve::load_entities(&*read)?;
            let texts: Vec<&str> = tree.sentences().into_iter().map(|(_, _, t)| t).collect();
            (previous, version, find_mentions(&known, &texts, input.extract))
        };
        let mut record = Map::new();
        record.insert("record_type".into(), "document".into());
        record.insert("url".into(), input.url.clone().into());
        record.insert("format".into(), input.format.as_str().into());
        record.insert("text".into(), input.text.clone().into());
        record.insert("content_hash".into(), hash.into());
        record.insert("version".into(), version.into());
        if let Some(p) = &previous {
            record.insert("previous".into(), p.clone().into());
        }
        if let Some(t) = &input.title {
            record.insert("title".into(), t.clone().into());
        }
        record.insert("ingested_at".into(), input.ingested_at.clone().unwrap_or_else(now).into());
        let count = mentions.len();
        let list = mentions
            .into_iter()
            .map(|(sentence, e, confidence)| {
                serde_json::json!({"sentence": sentence, "entity": entity_json(&e), "confidence": confidence})
            })
            .collect();
        record.insert("mentions".into(), Value::Array(list));
        let record = self.validate(&Value::Object(record).to_string())?;
        let outcome = self.append_one(&record)?;
        Ok(DocumentOutcome {
            outcome,
            document_id: id,
            version,
            previous,
            sentences,
            mentions: count,
        })
    }

    /// Append one record (projected inline where the backend projects) and report its outcome,
    /// on any backend.
    pub(crate) fn ingest_one(
        &mut self,
        record: &ctxgraph_ontology::ValidRecord,
    ) -> Result<IngestOutcome, Error> {
        self.ingest_one_as(record, ctxgraph_store::Durability::Synced)
    }

    /// [`Engine::ingest_one`], committed with `durability` on an embedded store.
    pub(crate) fn ingest_one_as(
        &mut self,
        record: &ctxgraph_ontology::ValidRecord,
        durability: ctxgraph_store::Durability,
    ) -> Result<IngestOutcome, Error> {
        let mut outcomes = self.ingest_batch_as(
            std::slice::from_ref(record),
            Projection::Inline,
            true,
            durability,
        )?;
        // One record in, one outcome out: ingest_batch reports every record it was given.
        outcomes.pop().ok_or_else(|| Error::Corruption {
            position: 0,
            reason: format!("appending a {} record reported no outcome", record.kind().as_str()),
        })?
    }

    /// Append one record (projected inline) and report its outcome; a new one's facts,
    /// sentences or slot value are indexed at once ([`Engine::index_records`]). On a remote
    /// store, the record is appended and waited for until the workers fold it (at most
    /// [`crate::REMOTE_FOLD_WAIT`]); stage 2 indexes it there.
    pub(crate) fn append_one(
        &mut self,
        record: &ctxgraph_ontology::ValidRecord,
    ) -> Result<IngestOutcome, Error> {
        let outcome = self.ingest_one(record)?;
        if self.is_remote() {
            // Its callers read back what they wrote: read-your-writes once folded.
            self.await_fold([&outcome])?;
            return Ok(outcome);
        }
        if matches!(outcome, IngestOutcome::New(_)) && crate::indexed::indexes(record.kind()) {
            self.index_records(&[record.body()])?;
        }
        Ok(outcome)
    }
}

/// The entities each sentence mentions: `(sentence order, entity, confidence)`, sorted.
///
/// A run of up to six words whose normalised text equals an existing entity's normalised name is
/// a mention (`via = name`, confidence 1 divided by the number of entities of that name); failing
/// that, one whose skeleton equals an entity name's skeleton (`via = skeleton`, confidence 0.97
/// divided likewise). Names shorter than three characters are not matched. With `extract`, the
/// names the LLM-free extractor finds that match nothing become new `concept` entities
/// (`via = extracted`, confidence [`EXTRACTED_CONFIDENCE`]).
pub(crate) fn find_mentions(
    known: &[resolve::KnownEntity],
    sentences: &[&str],
    extract: bool,
) -> Vec<(usize, ResolvedEntity, f64)> {
    let mut by_name: BTreeMap<String, Vec<&resolve::KnownEntity>> = BTreeMap::new();
    let mut by_skeleton: BTreeMap<String, Vec<&resolve::KnownEntity>> = BTreeMap::new();
    for e in known {
        let normal = normalize_name(&e.name);
        if normal.chars().count() >= MIN_MENTION_CHARS {
            by_name.entry(normal).or_default().push(e);
        }
        let skeleton = NameForms::new(&e.name).skeleton_str();
        if skeleton.chars().count() >= MIN_MENTION_CHARS {
            by_skeleton.entry(skeleton).or_default().push(e);
        }
    }
    let mut out: BTreeMap<(usize, String), (ResolvedEntity, f64)> = BTreeMap::new();
    let mut add = |s: usize, e: ResolvedEntity, c: f64| {
        let slot = out.entry((s, e.id.clone())).or_insert((e.clone(), c));
        if c > slot.1 {
            *slot = (e, c);
        }
    };
    for (s, text) in sentences.iter().enumerate() {
        let words: Vec<&str> = text
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .collect();
        for start in 0..words.len() {
            for len in 1..=MAX_MENTION_WORDS.min(words.len() - start) {
                let run = &words[start..start + len];
                if run.iter().any(|w| w.is_empty()) {
                    break;
                }
                let phrase = run.join(" ");
                if let Some(list) = by_name.get(&normalize_name(&phrase)) {
                    let c = 1.0 / list.len() as f64;
                    for e in list {
                        add(
                            s,
                            ResolvedEntity {
                                id: e.id.clone(),
                                name: e.name.clone(),
                                via: "name".into(),
                            },
                            c,
                        );
                    }
                } else if let Some(list) = by_skeleton.get(&NameForms::new(&phrase).skeleton_str())
                {
                    let c = SKELETON_CONFIDENCE / list.len() as f64;
                    for e in list {
                        add(
                            s,
                            ResolvedEntity {
                                id: e.id.clone(),
                                name: e.name.clone(),
                                via: "skeleton".into(),
                            },
                            c,
                        );
                    }
                }
            }
        }
        if extract {
            for x in crate::conversation::extract_entities(text, &[]) {
                let normal = normalize_name(&x.name);
                if by_name.contains_key(&normal) {
                    continue;
                }
                let e = ResolvedEntity {
                    id: ctxgraph_ontology::entity_id("concept", &x.name),
                    name: x.name.clone(),
                    via: "extracted".into(),
                };
                add(s, e, EXTRACTED_CONFIDENCE);
            }
        }
    }
    out.into_iter().map(|((s, _), (e, c))| (s, e, c)).collect()
}

/// `markdown` for `.md` and `.markdown` files, `text` otherwise.
pub fn format_for_path(path: &str) -> DocumentFormat {
    let lower = path.to_ascii_lowercase();
    if lower.ends_with(".md") || lower.ends_with(".markdown") {
        DocumentFormat::Markdown
    } else {
        DocumentFormat::Text
    }
}

/// A time as facts store it (see [`normalize_time`]), for `--as-of` and the like.
pub fn parse_time(s: &str) -> Option<String> {
    normalize_time(s)
}
