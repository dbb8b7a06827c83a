//! `ctxgraph schema show|check|add`: the ontology is data.

use std::io::Write;

use anyhow::Context;
use ctxgraph::{EngineOptions, IngestOutcome, OpenMode, Schema};
use serde_json::json;

use crate::Outcome;
use crate::args::{Cli, SchemaCommand};
use crate::output::print_json;

pub(crate) fn run(cli: &Cli, cmd: &SchemaCommand) -> anyhow::Result<Outcome> {
    // Without a store, the schema in force is the built-in modules.
    let base = || -> anyhow::Result<Schema> {
        if cli.db.exists() {
            Ok(crate::open(cli, OpenMode::MustExist, EngineOptions::default())?.schema().clone())
        } else {
            Ok(Schema::core()?)
        }
    };
    match cmd {
        SchemaCommand::Show => {
            let schema = base()?;
            if cli.json {
                print_json(&schema.to_json())?;
            } else {
                write!(std::io::stdout(), "{}", schema.to_pg_schema())?;
            }
            Ok(Outcome::Done)
        }
        SchemaCommand::Check { file } => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            match base()?.extend(&text) {
                Ok(extended) => {
                    let module = extended.modules().last().cloned().unwrap_or_default();
                    if cli.json {
                        print_json(&json!({"ok": true, "module": module}))?;
                    } else {
                        writeln!(
                            std::io::stdout(),
                            "{}: module `{module}` is a valid additive extension",
                            file.display()
                        )?;
                    }
                    Ok(Outcome::Done)
                }
                Err(e) => {
                    if cli.json {
                        print_json(
                            &json!({"ok": false, "code": e.code(), "error": e.to_string()}),
                        )?;
                    } else {
                        writeln!(std::io::stdout(), "{}: {e}", file.display())?;
                    }
                    Ok(Outcome::Failed)
                }
            }
        }
        SchemaCommand::Add { file } => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            let mut engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
            let outcome = engine
                .add_schema_module(&text)
                .with_context(|| format!("adding {}", file.display()))?;
            let (status, position) = match outcome {
                IngestOutcome::New(p) => ("added", p),
                IngestOutcome::Duplicate(p) => ("already present", p),
            };
            if cli.json {
                print_json(
                    &json!({"status": status, "position": position, "modules": engine.schema().modules()}),
                )?;
            } else {
                writeln!(
                    std::io::stdout(),
                    "{}: {status} at log position {position}; modules: {}",
                    file.display(),
                    engine.schema().modules().join(", ")
                )?;
            }
            Ok(Outcome::Done)
        }
    }
}
