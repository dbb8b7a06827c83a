//! Read commands (get, neighbors, session, view, stats, log) and the small write ones (init,
//! reproject, generate).

use std::io::Write;

use ctxgraph::{Direction, EngineOptions, FORMAT_VERSION, NodeKey, OpenMode, View};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{Cli, DirectionArg, ViewArg};
use crate::output::{
    bytes, cell, count, describe_event, edge_json, edge_props, log_json, node_json, print_json,
    shorten, table,
};

pub(crate) fn init(cli: &Cli) -> anyhow::Result<Outcome> {
    if let Some(url) = crate::scale_out::store_url(cli)? {
        return crate::scale_out::admin::init(cli, &url);
    }
    let existed = cli.db.exists();
    let engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
    let records = engine.owner_reader()?.checkpoints()?.log_length;
    if cli.json {
        print_json(&json!({"db": cli.db, "created": !existed, "format_version": FORMAT_VERSION}))?;
    } else if existed {
        writeln!(
            std::io::stdout(),
            "{} is already a ctxgraph store ({} records)",
            cli.db.display(),
            records
        )?;
    } else {
        writeln!(
            std::io::stdout(),
            "created {} (format version {})",
            cli.db.display(),
            FORMAT_VERSION
        )?;
    }
    Ok(Outcome::Done)
}

pub(crate) fn get(cli: &Cli, id: &str) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let reader = crate::reader(cli, &engine)?;
    let nodes = crate::names::nodes_named(&reader, id)?;
    // The reader shows an edge only when the principal may see its other end too.
    let edges_of = |key: &ctxgraph::NodeKey| -> anyhow::Result<Vec<ctxgraph::Edge>> {
        Ok(reader.edges(key, None, Direction::Both)?)
    };
    let mut out = std::io::stdout().lock();
    if cli.json {
        let list: Vec<Value> = nodes
            .iter()
            .map(|n| {
                let edges = edges_of(&n.key).unwrap_or_default();
                let mut v = node_json(n);
                v["degree"] = json!(edges.len());
                v
            })
            .collect();
        print_json(&Value::Array(list))?;
    } else {
        if nodes.is_empty() {
            writeln!(out, "{}", crate::names::nothing_named(id))?;
        }
        for n in &nodes {
            writeln!(out, "{} {}", n.key.label, n.key.id)?;
            let merged = crate::names::merged_with(&reader, &n.key)?;
            if !merged.is_empty() {
                let ids: Vec<&str> = merged.iter().map(|k| k.id.as_str()).collect();
                writeln!(out, "merged with {} (SAME_AS, decided)", ids.join(", "))?;
            }
            let mut t = table(&["property", "value"]);
            for (k, v) in &n.props {
                t.add_row(vec![k.clone(), cell(v)]);
            }
            writeln!(out, "{t}")?;
            let edges = edges_of(&n.key)?;
            let mut counts = std::collections::BTreeMap::<(String, &str), usize>::new();
            for e in &edges {
                let dir = if e.key.from == n.key { "out" } else { "in" };
                *counts.entry((e.key.edge_type.clone(), dir)).or_default() += 1;
            }
            let summary: Vec<String> =
                counts.iter().map(|((t, d), c)| format!("{t} {d}: {c}")).collect();
            writeln!(
                out,
                "edges: {}\n",
                if summary.is_empty() { "none".to_owned() } else { summary.join(", ") }
            )?;
        }
    }
    Ok(if nodes.is_empty() { Outcome::NotFound } else { Outcome::Done })
}

pub(crate) fn neighbors(
    cli: &Cli,
    id: &str,
    edge: Option<&str>,
    direction: DirectionArg,
    label: Option<&str>,
) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    if let Some(t) = edge
        && engine.schema().edge_type(t).is_none()
    {
        let known: Vec<&String> = engine.schema().edge_types().keys().collect();
        anyhow::bail!("--edge {t}: not a declared edge type; declared: {known:?}");
    }
    let snap = crate::reader(cli, &engine)?;
    let mut keys: Vec<NodeKey> = match label {
        Some(l) => vec![NodeKey::new(l, id)],
        None => crate::names::nodes_named(&snap, id)?.into_iter().map(|n| n.key).collect(),
    };
    // A merged entity is one entity to a reader: its partners' edges are its own.
    let mut merged = Vec::new();
    for key in &keys {
        for other in crate::names::merged_with(&snap, key)? {
            if !keys.contains(&other) && !merged.contains(&other) {
                merged.push(other);
            }
        }
    }
    keys.extend(merged.iter().cloned());
    let dir = match direction {
        DirectionArg::Out => Direction::Out,
        DirectionArg::In => Direction::In,
        DirectionArg::Both => Direction::Both,
    };
    let mut edges = Vec::new();
    for key in &keys {
        edges.extend(snap.edges(key, edge, dir)?);
    }
    if !merged.is_empty() {
        // The SAME_AS edge between merged partners touches both: list it once.
        let mut seen = std::collections::HashSet::new();
        edges.retain(|e| seen.insert(format!("{:?}", e.key)));
    }
    if cli.json {
        print_json(&Value::Array(edges.iter().map(edge_json).collect()))?;
    } else {
        let mut out = std::io::stdout().lock();
        if keys.is_empty() {
            writeln!(out, "{}", crate::names::nothing_named(id))?;
        } else if edges.is_empty() {
            writeln!(out, "`{id}` has no edges of this kind")?;
        } else {
            if !merged.is_empty() {
                let ids: Vec<&str> = merged.iter().map(|k| k.id.as_str()).collect();
                writeln!(out, "with the edges of {} (merged, SAME_AS)", ids.join(", "))?;
            }
            let mut t = table(&["from", "edge", "to", "properties"]);
            for e in &edges {
                t.add_row(vec![
                    e.key.from.to_string(),
                    e.key.edge_type.clone(),
                    e.key.to.to_string(),
                    edge_props(e),
                ]);
            }
            writeln!(out, "{t}")?;
        }
    }
    Ok(if edges.is_empty() { Outcome::NotFound } else { Outcome::Done })
}

