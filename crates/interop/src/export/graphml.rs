//! GraphML (for Gephi, yEd, networkx): one directed graph, nodes named `Label:id`.
//!
//! The attribute keys are declared from the schema before any node, so the document streams:
//! one key per domain (node or edge) and property name, typed `boolean`, `long` or `double`
//! when every node or edge type declaring it gives it that type, else `string` (lists, JSON
//! values and times are written as text, lists and JSON as their JSON text). Nodes carry
//! `label`, edges `edge_type`, and every edge an id of its own, since one pair of nodes may have
//! several edges (an event referencing one entity in two roles). Properties the schema does not
//! declare go together into one `undeclared` attribute, as a JSON object. Characters XML 1.0
//! cannot hold are replaced by U+FFFD.

use std::collections::BTreeMap;
use std::io::Write;

use ctxgraph_ontology::graph::{Edge, Node, Properties};
use ctxgraph_ontology::{PropertyDef, PropertyType, Schema};
use serde_json::Value;

use super::node_name;
use crate::InteropError;

/// The attribute holding properties the schema does not declare.
const UNDECLARED: &str = "undeclared";

/// The attribute types GraphML declares, from narrowest to widest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ty {
    Boolean,
    Long,
    Double,
    Text,
}

impl Ty {
    fn of(t: PropertyType) -> Ty {
        match t {
            PropertyType::Boolean => Ty::Boolean,
            PropertyType::Integer => Ty::Long,
            PropertyType::Float => Ty::Double,
            PropertyType::String
            | PropertyType::ZonedDateTime
            | PropertyType::Json
            | PropertyType::ListString
            | PropertyType::ListFloat
            | PropertyType::ListZonedDateTime => Ty::Text,
        }
    }

    /// The type that holds both: booleans mix with nothing, integers widen to doubles.
    fn join(self, other: Ty) -> Ty {
        match (self, other) {
            (a, b) if a == b => a,
            (Ty::Long, Ty::Double) | (Ty::Double, Ty::Long) => Ty::Double,
            _ => Ty::Text,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Ty::Boolean => "boolean",
            Ty::Long => "long",
            Ty::Double => "double",
            Ty::Text => "string",
        }
    }
}

/// The attributes of one domain: name → (key id, type).
type Keys = BTreeMap<String, (String, Ty)>;

/// The attributes declared by `defs`, with `fixed` and [`UNDECLARED`], ids `<prefix><n>`.
fn keys<'a>(
    defs: impl Iterator<Item = &'a BTreeMap<String, PropertyDef>>,
    fixed: &str,
    prefix: &str,
) -> Keys {
    let mut types =
        BTreeMap::from([(fixed.to_owned(), Ty::Text), (UNDECLARED.to_owned(), Ty::Text)]);
    for props in defs {
        for (k, def) in props {
            if k == "embedding" {
                continue;
            }
            let t = Ty::of(def.ty);
            types.entry(k.clone()).and_modify(|old: &mut Ty| *old = old.join(t)).or_insert(t);
        }
    }
    types.into_iter().enumerate().map(|(i, (k, t))| (k, (format!("{prefix}{i}"), t))).collect()
}

/// Writes the document as nodes and edges are given, holding only the key declarations.
pub struct Writer<W: Write> {
    out: W,
    node_keys: Keys,
    edge_keys: Keys,
    edges: u64,
}

impl<W: Write> Writer<W> {
    /// Start the document: the key declarations of the schema's properties, the graph element.
    pub fn new(schema: &Schema, mut out: W) -> Result<Self, InteropError> {
        let node_keys = keys(schema.node_types().values().map(|t| &t.properties), "label", "nk");
        let edge_keys =
            keys(schema.edge_types().values().map(|t| &t.properties), "edge_type", "ek");
        writeln!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\" \
             xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
             xsi:schemaLocation=\"http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd\">"
        )?;
        for (domain, keys) in [("node", &node_keys), ("edge", &edge_keys)] {
            for (k, (id, t)) in keys {
                writeln!(
                    out,
                    "  <key id=\"{id}\" for=\"{domain}\" attr.name=\"{}\" attr.type=\"{}\"/>",
                    xml(k),
                    t.name()
                )?;
            }
        }
        writeln!(out, "  <graph id=\"ctxgraph\" edgedefault=\"directed\">")?;
        Ok(Writer { out, node_keys, edge_keys, edges: 0 })
    }

    /// End the document and give the output back.
    pub fn finish(mut self) -> Result<W, InteropError> {
        super::GraphWriter::end(&mut self)?;
        Ok(self.out)
    }
}

