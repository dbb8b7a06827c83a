//! The nodes recall reads, kept decoded between recalls.
//!
//! Recall reads the node of every vector and BM25 hit by its id, about a hundred a question,
//! and decoding a node's JSON properties into a map (a dozen keys and strings allocated each)
//! was the largest single cost of its own thread. Questions of one store find the same nodes
//! again, so a node decoded once is kept with the text it was decoded from, and a read of the
//! same id whose row holds the same key and the same text gets the kept node back (shared,
//! not copied). The check is the row itself, so no write can make the cache answer a node
//! other than the one stored: a changed node has another text and is decoded again. Memory
//! is bounded by [`MAX_TEXT_BYTES`] of kept text: past it the cache starts over.
//!
//! On a store whose every read is a round trip, the check by the row would cost the round trip
//! it is there to save. Such a store says which generation of its nodes a read sees
//! ([`ctxgraph_store::GraphReader::node_generation`], moved by every commit that writes a
//! node, in the commit's own transaction), and the nodes it gave are kept by key with that
//! generation ([`NodeCache::kept_at`], [`NodeCache::keep_at`]): a read at the same generation
//! takes them from here (absent ones too), and the first read at another starts the cache
//! over, so what a write changed or deleted is let go at the next read that sees the write.
//! Memory is bounded by [`MAX_KEYED_NODES`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use ctxgraph_ontology::graph::{Node, NodeKey};
use ctxgraph_store::{NodeDecode, StoreError, props_from};

/// Stored text kept at most (summed over nodes). A decoded node takes several times its text
/// (a map's nodes, keys and values allocated one by one, about 3.5 KB for an event of 450
/// bytes), so a full cache holds about 55,000 nodes in some 200 MB. 8 MiB (19,000 nodes) was
/// less than the 300 questions of `bench recall` read at 1,000,000 events: the cache started
/// over during every pass.
const MAX_TEXT_BYTES: usize = 24 << 20;

/// Nodes kept by key at most, absent ones included: about what [`MAX_TEXT_BYTES`] holds.
const MAX_KEYED_NODES: usize = 50_000;

/// Nodes decoded so far, by node id, and those read by key from a store that tells its node
/// generation.
#[derive(Default)]
pub(crate) struct NodeCache {
    decoded: Mutex<Kept>,
    keyed: Mutex<Keyed>,
}

#[derive(Default)]
struct Kept {
    bytes: usize,
    nodes: HashMap<i64, (Box<str>, Arc<Node>)>,
}

/// Nodes as read by key at one node generation (`None`: the node did not exist).
#[derive(Default)]
struct Keyed {
    generation: u64,
    nodes: HashMap<NodeKey, Option<Arc<Node>>>,
}

impl NodeCache {
    /// Forget every node kept.
    pub(crate) fn clear(&self) {
        *self.decoded.lock().unwrap_or_else(PoisonError::into_inner) = Kept::default();
        *self.keyed.lock().unwrap_or_else(PoisonError::into_inner) = Keyed::default();
    }

    /// What the cache holds of each of `keys` at node generation `generation` (the reader's):
    /// `Some(node)` for a key read at that generation (`Some(None)`: it did not exist), `None`
    /// for one to read. A cache at another generation starts over at this one.
    pub(crate) fn kept_at(
        &self,
        generation: u64,
        keys: &[NodeKey],
    ) -> Vec<Option<Option<Arc<Node>>>> {
        let mut keyed = self.keyed.lock().unwrap_or_else(PoisonError::into_inner);
        if keyed.generation != generation {
            *keyed = Keyed { generation, nodes: HashMap::new() };
        }
        keys.iter().map(|k| keyed.nodes.get(k).cloned()).collect()
    }

