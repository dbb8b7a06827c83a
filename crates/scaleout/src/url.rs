//! The address of a scale-out store, `redis://HOST[:PORT]/NAME`, and the Redis keys it names.

use std::fmt;

/// The port Redis listens on when the URL names none.
pub const DEFAULT_PORT: u16 = 6379;

/// The longest store name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// A parsed `redis://HOST[:PORT]/NAME`: a Redis server and one store (tenant) on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl {
    host: String,
    port: u16,
    name: String,
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
    /// Parse `redis://HOST[:PORT]/NAME`. `HOST` is a name or an address (an IPv6 address in
    /// brackets), `PORT` 1 to 65535 (default 6379), `NAME` 1 to 64 bytes of `A-Z a-z 0-9 _ -`.
    /// Credentials, query strings and fragments are refused: nothing in the URL is ignored.
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
        let (host, port) = split_host_port(authority)?;
        check_name(name)?;
        Ok(StoreUrl { host: host.to_owned(), port, name: name.to_owned() })
    }

    /// The server's host name or address (an IPv6 address without brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The store's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Another store on the same server, named `name` (checked as in [`StoreUrl::parse`]).
    pub fn with_name(&self, name: &str) -> Result<StoreUrl, UrlError> {
        check_name(name)?;
        Ok(StoreUrl { host: self.host.clone(), port: self.port, name: name.to_owned() })
    }

    /// The prefix of every key of this store: `ctxgraph:{NAME}:`. The braces are a Redis
    /// Cluster hash tag, so all of a store's keys hash to one slot (its scripts touch several).
    pub fn key_prefix(&self) -> String {
        format!("ctxgraph:{{{}}}:", self.name)
    }

    /// The server's address for the Redis client, without the store name.
    pub(crate) fn server(&self) -> String {
        if self.host.contains(':') {
            format!("redis://[{}]:{}/", self.host, self.port)
        } else {
            format!("redis://{}:{}/", self.host, self.port)
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "redis://[{}]:{}/{}", self.host, self.port, self.name)
        } else {
            write!(f, "redis://{}:{}/{}", self.host, self.port, self.name)
        }
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
