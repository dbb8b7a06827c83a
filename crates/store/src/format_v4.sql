-- Format 4: events by trace. A question that names a trace is answered from that trace's
-- events, so they are found by an index on the event node's `trace_id` property (partial: events
-- only). Derived from `nodes`, so every write and `reproject` keep it without code of their own.
CREATE INDEX nodes_trace ON nodes (json_extract(props, '$.trace_id')) WHERE label = 'Event';
