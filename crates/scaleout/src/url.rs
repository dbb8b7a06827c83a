//! The address of a scale-out store, `redis://HOST[:PORT][,HOST[:PORT]…]/NAME`, and the Redis
//! keys it names. Several instances shard the stores: each store lives whole (its log and its
//! graph) on the instance its name hashes to, by rendezvous hashing, so every process that lists
//! the same instances finds every store in the same place, in whatever order it lists them.

use std::fmt;

/// The port Redis listens on when the URL names none.
pub const DEFAULT_PORT: u16 = 6379;

/// The longest store name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// A parsed `redis://HOST[:PORT][,HOST[:PORT]…]/NAME`: the Redis servers (FalkorDB instances)
/// the stores are spread over, and one store (tenant), which lives on one of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl {
    /// The instances the URL lists, in its order (at least one, none twice).
    instances: Vec<Instance>,
    /// The instance of `instances` that holds this store.
    home: usize,
    name: String,
}

/// One Redis server of a store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Instance {
    host: String,
    port: u16,
}

impl fmt::Display for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Why a store URL was refused: the field, the value given and the rule broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("store URL {field} `{value}`: {message} (rule: {rule})")]
pub struct UrlError {
    /// The part of the URL at fault: `scheme`, `host`, `port` or `name`.
    pub field: &'static str,
    /// What was given for it.
    pub value: String,
    /// Stable machine code, e.g. `url.store_name`.
    pub rule: &'static str,
    /// What the part must be.
    pub message: String,
}

fn refuse(field: &'static str, value: &str, rule: &'static str, message: String) -> UrlError {
    UrlError { field, value: value.to_owned(), rule, message }
}

impl StoreUrl {
    /// Parse `redis://HOST[:PORT][,HOST[:PORT]…]/NAME`. `HOST` is a name or an address (an IPv6
    /// address in brackets), `PORT` 1 to 65535 (default 6379), `NAME` 1 to 64 bytes of
    /// `A-Z a-z 0-9 _ -`; an instance listed twice is refused. Credentials, query strings and
    /// fragments are refused: nothing in the URL is ignored.
    pub fn parse(text: &str) -> Result<StoreUrl, UrlError> {
        let rest = text.strip_prefix("redis://").ok_or_else(|| {
            let scheme = text.split_once("://").map_or(text, |(s, _)| s);
            refuse(
                "scheme",
                scheme,
                "url.scheme",
                "a scale-out store URL starts with `redis://`".into(),
            )
        })?;
        let (authority, name) = rest.split_once('/').ok_or_else(|| {
            refuse(
                "name",
                "",
                "url.store_name",
                "the URL ends with `/NAME`, the store's name: redis://HOST:PORT/NAME".into(),
            )
        })?;
        if authority.contains('@') {
            return Err(refuse(
                "host",
                authority,
                "url.credentials",
                "credentials are not taken from the URL".into(),
            ));
        }
        let mut instances: Vec<Instance> = Vec::new();
        for part in authority.split(',') {
            let (host, port) = split_host_port(part)?;
            let instance = Instance { host: host.to_owned(), port };
            if instances.contains(&instance) {
                return Err(refuse(
                    "host",
                    part,
                    "url.instances",
                    "each instance is listed once".into(),
                ));
            }
            instances.push(instance);
        }
        check_name(name)?;
        Ok(StoreUrl { home: home_of(&instances, name), instances, name: name.to_owned() })
    }

    /// The host name or address of the server that holds this store (an IPv6 address without
    /// brackets).
    pub fn host(&self) -> &str {
        &self.instances[self.home].host
    }

    /// The port of the server that holds this store.
    pub fn port(&self) -> u16 {
        self.instances[self.home].port
    }

    /// The server that holds this store, as `HOST:PORT` (`[V6]:PORT`).
    pub fn instance(&self) -> String {
        self.instances[self.home].to_string()
    }

    /// How many instances the URL lists.
    pub fn instance_count(&self) -> usize {
        self.instances.len()
    }

    /// Every instance the URL lists, as `HOST:PORT` (`[V6]:PORT`), in its order.
    pub fn instances(&self) -> Vec<String> {
        self.instances.iter().map(Instance::to_string).collect()
    }

    /// This store's name on each instance the URL lists, in its order: one URL per server, for
    /// what concerns every server (readiness, the servers' CPU), not one store.
    pub fn each_instance(&self) -> Vec<StoreUrl> {
        self.instances
            .iter()
            .map(|i| StoreUrl { instances: vec![i.clone()], home: 0, name: self.name.clone() })
            .collect()
    }

    /// The store's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Another store on the same servers, named `name` (checked as in [`StoreUrl::parse`]), on
    /// the instance its name hashes to.
    pub fn with_name(&self, name: &str) -> Result<StoreUrl, UrlError> {
        check_name(name)?;
        Ok(StoreUrl {
            home: home_of(&self.instances, name),
            instances: self.instances.clone(),
            name: name.to_owned(),
        })
    }

