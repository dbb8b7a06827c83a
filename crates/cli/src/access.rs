//! `--as`: the CLI acting as a principal.
//!
//! Without `--as` the CLI is the store's owner ([`Principal::local`]). With it, the principal
//! comes from the registry; every read goes through its `ctxgraph::Reader` (the engine has no
//! other way out), which shows only what it may see and refuses the owner's reads (the log,
//! raw counts); writes need the writer or admin role; rebuilding derived data is the owner's.

use std::path::{Path, PathBuf};

use anyhow::Context;
use ctxgraph::{Principal, Principals};

use crate::args::{
    ChecklistCommand, Cli, Command, DocCommand, EntitiesCommand, FactCommand, GoalCommand,
    MemoryCommand, ReceiptCommand, SchemaCommand, SlotCommand, TypeCommand,
};

/// Which way a command touches the store, for the `--as` gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Reads through the policy.
    Scoped,
    /// Writes records.
    Write,
    /// Forgets records or reads the audit: admins only.
    Admin,
    /// Rebuilds derived data or the schema (reproject, enrich, consolidate, retention,
    /// reembed, schema add, entity resolution): the store's owner only.
    Maintenance,
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
        | Command::Rollup { .. }
        | Command::Export(_)
        | Command::Ui(_) => Kind::Scoped,
        Command::Memory(m) => match m {
            MemoryCommand::Show { .. }
            | MemoryCommand::List { .. }
            | MemoryCommand::Search { .. } => Kind::Scoped,
            MemoryCommand::Save(_)
            | MemoryCommand::Outcome { .. }
            | MemoryCommand::Link { .. }
            | MemoryCommand::Unlink { .. }
            | MemoryCommand::Relink
            | MemoryCommand::AutoLink { .. } => Kind::Write,
        },
        Command::Fact(f) => match f {
            FactCommand::Add(_) | FactCommand::Retract { .. } => Kind::Write,
            FactCommand::List { .. }
            | FactCommand::About { .. }
            | FactCommand::Contradictions { .. } => Kind::Scoped,
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
        | Command::Principal(_)
        | Command::Completions { .. } => Kind::None,
        Command::Neighbors { .. }
        | Command::Chain { .. }
        | Command::View { .. }
        | Command::Log { .. } => Kind::Scoped,
        Command::Schema(c) => match c {
            SchemaCommand::Show | SchemaCommand::Check { .. } => Kind::Scoped,
            SchemaCommand::Add { .. } => Kind::Maintenance,
        },
        Command::Entities(c) => match c {
            EntitiesCommand::Candidates { .. } => Kind::Scoped,
            EntitiesCommand::Merge(_) | EntitiesCommand::Reject(_) => Kind::Write,
            EntitiesCommand::Resolve { .. } => Kind::Maintenance,
        },
        Command::Type(c) => match c {
            TypeCommand::List => Kind::Scoped,
            TypeCommand::Add { .. } | TypeCommand::Instance { .. } => Kind::Write,
        },
        Command::Slot(c) => match c {
            SlotCommand::List { .. } => Kind::Scoped,
            SlotCommand::Set { .. } => Kind::Write,
        },
        Command::Checklist(c) => match c {
            ChecklistCommand::List
            | ChecklistCommand::Check { .. }
            | ChecklistCommand::Next { .. } => Kind::Scoped,
            ChecklistCommand::Define { .. } => Kind::Write,
        },
        Command::Goal(c) => match c {
            GoalCommand::List { .. } => Kind::Scoped,
            GoalCommand::Add { .. } => Kind::Write,
        },
        Command::Doc(c) => match c {
            DocCommand::Show { .. } | DocCommand::List => Kind::Scoped,
            DocCommand::Add { .. } => Kind::Write,
        },
        Command::Demo
        | Command::Reproject { .. }
        | Command::Enrich
        | Command::Consolidate(_)
        | Command::Retention(_)
        | Command::Reembed
        | Command::Migrate(_)
        | Command::Worker(_)
        | Command::Drop { .. }
        | Command::Backup { .. }
        | Command::Restore { .. } => Kind::Maintenance,
    }
}

/// The principal the CLI acts as: `--as NAME` from the registry, or the store's owner.
pub(crate) fn principal(cli: &Cli) -> anyhow::Result<Principal> {
    principal_for(cli, &cli.db)
}

/// The principal the CLI acts as on the store `store`. A principal of another tenant than the
/// store's is refused: tenants are separate stores, and `--as` must not read across them.
pub(crate) fn principal_for(cli: &Cli, store: &Path) -> anyhow::Result<Principal> {
    let Some(name) = &cli.as_principal else { return Ok(Principal::local()) };
    if let Some(url) = store.to_str().filter(|s| s.starts_with("redis://")) {
        return scale_out_principal(cli, name, url);
    }
    let path = registry_path(cli, store);
    let registry = Principals::open(&path)
        .with_context(|| format!("reading the principal registry {}", path.display()))?;
    let who = registry.get(name)?;
    let tenant = store_tenant(store);
    if who.tenant() != tenant {
        return Err(ctxgraph::Error::Access {
            code: "access.wrong_tenant",
            message: format!(
                "principal {name:?} belongs to tenant {:?}, but the store {} holds tenant {tenant:?}; \
                 open its own tenant's store (tenants/{}.ctxg in the data directory)",
                who.tenant(),
                store.display(),
                who.tenant()
            ),
        }
        .into());
    }
    Ok(who)
}

