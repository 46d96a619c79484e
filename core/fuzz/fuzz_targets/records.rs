//! The whole host loop over arbitrary stored records: the first line of the input changes the
//! seeded store (`perturb <n> <n> …`: which record, which field, what value), the rest is a
//! request (see the crate docs). No panic, no host misuse, no 5xx but for a storage fault:
//! stored bytes that are not a record of the key's type (`Refusal::StorageFault`, 503).
#![no_main]
use edgegrant::{Expect, Put, Record, RecordKey, Transaction};
use edgegrant_fuzz::{parse_request, seeded, serve};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

/// The variants of [`Record`], as serde names them (externally tagged: `{"Code": {…}}`).
const VARIANTS: [&str; 5] = ["Code", "AccessToken", "RefreshToken", "Grant", "Link"];

/// Applies one change, chosen by three numbers, to the store's records (through their serde
/// form, `{"version": …, "record": {"<Variant>": {…}}}`, so that most changes stay records that
/// decode; the others become bytes that are no record).
fn perturb(records: &mut [(RecordKey, Value)], which: u8, field: u8, value: u8) {
    let Some((_, stored)) = records.get_mut(which as usize % records.len().max(1)) else {
        return;
    };
    let small = i64::from(value) - 128;
    let now = edgegrant_tests::T0.0 as i64;
    let grant = json!(format!("grant{value:0>20}"));
    let (path, new): (&str, Value) = match field % 10 {
        0 => {
            stored["version"] = json!(u64::from(value));
            return;
        }
        1 => ("expires_at", json!(now + small)),
        2 => (
            "revoked_at",
            if value % 2 == 0 {
                Value::Null
            } else {
                json!(now + small)
            },
        ),
        3 => ("link_epoch", json!(u64::from(value % 4))),
        4 => ("epoch", json!(u64::from(value % 4))),
        5 => (
            "state",
            if value % 2 == 0 {
                json!("Issued")
            } else {
                json!({ "Redeemed": { "grant": grant } })
            },
        ),
        6 => ("grant", grant),
        7 => ("scopes", json!([])),
        8 => ("offline", json!(value % 2 == 0)),
        _ => {
            // Another record type under the same key, with the same fields.
            let Some((_, fields)) = stored["record"]
                .as_object_mut()
                .and_then(|record| record.iter_mut().next())
            else {
                return;
            };
            let fields = fields.take();
            stored["record"] = json!({ VARIANTS[value as usize % VARIANTS.len()]: fields });
            return;
        }
    };
    let Some((_, fields)) = stored["record"]
        .as_object_mut()
        .and_then(|record| record.iter_mut().next())
    else {
        return;
    };
    match (path, fields.get_mut("state")) {
        // A redeemed code names its grant inside its state.
        ("grant", Some(Value::Object(state))) => {
            if let Some(redeemed) = state.get_mut("Redeemed") {
                redeemed["grant"] = new;
            }
        }
        _ => fields[path] = new,
    }
}

fuzz_target!(|data: &[u8]| {
    let seeded = seeded();
    let (first, request) = match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &data[..0]),
    };
    let Some(numbers) = std::str::from_utf8(first)
        .ok()
        .and_then(|l| l.strip_prefix("perturb "))
    else {
        return;
    };
    let numbers: Vec<u8> = numbers.split(' ').filter_map(|n| n.parse().ok()).collect();
    let mut records: Vec<(RecordKey, Value)> = seeded
        .store
        .iter()
        .filter_map(|(key, stored)| {
            let record = serde_json::to_value(stored.record().ok()?).ok()?;
            Some((
                key.clone(),
                json!({ "version": stored.version, "record": record }),
            ))
        })
        .collect();
    for change in numbers.chunks(3) {
        if let [which, field, value] = change {
            perturb(&mut records, *which, *field, *value);
        }
    }
    let mut store = edgegrant_tests::Store::default();
    for (key, value) in records {
        let version = value["version"].as_u64().unwrap_or_default();
        match serde_json::from_value::<Record>(value["record"].clone()) {
            // A record, perhaps of another type than its key names, at any version.
            Ok(record) => store.put_raw(key, version, &record),
            // A change the record type does not admit: bytes that are no record at all, as a
            // host that never reads its records may well hold.
            Err(_) => {
                let bytes = serde_json::to_vec(&value["record"]).unwrap_or_default();
                let put = Put {
                    key,
                    expect: Expect::Absent,
                    bytes,
                    purge_after: None,
                };
                let written = store.apply(&Transaction {
                    puts: vec![put],
                    audit: Vec::new(),
                });
                assert!(written.is_ok(), "every key is written once");
            }
        }
    }
    let Some(input) = parse_request(request, seeded) else {
        return;
    };
    if let Err(misuse) = serve(&seeded.config, &mut store, seeded.now, input, false) {
        panic!("host misuse from a well-behaved host: {misuse}");
    }
});
