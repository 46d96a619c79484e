//! Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document-01): a `client_id`
//! that is an https URL names a JSON document of client metadata at that URL. The core asks the
//! host to fetch it ([`Step::Fetch`]), checks what came back, and keeps it as the app's record
//! for as long as its `Cache-Control` says, within the configured bounds — so that a returning
//! client costs no fetch, and a document that changed or vanished is seen within a day.
//!
//! The JWK set a client names by its `jwks_uri` (RFC 7591 §2) is fetched the same way, under
//! the same policy, when an assertion of the client is first checked.

use crate::prelude::*;
use serde_json::Value;

use crate::client_metadata::{draft, MetadataFault, Origin};
use crate::config::{Config, DocumentPolicy};
use crate::ids::AppKey;
use crate::jose::client_keys;
use crate::records::{AppRecord, DocumentClient, Provenance, RemoteKeys};
use crate::refusal::DocumentFault;
use crate::step::{Fetch, FetchFailure, Fetched};
use crate::time::{Seconds, UnixTime};

/// The most bytes of a client's JWK set read: eight RSA keys of 4096 bits with their
/// certificates fit; a metadata document's limit would not.
pub const KEY_SET_MAX_BYTES: u32 = 32 * 1024;

/// How soon a client's key set, fetched, may be fetched again because an assertion names a key
/// it lacks (a rotation): so that assertions naming made-up keys cost the client's host at most
/// one request in this long.
pub const KEYS_REFETCH_AFTER: Seconds = Seconds(30);

/// The fetch of `app`'s document, if its host may be fetched from.
pub(crate) fn fetch(config: &Config, app: &AppKey) -> Result<Fetch, DocumentFault> {
    let policy = fetchable(config, app.document_url().unwrap_or_default())?;
    Ok(Fetch {
        url: app.document_url().unwrap_or_default().to_owned(),
        max_bytes: policy.max_bytes,
        timeout_ms: policy.timeout_ms,
    })
}

/// The fetch of the JWK set at `url` (a client's `jwks_uri`), if its host may be fetched from.
pub(crate) fn fetch_keys(config: &Config, url: &str) -> Result<Fetch, DocumentFault> {
    Ok(key_set_fetch(fetchable(config, url)?, url))
}

/// The fetch of the JWK set at `url` (an identity provider's `jwks_uri`, the operator's own).
pub(crate) fn fetch_provider_keys(config: &Config, url: &str) -> Fetch {
    key_set_fetch(config.key_fetch_policy(), url)
}

fn key_set_fetch(policy: &DocumentPolicy, url: &str) -> Fetch {
    Fetch {
        url: url.to_owned(),
        max_bytes: KEY_SET_MAX_BYTES,
        timeout_ms: policy.timeout_ms,
    }
}

/// The policy `url` is fetched under, or why it is not fetched.
fn fetchable<'c>(config: &'c Config, url: &str) -> Result<&'c DocumentPolicy, DocumentFault> {
    config
        .fetch_policy(url)
        .ok_or(DocumentFault::HostNotAllowed)
}

/// The key set `fetched` from `url` at `now` under `policy`, or why it cannot be used: a `200`
/// with a JWK set holding at least one usable key (RFC 7517 §5).
pub(crate) fn accept_keys(
    policy: &DocumentPolicy,
    url: &str,
    fetched: &Fetched,
    now: UnixTime,
) -> Result<RemoteKeys, DocumentFault> {
    let set = json_object(fetched, KEY_SET_MAX_BYTES)?;
    let keys = client_keys(&set).map_err(|why| DocumentFault::Invalid(why.to_owned()))?;
    Ok(RemoteKeys {
        url: url.to_owned(),
        keys,
        fetched_at: Some(now),
        fresh_until: now.plus(lifetime(fetched.cache_control.as_deref(), policy)),
    })
}

/// The JSON object a fetch answered with `200`, within `max_bytes`.
fn json_object(fetched: &Fetched, max_bytes: u32) -> Result<Value, DocumentFault> {
    if fetched.status != 200 {
        return Err(DocumentFault::Status(fetched.status));
    }
    // The host stops reading at the limit; a host that did not is held to it here.
    if fetched.body.len() > max_bytes as usize {
        return Err(DocumentFault::TooLarge);
    }
    // Read as text: the configuration's reader of JSON text is linked already.
    let text = core::str::from_utf8(&fetched.body).map_err(|_| DocumentFault::NotJson)?;
    match serde_json::from_str::<Value>(text) {
        Ok(object @ Value::Object(_)) => Ok(object),
        _ => Err(DocumentFault::NotJson),
    }
}

