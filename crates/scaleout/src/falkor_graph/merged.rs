//! Several read queries as one: FalkorDB charges each query a fixed cost (the command's
//! dispatch to a worker thread, the plan-cache lookup, the reply) that does not shrink with the
//! query, and runs a connection's pipelined queries one after another, so a round trip of four
//! small queries costs about twice one query of four parts. The reads sent together
//! (`together.rs`) therefore go as one query of `UNION ALL` parts: every part of query `j`
//! returns `j AS q` and its columns as `c1, c2, …`, padded with nulls to the widest query's
//! count (flat columns: a list column per row made large answers slower to build and parse),
//! its parameters renamed `$qj_name`; the rows are dealt back to their queries by `q`, each
//! row the columns the query alone returns.
//!
//! Only the shapes this crate writes are merged (parts ending in a plain `RETURN` list, which
//! may end in a `LIMIT` of a parameter or a number: it bounds the part's rows whatever columns
//! they carry); anything else is sent as it was, one query per command.

use falkordb::FalkorValue;

use super::together::{Query, Rows};

/// Queries merged as one: the query, and each merged query's column count.
pub(super) struct Merged {
    pub(super) query: Query,
    pub(super) widths: Vec<usize>,
}

/// `queries` as one query, or `None` when one of them has a shape this does not rewrite.
pub(super) fn merge(queries: &[Query]) -> Option<Merged> {
    let mut parts = Vec::new();
    let mut params = Vec::new();
    let mut widths = Vec::with_capacity(queries.len());
    for (j, query) in queries.iter().enumerate() {
        let prefix = format!("q{j}_");
        let mut width = None;
        for part in query.text.split(" UNION ALL ") {
            let (head, columns) = part.rsplit_once(" RETURN ")?;
            let (columns, limit) = match columns.rsplit_once(" LIMIT ") {
                Some((columns, limit)) if is_limit(limit) => {
                    (columns, Some(renamed(limit, &prefix)))
                }
                _ => (columns, None),
            };
            let columns: Vec<String> =
                plain_columns(columns)?.iter().map(|c| renamed(c, &prefix)).collect();
            // The parts of one query return as many columns (Cypher's own rule for a union).
            if width.is_some_and(|w| w != columns.len()) {
                return None;
            }
            width = Some(columns.len());
            parts.push((j, renamed(head, &prefix), columns, limit));
        }
        widths.push(width?);
        params.extend(query.params.iter().map(|(k, v)| (format!("{prefix}{k}"), v.clone())));
    }
    let wide = widths.iter().copied().max().unwrap_or(0);
    let text = parts
        .into_iter()
        .map(|(j, head, columns, limit)| {
            let mut returned = format!("{head} RETURN {j} AS q");
            for c in 1..=wide {
                let expr = columns.get(c - 1).map_or("null", String::as_str);
                returned.push_str(&format!(", {expr} AS c{c}"));
            }
            if let Some(limit) = limit {
                returned.push_str(&format!(" LIMIT {limit}"));
            }
            returned
        })
        .collect::<Vec<String>>()
        .join(" UNION ALL ");
    Some(Merged { query: Query { text, params }, widths })
}

/// The rows of the merged query dealt back to its queries (`widths`: each one's column
/// count): each row without its `q` and padding is the row its own query would have returned.
/// `None` when a row is not `q` (one of the queries) and that query's columns (not a reply
/// of [`merge`]'s query).
pub(super) fn deal(rows: Rows, widths: &[usize]) -> Option<Vec<Rows>> {
    let mut out: Vec<Rows> = vec![Vec::new(); widths.len()];
    for row in rows {
        let mut cols = row.into_iter();
        let Some(FalkorValue::I64(q)) = cols.next() else { return None };
        let q = usize::try_from(q).ok()?;
        let width = *widths.get(q)?;
        let row: Vec<FalkorValue> = cols.take(width).collect();
        if row.len() != width {
            return None;
        }
        out[q].push(row);
    }
    Some(out)
}

/// Whether `text` (what follows a part's last ` LIMIT `) is a parameter or a number alone.
fn is_limit(text: &str) -> bool {
    match text.strip_prefix('$') {
        Some(name) => {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()),
    }
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
    fn parts_return_their_query_and_columns_padded() {
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
        let Merged { query: merged, widths } = merged;
        assert_eq!(
            merged.text,
            "MATCH (n:Entity) WHERE n.id IN $q0_ids RETURN 0 AS q, n.id AS c1, null AS c2 \
             UNION ALL UNWIND $q1_k0 AS k MATCH (n:A {id: k[1]}) RETURN 1 AS q, k[0] AS c1, \
             n.props AS c2 UNION ALL UNWIND $q1_k1 AS k MATCH (n:B {id: k[1]}) WITH k[0] AS i, \
             collect(n.id) AS ids RETURN 1 AS q, i AS c1, ids[0..$q1_limit] AS c2"
        );
        assert_eq!(widths, [1, 2]);
        let names: Vec<&str> = merged.params.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["q0_ids", "q1_k0", "q1_k1", "q1_limit"]);
    }

    #[test]
    fn a_part_keeps_its_limit_after_its_padded_columns() {
        let merged = merge(&[
            query("MATCH (n:A) RETURN n.id AS i, n.seq AS s LIMIT $cap", &["cap"]),
            query("MATCH (n:B) RETURN n.id LIMIT 3", &[]),
        ])
        .expect("a limit of a parameter or a number merges");
        assert_eq!(
            merged.query.text,
            "MATCH (n:A) RETURN 0 AS q, n.id AS c1, n.seq AS c2 LIMIT $q0_cap UNION ALL \
             MATCH (n:B) RETURN 1 AS q, n.id AS c1, null AS c2 LIMIT 3"
        );
        assert_eq!(merged.widths, [2, 1]);
    }

    #[test]
    fn shapes_a_list_would_change_are_not_merged() {
        for text in [
            "MATCH (n) RETURN DISTINCT n.id",
            "MATCH (n) RETURN n.id ORDER BY n.id",
            "MATCH (n) RETURN n.id ORDER BY n.id LIMIT 3",
            "MATCH (n) RETURN n.id LIMIT 3 + $x",
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
        let (a, n) = (FalkorValue::String("a".into()), FalkorValue::None);
        let row = |q: i64, cols: &[FalkorValue]| {
            std::iter::once(FalkorValue::I64(q)).chain(cols.iter().cloned()).collect::<Vec<_>>()
        };
        let (seven, eight) = (FalkorValue::I64(7), FalkorValue::I64(8));
        let dealt = deal(
            vec![
                row(1, &[seven.clone(), n.clone()]),
                row(0, &[a.clone(), n.clone()]),
                row(1, &[eight.clone(), n.clone()]),
            ],
            &[2, 1, 0],
        )
        .expect("rows of the merged query");
        assert_eq!(dealt, vec![vec![vec![a, n.clone()]], vec![vec![seven], vec![eight]], vec![]]);
        assert!(deal(vec![row(3, &[])], &[2, 1, 0]).is_none(), "no such query");
        assert!(deal(vec![row(0, &[n])], &[2, 1, 0]).is_none(), "fewer columns");
        assert!(deal(vec![vec![FalkorValue::Bool(true)]], &[2, 1, 0]).is_none(), "no q");
    }
}
