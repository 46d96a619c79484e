//! The whole `handle` over arbitrary stored records: the first line of the input changes the
//! seeded store (`perturb <n> <n> …`: which record, which field, what value), the rest is a
//! request (see the crate docs). No panic, no 5xx; a corrupt store may only be reported as a
//! record of the wrong type.
#![no_main]
use edgegrant::{Misuse, RecordKey, Versioned};
use edgegrant_fuzz::{parse_request, seeded, serve};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

/// Applies one change, chosen by three numbers, to the store's records (through their JSON, so
/// that only changes the record types admit are made).
fn perturb(records: &mut [(RecordKey, Value)], which: u8, field: u8, value: u8) {
    let Some((_, versioned)) = records.get_mut(which as usize % records.len().max(1)) else {
        return;
    };
    let small = i64::from(value) - 128;
    let now = edgegrant_tests::T0.0 as i64;
    let (path, new): (&str, Value) = match field % 10 {
        0 => ("version", json!(u64::from(value))),
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
            json!(if value % 2 == 0 { "issued" } else { "redeemed" }),
        ),
        6 => ("grant", json!(format!("grant{value:0>20}"))),
        7 => ("scopes", json!([])),
        8 => ("offline", json!(value % 2 == 0)),
        _ => (
            "type",
            json!(["code", "access_token", "refresh_token", "grant", "link"][value as usize % 5]),
        ),
    };
    if path == "version" {
        versioned[path] = new;
    } else if let Some(record) = versioned.get_mut("record") {
        record[path] = new;
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
        .filter_map(|(key, v)| Some((key.clone(), serde_json::to_value(v).ok()?)))
        .collect();
    for change in numbers.chunks(3) {
        if let [which, field, value] = change {
            perturb(&mut records, *which, *field, *value);
        }
    }
    let mut store = edgegrant_tests::Store::default();
    for (key, value) in records {
        // A change the record type does not admit is a store no serde host could have read.
        let Ok(versioned) = serde_json::from_value::<Versioned>(value) else {
            continue;
        };
        store.put_raw(key, versioned);
    }
    let Some(input) = parse_request(request, seeded) else {
        return;
    };
    match serve(&seeded.config, &mut store, seeded.now, input, false) {
        Ok(_) | Err(Misuse::WrongRecordType(_)) => {}
        Err(misuse) => panic!("host misuse from a well-behaved host: {misuse}"),
    }
});
