//! The package's TypeScript types are generated from the core (`core/examples/typescript.rs`):
//! the names from the core's own tables, and the configuration's shapes from
//! [`CONFIG_TYPESCRIPT`], declared beside the JSON form's reader and writer. These tests fail
//! when that declaration drifts from what the writer produces, either way.

use std::collections::BTreeSet;

use edgegrant::*;
use serde_json::{json, Value};

/// A document that sets every field the JSON form knows, in every shape a tag can take.
fn every_field() -> Value {
    let digest = ClientSecret::presented("s").digest().to_base64();
    json!({
        "apps": [
            { "key": "a", "name": "A", "secret_digest": digest, "redirect_uris": ["https://a.example/cb"],
              "permissions": { "kind": "scoped", "scopes": ["account_info.read"] },
              "default_token_type": "short_lived", "implicit_allowed": false },
            { "key": "b", "name": "B", "secret_digest": null, "redirect_uris": [],
              "permissions": { "kind": "legacy", "access": "full_dropbox" },
              "default_token_type": "long_lived", "implicit_allowed": true },
            { "key": "c", "name": "C", "secret_digest": null, "redirect_uris": ["http://127.0.0.1/cb"],
              "permissions": { "kind": "scoped", "scopes": ["mcp:tools"] },
              "default_token_type": "offline", "implicit_allowed": false },
        ],
        "policy": {
            "code_ttl": 600, "access_token_ttl": 14400, "require_s256": true, "long_lived_cutoff": 1,
            "max_input_bytes": 16384, "max_api_body_bytes": 65536, "token_parameters_in_query": false, "max_attempts": 3,
            "attempts": { "window": 60, "per_source": 10, "per_account": 5 },
            "live_grants_per_link": 10, "refresh_idle_lifetime": 86400, "allow_http_redirect_uris": true,
        },
        "api_endpoints": {
            "/2/users/get_current_account": "account_info.read",
            "/mcp": { "scope": "mcp:tools", "max_body_bytes": 4194304 },
        },
        "pages": { "consent": "c", "code": "c", "error": "e", "sign_in": "s" },
        "profile": {
            "kind": "standards", "issuer": "https://auth.example",
            "resources": ["https://api.example"],
            "rotation": { "clients": "all", "retry_window": 30, "reuse_detection": 86400 },
            "resource_servers": [{ "app": "a", "resources": ["https://api.example"] }],
            "client_credentials": { "apps": ["a"], "access_token_lifetime": 600 },
            "token_exchange": { "access_token_lifetime": 300 },
            "dpop": { "proof_window": 120, "nonces": "everywhere", "required": { "all": false, "unannounced": true, "apps": ["a"] } },
            "identity_assertions": { "providers": [{
                "issuer": "https://idp.example",
                "jwks": { "keys": [{ "kty": "EC", "crv": "P-256", "kid": "idp-1",
                    "x": "HhhTL9R1TALzBB2cdc6zO4P_2BrHzk_ogsyxyYvFiW4",
                    "y": "pGwxHE4v9A3ZajZT5uRURdMt_khuztdcepDGoYiBwKM" }] },
                "accounts": { "alice@corp.example": { "account_id": "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc", "uid": "12345" } },
            }, {
                "issuer": "https://idp2.example",
                "jwks_uri": "https://idp2.example/jwks.json",
                "accounts": {},
            }] },
            "clients": {
                "scopes": ["account_info.read"], "unused_lifetime": 864000,
                "registration": { "initial_access_tokens": [digest], "per_source": 5 },
                "documents": { "hosts": ["*.example.com"], "max_bytes": 4096, "timeout_ms": 3000,
                               "min_cache": 60, "max_cache": 3600 },
            },
        },
        "server_key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
        "scope_descriptions": { "mcp:tools": "Use the tools" },
    })
}

/// Every key of `value`, at any depth, and every string under a key that tags a shape.
fn keys_and_tags(value: &Value, keys: &mut BTreeSet<String>, tags: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                keys.insert(key.clone());
                if let ("kind" | "access" | "default_token_type" | "clients", Value::String(tag)) =
                    (key.as_str(), inner)
                {
                    tags.insert(tag.clone());
                }
                match (key.as_str(), inner) {
                    // Maps keyed by the deployment's own names: their keys are not the format's.
                    ("scope_descriptions", _) => {}
                    ("api_endpoints", Value::Object(endpoints)) => endpoints
                        .values()
                        .for_each(|endpoint| keys_and_tags(endpoint, keys, tags)),
                    // A provider's subjects: the accounts they map to are the format's.
                    ("accounts", Value::Object(subjects)) => subjects
                        .values()
                        .for_each(|account| keys_and_tags(account, keys, tags)),
                    // A JWK set: its keys are JOSE's (RFC 7517), not the format's.
                    ("jwks", Value::Object(set)) => keys.extend(set.keys().cloned()),
                    _ => keys_and_tags(inner, keys, tags),
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| keys_and_tags(item, keys, tags)),
        _ => {}
    }
}

#[test]
fn the_declared_configuration_is_the_one_the_core_writes() {
    let document = ConfigDocument::from_json_value(&every_field()).unwrap();
    let config = Config::new(document).unwrap();
    let written = ConfigDocument::from(config).to_json_value();
    let (mut keys, mut tags) = (BTreeSet::new(), BTreeSet::new());
    keys_and_tags(&written, &mut keys, &mut tags);
    // What the writer produces is declared: every key, every tag.
    for key in &keys {
        assert!(
            CONFIG_TYPESCRIPT.contains(&format!(" {key}:"))
                || CONFIG_TYPESCRIPT.contains(&format!(" {key}?:")),
            "the key {key} is written but not declared in CONFIG_TYPESCRIPT"
        );
    }
    for tag in &tags {
        assert!(
            CONFIG_TYPESCRIPT.contains(&format!("\"{tag}\"")),
            "the tag {tag:?} is written but not declared in CONFIG_TYPESCRIPT"
        );
    }
    // What is declared is written: no key the core no longer knows.
    let declared: BTreeSet<String> = CONFIG_TYPESCRIPT
        .lines()
        .filter(|line| !line.trim_start().starts_with("/**"))
        .flat_map(|line| line.split(['{', ';', '|']))
        .filter_map(|part| {
            let (name, _) = part.split_once(':')?;
            let name = name.trim().trim_end_matches('?');
            (!name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
                .then(|| name.to_owned())
        })
        .collect();
    let stale: Vec<&String> = declared.difference(&keys).collect();
    assert!(stale.is_empty(), "declared but never written: {stale:?}");
}

#[test]
fn no_two_reasons_outcomes_or_events_share_a_name() {
    // Hosts in other languages tell them apart by name alone (the generated unions, logs).
    for names in [
        Refusal::NAMES,
        Outcome::NAMES,
        AuditEvent::NAMES,
        AttemptVerdict::NAMES,
        Attempter::NAMES,
    ] {
        let unique: BTreeSet<&&str> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "a name twice in {names:?}");
    }
}
