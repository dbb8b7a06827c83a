//! The effective schema: core module plus extension modules, merged additively, and the checks of
//! nodes and edges against it.
//!
//! The schema is data (TOML files, see `schema/core.toml`). Extensions may add node types, edge
//! types, properties, endpoints, enum values, aliases, event categories and event types. A
//! redeclaration that differs from what is already declared is a change and is refused; the format
//! has no way to express a removal.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::Value;

use crate::graph::{Edge, EdgeKey, Node, NodeKey, Properties};
use crate::schema_file::{
    EdgeTypeFile, EnumFile, EnumValueFile, EventTypeFile, NodeTypeFile, PredicateFile,
    PropertyFile, SchemaFile,
};
use crate::violation::Violation;

/// The core module text, shipped inside the binary.
pub const CORE_MODULE: &str = include_str!("../schema/core.toml");

/// The decision-memory module text (seed 003), shipped inside the binary and loaded with core.
pub const MEMORY_MODULE: &str = include_str!("../schema/memory.toml");

/// The slots module (types, slots, checklists and goals of seed 001), loaded with the core.
pub const SLOTS_MODULE: &str = include_str!("../schema/slots.toml");

/// The knowledge module text (facts, predicates, documents), shipped inside the binary.
pub const KNOWLEDGE_MODULE: &str = include_str!("../schema/knowledge.toml");
/// The decision-receipt module (seed 004): DecisionReceipt, Task, Actor, Policy,
/// PolicyException and their edges.
pub const RECEIPTS_MODULE: &str = include_str!("../schema/receipts.toml");

/// The modules every store loads, in order: core first, then the modules that extend it.
pub const BUILTIN_MODULES: &[&str] =
    &[CORE_MODULE, MEMORY_MODULE, SLOTS_MODULE, KNOWLEDGE_MODULE, RECEIPTS_MODULE];

/// The shape a property value must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropertyType {
    /// A JSON string.
    String,
    /// A JSON integer (i64).
    Integer,
    /// A JSON number.
    Float,
    /// A JSON boolean.
    Boolean,
    /// An RFC 3339 timestamp with an offset.
    ZonedDateTime,
    /// Any JSON object.
    Json,
    /// A list of strings.
    ListString,
    /// A list of numbers.
    ListFloat,
    /// A list of RFC 3339 timestamps.
    ListZonedDateTime,
}

impl PropertyType {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "string" => PropertyType::String,
            "integer" => PropertyType::Integer,
            "float" => PropertyType::Float,
            "boolean" => PropertyType::Boolean,
            "zoned_datetime" => PropertyType::ZonedDateTime,
            "json" => PropertyType::Json,
            "list<string>" => PropertyType::ListString,
            "list<float>" => PropertyType::ListFloat,
            "list<zoned_datetime>" => PropertyType::ListZonedDateTime,
            _ => return None,
        })
    }

    /// The name used in schema files.
    pub fn name(self) -> &'static str {
        match self {
            PropertyType::String => "string",
            PropertyType::Integer => "integer",
            PropertyType::Float => "float",
            PropertyType::Boolean => "boolean",
            PropertyType::ZonedDateTime => "zoned_datetime",
            PropertyType::Json => "json",
            PropertyType::ListString => "list<string>",
            PropertyType::ListFloat => "list<float>",
            PropertyType::ListZonedDateTime => "list<zoned_datetime>",
        }
    }

    /// The PG-Schema spelling, for display.
    fn pg_name(self) -> &'static str {
        match self {
            PropertyType::String => "STRING",
            PropertyType::Integer => "INTEGER",
            PropertyType::Float => "FLOAT",
            PropertyType::Boolean => "BOOLEAN",
            PropertyType::ZonedDateTime => "ZONED DATETIME",
            PropertyType::Json => "JSON",
            PropertyType::ListString => "LIST<STRING>",
            PropertyType::ListFloat => "LIST<FLOAT>",
            PropertyType::ListZonedDateTime => "LIST<ZONED DATETIME>",
        }
    }

    fn accepts_range(self) -> bool {
        matches!(self, PropertyType::Integer | PropertyType::Float)
    }
}

/// A declared property of a node or edge type.
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyDef {
    /// Value shape.
    pub ty: PropertyType,
    /// NOT NULL.
    pub required: bool,
    /// Inclusive lower bound (numbers only).
    pub min: Option<f64>,
    /// Inclusive upper bound (numbers only).
    pub max: Option<f64>,
    /// Name of the enum the value must belong to (strings only).
    pub enum_name: Option<String>,
    /// Value assumed when absent.
    pub default: Option<Value>,
    /// Module that declared it.
    pub module: String,
}

/// A declared node type.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeType {
    /// What it is.
    pub description: String,
    /// PROV-O class it maps to.
    pub prov: Option<String>,
    /// Name of the key property.
    pub key: String,
    /// Declared properties.
    pub properties: BTreeMap<String, PropertyDef>,
    /// Module that declared it.
    pub module: String,
}

/// A declared edge type.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeType {
    /// What it is.
    pub description: String,
    /// PROV-O (or project) term it maps to.
    pub prov: Option<String>,
    /// Allowed (source label, target label) pairs.
    pub endpoints: Vec<(String, String)>,
    /// Declared properties.
    pub properties: BTreeMap<String, PropertyDef>,
    /// Properties whose values are part of the edge identity.
    pub identity: Vec<String>,
    /// Whether only the projection may create it (records may not).
    pub derived: bool,
    /// Module that declared it.
    pub module: String,
}

/// One value of an enum, with its place in the ontology.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumValue {
    /// The value.
    pub name: String,
    /// Ontology class, e.g. `cg:ToolEntity`.
    pub class: Option<String>,
    /// Parent class in a two-level hierarchy, e.g. `prov:Agent`.
    pub parent: Option<String>,
    /// PROV-O term used on export.
    pub prov: Option<String>,
    /// Module that declared it.
    pub module: String,
}

/// A declared enum with its accepted aliases.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumDef {
    /// What it is.
    pub description: String,
    /// Allowed values, in declaration order.
    pub values: Vec<EnumValue>,
    /// Old or alternative names accepted on input, mapped to the value stored.
    pub aliases: BTreeMap<String, String>,
}

impl EnumDef {
    /// The stored value for `input`: the value itself, or the value an alias maps to.
    pub fn canonical<'a>(&'a self, input: &str) -> Option<&'a str> {
        if let Some(v) = self.values.iter().find(|v| v.name == input) {
            return Some(&v.name);
        }
        self.aliases.get(input).map(String::as_str)
    }

    fn value_list(&self) -> String {
        self.values.iter().map(|v| v.name.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// What the object of a fact with a given predicate may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// An entity reference only.
    Entity,
    /// A literal (string, number, boolean) only.
    Literal,
    /// Either.
    Any,
}

impl ObjectKind {
    /// The name used in schema files: `entity`, `literal` or `any`.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Entity => "entity",
            ObjectKind::Literal => "literal",
            ObjectKind::Any => "any",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "entity" => Some(ObjectKind::Entity),
            "literal" => Some(ObjectKind::Literal),
            "any" => Some(ObjectKind::Any),
            _ => None,
        }
    }
}

