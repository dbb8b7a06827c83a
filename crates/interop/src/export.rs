//! Writers of the graph: PROV-O ([`prov`]), Cypher ([`cypher`]) and GraphML ([`graphml`]).
//!
//! Each is a pure function of the schema and the nodes and edges it is given (already filtered
//! by the reader's principal), and writes them in the order given, so the same graph gives the
//! same bytes.

pub mod cypher;
pub mod graphml;
pub mod prov;

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
