//! The `receipt` commands: add a decision receipt from JSON, list receipts.

use std::io::{Read, Write};

use anyhow::Context;
use ctxgraph::{EngineOptions, IngestOutcome, OpenMode, ReceiptQuery, ReceiptView, parse_time};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{Cli, ReceiptCommand};
use crate::output::{print_json, table, when};

pub(crate) fn run(cli: &Cli, cmd: &ReceiptCommand) -> anyhow::Result<Outcome> {
    match cmd {
        ReceiptCommand::Add { file } => add(cli, file),
        ReceiptCommand::List { task, actor, since, until, policy, limit } => {
            let time = |t: &Option<String>, flag: &str| -> anyhow::Result<Option<String>> {
                t.as_deref()
                    .map(|t| {
                        parse_time(t).with_context(|| {
                            format!("--{flag} {t}: not an RFC 3339 time or a YYYY-MM-DD date")
                        })
                    })
                    .transpose()
            };
            let policy = match policy.as_deref() {
                None => None,
                Some(p) => Some(ctxgraph::policy_filter(p).with_context(|| {
                    format!("--policy {p}: the result after `=` is neither allow nor deny")
                })?),
            };
            let query = ReceiptQuery {
                task: task.clone(),
                actor: actor.clone(),
                since: time(since, "since")?,
                until: time(until, "until")?,
                policy,
                limit: *limit,
            };
            list(cli, &query)
        }
    }
}

fn add(cli: &Cli, file: &std::path::Path) -> anyhow::Result<Outcome> {
    let mut text = String::new();
    if file.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).context("reading stdin")?;
    } else {
        text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    }
    let value: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    let items = match value {
        Value::Array(items) => items,
        other @ (Value::Null
        | Value::Bool(_)
        | Value::Number(_)
        | Value::String(_)
        | Value::Object(_)) => vec![other],
    };
    let mut engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
    let mut records = Vec::new();
    for (i, mut item) in items.into_iter().enumerate() {
        if let Value::Object(o) = &mut item {
            o.entry("record_type").or_insert_with(|| "receipt".into());
        }
        // The error's own text holds every violation; a context chain would print them twice.
        let valid = engine.validate(&item.to_string()).map_err(|e| {
            anyhow::anyhow!("refused receipt {}: {}", i + 1, ctxgraph::Error::Validation(e))
        })?;
        if valid.kind() != ctxgraph::RecordKind::Receipt {
            anyhow::bail!("refused receipt {}: record_type must be \"receipt\"", i + 1);
        }
        records.push(valid);
    }
    let outcomes = engine.add_receipts(&records)?;
    let mut shown = Vec::new();
    let mut failed = false;
    for (record, outcome) in records.iter().zip(outcomes) {
        match outcome {
            Ok(o) => {
                let (status, position) = match o {
                    IngestOutcome::New(p) => ("new", p),
                    IngestOutcome::Duplicate(p) => ("duplicate", p),
                };
                shown.push(json!({"id": record.id(), "status": status, "position": position}));
            }
            Err(e) => {
                failed = true;
                eprintln!("refused receipt {}: {e}", record.id());
                shown.push(json!({"id": record.id(), "status": "refused", "error": e.to_string(), "code": e.code()}));
            }
        }
    }
    if cli.json {
        print_json(&Value::Array(shown))?;
    } else {
        let mut out = std::io::stdout().lock();
        for s in &shown {
            writeln!(
                out,
                "{} (receipt, {})",
                s["id"].as_str().unwrap_or_default(),
                s["status"].as_str().unwrap_or_default()
            )?;
        }
    }
    Ok(if failed { Outcome::Failed } else { Outcome::Done })
}

fn list(cli: &Cli, query: &ReceiptQuery) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let who = crate::access::principal(cli)?;
    let list = engine.reader(&who)?.receipts(query)?;
    if cli.json {
        print_json(&Value::Array(list.iter().map(ReceiptView::to_json).collect()))?;
    } else if list.is_empty() {
        writeln!(
            std::io::stdout(),
            "no receipts match (`ctxgraph receipt add FILE` records one; the filters narrow the list)"
        )?;
    } else {
        let mut t = table(&["committed", "task", "actor", "action", "outcome", "policies", "id"]);
        for r in list.iter().map(|v| &v.record) {
            let policies: Vec<String> =
                r.policies.iter().map(|p| format!("{}={}", p.id, p.result)).collect();
            t.add_row(vec![
                when(&r.committed_at),
                r.task.clone(),
                r.actor.clone(),
                r.action.clone(),
                r.outcome.status.clone(),
                policies.join(" "),
                r.receipt_id.clone(),
            ]);
        }
        writeln!(std::io::stdout(), "{t}")?;
    }
    Ok(if list.is_empty() { Outcome::NotFound } else { Outcome::Done })
}