    /// The prefix of every key of this store: `ctxgraph:{NAME}:`. The braces are a Redis
    /// Cluster hash tag, so all of a store's keys hash to one slot (its scripts touch several).
    pub fn key_prefix(&self) -> String {
        format!("ctxgraph:{{{}}}:", self.name)
    }

    /// The server's address for the Redis client, without the store name.
    pub(crate) fn server(&self) -> String {
        format!("redis://{}/", self.instances[self.home])
    }
}

/// The instance that holds the store `name`: rendezvous hashing, the instance whose digest of
/// `HOST:PORT` and the name scores highest. The order the instances are listed in changes
/// nothing, and adding an instance moves only the stores that score highest on it.
fn home_of(instances: &[Instance], name: &str) -> usize {
    let score = |i: &Instance| {
        let digest = ctxgraph_ontology::sha256_hex(format!("{i}\n{name}").as_bytes());
        // The first 64 bits of the digest: hex digits always parse.
        u64::from_str_radix(&digest[..16], 16).unwrap_or(0)
    };
    (0..instances.len())
        .max_by_key(|&at| (score(&instances[at]), instances[at].to_string()))
        .unwrap_or(0)
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("redis://")?;
        for (at, instance) in self.instances.iter().enumerate() {
            if at > 0 {
                f.write_str(",")?;
            }
            write!(f, "{instance}")?;
        }
        write!(f, "/{}", self.name)
    }
}

/// Split `HOST[:PORT]`, with `[V6]:PORT` for IPv6 addresses.
fn split_host_port(authority: &str) -> Result<(&str, u16), UrlError> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(|| {
            refuse(
                "host",
                authority,
                "url.host",
                "an IPv6 address is written in brackets: [::1]".into(),
            )
        })?;
        match after {
            "" => (host, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => {
                    return Err(refuse(
                        "host",
                        authority,
                        "url.host",
                        "only `:PORT` may follow a bracketed address".into(),
                    ));
                }
            },
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let valid_host = !host.is_empty()
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    if !valid_host {
        return Err(refuse(
            "host",
            host,
            "url.host",
            "a host is a name or an address of letters, digits, `.`, `-` and `_`".into(),
        ));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(text) => match text.parse::<u16>() {
            Ok(port) if port > 0 && text.bytes().all(|b| b.is_ascii_digit()) => port,
            _ => {
                return Err(refuse(
                    "port",
                    text,
                    "url.port",
                    "a port is a number from 1 to 65535".into(),
                ));
            }
        },
    };
    Ok((host, port))
}

