//! A Cypher script that recreates the graph in an empty FalkorDB or Neo4j graph.
//!
//! One statement per line, each ending with `;`, written as nodes and edges are given: first an index on every node type's key
//! property, generated from the schema modules (`CREATE INDEX FOR (n:Label) ON (n.key)`, which
//! both accept; uniqueness constraints are not Cypher in FalkorDB, and the export never holds
//! two nodes with one key), then one `CREATE` per node and one `MATCH ... CREATE` per edge,
//! with every value written as a literal: no parameters, so the script runs as it is. Strings
//! escape quotes, backslashes and control characters, so no line break ever ends up inside a
//! statement; JSON values (payloads) are stored as their JSON text.

use std::io::Write;

use ctxgraph_ontology::Schema;
use ctxgraph_ontology::graph::{Edge, Node, NodeKey, Properties};
use serde_json::Value;

use crate::InteropError;

/// The key property of a label: the schema's, or `id` for a label it does not declare.
fn key_property<'s>(schema: &'s Schema, label: &str) -> &'s str {
    schema.node_type(label).map_or("id", |t| t.key.as_str())
}

/// The index DDL for every node type of the schema, one statement per line.
pub fn ddl(schema: &Schema) -> String {
    let mut out = String::new();
    for (label, ty) in schema.node_types() {
        out.push_str(&format!("CREATE INDEX FOR (n:{}) ON (n.{});\n", name(label), name(&ty.key)));
    }
    out
}

/// Writes the script as nodes and edges are given, holding nothing: an export of any size
/// streams through it.
pub struct Writer<'s, W: Write> {
    schema: &'s Schema,
    out: W,
}

impl<'s, W: Write> Writer<'s, W> {
    /// Start the script: a comment line, then [`ddl`].
    pub fn new(schema: &'s Schema, mut out: W) -> Result<Self, InteropError> {
        writeln!(
            out,
            "// ctxgraph export: indexes, then nodes, then edges; one statement per line."
        )?;
        out.write_all(ddl(schema).as_bytes())?;
        Ok(Writer { schema, out })
    }

    /// End the script and give the output back.
    pub fn finish(mut self) -> Result<W, InteropError> {
        super::GraphWriter::end(&mut self)?;
        Ok(self.out)
    }
}

impl<W: Write> super::GraphWriter for Writer<'_, W> {
    /// One `CREATE` of a node.
    fn node(&mut self, n: &Node) -> Result<(), InteropError> {
        let mut props = n.props.clone();
        // The key is always there, even for a node whose stored properties lack it.
        props
            .entry(key_property(self.schema, &n.key.label).to_owned())
            .or_insert_with(|| Value::String(n.key.id.clone()));
        props.remove("embedding");
        let line =
            format!("CREATE (:{} {});", name(&n.key.label), map(&props, &n.key.to_string())?);
        writeln!(self.out, "{line}")?;
        Ok(())
    }

    /// One `MATCH ... CREATE` of an edge between two nodes created before.
    fn edge(&mut self, e: &Edge) -> Result<(), InteropError> {
        let at = e.key.to_string();
        let props =
            if e.props.is_empty() { String::new() } else { format!(" {}", map(&e.props, &at)?) };
        writeln!(
            self.out,
            "MATCH (a{}), (b{}) CREATE (a)-[:{}{props}]->(b);",
            pattern(self.schema, &e.key.from),
            pattern(self.schema, &e.key.to),
            name(&e.key.edge_type),
        )?;
        Ok(())
    }

    fn end(&mut self) -> Result<(), InteropError> {
        self.out.flush()?;
        Ok(())
    }
}

/// The whole script for these nodes and edges, as a string (for small graphs and tests).
pub fn script(schema: &Schema, nodes: &[Node], edges: &[Edge]) -> Result<String, InteropError> {
    let mut w = Writer::new(schema, Vec::new())?;
    super::write_all(&mut w, nodes, edges)?;
    Ok(String::from_utf8_lossy(&w.finish()?).into_owned())
}

/// `:Label {key: 'id'}`.
fn pattern(schema: &Schema, key: &NodeKey) -> String {
    format!(
        ":{} {{{}: {}}}",
        name(&key.label),
        name(key_property(schema, &key.label)),
        string(&key.id)
    )
}

/// A label, type or property name: as it is when it is a plain identifier, else in backticks.
pub fn name(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain { s.to_owned() } else { format!("`{}`", s.replace('`', "``")) }
}

/// A map literal of properties (nulls left out).
fn map(props: &Properties, at: &str) -> Result<String, InteropError> {
    let mut parts = Vec::new();
    for (k, v) in props {
        if v.is_null() {
            continue;
        }
        parts.push(format!("{}: {}", name(k), literal(v, &format!("{at} {k}"))?));
    }
    Ok(format!("{{{}}}", parts.join(", ")))
}

/// A value as a Cypher literal: scalars and lists of scalars as themselves, anything nested as
/// its JSON text.
pub fn literal(v: &Value, at: &str) -> Result<String, InteropError> {
    Ok(match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_i64() => n.to_string(),
        Value::Number(n) if n.is_u64() => string(&n.to_string()),
        Value::Number(n) => {
            let f = super::finite(n, at)?;
            // `{:?}` always writes a float as one (`1.0`, `1e-7`).
            format!("{f:?}")
        }
        Value::String(s) => string(s),
        Value::Array(items)
            if items.iter().all(|i| !i.is_array() && !i.is_object() && !i.is_null()) =>
        {
            let parts: Result<Vec<String>, InteropError> =
                items.iter().map(|i| literal(i, at)).collect();
            format!("[{}]", parts?.join(", "))
        }
        Value::Array(_) | Value::Object(_) => string(&v.to_string()),
    })
}

/// A single-quoted string literal.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxgraph_ontology::graph::EdgeKey;
    use serde_json::json;

    #[test]
    fn hostile_strings_stay_on_one_line_and_escaped() {
        assert_eq!(string("a'b\\c\nd\r\u{1}"), r"'a\'b\\c\nd\r\u0001'");
        assert_eq!(name("Event"), "Event");
        assert_eq!(name("weird `key`"), "`weird ``key```");
        let schema = Schema::core().unwrap();
        let key = NodeKey::new("Event", "e'1\\\n");
        let props: Properties = serde_json::from_value(
            json!({"payload": {"text": "x'y\nz"}, "score": 1.0, "tags": ["a'", "b"]}),
        )
        .unwrap();
        let n = Node { key: key.clone(), props };
        let e = Edge {
            key: EdgeKey {
                edge_type: "CAUSED_BY".into(),
                from: key.clone(),
                to: key,
                qualifier: "direct".into(),
            },
            props: serde_json::from_value(json!({"mechanism": "direct"})).unwrap(),
        };
        let s = script(&schema, &[n], &[e]).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines.iter().skip(1).all(|l| l.ends_with(';')), "{s}");
        assert!(s.contains("CREATE INDEX FOR (n:Event) ON (n.event_id);"));
        assert!(s.contains(r#"event_id: 'e\'1\\\n'"#), "{s}");
        assert!(s.contains(r#"payload: '{"text":"x\'y\\nz"}'"#), "{s}");
        assert!(s.contains("score: 1.0") && s.contains(r"tags: ['a\'', 'b']"), "{s}");
        assert!(s.contains(r"MATCH (a:Event {event_id: 'e\'1\\\n'}), (b:Event {event_id: 'e\'1\\\n'}) CREATE (a)-[:CAUSED_BY {mechanism: 'direct'}]->(b);"), "{s}");
    }
}
