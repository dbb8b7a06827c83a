//! W3C PROV-O: the graph as RDF, written as Turtle or JSON-LD from one list of triples.
//!
//! The mapping is the schema's: every node type, edge type and enum value that names a PROV-O
//! (or SKOS, schema.org, Dublin Core) term in its `prov` or `class` field gives that term.
//! - A node is typed with `cg:<Label>`, its node type's `prov` class, the `class` and `prov`
//!   of each enum value it holds (an entity of type `agent` is a `prov:SoftwareAgent`), and an
//!   event with its event type's class and category. An enum value's `parent` is a type too,
//!   so an agent is both a `prov:SoftwareAgent` and a `prov:Agent`. Its properties become
//!   `cg:<property>` literals typed by the schema's property types; an activity's
//!   `occurred_at` or `requested_at` is also its `prov:startedAtTime`, a `committed_at` its
//!   `prov:endedAtTime`.
//! - An edge becomes `cg:<EDGE_TYPE>` plus its PROV-O property: the `prov` (else `class`) of
//!   the enum value it carries when there is one (a `REFERENCES` edge by its role: the agent as
//!   `prov:wasAssociatedWith`, the instrument as `prov:used`, the result as `prov:wasGeneratedBy`
//!   from the entity to the activity), otherwise its edge type's `prov` term. `CAUSED_BY` is
//!   thus `prov:wasInformedBy`, a fact's `HAS_SOURCE` `prov:wasDerivedFrom`, a receipt's
//!   `ACTED_BY` and `APPROVED_BY` `prov:wasAssociatedWith`.
//! - `prov:wasGeneratedBy` goes from the entity to the activity: an edge mapped to it from an
//!   activity is written the other way round.
//! - Every `prov:wasAssociatedWith` also gets its qualified form, a `prov:Association` with the
//!   `prov:agent` and a `prov:hadRole` (the role's class, or `cg:<EDGE_TYPE>`), so a receipt's
//!   approvers are told apart from its actor.
//! - A `SAME_AS` pair a person merged is also `prov:alternateOf`; one a person rejected asserts
//!   no match (only `cg:SAME_AS` with its decision is kept).
//! - Each session is a `prov:Bundle`; its events are `dcterms:isPartOf` it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use ctxgraph_ontology::graph::{Edge, Node, NodeKey};
use ctxgraph_ontology::{PropertyType, Schema};
use serde_json::{Map, Value, json};

use super::pct;
use crate::InteropError;

/// The prefixes the output declares, with their namespaces.
pub const PREFIXES: [(&str, &str); 8] = [
    ("prov", "http://www.w3.org/ns/prov#"),
    ("cg", "urn:ctxgraph:vocab#"),
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
    ("skos", "http://www.w3.org/2004/02/skos/core#"),
    ("schema", "http://schema.org/"),
    ("dcterms", "http://purl.org/dc/terms/"),
];

/// The IRI of a node: `urn:ctxgraph:node:<Label>:<id, percent-encoded>`.
pub fn node_iri(key: &NodeKey) -> String {
    format!("urn:ctxgraph:node:{}:{}", pct(&key.label), pct(&key.id))
}

/// The IRI of a session's bundle.
pub fn session_iri(session_id: &str) -> String {
    format!("urn:ctxgraph:session:{}", pct(session_id))
}

/// An RDF object: an IRI or a literal with an optional datatype IRI.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Object {
    /// A resource.
    Iri(String),
    /// A literal; `datatype` is a full IRI, `None` for a plain string.
    Literal {
        /// The lexical form.
        value: String,
        /// The datatype IRI.
        datatype: Option<String>,
    },
}

/// One statement, with full IRIs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Triple {
    /// Subject IRI.
    pub s: String,
    /// Predicate IRI.
    pub p: String,
    /// Object.
    pub o: Object,
}

