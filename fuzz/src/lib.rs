//! What the fuzz targets share: the core schema, built once per process.

use std::sync::OnceLock;

use ctxgraph_ontology::Schema;

/// The core schema, built once per process (a fuzz target runs many inputs in one process).
pub fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| match Schema::core() {
        Ok(s) => s,
        Err(e) => panic!("the core schema does not load: {e}"),
    })
}
