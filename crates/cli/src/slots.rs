//! `ctxgraph type|slot|checklist|goal`: types, slots, checklists and goals (seed 001).

use std::io::{Read, Write};

use anyhow::Context;
use ctxgraph::{
    CheckReport, Checklist, Engine, EngineOptions, EntityArg, Goal, GoalDraft, IngestOutcome,
    NextOptions, NextReport, OpenMode, SlotFill, SlotSpec, SpecStatus, TypeInfo,
};
use ctxgraph_server::wire::NextQuestionDto;
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{ChecklistCommand, Cli, EntityRefArgs, GoalCommand, SlotCommand, TypeCommand};
use crate::entities::entity_arg;
use crate::output::{print_json, table};

/// An engine error as one message: its display already lists every violation, which the
/// error chain would print a second time as the source.
fn flat(e: ctxgraph::Error) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

fn open(cli: &Cli) -> anyhow::Result<Engine> {
    crate::open(cli, OpenMode::MustExist, EngineOptions::default())
}

/// An entity argument as the engine takes it: a name to create with `--entity-type`, otherwise
/// an existing entity's id (or unique bare name).
fn entity(cli: &Cli, engine: &Engine, args: &EntityRefArgs) -> anyhow::Result<EntityArg> {
    match &args.entity_type {
        Some(t) => Ok(EntityArg::Named { name: args.entity.clone(), entity_type: t.clone() }),
        None => Ok(EntityArg::Id(existing(&crate::reader(cli, engine)?, &args.entity)?)),
    }
}

fn existing(reader: &ctxgraph::Reader<'_>, arg: &str) -> anyhow::Result<String> {
    entity_arg(reader, arg)
        .with_context(|| format!("entity `{arg}` (give --entity-type TYPE to create it)"))
}

/// Report a write: `what` names the record for people.
fn written(cli: &Cli, kind: &str, what: &str, outcome: IngestOutcome) -> anyhow::Result<Outcome> {
    let (new, position) = match outcome {
        IngestOutcome::New(p) => (true, p),
        IngestOutcome::Duplicate(p) => (false, p),
    };
    if cli.json {
        print_json(&json!({"record_type": kind, "new": new, "position": position}))?;
    } else if new {
        writeln!(std::io::stdout(), "recorded {what} (log position {position})")?;
    } else {
        writeln!(
            std::io::stdout(),
            "{what} was already recorded (log position {position}); nothing written"
        )?;
    }
    Ok(Outcome::Done)
}

pub(crate) fn types(cli: &Cli, cmd: &TypeCommand) -> anyhow::Result<Outcome> {
    let mut engine = open(cli)?;
    match cmd {
        TypeCommand::Add { name, description } => {
            let outcome = engine
                .declare_type(name, description.as_deref())
                .map_err(flat)
                .with_context(|| format!("declaring type `{name}`"))?;
            written(cli, "type", &format!("type `{name}`"), outcome)
        }
        TypeCommand::Instance { entity: args, type_name } => {
            let e = entity(cli, &engine, args)?;
            let outcome = engine.add_instance(&e, type_name).map_err(flat).with_context(|| {
                format!("recording `{}` INSTANCE_OF `{type_name}`", args.entity)
            })?;
            written(
                cli,
                "instance_of",
                &format!("{} INSTANCE_OF {type_name}", args.entity),
                outcome,
            )
        }
        TypeCommand::List => {
            let list = crate::reader(cli, &engine)?.types()?;
            if cli.json {
                print_json(&Value::Array(list.iter().map(type_json).collect()))?;
            } else if list.is_empty() {
                writeln!(std::io::stdout(), "no types (`ctxgraph type add NAME` declares one)")?;
            } else {
                let mut t = table(&["type", "name", "instances", "description"]);
                for ty in &list {
                    t.add_row(vec![
                        ty.id.clone(),
                        ty.name.clone(),
                        ty.instances.join(", "),
                        ty.description.clone().unwrap_or_default(),
                    ]);
                }
                writeln!(std::io::stdout(), "{t}")?;
            }
            Ok(if list.is_empty() { Outcome::NotFound } else { Outcome::Done })
        }
    }
}

fn type_json(t: &TypeInfo) -> Value {
    json!({"id": t.id, "name": t.name, "description": t.description, "instances": t.instances})
}

fn fill_json(f: &SlotFill) -> Value {
    json!({
        "slot": f.slot, "value": f.value, "value_key": f.value_key,
        "confidence": f.confidence, "sources": f.sources,
    })
}

