//! Where a store lives when its URL lists several instances: on the one its name hashes to
//! ([`StoreUrl`]). A store written under another list of instances (one added since, or the
//! list spelled otherwise) is on another instance; using it through this list would start an
//! empty copy beside it, so it is refused before anything is read or written.

use ctxgraph_store::StoreError;

use crate::reply::{connect, failure};
use crate::url::StoreUrl;

/// Refuse `url`'s store ([`StoreError::Misplaced`]) when its home instance holds no record of
/// it and another instance the URL lists does. A store its home holds is used without asking
/// the others, so an instance that is down stops only the stores on it and new ones; with one
/// instance nothing is asked.
pub(crate) fn check(url: &StoreUrl, home: &mut redis::Connection) -> Result<(), StoreError> {
    if url.instance_count() < 2 {
        return Ok(());
    }
    // The log's head: every store that holds a record has one. Not the graph: a read of a
    // store that holds nothing creates its graph's indexes, and the graph is the log's fold.
    let head = format!("{}head", url.key_prefix());
    let held = |conn: &mut redis::Connection, at: &StoreUrl| -> Result<bool, StoreError> {
        let found: u64 =
            redis::cmd("EXISTS").arg(&head).query(conn).map_err(|e| failure("redis", at, &e))?;
        Ok(found > 0)
    };
    if held(home, url)? {
        return Ok(());
    }
    for other in url.each_instance() {
        if other.instance() == url.instance() {
            continue;
        }
        let mut conn = connect(&other).map_err(|e| failure("redis", &other, &e))?;
        if held(&mut conn, &other)? {
            return Err(StoreError::Misplaced {
                name: url.name().to_owned(),
                found_on: other.instance(),
                home: url.instance(),
            });
        }
    }
    Ok(())
}