/// A store name becomes part of every key and of the graph's name: a short, plain word.
fn check_name(name: &str) -> Result<(), UrlError> {
    let plain = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if name.is_empty() || name.len() > MAX_NAME_BYTES || !plain {
        return Err(refuse(
            "name",
            name,
            "url.store_name",
            format!("a store name is 1 to {MAX_NAME_BYTES} bytes of `A-Z a-z 0-9 _ -`"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_the_server_and_the_store() {
        let url = StoreUrl::parse("redis://127.0.0.1:6390/team-a_1").unwrap();
        assert_eq!((url.host(), url.port(), url.name()), ("127.0.0.1", 6390, "team-a_1"));
        assert_eq!(url.key_prefix(), "ctxgraph:{team-a_1}:");
        assert_eq!(url.to_string(), "redis://127.0.0.1:6390/team-a_1");
        assert_eq!(url.server(), "redis://127.0.0.1:6390/");
        let url = StoreUrl::parse("redis://cache.internal/prod").unwrap();
        assert_eq!((url.host(), url.port()), ("cache.internal", DEFAULT_PORT));
        let url = StoreUrl::parse("redis://[::1]:7000/x").unwrap();
        assert_eq!((url.host(), url.port()), ("::1", 7000));
        assert_eq!(url.server(), "redis://[::1]:7000/");
        assert_eq!(StoreUrl::parse(&url.to_string()).unwrap(), url);
        let other = url.with_name("x-1").unwrap();
        assert_eq!(other.to_string(), "redis://[::1]:7000/x-1");
        assert_eq!(url.with_name("x/1").unwrap_err().rule, "url.store_name");
    }

    #[test]
    fn several_instances_hold_each_store_whole_on_the_one_its_name_hashes_to() {
        let url = StoreUrl::parse("redis://10.0.0.1:7000,10.0.0.2:7000,[::1]:7001/team").unwrap();
        assert_eq!(url.instance_count(), 3);
        assert_eq!(url.to_string(), "redis://10.0.0.1:7000,10.0.0.2:7000,[::1]:7001/team");
        assert_eq!(StoreUrl::parse(&url.to_string()).unwrap(), url);
        assert_eq!(url.server(), format!("redis://{}/", url.instance()));
        // The order the instances are listed in does not move a store.
        let reordered =
            StoreUrl::parse("redis://[::1]:7001,10.0.0.2:7000,10.0.0.1:7000/x").unwrap();
        let (mut homes, mut on_new) = (std::collections::BTreeMap::new(), 0);
        let two = StoreUrl::parse("redis://10.0.0.1:7000,10.0.0.2:7000/x").unwrap();
        for i in 0..600 {
            let name = format!("t-{i}");
            let home = url.with_name(&name).unwrap().instance();
            assert_eq!(reordered.with_name(&name).unwrap().instance(), home, "{name}");
            *homes.entry(home.clone()).or_insert(0) += 1;
            // A third instance takes stores from the others and moves none between them.
            let before = two.with_name(&name).unwrap().instance();
            if home == "[::1]:7001" {
                on_new += 1;
            } else {
                assert_eq!(home, before, "{name}");
            }
        }
        assert_eq!(homes.len(), 3);
        assert!(homes.values().all(|n| (150..=250).contains(n)), "{homes:?}");
        assert_eq!(homes["[::1]:7001"], on_new);
        // One URL per instance, each naming the same store.
        let each: Vec<String> = url.each_instance().iter().map(StoreUrl::to_string).collect();
        assert_eq!(
            each,
            ["redis://10.0.0.1:7000/team", "redis://10.0.0.2:7000/team", "redis://[::1]:7001/team"]
        );
        let e = StoreUrl::parse("redis://h:1,h:2,h:1/x").unwrap_err();
        assert_eq!((e.field, e.value.as_str(), e.rule), ("host", "h:1", "url.instances"));
        let e = StoreUrl::parse("redis://h:1,,h:2/x").unwrap_err();
        assert_eq!((e.field, e.value.as_str(), e.rule), ("host", "", "url.host"));
        // One instance: every store on it, as before.
        let one = StoreUrl::parse("redis://h:1/x").unwrap();
        assert_eq!(one.with_name("y").unwrap().instance(), "h:1");
    }

    proptest::proptest! {
        /// Any text parses or is refused without a panic; what parses prints back as itself
        /// (instances in their order) and names one of its instances for every store.
        #[test]
        fn any_text_parses_back_as_printed_or_is_refused(text in "redis://[a-z0-9:,.\\[\\]/]{0,30}") {
            if let Ok(url) = StoreUrl::parse(&text) {
                proptest::prop_assert_eq!(StoreUrl::parse(&url.to_string()), Ok(url.clone()));
                proptest::prop_assert!(url.instances().contains(&url.instance()));
            }
        }

        /// However the instances are listed, every store is on the same one.
        #[test]
        fn the_order_of_the_instances_moves_no_store(
            ports in proptest::collection::btree_set(1u16..=65535, 1..6),
            name in "[a-z0-9_-]{1,20}",
            turn in 0usize..6,
        ) {
            let mut hosts: Vec<String> = ports.iter().map(|p| format!("10.1.2.3:{p}")).collect();
            let url = StoreUrl::parse(&format!("redis://{}/{name}", hosts.join(","))).unwrap();
            let turn = turn % hosts.len();
            hosts.rotate_left(turn);
            hosts.reverse();
            let other = StoreUrl::parse(&format!("redis://{}/{name}", hosts.join(","))).unwrap();
            proptest::prop_assert_eq!(url.instance(), other.instance());
            proptest::prop_assert_eq!(url.with_name("n").unwrap().instance(), other.with_name("n").unwrap().instance());
        }
    }

    #[test]
    fn every_refusal_names_the_field_the_value_and_the_rule() {
        let cases = [
            ("http://h:1/x", "scheme", "http", "url.scheme"),
            ("h:1/x", "scheme", "h:1/x", "url.scheme"),
            ("redis://h:1", "name", "", "url.store_name"),
            ("redis://h:1/", "name", "", "url.store_name"),
            ("redis://h:1/a/b", "name", "a/b", "url.store_name"),
            ("redis://h:1/x?db=2", "name", "x?db=2", "url.store_name"),
            ("redis://h:1/{x}", "name", "{x}", "url.store_name"),
            ("redis://h:1/é", "name", "é", "url.store_name"),
            ("redis://h:0/x", "port", "0", "url.port"),
            ("redis://h:65536/x", "port", "65536", "url.port"),
            ("redis://h:+1/x", "port", "+1", "url.port"),
            ("redis://h:/x", "port", "", "url.port"),
            ("redis://:1/x", "host", "", "url.host"),
            ("redis://h h:1/x", "host", "h h", "url.host"),
            ("redis://[::1/x", "host", "[::1", "url.host"),
            ("redis://u:p@h:1/x", "host", "u:p@h:1", "url.credentials"),
        ];
        for (text, field, value, rule) in cases {
            let e = StoreUrl::parse(text).unwrap_err();
            assert_eq!((e.field, e.value.as_str(), e.rule), (field, value, rule), "{text}");
            let shown = e.to_string();
            assert!(shown.contains(field) && shown.contains(rule), "{text}: {shown}");
        }
        let long = format!("redis://h/{}", "n".repeat(MAX_NAME_BYTES + 1));
        assert_eq!(StoreUrl::parse(&long).unwrap_err().rule, "url.store_name");
        let longest = format!("redis://h/{}", "n".repeat(MAX_NAME_BYTES));
        assert!(StoreUrl::parse(&longest).is_ok());
    }
}
