//! Forgiving input: a caller's wording of an entity resolved to an existing entity at write time.
//!
//! Tiers, first hit wins (thresholds are the constants below and `resolve/names.rs`):
//! 1. **id**: the input is an existing entity's id (`user:alice`).
//! 2. **name**: an entity whose normalised name (NFKC, lower case, single spaces) equals the
//!    input's, of the given type or of any type; then **alias**: an entity with an
//!    `also_known_as` fact (not retracted) whose name equals the input's, normalised. An alias is
//!    a recorded claim with its sources and confidence, so it resolves like a name.
//! 3. **name forms** (the rules of entity resolution, `resolve/names.rs`): the same skeleton
//!    (letters and digits, ignoring case and punctuation: `read_file` = `ReadFile`), the same words
//!    in another order, or skeletons of at least six characters one letter edit apart; names whose
//!    digits differ never match.
//! 4. **embedding**: name cosine at least [`MIN_NAME_COSINE`] with the engine's embedder (the
//!    threshold of entity resolution tier 2), among at most [`MAX_EMBEDDED_CANDIDATES`] entities
//!    of the type (all types when none is given); larger sets skip this tier.
//! 5. **partial**: every word of the input is a word of a longer name (`Alice` finds `Alice
//!    Smith`), scored by the share of the name's words given (below the 1.0 of a whole name), so
//!    partial matches rank below exact ones; several are listed best first.
//!
//! A write never attaches a near spelling (`one_edit`, `embedding`) or a partial name silently:
//! see [`NEAR`] and `Engine::record_fact`.
//!
//! A tier that finds one entity resolves the input; a tier that finds several is an error listing
//! them (`fact.ambiguous_entity`), never a guess. No match creates the entity when the caller
//! gave its type (`via = created`), and is an error (`fact.unknown_entity`) otherwise.

use ctxgraph_embed::Embedder;
use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_ontology::{ResolvedEntity, Schema, Violation, entity_id, normalize_name};
use ctxgraph_store::GraphReader;
use serde_json::Value;

use crate::error::Error;
use crate::resolve::names::{Match, NameForms, compare};

/// Least name cosine for the embedding tier (seed 000's close-match threshold).
pub const MIN_NAME_COSINE: f32 = 0.9;
/// The embedding tier embeds at most this many candidate names per resolution.
pub const MAX_EMBEDDED_CANDIDATES: usize = 5_000;
/// Nodes read per page.
const PAGE: usize = 2_000;

/// The tiers that find another name than the one given: a read may use them (and says so in
/// `via`), a write proposes the pair as a `SAME_AS` candidate instead of attaching to it.
pub(crate) const NEAR: [&str; 3] = ["one_edit", "embedding", "partial"];

/// An existing entity, as resolution and mention matching see it.
#[derive(Debug, Clone)]
pub(crate) struct KnownEntity {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) entity_type: String,
}

/// A candidate entity for a name, with how it matched and how well.
#[derive(Debug, Clone, PartialEq)]
pub struct NameCandidate {
    /// Entity id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// How it matched (a value of the `via` enum).
    pub via: &'static str,
    /// Match score in [0, 1] (1 for id and name matches).
    pub score: f64,
}

/// The outcome of resolving one name.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// One entity (existing, or to be created when `via` is `created`).
    Resolved(ResolvedEntity, f64),
    /// No entity, and no type to create one with.
    Unknown,
    /// Several entities at the first tier that matched.
    Ambiguous(Vec<NameCandidate>),
}

/// Every Entity node (id order).
pub(crate) fn load_entities(graph: &dyn GraphReader) -> Result<Vec<KnownEntity>, Error> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = graph.nodes_by_label("Entity", after.as_deref(), PAGE)?;
        let Some(last) = page.last().map(|n| n.key.id.clone()) else { break };
        for node in page {
            let text = |p: &str| node.props.get(p).and_then(Value::as_str).map(str::to_owned);
            out.push(KnownEntity {
                name: text("name").unwrap_or_else(|| node.key.id.clone()),
                entity_type: text("entity_type").unwrap_or_default(),
                id: node.key.id,
            });
        }
        after = Some(last);
    }
    Ok(out)
}

