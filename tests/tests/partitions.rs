//! Partitions and purge times (issue 16; keyed and sealed, issue 25): every credential routes to
//! its account's partition and shows it to no one else, a forged or garbled route is refused
//! like an unknown credential without any read, and every record the core writes says when it
//! may be purged — so a store that purges on time stays bounded while every answer a client
//! sees stays right.
//!
//! The harness (`edgegrant_tests::Request`) checks the contract on every request of every test:
//! `partition_of` is the request's partition, every record read or written but failure counts
//! lies in it, and every transaction lies in one partition.

use edgegrant::*;
use edgegrant_tests::*;
use serde_json::Value;

const ACCESS_TTL: u64 = 14_400;

fn sim() -> Sim {
    Sim::new(fixture_config())
}

/// The route and the secret of a credential as it is shown (after any `sl.`).
fn parts(credential: &str) -> (&str, &str) {
    let rest = credential.strip_prefix("sl.").unwrap_or(credential);
    rest.split_once('.').expect("a route")
}

/// `credential` with its route replaced by `route`.
fn rerouted(credential: &str, route: &str) -> String {
    let prefix = if credential.starts_with("sl.") {
        "sl."
    } else {
        ""
    };
    format!("{prefix}{route}.{}", parts(credential).1)
}

/// The keys `input` reads and writes, run against `store` (which it leaves as it was).
fn keys_touched(sim: &Sim, input: Input) -> Vec<RecordKey> {
    let mut store = sim.store.clone();
    let (mut request, mut step) =
        edgegrant::Request::start(sim.config.clone(), input, sim.now, entropy(99));
    let mut keys = Vec::new();
    loop {
        let event = match step {
            Step::Read(read) => {
                keys.extend(read.iter().cloned());
                store.read(read)
            }
            Step::Write(transaction) => {
                keys.extend(transaction.puts.iter().map(|put| put.key.clone()));
                store.apply(&transaction).unwrap();
                Event::Committed
            }
            Step::Fetch(fetch) => store.fetch(&fetch),
            Step::Verify(verify) => Event::Verified(verify_signature(&verify)),
            Step::Respond(_) | Step::Serve(_) => return keys,
        };
        step = request.advance(event).unwrap();
    }
}

/// Two copies of `sim` at time `at`: its store as it is, and purged at `at` — a purge on time
/// must change no answer.
fn with_and_without_purge(sim: &Sim, at: u64) -> [Sim; 2] {
    let now = UnixTime(at);
    let mut purged = sim.store.clone();
    purged.purge(now);
    [sim.store.clone(), purged].map(|store| {
        let mut probe = Sim::new(fixture_config());
        probe.store = store;
        probe.now = now;
        probe
    })
}

fn token_input(form: &[(&str, &str)]) -> Input {
    let mut request = form_request(form);
    request.path = "/oauth2/token".into();
    Input::Http {
        request,
        user: None,
    }
}