/// Why a fetch that got no answer cannot be used.
pub(crate) fn failed(failure: FetchFailure) -> DocumentFault {
    match failure {
        FetchFailure::Refused => DocumentFault::AddressRefused,
        FetchFailure::TooLarge => DocumentFault::TooLarge,
        FetchFailure::Timeout => DocumentFault::Timeout,
        FetchFailure::Unreachable => DocumentFault::Unreachable,
    }
}

/// The record `fetched` makes of `app`'s document at `now`, or why it makes none (§4: only a
/// `200` with a JSON object naming its own URL as `client_id`, its metadata as a document's
/// client may hold it). Nothing of a refused document is kept (§4.4). The key set fetched
/// from a `jwks_uri` the `earlier` record named too is kept with it.
pub(crate) fn accept(
    config: &Config,
    app: &AppKey,
    fetched: &Fetched,
    earlier: Option<&AppRecord>,
    now: UnixTime,
) -> Result<AppRecord, DocumentFault> {
    let (Some(clients), Some(policy)) = (config.unannounced(), config.documents()) else {
        return Err(DocumentFault::HostNotAllowed);
    };
    let Value::Object(fields) = json_object(fetched, policy.max_bytes)? else {
        return Err(DocumentFault::NotJson);
    };
    // §4.1: the very URL, compared as strings.
    if fields.get("client_id").and_then(Value::as_str) != app.document_url() {
        return Err(DocumentFault::WrongClientId);
    }
    let metadata = draft(config, &clients.scopes, &fields, Origin::Document).map_err(|fault| {
        DocumentFault::Invalid(match fault {
            MetadataFault::RedirectUri(why) | MetadataFault::Metadata(why) => why,
        })
    })?;
    Ok(AppRecord {
        app: metadata.app(app.clone(), None),
        provenance: Provenance::Document(DocumentClient {
            fetched_at: now,
            fresh_until: now.plus(lifetime(fetched.cache_control.as_deref(), policy)),
            grant_types: metadata.grant_types,
            native: metadata.native,
            about: metadata.about,
            auth_method: metadata.auth_method,
            keys: metadata
                .keys
                .carried_from(earlier.and_then(AppRecord::assertion_keys)),
        }),
        used_at: now,
    })
}

/// How long a document is kept: its `max-age` (RFC 9111 §5.2.2.1), none at all for `no-store`
/// or `no-cache`, the shortest when it says nothing — always within the policy's bounds.
fn lifetime(cache_control: Option<&str>, policy: &DocumentPolicy) -> Seconds {
    let mut max_age = None;
    for directive in cache_control.unwrap_or_default().split(',') {
        let (name, value) = directive.split_once('=').unwrap_or((directive, ""));
        match name.trim().to_ascii_lowercase().as_str() {
            "no-store" | "no-cache" => return policy.min_cache,
            "max-age" => max_age = value.trim().trim_matches('"').parse::<u64>().ok(),
            _ => {}
        }
    }
    // Within the policy's bounds (`max` then `min`: `clamp` panics on bounds the wrong way
    // round, and its message links `u64`'s `Debug` into the module; the configuration checks
    // `min_cache <= max_cache`).
    Seconds(
        max_age
            .unwrap_or(0)
            .max(policy.min_cache.0)
            .min(policy.max_cache.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_kept_for_its_max_age_within_the_bounds() {
        let policy = DocumentPolicy::default(); // 300 ..= 86 400 s
        let kept = |header: Option<&str>| lifetime(header, &policy).0;
        assert_eq!(kept(Some("public, max-age=3600")), 3600);
        assert_eq!(kept(Some("max-age=\"600\"")), 600);
        assert_eq!(kept(Some("Max-Age=60")), 300);
        assert_eq!(kept(Some("max-age=31536000, immutable")), 86_400);
        assert_eq!(kept(Some("max-age=3600, no-cache")), 300);
        assert_eq!(kept(Some("no-store")), 300);
        assert_eq!(kept(Some("max-age=soon")), 300);
        assert_eq!(kept(None), 300);
    }
}
