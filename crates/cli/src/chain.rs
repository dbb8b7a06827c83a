//! `ctxgraph chain`: the causal chain behind an event, what it caused, and the entities involved.

use std::collections::BTreeMap;
use std::io::Write;

use ctxgraph::{Direction, EngineOptions, Node, OpenMode, Reader};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::Cli;
use crate::output::{describe_entity, describe_event, node_json, print_json, when};

/// How many events downstream of the event to show.
const EFFECTS_SHOWN: usize = 25;

/// An event explained by the causal view and the entity view.
pub(crate) struct Explanation {
    /// The event, then its parent, grandparent, ... up to a root.
    pub(crate) chain: Vec<Node>,
    /// A parent named by the last event of the chain that is not in the log.
    pub(crate) missing_parent: Option<String>,
    /// Events caused by the event, with their distance.
    pub(crate) effects: Vec<(usize, Node)>,
    /// Entities referenced by any of those events, with the roles they played.
    pub(crate) entities: Vec<(Node, Vec<String>)>,
}

pub(crate) fn explain(snap: &Reader<'_>, event_id: &str) -> anyhow::Result<Option<Explanation>> {
    let (chain, missing_parent) = snap.causes(event_id)?;
    if chain.is_empty() {
        return Ok(None);
    }
    let effects = snap.effects(event_id, EFFECTS_SHOWN)?;
    let mut roles: BTreeMap<String, (Node, Vec<String>)> = BTreeMap::new();
    for event in chain.iter().chain(effects.iter().map(|(_, n)| n)) {
        for edge in snap.edges(&event.key, Some("REFERENCES"), Direction::Out)? {
            let role = edge.props.get("role").and_then(Value::as_str).unwrap_or("?").to_owned();
            if let Some(entry) = roles.get_mut(&edge.key.to.id) {
                if !entry.1.contains(&role) {
                    entry.1.push(role);
                }
            } else if let Some(node) = snap.node(&edge.key.to)? {
                roles.insert(edge.key.to.id.clone(), (node, vec![role]));
            }
        }
    }
    Ok(Some(Explanation {
        chain,
        missing_parent,
        effects,
        entities: roles.into_values().collect(),
    }))
}

pub(crate) fn run(cli: &Cli, id: &str) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let snap = crate::reader(cli, &engine)?;
    let Some(x) = explain(&snap, id)? else {
        if cli.json {
            print_json(&Value::Null)?;
        } else {
            writeln!(std::io::stdout(), "no event `{id}`")?;
        }
        return Ok(Outcome::NotFound);
    };
    if cli.json {
        print_json(&to_json(&x))?;
    } else {
        print(&x)?;
    }
    Ok(Outcome::Done)
}

pub(crate) fn to_json(x: &Explanation) -> Value {
    json!({
        "chain": x.chain.iter().map(node_json).collect::<Vec<_>>(),
        "missing_parent": x.missing_parent,
        "effects": x.effects.iter().map(|(d, n)| json!({"depth": d, "event": node_json(n)})).collect::<Vec<_>>(),
        "entities": x.entities.iter().map(|(n, r)| json!({"entity": node_json(n), "roles": r})).collect::<Vec<_>>(),
    })
}

fn at(node: &Node) -> String {
    node.props.get("occurred_at").and_then(Value::as_str).map_or_else(|| "?".to_owned(), when)
}

fn agent(node: &Node) -> &str {
    node.props.get("agent_id").and_then(Value::as_str).unwrap_or("?")
}

pub(crate) fn print(x: &Explanation) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let Some(first) = x.chain.first() else { return Ok(()) };
    writeln!(
        out,
        "Why did {} happen?  (causal view, CAUSED_BY from the event back to its root)",
        first.key.id
    )?;
    for (i, n) in x.chain.iter().enumerate() {
        let lead = if i == 0 {
            "  ".to_owned()
        } else {
            format!("{}└─CAUSED_BY→ ", "   ".repeat(i))
        };
        writeln!(out, "{lead}{}  {}  {}  {}", n.key.id, at(n), agent(n), describe_event(n))?;
    }
    if let (Some(importance), Some(keywords)) =
        (first.props.get("importance_score"), first.props.get("keywords").and_then(Value::as_array))
    {
        let words: Vec<&str> = keywords.iter().filter_map(Value::as_str).collect();
        writeln!(
            out,
            "\n  {}: importance {importance}/10; keywords: {}",
            first.key.id,
            words.join(", ")
        )?;
    }
    if let Some(p) = &x.missing_parent {
        writeln!(
            out,
            "{}└─CAUSED_BY→ {p}  (not in the log: a known unknown)",
            "   ".repeat(x.chain.len())
        )?;
    }
    writeln!(out, "\nWhat it caused:")?;
    if x.effects.is_empty() {
        writeln!(out, "  nothing recorded")?;
    }
    for (depth, n) in &x.effects {
        writeln!(
            out,
            "  {}{}  {}  {}  {}",
            "  ".repeat(depth - 1),
            n.key.id,
            at(n),
            agent(n),
            describe_event(n)
        )?;
    }
    writeln!(out, "\nWho and what was involved:  (entity view, REFERENCES)")?;
    for (n, roles) in &x.entities {
        writeln!(out, "  {:<24} {}", roles.join(", "), describe_entity(n))?;
    }
    Ok(())
}
