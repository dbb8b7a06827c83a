//! Read queries on a connection of the graph handle's own, their compact replies read by a
//! small RESP2 reader made for them.
//!
//! Why not the client crate's reader: profiled over `bench recall` on the scale-out backend, the
//! generic reply parser under the client (a parser combinator run over the byte stream, value by
//! value) took about a sixth of a recall's time on the client, more than the recall's own work on
//! the replies. Read queries return few kinds of value, and this reader decodes those straight into
//! [`FalkorValue`]s: null, strings, integers, booleans, doubles, arrays and maps. A reply holding
//! anything else (a node, an edge, a path, a point, a vector, a temporal value) is read whole and
//! answered [`Answer::Unsupported`]; the caller then sends the query through the client crate,
//! which resolves such values against the graph's schema.
//!
//! The query text is what the client crate sends: the `CYPHER name=value …` preamble, every value
//! encoded by the crate's own [`falkordb::to_cypher_param`], then the query.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};

use falkordb::FalkorValue;

use super::together::Rows;
use crate::reply::TIMEOUT;

/// Nesting deeper than this is no reply of a read query (FalkorDB's own limit on nested
/// values is far lower).
const MAX_DEPTH: usize = 64;
/// Elements reserved ahead for an array, whatever length its header claims.
const RESERVE: usize = 1024;

/// What the server answered one query.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Answer {
    /// The query's rows.
    Rows(Rows),
    /// The server refused the query: its error text.
    Refused(String),
    /// The rows hold a kind of value this reader leaves to the client crate.
    Unsupported,
}

/// A connection for read queries, opened on first use and again after a failure.
pub(super) struct Wire {
    host: String,
    port: u16,
    conn: Option<BufReader<TcpStream>>,
}

impl Wire {
    /// A connection to `host:port`, not opened yet.
    pub(super) fn new(host: &str, port: u16) -> Wire {
        Wire { host: host.to_owned(), port, conn: None }
    }

    /// `GRAPH.RO_QUERY graph text --compact` for each of `texts`, sent in one write, and what
    /// each answered, in order. A failure of the connection closes it, and the queries are sent
    /// once more on a new one (reads are safe to send again: a server restarted since, or an
    /// idle connection it closed, costs one retry); a timeout is not retried.
    pub(super) fn ro_queries(&mut self, graph: &str, texts: &[String]) -> io::Result<Vec<Answer>> {
        match self.try_queries(graph, texts) {
            Err(e) if !matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) => {
                self.try_queries(graph, texts)
            }
            answers => answers,
        }
    }

    /// One exchange of `texts`; a failure closes the connection, whose state is then unknown.
    fn try_queries(&mut self, graph: &str, texts: &[String]) -> io::Result<Vec<Answer>> {
        let answers = self.exchange(graph, texts);
        if answers.is_err() {
            self.conn = None;
        }
        answers
    }

    fn exchange(&mut self, graph: &str, texts: &[String]) -> io::Result<Vec<Answer>> {
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self.conn.insert(open(&self.host, self.port)?),
        };
        let mut out = Vec::new();
        for text in texts {
            command(
                &mut out,
                &[b"GRAPH.RO_QUERY", graph.as_bytes(), text.as_bytes(), b"--compact"],
            );
        }
        conn.get_mut().write_all(&out)?;
        let mut line = Vec::new();
        let mut answers = Vec::with_capacity(texts.len());
        for _ in texts {
            let reply = read_value(conn, &mut line, 0)?;
            answers.push(
                answer(reply).map_err(|what| io::Error::new(io::ErrorKind::InvalidData, what))?,
            );
        }
        // A connection with bytes left over is out of step with its replies.
        if !conn.buffer().is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "bytes after the last reply"));
        }
        Ok(answers)
    }
}

/// The text FalkorDB takes for `query` with `params`: the parameters' preamble, then the query.
pub(super) fn query_text<'p>(
    query: &str,
    params: impl IntoIterator<Item = (&'p str, &'p FalkorValue)>,
) -> Result<String, falkordb::FalkorDBError> {
    let mut text = String::new();
    for (name, value) in params {
        if text.is_empty() {
            text.push_str("CYPHER ");
        }
        text.push_str(name);
        text.push('=');
        text.push_str(&falkordb::to_cypher_param(value)?);
        text.push(' ');
    }
    text.push_str(query);
    Ok(text)
}

