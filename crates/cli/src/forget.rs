//! The `forget` and `forgotten` commands: redact a target and list the forget audit.

use std::io::Write;

use anyhow::Context;
use ctxgraph::{EngineOptions, ForgetKind, ForgetTarget, Forgotten, OpenMode};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{Cli, ForgetKindArg};
use crate::output::{print_json, table};

pub(crate) fn forget(
    cli: &Cli,
    kind: ForgetKindArg,
    id: &str,
    reason: Option<&str>,
    by: &str,
) -> anyhow::Result<Outcome> {
    let kind = match kind {
        ForgetKindArg::Event => ForgetKind::Event,
        ForgetKindArg::Session => ForgetKind::Session,
        ForgetKindArg::Entity => ForgetKind::Entity,
        ForgetKindArg::Memory => ForgetKind::Memory,
    };
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let target = ForgetTarget { kind, id: id.to_owned() };
    let report = engine
        .forget(&target, by, reason)
        .with_context(|| format!("forgetting {} {id}", kind.as_str()))?;
    if cli.json {
        print_json(&json!({
            "forget_id": report.forget_id,
            "position": report.position,
            "target": {"kind": kind.as_str(), "id": id},
            "redacted": report.redacted,
        }))?;
    } else {
        writeln!(
            std::io::stdout(),
            "forgot {} {id}: {} log records redacted; forget record {} at log position {}",
            kind.as_str(),
            report.redacted,
            report.forget_id,
            report.position
        )?;
    }
    Ok(Outcome::Done)
}

fn forgotten_json(f: &Forgotten) -> Value {
    json!({
        "forget_id": f.forget_id,
        "position": f.position,
        "target": {"kind": f.kind.as_str(), "id": f.target_id},
        "by": f.by,
        "reason": f.reason,
        "at": f.at,
        "redacted": f.redacted,
    })
}

pub(crate) fn forgotten(cli: &Cli) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let list = engine.snapshot()?.forgotten()?;
    if cli.json {
        print_json(&Value::Array(list.iter().map(forgotten_json).collect()))?;
    } else {
        let mut t = table(&["at", "kind", "id", "by", "redacted", "reason"]);
        for f in &list {
            t.add_row(vec![
                f.at.clone(),
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