pub(crate) fn session(cli: &Cli, id: &str, limit: usize) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let timeline = crate::reader(cli, &engine)?.timeline(id, limit)?;
    if cli.json {
        let list: Vec<Value> = timeline
            .iter()
            .map(|t| json!({"event": node_json(&t.event), "caused_by": t.caused_by, "missing_parent": t.missing_parent}))
            .collect();
        print_json(&json!({"session_id": id, "events": list}))?;
    } else {
        let mut out = std::io::stdout().lock();
        if timeline.is_empty() {
            writeln!(
                out,
                "no events in session `{id}` that you may see (`ctxgraph search` finds sessions by their text)"
            )?;
        } else {
            writeln!(out, "session {id}: {}", count(timeline.len() as u64, "event", "events"))?;
            let mut t = table(&["occurred_at", "event", "agent", "what", "caused by"]);
            for entry in &timeline {
                let e = &entry.event;
                let at = e.props.get("occurred_at").map(cell).unwrap_or_default();
                let agent = e.props.get("agent_id").map(cell).unwrap_or_default();
                let cause = match (&entry.missing_parent, entry.caused_by.is_empty()) {
                    (Some(p), _) => format!("{p} (not in log)"),
                    (None, false) => entry.caused_by.join(", "),
                    (None, true) => String::new(),
                };
                t.add_row(vec![
                    at,
                    e.key.id.clone(),
                    agent,
                    shorten(&describe_event(e), 80),
                    cause,
                ]);
            }
            writeln!(out, "{t}")?;
        }
    }
    Ok(if timeline.is_empty() { Outcome::NotFound } else { Outcome::Done })
}

pub(crate) fn view(cli: &Cli, view: ViewArg, limit: usize) -> anyhow::Result<Outcome> {
    let view = match view {
        ViewArg::Temporal => View::Temporal,
        ViewArg::Causal => View::Causal,
        ViewArg::Entity => View::Entity,
        ViewArg::Semantic => View::Semantic,
        ViewArg::Hierarchical => View::Hierarchical,
    };
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let snap = crate::reader(cli, &engine)?;
    let edges = snap.view(view, None, limit)?;
    // Only the owner may count every edge; a principal's total is what it was shown.
    let total = match snap.store_stats() {
        Ok(s) => s.edges.iter().find(|(t, _)| t == view.edge_type()).map_or(0, |(_, n)| *n),
        Err(_) => edges.len() as u64,
    };
    if cli.json {
        print_json(&json!({
            "view": view.name(), "edge_type": view.edge_type(), "question": view.question(),
            "total": total, "edges": edges.iter().map(edge_json).collect::<Vec<_>>(),
        }))?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "{} view ({}): {} — {} edges, showing {}",
            view.name(),
            view.edge_type(),
            view.question(),
            total,
            edges.len()
        )?;
        if !edges.is_empty() {
            let mut t = table(&["from", "to", "properties"]);
            for e in &edges {
                t.add_row(vec![e.key.from.to_string(), e.key.to.to_string(), edge_props(e)]);
            }
            writeln!(out, "{t}")?;
        }
    }
    Ok(Outcome::Done)
}