/// A CURIE of the schema (`prov:used`) as a full IRI. A prefix the output does not declare
/// becomes `urn:ctxgraph:term:<curie>`, so an extension module's own vocabulary still exports.
pub fn expand(curie: &str) -> String {
    if let Some((prefix, local)) = curie.split_once(':')
        && let Some((_, ns)) = PREFIXES.iter().find(|(p, _)| *p == prefix)
    {
        return format!("{ns}{local}");
    }
    format!("urn:ctxgraph:term:{}", pct(curie))
}

/// A schema `prov` field that names one term (not a description such as "a | b, by role").
fn single_term(field: Option<&str>) -> Option<&str> {
    field.filter(|t| t.contains(':') && !t.contains(char::is_whitespace))
}

const PROV: &str = "http://www.w3.org/ns/prov#";
const XSD: &str = "http://www.w3.org/2001/XMLSchema#";
const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

/// Activity time properties and the PROV-O property each also gives.
const ACTIVITY_TIMES: [(&str, &str); 3] = [
    ("occurred_at", "startedAtTime"),
    ("requested_at", "startedAtTime"),
    ("committed_at", "endedAtTime"),
];

/// The statements for these nodes and edges, in a stable order, without duplicates.
pub fn triples(
    schema: &Schema,
    nodes: &[Node],
    edges: &[Edge],
) -> Result<Vec<Triple>, InteropError> {
    let mut out = BTreeSet::new();
    let mut sessions = BTreeSet::new();
    for node in nodes {
        out.extend(node_triples(schema, node, &mut sessions)?);
    }
    for edge in edges {
        out.extend(edge_triples(schema, edge));
    }
    Ok(out.into_iter().collect())
}

/// Whether nodes of `label` are activities (their node type's `prov` is `prov:Activity`).
fn is_activity(schema: &Schema, label: &str) -> bool {
    single_term(schema.node_type(label).and_then(|t| t.prov.as_deref())) == Some("prov:Activity")
}

/// A node's statements, and its session's bundle the first time `sessions` meets it.
pub fn node_triples(
    schema: &Schema,
    node: &Node,
    sessions: &mut BTreeSet<String>,
) -> Result<BTreeSet<Triple>, InteropError> {
    let mut out = BTreeSet::new();
    let iri = |s: &str| Object::Iri(s.to_owned());
    let s = node_iri(&node.key);
    let ty = schema.node_type(&node.key.label);
    let mut types = vec![format!("urn:ctxgraph:vocab#{}", pct(&node.key.label))];
    if let Some(t) = single_term(ty.and_then(|t| t.prov.as_deref())) {
        types.push(expand(t));
    }
    for (name, value) in &node.props {
        let def = ty.and_then(|t| t.properties.get(name));
        if let (Some(e), Some(v)) = (
            def.and_then(|d| d.enum_name.as_deref()).and_then(|e| schema.enum_def(e)),
            value.as_str(),
        ) && let Some(ev) = e.canonical(v).and_then(|c| e.values.iter().find(|x| x.name == c))
        {
            let terms = [ev.class.as_deref(), ev.parent.as_deref(), ev.prov.as_deref()];
            types.extend(terms.into_iter().flatten().map(expand));
        }
    }
    if node.key.label == "Event"
        && let Some(et) = node.props.get("event_type").and_then(Value::as_str)
    {
        let class = schema.classify_event_type(et);
        types.push(expand(&class.category_class));
        types.extend(class.class.as_deref().map(expand));
        if let Some(session) = node.props.get("session_id").and_then(Value::as_str) {
            let bundle = session_iri(session);
            if sessions.insert(session.to_owned()) {
                for class in ["Bundle", "Entity"] {
                    out.insert(Triple {
                        s: bundle.clone(),
                        p: RDF_TYPE.into(),
                        o: iri(&format!("{PROV}{class}")),
                    });
                }
                out.insert(Triple {
                    s: bundle.clone(),
                    p: expand("rdfs:label"),
                    o: plain(session),
                });
            }
            out.insert(Triple { s: s.clone(), p: expand("dcterms:isPartOf"), o: iri(&bundle) });
        }
    }
    let activity = is_activity(schema, &node.key.label);
    for t in types {
        out.insert(Triple { s: s.clone(), p: RDF_TYPE.into(), o: Object::Iri(t) });
    }
    if let Some(name) = node.props.get("name").and_then(Value::as_str) {
        out.insert(Triple { s: s.clone(), p: expand("rdfs:label"), o: plain(name) });
    }
    for (name, value) in &node.props {
        if name == "embedding" {
            continue;
        }
        let def_ty = ty.and_then(|t| t.properties.get(name)).map(|d| d.ty);
        let p = format!("urn:ctxgraph:vocab#{}", pct(name));
        for o in literals(value, def_ty, &format!("{} {name}", node.key))? {
            if activity && let Some((_, prov)) = ACTIVITY_TIMES.iter().find(|(k, _)| k == name) {
                out.insert(Triple { s: s.clone(), p: format!("{PROV}{prov}"), o: o.clone() });
            }
            out.insert(Triple { s: s.clone(), p: p.clone(), o });
        }
    }
    Ok(out)
}