#[test]
fn every_credential_routes_to_its_accounts_partition_and_tells_no_one_else_anything() {
    let mut sim = sim();
    let alice_p = Partition::of_account(&fixture_key(), &alice().account_id);
    let bob_p = Partition::of_account(&fixture_key(), &bob().account_id);
    assert_ne!(alice_p, bob_p);
    // Derived under the server key: another deployment's partition of the same account differs,
    // so a partition confirms no guessed account id to whoever lacks the key.
    let other_key = ServerKey::from_base64("YW5vdGhlci1zZXJ2ZXIta2V5LW9mLTMyLWJ5dGVzISE").unwrap();
    assert_ne!(
        Partition::of_account(&other_key, &alice().account_id),
        alice_p
    );
    let mut routes = Vec::new();
    for (user, partition) in [(alice(), alice_p), (bob(), bob_p), (alice(), alice_p)] {
        let code = sim.code_for(&pkce_offline_query("s"), &user);
        let tokens = json(&sim.exchange_pkce(&code, VERIFIER));
        let access = tokens["access_token"].as_str().unwrap();
        let refresh = tokens["refresh_token"].as_str().unwrap();
        let call = Input::Http {
            request: bearer_request(GET_ACCOUNT, access),
            user: None,
        };
        assert_eq!(partition_of(&sim.config, &call), Some(partition));
        let refresh_input = token_input(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("client_id", PKCE_APP),
        ]);
        assert_eq!(partition_of(&sim.config, &refresh_input), Some(partition));
        for credential in [code.as_str(), access, refresh] {
            assert!(!credential.contains(&partition.to_string()), "{credential}");
            let (route, secret) = parts(credential);
            assert_eq!((route.len(), secret.len()), (32, 43), "{credential}");
            routes.push(route.to_owned());
        }
    }
    // No two credentials share a visible part, though two grants of one user were among them:
    // nothing links a user's credentials, in one app or across apps.
    let count = routes.len();
    routes.sort();
    routes.dedup();
    assert_eq!(routes.len(), count);
    // Every stored record of an account lies in its partition (and the store is consistent).
    explorer::check_store(&fixture_key(), &sim.store);
}

#[test]
fn a_forged_route_reaches_no_partition_and_is_refused_without_a_read() {
    let mut sim = sim();
    let bobs_code = sim.code_for(&pkce_offline_query("b"), &bob());
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let bob_route = parts(&bobs_code).0.to_owned();
    let mut flipped = parts(&code).0.as_bytes().to_vec();
    flipped[3] = if flipped[3] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    // Minted under another server key (another deployment, or a guessed key).
    let mut other_doc = fixture_document();
    other_doc.server_key =
        Some(ServerKey::from_base64("YW5vdGhlci1zZXJ2ZXIta2V5LW9mLTMyLWJ5dGVzISE").unwrap());
    let mut other = Sim::new(Config::new(other_doc).unwrap());
    let foreign = other.code_for(&pkce_offline_query("s"), &alice());
    let forgeries = [
        // Bob's genuine route on Alice's secret: the tag covers partition and secret together.
        rerouted(&code, &bob_route),
        // One character of the masked partition changed.
        rerouted(&code, &flipped),
        // A genuine route on a secret of the attacker's choosing.
        format!("{}.{}", parts(&code).0, "s".repeat(43)),
        foreign,
    ];
    for forged in &forgeries {
        let input = token_input(&pkce_exchange(forged, VERIFIER));
        assert_eq!(partition_of(&sim.config, &input), None, "{forged}");
        assert!(keys_touched(&sim, input.clone()).is_empty(), "{forged}");
        let answer = sim.token_form_answer(&pkce_exchange(forged, VERIFIER), None);
        assert_eq!(answer.refusal(), Some(&Refusal::UnknownCode), "{forged}");
        assert_eq!(http(answer).status, 400);
    }
    let tokens = json(&sim.exchange_pkce(&code, VERIFIER));
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();

    let forged_access = rerouted(&access, &bob_route);
    let call = Input::Http {
        request: bearer_request(GET_ACCOUNT, &forged_access),
        user: None,
    };
    assert_eq!(partition_of(&sim.config, &call), None);
    assert!(keys_touched(&sim, call).is_empty());
    let answer = sim.api(GET_ACCOUNT, &forged_access);
    assert_eq!(answer.refusal(), Some(&Refusal::UnknownAccessToken));
    assert_eq!(http(answer).status, 401);
    let forged_refresh = rerouted(&refresh, &bob_route);
    let answer = sim.refresh_answer(&forged_refresh, PKCE_APP, None);
    assert_eq!(answer.refusal(), Some(&Refusal::UnknownRefreshToken));
    assert_eq!(http(answer).status, 400);
    // The genuine ones still work.
    assert!(matches!(sim.api(GET_ACCOUNT, &access), Answer::Serve(_)));
    assert_eq!(sim.refresh(&refresh, PKCE_APP, None).status, 200);
}

