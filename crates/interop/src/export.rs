//! Writers of the graph: PROV-O ([`prov`]), Cypher ([`cypher`]) and GraphML ([`graphml`]).
//!
//! Each is a pure function of the schema and the nodes and edges it is given (already filtered
//! by the reader's principal), and writes them in the order given, so the same graph gives the
//! same bytes.

pub mod cypher;
pub mod graphml;
pub mod prov;

use ctxgraph_ontology::graph::{Edge, Node};

use crate::InteropError;

/// What every format's writer does: take the nodes, then the edges, one at a time, then close
/// the document; a caller streaming an export holds one writer of any format through it.
pub trait GraphWriter {
    /// A node's part of the document.
    fn node(&mut self, n: &Node) -> Result<(), InteropError>;
    /// An edge's part of the document.
    fn edge(&mut self, e: &Edge) -> Result<(), InteropError>;
    /// Close the document and flush it.
    fn end(&mut self) -> Result<(), InteropError>;
}

/// A JSON number as a float every format can write, or why not (at `at`).
pub(crate) fn finite(n: &serde_json::Number, at: &str) -> Result<f64, InteropError> {
    match n.as_f64() {
        Some(f) if f.is_finite() => Ok(f),
        _ => Err(InteropError::Unwritable {
            at: at.to_owned(),
            code: "export.number",
            message: format!("{n} is not a finite number"),
        }),
    }
}

/// Every node, then every edge, through `w`.
fn write_all(w: &mut dyn GraphWriter, nodes: &[Node], edges: &[Edge]) -> Result<(), InteropError> {
    for n in nodes {
        w.node(n)?;
    }
    for e in edges {
        w.edge(e)?;
    }
    Ok(())
}

/// The edge-free name of a node for formats with one id space: `Label:id`.
pub(crate) fn node_name(key: &ctxgraph_ontology::graph::NodeKey) -> String {
    format!("{}:{}", key.label, key.id)
}

/// `s` percent-encoded except for the unreserved characters of RFC 3986, so that it can sit in
/// an IRI whatever it holds.
pub(crate) fn pct(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