fn plain(s: &str) -> Object {
    Object::Literal { value: s.to_owned(), datatype: None }
}

/// The PROV-O term an edge maps to, and the role it plays when it came from an enum value.
fn edge_term(schema: &Schema, edge: &Edge) -> (Option<String>, Option<String>) {
    let def = schema.edge_type(&edge.key.edge_type);
    for (name, value) in &edge.props {
        let Some(e) = def
            .and_then(|d| d.properties.get(name))
            .and_then(|p| p.enum_name.as_deref())
            .and_then(|e| schema.enum_def(e))
        else {
            continue;
        };
        let Some(v) = value.as_str().and_then(|v| e.canonical(v)) else { continue };
        if let Some(ev) = e.values.iter().find(|x| x.name == v) {
            let term = ev.prov.as_deref().or(ev.class.as_deref());
            if let Some(t) = term {
                return (Some(t.to_owned()), ev.class.clone());
            }
        }
    }
    (single_term(def.and_then(|d| d.prov.as_deref())).map(str::to_owned), None)
}

/// An edge's statements.
pub fn edge_triples(schema: &Schema, edge: &Edge) -> BTreeSet<Triple> {
    let mut out = BTreeSet::new();
    let (from, to) = (node_iri(&edge.key.from), node_iri(&edge.key.to));
    let ty = &edge.key.edge_type;
    out.insert(Triple {
        s: from.clone(),
        p: format!("urn:ctxgraph:vocab#{}", pct(ty)),
        o: Object::Iri(to.clone()),
    });
    let decision = edge.props.get("decision").and_then(Value::as_str);
    if ty == "SAME_AS" && decision == Some("rejected") {
        return out;
    }
    if ty == "SAME_AS" && decision == Some("merged") {
        out.insert(Triple {
            s: from.clone(),
            p: format!("{PROV}alternateOf"),
            o: Object::Iri(to.clone()),
        });
    }
    let (term, role) = edge_term(schema, edge);
    let Some(term) = term else { return out };
    let p = expand(&term);
    if p == format!("{PROV}wasGeneratedBy") && is_activity(schema, &edge.key.from.label) {
        out.insert(Triple { s: to, p, o: Object::Iri(from) });
        return out;
    }
    out.insert(Triple { s: from.clone(), p: p.clone(), o: Object::Iri(to.clone()) });
    if p == format!("{PROV}wasAssociatedWith") {
        let a = format!(
            "urn:ctxgraph:association:{}:{}:{}",
            pct(ty),
            pct(&super::node_name(&edge.key.from)),
            pct(&format!("{}#{}", super::node_name(&edge.key.to), edge.key.qualifier))
        );
        let role = role.map_or_else(|| format!("urn:ctxgraph:vocab#{}", pct(ty)), |r| expand(&r));
        for (p, o) in [
            (format!("{PROV}qualifiedAssociation"), None),
            (RDF_TYPE.to_owned(), Some(format!("{PROV}Association"))),
            (format!("{PROV}agent"), Some(to)),
            (format!("{PROV}hadRole"), Some(role)),
        ] {
            match o {
                None => out.insert(Triple { s: from.clone(), p, o: Object::Iri(a.clone()) }),
                Some(o) => out.insert(Triple { s: a.clone(), p, o: Object::Iri(o) }),
            };
        }
    }
    out
}