fn open(host: &str, port: u16) -> io::Result<BufReader<TcpStream>> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host}:{port} has no address"));
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, TIMEOUT) {
            Ok(stream) => {
                // Without delay: one query's bytes are all written at once, and waiting for the
                // server's acknowledgement of the last segment would only add latency.
                stream.set_nodelay(true)?;
                stream.set_read_timeout(Some(TIMEOUT))?;
                stream.set_write_timeout(Some(TIMEOUT))?;
                return Ok(BufReader::with_capacity(64 * 1024, stream));
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A command as a RESP array of bulk strings, appended to `out`.
fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// A RESP2 value.
#[derive(Debug, Clone, PartialEq)]
enum Resp {
    Nil,
    Int(i64),
    /// A bulk or simple string.
    Bytes(Vec<u8>),
    Error(String),
    Array(Vec<Resp>),
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("a graph reply is not RESP: {what}"))
}

/// One line without its CRLF, in `line`.
fn read_line(r: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<()> {
    line.clear();
    r.read_until(b'\n', line)?;
    if line.len() < 2 || line[line.len() - 2..] != *b"\r\n" {
        return Err(if line.is_empty() {
            io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection")
        } else {
            invalid("a line without CRLF")
        });
    }
    line.truncate(line.len() - 2);
    Ok(())
}

fn number(digits: &[u8]) -> io::Result<i64> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| invalid("a length or integer that is no number"))
}

/// One RESP2 value; `line` is scratch space.
fn read_value(r: &mut impl BufRead, line: &mut Vec<u8>, depth: usize) -> io::Result<Resp> {
    if depth > MAX_DEPTH {
        return Err(invalid("nesting deeper than a read's reply"));
    }
    read_line(r, line)?;
    let (&kind, rest) = line.split_first().ok_or_else(|| invalid("an empty line"))?;
    match kind {
        b'+' => Ok(Resp::Bytes(rest.to_vec())),
        b'-' => Ok(Resp::Error(String::from_utf8_lossy(rest).into_owned())),
        b':' => Ok(Resp::Int(number(rest)?)),
        b'$' => {
            let len = number(rest)?;
            if len < 0 {
                return Ok(Resp::Nil);
            }
            let len = usize::try_from(len).map_err(|_| invalid("a string length"))?;
            let want = len.checked_add(2).ok_or_else(|| invalid("a string length"))?;
            // Grown as the bytes come, not allocated at the length the header claims.
            let mut bytes = Vec::with_capacity(want.min(64 * 1024));
            r.take(want as u64).read_to_end(&mut bytes)?;
            if bytes.len() < want {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a string cut short"));
            }
            if bytes[len..] != *b"\r\n" {
                return Err(invalid("a string without CRLF after it"));
            }
            bytes.truncate(len);
            Ok(Resp::Bytes(bytes))
        }
        b'*' => {
            let len = number(rest)?;
            if len < 0 {
                return Ok(Resp::Nil);
            }
            let len = usize::try_from(len).map_err(|_| invalid("an array length"))?;
            let mut items = Vec::with_capacity(len.min(RESERVE));
            for _ in 0..len {
                items.push(read_value(r, line, depth + 1)?);
            }
            Ok(Resp::Array(items))
        }
        _ => Err(invalid("an unknown type byte")),
    }
}

