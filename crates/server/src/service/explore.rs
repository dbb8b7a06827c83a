//! The explorer's reads: a node by id with its provenance and edge groups, and a page of its
//! neighbours over one edge type and direction. Both read only through the caller's `Reader`,
//! and every list is capped and paged, so a hub costs a page.

use ctxgraph::{NodeKey, Principal, RetentionOptions};

use super::{Service, cursor_offset};
use crate::error::ServiceError;
use crate::wire::*;

/// Edges of one group counted for a node's summary; past it the group says `more`.
const GROUP_CAP: usize = 100;
/// Default and largest neighbour pages.
const DEFAULT_NEIGHBORS: usize = 50;
const MAX_NEIGHBORS: usize = 200;
/// The deepest a neighbour page may start: paging reads from the group's start each time, so
/// the offset is bounded as the page is.
const MAX_NEIGHBOR_OFFSET: usize = 10_000;

impl Service {
    /// Every visible node with this id (of one type when `label` is given), each with its
    /// provenance and its edge groups counted up to [`GROUP_CAP`]; `node.not_found` when none.
    pub async fn node(
        &self,
        who: &Principal,
        id: String,
        q: NodeQuery,
    ) -> Result<NodeList, ServiceError> {
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            let mut nodes = Vec::new();
            for n in snap.find(&id)? {
                if q.label.as_ref().is_some_and(|l| l != &n.key.label) {
                    continue;
                }
                let Some(provenance) = snap.provenance(&n.key)? else { continue };
                let edges = snap.edge_groups(&n.key, GROUP_CAP)?;
                nodes.push(NodeDetailDto {
                    node: (&n).into(),
                    provenance: (&provenance).into(),
                    edges: edges.iter().map(EdgeGroupDto::from).collect(),
                });
            }
            if nodes.is_empty() {
                return Err(ServiceError::not_found(
                    "node.not_found",
                    match &q.label {
                        Some(l) => format!("no {l} node {id:?}"),
                        None => format!("no node {id:?}"),
                    },
                ));
            }
            Ok(NodeList { nodes })
        })
        .await
    }

    /// A page of a visible node's neighbours over one edge type and direction.
    pub async fn neighbors(
        &self,
        who: &Principal,
        id: String,
        q: NeighborsQuery,
    ) -> Result<NeighborPage, ServiceError> {
        let out = match q.direction.as_str() {
            "out" => true,
            "in" => false,
            other => {
                return Err(ServiceError::bad_request(
                    "request.direction",
                    format!("direction {other:?}: give out or in"),
                ));
            }
        };
        let limit = match q.limit {
            None => DEFAULT_NEIGHBORS,
            Some(0) => {
                return Err(ServiceError::bad_request(
                    "request.limit_range",
                    format!("limit 0: ask for 1 to {MAX_NEIGHBORS} neighbours"),
                ));
            }
            Some(n) => n.min(MAX_NEIGHBORS),
        };
        let offset = cursor_offset(q.cursor.as_deref())?;
        if offset > MAX_NEIGHBOR_OFFSET {
            return Err(ServiceError::bad_request(
                "request.cursor",
                format!(
                    "cursor past {MAX_NEIGHBOR_OFFSET} neighbours: a group this large is read by \
                     recall or search, not paged to its end"
                ),
            ));
        }
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            let key = NodeKey::new(&q.label, &id);
            if snap.node(&key)?.is_none() {
                return Err(ServiceError::not_found(
                    "node.not_found",
                    format!("no {} node {id:?}", q.label),
                ));
            }
            let mut page = snap.neighbors(&key, &q.edge_type, out, offset, limit + 1)?;
            let more = page.len() > limit;
            page.truncate(limit);
            let next_cursor = more.then(|| format!("o{}", offset + page.len()));
            Ok(NeighborPage {
                neighbors: page.iter().map(NeighborDto::from).collect(),
                next_cursor,
            })
        })
        .await
    }

    /// Events per retention tier now and the archived count: the store's owner only (it counts
    /// hidden events too). Reads every event, so it is a request of its own, apart from stats.
    pub async fn retention(&self, who: &Principal) -> Result<RetentionDto, ServiceError> {
        self.read(who, move |e, who| {
            let tiers = e.reader(who)?.retention_tiers(&RetentionOptions::default())?;
            Ok(RetentionDto::from(&tiers))
        })
        .await
    }

    /// The store's own figures (log, lags, counts per type, size): the store's owner only, as
    /// they read past the access policy.
    pub async fn store_stats(&self, who: &Principal) -> Result<StoreStatsDto, ServiceError> {
        self.read(who, move |e, who| Ok(StoreStatsDto::new(&e.reader(who)?.store_stats()?))).await
    }

    /// Who `who` is, read from the key alone (no store is opened).
    pub fn whoami(&self, who: &Principal) -> WhoAmI {
        WhoAmI {
            name: who.name().to_owned(),
            tenant: who.tenant().to_owned(),
            roles: who.roles().iter().cloned().collect(),
            owner: who.is_owner(),
        }
    }
}