/// The literals of one property value, typed by the schema's property type.
fn literals(
    value: &Value,
    ty: Option<PropertyType>,
    at: &str,
) -> Result<Vec<Object>, InteropError> {
    let typed = |v: String, dt: Option<&str>| Object::Literal {
        value: v,
        datatype: dt.map(|d| format!("{XSD}{d}")),
    };
    Ok(match value {
        Value::Null => Vec::new(),
        Value::Bool(b) => vec![typed(b.to_string(), Some("boolean"))],
        Value::Number(n) => {
            if n.is_f64() {
                let f = super::finite(n, at)?;
                vec![typed(format!("{f:e}"), Some("double"))]
            } else {
                vec![typed(n.to_string(), Some("integer"))]
            }
        }
        Value::String(s) => {
            let dt = match ty {
                Some(PropertyType::ZonedDateTime | PropertyType::ListZonedDateTime) => {
                    Some("dateTime")
                }
                _ => None,
            };
            vec![typed(s.clone(), dt)]
        }
        Value::Array(items) if items.iter().all(|i| !i.is_array() && !i.is_object()) => {
            let mut out = Vec::new();
            for i in items {
                out.extend(literals(i, ty, at)?);
            }
            out
        }
        // Payloads and other JSON: the JSON text, as RDF 1.1's JSON datatype.
        Value::Array(_) | Value::Object(_) => vec![Object::Literal {
            value: value.to_string(),
            datatype: Some("http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON".to_owned()),
        }],
    })
}

/// The two RDF syntaxes written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// Turtle, one statement per line.
    Turtle,
    /// JSON-LD: a context of the prefixes and an `@graph` of node objects.
    JsonLd,
}

/// Writes the PROV-O statements of nodes and edges as they are given, holding only the ids of
/// the sessions met so far: an export of any size streams through it.
pub struct Writer<'s, W: Write> {
    schema: &'s Schema,
    out: W,
    syntax: Syntax,
    sessions: BTreeSet<String>,
    /// Whether a JSON-LD node object was written (the next one needs a comma).
    wrote: bool,
}

impl<'s, W: Write> Writer<'s, W> {
    /// Start a document: the prefixes (Turtle) or the context (JSON-LD).
    pub fn new(schema: &'s Schema, mut out: W, syntax: Syntax) -> Result<Self, InteropError> {
        match syntax {
            Syntax::Turtle => {
                for (p, ns) in PREFIXES {
                    writeln!(out, "@prefix {p}: <{ns}> .")?;
                }
                writeln!(out)?;
            }
            Syntax::JsonLd => {
                let context: Map<String, Value> = PREFIXES
                    .iter()
                    .map(|(p, ns)| ((*p).to_owned(), Value::String((*ns).to_owned())))
                    .collect();
                write!(out, "{{\"@context\": {},\n\"@graph\": [\n", Value::Object(context))?;
            }
        }
        Ok(Writer { schema, out, syntax, sessions: BTreeSet::new(), wrote: false })
    }

    /// End the document and give the output back.
    pub fn finish(mut self) -> Result<W, InteropError> {
        super::GraphWriter::end(&mut self)?;
        Ok(self.out)
    }