#[test]
fn a_garbled_partition_is_refused_without_any_read() {
    let mut sim = sim();
    let tokens = sim.pkce_offline_tokens(&alice());
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let secret = access.rsplit('.').next().unwrap().to_owned();
    let garbled_parts = [
        String::new(),
        "A".repeat(31),                  // 31 characters
        "A".repeat(33),                  // 33
        "A".repeat(16),                  // the shape of the releases before sealed routes
        format!("{}*", "A".repeat(31)),  // not base64url
        format!("{}=", "A".repeat(31)),  // padding
        format!("{}.x", "A".repeat(32)), // a dot too many
    ];
    for part in &garbled_parts {
        let bearer = format!("sl.{part}.{secret}");
        let call = Input::Http {
            request: bearer_request(GET_ACCOUNT, &bearer),
            user: None,
        };
        assert_eq!(partition_of(&sim.config, &call), None, "{bearer}");
        assert!(keys_touched(&sim, call.clone()).is_empty(), "{bearer}");
        let answer = sim.run(call);
        assert!(
            matches!(
                answer.refusal(),
                Some(Refusal::UnknownAccessToken | Refusal::MalformedBearer)
            ),
            "{bearer}: {answer:?}"
        );
        assert!(matches!(http(answer).status, 400 | 401), "{bearer}");

        let garbled_refresh = format!("{part}.{secret}");
        let input = token_input(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &garbled_refresh),
            ("client_id", PKCE_APP),
        ]);
        assert!(keys_touched(&sim, input.clone()).is_empty());
        let answer = sim.run(input);
        assert_eq!(answer.refusal(), Some(&Refusal::UnknownRefreshToken));
        assert_eq!(oauth_error(&http(answer)), "invalid_grant");

        let garbled_code = format!("{part}.{secret}");
        let input = token_input(&pkce_exchange(&garbled_code, VERIFIER));
        assert!(keys_touched(&sim, input.clone()).is_empty());
        let answer = sim.run(input);
        assert_eq!(answer.refusal(), Some(&Refusal::UnknownCode));
    }
    // A token without any partition part (the shape of the releases before partitions).
    let old_shape = format!("sl.{secret}");
    assert_eq!(
        sim.api(GET_ACCOUNT, &old_shape).refusal(),
        Some(&Refusal::UnknownAccessToken)
    );
    assert_eq!(sim.refresh(&refresh, PKCE_APP, None).status, 200);
}

#[test]
fn a_confidential_clients_failure_counts_are_written_one_partition_at_a_time() {
    let mut sim = sim();
    let mut request = form_request(&[
        ("grant_type", "refresh_token"),
        (
            "refresh_token",
            "AAAAAAAAAAAAAAAA.nothing-here-nothing-here-nothing-here-noth",
        ),
        ("client_id", CONF_APP),
        ("client_secret", "wrong"),
    ]);
    request.source = Some("192.0.2.1".into());
    request.path = "/oauth2/token".into();
    let input = Input::Http {
        request,
        user: None,
    };
    let touched = keys_touched(&sim, input.clone());
    // The source's count alone (never the app's: its key is public), in its own partition.
    assert!(touched.iter().all(|k| matches!(k, RecordKey::Attempts(_))));
    let answer = sim.run(input);
    assert_eq!(answer.refusal(), Some(&Refusal::ClientAuthenticationFailed));
    assert_eq!(sim.store.len(), 1);
}