/// The entities (of `entity_type`, when given) that an `also_known_as` fact, not retracted, names
/// `name` (normalised), in id order.
fn aliases(
    graph: &dyn GraphReader,
    name: &str,
    entity_type: Option<&str>,
) -> Result<Vec<KnownEntity>, Error> {
    let wanted = normalize_name(name);
    let mut ids: Vec<String> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = graph.nodes_by_label("Fact", after.as_deref(), PAGE)?;
        let Some(last) = page.last().map(|n| n.key.id.clone()) else { break };
        for node in &page {
            let text = |p: &str| node.props.get(p).and_then(Value::as_str);
            if text("predicate") != Some(ALIAS_PREDICATE) || text("retracted_at").is_some() {
                continue;
            }
            let alias = text("literal")
                .and_then(|l| serde_json::from_str::<Value>(l).ok())
                .and_then(|v| v.as_str().map(normalize_name));
            if alias.as_deref() == Some(wanted.as_str())
                && let Some(subject) = text("subject")
            {
                ids.push(subject.to_owned());
            }
        }
        after = Some(last);
        if page.len() < PAGE {
            break;
        }
    }
    ids.sort();
    ids.dedup();
    let mut out = Vec::new();
    for id in ids {
        let Some(node) = graph.node(&NodeKey::new("Entity", &id))? else { continue };
        let text = |p: &str| node.props.get(p).and_then(Value::as_str).map(str::to_owned);
        let e = KnownEntity {
            name: text("name").unwrap_or_else(|| id.clone()),
            entity_type: text("entity_type").unwrap_or_default(),
            id,
        };
        if entity_type.is_none_or(|t| e.entity_type == t) {
            out.push(e);
        }
    }
    Ok(out)
}

/// The predicate of an alias fact.
pub(crate) const ALIAS_PREDICATE: &str = "also_known_as";

fn resolved(e: &KnownEntity, via: &'static str) -> ResolvedEntity {
    ResolvedEntity { id: e.id.clone(), name: e.name.clone(), via: via.to_owned() }
}