/// A controlled fact predicate (seed 002's vocabulary plus extensions; seed 001's RelationType).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PredicateDef {
    /// What it means.
    pub description: String,
    /// A subject has at most one true object: a second one is a contradiction.
    pub single_valued: bool,
    /// What the object may be.
    pub object: ObjectKind,
    /// Module that declared it.
    pub module: String,
}

/// A declared event type of the taxonomy.
#[derive(Debug, Clone, PartialEq)]
pub struct EventTypeDef {
    /// Taxonomy class, e.g. `cg:ExecuteTool`.
    pub class: Option<String>,
    /// OpenTelemetry GenAI `gen_ai.operation.name`.
    pub otel: Option<String>,
    /// Module that declared it.
    pub module: String,
}

/// How an `event_type` string sits in the taxonomy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventClass {
    /// Level-1 category segment, e.g. `tool`.
    pub category: String,
    /// Level-1 class, e.g. `cg:ToolEvent`; `cg:EventType` for an undeclared category.
    pub category_class: String,
    /// Level-2 class, when the type is declared.
    pub class: Option<String>,
    /// Whether the full type is declared in the taxonomy.
    pub known: bool,
}

/// Why a schema module or extension was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The file is not valid TOML of the schema file format.
    #[error("schema file is not valid: {0}")]
    Syntax(String),
    /// The file parses but breaks schema rules (including additivity).
    #[error("schema module `{module}` refused:{}", render(.violations))]
    Rejected {
        /// Module name from the file.
        module: String,
        /// Every rule broken.
        violations: Vec<Violation>,
    },
}

impl SchemaError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            SchemaError::Syntax(_) => "schema.syntax",
            SchemaError::Rejected { violations, .. } => {
                violations.first().map_or("schema.rejected", |v| v.rule)
            }
        }
    }
}

fn render(violations: &[Violation]) -> String {
    violations.iter().fold(String::new(), |mut out, v| {
        let _ = write!(out, "\n  - {v}");
        out
    })
}

/// The effective schema: every loaded module merged.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    modules: Vec<String>,
    module_descriptions: BTreeMap<String, String>,
    node_types: BTreeMap<String, NodeType>,
    edge_types: BTreeMap<String, EdgeType>,
    enums: BTreeMap<String, EnumDef>,
    event_categories: BTreeMap<String, String>,
    event_types: BTreeMap<String, EventTypeDef>,
    predicates: BTreeMap<String, PredicateDef>,
}

impl Schema {
    /// The built-in modules, what a store starts with: the core and the modules loaded with it
    /// ([`BUILTIN_MODULES`]).
    pub fn core() -> Result<Schema, SchemaError> {
        BUILTIN_MODULES.iter().try_fold(Schema::empty(), |schema, module| schema.extend(module))
    }

    fn empty() -> Schema {
        Schema {
            modules: Vec::new(),
            module_descriptions: BTreeMap::new(),
            node_types: BTreeMap::new(),
            edge_types: BTreeMap::new(),
            enums: BTreeMap::new(),
            event_categories: BTreeMap::new(),
            event_types: BTreeMap::new(),
            predicates: BTreeMap::new(),
        }
    }

    /// This schema with the module in `text` merged in, or every reason it was refused.
    ///
    /// The receiver is unchanged either way.
    pub fn extend(&self, text: &str) -> Result<Schema, SchemaError> {
        let file: SchemaFile =
            toml::from_str(text).map_err(|e| SchemaError::Syntax(e.to_string()))?;
        let mut next = self.clone();
        let mut merge = Merge { module: file.module.clone(), violations: Vec::new() };
        merge.module_name(&next.modules);
        next.modules.push(file.module.clone());
        if let Some(d) = &file.description {
            next.module_descriptions.insert(file.module.clone(), d.clone());
        }
        // Enums first: properties name them.
        for (name, e) in &file.enums {
            merge.enum_def(&mut next.enums, name, e);
        }
        for (name, class) in &file.event_categories {
            merge.event_category(&mut next.event_categories, name, class);
        }
        for (name, t) in &file.node_types {
            merge.node_type(&mut next.node_types, &next.enums, name, t);
        }
        for (name, t) in &file.edge_types {
            merge.edge_type(&mut next, name, t);
        }
        for (name, t) in &file.event_types {
            merge.event_type(&mut next, name, t);
        }
        for (name, p) in &file.predicates {
            merge.predicate(&mut next.predicates, name, p);
        }
        if merge.violations.is_empty() {
            Ok(next)
        } else {
            Err(SchemaError::Rejected { module: file.module, violations: merge.violations })
        }
    }

    /// Names of the loaded modules, in load order.
    pub fn modules(&self) -> &[String] {
        &self.modules
    }

    /// A node type by label.
    pub fn node_type(&self, label: &str) -> Option<&NodeType> {
        self.node_types.get(label)
    }

    /// A fact predicate by name.
    pub fn predicate(&self, name: &str) -> Option<&PredicateDef> {
        self.predicates.get(name)
    }

    /// All fact predicates, by name.
    pub fn predicates(&self) -> &BTreeMap<String, PredicateDef> {
        &self.predicates
    }

    /// All node types, by label.
    pub fn node_types(&self) -> &BTreeMap<String, NodeType> {
        &self.node_types
    }