/// Why a compact value was not decoded.
#[derive(Debug, PartialEq)]
enum Undecoded {
    /// A kind of value left to the client crate.
    Unsupported,
    /// Not a compact value: what was wrong.
    Malformed(&'static str),
}

/// A query's reply as its answer; `Err` names what is malformed in it.
fn answer(reply: Resp) -> Result<Answer, &'static str> {
    let parts = match reply {
        Resp::Error(e) => return Ok(Answer::Refused(e)),
        Resp::Array(parts) => parts,
        Resp::Nil | Resp::Int(_) | Resp::Bytes(_) => return Err("a query reply that is no array"),
    };
    // Statistics alone (a query that returns nothing), a header alone, or header, rows and
    // statistics.
    let rows = match <[Resp; 3]>::try_from(parts) {
        Ok([_, Resp::Array(rows), _]) => rows,
        Ok(_) => return Err("rows that are no array"),
        Err(parts) if parts.len() < 3 => return Ok(Answer::Rows(Vec::new())),
        Err(_) => return Err("a query reply of more than three parts"),
    };
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let Resp::Array(cells) = row else { return Err("a row that is no array") };
        let mut values = Vec::with_capacity(cells.len());
        for cell in cells {
            match decode(cell) {
                Ok(v) => values.push(v),
                Err(Undecoded::Unsupported) => return Ok(Answer::Unsupported),
                Err(Undecoded::Malformed(what)) => return Err(what),
            }
        }
        out.push(values);
    }
    Ok(Answer::Rows(out))
}

fn utf8(bytes: Vec<u8>) -> Result<String, Undecoded> {
    String::from_utf8(bytes).map_err(|_| Undecoded::Malformed("a string that is not UTF-8"))
}

