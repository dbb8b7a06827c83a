//! `--as`: the CLI acting as a principal.
//!
//! Without `--as` the CLI is the store's owner ([`Principal::local`]). With it, the principal
//! comes from the registry, read commands that go through the access policy's choke point
//! (`Snapshot::scoped`) show only what it may see, writes need the writer or admin role, and
//! commands that read the graph without the policy are refused rather than leak.

use std::path::PathBuf;

use anyhow::Context;
use ctxgraph::{Principal, Principals};

use crate::args::{Cli, Command, FactCommand, MemoryCommand, ReceiptCommand};

/// Which way a command touches the store, for the `--as` gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Reads through the policy.
    Scoped,
    /// Writes records.
    Write,
    /// Forgets records or reads the audit: admins only.
    Admin,
    /// Reads without the policy (graph walks, logs, listings): owner only.
    Unscoped,
    /// Touches no store, or only makes its own.
    None,
}

fn kind(command: &Command) -> Kind {
    match command {
        Command::Get { .. }
        | Command::Session { .. }
        | Command::Stats
        | Command::Search { .. }
        | Command::Recall(_)
        | Command::Evolution { .. }
        | Command::Impact { .. }
        | Command::Rollup { .. } => Kind::Scoped,
        Command::Memory(m) => match m {
            MemoryCommand::Show { .. }
            | MemoryCommand::List { .. }
            | MemoryCommand::Search { .. } => Kind::Scoped,
            MemoryCommand::Save(_)
            | MemoryCommand::Outcome { .. }
            | MemoryCommand::Link { .. }
            | MemoryCommand::Unlink { .. }
            | MemoryCommand::Relink => Kind::Write,
        },
        Command::Fact(f) => match f {
            FactCommand::Add(_) | FactCommand::Retract { .. } => Kind::Write,
            FactCommand::List { .. }
            | FactCommand::About { .. }
            | FactCommand::Contradictions { .. } => Kind::Unscoped,
        },
        Command::Ingest(_) | Command::Import(_) | Command::Init => Kind::Write,
        Command::Receipt(r) => match r {
            ReceiptCommand::Add { .. } => Kind::Write,
            ReceiptCommand::List { .. } => Kind::Scoped,
        },
        Command::Forget { .. } | Command::Forgotten => Kind::Admin,
        // The server and MCP authenticate for themselves; the registry is a file of its own.
        Command::Generate { .. }
        | Command::Bench(_)
        | Command::Eval(_)
        | Command::Serve(_)
        | Command::Mcp(_)
        | Command::Principal(_) => Kind::None,
        Command::Demo
        | Command::Neighbors { .. }
        | Command::Chain { .. }
        | Command::View { .. }
        | Command::Log { .. }
        | Command::Schema(_)
        | Command::Entities(_)
        | Command::Type(_)
        | Command::Slot(_)
        | Command::Checklist(_)
        | Command::Goal(_)
        | Command::Doc(_)
        | Command::Reproject { .. }
        | Command::Enrich
        | Command::Consolidate(_)
        | Command::Retention(_)
        | Command::Reembed => Kind::Unscoped,
    }
}

/// The principal the CLI acts as: `--as NAME` from the registry, or the store's owner.
pub(crate) fn principal(cli: &Cli) -> anyhow::Result<Principal> {
    let Some(name) = &cli.as_principal else { return Ok(Principal::local()) };
    let path = registry_path(cli);
    let registry = Principals::open(&path)
        .with_context(|| format!("reading the principal registry {}", path.display()))?;
    Ok(registry.get(name)?)
}

/// Refuse, before anything is opened, what `--as` may not do.
pub(crate) fn gate(cli: &Cli) -> anyhow::Result<()> {
    let kind = kind(&cli.command);
    if cli.as_principal.is_none() || kind == Kind::None {
        return Ok(());
    }
    let who = principal(cli)?;
    let refuse = |code: &'static str, message: String| -> anyhow::Result<()> {
        Err(ctxgraph::Error::Access { code, message }.into())
    };
    match kind {
        Kind::Scoped | Kind::None => Ok(()),
        Kind::Write if who.may_write() => Ok(()),
        Kind::Admin if who.is_admin() => Ok(()),
        Kind::Admin => refuse(
            "access.forbidden",
            format!("principal {:?} may not forget or read the audit: it needs the admin role", who.name()),
        ),
        Kind::Write => refuse(
            "access.forbidden",
            format!("principal {:?} may not write: it needs the writer or admin role", who.name()),
        ),
        Kind::Unscoped => refuse(
            "access.unscoped_command",
            "this command reads the graph without the access policy; run it as the store's owner (without --as)"
                .into(),
        ),
    }
}

fn registry_path(cli: &Cli) -> PathBuf {
    cli.principals.clone().unwrap_or_else(|| {
        cli.db
            .parent()
            .map_or_else(|| PathBuf::from("principals.json"), |d| d.join("principals.json"))
    })
}