pub(crate) fn stats(cli: &Cli) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let who = crate::access::principal(cli)?;
    if !who.is_owner() {
        // A principal counts only what it may see: no log positions, no edge or node totals.
        let s = engine.reader(&who)?.stats()?;
        if cli.json {
            print_json(
                &json!({"principal": who.name(), "events": s.events, "memories": s.memories}),
            )?;
        } else {
            println!("as {}: {} events, {} memories visible", who.name(), s.events, s.memories);
        }
        return Ok(Outcome::Done);
    }
    let s = engine.owner_reader()?.store_stats()?;
    if cli.json {
        print_json(&json!({
            "log_length": s.log_length, "projected_through": s.projected_through,
            "projection_lag": s.projection_lag(),
            "enriched_through": s.enriched_through, "enrichment_lag": s.enrichment_lag(),
            "embedding_model": s.embedding_model.as_ref().map(|(m, d)| json!({"id": m, "dimension": d})),
            "nodes": s.nodes.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "edges": s.edges.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "pending_edges": s.pending_edges, "bytes_on_disk": s.bytes_on_disk,
            "vectors": s.vectors.0, "unindexed_vectors": s.vectors.1,
            "text_documents": s.text_docs.0, "text_documents_outside_lexical_index": s.text_docs.1,
            "format_version": s.format_version, "schema_modules": s.modules,
            "settings": {"auto_link": !engine.auto_link_stored_off()?},
        }))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    let mut t = table(&["", "count"]);
    t.add_row(vec!["log records".to_owned(), s.log_length.to_string()]);
    t.add_row(vec!["projection lag".to_owned(), s.projection_lag().to_string()]);
    t.add_row(vec!["enrichment lag".to_owned(), s.enrichment_lag().to_string()]);
    for (label, n) in &s.nodes {
        t.add_row(vec![format!("nodes: {label}"), n.to_string()]);
    }
    for (edge_type, n) in &s.edges {
        t.add_row(vec![format!("edges: {edge_type}"), n.to_string()]);
    }
    t.add_row(vec!["edges waiting for an endpoint".to_owned(), s.pending_edges.to_string()]);
    t.add_row(vec![
        "vectors (not yet in the vector index)".to_owned(),
        format!("{} ({})", s.vectors.0, s.vectors.1),
    ]);
    t.add_row(vec![
        "full-text documents (not yet in the lexical index)".to_owned(),
        format!("{} ({})", s.text_docs.0, s.text_docs.1),
    ]);
    t.add_row(vec!["size on disk".to_owned(), bytes(s.bytes_on_disk)]);
    let auto_link = if engine.auto_link_stored_off()? { "off" } else { "on" };
    t.add_row(vec!["setting: automatic memory links".to_owned(), auto_link.to_owned()]);
    if let Some((model, dim)) = &s.embedding_model {
        writeln!(out, "embedding model: {model} ({dim} dimensions)")?;
    }
    writeln!(
        out,
        "{}  (format v{}, schema modules: {})",
        cli.db.display(),
        s.format_version,
        s.modules.join(", ")
    )?;
    writeln!(out, "{t}")?;
    Ok(Outcome::Done)
}

pub(crate) fn log(cli: &Cli, from: u64, limit: usize) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let entries = crate::reader(cli, &engine)?.log(from, limit)?;
    let mut out = std::io::stdout().lock();
    if cli.json {
        print_json(&Value::Array(entries.iter().map(log_json).collect()))?;
    } else if entries.is_empty() {
        writeln!(
            out,
            "no log records from position {from} (`ctxgraph stats` gives the log length)"
        )?;
    } else {
        let mut t = table(&["position", "kind", "id", "recorded_at", "record"]);
        for e in &entries {
            t.add_row(vec![
                e.position.to_string(),
                e.kind.as_str().to_owned(),
                e.id.clone(),
                crate::output::when(&e.recorded_at),
                shorten(&e.body, 90),
            ]);
        }
        writeln!(out, "{t}")?;
    }
    Ok(if entries.is_empty() { Outcome::NotFound } else { Outcome::Done })
}

pub(crate) fn reproject(cli: &Cli, include_archive: bool) -> anyhow::Result<Outcome> {
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let started = std::time::Instant::now();
    let records = engine.owner_reader()?.checkpoints()?.log_length;
    let bar = crate::ingest::progress_bar(records, "records", cli.json);
    let report = engine.reproject_with(include_archive, &mut |done, _| bar.set_position(done))?;
    bar.finish_and_clear();
    crate::enrich::with_progress(&mut engine, cli.json)?;
    engine.consolidate()?;
    let secs = started.elapsed().as_secs_f64();
    if cli.json {
        print_json(
            &json!({"records": report.records, "position": report.position, "seconds": secs}),
        )?;
    } else {
        writeln!(
            std::io::stdout(),
            "reprojected {} records in {secs:.2}s; the graph is at log position {}",
            report.records,
            report.position
        )?;
    }
    Ok(Outcome::Done)
}

pub(crate) fn generate(events: usize, seed: u64) -> anyhow::Result<Outcome> {
    let config = ctxgraph_synth::TraceConfig { events, seed, ..Default::default() };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for event in ctxgraph_synth::trace(&config) {
        serde_json::to_writer(&mut out, &event)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(Outcome::Done)
}