/// Every record says when it may go, and a store purged on time keeps nothing a client could
/// still use, and nothing that lets a client be told the wrong thing.
#[test]
fn revoked_grants_expire_with_their_tokens_and_purging_changes_no_answer() {
    let mut sim = sim();
    let code = sim.code_for(&pkce_offline_query("s"), &alice());
    let code_key = RecordKey::of_code(&fixture_key(), &code).unwrap();
    assert_eq!(
        sim.store.purge_after(&code_key),
        Some(UnixTime(T0.0 + 600 + 600)),
        "an issued code: a lifetime past its expiry"
    );
    let tokens = json(&sim.exchange_pkce(&code, VERIFIER));
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let access_key = RecordKey::of_access_token(&fixture_key(), &access).unwrap();
    let refresh_key = RecordKey::of_refresh_token(&fixture_key(), &refresh).unwrap();
    assert_eq!(
        sim.store.purge_after(&code_key),
        Some(UnixTime(T0.0 + 600 + ACCESS_TTL)),
        "a redeemed code: reuse detection for an access token's lifetime past the code's expiry"
    );
    assert_eq!(
        sim.store.purge_after(&access_key),
        Some(UnixTime(T0.0 + 2 * ACCESS_TTL)),
        "an access token: told expired for one more lifetime"
    );
    assert_eq!(
        sim.store.purge_after(&refresh_key),
        None,
        "a live refresh token"
    );
    let grant_key = sim
        .store
        .iter()
        .map(|(key, _)| key.clone())
        .find(|key| matches!(key, RecordKey::Grant(..)))
        .unwrap();
    assert_eq!(
        sim.store.purge_after(&grant_key),
        None,
        "a live offline grant"
    );

    // A refresh an hour later, then the revocation an hour after that.
    sim.advance(3_600);
    let refreshed = json(&sim.refresh(&refresh, PKCE_APP, None));
    let second = refreshed["access_token"].as_str().unwrap().to_owned();
    sim.advance(3_600);
    let revoked_at = sim.now;
    assert_eq!(sim.revoke(&access).status, 200);
    let purge = Some(UnixTime(revoked_at.0 + ACCESS_TTL));
    assert_eq!(sim.store.purge_after(&grant_key), purge);
    assert_eq!(sim.store.purge_after(&refresh_key), purge);

    // Until then every token of the grant is refused as revoked; purging on time changes no
    // status and no error a client sees, only whether the record is there.
    for at in [
        revoked_at.0 + ACCESS_TTL - 1,
        revoked_at.0 + ACCESS_TTL,
        revoked_at.0 + ACCESS_TTL + 1,
        T0.0 + 3 * ACCESS_TTL,
    ] {
        for mut probe in with_and_without_purge(&sim, at) {
            let refused = probe.refresh(&refresh, PKCE_APP, None);
            assert_eq!(refused.status, 400, "at {at}");
            assert_eq!(oauth_error(&refused), "invalid_grant");
            for token in [&access, &second] {
                let answer = probe.api(GET_ACCOUNT, token);
                let response = http(answer);
                assert_eq!(response.status, 401, "at {at}");
            }
        }
    }
    // Once everything is due, only the link stays: it holds the user's consent (revoking a
    // grant does not withdraw it; unlinking does).
    sim.now = UnixTime(T0.0 + 4 * ACCESS_TTL);
    sim.store.purge(sim.now);
    let left: Vec<&RecordKey> = sim.store.iter().map(|(key, _)| key).collect();
    assert!(matches!(left.as_slice(), [RecordKey::Link(..)]), "{left:?}");
}

#[test]
fn online_grants_purge_themselves_and_a_long_run_stays_bounded() {
    let mut sim = sim();
    // A day of online sign-ins, a purge every hour: the store holds what the last hours made.
    let mut peak = 0;
    for hour in 0..48 {
        for user in [alice(), bob()] {
            let code = sim.code_for(&conf_query("online", &format!("h{hour}")), &user);
            assert_eq!(sim.exchange_confidential(&code).status, 200);
        }
        sim.advance(3_600);
        sim.store.purge(sim.now);
        peak = peak.max(sim.store.len());
    }
    // Per sign-in a code, a grant and an access token, kept for at most two token lifetimes
    // (8 hours) past issue; plus the two links.
    assert!(peak <= 2 * 3 * 9 + 2, "peak {peak}");
    assert!(sim.store.len() <= 2 * 3 * 9 + 2, "{}", sim.store.len());
}