    fn write(&mut self, triples: &BTreeSet<Triple>) -> Result<(), InteropError> {
        match self.syntax {
            Syntax::Turtle => {
                for t in triples {
                    writeln!(self.out, "{}", turtle_line(t))?;
                }
            }
            // JSON-LD merges node objects with one `@id`, so a subject may come back later.
            Syntax::JsonLd => {
                for obj in node_objects(triples) {
                    if self.wrote {
                        writeln!(self.out, ",")?;
                    }
                    serde_json::to_writer(&mut self.out, &obj).map_err(std::io::Error::from)?;
                    self.wrote = true;
                }
            }
        }
        Ok(())
    }
}

impl<W: Write> super::GraphWriter for Writer<'_, W> {
    /// A node's statements.
    fn node(&mut self, node: &Node) -> Result<(), InteropError> {
        let ts = node_triples(self.schema, node, &mut self.sessions)?;
        self.write(&ts)
    }

    /// An edge's statements.
    fn edge(&mut self, edge: &Edge) -> Result<(), InteropError> {
        let ts = edge_triples(self.schema, edge);
        self.write(&ts)
    }

    fn end(&mut self) -> Result<(), InteropError> {
        if self.syntax == Syntax::JsonLd {
            writeln!(self.out, "\n]}}")?;
        }
        self.out.flush()?;
        Ok(())
    }
}

/// The whole document for these nodes and edges, as a string (for small graphs and tests).
pub fn document(
    schema: &Schema,
    nodes: &[Node],
    edges: &[Edge],
    syntax: Syntax,
) -> Result<String, InteropError> {
    let mut w = Writer::new(schema, Vec::new(), syntax)?;
    super::write_all(&mut w, nodes, edges)?;
    Ok(String::from_utf8_lossy(&w.finish()?).into_owned())
}

/// One Turtle statement.
fn turtle_line(t: &Triple) -> String {
    let o = match &t.o {
        Object::Iri(i) => term(i),
        Object::Literal { value, datatype } => {
            let lit = format!("\"{}\"", escape_turtle(value));
            match datatype {
                Some(dt) => format!("{lit}^^{}", term(dt)),
                None => lit,
            }
        }
    };
    let p = if t.p == RDF_TYPE { "a".to_owned() } else { term(&t.p) };
    format!("{} {p} {o} .", term(&t.s))
}