    /// Keep `nodes`, read for `keys` at node generation `generation`; another reader may have
    /// moved the cache to another generation meanwhile: they are then not kept.
    pub(crate) fn keep_at(&self, generation: u64, keys: &[NodeKey], nodes: &[Option<Arc<Node>>]) {
        let mut keyed = self.keyed.lock().unwrap_or_else(PoisonError::into_inner);
        if keyed.generation != generation {
            return;
        }
        if keyed.nodes.len() + keys.len() > MAX_KEYED_NODES {
            keyed.nodes.clear();
        }
        for (key, node) in keys.iter().zip(nodes) {
            keyed.nodes.insert(key.clone(), node.clone());
        }
    }
}

impl NodeDecode for NodeCache {
    fn decode(
        &self,
        nid: i64,
        label: &str,
        id: &str,
        props: &str,
    ) -> Result<Arc<Node>, StoreError> {
        {
            let kept = self.decoded.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((text, node)) = kept.nodes.get(&nid)
                && **text == *props
                && node.key.label == label
                && node.key.id == id
            {
                return Ok(Arc::clone(node));
            }
        }
        // Decoded outside the lock: engines sharing the cache do not wait for each other.
        let node = Arc::new(Node { key: NodeKey::new(label, id), props: props_from(props)? });
        let mut kept = self.decoded.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.bytes + props.len() > MAX_TEXT_BYTES {
            *kept = Kept::default();
        }
        kept.bytes += props.len();
        if let Some((old, _)) = kept.nodes.insert(nid, (props.into(), Arc::clone(&node))) {
            kept.bytes -= old.len();
        }
        Ok(node)
    }
}

#[cfg(test)]
mod tests {
    use ctxgraph_ontology::graph::Properties;
    use ctxgraph_store::{Embedded, GraphReader, GraphStore, OpenMode, props_to};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    fn node(id: &str, props: Value) -> Node {
        let props: Properties =
            props.as_object().cloned().unwrap_or_default().into_iter().collect();
        Node { key: NodeKey::new("Event", id), props }
    }