pub(crate) fn slots(cli: &Cli, cmd: &SlotCommand) -> anyhow::Result<Outcome> {
    let mut engine = open(cli)?;
    match cmd {
        SlotCommand::Set { entity: args, slot, value, confidence, source } => {
            let e = entity(cli, &engine, args)?;
            let outcome = engine
                .set_slot(&e, slot, value, Some(*confidence), source.as_deref())
                .map_err(flat)
                .with_context(|| format!("setting slot `{slot}` of `{}`", args.entity))?;
            written(cli, "slot", &format!("{} {slot} = {value}", args.entity), outcome)
        }
        SlotCommand::List { entity } => {
            let reader = crate::reader(cli, &engine)?;
            let id = existing(&reader, entity)?;
            // `existing` found the entity through this principal's reader: it is visible.
            let (slots, types) = reader.slots_of(&id)?.unwrap_or_default();
            if cli.json {
                print_json(&json!({
                    "entity": id,
                    "types": types.iter().map(|(id, name)| json!({"id": id, "name": name})).collect::<Vec<_>>(),
                    "slots": slots.iter().map(fill_json).collect::<Vec<_>>(),
                }))?;
            } else {
                let mut out = std::io::stdout().lock();
                let names: Vec<&str> = types.iter().map(|(_, n)| n.as_str()).collect();
                writeln!(
                    out,
                    "{id}: instance of {}",
                    if names.is_empty() { "no type".to_owned() } else { names.join(", ") }
                )?;
                if slots.is_empty() {
                    writeln!(out, "no slot values (`ctxgraph slot set` records one)")?;
                } else {
                    let mut t = table(&["slot", "value", "confidence", "sources"]);
                    for f in &slots {
                        t.add_row(vec![
                            f.slot.clone(),
                            f.value.clone(),
                            f.confidence.map_or_else(String::new, |c| format!("{c:.3}")),
                            f.sources.join(", "),
                        ]);
                    }
                    writeln!(out, "{t}")?;
                }
            }
            Ok(if slots.is_empty() && types.is_empty() { Outcome::NotFound } else { Outcome::Done })
        }
    }
}

fn spec_json(s: &SlotSpec) -> Value {
    json!({
        "name": s.name, "expect_labels": s.expect_labels, "relation": s.relation.as_str(),
        "required": s.required, "cardinality": s.cardinality.as_str(), "cost": s.cost,
    })
}

fn checklist_json(c: &Checklist) -> Value {
    json!({
        "id": c.id, "name": c.name, "description": c.description,
        "slots": c.specs.iter().map(spec_json).collect::<Vec<_>>(),
    })
}

/// A spec in a few words: `year (required, one: year | date)`.
fn describe_spec(s: &SlotSpec) -> String {
    let via = match s.relation {
        ctxgraph::SpecRelation::HasSlot => "slot",
        ctxgraph::SpecRelation::InstanceOf => "instance of",
    };
    format!(
        "{} ({}, {}, {via} {})",
        s.name,
        if s.required { "required" } else { "optional" },
        s.cardinality.as_str(),
        s.expect_labels.join(" | ")
    )
}

