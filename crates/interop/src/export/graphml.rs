//! GraphML (for Gephi, yEd, networkx): one directed graph, nodes named `Label:id`.
//!
//! Every property becomes a declared `<key>`, per domain (node or edge) and name, typed
//! `boolean`, `long` or `double` when every value of it is one, else `string`; lists and JSON
//! values are written as their JSON text. Nodes carry `label`, edges `edge_type`, and every edge
//! an id of its own, since one pair of nodes may have several edges (an event referencing one
//! entity in two roles). Characters XML 1.0 cannot hold are replaced by U+FFFD.

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::{Edge, Node, Properties};
use serde_json::Value;

use super::node_name;

/// The attribute types GraphML declares, from narrowest to widest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ty {
    Boolean,
    Long,
    Double,
    Text,
}

impl Ty {
    fn of(v: &Value) -> Ty {
        match v {
            Value::Bool(_) => Ty::Boolean,
            Value::Number(n) if n.is_i64() => Ty::Long,
            Value::Number(_) => Ty::Double,
            Value::Null | Value::String(_) | Value::Array(_) | Value::Object(_) => Ty::Text,
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

/// The attribute keys of one domain, with their types, in name order.
fn keys<'a>(all: impl Iterator<Item = &'a Properties>, fixed: &str) -> BTreeMap<String, Ty> {
    let mut out = BTreeMap::from([(fixed.to_owned(), Ty::Text)]);
    for props in all {
        for (k, v) in props {
            if v.is_null() || k == "embedding" {
                continue;
            }
            let t = Ty::of(v);
            out.entry(k.clone()).and_modify(|old| *old = old.join(t)).or_insert(t);
        }
    }
    out
}

/// The document.
pub fn document(nodes: &[Node], edges: &[Edge]) -> String {
    let node_keys = keys(nodes.iter().map(|n| &n.props), "label");
    let edge_keys = keys(edges.iter().map(|e| &e.props), "edge_type");
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\" \
         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
         xsi:schemaLocation=\"http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd\">\n",
    );
    let ids = |prefix: &str, keys: &BTreeMap<String, Ty>| -> BTreeMap<String, String> {
        keys.keys().enumerate().map(|(i, k)| (k.clone(), format!("{prefix}{i}"))).collect()
    };
    let (node_ids, edge_ids) = (ids("nk", &node_keys), ids("ek", &edge_keys));
    for (domain, keys, ids) in [("node", &node_keys, &node_ids), ("edge", &edge_keys, &edge_ids)] {
        for (k, t) in keys {
            out.push_str(&format!(
                "  <key id=\"{}\" for=\"{domain}\" attr.name=\"{}\" attr.type=\"{}\"/>\n",
                ids[k],
                xml(k),
                t.name()
            ));
        }
    }
    out.push_str("  <graph id=\"ctxgraph\" edgedefault=\"directed\">\n");
    for n in nodes {
        out.push_str(&format!("    <node id=\"{}\">\n", xml(&node_name(&n.key))));
        data(&mut out, &node_ids, &node_keys, "label", &Value::String(n.key.label.clone()));
        for (k, v) in &n.props {
            data(&mut out, &node_ids, &node_keys, k, v);
        }
        out.push_str("    </node>\n");
    }
    for (i, e) in edges.iter().enumerate() {
        out.push_str(&format!(
            "    <edge id=\"r{i}\" source=\"{}\" target=\"{}\">\n",
            xml(&node_name(&e.key.from)),
            xml(&node_name(&e.key.to))
        ));
        data(&mut out, &edge_ids, &edge_keys, "edge_type", &Value::String(e.key.edge_type.clone()));
        for (k, v) in &e.props {
            data(&mut out, &edge_ids, &edge_keys, k, v);
        }
        out.push_str("    </edge>\n");
    }
    out.push_str("  </graph>\n</graphml>\n");
    out
}

fn data(
    out: &mut String,
    ids: &BTreeMap<String, String>,
    keys: &BTreeMap<String, Ty>,
    k: &str,
    v: &Value,
) {
    let (Some(id), Some(ty)) = (ids.get(k), keys.get(k)) else { return };
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
    fn types_widen_and_text_is_escaped() {
        let p = |v: Value| -> Properties { serde_json::from_value(v).unwrap() };
        let a = Node {
            key: NodeKey::new("Event", "a<&\"'\n\u{1}"),
            props: p(json!({"n": 1, "x": true, "t": "a<b"})),
        };
        let b = Node { key: NodeKey::new("Event", "b"), props: p(json!({"n": 1.5, "x": "yes"})) };
        let e = Edge {
            key: EdgeKey {
                edge_type: "CAUSED_BY".into(),
                from: a.key.clone(),
                to: b.key.clone(),
                qualifier: String::new(),
            },
            props: p(json!({"mechanism": "direct"})),
        };
        let doc = document(&[a, b], &[e]);
        assert!(doc.contains("attr.name=\"n\" attr.type=\"double\""), "{doc}");
        assert!(doc.contains("attr.name=\"x\" attr.type=\"string\""), "{doc}");
        assert!(doc.contains("<node id=\"Event:a&lt;&amp;&quot;&apos;&#10;\u{FFFD}\">"), "{doc}");
        assert!(doc.contains(">a&lt;b</data>"), "{doc}");
        assert!(
            doc.contains("source=\"Event:a&lt;&amp;&quot;&apos;&#10;\u{FFFD}\" target=\"Event:b\""),
            "{doc}"
        );
    }
}
