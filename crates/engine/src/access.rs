//! Principals and the access policy: who is asking, and what they may see.
//!
//! A [`Principal`] has a name, a tenant and roles. Tenants are separate stores (a server keeps
//! one file per tenant), so no read or write can cross them; inside a store, every read goes
//! through a [`crate::Reader`] made for one principal (the engine has no other way out for
//! reads), which applies [`Principal::allows`] to every node before it is returned, counted or
//! walked through.
//!
//! The policy reads the scope and PII properties that events and memories carry (see
//! `ctxgraph_ontology::Scope`). In order, a node is hidden from a principal when:
//! 1. it denies one of the principal's roles (`scope_deny_roles`), whoever the principal is;
//! 2. it is pending PII review, or holds PII not cleared (`pii_cleared = false`), and the
//!    principal lacks the `pii_reviewer` role;
//! 3. it names allowed roles (`scope_allow_roles`) and the principal holds none of them, unless
//!    the principal is an `admin`;
//! 4. it names an audience (`scope_audience`) and no entry matches the principal
//!    (`role:R` for a role it holds, `principal:`/`agent:`/`user:` its name), unless `admin`.
//!
//! The store's owner ([`Principal::local`], the CLI without `--as`) is not checked.
//!
//! Records without scope (facts, documents, slots, types) are visible to everyone in the tenant.
//! Nodes derived from records are decided from their sources (see [`crate::Reader::may_see`]): a
//! summary is hidden when any event below it is hidden, an entity when no record naming it is
//! visible (and its counts and times are left out when some are hidden), a decision receipt
//! when any event it cites is hidden: the same rule for every listing, search and recall.

mod principals;

use std::collections::BTreeSet;

use ctxgraph_ontology::graph::Node;
use serde_json::Value;

use crate::error::Error;

pub use crate::view::{ExportFilter, ExportItem};
pub use principals::{KEY_PREFIX, PrincipalEntry, Principals, new_key};

/// May write records (ingest, facts, memories, receipts).
pub const ROLE_WRITER: &str = "writer";
/// May write, forget and manage principals; passes allow-role and audience checks.
pub const ROLE_ADMIN: &str = "admin";
/// May see records pending PII review or holding PII not cleared.
pub const ROLE_PII_REVIEWER: &str = "pii_reviewer";
/// Name of the principal the local CLI acts as when `--as` is not given.
pub const LOCAL_PRINCIPAL: &str = "local";
/// The tenant of a store opened directly (not through a server).
pub const DEFAULT_TENANT: &str = "default";
/// Longest principal, tenant or role name.
pub const MAX_NAME_LEN: usize = 64;

/// The properties [`Principal::allows`] reads, all it needs of a node besides its key: checks
/// of many nodes read only these (`GraphReader::node_props_named`).
pub(crate) const SCOPE_PROPS: [&str; 5] =
    ["scope_deny_roles", "pending_review", "pii_cleared", "scope_allow_roles", "scope_audience"];

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    name: String,
    tenant: String,
    roles: BTreeSet<String>,
    /// The store's owner (the local CLI without `--as`): sees everything, since it can read the
    /// file anyway. Only [`Principal::local`] makes one.
    owner: bool,
}

/// Why a node is hidden from a principal (for tests and audits; never sent to the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial {
    /// A role the principal holds is denied.
    DeniedRole,
    /// PII pending review or not cleared.
    Pii,
    /// None of the allowed roles.
    NotAllowedRole,
    /// Not in the audience.
    NotAudience,
}

impl Principal {
    /// A principal; names are checked by [`check_name`].
    pub fn new(
        name: &str,
        tenant: &str,
        roles: impl IntoIterator<Item = String>,
    ) -> Result<Principal, Error> {
        check_name("principal", name)?;
        check_name("tenant", tenant)?;
        let roles: BTreeSet<String> = roles.into_iter().collect();
        for r in &roles {
            check_name("role", r)?;
        }
        Ok(Principal { name: name.to_owned(), tenant: tenant.to_owned(), roles, owner: false })
    }

    /// The owner of a store opened directly (the CLI without `--as`): tenant `default`, roles
    /// admin, writer and pii_reviewer, and no rule applies to it — whoever can open the file can
    /// read it anyway.
    pub fn local() -> Principal {
        Principal {
            name: LOCAL_PRINCIPAL.to_owned(),
            tenant: DEFAULT_TENANT.to_owned(),
            roles: [ROLE_ADMIN, ROLE_WRITER, ROLE_PII_REVIEWER].map(str::to_owned).into(),
            owner: true,
        }
    }

    /// Whether it is the store's owner (see [`Principal::local`]).
    pub fn is_owner(&self) -> bool {
        self.owner
    }

    /// Name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Tenant.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Roles, sorted.
    pub fn roles(&self) -> &BTreeSet<String> {
        &self.roles
    }