pub(crate) fn checklists(cli: &Cli, cmd: &ChecklistCommand) -> anyhow::Result<Outcome> {
    let mut engine = open(cli)?;
    match cmd {
        ChecklistCommand::Define { file } => {
            let mut text = String::new();
            if file.as_os_str() == "-" {
                std::io::stdin().read_to_string(&mut text).context("reading stdin")?;
            } else {
                text = std::fs::read_to_string(file)
                    .with_context(|| format!("reading {}", file.display()))?;
            }
            let outcome = engine
                .define_checklist_file(&text)
                .map_err(flat)
                .with_context(|| format!("defining a checklist from {}", file.display()))?;
            written(cli, "checklist", &format!("the checklist of {}", file.display()), outcome)
        }
        ChecklistCommand::List => {
            let list = crate::reader(cli, &engine)?.checklists()?;
            if cli.json {
                print_json(&Value::Array(list.iter().map(checklist_json).collect()))?;
            } else if list.is_empty() {
                writeln!(
                    std::io::stdout(),
                    "no checklists (`ctxgraph checklist define FILE` defines one)"
                )?;
            } else {
                let mut t = table(&["checklist", "slot specs", "description"]);
                for c in &list {
                    let specs: Vec<String> = c.specs.iter().map(describe_spec).collect();
                    t.add_row(vec![
                        c.name.clone(),
                        specs.join("\n"),
                        c.description.clone().unwrap_or_default(),
                    ]);
                }
                writeln!(std::io::stdout(), "{t}")?;
            }
            Ok(if list.is_empty() { Outcome::NotFound } else { Outcome::Done })
        }
        ChecklistCommand::Check { name, entity } => {
            let reader = crate::reader(cli, &engine)?;
            let id = existing(&reader, entity)?;
            let report = reader
                .check_checklist(name, &id)
                .map_err(flat)
                .with_context(|| format!("checking `{id}` against checklist `{name}`"))?
                .with_context(|| format!("no entity `{id}` (give an entity's id or name)"))?;
            print_check(cli, &report)?;
            Ok(Outcome::Done)
        }
        ChecklistCommand::Next { name, candidates, known, user, search_cost, no_search } => {
            let reader = crate::reader(cli, &engine)?;
            let ids = candidates
                .iter()
                .map(|c| existing(&reader, c.trim()))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let known = known
                .iter()
                .map(|k| {
                    k.split_once('=')
                        .map(|(s, v)| (s.trim().to_owned(), v.trim().to_owned()))
                        .with_context(|| {
                            format!("--known `{k}`: write SPEC=VALUE, e.g. genre=drama")
                        })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let (ids, ruled_out) = reader
                .filter_candidates(name, &ids, &known)
                .map_err(flat)?
                .map_err(|id| anyhow::anyhow!("no entity `{id}` (give an entity's id or name)"))?;
            if !ruled_out.is_empty() && !cli.json {
                let list: Vec<String> =
                    ruled_out.iter().map(|(c, s)| format!("{c} (by {s})")).collect();
                writeln!(std::io::stdout(), "ruled out by the known answers: {}", list.join(", "))?;
            }
            anyhow::ensure!(!ids.is_empty(), "the known answers rule out every candidate");
            let user = user
                .as_deref()
                .map(|u| entity_arg(&reader, u).with_context(|| format!("--user `{u}`")))
                .transpose()?;
            let options = NextOptions { user, search_cost: *search_cost, search: !no_search };
            let report = reader
                .next_slot(name, &ids, &options)
                .map_err(flat)
                .with_context(|| format!("choosing the next slot of checklist `{name}`"))?
                .map_err(|id| anyhow::anyhow!("no entity `{id}` (give an entity's id or name)"))?;
            print_next(cli, &report, &ruled_out)?;
            Ok(if report.best().is_some() { Outcome::Done } else { Outcome::NotFound })
        }
    }
}

fn print_check(cli: &Cli, r: &CheckReport) -> anyhow::Result<()> {
    let names = |status: SpecStatus, required: Option<bool>| -> Vec<&str> {
        r.specs
            .iter()
            .filter(|s| s.status == status && required.is_none_or(|q| q == s.spec.required))
            .map(|s| s.spec.name.as_str())
            .collect()
    };
    if cli.json {
        return print_json(&json!({
            "checklist": r.checklist,
            "entity": r.entity,
            "complete": r.complete(),
            "satisfied": names(SpecStatus::Satisfied, None),
            "missing_required": names(SpecStatus::Missing, Some(true)),
            "missing_optional": names(SpecStatus::Missing, Some(false)),
            "cardinality_violations": names(SpecStatus::TooMany, None),
            "specs": r.specs.iter().map(|s| json!({
                "spec": spec_json(&s.spec),
                "status": s.status.as_str(),
                "values": s.values.iter().map(fill_json).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        }));
    }
    let mut out = std::io::stdout().lock();
    let verdict = if r.complete() { "complete" } else { "incomplete" };
    writeln!(out, "{} against {}: {verdict}", r.entity, r.checklist)?;
    let mut t = table(&["slot spec", "required", "status", "values"]);
    for s in &r.specs {
        let status = match s.status {
            SpecStatus::Satisfied => "satisfied",
            SpecStatus::Missing if s.spec.required => "MISSING",
            SpecStatus::Missing => "missing (optional)",
            SpecStatus::TooMany => "TOO MANY (cardinality one)",
        };
        let values: Vec<String> = s
            .values
            .iter()
            .map(|v| match v.confidence {
                Some(c) => format!("{} ({c:.2})", v.value),
                None => v.value.clone(),
            })
            .collect();
        t.add_row(vec![
            s.spec.name.clone(),
            if s.spec.required { "yes" } else { "no" }.to_owned(),
            status.to_owned(),
            values.join(", "),
        ]);
    }
    writeln!(out, "{t}")?;
    Ok(())
}

/// The answer of `checklist next`: with `--json`, the same document as the server's
/// `next_question`; otherwise its summary, the prior when goals biased it, and a table.
fn print_next(cli: &Cli, r: &NextReport, ruled_out: &[(String, String)]) -> anyhow::Result<()> {
    let dto = NextQuestionDto::new(r, ruled_out);
    if cli.json {
        return print_json(&serde_json::to_value(&dto)?);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", dto.summary)?;
    if !r.goals.is_empty() {
        let prior: Vec<String> =
            r.candidates.iter().zip(&r.prior).map(|(c, p)| format!("{c} {p:.3}")).collect();
        writeln!(out, "prior: {}", prior.join(", "))?;
    }
    let mut t = table(&["slot spec", "gain (bits)", "cost", "gain/cost", "search", "answers"]);
    for g in &r.ranking {
        let groups: Vec<String> = g
            .groups
            .iter()
            .map(|a| {
                let p = a.probability.map_or_else(String::new, |p| format!(" (p {p:.2})"));
                format!(
                    "{}{p}: {}",
                    a.answer.as_deref().unwrap_or("(unknown)"),
                    a.candidates.join(", ")
                )
            })
            .collect();
        let search = g.search.as_ref().map_or_else(String::new, |l| {
            format!(
                "{:.3} (p_found {:.2}: {})",
                l.gain_per_cost,
                l.p_found,
                l.found.iter().map(|(a, _)| a.as_str()).collect::<Vec<_>>().join(", ")
            )
        });
        t.add_row(vec![
            g.spec.name.clone(),
            format!("{:.3}", g.gain),
            g.cost.to_string(),
            format!("{:.3}", g.gain_per_cost),
            search,
            groups.join("\n"),
        ]);
    }
    writeln!(out, "{t}")?;
    Ok(())
}

fn goal_json(g: &Goal) -> Value {
    json!({
        "id": g.id, "name": g.name, "user": g.user_id, "description": g.description,
        "horizon": g.horizon, "priority": g.priority, "influences": g.influences,
        "prefers": g.prefers.iter().map(|(slot, value)| json!({"slot": slot, "value": value}))
            .collect::<Vec<_>>(),
    })
}

pub(crate) fn goals(cli: &Cli, cmd: &GoalCommand) -> anyhow::Result<Outcome> {
    let mut engine = open(cli)?;
    match cmd {
        GoalCommand::Add {
            name,
            user,
            create_user,
            influences,
            description,
            horizon,
            priority,
            prefers,
        } => {
            let prefers = prefers
                .iter()
                .map(|p| {
                    p.split_once('=')
                        .map(|(s, v)| (s.trim().to_owned(), v.trim().to_owned()))
                        .with_context(|| {
                            format!("--prefers `{p}`: write SLOT=VALUE, e.g. genre=drama")
                        })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let user_arg =
                if *create_user {
                    EntityArg::Named { name: user.clone(), entity_type: "user".into() }
                } else {
                    EntityArg::Id(entity_arg(&crate::reader(cli, &engine)?, user).with_context(
                        || format!("user `{user}` (give --create-user to create it)"),
                    )?)
                };
            let draft = GoalDraft {
                name: name.clone(),
                user: user_arg,
                description: description.clone(),
                horizon: horizon.clone(),
                priority: *priority,
                influences: influences.iter().map(|s| s.trim().to_owned()).collect(),
                prefers,
            };
            let outcome = engine
                .add_goal(&draft)
                .map_err(flat)
                .with_context(|| format!("adding goal `{name}` of `{user}`"))?;
            written(cli, "goal", &format!("goal `{name}` of {user}"), outcome)
        }
        GoalCommand::List { user } => {
            let reader = crate::reader(cli, &engine)?;
            let user = user.as_deref().map(|u| entity_arg(&reader, u)).transpose()?;
            let list = reader.goals(user.as_deref())?;
            if cli.json {
                print_json(&Value::Array(list.iter().map(goal_json).collect()))?;
            } else if list.is_empty() {
                writeln!(std::io::stdout(), "no goals (`ctxgraph goal add` adds one)")?;
            } else {
                let mut t =
                    table(&["user", "goal", "priority", "horizon", "influences", "prefers"]);
                for g in &list {
                    t.add_row(vec![
                        g.user_id.clone(),
                        g.name.clone(),
                        g.priority.map_or_else(String::new, |p| p.to_string()),
                        g.horizon.clone().unwrap_or_default(),
                        g.influences.join(", "),
                        g.prefers
                            .iter()
                            .map(|(s, v)| format!("{s}={v}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                    ]);
                }
                writeln!(std::io::stdout(), "{t}")?;
            }
            Ok(if list.is_empty() { Outcome::NotFound } else { Outcome::Done })
        }
    }
}
