//! The TOML file format of schema modules and extension files, as parsed, before any checking.

use std::collections::BTreeMap;

use serde::Deserialize;

/// One schema module or extension file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SchemaFile {
    pub(crate) module: String,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) node_types: BTreeMap<String, NodeTypeFile>,
    #[serde(default)]
    pub(crate) edge_types: BTreeMap<String, EdgeTypeFile>,
    #[serde(default)]
    pub(crate) enums: BTreeMap<String, EnumFile>,
    #[serde(default)]
    pub(crate) event_categories: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) event_types: BTreeMap<String, EventTypeFile>,
    #[serde(default)]
    pub(crate) predicates: BTreeMap<String, PredicateFile>,
}

/// A fact predicate: `single_valued` defaults to false, `object` to `any`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PredicateFile {
    pub(crate) description: Option<String>,
    pub(crate) single_valued: Option<bool>,
    pub(crate) object: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NodeTypeFile {
    pub(crate) description: Option<String>,
    pub(crate) prov: Option<String>,
    pub(crate) key: Option<String>,
    #[serde(default)]
    pub(crate) properties: BTreeMap<String, PropertyFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EdgeTypeFile {
    pub(crate) description: Option<String>,
    pub(crate) prov: Option<String>,
    #[serde(default)]
    pub(crate) endpoints: Vec<(String, String)>,
    #[serde(default)]
    pub(crate) properties: BTreeMap<String, PropertyFile>,
    #[serde(default)]
    pub(crate) identity: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) derived: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct PropertyFile {
    #[serde(rename = "type")]
    pub(crate) ty: String,
    #[serde(default)]
    pub(crate) required: bool,
    pub(crate) min: Option<f64>,
    pub(crate) max: Option<f64>,
    #[serde(rename = "enum")]
    pub(crate) enum_name: Option<String>,
    pub(crate) default: Option<toml::Value>,
    pub(crate) description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnumFile {
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) values: Vec<EnumValueFile>,
    #[serde(default)]
    pub(crate) aliases: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnumValueFile {
    pub(crate) name: String,
    pub(crate) class: Option<String>,
    pub(crate) parent: Option<String>,
    pub(crate) prov: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventTypeFile {
    pub(crate) class: Option<String>,
    pub(crate) otel: Option<String>,
}
