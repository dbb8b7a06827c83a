//! Rendering for people (tables, one-line event descriptions) and for scripts (JSON).

use std::io::Write;
use std::sync::OnceLock;

use chrono::{DateTime, Local, SecondsFormat, Utc};
use comfy_table::{ContentArrangement, Table, presets::UTF8_BORDERS_ONLY};
use ctxgraph::{Edge, LogEntry, Node, NodeKey, Rejection, telling_text};
use serde_json::{Value, json};

/// Print a JSON value on stdout.
pub(crate) fn print_json(value: &Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// How output is rendered for people, set once from the global flags.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Style {
    /// Times in UTC (`--utc`) instead of the local time zone.
    pub(crate) utc: bool,
    /// Tables as wide as their content (`--wide`) instead of fitting the terminal.
    pub(crate) wide: bool,
}

static STYLE: OnceLock<Style> = OnceLock::new();

/// Set the output style; the first call wins (main sets it before any output).
pub(crate) fn set_style(style: Style) {
    let _ = STYLE.get_or_init(|| style);
}

fn style() -> Style {
    STYLE.get().copied().unwrap_or_default()
}

/// Columns a table fits when the terminal's width is unknown (output to a file or a pipe).
const TABLE_WIDTH: u16 = 100;

/// A new table in the house style: it fits the terminal (100 columns when output is not to a
/// terminal), wrapping long cells, unless `--wide` asks for every cell on one line.
pub(crate) fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY).set_header(header.to_vec());
    if style().wide {
        t.set_content_arrangement(ContentArrangement::Disabled);
    } else {
        t.set_content_arrangement(ContentArrangement::Dynamic);
        if !t.is_tty() {
            t.set_width(TABLE_WIDTH);
        }
    }
    t
}

/// A stored time (RFC 3339, any offset) for people: in the local time zone, or UTC with `--utc`,
/// to the millisecond, so one output never mixes offsets. What does not parse is shown as stored.
pub(crate) fn when(stored: &str) -> String {
    match DateTime::parse_from_rfc3339(stored) {
        Ok(t) => when_utc(t.with_timezone(&Utc)),
        Err(_) => stored.to_owned(),
    }
}

/// [`when`] for a time in nanoseconds since the epoch.
pub(crate) fn when_ns(ns: i64) -> String {
    when_utc(DateTime::from_timestamp_nanos(ns))
}

fn when_utc(t: DateTime<Utc>) -> String {
    if style().utc {
        t.to_rfc3339_opts(SecondsFormat::Millis, true)
    } else {
        t.with_timezone(&Local).to_rfc3339_opts(SecondsFormat::Millis, true)
    }
}

/// `n` and the noun, singular for one: `1 line`, `2 lines`.
pub(crate) fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(crate) fn key_json(key: &NodeKey) -> Value {
    json!({"label": key.label, "id": key.id})
}

pub(crate) fn node_json(node: &Node) -> Value {
    json!({"label": node.key.label, "id": node.key.id, "properties": node.props})
}

pub(crate) fn edge_json(edge: &Edge) -> Value {
    json!({
        "type": edge.key.edge_type,
        "from": key_json(&edge.key.from),
        "to": key_json(&edge.key.to),
        "properties": edge.props,
    })
}

pub(crate) fn log_json(entry: &LogEntry) -> Value {
    let body: Value =
        serde_json::from_str(&entry.body).unwrap_or(Value::String(entry.body.clone()));
    json!({
        "position": entry.position, "kind": entry.kind.as_str(), "id": entry.id,
        "recorded_at": entry.recorded_at, "record": body,
    })
}

pub(crate) fn rejection_json(r: &Rejection) -> Value {
    json!({
        "line": r.line, "id": r.id, "code": r.code,
        "violations": r.violations.iter().map(|v| json!({
            "path": v.path, "value": v.value, "rule": v.rule, "message": v.message,
        })).collect::<Vec<_>>(),
    })
}

fn prop<'a>(node: &'a Node, name: &str) -> Option<&'a str> {
    node.props.get(name).and_then(Value::as_str)
}

/// One line that says what an event was: type, tool, status and the most telling payload field.
pub(crate) fn describe_event(node: &Node) -> String {
    let mut parts = vec![prop(node, "event_type").unwrap_or("?").to_owned()];
    if let Some(tool) = prop(node, "tool_name") {
        parts.push(tool.to_owned());
    }
    if let Some(status) = prop(node, "status") {
        parts.push(if status == "failed" { "FAILED".to_owned() } else { status.to_owned() });
    }
    if let Some(text) = node.props.get("payload").and_then(Value::as_object).and_then(telling_text)
    {
        parts.push(format!("\"{}\"", shorten(text, 70)));
    }
    parts.join("  ")
}

/// An entity in a few words.
pub(crate) fn describe_entity(node: &Node) -> String {
    let head = format!(
        "{} {}",
        prop(node, "entity_type").unwrap_or("?"),
        prop(node, "name").unwrap_or(&node.key.id)
    );
    // A principal that may not see every record naming the entity is not shown its counts.
    let Some(count) = node.props.get("mention_count").and_then(Value::as_i64) else {
        return head;
    };
    format!(
        "{head}  (mentioned {count} time{}, {} .. {})",
        if count == 1 { "" } else { "s" },
        prop(node, "first_seen").map_or_else(|| "?".to_owned(), when),
        prop(node, "last_seen").map_or_else(|| "?".to_owned(), when),
    )
}

/// Properties that say what a node of another label is, best first.
const TELLING: [&str; 9] =
    ["name", "title", "content", "text", "summary", "description", "value", "url", "action"];