/// The live members of a link (grants that never end by themselves) in `store`: member
/// records with no purge time.
fn live_members(store: &Store) -> usize {
    store
        .iter()
        .filter(|(key, _)| matches!(key, RecordKey::Member(..)))
        .filter(|(key, _)| store.purge_after(key).is_none())
        .count()
}

/// An unlink ends every grant of the app for the user, and the grants that would never end by
/// themselves (offline, long-lived) go with it: they are the link's members, which the unlink
/// sweeps, giving them and their tokens a purge time. A revoked grant's member goes with it.
#[test]
fn unlinked_grants_expire_with_their_tokens_and_a_revoked_one_leaves_the_list() {
    let mut sim = sim();
    let listed = |sim: &Sim| live_members(&sim.store);
    // Three offline grants (sign-ins on three devices), one of them revoked.
    let grants: Vec<Value> = (0..3).map(|_| sim.pkce_offline_tokens(&alice())).collect();
    assert_eq!(listed(&sim), 3);
    assert_eq!(
        sim.revoke(grants[0]["access_token"].as_str().unwrap())
            .status,
        200
    );
    assert_eq!(listed(&sim), 2, "a revoked grant's member goes with it");

    sim.advance(3_600);
    let unlinked_at = sim.now;
    let answer = sim.unlink(PKCE_APP, &alice(), Unlinker::User);
    assert_eq!(answer.outcome(), &Outcome::Unlinked);
    assert_eq!(listed(&sim), 0);
    let purge = Some(UnixTime(unlinked_at.0 + ACCESS_TTL));
    for grant in &grants[1..] {
        let refresh_key =
            RecordKey::of_refresh_token(&fixture_key(), grant["refresh_token"].as_str().unwrap())
                .unwrap();
        assert_eq!(
            sim.store.purge_after(&refresh_key),
            purge,
            "an unlinked grant's refresh token"
        );
    }
    let live: Vec<&RecordKey> = sim
        .store
        .iter()
        .map(|(key, _)| key)
        .filter(|key| sim.store.purge_after(key).is_none())
        .collect();
    assert!(
        live.is_empty(),
        "records without a purge time after the unlink: {live:?}"
    );

    // Refused as unlinked before and after the purge, at the boundary and past it.
    for at in [
        unlinked_at.0 + ACCESS_TTL - 1,
        unlinked_at.0 + ACCESS_TTL,
        unlinked_at.0 + ACCESS_TTL + 1,
    ] {
        for mut probe in with_and_without_purge(&sim, at) {
            for grant in &grants {
                let refused =
                    probe.refresh(grant["refresh_token"].as_str().unwrap(), PKCE_APP, None);
                assert_eq!(oauth_error(&refused), "invalid_grant", "at {at}");
            }
        }
    }
    // Everything the link ended goes, and the link with it: the store is empty.
    sim.now = UnixTime(unlinked_at.0 + 2 * ACCESS_TTL);
    sim.store.purge(sim.now);
    assert_eq!(sim.store.len(), 0);

    // Linked again afterwards: a new link at a new (random) epoch, with the new grant a member;
    // the grants of the old link stay refused, even those whose records outlived it.
    let again = sim.pkce_offline_tokens(&alice());
    assert_eq!(listed(&sim), 1);
    assert!(matches!(
        sim.api(GET_ACCOUNT, again["access_token"].as_str().unwrap()),
        Answer::Serve(_)
    ));
    for grant in &grants {
        let refused = sim.refresh(grant["refresh_token"].as_str().unwrap(), PKCE_APP, None);
        assert_eq!(oauth_error(&refused), "invalid_grant");
    }
}

