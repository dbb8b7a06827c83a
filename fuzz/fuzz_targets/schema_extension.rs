//! Fuzzes `Schema::core()?.extend(text)` on arbitrary text; checks it never panics and that an accepted extension renders (PG-Schema, JSON), cannot be loaded twice, and is additive (every core node type, edge type, enum value and event type is still there, unchanged).
#![no_main]

use ctxgraph_fuzz::schema;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Non-UTF-8 bytes become U+FFFD, so every input reaches the TOML parser.
    let text = String::from_utf8_lossy(data);
    let core = schema();

    let Ok(ext) = core.extend(&text) else { return };

    // Rendering an accepted schema must not panic.
    let pg = ext.to_pg_schema();
    assert!(!pg.is_empty());
    let json = ext.to_json();
    let _ = serde_json::to_string(&json);

    // The same module cannot be loaded twice.
    assert!(
        ext.extend(&text).is_err(),
        "extending a second time with the same module was accepted\n text: {text}"
    );

    // Additivity: the extension only adds.
    assert_eq!(
        &ext.modules()[..core.modules().len()],
        core.modules(),
        "loaded modules changed (text: {text})"
    );
    for (label, old) in core.node_types() {
        let Some(new) = ext.node_type(label) else {
            panic!("core node type {label} disappeared\n text: {text}");
        };
        assert_eq!(new.key, old.key, "key of {label} changed (text: {text})");
        assert_eq!(new.description, old.description, "description of {label} changed");
        assert_eq!(new.prov, old.prov, "prov of {label} changed (text: {text})");
        assert_eq!(new.module, old.module, "module of {label} changed (text: {text})");
        for (name, def) in &old.properties {
            assert_eq!(
                new.properties.get(name),
                Some(def),
                "core property {label}.{name} changed\n text: {text}"
            );
        }
    }
    for (name, old) in core.edge_types() {
        let Some(new) = ext.edge_type(name) else {
            panic!("core edge type {name} disappeared\n text: {text}");
        };
        assert_eq!(new.description, old.description, "description of {name} changed");
        assert_eq!(new.prov, old.prov, "prov of {name} changed (text: {text})");
        assert_eq!(new.derived, old.derived, "derived flag of {name} changed (text: {text})");
        assert_eq!(new.identity, old.identity, "identity of {name} changed (text: {text})");
        assert_eq!(new.module, old.module, "module of {name} changed (text: {text})");
        for pair in &old.endpoints {
            assert!(
                new.endpoints.contains(pair),
                "endpoint {pair:?} of {name} disappeared\n text: {text}"
            );
        }
        for (prop, def) in &old.properties {
            assert_eq!(
                new.properties.get(prop),
                Some(def),
                "core property {name}.{prop} changed\n text: {text}"
            );
        }
    }
    for (name, old) in core.enums() {
        let Some(new) = ext.enum_def(name) else {
            panic!("core enum {name} disappeared\n text: {text}");
        };
        for value in &old.values {
            assert!(
                new.values.contains(value),
                "value {} of enum {name} changed or disappeared\n text: {text}",
                value.name
            );
        }
        for (alias, target) in &old.aliases {
            assert_eq!(
                new.aliases.get(alias),
                Some(target),
                "alias {alias} of enum {name} changed\n text: {text}"
            );
        }
    }
    for (category, class) in core.event_categories() {
        assert_eq!(
            ext.event_categories().get(category),
            Some(class),
            "event category {category} changed\n text: {text}"
        );
    }
    for (event_type, def) in core.event_types() {
        assert_eq!(
            ext.event_types().get(event_type),
            Some(def),
            "event type {event_type} changed\n text: {text}"
        );
    }
});
