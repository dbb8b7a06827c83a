"""Drive ctxgraph's MCP tools with the official Python MCP SDK.

Over streamable HTTP against a running `ctxgraph serve` (bearer key), and over stdio by starting
`ctxgraph mcp --data DIR --as NAME`: handshake, tools/list, one call of every tool, a bad
argument and an unknown tool. Exits non-zero on the first surprise.

    python tests/python/mcp_client.py --url http://127.0.0.1:PORT/mcp --key cgk_... \
        [--binary target/debug/ctxgraph --data DIR --principal NAME]
"""

import argparse
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

try:  # SDK 2.x
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    def http_transport(url, headers):
        return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))

except ImportError:  # SDK 1.x
    from mcp.client.streamable_http import streamablehttp_client

    def http_transport(url, headers):
        return streamablehttp_client(url, headers=headers)


def field(obj, snake, camel):
    """A result field under its SDK 2.x (snake_case) or 1.x (camelCase) name."""
    value = getattr(obj, snake, None)
    return value if value is not None else getattr(obj, camel, None)

TOOLS = {
    "evolution",
    "evolve_outcome",
    "forget",
    "ingest_event",
    "list_receipts",
    "link_memories",
    "recall",
    "recall_entity",
    "record_fact",
    "record_receipt",
    "save_memory",
    "weekly_rollup",
}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


async def call(session, tool, args, expect_error=False):
    result = await session.call_tool(tool, args)
    data = field(result, "structured_content", "structuredContent")
    if data is None and result.content:
        data = json.loads(result.content[0].text)
    check(bool(field(result, "is_error", "isError")) == expect_error, f"{tool} {args}: {data}")
    return data


async def exercise(session, prefix):
    init = await session.initialize()
    info = field(init, "server_info", "serverInfo")
    check(info.name == "ctxgraph", f"server info {info}")
    listed = await session.list_tools()
    names = {t.name for t in listed.tools}
    check(TOOLS <= names, f"tools/list: {sorted(names)}")
    for t in listed.tools:
        check(t.description and len(t.description) > 40, f"{t.name} has a description")
        props = field(t, "input_schema", "inputSchema").get("properties", {})
        check(props and all("description" in p for p in props.values()), f"{t.name} parameters are described")

    event = {
        "event_id": f"{prefix}-e1", "event_type": "tool.execute",
        "occurred_at": "2026-11-20T09:00:00Z", "session_id": f"{prefix}-s1",
        "agent_id": "planner", "trace_id": "t1", "tool_name": "sql_query", "status": "failed",
        "payload": {"error": "timeout of the orders database"},
        "entities": [{"name": "orders-db", "entity_type": "service", "role": "target"}],
    }
    r = await call(session, "ingest_event", {"event": event})
    check(r["status"] in ("accepted", "duplicate"), r)
    r = await call(session, "record_fact", {
        "subject": f"{prefix} checkout", "subject_type": "project", "predicate": "blocked_by",
        "object": f"{prefix} payments", "object_type": "project", "source": "standup"})
    check(r["fact_id"], r)
    await call(session, "save_memory", {"kind": "decision", "topic": f"{prefix}-db",
                                        "content": "Use PostgreSQL for orders", "memory_id": f"{prefix}-m1"})
    await call(session, "save_memory", {"kind": "decision", "topic": f"{prefix}-db",
                                        "content": "Use CockroachDB for orders", "memory_id": f"{prefix}-m2",
                                        "supersedes": f"{prefix}-m1"})
    await call(session, "evolve_outcome", {"memory_id": f"{prefix}-m1", "outcome": "failed",
                                           "reason": "no multi-region"})
    await call(session, "link_memories", {"from": f"{prefix}-m2", "to": f"{prefix}-m1",
                                          "link_type": "relates_to"})
    r = await call(session, "recall_entity", {"name": f"{prefix} checkout"})
    check(r["facts"] and r["facts"][0]["predicate"] == "blocked_by", r)
    r = await call(session, "evolution", {"topic": f"{prefix}-db"})
    check([s["memory"]["id"] for s in r["steps"]] == [f"{prefix}-m2", f"{prefix}-m1"], r)
    r = await call(session, "weekly_rollup", {"since": "2020-01-01"})
    check(any(d["id"] == f"{prefix}-m2" for d in r["decisions"]), r)
    r = await call(session, "recall", {"question": "orders database timeout"})
    check(r["items"], r)
    r = await call(session, "record_receipt", {"receipt": {
        "id": f"{prefix}-receipt", "task": f"{prefix}-deploy", "actor": "user/ops1",
        "referenced_inputs": {"events": [f"{prefix}-e1"]},
        "policies_checked": [{"id": "policy/budget", "result": "allow"}],
        "action": "promote", "outcome": {"status": "success"},
        "timestamps": {"committed": "2026-11-20T10:00:00Z"}}})
    check(r["accepted"] + r["duplicates"] == 1, r)
    r = await call(session, "list_receipts", {"task": f"{prefix}-deploy"})
    check([x["receipt_id"] for x in r["receipts"]] == [f"{prefix}-receipt"], r)
    secret = dict(event, event_id=f"{prefix}-e2", payload={"note": "temporary credential"})
    await call(session, "ingest_event", {"event": secret})
    r = await call(session, "forget", {"kind": "event", "id": f"{prefix}-e2", "reason": "credential"})
    check(r["redacted"] >= 1, r)
    r = await call(session, "forget", {"kind": "event", "id": f"{prefix}-e2"}, expect_error=True)
    check(r["error"]["code"] == "forget.unknown_target", r)

    r = await call(session, "record_fact", {"subject": 7, "predicate": "tagged", "object": "x"}, expect_error=True)
    check(r["error"]["code"] == "mcp.invalid_arguments", r)
    r = await call(session, "ingest_event", {"event": {"event_id": "x"}}, expect_error=True)
    check(r["error"]["code"] == "envelope.required_field", r)
    r = await call(session, "recall", {"question": "orders", "tag": "billing"}, expect_error=True)
    check(r["error"]["code"] == "request.unknown_field" and "`tag`" in r["error"]["message"], r)
    try:
        unknown = await session.call_tool("no_such_tool", {})
        check(field(unknown, "is_error", "isError"), f"unknown tool: {unknown}")
    except Exception:  # A protocol error is the other accepted answer.
        pass
    return len(listed.tools)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--binary")
    ap.add_argument("--data")
    ap.add_argument("--principal")
    a = ap.parse_args()

    headers = {"Authorization": f"Bearer {a.key}"}
    async with http_transport(a.url, headers) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            n = await exercise(session, "http")
            print(f"streamable HTTP: handshake, {n} tools, every tool called")

    if a.binary:
        params = StdioServerParameters(command=a.binary,
                                       args=["mcp", "--data", a.data, "--as", a.principal])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                n = await exercise(session, "stdio")
                print(f"stdio: handshake, {n} tools, every tool called")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"MCP check failed: {e}", file=sys.stderr)
        sys.exit(1)
