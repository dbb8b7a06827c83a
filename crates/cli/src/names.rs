//! Nodes named where people type them: by id, or an entity by its name (`mail-relay` finds
//! `service:mail-relay`), with `type:name` to choose when several entity types have the name.

use ctxgraph::{Direction, Node, NodeKey, Reader};

/// The nodes `arg` names, as the principal may see them: every node with that id, else the entity
/// with that name. An entity name that several entity types have is an error listing their ids.
pub(crate) fn nodes_named(reader: &Reader<'_>, arg: &str) -> anyhow::Result<Vec<Node>> {
    let mut nodes = reader.find(arg)?;
    if !nodes.is_empty() {
        return Ok(nodes);
    }
    // Not an id: an entity id in other spelling (`service:Mail-Relay`), or a bare name.
    nodes = crate::entities::entities_named(reader, arg)?;
    if nodes.len() > 1 {
        let ids: Vec<&str> = nodes.iter().map(|n| n.key.id.as_str()).collect();
        return Err(crate::entities::several_named(arg, &ids));
    }
    Ok(nodes)
}

/// The sentence for a name that names nothing, with where to look instead.
pub(crate) fn nothing_named(arg: &str) -> String {
    format!(
        "no node has the id or entity name `{arg}` (`ctxgraph search {}` finds nodes by their text)",
        shell_word(arg)
    )
}

/// The entities a person merged with this one (decided `SAME_AS`), as the principal may see them.
pub(crate) fn merged_with(reader: &Reader<'_>, key: &NodeKey) -> anyhow::Result<Vec<NodeKey>> {
    if key.label != "Entity" {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    // The reader shows an edge only when its other end is visible.
    for e in reader.edges(key, Some("SAME_AS"), Direction::Both)? {
        if e.props.get("decision").and_then(serde_json::Value::as_str) != Some("merged") {
            continue;
        }
        let other = if &e.key.from == key { &e.key.to } else { &e.key.from };
        if other != key && !out.contains(other) {
            out.push(other.clone());
        }
    }
    Ok(out)
}

/// `arg` as one shell word: quoted when it holds anything but plain characters.
fn shell_word(arg: &str) -> String {
    if arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_:./@".contains(c)) {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn names_are_quoted_for_the_shell_only_when_needed() {
        assert_eq!(shell_word("mail-relay"), "mail-relay");
        assert_eq!(shell_word("Ada Lovelace"), "'Ada Lovelace'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