/// Any node in one line, from its properties alone: what its label says it is (an event's type
/// and payload, a summary's scope and text, a fact's claim and confidence, ...), and for other
/// labels their most telling text property.
pub(crate) fn describe_node(node: &Node) -> String {
    let text = |k: &str| prop(node, k).unwrap_or_default();
    match node.key.label.as_str() {
        "Event" => describe_event(node),
        "Entity" => describe_entity(node),
        "Summary" => {
            let events = node.props.get("event_count").and_then(Value::as_i64).unwrap_or(0);
            let plural = if events == 1 { "" } else { "s" };
            format!(
                "{} summary of {} ({events} event{plural}): {}",
                text("scope"),
                text("scope_id"),
                text("content")
            )
        }
        "Memory" => {
            let topic = prop(node, "topic").map(|t| format!(" on {t}")).unwrap_or_default();
            format!("{}{topic}: {}", text("kind"), text("content"))
        }
        "Fact" => describe_fact(node, ctxgraph::fact_text(node).unwrap_or_default()),
        "Sentence" => format!("\"{}\"  (document {})", text("text"), text("document_id")),
        "SlotValue" => format!("{} = {}", text("slot"), text("value")),
        "DecisionReceipt" => {
            let notes = prop(node, "notes").map(|n| format!(" ({n})")).unwrap_or_default();
            format!(
                "receipt for {}: {} by {}, {}{notes}",
                text("task"),
                text("action"),
                text("actor"),
                text("status")
            )
        }
        _ => TELLING.iter().find_map(|k| prop(node, k)).unwrap_or_default().to_owned(),
    }
}

/// A fact's claim in words with its confidence, and its retraction if any.
fn describe_fact(node: &Node, claim: String) -> String {
    let confidence = node.props.get("confidence").and_then(Value::as_f64).unwrap_or(0.0);
    let retracted =
        prop(node, "retracted_at").map(|at| format!(", retracted {at}")).unwrap_or_default();
    format!("{claim}  (confidence {confidence:.2}{retracted})")
}

/// [`describe_node`] with what the graph adds: a fact's entities by their display names, a
/// sentence's document by its title, the entities holding a slot value.
pub(crate) fn describe_node_in(snap: &ctxgraph::Reader<'_>, node: &Node) -> anyhow::Result<String> {
    let name = |id: &str| -> anyhow::Result<String> {
        let entity = snap.node(&NodeKey::new("Entity", id))?;
        let fallback = id.split_once(':').map_or(id, |(_, n)| n);
        Ok(entity.as_ref().and_then(|e| prop(e, "name")).unwrap_or(fallback).to_owned())
    };
    Ok(match node.key.label.as_str() {
        "Fact" => {
            let (Some(subject), Some(predicate)) = (prop(node, "subject"), prop(node, "predicate"))
            else {
                return Ok(describe_node(node));
            };
            let object = match prop(node, "object") {
                Some(id) => name(id)?,
                None => ctxgraph::fact_object(node).unwrap_or_default(),
            };
            let claim = format!("{} {} {object}", name(subject)?, predicate.replace('_', " "));
            describe_fact(node, claim)
        }
        "Sentence" => {
            let doc_id = prop(node, "document_id").unwrap_or_default();
            let doc = snap.node(&NodeKey::new("Document", doc_id))?;
            let title = doc
                .as_ref()
                .and_then(|d| prop(d, "title").or_else(|| prop(d, "url")))
                .unwrap_or(doc_id);
            format!("\"{}\"  ({title})", prop(node, "text").unwrap_or_default())
        }
        "SlotValue" => {
            let mut holders = Vec::new();
            for e in snap.edges(&node.key, Some("HAS_SLOT"), ctxgraph::Direction::In)? {
                holders.push(name(&e.key.from.id)?);
            }
            holders.sort();
            holders.dedup();
            format!("{}: {}", holders.join(", "), describe_node(node))
        }
        _ => describe_node(node),
    })
}

/// `text` cut to `max` characters with an ellipsis.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max).collect::<String>())
    }
}

/// Human-readable bytes.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{v:.1} {}", UNITS[unit]) }
}

/// A property value for a table cell.
pub(crate) fn cell(value: &Value) -> String {
    match value.as_str() {
        Some(s) if looks_like_time(s) => when(s),
        Some(s) => shorten(s, 100),
        None => shorten(&value.to_string(), 100),
    }
}

/// An edge's properties in one line (`role=instrument`), for tables.
pub(crate) fn edge_props(edge: &Edge) -> String {
    edge.props.iter().map(|(k, v)| format!("{k}={}", cell(v))).collect::<Vec<_>>().join(" ")
}

/// A stored time: `2026-11-20T09:00:00Z`, `2026-11-20T09:00:00.123+01:00`.
fn looks_like_time(s: &str) -> bool {
    s.len() >= 20 && s.as_bytes().get(10) == Some(&b'T') && DateTime::parse_from_rfc3339(s).is_ok()
}

#[cfg(test)]
mod tests {
    use super::{Style, count, set_style, when, when_ns};

    #[test]
    fn times_are_shown_in_one_zone_and_counts_agree_in_number() {
        set_style(Style { utc: true, wide: false });
        assert_eq!(when("2026-11-16T09:00:19.920+01:00"), "2026-11-16T08:00:19.920Z");
        assert_eq!(when("2026-11-16T08:00:19Z"), "2026-11-16T08:00:19.000Z");
        assert_eq!(when("not a time"), "not a time");
        assert_eq!(when_ns(1_700_000_000_123_456_789), "2023-11-14T22:13:20.123Z");
        assert_eq!(count(1u64, "line", "lines"), "1 line");
        assert_eq!(count(2u64, "line", "lines"), "2 lines");
    }
}