    #[test]
    fn a_node_read_again_is_shared_and_a_changed_one_is_decoded_again() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut store =
            Embedded::open(&dir.path().join("t.ctxg"), OpenMode::CreateIfMissing).unwrap();
        let mut w = store.begin_write().unwrap();
        w.put_node(&node("a", json!({"summary": "first", "n": 1}))).unwrap();
        w.put_node(&node("b", json!({"summary": "second"}))).unwrap();
        w.commit().unwrap();
        let nids: Vec<i64> = {
            let r = store.begin_read().unwrap();
            let keys = [NodeKey::new("Event", "a"), NodeKey::new("Event", "b")];
            let all = r.node_keys(&[1, 2, 3]).unwrap();
            keys.iter()
                .map(|k| all.iter().find(|(_, key)| key == k).map(|(nid, _)| *nid).unwrap())
                .collect()
        };
        let cache = NodeCache::default();
        let read = |store: &Embedded, cache: &NodeCache| {
            let r = store.begin_read().unwrap();
            let shared = r.nodes_by_nid_shared(&[nids[0], nids[1], 99], cache).unwrap();
            let plain = r.nodes_by_nid(&[nids[0], nids[1], 99]).unwrap();
            assert_eq!(shared.iter().map(|n| n.as_deref().cloned()).collect::<Vec<_>>(), plain);
            // By key: the same nodes, shared with those read by id.
            let keys = [
                NodeKey::new("Event", "b"),
                NodeKey::new("Event", "x"),
                NodeKey::new("Event", "a"),
            ];
            let by_key = r.nodes_shared(&keys, cache).unwrap();
            assert_eq!(
                by_key.iter().map(|n| n.as_deref().cloned()).collect::<Vec<_>>(),
                r.nodes(&keys).unwrap()
            );
            assert!(Arc::ptr_eq(by_key[0].as_ref().unwrap(), shared[1].as_ref().unwrap()));
            assert!(Arc::ptr_eq(by_key[2].as_ref().unwrap(), shared[0].as_ref().unwrap()));
            shared
        };
        let first = read(&store, &cache);
        let again = read(&store, &cache);
        for (a, b) in first.iter().zip(&again).take(2) {
            assert!(Arc::ptr_eq(a.as_ref().unwrap(), b.as_ref().unwrap()));
        }
        let mut w = store.begin_write().unwrap();
        w.put_node(&node("a", json!({"summary": "changed", "n": 1}))).unwrap();
        w.commit().unwrap();
        let after = read(&store, &cache);
        assert!(!Arc::ptr_eq(first[0].as_ref().unwrap(), after[0].as_ref().unwrap()));
        assert_eq!(after[0].as_ref().unwrap().props["summary"], json!("changed"));
        assert!(Arc::ptr_eq(first[1].as_ref().unwrap(), after[1].as_ref().unwrap()));
    }

    #[test]
    fn nodes_kept_by_key_answer_their_generation_only() {
        let cache = NodeCache::default();
        let (a, b) = (NodeKey::new("Event", "a"), NodeKey::new("Event", "b"));
        let first = Arc::new(node("a", json!({"summary": "first"})));
        // Nothing kept yet; then the node read and the absent one are kept at generation 1.
        assert_eq!(cache.kept_at(1, &[a.clone(), b.clone()]), vec![None, None]);
        cache.keep_at(1, &[a.clone(), b.clone()], &[Some(Arc::clone(&first)), None]);
        let kept = cache.kept_at(1, &[b.clone(), a.clone()]);
        assert_eq!(kept[0], Some(None));
        assert!(Arc::ptr_eq(kept[1].as_ref().unwrap().as_ref().unwrap(), &first));
        // A reader at another generation finds nothing, and the cache starts over there: what
        // a reader still at generation 1 reads after that is not kept.
        assert_eq!(cache.kept_at(2, std::slice::from_ref(&a)), vec![None]);
        cache.keep_at(1, std::slice::from_ref(&a), &[Some(Arc::clone(&first))]);
        assert_eq!(cache.kept_at(2, std::slice::from_ref(&a)), vec![None]);
        assert_eq!(cache.kept_at(1, std::slice::from_ref(&a)), vec![None]);
        // Cleared: nothing kept at any generation.
        cache.keep_at(1, std::slice::from_ref(&a), &[Some(first)]);
        cache.clear();
        assert_eq!(cache.kept_at(1, std::slice::from_ref(&a)), vec![None]);
    }

    #[test]
    fn nodes_kept_by_key_are_bounded() {
        let cache = NodeCache::default();
        let keys: Vec<NodeKey> =
            (0..MAX_KEYED_NODES).map(|i| NodeKey::new("Event", format!("e{i}"))).collect();
        cache.kept_at(7, &keys);
        cache.keep_at(7, &keys, &vec![None; keys.len()]);
        assert_eq!(cache.kept_at(7, &keys[..1]), vec![Some(None)]);
        // One more starts the cache over rather than growing it.
        let more = NodeKey::new("Event", "more");
        cache.keep_at(7, std::slice::from_ref(&more), &[None]);
        assert_eq!(cache.kept_at(7, &[keys[0].clone(), more]), vec![None, Some(None)]);
    }

    proptest! {
        /// Whatever was kept for an id, the node handed back is the decode of the text given.
        #[test]
        fn the_node_handed_back_is_the_decode_of_the_text_given(
            reads in proptest::collection::vec(
                (0i64..4, 0usize..2, proptest::collection::btree_map(
                    "[a-c]{1,2}", prop_oneof![
                        any::<i64>().prop_map(Value::from),
                        "[a-z ]{0,8}".prop_map(Value::from),
                        any::<bool>().prop_map(Value::from),
                    ], 0..4)),
                1..40),
        ) {
            let cache = NodeCache::default();
            for (nid, label, props) in reads {
                let props: Properties = props.into_iter().collect();
                let text = props_to(&props).unwrap();
                let label = ["Event", "Entity"][label];
                let id = format!("n{}", nid % 2);
                let got = cache.decode(nid, label, &id, &text).unwrap();
                prop_assert_eq!(&*got, &Node { key: NodeKey::new(label, id.as_str()), props });
            }
        }
    }
}