/// Records that outlive their link (stored before the link listed its grants) stay dead when
/// the user links the app again: the new link's epoch is drawn at random, never the old one's.
#[test]
fn a_link_made_again_never_revives_what_an_earlier_one_issued() {
    let mut sim = sim();
    let tokens = sim.pkce_offline_tokens(&alice());
    let link_key = RecordKey::link(
        &fixture_key(),
        AppKey::new(PKCE_APP).unwrap(),
        alice().account_id,
    );
    // As if its link had been purged while the grant was not (a store that lost the link, or a
    // grant no list reached): the grant stands on nothing, and is refused.
    sim.store.remove(&link_key);
    let refresh = tokens["refresh_token"].as_str().unwrap();
    assert_eq!(
        oauth_error(&sim.refresh(refresh, PKCE_APP, None)),
        "invalid_grant"
    );
    // The limit of a lost record: the access token, vouched for by its account's ledger (which
    // nothing moved on), is checked without its link until it expires or until a new consent
    // makes a new link, which moves the ledger on.
    assert!(matches!(
        sim.api(GET_ACCOUNT, tokens["access_token"].as_str().unwrap()),
        Answer::Serve(_)
    ));
    let fresh = sim.pkce_offline_tokens(&alice());
    assert!(sim.store.record(&link_key).is_some());
    assert_eq!(
        oauth_error(&sim.refresh(refresh, PKCE_APP, None)),
        "invalid_grant"
    );
    assert!(matches!(
        sim.api(GET_ACCOUNT, tokens["access_token"].as_str().unwrap()),
        Answer::Reply(_)
    ));
    assert!(matches!(
        sim.api(GET_ACCOUNT, fresh["access_token"].as_str().unwrap()),
        Answer::Serve(_)
    ));
}

/// A long-lived token (legacy implicit) never expires: its grant is listed too, and an unlink
/// of a user with many grants ends them all in one transaction.
#[test]
fn an_unlink_purges_long_lived_tokens_and_many_grants_at_once() {
    let mut sim = sim();
    sim.now = UnixTime(1_600_000_000); // before the legacy cutoff: implicit tokens are long-lived
    let q = query(&[
        ("client_id", LEGACY_APP),
        ("response_type", "token"),
        ("redirect_uri", LEGACY_REDIRECT),
    ]);
    let Outcome::Redirect(location) = sim.consent(&q, &alice(), Decision::Allow).outcome().clone()
    else {
        panic!("no redirect")
    };
    let long_lived = fragment_param(&location, "access_token").unwrap();
    let long_lived_key = RecordKey::of_access_token(&fixture_key(), &long_lived).unwrap();
    assert_eq!(sim.store.purge_after(&long_lived_key), None);
    for _ in 0..150 {
        sim.pkce_offline_tokens(&alice());
    }
    let unlinked_at = sim.now;
    assert_eq!(
        sim.unlink(LEGACY_APP, &alice(), Unlinker::User).outcome(),
        &Outcome::Unlinked
    );
    assert_eq!(
        sim.store.purge_after(&long_lived_key),
        Some(UnixTime(unlinked_at.0 + ACCESS_TTL))
    );
    assert_eq!(http(sim.api(GET_ACCOUNT, &long_lived)).status, 401);
    let before = sim.store.len();
    assert_eq!(
        sim.unlink(PKCE_APP, &alice(), Unlinker::User).outcome(),
        &Outcome::Unlinked
    );
    assert_eq!(sim.store.len(), before, "an unlink deletes nothing itself");
    sim.now = UnixTime(unlinked_at.0 + 3 * ACCESS_TTL);
    sim.store.purge(sim.now);
    assert_eq!(sim.store.len(), 0, "both links went with what they ended");
}

