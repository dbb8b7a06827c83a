//! The `forget` and `forgotten` commands: redact a target and list the forget audit.

use std::io::{IsTerminal, Write};

use anyhow::Context;
use ctxgraph::{EngineOptions, ForgetKind, ForgetReport, ForgetTarget, Forgotten, OpenMode};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{Cli, ForgetKindArg};
use crate::output::{print_json, table};

pub(crate) fn forget(
    cli: &Cli,
    kind: ForgetKindArg,
    ids: &[String],
    reason: Option<&str>,
    by: &str,
    yes: bool,
) -> anyhow::Result<Outcome> {
    let kind = match kind {
        ForgetKindArg::Event => ForgetKind::Event,
        ForgetKindArg::Session => ForgetKind::Session,
        ForgetKindArg::Entity => ForgetKind::Entity,
        ForgetKindArg::Memory => ForgetKind::Memory,
    };
    // Forgetting cannot be undone: a person at a terminal confirms it; scripts pass --yes or
    // run without a terminal on standard input.
    if !yes && std::io::stdin().is_terminal() && !confirmed(kind, ids)? {
        writeln!(std::io::stderr(), "nothing forgotten")?;
        return Ok(Outcome::Failed);
    }
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let mut targets = Vec::new();
    for id in ids {
        let id = if kind == ForgetKind::Entity { entity_target(&engine, id)? } else { id.clone() };
        targets.push(ForgetTarget { kind, id });
    }
    let reports = engine
        .forget_many(&targets, by, reason)
        .with_context(|| format!("forgetting {} {}", kind.as_str(), ids.join(" ")))?;
    let json = |r: &ForgetReport| {
        json!({
            "forget_id": r.forget_id,
            "position": r.position,
            "target": {"kind": kind.as_str(), "id": r.target.id},
            "redacted": r.redacted,
        })
    };
    if cli.json {
        // One id: its report; several: an array of reports, in the order forgotten (a repeated
        // id once).
        match (ids.len(), reports.as_slice()) {
            (1, [one]) => print_json(&json(one))?,
            _ => print_json(&Value::Array(reports.iter().map(json).collect()))?,
        }
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout();
    for r in &reports {
        writeln!(
            out,
            "forgot {} {}: {} log records redacted; forget record {} at log position {}",
            kind.as_str(),
            r.target.id,
            r.redacted,
            r.forget_id,
            r.position
        )?;
    }
    Ok(Outcome::Done)
}

fn forgotten_json(entry: &Forgotten) -> Value {
    let f = &entry.record;
    json!({
        "forget_id": f.forget_id,
        "position": entry.position,
        "target": {"kind": f.kind.as_str(), "id": f.target_id},
        "by": f.by,
        "reason": f.reason,
        "at": f.at,
        "redacted": f.redacted,
    })
}

/// The entity `arg` names: an id as given, or a bare name that one entity type has. A name
/// several types have is an error listing them; a name none has is passed on, for the engine
/// to refuse as an unknown target.
fn entity_target(engine: &ctxgraph::Engine, arg: &str) -> anyhow::Result<String> {
    if engine.schema().entity_type_of(arg).is_some() {
        return Ok(arg.to_owned());
    }
    // Forgetting is the owner's and admins' (the gate checked): names resolve over the store.
    let found = crate::entities::entities_named(&engine.owner_reader()?, arg)?;
    let ids: Vec<&str> = found.iter().map(|n| n.key.id.as_str()).collect();
    match ids.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Ok(arg.to_owned()),
        several => Err(crate::entities::several_named(arg, several)),
    }
}

/// Ask on the terminal whether to forget `ids`; yes only for `y` or `yes`.
fn confirmed(kind: ForgetKind, ids: &[String]) -> anyhow::Result<bool> {
    let mut err = std::io::stderr();
    write!(
        err,
        "Forget {} {}? This cannot be undone: the content is removed from the store. [y/N] ",
        kind.as_str(),
        ids.join(" ")
    )?;
    err.flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).context("reading the answer")?;
    Ok(matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

pub(crate) fn forgotten(cli: &Cli) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let list = crate::reader(cli, &engine)?.forgotten()?;
    if cli.json {
        print_json(&Value::Array(list.iter().map(forgotten_json).collect()))?;
    } else if list.is_empty() {
        writeln!(std::io::stdout(), "nothing has been forgotten in this store")?;
    } else {
        let mut t = table(&["at", "kind", "id", "by", "redacted", "reason"]);
        for f in list.iter().map(|entry| &entry.record) {
            t.add_row(vec![
                crate::output::when(&f.at),
                f.kind.as_str().to_owned(),
                f.target_id.clone(),
                f.by.clone(),
                f.redacted.to_string(),
                f.reason.clone().unwrap_or_default(),
            ]);
        }
        writeln!(std::io::stdout(), "{t}")?;
    }
    Ok(if list.is_empty() { Outcome::NotFound } else { Outcome::Done })
}