impl<W: Write> super::GraphWriter for Writer<W> {
    /// One node element.
    fn node(&mut self, n: &Node) -> Result<(), InteropError> {
        let mut text = format!("    <node id=\"{}\">\n", xml(&node_name(&n.key)));
        data(&mut text, &self.node_keys, "label", &Value::String(n.key.label.clone()));
        attributes(&mut text, &self.node_keys, &n.props);
        text.push_str("    </node>\n");
        self.out.write_all(text.as_bytes())?;
        Ok(())
    }

    /// One edge element, with an id of its own.
    fn edge(&mut self, e: &Edge) -> Result<(), InteropError> {
        let mut text = format!(
            "    <edge id=\"r{}\" source=\"{}\" target=\"{}\">\n",
            self.edges,
            xml(&node_name(&e.key.from)),
            xml(&node_name(&e.key.to))
        );
        self.edges += 1;
        data(&mut text, &self.edge_keys, "edge_type", &Value::String(e.key.edge_type.clone()));
        attributes(&mut text, &self.edge_keys, &e.props);
        text.push_str("    </edge>\n");
        self.out.write_all(text.as_bytes())?;
        Ok(())
    }

    fn end(&mut self) -> Result<(), InteropError> {
        writeln!(self.out, "  </graph>\n</graphml>")?;
        self.out.flush()?;
        Ok(())
    }
}

/// The whole document for these nodes and edges, as a string (for small graphs and tests).
pub fn document(schema: &Schema, nodes: &[Node], edges: &[Edge]) -> Result<String, InteropError> {
    let mut w = Writer::new(schema, Vec::new())?;
    super::write_all(&mut w, nodes, edges)?;
    Ok(String::from_utf8_lossy(&w.finish()?).into_owned())
}

/// The declared properties as `data` elements, the others gathered in [`UNDECLARED`].
fn attributes(out: &mut String, keys: &Keys, props: &Properties) {
    let mut undeclared = serde_json::Map::new();
    for (k, v) in props {
        if k == "embedding" || v.is_null() {
            continue;
        }
        if keys.contains_key(k) && k != UNDECLARED {
            data(out, keys, k, v);
        } else {
            undeclared.insert(k.clone(), v.clone());
        }
    }
    if !undeclared.is_empty() {
        data(out, keys, UNDECLARED, &Value::String(Value::Object(undeclared).to_string()));
    }
}

fn data(out: &mut String, keys: &Keys, k: &str, v: &Value) {
    let Some((id, ty)) = keys.get(k) else { return };
    let text = match (ty, v) {
        (_, Value::Null) => return,
        (Ty::Text, Value::String(s)) => s.clone(),
        _ => v.to_string(),
    };
    out.push_str(&format!("      <data key=\"{id}\">{}</data>\n", xml(&text)));
}

/// Text or an attribute value, escaped for XML 1.0.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Line breaks and tabs in attribute values would be normalised to spaces.
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c < ' ') || matches!(c, '\u{FFFE}' | '\u{FFFF}') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxgraph_ontology::graph::{EdgeKey, NodeKey};
    use serde_json::json;

    #[test]
    fn keys_come_from_the_schema_and_text_is_escaped() {
        let schema = Schema::core().unwrap();
        let p = |v: Value| -> Properties { serde_json::from_value(v).unwrap() };
        let a = Node {
            key: NodeKey::new("Event", "a<&\"'\n\u{1}"),
            props: p(json!({"importance_score": 3, "payload": {"t": "a<b"}, "odd": true})),
        };
        let b = Node { key: NodeKey::new("Event", "b"), props: p(json!({"summary": "x"})) };
        let e = Edge {
            key: EdgeKey {
                edge_type: "SIMILAR_TO".into(),
                from: a.key.clone(),
                to: b.key.clone(),
                qualifier: String::new(),
            },
            props: p(json!({"score": 0.5})),
        };
        let doc = document(&schema, &[a, b], &[e]).unwrap();
        assert!(
            doc.contains("for=\"node\" attr.name=\"importance_score\" attr.type=\"long\""),
            "{doc}"
        );
        assert!(doc.contains("for=\"edge\" attr.name=\"score\" attr.type=\"double\""), "{doc}");
        assert!(doc.contains("for=\"node\" attr.name=\"payload\" attr.type=\"string\""), "{doc}");
        assert!(doc.contains("<node id=\"Event:a&lt;&amp;&quot;&apos;&#10;\u{FFFD}\">"), "{doc}");
        assert!(doc.contains(">{&quot;t&quot;:&quot;a&lt;b&quot;}</data>"), "{doc}");
        assert!(doc.contains(">{&quot;odd&quot;:true}</data>"), "the undeclared property: {doc}");
        assert!(
            doc.contains("source=\"Event:a&lt;&amp;&quot;&apos;&#10;\u{FFFD}\" target=\"Event:b\""),
            "{doc}"
        );
    }
}
