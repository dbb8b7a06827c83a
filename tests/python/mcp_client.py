"""Drive ctxgraph's MCP tools with the official Python MCP SDK.

Over streamable HTTP against a running `ctxgraph serve` (bearer key), and over stdio by starting
`ctxgraph mcp --data DIR --as NAME`: handshake, tools/list, one call of every tool (each
knowledge tool with one bad call that must be a tool error with its code), a bad
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
    # The knowledge tools.
    "memory_impact",
    "search_memories",
    "unlink_memories",
    "add_document",
    "show_document",
    "define_type",
    "add_instance",
    "list_types",
    "set_slot",
    "entity_slots",
    "define_checklist",
    "list_checklists",
    "check_checklist",
    "next_question",
    "add_goal",
    "list_goals",
    "entity_candidates",
    "merge_entities",
    "reject_entities",
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
    await knowledge(session, prefix)
    try:
        unknown = await session.call_tool("no_such_tool", {})
        check(field(unknown, "is_error", "isError"), f"unknown tool: {unknown}")
    except Exception:  # A protocol error is the other accepted answer.
        pass
    return len(listed.tools)


async def bad(session, tool, args, code):
    """A call that must be a tool error with this code and a message."""
    r = await call(session, tool, args, expect_error=True)
    check(r["error"]["code"] == code and r["error"]["message"], f"{tool} {args}: {r}")
    return r


def summary(r):
    check(isinstance(r.get("summary"), str) and len(r["summary"]) > 10, f"a summary: {r}")
    return r["summary"]


async def knowledge(session, prefix):
    """Each knowledge tool once, with its summary, and one bad call each."""
    m1, m2 = f"{prefix}-m1", f"{prefix}-m2"
    r = await call(session, "memory_impact", {"memory_id": m1})
    check([m["id"] for m in r["superseded_by"]] == [m2], r)
    summary(r)
    await bad(session, "memory_impact", {"memory_id": f"{prefix}-none"}, "memory.not_found")
    r = await call(session, "search_memories", {"query": "why did we leave PostgreSQL for orders"})
    check(r["hits"], r)
    summary(r)
    await bad(session, "search_memories", {"question": "why", "k": 3}, "request.unknown_field")
    r = await call(session, "unlink_memories", {"from": m2, "to": m1, "link_type": "relates_to",
                                                "vote": "downvote"})
    check(r["status"] in ("accepted", "duplicate"), r)
    await bad(session, "unlink_memories", {"from": m1, "to": m2, "link_type": "implements"},
              "memory.unknown_link")

    url = f"{prefix}/notes.md"
    r = await call(session, "add_document", {"url": url, "text": "# Orders\n\nOrders moved to CockroachDB. It replicates across regions.\n"})
    check(r["sentences"] == 2, r)
    summary(r)
    await bad(session, "add_document", {"url": "x", "text": "y", "format": "pdf"}, "request.document_format")
    r = await call(session, "show_document", {"id": url})
    sentence = r["sections"][0]["paragraphs"][0][0]["sentence_id"]
    summary(r)
    await bad(session, "show_document", {"id": f"{prefix}/none"}, "document.not_found")
    r = await call(session, "record_fact", {"subject": f"{prefix} orders", "subject_type": "project",
                                            "predicate": "depends_on", "object": "CockroachDB",
                                            "object_type": "concept", "cites": sentence})
    check(r["fact"]["citations"][0]["sentence_id"] == sentence, r)

    film, alien, heat = f"{prefix}Film", f"{prefix} alien", f"{prefix} heat"
    summary(await call(session, "define_type", {"name": film}))
    await bad(session, "define_type", {"name": " "}, "slots.label_format")
    for name, genre in [(alien, "science fiction"), (heat, "crime")]:
        await call(session, "add_instance", {"entity": name, "entity_type": "concept", "type": film})
        await call(session, "set_slot", {"entity": name, "slot": "genre", "value": genre})
    await bad(session, "add_instance", {"entity": alien, "type": f"{prefix}Novel"}, "slots.unknown_type")
    await bad(session, "set_slot", {"entity": alien, "slot": "genre", "value": "x", "confidence": 2},
              "slots.confidence_range")
    r = await call(session, "list_types", {})
    check(any(t["name"] == film and len(t["instances"]) == 2 for t in r["types"]), r)
    await bad(session, "list_types", {"limit": 0}, "request.limit_range")
    r = await call(session, "entity_slots", {"entity": alien})
    check(r["slots"][0]["value"] == "science fiction" and r["types"] == [film], r)
    await bad(session, "entity_slots", {"entity": f"{prefix} nobody"}, "entity.not_found")

    checklist = f"{prefix}-identify-film"
    summary(await call(session, "define_checklist", {"name": checklist, "slots": [
        {"name": "film", "expect_labels": [film], "relation": "INSTANCE_OF"},
        {"name": "genre"}, {"name": "year", "required": False}]}))
    r = await bad(session, "define_checklist", {"name": "bad", "slots": [
        {"name": "a", "cardinality": "TWO"}, {"name": "A"}]}, "schema.enum")
    check(len(r["error"]["violations"]) == 2, f"every problem of a checklist: {r}")
    r = await call(session, "list_checklists", {})
    check(any(c["name"] == checklist for c in r["checklists"]), r)
    await bad(session, "list_checklists", {"colour": "red"}, "request.unknown_field")
    r = await call(session, "check_checklist", {"checklist": checklist, "entity": alien})
    check(r["complete"] is True, r)
    summary(r)
    await bad(session, "check_checklist", {"checklist": f"{prefix}-none", "entity": alien}, "checklist.unknown")
    r = await call(session, "next_question", {"checklist": checklist, "candidates": [alien, heat]})
    check(r["ask"] == "genre" and r["ranking"][0]["gain"] == 1.0, r)
    check(summary(r).startswith("ask about genre"), r)
    await bad(session, "next_question", {"checklist": checklist, "candidates": [alien, f"{prefix} nobody"]},
              "entity.not_found")

    user = f"{prefix} ann"
    summary(await call(session, "add_goal", {"name": "watch the classics", "user": user,
                                             "create_user": True, "influences": [checklist],
                                             "prefers": [{"slot": "genre", "value": "crime"}]}))
    await bad(session, "add_goal", {"name": "g", "user": user, "influences": [f"{prefix}-none"]},
              "goal.unknown_checklist")
    await bad(session, "add_goal", {"name": "g", "user": user, "prefers": [{"slot": " ", "value": "x"}]},
              "slots.label_format")
    r = await call(session, "list_goals", {"user": user})
    check(len(r["goals"]) == 1 and r["goals"][0]["prefers"] == [{"slot": "genre", "value": "crime"}], r)
    # The goal favours crime: heat is twice as likely, so the genre tells H(1/3, 2/3) bits.
    r = await call(session, "next_question", {"checklist": checklist, "candidates": [alien, heat],
                                              "user": user, "search_cost": 0.5})
    check(abs(r["ranking"][0]["gain"] - 0.9182958340544896) < 1e-12 and len(r["goals"]) == 1, r)
    check(r["recommendation"]["action"] in ("ask", "search") and r["search_cost"] == 0.5, r)
    await bad(session, "next_question", {"checklist": checklist, "candidates": [alien, heat], "search_cost": -1},
              "checklist.search_cost")
    # A fact whose object is a slot value, and one whose object is a declared type.
    r = await call(session, "record_fact", {"subject": heat, "predicate": "tagged",
                                            "object": {"slot": "genre", "value": "heist"}})
    check(r["fact"]["object_slot"] == {"slot": "genre", "value": "heist"}, r)
    r = await call(session, "record_fact", {"subject": heat, "predicate": "tagged", "object": {"type": film}})
    check(r["fact"]["object_type"] == film.lower(), r)
    await bad(session, "record_fact", {"subject": heat, "predicate": "tagged", "object": {"type": f"{prefix}Novel"}},
              "slots.unknown_type")
    await bad(session, "list_goals", {"user": f"{prefix} nobody"}, "entity.not_found")

    r = await call(session, "entity_candidates", {"status": "all"})
    check(isinstance(r["pairs"], list), r)
    summary(r)
    await bad(session, "entity_candidates", {"status": "maybe"}, "request.candidate_status")
    r = await call(session, "reject_entities", {"a": alien, "b": heat, "reason": "two films"})
    check(r["status"] == "accepted", r)
    await bad(session, "reject_entities", {"a": alien}, "mcp.invalid_arguments")
    r = await call(session, "merge_entities", {"a": alien, "b": heat})
    check("merged" in summary(r), r)
    await bad(session, "merge_entities", {"a": f"{prefix} nobody", "b": alien}, "entity.not_found")


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