/// An IRI as a prefixed name when its local part is a plain name, else as `<iri>`.
fn term(iri: &str) -> String {
    for (p, ns) in PREFIXES {
        if let Some(local) = iri.strip_prefix(ns)
            && local.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && local.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return format!("{p}:{local}");
        }
    }
    // Node IRIs are percent-encoded, so only the characters IRIREF forbids need care here.
    let mut out = String::from("<");
    for c in iri.chars() {
        if c <= ' ' || matches!(c, '<' | '>' | '"' | '{' | '}' | '|' | '^' | '`' | '\\') {
            out.push_str(&format!("\\u{:04X}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out.push('>');
    out
}

/// A Turtle string's escapes (quotes, backslashes, line breaks, other control characters).
fn escape_turtle(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// JSON-LD node objects, one per subject of `triples`.
fn node_objects<'t>(triples: impl IntoIterator<Item = &'t Triple>) -> Vec<Value> {
    let mut subjects: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
    for t in triples {
        let obj = subjects.entry(&t.s).or_insert_with(|| {
            let mut m = Map::new();
            m.insert("@id".into(), Value::String(t.s.clone()));
            m
        });
        let (key, value) = match (&t.o, t.p == RDF_TYPE) {
            (Object::Iri(o), true) => ("@type".to_owned(), Value::String(o.clone())),
            (Object::Iri(i), false) => (t.p.clone(), json!({ "@id": i })),
            (Object::Literal { value, datatype: None }, _) => {
                (t.p.clone(), json!({ "@value": value }))
            }
            (Object::Literal { value, datatype: Some(dt) }, _) => {
                (t.p.clone(), json!({ "@value": value, "@type": dt }))
            }
        };
        match obj.get_mut(&key) {
            Some(Value::Array(items)) => items.push(value),
            _ => {
                obj.insert(key, Value::Array(vec![value]));
            }
        }
    }
    subjects.into_values().map(Value::Object).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxgraph_ontology::graph::{EdgeKey, Properties};

    fn node(label: &str, id: &str, props: Value) -> Node {
        let mut props: Properties = serde_json::from_value(props).unwrap_or_default();
        let key = Schema::core().unwrap().node_type(label).unwrap().key.clone();
        props.insert(key, Value::String(id.into()));
        Node { key: NodeKey::new(label, id), props }
    }

    fn edge(ty: &str, from: NodeKey, to: NodeKey, props: Value) -> Edge {
        let props: Properties = serde_json::from_value(props).unwrap_or_default();
        let qualifier = props.get("role").and_then(Value::as_str).unwrap_or("").to_owned();
        Edge { key: EdgeKey { edge_type: ty.into(), from, to, qualifier }, props }
    }

    fn has(ts: &[Triple], s: &str, p: &str, o: &str) -> bool {
        ts.iter().any(|t| t.s == s && t.p == expand(p) && t.o == Object::Iri(o.to_owned()))
    }

    #[test]
    fn the_schema_mapping_gives_the_prov_terms() {
        let schema = Schema::core().unwrap();
        let e1 = node(
            "Event",
            "e1",
            json!({"event_type": "tool.execute", "session_id": "s1", "occurred_at": "2026-01-01T00:00:00Z"}),
        );
        let e2 = node(
            "Event",
            "e2",
            json!({"event_type": "llm.chat", "session_id": "s1", "occurred_at": "2026-01-01T00:00:01Z"}),
        );
        let agent = node("Entity", "agent:a", json!({"name": "a", "entity_type": "agent"}));
        let tool = node("Entity", "tool:t", json!({"name": "t", "entity_type": "tool"}));
        let out = node("Entity", "resource:r", json!({"name": "r", "entity_type": "resource"}));
        let edges = vec![
            edge("CAUSED_BY", e2.key.clone(), e1.key.clone(), json!({"mechanism": "direct"})),
            edge("REFERENCES", e1.key.clone(), agent.key.clone(), json!({"role": "agent"})),
            edge("REFERENCES", e1.key.clone(), tool.key.clone(), json!({"role": "instrument"})),
            edge("REFERENCES", e1.key.clone(), out.key.clone(), json!({"role": "result"})),
        ];
        let nodes = vec![e1.clone(), e2.clone(), agent.clone(), tool.clone(), out.clone()];
        let ts = triples(&schema, &nodes, &edges).unwrap();
        let (i1, i2) = (node_iri(&e1.key), node_iri(&e2.key));
        assert!(has(&ts, &i2, "prov:wasInformedBy", &i1));
        assert!(has(&ts, &i1, "prov:wasAssociatedWith", &node_iri(&agent.key)));
        assert!(has(&ts, &i1, "prov:used", &node_iri(&tool.key)));
        // A result is generated by the activity: the statement runs from the entity.
        assert!(has(&ts, &node_iri(&out.key), "prov:wasGeneratedBy", &i1));
        assert!(has(&ts, &i1, "rdf:type", &expand("prov:Activity")));
        assert!(has(&ts, &node_iri(&agent.key), "rdf:type", &expand("prov:SoftwareAgent")));
        assert!(has(&ts, &node_iri(&agent.key), "rdf:type", &expand("prov:Agent")));
        assert!(has(&ts, &session_iri("s1"), "rdf:type", &expand("prov:Bundle")));
        assert!(has(&ts, &i1, "dcterms:isPartOf", &session_iri("s1")));
        let started = Object::Literal {
            value: "2026-01-01T00:00:00Z".into(),
            datatype: Some(format!("{XSD}dateTime")),
        };
        assert!(
            ts.iter().any(|t| t.s == i1 && t.p == expand("prov:startedAtTime") && t.o == started)
        );
    }

    #[test]
    fn facts_receipts_and_decided_pairs() {
        let schema = Schema::core().unwrap();
        let fact = node("Fact", "f1", json!({}));
        let sentence = node("Sentence", "s1", json!({}));
        let receipt =
            node("DecisionReceipt", "r1", json!({"committed_at": "2026-01-02T00:00:00Z"}));
        let (actor, approver) = (node("Actor", "dev", json!({})), node("Actor", "lead", json!({})));
        let a =
            node("Entity", "tool:read_file", json!({"name": "read_file", "entity_type": "tool"}));
        let b = node("Entity", "tool:readfile", json!({"name": "readfile", "entity_type": "tool"}));
        let c =
            node("Entity", "tool:write_file", json!({"name": "write_file", "entity_type": "tool"}));
        let edges = vec![
            edge("HAS_SOURCE", fact.key.clone(), sentence.key.clone(), json!({})),
            edge("ACTED_BY", receipt.key.clone(), actor.key.clone(), json!({})),
            edge("APPROVED_BY", receipt.key.clone(), approver.key.clone(), json!({})),
            edge(
                "SAME_AS",
                a.key.clone(),
                b.key.clone(),
                json!({"decision": "merged", "confidence": 1.0}),
            ),
            edge(
                "SAME_AS",
                a.key.clone(),
                c.key.clone(),
                json!({"decision": "rejected", "confidence": 0.0}),
            ),
        ];
        let nodes =
            [fact.clone(), sentence.clone(), receipt.clone(), actor.clone(), approver.clone()];
        let ts = triples(&schema, &nodes, &edges).unwrap();
        assert!(has(&ts, &node_iri(&fact.key), "prov:wasDerivedFrom", &node_iri(&sentence.key)));
        let r = node_iri(&receipt.key);
        assert!(has(&ts, &r, "prov:wasAssociatedWith", &node_iri(&approver.key)));
        // The approval is told apart from the action by its qualified association's role.
        let approval: Vec<&Triple> = ts
            .iter()
            .filter(|t| {
                t.p == expand("prov:hadRole")
                    && t.o == Object::Iri("urn:ctxgraph:vocab#APPROVED_BY".to_owned())
            })
            .collect();
        assert_eq!(approval.len(), 1, "{ts:#?}");
        assert!(has(&ts, &approval[0].s, "prov:agent", &node_iri(&approver.key)));
        assert!(has(&ts, &r, "prov:qualifiedAssociation", &approval[0].s));
        let ended = Object::Literal {
            value: "2026-01-02T00:00:00Z".into(),
            datatype: Some(format!("{XSD}dateTime")),
        };
        assert!(ts.iter().any(|t| t.s == r && t.p == expand("prov:endedAtTime") && t.o == ended));
        // A merged pair is an alternate; a rejected one asserts no match.
        assert!(has(&ts, &node_iri(&a.key), "prov:alternateOf", &node_iri(&b.key)));
        assert!(has(&ts, &node_iri(&a.key), "skos:closeMatch", &node_iri(&b.key)));
        assert!(!has(&ts, &node_iri(&a.key), "skos:closeMatch", &node_iri(&c.key)));
    }

    #[test]
    fn hostile_text_is_escaped() {
        let schema = Schema::core().unwrap();
        let id = "e\"1\\\n<x> ; .";
        let n = node(
            "Event",
            id,
            json!({"event_type": "llm.chat", "session_id": "s\"1", "occurred_at": "2026-01-01T00:00:00Z", "payload": {"text": "a\"b\\c\nd"}}),
        );
        let ttl = document(&schema, &[n], &[], Syntax::Turtle).unwrap();
        assert!(ttl.contains("urn:ctxgraph:node:Event:e%221%5C%0A%3Cx%3E%20%3B%20."), "{ttl}");
        assert!(ttl.contains(r#"\"text\":\"a\\\"b\\\\c\\nd\""#), "{ttl}");
        assert!(!ttl.lines().any(|l| !l.is_empty() && !l.ends_with(" .")), "{ttl}");
    }
}