    /// The entity type of an entity id `{entity_type}:{name}`: the longest declared type the id
    /// starts with, followed by `:` (types may hold a `:` themselves; the name may be empty,
    /// which callers judge).
    pub fn entity_type_of<'s>(&'s self, id: &str) -> Option<&'s str> {
        self.enum_def("entity_type")?
            .values
            .iter()
            .map(|v| v.name.as_str())
            .filter(|t| id.len() > t.len() && id.starts_with(t) && id[t.len()..].starts_with(':'))
            .max_by_key(|t| t.len())
    }

    /// An edge type by name.
    pub fn edge_type(&self, name: &str) -> Option<&EdgeType> {
        self.edge_types.get(name)
    }

    /// All edge types, by name.
    pub fn edge_types(&self) -> &BTreeMap<String, EdgeType> {
        &self.edge_types
    }

    /// An enum by name.
    pub fn enum_def(&self, name: &str) -> Option<&EnumDef> {
        self.enums.get(name)
    }

    /// All enums, by name.
    pub fn enums(&self) -> &BTreeMap<String, EnumDef> {
        &self.enums
    }

    /// Declared event categories (first segment → level-1 class).
    pub fn event_categories(&self) -> &BTreeMap<String, String> {
        &self.event_categories
    }

    /// Declared event types.
    pub fn event_types(&self) -> &BTreeMap<String, EventTypeDef> {
        &self.event_types
    }

    /// Where a well-formed `event_type` sits in the taxonomy. Unknown types are classified by their
    /// category when it is declared: the taxonomy is additive, never restrictive.
    pub fn classify_event_type(&self, event_type: &str) -> EventClass {
        let category = event_type.split('.').next().unwrap_or(event_type).to_owned();
        let category_class = self
            .event_categories
            .get(&category)
            .cloned()
            .unwrap_or_else(|| "cg:EventType".to_owned());
        let declared = self.event_types.get(event_type);
        EventClass {
            category,
            category_class,
            class: declared.and_then(|d| d.class.clone()),
            known: declared.is_some(),
        }
    }

    /// The ctxgraph `event_type` for an OpenTelemetry GenAI `gen_ai.operation.name`.
    pub fn event_type_for_otel(&self, operation: &str) -> Option<&str> {
        self.event_types
            .iter()
            .find(|(_, d)| d.otel.as_deref() == Some(operation))
            .map(|(name, _)| name.as_str())
    }

    /// The OpenTelemetry GenAI operation name of an `event_type`, if it has one.
    pub fn otel_for_event_type(&self, event_type: &str) -> Option<&str> {
        self.event_types.get(event_type).and_then(|d| d.otel.as_deref())
    }

    /// Every way `node` breaks the schema: unknown label, missing required or unknown properties,
    /// wrong types, enum values and ranges, key property disagreeing with the key.
    pub fn check_node(&self, node: &Node) -> Vec<Violation> {
        let Some(nt) = self.node_types.get(&node.key.label) else {
            return vec![Violation::with_text(
                "label",
                Some(&node.key.label),
                "schema.unknown_node_type",
                format!("node type is not declared; declared: {}", self.node_type_list()),
            )];
        };
        let mut out = self.check_properties(&nt.properties, &node.props, "");
        if node.props.get(&nt.key).and_then(Value::as_str) != Some(node.key.id.as_str()) {
            out.push(Violation::with_text(
                nt.key.clone(),
                Some(&node.key.id),
                "schema.key_mismatch",
                format!("key property `{}` must equal the node key", nt.key),
            ));
        }
        out
    }

    /// Every way `edge` breaks the schema, including illegal endpoint types.
    pub fn check_edge(&self, edge: &Edge) -> Vec<Violation> {
        let Some(et) = self.edge_types.get(&edge.key.edge_type) else {
            return vec![Violation::with_text(
                "edge_type",
                Some(&edge.key.edge_type),
                "schema.unknown_edge_type",
                format!("edge type is not declared; declared: {}", self.edge_type_list()),
            )];
        };
        let mut out = Vec::new();
        if let Some(v) = self.check_endpoints(&edge.key.edge_type, &edge.key.from, &edge.key.to) {
            out.push(v);
        }
        out.extend(self.check_properties(&et.properties, &edge.props, ""));
        let qualifier = Self::qualifier(et, &edge.props);
        if qualifier != edge.key.qualifier {
            out.push(Violation::with_text(
                "qualifier",
                Some(&edge.key.qualifier),
                "schema.key_mismatch",
                format!("edge qualifier must be the identity properties, `{qualifier}`"),
            ));
        }
        out
    }

    /// The endpoint violation of an edge of `edge_type` from `from` to `to`, if any.
    pub fn check_endpoints(
        &self,
        edge_type: &str,
        from: &NodeKey,
        to: &NodeKey,
    ) -> Option<Violation> {
        let et = self.edge_types.get(edge_type)?;
        if et.endpoints.iter().any(|(f, t)| *f == from.label && *t == to.label) {
            return None;
        }
        let allowed =
            et.endpoints.iter().map(|(f, t)| format!("{f} -> {t}")).collect::<Vec<_>>().join(" | ");
        Some(Violation::with_text(
            "endpoints",
            Some(&format!("{} -> {}", from.label, to.label)),
            "schema.edge_endpoints",
            format!("{edge_type} may only connect {allowed}"),
        ))
    }

    /// The edge key for an edge of a declared type, computed from its identity properties.
    pub fn edge_key(
        &self,
        edge_type: &str,
        from: NodeKey,
        to: NodeKey,
        props: &Properties,
    ) -> EdgeKey {
        let qualifier =
            self.edge_types.get(edge_type).map(|et| Self::qualifier(et, props)).unwrap_or_default();
        EdgeKey { edge_type: edge_type.to_owned(), from, to, qualifier }
    }

    fn qualifier(et: &EdgeType, props: &Properties) -> String {
        let value = |p: &String| match props.get(p) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        // Every edge the projection writes computes this twice (its key, then its check); the
        // core types have one identity property at most, whose value needs no joining.
        match et.identity.as_slice() {
            [] => String::new(),
            [one] => value(one),
            many => many.iter().map(value).collect::<Vec<_>>().join(","),
        }
    }

    /// Check `props` against declared `defs`. Paths are `prefix` + property name.
    ///
    /// One merge of the two name-ordered maps (it runs for every node and edge the projection
    /// writes, where a lookup per declared and per present property cost most of it): missing
    /// and checked properties in name order, then the undeclared ones.
    pub fn check_properties(
        &self,
        defs: &BTreeMap<String, PropertyDef>,
        props: &Properties,
        prefix: &str,
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        let missing = |name: &str, def: &PropertyDef| {
            Violation::new(
                format!("{prefix}{name}"),
                None,
                "schema.required_property",
                format!("required {} property is missing", def.ty.name()),
            )
        };
        let mut declared = defs.iter().peekable();
        let mut unknown = Vec::new();
        for (name, value) in props {
            while let Some((d, def)) = declared.next_if(|(d, _)| *d < name) {
                if def.required {
                    out.push(missing(d, def));
                }
            }
            match declared.next_if(|(d, _)| *d == name) {
                Some((_, def)) if value.is_null() => {
                    if def.required {
                        out.push(missing(name, def));
                    }
                }
                Some((_, def)) => self.check_value(def, value, prefix, name, &mut out),
                None => unknown.push((name, value)),
            }
        }
        for (d, def) in declared {
            if def.required {
                out.push(missing(d, def));
            }
        }
        for (name, value) in unknown {
            let declared = defs.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
            out.push(Violation::new(
                format!("{prefix}{name}"),
                Some(value),
                "schema.unknown_property",
                format!("property is not declared; declared: {declared}"),
            ));
        }
        out
    }

    /// Check one value; the path is only formatted when there is something to report, because
    /// this runs for every property of every projected node and edge.
    fn check_value(
        &self,
        def: &PropertyDef,
        value: &Value,
        prefix: &str,
        name: &str,
        out: &mut Vec<Violation>,
    ) {
        let path = || format!("{prefix}{name}");
        let type_ok = match def.ty {
            PropertyType::String => value.is_string(),
            PropertyType::Integer => value.is_i64() || value.is_u64(),
            PropertyType::Float => value.is_number(),
            PropertyType::Boolean => value.is_boolean(),
            PropertyType::ZonedDateTime => value.as_str().is_some_and(is_zoned_datetime),
            PropertyType::Json => value.is_object(),
            PropertyType::ListString => {
                value.as_array().is_some_and(|a| a.iter().all(Value::is_string))
            }
            PropertyType::ListFloat => {
                value.as_array().is_some_and(|a| a.iter().all(Value::is_number))
            }
            PropertyType::ListZonedDateTime => value
                .as_array()
                .is_some_and(|a| a.iter().all(|v| v.as_str().is_some_and(is_zoned_datetime))),
        };
        if !type_ok {
            out.push(Violation::new(
                path(),
                Some(value),
                "schema.property_type",
                format!("must be of type {}", def.ty.name()),
            ));
            return;
        }
        if let Some(n) = value.as_f64() {
            let below = def.min.is_some_and(|min| n < min);
            let above = def.max.is_some_and(|max| n > max);
            if below || above {
                out.push(Violation::new(
                    path(),
                    Some(value),
                    "schema.range",
                    format!("must be in [{}, {}]", fmt_bound(def.min), fmt_bound(def.max)),
                ));
            }
        }
        if let (Some(enum_name), Some(s)) = (&def.enum_name, value.as_str())
            && let Some(e) = self.enums.get(enum_name)
        {
            // Stored values are canonical: an alias is accepted on input only.
            if !e.values.iter().any(|v| v.name == s) {
                out.push(Violation::new(
                    path(),
                    Some(value),
                    "schema.enum",
                    format!("must be one of {} (enum {enum_name})", e.value_list()),
                ));
            }
        }
    }

    fn node_type_list(&self) -> String {
        self.node_types.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    fn edge_type_list(&self) -> String {
        self.edge_types.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// The effective schema in PG-Schema notation, with enums and the event taxonomy as comments.
    pub fn to_pg_schema(&self) -> String {
        let mut out = String::new();
        for m in &self.modules {
            let d = self.module_descriptions.get(m).map(String::as_str).unwrap_or("");
            let _ = writeln!(out, "// module {m}: {d}");
        }
        for (label, nt) in &self.node_types {
            let _ = writeln!(
                out,
                "\nCREATE NODE TYPE {label} (  // {}",
                nt.prov.as_deref().unwrap_or("-")
            );
            write_properties(&mut out, &nt.properties);
            let _ = writeln!(out, ")\nCREATE KEY {label} ({})", nt.key);
        }
        for (name, et) in &self.edge_types {
            let _ = writeln!(
                out,
                "\nCREATE EDGE TYPE {name} (  // {}",
                et.prov.as_deref().unwrap_or("-")
            );
            write_properties(&mut out, &et.properties);
            let ends = et
                .endpoints
                .iter()
                .map(|(f, t)| format!("FROM {f} TO {t}"))
                .collect::<Vec<_>>()
                .join("\n  | ");
            let _ = writeln!(out, ") {ends}");
        }
        for (name, e) in &self.enums {
            let _ = writeln!(out, "\n// enum {name}: {}", e.value_list());
            for v in &e.values {
                if let Some(parent) = &v.parent {
                    let class = v.class.as_deref().unwrap_or("-");
                    let _ = writeln!(out, "//   {parent} > {class} = {}", v.name);
                }
            }
            for (alias, target) in &e.aliases {
                let _ = writeln!(out, "//   accepted alias {alias} -> {target}");
            }
        }
        if !self.predicates.is_empty() {
            let _ = writeln!(
                out,
                "\n// fact predicates (object: entity, literal or any; * single-valued)"
            );
            for (name, p) in &self.predicates {
                let star = if p.single_valued { " *" } else { "" };
                let _ = writeln!(out, "//   {name}{star} : {}", p.object.as_str());
            }
        }
        let _ = writeln!(out, "\n// event taxonomy");
        for (cat, class) in &self.event_categories {
            let _ = writeln!(out, "//   {cat}.* : {class}");
            for (name, d) in
                self.event_types.iter().filter(|(n, _)| n.split('.').next() == Some(cat))
            {
                let otel = d.otel.as_deref().map(|o| format!("  (otel: {o})")).unwrap_or_default();
                let _ =
                    writeln!(out, "//     {name} : {}{otel}", d.class.as_deref().unwrap_or("-"));
            }
        }
        out
    }

    /// The effective schema as JSON, for scripts.
    pub fn to_json(&self) -> Value {
        let props = |defs: &BTreeMap<String, PropertyDef>| -> Value {
            defs.iter()
                .map(|(n, d)| {
                    let mut o = serde_json::Map::new();
                    o.insert("type".into(), d.ty.name().into());
                    o.insert("required".into(), d.required.into());
                    if let Some(m) = d.min {
                        o.insert("min".into(), m.into());
                    }
                    if let Some(m) = d.max {
                        o.insert("max".into(), m.into());
                    }
                    if let Some(e) = &d.enum_name {
                        o.insert("enum".into(), e.clone().into());
                    }
                    if let Some(v) = &d.default {
                        o.insert("default".into(), v.clone());
                    }
                    o.insert("module".into(), d.module.clone().into());
                    (n.clone(), Value::Object(o))
                })
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        serde_json::json!({
            "modules": self.modules.iter().map(|m| serde_json::json!({
                "name": m, "description": self.module_descriptions.get(m),
            })).collect::<Vec<_>>(),
            "node_types": self.node_types.iter().map(|(l, nt)| (l.clone(), serde_json::json!({
                "description": nt.description, "prov": nt.prov, "key": nt.key,
                "properties": props(&nt.properties), "module": nt.module,
            }))).collect::<serde_json::Map<_, _>>(),
            "edge_types": self.edge_types.iter().map(|(n, et)| (n.clone(), serde_json::json!({
                "description": et.description, "prov": et.prov,
                "endpoints": et.endpoints.iter().map(|(f, t)| serde_json::json!([f, t])).collect::<Vec<_>>(),
                "properties": props(&et.properties), "identity": et.identity,
                "derived": et.derived, "module": et.module,
            }))).collect::<serde_json::Map<_, _>>(),
            "enums": self.enums.iter().map(|(n, e)| (n.clone(), serde_json::json!({
                "description": e.description,
                "values": e.values.iter().map(|v| serde_json::json!({
                    "name": v.name, "class": v.class, "parent": v.parent, "prov": v.prov, "module": v.module,
                })).collect::<Vec<_>>(),
                "aliases": e.aliases,
            }))).collect::<serde_json::Map<_, _>>(),
            "event_categories": self.event_categories,
            "event_types": self.event_types.iter().map(|(n, d)| (n.clone(), serde_json::json!({
                "class": d.class, "otel": d.otel, "module": d.module,
            }))).collect::<serde_json::Map<_, _>>(),
            "predicates": self.predicates.iter().map(|(n, p)| (n.clone(), serde_json::json!({
                "description": p.description, "single_valued": p.single_valued,
                "object": p.object.as_str(), "module": p.module,
            }))).collect::<serde_json::Map<_, _>>(),
        })
    }
}

fn write_properties(out: &mut String, defs: &BTreeMap<String, PropertyDef>) {
    let n = defs.len();
    for (i, (name, d)) in defs.iter().enumerate() {
        let mut line = format!("  {name} {}", d.ty.pg_name());
        if d.required {
            line.push_str(" NOT NULL");
        }
        if let Some(v) = &d.default {
            let _ = write!(line, " DEFAULT {v}");
        }
        if i + 1 < n {
            line.push(',');
        }
        let mut notes = Vec::new();
        if d.min.is_some() || d.max.is_some() {
            notes.push(format!("range [{}, {}]", fmt_bound(d.min), fmt_bound(d.max)));
        }
        if let Some(e) = &d.enum_name {
            notes.push(format!("enum {e}"));
        }
        if !notes.is_empty() {
            let _ = write!(line, "  // {}", notes.join("; "));
        }
        let _ = writeln!(out, "{line}");
    }
}

fn fmt_bound(b: Option<f64>) -> String {
    b.map_or_else(|| "∞".to_owned(), |v| v.to_string())
}

/// Whether `s` is an RFC 3339 timestamp with an explicit offset.
pub fn is_zoned_datetime(s: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

fn is_identifier(s: &str, upper_first: bool) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else { return false };
    let first_ok =
        if upper_first { first.is_ascii_uppercase() } else { first.is_ascii_lowercase() };
    // PascalCase names may mix cases; snake_case names are lower case throughout.
    first_ok
        && chars.all(|c| {
            c == '_'
                || c.is_ascii_digit()
                || c.is_ascii_lowercase()
                || (upper_first && c.is_ascii_uppercase())
        })
}

/// Whether `s` is a well-formed dot-namespaced event type: two or more lower-case segments.
pub fn is_event_type(s: &str) -> bool {
    s.len() <= 128 && s.split('.').count() >= 2 && s.split('.').all(|seg| is_identifier(seg, false))
}

/// Accumulates the violations of one module merge.
struct Merge {
    module: String,
    violations: Vec<Violation>,
}

impl Merge {
    fn refuse(&mut self, path: String, value: Option<String>, rule: &'static str, message: String) {
        self.violations.push(Violation::with_text(path, value.as_deref(), rule, message));
    }

    fn changed(&mut self, path: String, owner: &str, what: &str) {
        self.refuse(
            path,
            None,
            "schema.additive_only",
            format!("{what} is already declared by module `{owner}`; an extension may add but not change or remove it"),
        );
    }

    fn module_name(&mut self, loaded: &[String]) {
        if !is_identifier(&self.module.replace('-', "_"), false) {
            self.refuse("module".into(), Some(self.module.clone()), "schema.name_format",
                "module name must be lower-case letters, digits, `_` or `-`, starting with a letter".into());
        }
        if loaded.contains(&self.module) {
            self.refuse(
                "module".into(),
                Some(self.module.clone()),
                "schema.duplicate_module",
                "a module with this name is already loaded".into(),
            );
        }
    }

    fn property(
        &mut self,
        path: &str,
        name: &str,
        p: &PropertyFile,
        enums: &BTreeMap<String, EnumDef>,
    ) -> Option<PropertyDef> {
        let mut ok = true;
        if !is_identifier(name, false) {
            self.refuse(
                path.into(),
                Some(name.into()),
                "schema.name_format",
                "property names are lower_snake_case".into(),
            );
            ok = false;
        }
        let ty = PropertyType::parse(&p.ty);
        if ty.is_none() {
            self.refuse(format!("{path}.type"), Some(p.ty.clone()), "schema.property_type",
                "unknown property type; one of string, integer, float, boolean, zoned_datetime, json, list<string>, list<float>, list<zoned_datetime>".into());
            ok = false;
        }
        if let Some(ty) = ty {
            if (p.min.is_some() || p.max.is_some()) && !ty.accepts_range() {
                self.refuse(
                    format!("{path}.min"),
                    None,
                    "schema.range",
                    format!("a range applies to integer and float properties, not {}", ty.name()),
                );
                ok = false;
            }
            if p.enum_name.is_some() && ty != PropertyType::String {
                self.refuse(
                    format!("{path}.enum"),
                    None,
                    "schema.enum",
                    "an enum applies to string properties only".into(),
                );
                ok = false;
            }
        }
        if let (Some(min), Some(max)) = (p.min, p.max)
            && min > max
        {
            self.refuse(
                format!("{path}.min"),
                Some(format!("{min} > {max}")),
                "schema.range",
                "min must not exceed max".into(),
            );
            ok = false;
        }
        if let Some(e) = &p.enum_name
            && !enums.contains_key(e)
        {
            self.refuse(
                format!("{path}.enum"),
                Some(e.clone()),
                "schema.unknown_enum",
                "enum is not declared".into(),
            );
            ok = false;
        }
        let default = match &p.default {
            None => None,
            Some(v) => match serde_json::to_value(v) {
                Ok(v) => Some(v),
                Err(e) => {
                    self.refuse(
                        format!("{path}.default"),
                        None,
                        "schema.property_type",
                        e.to_string(),
                    );
                    ok = false;
                    None
                }
            },
        };
        let ty = ty?;
        ok.then(|| PropertyDef {
            ty,
            required: p.required,
            min: p.min,
            max: p.max,
            enum_name: p.enum_name.clone(),
            default,
            module: self.module.clone(),
        })
    }

    /// Merge declared properties into `existing`: new ones must be optional, old ones unchanged.
    fn properties(
        &mut self,
        path: &str,
        existing: &mut BTreeMap<String, PropertyDef>,
        declared: &BTreeMap<String, PropertyFile>,
        enums: &BTreeMap<String, EnumDef>,
        type_is_new: bool,
    ) {
        for (name, p) in declared {
            let ppath = format!("{path}.properties.{name}");
            let Some(def) = self.property(&ppath, name, p, enums) else { continue };
            match existing.get(name) {
                Some(old) => {
                    let mut same = def.clone();
                    same.module = old.module.clone();
                    if same != *old {
                        let owner = old.module.clone();
                        self.changed(ppath, &owner, &format!("property `{name}`"));
                    }
                }
                None => {
                    if !type_is_new && def.required {
                        self.refuse(ppath, None, "schema.additive_only",
                            "a property added to an existing type must be optional: stored data does not have it".into());
                        continue;
                    }
                    existing.insert(name.clone(), def);
                }
            }
        }
    }

    fn node_type(
        &mut self,
        types: &mut BTreeMap<String, NodeType>,
        enums: &BTreeMap<String, EnumDef>,
        label: &str,
        t: &NodeTypeFile,
    ) {
        let path = format!("node_types.{label}");
        if let Some(old) = types.get_mut(label) {
            let owner = old.module.clone();
            if t.key.as_ref().is_some_and(|k| *k != old.key) {
                self.changed(format!("{path}.key"), &owner, "the key");
            }
            if t.description.as_ref().is_some_and(|d| *d != old.description) {
                self.changed(format!("{path}.description"), &owner, "the description");
            }
            if t.prov.is_some() && t.prov != old.prov {
                self.changed(format!("{path}.prov"), &owner, "the PROV-O mapping");
            }
            let mut props = old.properties.clone();
            self.properties(&path, &mut props, &t.properties, enums, false);
            old.properties = props;
            return;
        }
        if !is_identifier(label, true) {
            self.refuse(
                path.clone(),
                Some(label.into()),
                "schema.name_format",
                "node type names are PascalCase".into(),
            );
        }
        let Some(key) = t.key.clone() else {
            self.refuse(
                format!("{path}.key"),
                None,
                "schema.required_field",
                "a new node type must name its key property".into(),
            );
            return;
        };
        let mut props = BTreeMap::new();
        self.properties(&path, &mut props, &t.properties, enums, true);
        let key_ok = t.properties.get(&key).is_some_and(|p| p.ty == "string" && p.required);
        if !key_ok {
            self.refuse(
                format!("{path}.key"),
                Some(key.clone()),
                "schema.key",
                "the key must be a declared, required string property".into(),
            );
        }
        types.insert(
            label.to_owned(),
            NodeType {
                description: t.description.clone().unwrap_or_default(),
                prov: t.prov.clone(),
                key,
                properties: props,
                module: self.module.clone(),
            },
        );
    }

    fn edge_type(&mut self, schema: &mut Schema, name: &str, t: &EdgeTypeFile) {
        let path = format!("edge_types.{name}");
        for (i, (f, to)) in t.endpoints.iter().enumerate() {
            for end in [f, to] {
                if !schema.node_types.contains_key(end) {
                    self.refuse(
                        format!("{path}.endpoints[{i}]"),
                        Some(end.clone()),
                        "schema.unknown_node_type",
                        "endpoint node type is not declared".into(),
                    );
                }
            }
        }
        if let Some(old) = schema.edge_types.get_mut(name) {
            let owner = old.module.clone();
            if t.description.as_ref().is_some_and(|d| *d != old.description) {
                self.changed(format!("{path}.description"), &owner, "the description");
            }
            if t.prov.is_some() && t.prov != old.prov {
                self.changed(format!("{path}.prov"), &owner, "the PROV-O mapping");
            }
            if t.identity.as_ref().is_some_and(|i| *i != old.identity) {
                self.changed(format!("{path}.identity"), &owner, "the identity properties");
            }
            if t.derived.is_some_and(|d| d != old.derived) {
                self.changed(format!("{path}.derived"), &owner, "whether the edge is derived");
            }
            for pair in &t.endpoints {
                if !old.endpoints.contains(pair) {
                    old.endpoints.push(pair.clone());
                }
            }
            let mut props = old.properties.clone();
            self.properties(&path, &mut props, &t.properties, &schema.enums, false);
            old.properties = props;
            return;
        }
        if !name.chars().all(|c| c.is_ascii_uppercase() || c == '_') || name.is_empty() {
            self.refuse(
                path.clone(),
                Some(name.into()),
                "schema.name_format",
                "edge type names are UPPER_SNAKE_CASE".into(),
            );
        }
        if t.endpoints.is_empty() {
            self.refuse(
                format!("{path}.endpoints"),
                None,
                "schema.required_field",
                "a new edge type must declare its endpoints".into(),
            );
        }
        let mut props = BTreeMap::new();
        self.properties(&path, &mut props, &t.properties, &schema.enums, true);
        let identity = t.identity.clone().unwrap_or_default();
        for p in &identity {
            if !props.get(p).is_some_and(|d| d.required) {
                self.refuse(
                    format!("{path}.identity"),
                    Some(p.clone()),
                    "schema.key",
                    "identity properties must be declared and required".into(),
                );
            }
        }
        schema.edge_types.insert(
            name.to_owned(),
            EdgeType {
                description: t.description.clone().unwrap_or_default(),
                prov: t.prov.clone(),
                endpoints: t.endpoints.clone(),
                properties: props,
                identity,
                derived: t.derived.unwrap_or(false),
                module: self.module.clone(),
            },
        );
    }

    fn enum_def(&mut self, enums: &mut BTreeMap<String, EnumDef>, name: &str, e: &EnumFile) {
        let path = format!("enums.{name}");
        if !is_identifier(name, false) {
            self.refuse(
                path.clone(),
                Some(name.into()),
                "schema.name_format",
                "enum names are lower_snake_case".into(),
            );
        }
        let def = enums.entry(name.to_owned()).or_insert_with(|| EnumDef {
            description: e.description.clone().unwrap_or_default(),
            values: Vec::new(),
            aliases: BTreeMap::new(),
        });
        if e.description.as_ref().is_some_and(|d| *d != def.description) {
            self.changed(format!("{path}.description"), "an earlier module", "the description");
        }
        let mut seen = BTreeSet::new();
        for (i, v) in e.values.iter().enumerate() {
            let vpath = format!("{path}.values[{i}]");
            if v.name.is_empty() || v.name.chars().any(|c| c.is_whitespace() || c.is_control()) {
                self.refuse(
                    vpath.clone(),
                    Some(v.name.clone()),
                    "schema.name_format",
                    "enum values are non-empty and have no whitespace".into(),
                );
                continue;
            }
            if !seen.insert(v.name.clone()) {
                self.refuse(
                    vpath,
                    Some(v.name.clone()),
                    "schema.duplicate",
                    "value is listed twice".into(),
                );
                continue;
            }
            match def.values.iter().find(|old| old.name == v.name) {
                Some(old) => {
                    let same = EnumValueFile {
                        name: old.name.clone(),
                        class: old.class.clone(),
                        parent: old.parent.clone(),
                        prov: old.prov.clone(),
                    };
                    if same != *v {
                        let owner = old.module.clone();
                        self.changed(vpath, &owner, &format!("enum value `{}`", v.name));
                    }
                }
                None => def.values.push(EnumValue {
                    name: v.name.clone(),
                    class: v.class.clone(),
                    parent: v.parent.clone(),
                    prov: v.prov.clone(),
                    module: self.module.clone(),
                }),
            }
        }
        for (alias, target) in &e.aliases {
            let apath = format!("{path}.aliases.{alias}");
            if def.values.iter().any(|v| v.name == *alias) {
                self.refuse(
                    apath,
                    Some(alias.clone()),
                    "schema.duplicate",
                    "an alias may not shadow a value".into(),
                );
                continue;
            }
            if !def.values.iter().any(|v| v.name == *target) {
                self.refuse(
                    apath,
                    Some(target.clone()),
                    "schema.unknown_enum",
                    "alias target is not a value of the enum".into(),
                );
                continue;
            }
            match def.aliases.get(alias) {
                Some(old) if old != target => {
                    self.changed(apath, "an earlier module", &format!("alias `{alias}`"))
                }
                Some(_) => {}
                None => {
                    def.aliases.insert(alias.clone(), target.clone());
                }
            }
        }
    }

    fn event_category(&mut self, cats: &mut BTreeMap<String, String>, name: &str, class: &str) {
        let path = format!("event_categories.{name}");
        if !is_identifier(name, false) {
            self.refuse(
                path,
                Some(name.into()),
                "schema.name_format",
                "event categories are lower_snake_case".into(),
            );
            return;
        }
        match cats.get(name) {
            Some(old) if old != class => {
                self.changed(path, "an earlier module", &format!("category `{name}`"))
            }
            Some(_) => {}
            None => {
                cats.insert(name.to_owned(), class.to_owned());
            }
        }
    }

    fn predicate(
        &mut self,
        predicates: &mut BTreeMap<String, PredicateDef>,
        name: &str,
        p: &PredicateFile,
    ) {
        let path = format!("predicates.{name}");
        if !is_identifier(name, false) {
            self.refuse(
                path,
                Some(name.into()),
                "schema.name_format",
                "predicates are lower_snake_case".into(),
            );
            return;
        }
        let Some(object) = ObjectKind::parse(p.object.as_deref().unwrap_or("any")) else {
            self.refuse(
                format!("{path}.object"),
                p.object.clone(),
                "schema.enum",
                "must be one of entity, literal, any".into(),
            );
            return;
        };
        let def = PredicateDef {
            description: p.description.clone().unwrap_or_default(),
            single_valued: p.single_valued.unwrap_or(false),
            object,
            module: self.module.clone(),
        };
        match predicates.get(name) {
            Some(old) => {
                if (&old.description, old.single_valued, old.object)
                    != (&def.description, def.single_valued, def.object)
                {
                    let owner = old.module.clone();
                    self.changed(path, &owner, &format!("predicate `{name}`"));
                }
            }
            None => {
                predicates.insert(name.to_owned(), def);
            }
        }
    }

    fn event_type(&mut self, schema: &mut Schema, name: &str, t: &EventTypeFile) {
        let path = format!("event_types.{name}");
        if !is_event_type(name) {
            self.refuse(
                path,
                Some(name.into()),
                "envelope.event_type_format",
                "event types are two or more dot-separated lower_snake_case segments".into(),
            );
            return;
        }
        let category = name.split('.').next().unwrap_or(name);
        if !schema.event_categories.contains_key(category) {
            self.refuse(
                path.clone(),
                Some(category.into()),
                "schema.unknown_category",
                "the first segment must be a declared event category".into(),
            );
        }
        if let Some(op) = &t.otel
            && let Some(other) = schema.event_type_for_otel(op).filter(|o| *o != name)
        {
            let other = other.to_owned();
            self.refuse(
                format!("{path}.otel"),
                Some(op.clone()),
                "schema.duplicate",
                format!("OTel operation already maps to `{other}`"),
            );
        }
        match schema.event_types.get(name) {
            Some(old) => {
                if old.class != t.class || old.otel != t.otel {
                    let owner = old.module.clone();
                    self.changed(path, &owner, &format!("event type `{name}`"));
                }
            }
            None => {
                schema.event_types.insert(
                    name.to_owned(),
                    EventTypeDef {
                        class: t.class.clone(),
                        otel: t.otel.clone(),
                        module: self.module.clone(),
                    },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The core module alone: these tests are about it, not the modules loaded with it.
    fn core() -> Schema {
        Schema::empty().extend(CORE_MODULE).unwrap()
    }

    #[test]
    fn the_builtin_schema_loads_the_slots_module() {
        let s = Schema::core().unwrap();
        assert_eq!(s.modules(), ["core", "memory", "slots", "knowledge", "receipts"]);
        for label in ["Type", "SlotValue", "Checklist", "SlotSpec", "Goal"] {
            assert_eq!(s.node_type(label).unwrap().module, "slots", "{label}");
        }
        for edge in ["INSTANCE_OF", "HAS_SLOT", "REQUIRES", "GOAL_OF", "INFLUENCES"] {
            assert!(s.edge_type(edge).unwrap().derived, "{edge} is written by its records only");
        }
        assert_eq!(s.enum_def("cardinality").unwrap().canonical("MANY"), Some("many"));
    }

    #[test]
    fn the_receipts_module_loads_with_core_and_only_receipts_write_its_edges() {
        let s = Schema::core().unwrap();
        for label in ["DecisionReceipt", "Task", "Actor", "Policy", "PolicyException"] {
            assert_eq!(s.node_type(label).unwrap().module, "receipts", "{label}");
        }
        for edge in [
            "FOR_TASK",
            "ACTED_BY",
            "APPROVED_BY",
            "USED_INPUT",
            "CHECKED_POLICY",
            "INVOKED_EXCEPTION",
        ] {
            assert!(s.edge_type(edge).unwrap().derived, "{edge} is written by receipts only");
        }
        assert_eq!(s.enum_def("policy_result").unwrap().canonical("denied"), Some("deny"));
    }

    #[test]
    fn memory_module_loads_with_core_and_every_link_edge_is_derived() {
        let s = Schema::core().unwrap();
        assert_eq!(s.modules(), ["core", "memory", "slots", "knowledge", "receipts"]);
        for t in ["SUPERSEDES", "IMPLEMENTS", "OUTCOME_OF", "RELATES_TO", "TEMPORAL", "LINK_VOTE"] {
            assert!(s.edge_type(t).unwrap().derived, "{t} must be written by memory records only");
        }
        assert_eq!(s.enum_def("outcome").unwrap().canonical("failure"), Some("failed"));
        let link_types = &s.enum_def("link_type").unwrap().values;
        assert_eq!(link_types.len(), 5);
    }

    #[test]
    fn core_module_holds_the_seed_ontology() {
        let s = Schema::empty().extend(CORE_MODULE).unwrap();
        assert_eq!(s.node_types().keys().collect::<Vec<_>>(), ["Entity", "Event", "Summary"]);
        assert_eq!(
            s.edge_types().keys().collect::<Vec<_>>(),
            [
                "CAUSED_BY",
                "FOLLOWS",
                "REFERENCES",
                "RELATED_TO",
                "SAME_AS",
                "SIMILAR_TO",
                "SUMMARIZES"
            ]
        );
        // ctxgraph's additions for entity resolution: optional, so seed 000's edges stay valid.
        let same_as = s.edge_type("SAME_AS").unwrap();
        assert_eq!(same_as.properties["decision"].enum_name.as_deref(), Some("decision"));
        assert!(
            !same_as.properties["decision"].required && !same_as.properties["inferred"].required
        );
        assert!(!s.edge_type("RELATED_TO").unwrap().properties["inferred"].required);
        let decision = s.enum_def("decision").unwrap();
        assert_eq!(decision.canonical("merged"), Some("merged"));
        assert_eq!(decision.canonical("rejected"), Some("rejected"));
        let ev = s.node_type("Event").unwrap();
        assert!(ev.properties["global_position"].required);
        assert_eq!(ev.properties["importance_score"].min, Some(1.0));
        assert_eq!(ev.properties["importance_score"].max, Some(10.0));
        let role = s.enum_def("role").unwrap();
        assert_eq!(role.canonical("subject"), Some("agent"));
        assert_eq!(role.canonical("tool"), Some("instrument"));
        assert_eq!(role.canonical("target"), Some("result"));
        assert_eq!(role.canonical("object"), Some("object"));
        let et = s.enum_def("entity_type").unwrap();
        let service = et.values.iter().find(|v| v.name == "service").unwrap();
        assert_eq!(service.parent.as_deref(), Some("prov:Agent"));
        let tool = et.values.iter().find(|v| v.name == "tool").unwrap();
        assert_eq!(tool.parent.as_deref(), Some("prov:Entity"));
        assert_eq!(
            s.edge_type("SUMMARIZES").unwrap().endpoints,
            [
                ("Summary".to_owned(), "Event".to_owned()),
                ("Summary".to_owned(), "Summary".to_owned())
            ]
        );
    }

    #[test]
    fn otel_mapping_round_trips() {
        let s = core();
        for (op, et) in [
            ("invoke_agent", "agent.invoke"),
            ("create_agent", "agent.create"),
            ("execute_tool", "tool.execute"),
            ("chat", "llm.chat"),
            ("text_completion", "llm.completion"),
            ("embeddings", "llm.embed"),
            ("generate_content", "llm.generate"),
        ] {
            assert_eq!(s.event_type_for_otel(op), Some(et));
            assert_eq!(s.otel_for_event_type(et), Some(op));
        }
        assert_eq!(s.event_type_for_otel("unknown_op"), None);
    }

    #[test]
    fn unknown_event_types_are_classified_by_category() {
        let s = core();
        let c = s.classify_event_type("tool.retry");
        assert!(!c.known);
        assert_eq!(c.category_class, "cg:ToolEvent");
        let c = s.classify_event_type("tool.execute");
        assert!(c.known);
        assert_eq!(c.class.as_deref(), Some("cg:ExecuteTool"));
        assert_eq!(s.classify_event_type("billing.charge").category_class, "cg:EventType");
    }

    #[test]
    fn extension_adds_types_properties_and_values() {
        let ext = r#"
            module = "ops"
            [node_types.Event.properties]
            priority = { type = "integer", min = 0, max = 5 }
            [node_types.Ticket]
            key = "ticket_id"
            properties = { ticket_id = { type = "string", required = true } }
            [edge_types.TRACKS]
            endpoints = [["Ticket", "Event"]]
            [edge_types.REFERENCES]
            endpoints = [["Ticket", "Entity"]]
            [enums.entity_type]
            values = [{ name = "dataset", parent = "prov:Entity" }]
            [event_types]
            "tool.retry" = { class = "cg:RetryTool" }
        "#;
        let s = core().extend(ext).unwrap();
        assert!(s.node_type("Event").unwrap().properties.contains_key("priority"));
        assert!(s.node_type("Ticket").is_some());
        assert!(
            s.edge_type("REFERENCES")
                .unwrap()
                .endpoints
                .contains(&("Ticket".into(), "Entity".into()))
        );
        assert_eq!(s.enum_def("entity_type").unwrap().canonical("dataset"), Some("dataset"));
        assert!(s.classify_event_type("tool.retry").known);
        assert_eq!(s.modules(), ["core", "ops"]);
    }

    #[test]
    fn extension_that_changes_a_declaration_is_refused_by_name() {
        let ext = r#"
            module = "bad"
            [node_types.Event.properties]
            summary = { type = "integer" }
            [node_types.Entity]
            key = "name"
        "#;
        let err = core().extend(ext).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("node_types.Event.properties.summary"), "{text}");
        assert!(text.contains("already declared by module `core`"), "{text}");
        assert!(text.contains("node_types.Entity.key"), "{text}");
        assert_eq!(err.code(), "schema.additive_only");
    }

    #[test]
    fn extension_may_not_add_required_properties_to_existing_types() {
        let err = core()
            .extend("module = \"x\"\n[node_types.Entity.properties]\nowner = { type = \"string\", required = true }\n")
            .unwrap_err();
        assert!(err.to_string().contains("must be optional"), "{err}");
    }

    #[test]
    fn identical_redeclaration_is_not_a_change() {
        let ext =
            "module = \"same\"\n[node_types.Event.properties]\nsummary = { type = \"string\" }\n";
        assert!(core().extend(ext).is_ok());
    }

    #[test]
    fn unknown_keys_and_bad_toml_are_syntax_errors() {
        assert_eq!(
            core().extend("module = \"x\"\nremove = [\"Event\"]\n").unwrap_err().code(),
            "schema.syntax"
        );
        assert_eq!(core().extend("module = ").unwrap_err().code(), "schema.syntax");
    }

    #[test]
    fn qualifiers_join_every_identity_property_in_order() {
        let s = core()
            .extend(
                "module = \"q\"\n\
                 [edge_types.PAIRED]\n\
                 endpoints = [[\"Event\", \"Event\"]]\n\
                 identity = [\"kind\", \"rank\"]\n\
                 properties = { kind = { type = \"string\", required = true }, \
                 rank = { type = \"integer\", required = true } }\n",
            )
            .unwrap();
        let (from, to) = (NodeKey::new("Event", "e1"), NodeKey::new("Event", "e2"));
        let mut props = Properties::new();
        props.insert("kind".into(), "a,b".into());
        props.insert("rank".into(), 7.into());
        let key = s.edge_key("PAIRED", from.clone(), to.clone(), &props);
        assert_eq!(key.qualifier, "a,b,7");
        assert!(s.check_edge(&Edge { key, props: props.clone() }).is_empty());
        props.insert("mechanism".into(), "direct".into());
        assert_eq!(s.edge_key("CAUSED_BY", from.clone(), to.clone(), &props).qualifier, "direct");
        let mut score = Properties::new();
        score.insert("score".into(), 0.5.into());
        assert_eq!(s.edge_key("SIMILAR_TO", from, to, &score).qualifier, "");
    }

    #[test]
    fn edges_with_illegal_endpoints_are_named() {
        let s = core();
        let from = NodeKey::new("Entity", "tool:x");
        let to = NodeKey::new("Event", "e1");
        let mut props = Properties::new();
        props.insert("mechanism".into(), "direct".into());
        let key = s.edge_key("CAUSED_BY", from, to, &props);
        let v = s.check_edge(&Edge { key, props });
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].rule, "schema.edge_endpoints");
        assert!(v[0].message.contains("CAUSED_BY may only connect Event -> Event"));
    }

    #[test]
    fn node_property_checks_cover_type_range_enum_and_required() {
        let s = core();
        let mut props = Properties::new();
        props.insert("entity_id".into(), "tool:x".into());
        props.insert("entity_type".into(), "gadget".into());
        props.insert("first_seen".into(), "yesterday".into());
        props.insert("mention_count".into(), 0.into());
        props.insert("colour".into(), "red".into());
        let v = s.check_node(&Node { key: NodeKey::new("Entity", "tool:x"), props });
        let rules: Vec<_> = v.iter().map(|v| (v.path.as_str(), v.rule)).collect();
        assert!(rules.contains(&("entity_type", "schema.enum")));
        assert!(rules.contains(&("first_seen", "schema.property_type")));
        assert!(rules.contains(&("last_seen", "schema.required_property")));
        assert!(rules.contains(&("mention_count", "schema.range")));
        assert!(rules.contains(&("name", "schema.required_property")));
        assert!(rules.contains(&("colour", "schema.unknown_property")));
    }

    #[test]
    fn pg_schema_rendering_names_everything() {
        let text = core().to_pg_schema();
        assert!(text.contains("CREATE NODE TYPE Event"));
        assert!(text.contains("event_id STRING NOT NULL"));
        assert!(text.contains(") FROM Summary TO Event\n  | FROM Summary TO Summary"));
        assert!(text.contains("accepted alias subject -> agent"));
    }
}