/// `--as NAME` on a scale-out store (`redis://HOST:PORT/STORE`): the registry is the one
/// `--principals` names (the servers' `DATA/principals.json`; nothing lies beside a store on a
/// server to find one by), and the principal's tenant must be the store's
/// ([`scale_out_tenant`]).
fn scale_out_principal(cli: &Cli, name: &str, url: &str) -> anyhow::Result<Principal> {
    let url = ctxgraph_scaleout::StoreUrl::parse(url).map_err(|e| anyhow::anyhow!("--db: {e}"))?;
    let Some(path) = &cli.principals else {
        return Err(ctxgraph::Error::Access {
            code: "access.registry_required",
            message: format!(
                "--as {name:?} on the scale-out store {url}: pass the principal registry its \
                 servers read with --principals FILE (their DATA/principals.json); a store on a \
                 server has no file beside it"
            ),
        }
        .into());
    };
    let registry = Principals::open(path)
        .with_context(|| format!("reading the principal registry {}", path.display()))?;
    let who = registry.get(name)?;
    let tenant = scale_out_tenant(url.name(), registry.list().map(|p| p.tenant.as_str()));
    if who.tenant() != tenant {
        return Err(ctxgraph::Error::Access {
            code: "access.wrong_tenant",
            message: format!(
                "principal {name:?} belongs to tenant {:?}, but the store {url} holds tenant \
                 {tenant:?}; open its own tenant's store (STORE-{} on the server, where \
                 `serve --db redis://HOST:PORT/STORE` keeps it)",
                who.tenant(),
                who.tenant()
            ),
        }
        .into());
    }
    Ok(who)
}

/// The tenant a scale-out store holds: `t` for a store named `BASE-t` where `t` is a tenant of
/// the registry (the longest such: `serve --db redis://HOST:PORT/BASE` keeps tenant `t` in the
/// store `BASE-t`), otherwise the default tenant (as for a store file outside a data
/// directory).
fn scale_out_tenant<'a>(store: &str, tenants: impl Iterator<Item = &'a str>) -> String {
    tenants
        .filter(|t| {
            store
                .strip_suffix(t)
                .and_then(|base| base.strip_suffix('-'))
                .is_some_and(|b| !b.is_empty())
        })
        .max_by_key(|t| t.len())
        .unwrap_or(ctxgraph::access::DEFAULT_TENANT)
        .to_owned()
}

/// The tenant a store file holds: `<name>` for a server's `tenants/<name>.ctxg`, otherwise the
/// default tenant (the one of the store's owner).
fn store_tenant(store: &Path) -> String {
    let in_tenants = store.parent().and_then(Path::file_name).is_some_and(|d| d == "tenants");
    match store.file_stem().and_then(|s| s.to_str()) {
        Some(stem) if in_tenants && store.extension().is_some_and(|e| e == "ctxg") => {
            stem.to_owned()
        }
        _ => ctxgraph::access::DEFAULT_TENANT.to_owned(),
    }
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
        Kind::Maintenance => refuse(
            "access.owner_only",
            "this command rebuilds derived data or the schema; run it as the store's owner (without --as)"
                .into(),
        ),
    }
}

/// `--principals`, or `principals.json` beside the store; for a server's tenant store
/// (`<data>/tenants/<tenant>.ctxg`), the data directory's registry.
fn registry_path(cli: &Cli, store: &Path) -> PathBuf {
    if let Some(p) = &cli.principals {
        return p.clone();
    }
    let dir = store.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match dir.parent() {
        Some(data) if dir.file_name().is_some_and(|d| d == "tenants") => {
            data.join("principals.json")
        }
        _ => dir.join("principals.json"),
    }
}

#[cfg(test)]
mod tests {
    use super::scale_out_tenant;

    #[test]
    fn a_scale_out_store_holds_the_registry_tenant_its_name_ends_with() {
        let tenants = ["acme", "default", "co-acme", "x"];
        let of = |store: &str| scale_out_tenant(store, tenants.iter().copied());
        assert_eq!(of("team-acme"), "acme");
        // The longest tenant the name ends with wins.
        assert_eq!(of("team-co-acme"), "co-acme");
        assert_eq!(of("team-default"), "default");
        // No tenant suffix, a bare tenant name, or a suffix without its dash: the default.
        assert_eq!(of("team"), "default");
        assert_eq!(of("acme"), "default");
        assert_eq!(of("teamacme"), "default");
        assert_eq!(scale_out_tenant("team-acme", std::iter::empty()), "default");
    }
}