    /// Whether it holds `role`.
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.contains(role)
    }

    /// Whether it may write records.
    pub fn may_write(&self) -> bool {
        self.has_role(ROLE_WRITER) || self.has_role(ROLE_ADMIN)
    }

    /// Whether it may forget records and manage principals.
    pub fn is_admin(&self) -> bool {
        self.has_role(ROLE_ADMIN)
    }

    /// The policy: `Ok` when the node's scope lets this principal see it. The rules are in the
    /// module documentation; this is the only function that reads scope properties, and it
    /// reads only [`SCOPE_PROPS`] (so a node read with those alone gets the same verdict).
    pub fn allows(&self, node: &Node) -> Result<(), Denial> {
        if self.owner {
            return Ok(());
        }
        let p = &node.props;
        if list(p.get("scope_deny_roles")).any(|r| self.roles.contains(r)) {
            return Err(Denial::DeniedRole);
        }
        let pii_blocked = p.get("pending_review") == Some(&Value::Bool(true))
            || p.get("pii_cleared") == Some(&Value::Bool(false));
        if pii_blocked && !self.has_role(ROLE_PII_REVIEWER) {
            return Err(Denial::Pii);
        }
        if self.is_admin() {
            return Ok(());
        }
        let mut allow = list(p.get("scope_allow_roles")).peekable();
        if allow.peek().is_some() && !allow.any(|r| self.roles.contains(r)) {
            return Err(Denial::NotAllowedRole);
        }
        let mut audience = list(p.get("scope_audience")).peekable();
        if audience.peek().is_some() && !audience.any(|entry| self.in_audience(entry)) {
            return Err(Denial::NotAudience);
        }
        Ok(())
    }

    fn in_audience(&self, entry: &str) -> bool {
        match entry.split_once(':') {
            Some(("role", role)) => self.roles.contains(role),
            Some(("principal" | "agent" | "user", name)) => name == self.name,
            _ => false,
        }
    }
}

fn list(value: Option<&Value>) -> impl Iterator<Item = &str> {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
}

/// Principal, tenant and role names: 1 to 64 of `a-z A-Z 0-9 _ - .`, not starting with `.`
/// (tenant names become file names).
pub fn check_name(field: &'static str, name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::Access {
            code: "access.name_format",
            message: format!(
                "{field} {name:?}: names are 1 to {MAX_NAME_LEN} of a-z, A-Z, 0-9, '_', '-', '.', not starting with '.'"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxgraph_ontology::graph::{NodeKey, Properties};
    use serde_json::json;

    fn node(props: Value) -> Node {
        let props: Properties = serde_json::from_value(props).unwrap_or_default();
        Node { key: NodeKey::new("Event", "e1"), props }
    }

    fn who(roles: &[&str]) -> Principal {
        Principal::new("ops1", "t1", roles.iter().map(|r| r.to_string())).unwrap()
    }

    #[test]
    fn the_rules_in_order() {
        let open = node(json!({}));
        assert_eq!(who(&[]).allows(&open), Ok(()));
        let denied = node(json!({"scope_deny_roles": ["visitor"]}));
        assert_eq!(who(&["visitor", "admin"]).allows(&denied), Err(Denial::DeniedRole));
        assert_eq!(who(&["operator"]).allows(&denied), Ok(()));
        let pii = node(json!({"pii_cleared": false}));
        assert_eq!(who(&["admin"]).allows(&pii), Err(Denial::Pii));
        assert_eq!(who(&["pii_reviewer"]).allows(&pii), Ok(()));
        let pending = node(json!({"pending_review": true, "pii_cleared": true}));
        assert_eq!(who(&["operator"]).allows(&pending), Err(Denial::Pii));
        let allow = node(json!({"scope_allow_roles": ["operator"]}));
        assert_eq!(who(&["viewer"]).allows(&allow), Err(Denial::NotAllowedRole));
        assert_eq!(who(&["operator"]).allows(&allow), Ok(()));
        assert_eq!(who(&["admin"]).allows(&allow), Ok(()));
        let audience = node(json!({"scope_audience": ["role:operator", "principal:ops2"]}));
        assert_eq!(who(&["viewer"]).allows(&audience), Err(Denial::NotAudience));
        assert_eq!(who(&["operator"]).allows(&audience), Ok(()));
        let named = node(json!({"scope_audience": ["agent:ops1"]}));
        assert_eq!(who(&[]).allows(&named), Ok(()));
    }

    #[test]
    fn a_node_with_its_scope_properties_alone_gets_the_same_verdict() {
        let scopes = [
            json!({}),
            json!({"scope_deny_roles": ["visitor"]}),
            json!({"pii_cleared": false}),
            json!({"pending_review": true, "pii_cleared": true}),
            json!({"scope_allow_roles": ["operator"]}),
            json!({"scope_audience": ["role:operator", "principal:ops2"]}),
            json!({"scope_audience": ["agent:ops1"], "scope_deny_roles": ["admin"]}),
        ];
        let principals =
            [who(&[]), who(&["visitor", "admin"]), who(&["operator"]), who(&["pii_reviewer"])];
        for scope in scopes {
            let mut full = node(scope);
            full.props.insert("payload".into(), json!({"scope_audience": ["nobody"]}));
            full.props.insert("session_id".into(), json!("s1"));
            let mut scoped = full.clone();
            scoped.props.retain(|k, _| SCOPE_PROPS.contains(&k.as_str()));
            for p in &principals {
                assert_eq!(p.allows(&full), p.allows(&scoped), "{:?} {:?}", full.props, p.roles());
            }
        }
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("tenant", "acme-1").is_ok());
        for bad in ["", "../x", ".hidden", "a b", &"x".repeat(65)] {
            let err = check_name("tenant", bad).unwrap_err();
            assert_eq!(err.code(), "access.name_format", "{bad}");
        }
    }
}