/// Links stored before the list of grants existed (format 2) are read with an empty list; a
/// refresh token of format 2 reads as a person's. Unknown formats are refused.
#[test]
fn format_2_records_are_read_and_upgraded() {
    let mut sim = sim();
    let tokens = sim.pkce_offline_tokens(&alice());
    let link_key = RecordKey::link(
        &fixture_key(),
        AppKey::new(PKCE_APP).unwrap(),
        alice().account_id,
    );
    let Some(Record::Link(mut link)) = sim.store.record(&link_key) else {
        panic!("no link")
    };
    link.grants.clear();
    link.resources = Resources::default();
    (link.members, link.swept, link.sweep_to) = (0, 0, 0);
    link.redirect_uri = None;
    // Format 3 appended the list, 6 the resources, 7 the three member places, 10 the consented
    // redirect URI (each empty, 0 or none: one byte); format 2 is the rest.
    let mut bytes = Record::Link(link.clone()).encode();
    assert_eq!(bytes[0], RECORD_FORMAT);
    let tail = bytes.split_off(bytes.len() - 6);
    assert_eq!(tail, [0; 6]);
    bytes[0] = 2;
    assert_eq!(Record::decode(&bytes), Ok(Record::Link(link)));
    let refresh_key =
        RecordKey::of_refresh_token(&fixture_key(), tokens["refresh_token"].as_str().unwrap())
            .unwrap();
    let mut refresh = sim.store.get(&refresh_key).unwrap().bytes.clone();
    let current = Record::decode(&refresh).unwrap();
    refresh = before_format_11(&current);
    refresh[0] = 2;
    assert_eq!(Record::decode(&refresh), Ok(current));
    refresh[0] = 1;
    assert_eq!(Record::decode(&refresh), Err(BadRecord));
}

/// Grants and tokens stored before their subject was explicit (format 10: bytes that release
/// wrote, `tests/fixtures/records-format-10.txt`) are a person's, and keep working as theirs: the
/// access token authorizes an API call for that person (account and uid), the refresh token
/// refreshes, and revocation ends them, its event naming the person.
#[test]
fn format_10_grants_and_tokens_keep_working_as_a_persons() {
    let fixture = include_str!("../fixtures/records-format-10.txt");
    let mut sim = sim();
    let mut tokens = Value::Null;
    for line in fixture.lines().filter(|line| !line.starts_with('#')) {
        if let Some(json) = line.strip_prefix("TOKENS ") {
            tokens = serde_json::from_str(json).unwrap();
            continue;
        }
        let mut parts = line.strip_prefix("REC ").unwrap().split(' ');
        let (key, hex) = (parts.next().unwrap(), parts.next().unwrap());
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(bytes[0], 10, "{key}: a record of format 10");
        sim.store.put_bytes(key.parse().unwrap(), 1, bytes);
    }
    // The fixture drew its secrets from the sim's deterministic entropy: move past them, as a
    // deployment's random draws would never meet them again.
    for _ in 0..16 {
        sim.next_entropy();
    }
    let person =
        Subject::Account(AccountId::new("dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc").unwrap());
    let grants: Vec<GrantRecord> = sim
        .store
        .iter()
        .filter_map(|(_, stored)| match stored.record() {
            Ok(Record::Grant(grant)) => Some(grant),
            _ => None,
        })
        .collect();
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].subject, person);
    assert_eq!(grants[0].uid, Some(Uid::new("12345").unwrap()));

    let access = tokens["access_token"].as_str().unwrap();
    let Answer::Serve(Authorized { principal, .. }) = sim.api(GET_ACCOUNT, access) else {
        panic!("the format 10 access token no longer authorizes")
    };
    assert_eq!(principal.subject, person);
    assert_eq!(principal.uid, Some(Uid::new("12345").unwrap()));
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let refreshed = sim.refresh(refresh, PKCE_APP, None);
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    assert_eq!(sim.revoke(access).status, 200);
    let Some(AuditEvent::GrantRevoked { subject, .. }) = sim.audit.last() else {
        panic!("no revocation on record: {:?}", sim.audit)
    };
    assert_eq!(subject, &person);
    assert_eq!(sim.refresh(refresh, PKCE_APP, None).status, 400);
}