/// Resolve `name` (of `entity_type`, already canonical, when given) against the graph.
pub(crate) fn resolve_name(
    graph: &dyn GraphReader,
    schema: &Schema,
    embedder: &dyn Embedder,
    name: &str,
    entity_type: Option<&str>,
) -> Result<Resolution, Error> {
    let name = name.trim();
    // 1. An entity id.
    if graph.node_exists(&NodeKey::new("Entity", name))? {
        let node = graph.node(&NodeKey::new("Entity", name))?;
        let display = node
            .as_ref()
            .and_then(|n| n.props.get("name").and_then(Value::as_str))
            .unwrap_or(name)
            .to_owned();
        let e = ResolvedEntity { id: name.to_owned(), name: display, via: "id".into() };
        return Ok(Resolution::Resolved(e, 1.0));
    }
    // 2. The normalised name, per type: point lookups, no scan.
    let types: Vec<String> = match entity_type {
        Some(t) => vec![t.to_owned()],
        None => schema
            .enum_def("entity_type")
            .map(|e| e.values.iter().map(|v| v.name.clone()).collect())
            .unwrap_or_default(),
    };
    let mut exact = Vec::new();
    for t in &types {
        let key = NodeKey::new("Entity", entity_id(t, name));
        if let Some(node) = graph.node(&key)? {
            let display = node.props.get("name").and_then(Value::as_str).unwrap_or(name).to_owned();
            exact.push(KnownEntity { id: key.id, name: display, entity_type: t.clone() });
        }
    }
    let mut via_exact = "name";
    if exact.is_empty() {
        exact = aliases(graph, name, entity_type)?;
        via_exact = "alias";
    }
    match exact.len() {
        0 => {}
        1 => return Ok(Resolution::Resolved(resolved(&exact[0], via_exact), 1.0)),
        _ => {
            let list = exact
                .iter()
                .map(|e| NameCandidate {
                    id: e.id.clone(),
                    name: e.name.clone(),
                    via: via_exact,
                    score: 1.0,
                })
                .collect();
            return Ok(Resolution::Ambiguous(list));
        }
    }
    // 3. Name forms.
    let pool: Vec<KnownEntity> = load_entities(graph)?
        .into_iter()
        .filter(|e| entity_type.is_none_or(|t| e.entity_type == t))
        .collect();
    let forms = NameForms::new(name);
    let mut found = Vec::new();
    for e in &pool {
        let other = NameForms::new(&e.name);
        // An impossible cosine threshold: this tier is the name rules alone.
        if let Some(Match::SameAs { confidence, .. }) = compare(&forms, &other, 0.0, 2.0) {
            let via = if !forms.skeleton.is_empty() && forms.skeleton == other.skeleton {
                "skeleton"
            } else if forms.words.len() >= 2 && forms.word_set == other.word_set {
                "word_order"
            } else {
                "one_edit"
            };
            found.push((e, via, confidence));
        }
    }
    // 4. Embeddings.
    if found.is_empty() && !pool.is_empty() && pool.len() <= MAX_EMBEDDED_CANDIDATES {
        let mut texts: Vec<&str> = vec![name];
        texts.extend(pool.iter().map(|e| e.name.as_str()));
        let vectors: Vec<Vec<f32>> = embedder.embed(&texts)?.into_iter().map(unit).collect();
        if let Some((query, rest)) = vectors.split_first() {
            for (e, v) in pool.iter().zip(rest) {
                let cosine: f32 = query.iter().zip(v).map(|(a, b)| a * b).sum();
                let other = NameForms::new(&e.name);
                if cosine >= MIN_NAME_COSINE
                    && let Some(Match::SameAs { .. }) =
                        compare(&forms, &other, cosine, MIN_NAME_COSINE)
                {
                    found.push((e, "embedding", (f64::from(cosine) * 1000.0).round() / 1000.0));
                }
            }
        }
    }
    // 5. Partial names.
    if found.is_empty() && !forms.words.is_empty() {
        let given: Vec<String> = normalize_name(name).split(' ').map(str::to_owned).collect();
        for e in &pool {
            let words: Vec<String> =
                normalize_name(&e.name).split(' ').map(str::to_owned).collect();
            if words.len() > given.len() && given.iter().all(|w| words.contains(w)) {
                let score = given.len() as f64 / words.len() as f64;
                found.push((e, "partial", (score * 1000.0).round() / 1000.0));
            }
        }
    }
    match found.len() {
        0 => {}
        1 => {
            let (e, via, score) = found[0];
            return Ok(Resolution::Resolved(resolved(e, via), score));
        }
        _ => {
            found.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.id.cmp(&b.0.id)));
            let list = found
                .into_iter()
                .map(|(e, via, score)| NameCandidate {
                    id: e.id.clone(),
                    name: e.name.clone(),
                    via,
                    score,
                })
                .collect();
            return Ok(Resolution::Ambiguous(list));
        }
    }
    Ok(match entity_type {
        Some(t) => Resolution::Resolved(
            ResolvedEntity { id: entity_id(t, name), name: name.to_owned(), via: "created".into() },
            1.0,
        ),
        None => Resolution::Unknown,
    })
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// The violation a failed resolution of the field at `path` reports, if it failed.
pub(crate) fn violation(
    path: &str,
    name: &str,
    r: &Resolution,
    type_flag: &str,
) -> Option<Violation> {
    match r {
        Resolution::Resolved(..) => None,
        Resolution::Unknown => Some(Violation::for_str(
            path,
            name,
            "fact.unknown_entity",
            format!("no entity matches this name; give its type ({type_flag}) to create it"),
        )),
        Resolution::Ambiguous(list) => {
            let shown = list
                .iter()
                .map(|c| format!("{} (\"{}\", {} {:.2})", c.id, c.name, c.via, c.score))
                .collect::<Vec<_>>()
                .join(", ");
            Some(Violation::for_str(
                path,
                name,
                "fact.ambiguous_entity",
                format!(
                    "matches several entities: {shown}; name one by its id or give its type ({type_flag})"
                ),
            ))
        }
    }
}

/// The canonical entity type for `raw` (aliases such as `person` accepted), or the violation.
pub(crate) fn entity_type(schema: &Schema, raw: &str, path: &str) -> Result<String, Violation> {
    let e = schema.enum_def("entity_type");
    match e.and_then(|e| e.canonical(raw.trim())) {
        Some(t) => Ok(t.to_owned()),
        None => {
            let values = e
                .map(|e| {
                    let mut v: Vec<&str> = e.values.iter().map(|v| v.name.as_str()).collect();
                    v.extend(e.aliases.keys().map(String::as_str));
                    v.join(", ")
                })
                .unwrap_or_default();
            Err(Violation::for_str(
                path,
                raw,
                "schema.enum",
                format!("must be one of {values} (enum entity_type)"),
            ))
        }
    }
}

/// Whether `name` is usable as an entity name: 1 to `max` bytes after trimming, no control
/// characters.
pub(crate) fn check_name(name: &str, max: usize, path: &str) -> Option<Violation> {
    let t = name.trim();
    (t.is_empty() || t.len() > max || t.contains(char::is_control) || normalize_name(t).is_empty())
        .then(|| {
            Violation::for_str(
                path,
                name,
                "envelope.name_format",
                format!("entity names are 1 to {max} bytes of text without control characters"),
            )
        })
}