/// A compact value, `[type, value]`, as a [`FalkorValue`] (the type numbers are FalkorDB's).
fn decode(cell: Resp) -> Result<FalkorValue, Undecoded> {
    let Resp::Array(pair) = cell else { return Err(Undecoded::Malformed("a value without type")) };
    let Ok([Resp::Int(kind), value]) = <[Resp; 2]>::try_from(pair) else {
        return Err(Undecoded::Malformed("a value that is not [type, value]"));
    };
    match (kind, value) {
        (1, _) => Ok(FalkorValue::None),
        (2, Resp::Bytes(b)) => Ok(FalkorValue::String(utf8(b)?)),
        (3, Resp::Int(i)) => Ok(FalkorValue::I64(i)),
        (4, Resp::Bytes(b)) => match b.as_slice() {
            b"true" => Ok(FalkorValue::Bool(true)),
            b"false" => Ok(FalkorValue::Bool(false)),
            _ => Err(Undecoded::Malformed("a boolean that is neither true nor false")),
        },
        (5, Resp::Bytes(b)) => utf8(b)?
            .parse()
            .map(FalkorValue::F64)
            .map_err(|_| Undecoded::Malformed("a double that is no number")),
        (6, Resp::Array(items)) => {
            items.into_iter().map(decode).collect::<Result<_, _>>().map(FalkorValue::Array)
        }
        (10, Resp::Array(items)) => {
            if items.len() % 2 != 0 {
                return Err(Undecoded::Malformed("a map with a key and no value"));
            }
            let mut map = std::collections::HashMap::with_capacity(items.len() / 2);
            let mut items = items.into_iter();
            while let (Some(key), Some(value)) = (items.next(), items.next()) {
                let Resp::Bytes(key) = key else {
                    return Err(Undecoded::Malformed("a map key that is no string"));
                };
                map.insert(utf8(key)?, decode(value)?);
            }
            Ok(FalkorValue::Map(map))
        }
        (7..=9 | 11..=16, _) => Err(Undecoded::Unsupported),
        _ => Err(Undecoded::Malformed("a value whose type does not match it")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A compact value's RESP bytes, as FalkorDB writes them.
    fn encode(v: &FalkorValue, out: &mut Vec<u8>) {
        let bulk = |out: &mut Vec<u8>, b: &[u8]| {
            out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        };
        out.extend_from_slice(b"*2\r\n");
        match v {
            FalkorValue::None => out.extend_from_slice(b":1\r\n$-1\r\n"),
            FalkorValue::String(s) => {
                out.extend_from_slice(b":2\r\n");
                bulk(out, s.as_bytes());
            }
            FalkorValue::I64(i) => out.extend_from_slice(format!(":3\r\n:{i}\r\n").as_bytes()),
            FalkorValue::Bool(b) => {
                out.extend_from_slice(b":4\r\n");
                bulk(out, if *b { b"true" } else { b"false" });
            }
            FalkorValue::F64(f) => {
                out.extend_from_slice(b":5\r\n");
                bulk(out, format!("{f:?}").as_bytes());
            }
            FalkorValue::Array(items) => {
                out.extend_from_slice(format!(":6\r\n*{}\r\n", items.len()).as_bytes());
                for item in items {
                    encode(item, out);
                }
            }
            FalkorValue::Map(map) => {
                out.extend_from_slice(format!(":10\r\n*{}\r\n", map.len() * 2).as_bytes());
                for (k, item) in map {
                    bulk(out, k.as_bytes());
                    encode(item, out);
                }
            }
            // Written as a node: a kind this reader leaves to the client crate.
            FalkorValue::Node(_)
            | FalkorValue::Edge(_)
            | FalkorValue::Vec32(_)
            | FalkorValue::Point(_)
            | FalkorValue::Path(_)
            | FalkorValue::DateTime(_)
            | FalkorValue::Date(_)
            | FalkorValue::Time(_)
            | FalkorValue::Duration(_)
            | FalkorValue::Unparseable(_)
            | _ => out.extend_from_slice(b":8\r\n*0\r\n"),
        }
    }

    fn reply(rows: &[Vec<FalkorValue>]) -> Vec<u8> {
        let mut out = b"*3\r\n*1\r\n*2\r\n:1\r\n$1\r\na\r\n".to_vec();
        out.extend_from_slice(format!("*{}\r\n", rows.len()).as_bytes());
        for row in rows {
            out.extend_from_slice(format!("*{}\r\n", row.len()).as_bytes());
            for v in row {
                encode(v, &mut out);
            }
        }
        out.extend_from_slice(b"*1\r\n+Query internal execution time: 0.1 milliseconds\r\n");
        out
    }

    fn read(bytes: &[u8]) -> io::Result<Answer> {
        let mut r = BufReader::new(bytes);
        let value = read_value(&mut r, &mut Vec::new(), 0)?;
        answer(value).map_err(|what| io::Error::new(io::ErrorKind::InvalidData, what))
    }

    fn value() -> impl Strategy<Value = FalkorValue> {
        let leaf = prop_oneof![
            Just(FalkorValue::None),
            any::<String>().prop_map(FalkorValue::String),
            any::<i64>().prop_map(FalkorValue::I64),
            any::<bool>().prop_map(FalkorValue::Bool),
            (-1e12f64..1e12).prop_map(FalkorValue::F64),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(FalkorValue::Array),
                prop::collection::hash_map(any::<String>(), inner, 0..4).prop_map(FalkorValue::Map),
            ]
        })
    }

    proptest! {
        #[test]
        fn rows_read_back_as_written(rows in prop::collection::vec(prop::collection::vec(value(), 0..4), 0..5)) {
            prop_assert_eq!(read(&reply(&rows)).unwrap(), Answer::Rows(rows));
        }

        #[test]
        fn any_bytes_are_an_answer_or_an_error_never_a_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = read(&bytes);
        }
    }

    #[test]
    fn strings_holding_line_ends_and_type_bytes_are_read_whole() {
        let s = FalkorValue::String("a\r\n*3\r\n$-1\r\n:7".to_owned());
        assert_eq!(
            read(&reply(&[vec![s.clone(), s.clone()]])).unwrap(),
            Answer::Rows(vec![vec![s.clone(), s]])
        );
    }

    #[test]
    fn a_refusal_statistics_alone_and_nodes_are_told_apart() {
        assert_eq!(
            read(b"-Invalid graph operation on empty key\r\n").unwrap(),
            Answer::Refused("Invalid graph operation on empty key".into())
        );
        assert_eq!(
            read(b"*1\r\n*1\r\n+Cached execution: 1\r\n").unwrap(),
            Answer::Rows(Vec::new())
        );
        assert_eq!(
            read(&reply(&[vec![FalkorValue::Unparseable("a node".into())]])).unwrap(),
            Answer::Unsupported
        );
    }

    #[test]
    fn malformed_replies_are_errors() {
        for bad in [
            &b"*3\r\n*0\r\n*1\r\n*1\r\n*2\r\n:3\r\n$1\r\nx\r\n*0\r\n"[..],
            b"*3\r\n*0\r\n*1\r\n*1\r\n*2\r\n:4\r\n$3\r\nyes\r\n*0\r\n",
            b"*3\r\n*0\r\n*1\r\n*1\r\n*2\r\n:2\r\n$2\r\n\xff\xfe\r\n*0\r\n",
            b"*3\r\n*0\r\n*1\r\n*1\r\n*2\r\n:99\r\n:1\r\n*0\r\n",
            b"*3\r\n*0\r\n*1\r\n*1\r\n*2\r\n:2\r\n$5\r\nab\r\n",
            b"$3\r\nabc\n",
            b"*2\n",
            b":12x\r\n",
        ] {
            assert!(read(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let deep = "*1\r\n".repeat(MAX_DEPTH + 2);
        assert!(read(deep.as_bytes()).is_err());
    }

    /// Against the server `CTXGRAPH_TEST_REDIS` names: what this reader decodes equals what
    /// the client crate decodes, hostile text included; a node is answered through the crate,
    /// and a graph that does not exist reads as no rows.
    #[test]
    #[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
    fn replies_read_here_equal_the_client_crates_and_the_rest_goes_through_it() {
        let server = std::env::var("CTXGRAPH_TEST_REDIS")
            .expect("CTXGRAPH_TEST_REDIS: redis://HOST:PORT of a FalkorDB server");
        let name = format!("wire{}", std::process::id());
        let url = crate::url::StoreUrl::parse(&format!("{}/{name}", server.trim_end_matches('/')))
            .unwrap();
        let g = super::super::FalkorGraph::connect_read(&url).unwrap();
        assert_eq!(
            g.run_read("MATCH (n) RETURN n.id", &[]).unwrap(),
            Vec::<Vec<FalkorValue>>::new()
        );
        g.run("CREATE (:T {id: 'a', x: 1.5, n: -7, b: true, l: [1, 'two', 3.5]})", &[]).unwrap();
        let hostile = "it's \"quoted\"\r\n*3\r\n$-1 \\ é 😀 `x` $k ${k}";
        let params =
            [("s", FalkorValue::String(hostile.to_owned())), ("i", FalkorValue::I64(i64::MIN))];
        let query = "MATCH (n:T) RETURN n.id, n.x, n.n, n.b, [n.l, null], {k: n.id, m: [n.x]}, $s, $i, null";
        let here = g.run_read(query, &params).unwrap();
        let theirs: Vec<Vec<FalkorValue>> = {
            let mut graph = g.graph.borrow_mut();
            let mut q = graph.ro_query(query);
            for (k, v) in &params {
                q = q.with_param(k, v.clone());
            }
            q.execute().unwrap().data.map(|row| row.unwrap().into_values()).collect()
        };
        assert_eq!(here, theirs);
        assert_eq!(here[0][6], FalkorValue::String(hostile.to_owned()));
        assert_eq!(here[0][7], FalkorValue::I64(i64::MIN));
        let nodes = g.run_read("MATCH (n:T) RETURN n.id, n", &[]).unwrap();
        assert!(matches!(nodes[0][1], FalkorValue::Node(_)), "{nodes:?}");
        let err = g.run_read("RETURN no_such_function(1)", &[]).unwrap_err();
        assert!(err.to_string().contains("no_such_function"), "{err}");
        redis::cmd("GRAPH.DELETE").arg(g.graph_name()).exec(&mut g.raw.borrow_mut()).unwrap();
    }

    #[test]
    fn the_query_text_is_the_preamble_then_the_query() {
        let params = [("k", FalkorValue::String("it's".into())), ("n", FalkorValue::I64(3))];
        let text = query_text("RETURN $k", params.iter().map(|(k, v)| (*k, v))).unwrap();
        assert_eq!(text, "CYPHER k='it\\'s' n=3 RETURN $k");
        assert_eq!(query_text("RETURN 1", []).unwrap(), "RETURN 1");
    }
}
