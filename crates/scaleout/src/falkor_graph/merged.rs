//! Several read queries as one: FalkorDB charges each query a fixed cost (the command's
//! dispatch to a worker thread, the plan-cache lookup, the reply) that does not shrink with the
//! query, and runs a connection's pipelined queries one after another, so a round trip of four
//! small queries costs about twice one query of four parts. The reads sent together
//! (`together.rs`) therefore go as one query of `UNION ALL` parts: every part of query `j`
//! returns `j AS q, [its columns] AS r`, its parameters renamed `$qj_name`, and the rows are
//! dealt back to their queries by `q`, each row the columns the query alone returns.
//!
//! Only the shapes this crate writes are merged (parts ending in a plain `RETURN` list);
//! anything else is sent as it was, one query per command.

use falkordb::FalkorValue;

use super::together::{Query, Rows};

/// `queries` as one query, or `None` when one of them has a shape this does not rewrite.
pub(super) fn merge(queries: &[Query]) -> Option<Query> {
    let mut parts = Vec::new();
    let mut params = Vec::new();
    for (j, query) in queries.iter().enumerate() {
        let prefix = format!("q{j}_");
        for part in query.text.split(" UNION ALL ") {
            let (head, columns) = part.rsplit_once(" RETURN ")?;
            let columns = plain_columns(columns)?;
            let head = renamed(head, &prefix);
            let columns: Vec<String> = columns.iter().map(|c| renamed(c, &prefix)).collect();
            parts.push(format!("{head} RETURN {j} AS q, [{}] AS r", columns.join(", ")));
        }
        params.extend(query.params.iter().map(|(k, v)| (format!("{prefix}{k}"), v.clone())));
    }
    Some(Query { text: parts.join(" UNION ALL "), params })
}

/// The rows of the merged query dealt back to its `count` queries: each row's list column
/// becomes the row its own query would have returned. `None` when a row is not `[q, list]`
/// with `q` one of the queries (not a reply of [`merge`]'s query).
pub(super) fn deal(rows: Rows, count: usize) -> Option<Vec<Rows>> {
    let mut out: Vec<Rows> = vec![Vec::new(); count];
    for row in rows {
        let mut cols = row.into_iter();
        let (Some(FalkorValue::I64(q)), Some(FalkorValue::Array(r)), None) =
            (cols.next(), cols.next(), cols.next())
        else {
            return None;
        };
        out.get_mut(usize::try_from(q).ok()?)?.push(r);
    }
    Some(out)
}

/// The expressions of a `RETURN` list without their aliases, split at the commas outside
/// brackets; `None` when the list is more than expressions (`DISTINCT`, `ORDER BY`, `SKIP`,
/// `LIMIT`, `*`), whose meaning a list column would change.
fn plain_columns(list: &str) -> Option<Vec<String>> {
    let upper = list.to_ascii_uppercase();
    if upper.starts_with("DISTINCT ")
        || [" ORDER BY ", " SKIP ", " LIMIT "].iter().any(|w| upper.contains(w))
        || list.trim() == "*"
    {
        return None;
    }
    let mut columns = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in list.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                columns.push(unaliased(&list[start..i])?);
                start = i + 1;
            }
            '\'' | '"' | '`' => return None,
            _ => {}
        }
    }
    columns.push(unaliased(&list[start..])?);
    Some(columns)
}

/// One column's expression without its ` AS alias`.
fn unaliased(column: &str) -> Option<String> {
    let column = column.trim();
    let expr = match column.rsplit_once(" AS ") {
        Some((expr, alias)) if alias.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            expr.trim()
        }
        _ => column,
    };
    (!expr.is_empty()).then(|| expr.to_owned())
}

/// `text` with every parameter `$name` renamed `${prefix}name`.
fn renamed(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..=at]);
        out.push_str(prefix);
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(text: &str, params: &[&str]) -> Query {
        Query {
            text: text.to_owned(),
            params: params.iter().map(|p| ((*p).to_owned(), FalkorValue::I64(1))).collect(),
        }
    }

    #[test]
    fn parts_return_their_query_and_columns_as_a_list() {
        let merged = merge(&[
            query("MATCH (n:Entity) WHERE n.id IN $ids RETURN n.id", &["ids"]),
            query(
                "UNWIND $k0 AS k MATCH (n:A {id: k[1]}) RETURN k[0] AS i, n.props AS p UNION ALL \
                 UNWIND $k1 AS k MATCH (n:B {id: k[1]}) WITH k[0] AS i, collect(n.id) AS ids \
                 RETURN i, ids[0..$limit]",
                &["k0", "k1", "limit"],
            ),
        ])
        .expect("a shape this crate writes");
        assert_eq!(
            merged.text,
            "MATCH (n:Entity) WHERE n.id IN $q0_ids RETURN 0 AS q, [n.id] AS r UNION ALL \
             UNWIND $q1_k0 AS k MATCH (n:A {id: k[1]}) RETURN 1 AS q, [k[0], n.props] AS r \
             UNION ALL UNWIND $q1_k1 AS k MATCH (n:B {id: k[1]}) WITH k[0] AS i, \
             collect(n.id) AS ids RETURN 1 AS q, [i, ids[0..$q1_limit]] AS r"
        );
        let names: Vec<&str> = merged.params.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["q0_ids", "q1_k0", "q1_k1", "q1_limit"]);
    }

    #[test]
    fn shapes_a_list_would_change_are_not_merged() {
        for text in [
            "MATCH (n) RETURN DISTINCT n.id",
            "MATCH (n) RETURN n.id ORDER BY n.id",
            "MATCH (n) RETURN n.id LIMIT 3",
            "MATCH (n) RETURN *",
            "MATCH (n) RETURN 'a, b'",
            "MATCH (n) SET n.x = 1",
        ] {
            assert!(
                merge(&[query(text, &[]), query("MATCH (m) RETURN m.id", &[])]).is_none(),
                "{text}"
            );
        }
    }

    #[test]
    fn rows_go_back_to_their_queries() {
        let row =
            |q: i64, cols: Vec<FalkorValue>| vec![FalkorValue::I64(q), FalkorValue::Array(cols)];
        let dealt = deal(
            vec![
                row(1, vec![FalkorValue::I64(7)]),
                row(0, vec![FalkorValue::String("a".into()), FalkorValue::None]),
                row(1, vec![FalkorValue::I64(8)]),
            ],
            3,
        )
        .expect("rows of the merged query");
        assert_eq!(dealt.len(), 3);
        assert_eq!(dealt[0], vec![vec![FalkorValue::String("a".into()), FalkorValue::None]]);
        assert_eq!(dealt[1], vec![vec![FalkorValue::I64(7)], vec![FalkorValue::I64(8)]]);
        assert!(dealt[2].is_empty());
        assert!(deal(vec![row(3, Vec::new())], 3).is_none());
        assert!(deal(vec![vec![FalkorValue::I64(0)]], 3).is_none());
    }
}
