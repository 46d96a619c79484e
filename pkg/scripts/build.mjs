// Builds the npm package's two WebAssembly modules from ../wasm — the server's (dist/edgegrant_wasm)
// and the PKCE client's (dist/edgegrant_client) — each: cargo (wasm32, size profile, one feature)
// → wasm-bindgen --target web → wasm-opt (npm's binaryen) → dist/. Prints each module's size, raw
// and gzipped, and fails when a gzipped module is over its budget (BUDGETS below).
// Installs what is missing (the wasm32 target, the matching wasm-bindgen CLI); idempotent.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const pkg = dirname(dirname(fileURLToPath(import.meta.url)));
const root = dirname(pkg);
const dist = join(pkg, "dist");
const run = (cmd, args, opts = {}) =>
  execFileSync(cmd, args, { cwd: root, stdio: "inherit", ...opts });
const output = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return "";
  }
};

// The CLI must be exactly the version of the wasm-bindgen crate.
const lock = readFileSync(join(root, "Cargo.lock"), "utf8");
const bindgen = lock.match(/name = "wasm-bindgen"\nversion = "([^"]+)"/)?.[1];
if (!bindgen) throw new Error("wasm-bindgen is not in Cargo.lock");

if (!output("rustup", ["target", "list", "--installed"]).includes("wasm32-unknown-unknown")) {
  run("rustup", ["target", "add", "wasm32-unknown-unknown"]);
}
if (!output("wasm-bindgen", ["--version"]).includes(bindgen)) {
  // A --locked install fails on these machines; an unlocked one works (DESIGN.md).
  run("cargo", ["install", "wasm-bindgen-cli", "--version", bindgen]);
}

/**
 * Gzipped-size budgets in bytes. The goal for the server module is 64 KiB; these budgets hold
 * the ground gained so far, so that a change that grows a module fails the build (see the
 * README's "Size" section for where the bytes go). Issue 15's hardening (CORS, the redirect URI
 * rules, storage failures as 503, 405s with Allow, attempt limits) took the server module from
 * 85.7 to about 95 KiB: the budget moved with it, on purpose. Issue 16's partitions (the
 * partition of every key and credential, the routing answer `partitionOf`, transactions in
 * turn, purge times through revocation) took it from 93.5 to 97.2 KiB: moved again, on purpose;
 * and the unlink's purge (the link's list of grants, ended and purged in the unlink's
 * transaction, and reading links of format 2) to 100.0 KiB: moved to 100.5, on purpose.
 * Issue 17's standards profile (the profile and issuer in the configuration, RFC 8414
 * metadata written without a JSON tree, RFC 9207 `iss`) took it to 102.3 KiB, and its RFC 7009
 * revocation and RFC 7662 introspection to 104.4 KiB, RFC 9728 resource metadata to 105.0 KiB,
 * and RFC 8707 resource indicators (resources on codes, grants and access tokens, checked at
 * authorize, exchange, refresh and the bearer check) to 108.2 KiB: 108.5, on purpose. The last
 * step costs more than its code suggests (3.2 KiB; a Vec<String> in the records had cost 4.9)
 * and was not profiled: the next size work starts there. Refresh-token rotation took it to
 * 110.7 KiB: 111.0, on purpose. Profiled (`twiggy diff` of the server build before and after,
 * names kept): +5.6 KB raw, of which the refresh decision +2.5 KB, reading and checking the
 * rotation policy +1.5 KB, the grant's new field and the seed's codec +1.0 KB, refusal texts
 * +0.7 KB — proportional to the feature, nothing accidental; a seed serialized as an array
 * instead of bytes had cost 0.7 KiB more. Resource identifiers compared in canonical form
 * (RFC 3986 §6.2.2-6.2.3, so that `https://api.example/` names `https://api.example`) took it
 * to 111.2 KiB: 111.5, on purpose (a first version formatting the port cost 0.4 KiB more, on
 * the client module too). Issue 25's first hardening steps (who may introspect what, with the
 * configuration's resource servers; the scheme in the consent form's origin check; attempters
 * as two structured lists, names with control characters refused; CORS for RFC 7009) took it
 * to 114.2 KiB (the attempters first crossed as JSON parsed into serde_json maps, which cost
 * 14 KiB more: two string lists cost almost nothing), and resources in consent (the link's
 * resources, record format 6, the consent page's list) with audited retries to 115.3 KiB:
 * 115.5, on purpose. A request's cost made independent of the grants its user holds (member
 * records, the unlink's paged sweep, record format 7), the bound on live grants per user and
 * app and the refresh tokens' idle lifetime took it to 118.7 KiB, and sign-in checks counted
 * before they run, per account name from each source, to 119.5 KiB, and the server key (HMAC
 * from RustCrypto's hmac on the linked sha2) to 120.6 KiB: 121.0, on purpose. Partitions keyed
 * and sealed in every credential (a masked route with its tag, opened before any read) took it
 * to 121.03 KiB: 121.5, on purpose (writing the sealed form into a stack buffer instead of
 * `format!` cost 50 bytes more). Issue 26's reshaping (the route table, client authentication
 * shared by the token family, the page headers taken from the core) moved it to 121.46 KiB
 * (raw 448 bytes smaller, gzipped 438 bytes larger), and the resource helper asking the core for
 * canonical identifiers and the RFC 9728 document (two bindings, the metadata URL of any
 * resource) to 122.36 KiB (a sort or a set of &str for the scope list cost 1.6 to 4 KiB more;
 * insertion into a vector the least), and one way in with owned steps, the published step
 * bound and the sign-in verdict to 123.0 KiB. Paid back in the same issue, profiled with
 * `twiggy diff` against the build of issue 25: one base64 decoder instead of two (Basic
 * credentials decoded by the URL-safe one, -0.75 KiB), no substring searcher (a scheme split
 * at its first `:` instead of at "://", -0.96 KiB), one `join` fewer (-0.15 KiB): 121.28
 * KiB, 0.25 above issue 25's figure. Passing iterators as `dyn` to fold monomorphized copies
 * cost 1 KiB more, not less. Budget 121.5. Issue 27 adds clients that arrive unannounced, and
 * each part says what it cost: standard clients getting what they ask for (RFC 6749 scope
 * names with the reference profile's dotted rule kept, offline_access, an app configured for
 * refresh tokens, S256 alone, prompt=consent, and the configuration's messages for each) took
 * it from 121.33 to 122.22 KiB (+2.7 KB raw). Apps as records — the profile's clients setting
 * read and written, the app record and its key (serde derives of App, AppRecord and the
 * registration's fields: 3.9 KB raw of the 17 named), every endpoint finding a stored app in
 * the batch of its first records — took it to 128.23 KiB (+6.0). RFC 7591 registration to
 * 133.02 (+4.8; reading its JSON body as bytes would have linked a second serde_json reader,
 * 5 KB more), and RFC 7592 management with renewal by use to 135.39 (+2.4). Issue 29 is to pay
 * these back (`twiggy diff` of the named builds, README's "Size"). A consent page a person can
 * judge (their name, each scope in plain words with defaults for SPEC.md's, where the answer
 * goes, the unverified mark) to 137.28 (+1.9; the descriptions as a BTreeMap of their own type
 * had cost 5 KB more than a list of pairs): 137.5, on purpose. The client module moved by 245
 * bytes raw (shared scope and JSON helpers) and across 75.0 KiB gzipped: 75.5. Client ID
 * Metadata Documents (the fetch step across the boundary, the document's checks — the metadata
 * reader now shared with registration —, its cache lifetime, the policy read, written and
 * checked, the URL form of an app key and its escape in storage keys) to 144.68 (+7.4; 25 KB
 * raw before wasm-opt, spread thin: no single item over 2.4 KB but the shared metadata reader
 * and the two endpoints that fetch). CORS for browser clients that arrive unannounced, the scope
 * in a 401's challenge (MCP) and documents fetched for a signed-in user only took it to 144.95
 * (+0.3): 145.5. private_key_jwt (RFC 7523: the assertion read and checked, JWK sets read
 * and kept, a used assertion's record, the verification step across the boundary, the metadata
 * and registration fields; the signature itself is WebCrypto's, which kept 27 KiB of crates out)
 * to 150.77 (+5.8; 17.8 KB raw, client_auth::authenticate with the assertion's JSON the largest
 * at 3.1): 151.0, on purpose, for issue 29 to pay back. Keys by `jwks_uri` (a second kind of
 * fetch, the key set kept in the app record with its lifetime, fetched again for an unknown
 * key) to 153.20 (+2.4; 5.8 KB raw after wasm-opt, `twiggy diff` of `wasm-opt -g` builds: the
 * JWK set reader and the cache lifetime no longer inlined into their one caller +1.5 KB, the
 * key set's record codec +1.0 KB, the fetch's second kind in the request +1.1 KB, the URL and
 * policy checks +0.6 KB; a `[char]` pattern splitting the URL had linked a searcher, 0.2 KB
 * more): 153.5, on purpose, for issue 29 to pay back. Issue 28: the configuration refuses a
 * setting it does not know, naming its path and the settings the object takes, where it ignored
 * it before (every object of the document: the lists of known names and the message) to 154.15
 * (+0.9): 154.5, on purpose, for issue 29 to pay back. Issue 29, first levers: the server key's
 * HMAC keyed once (hmac's block-level Hmac beside SimpleHmac) +0.2; the bearer check's records
 * read in place (a postcard reader, one layout interpreter for the three views, a record's
 * whole decode moved behind its first use, a storage fault found when a damaged field is read)
 * +2.8 KB gzipped, of which an id's rules no longer expanded at each of its three callers gave
 * back 0.35 — to 156.71 (`twiggy diff` of `wasm-opt -g` builds: the bearer decision with its
 * views +4.0 KB raw, the layout reader 0.8, the old-format upgrade 0.4): 157.0. Paid back in
 * part: `migrateApp` rewrites the document in JavaScript, so writing a configuration's JSON
 * (10.3 KB raw, twiggy's "migrateApp multivalue shim") left the module, -5.4: 151.31; the
 * authorization request's `state` no longer cloned as a Result (which linked Refusal's Clone,
 * 1.4 KB raw), -0.5: 150.80. Issue 29's part 2, the account's ledger (its record, the access
 * token's generation and uid, the ledger read and written by the token, authorization, unlink
 * and revocation paths, the bearer check's second way to decide), +2.6: 153.37 (`twiggy diff`
 * of `wasm-opt -g` builds: +7.3 KB raw, of which the endpoint decisions inlined into
 * `Request::decide` +3.5, the records' decode and encode +0.6, the ledger's two writers +0.7,
 * revocation and issuing +0.7). Budget 153.5, on purpose, for the bearer check it buys (in
 * Node 17 % faster on memory and 24 % on SQLite); the rest of issue 27's cost and this are
 * still to pay back. Issue 29's part 3, a step packed in the module's memory instead of a
 * getter per value, -0.3: 153.1; the configuration reader with its paths written out only for
 * an error and its error boxed (every `?` moves a pointer), -2.9: 150.2; the endpoints' `Need`
 * boxed likewise, -1.9: 148.3; the configuration's JSON errors written from serde_json's
 * category and position instead of its message (which linked its message table and
 * `std::io`'s error texts), -1.1: 147.2; no string slicing that can panic (its message wrote
 * the string with `Debug`, which linked `char`'s escaping and Unicode's printable tables), -3.6:
 * 143.6; the documents' cache lifetime bounded without `clamp` (its panic message linked
 * `u64`'s `Debug`) and a metadata client's default name copied rather than formatted, -0.4;
 * the registry's paths in panic locations named `crates`, -0.05: 143.2. The core and the
 * bindings without std (`alloc` only; the modules' own panic handler traps, so std's panic
 * hook, its payloads and message formatting are gone), and a JSON string copied between quotes
 * when it needs no escape, -1.55: 141.6 (the client's module -2.5: 75.1 to 72.6). Budgets
 * 141.7 and 72.65. Audit events written by the core's own JSON writer (`AuditEvent::to_json`,
 * one member list for it and `Serialize`) and the configuration check's answer by hand, so no
 * serializer of maps is linked, -1.1: 140.5. The module's `randomEntropy`, which the package
 * never called (it draws entropy in JavaScript), and with it getrandom, -0.5: 140.0. Budget
 * 140.1: what is paid back stays paid. wasm-opt no longer inlining a function of more than 20
 * bytes into its only caller, and at -Os instead of -Oz, -6.0: 134.0 (the client -2.7: 69.9).
 * Raw, the module grew by 9 KB; gzipped, it shrank: the endpoint decisions, the configuration
 * reader and the library code inlined into one caller had made functions of up to 37 KB,
 * and gzip compresses that code worse than the same code kept in functions of its own (the calls
 * cost a Node check about 3 %, measured by tests/bench/ab.mjs). Without the producers and
 * target-features sections, -0.2: 133.8. The server module compiled with WebAssembly's SIMD
 * (Node 20 and workerd have it; the PKCE client's module, for browsers, stays without), -0.7:
 * 133.2, its speed unchanged (Node A/B 0.93-1.05). Budgets 133.3 and 69.8. Record format 9,
 * a stored app's last use first in its record and read there by a view (a registered app's
 * bearer check 13 % fewer instructions), with the upgrade of an app's record laid out by
 * format 8 (`twiggy diff`: its decoder 0.4 KB raw, the bearer decision's app check 0.4), +0.47:
 * 133.64. Loading a record and writing a JSON list with only their type-dependent part
 * generic (eight copies of the one, nine of the other), -0.13: 133.51. Budget 133.6, on
 * purpose; still to pay back with the rest. A second server module, for configured apps only:
 * the core without its `unannounced` feature (the configuration reader refuses
 * `profile.clients` before reading it, `Config::unannounced` is always `None`, a stored app's
 * record has no codec there and a `Fetched` or `Verified` event is out of turn), so that the
 * compiler leaves out what issue 27 added for clients that arrive unannounced: 118.60 KiB,
 * below issue 27's starting point of 121.33 with everything that came after it (the ledger,
 * the record views, the consent page, the standard clients' rules). Of its 14.9 KiB, 11.8
 * went with `Config::unannounced` and the reader's refusal, 2.9 with the app record's codec
 * (serde's derive of the app, its registration, document and keys) and 0.2 with the two
 * events. Budget 118.7. Issue 47's third hardening round, +5.1 (138.6) and +3.1 (121.7), not
 * paid back yet (issue 5 of the roadmap, performance, takes it): `twiggy diff` of the whole
 * module before and after, raw and before wasm-opt, +18.6 KB, of which a failed fetch's backoff
 * and source count (`Request::fetched`, `fetch`, the guards) 3.5, the IPv6 /64 grouping of
 * sources 1.6 (written over bytes: `core::net`'s parser and formatting cost 4 KB more), the
 * defect refusal, its event on the reply and the exhaustive refusal map 2.5, the fixed
 * document descriptions and the new refusals' texts 2.0 (.rodata), the link's consented
 * redirect URI (record format 10) 0.1, the rest inlining moved between `Request::start` and
 * `finish` (+2.0). The module for configured apps carries what every deployment has: the
 * source grouping, the defect, the link's new field, the refusal map. The resource helper's
 * bearer parsing and challenges taken from the core (two exports, `bearerToken` and
 * `resourceChallenge`), +0.8 and +0.7: 139.4 and 122.4. Issue 47, item 14: a rotation's retry
 * that lost its write-back to another retry answers without a write, its `refresh_token_retried`
 * on the reply (every retry stays on record), +0.26 and +0.34: 139.75 and 122.75 (`twiggy diff`
 * before wasm-opt: +0.57 KB raw, the retry's ids carried in the token body to `render`; the
 * event itself boxed in the body cost three times that). Issue 47, D3 of the MCP list: a
 * refresh's `offline_access` held by any grant with a refresh token, and the answer naming the
 * scopes when they differ from those asked (RFC 6749 §5.1), +0.2 and +0.3: 140.0 and 123.02
 * (`twiggy diff`: +0.1 KB of logic; the rest is `token::decide` no longer inlined into
 * `Route::decide`). Budgets 140.1 and 123.1.
 *
 * Issue 48 (grants without a person) may add at most 6 KiB to the module for configured apps in
 * all: from 125968 bytes (123.02 KiB) at its start, so never above 129.0. Its steps: the grant
 * type table and the token endpoint split per grant type, +0.1 and +0.13 (143421 and 126105
 * bytes). The subject of grants and tokens (`Subject`, record format 11 with its upgrade, the
 * principal, introspection's `sub`, audit events), +1.05 and +1.07 (144489 and 127198 bytes:
 * `twiggy diff` before wasm-opt, +2.0 KB raw: the subject's serde code in three records'
 * codecs, an optional uid, the grant's link now optional at four call sites; the upgrade finds
 * the subject's place by string lengths, 0.3 KiB less than decoding the older layout).
 * Budgets 141.2 and 124.3; issue 48 so far +1.2 KiB of its 6. The client credentials grant
 * (its module, its configuration read, written and checked, the refusal, routing by the
 * client), +1.43 and +1.84 (146252 and 129079 bytes). Budgets 142.9 and 126.1; issue 48 so far
 * +3.04 KiB of its 6 — the next two grants must share the rest. The grant for clients that
 * arrive unannounced (registration of a machine, `GrantTypes` in a stored app, the grant's
 * `unannounced` setting, the allowed check after the client's record is read), +0.92 and +0.28
 * (147102 and 129363 bytes). Budgets 143.7 and 126.4; issue 48 so far +3.3 KiB of its 6. Token
 * exchange (its module, the config, record format 12, introspection's act, the holder's
 * revocation), +2.36 and +2.60 (149516 and 132028 bytes: `twiggy diff` of `wasm-opt -g`
 * builds, +7.1 KB raw, of which the grant's decision in `decide_grant` +2.2, the bearer check
 * shared as `api::authenticate` (no longer inlined into `Route::decide`) +1.3, `Request::start`
 * +1.3). Paid back in the module for configured apps, found by the same profile: it still
 * linked what only a client that arrives unannounced reaches — a stored app's check
 * (`client_auth::verify`'s record path, the used assertion's record), the signature and fetch
 * steps (`Request::fetch`, its guards) and a stored app's record read — because each was
 * reached through a value (`Client::stored`, a `Need`, a loaded key) the compiler cannot see is
 * never there; each now also asks `cfg!(feature = "unannounced")`, -2.98: 129050 bytes, 313
 * below the figure before token exchange. Budgets 146.1 and 126.1; issue 48 so far +3.0 KiB of
 * its 6 on the module for configured apps. Enterprise-managed authorization (ID-JAG: the
 * JWT-bearer grant's module, the identity assertion's claims, the providers' configuration read,
 * written and checked, two signatures per request, the metadata's profile), +4.04 on the whole
 * module (153704 bytes) and +0.65 on the module for configured apps (129720), which refuses the
 * setting and links none of the grant: what it carries is the refusals' texts (the refusal map
 * is exhaustive), the configuration's new field and the request's new variant (`twiggy diff`;
 * the accounts as a map had linked a BTreeMap's drop code there, 0.3 KiB; the assertion read
 * before the grant's setting was asked, 0.3). Budgets 150.2 and 126.7; issue 48 so far +3.66
 * KiB of its 6 on the module for configured apps. The token requests' `scope` read and narrowed
 * by one helper each instead of three and two copies, +0.1 (129829 bytes, +273 raw): kept for
 * the one rule it gives the three grants. Budget 126.8; issue 48 so far +3.77 KiB of its 6.
 * An identity provider's keys by `jwks_uri` (fetched through the fetch step, kept in a record of
 * its own, fetched again on a rotation; the refusal `provider_keys`): +0.87 on the whole module
 * (154668 bytes), +0.19 on the module for configured apps (130025), which fetches nothing: the
 * record key's text form, the refusal's name and text. Budgets 151.1 and 127.0; issue 48 so
 * far +3.96 KiB of its 6. A machine named by a metadata document given the client credentials
 * grant at its first token request (its document fetched there, the claims checked before, the
 * fetch counted against the source): +0.57 whole (155251), +0.05 configured (130078: the
 * request's writes before deciding again). Budgets 151.7 and 127.1; issue 48 so far +4.01 KiB.
 * DPoP (issue 49: the proof read and checked against its request, the nonce's MAC, the token
 * endpoint's proof checks and its jti record, every grant's binding, the API's DPoP scheme and
 * challenges, `dpop_jkt`, record format 13, the configuration), +5.78 on the whole module
 * (161178 bytes) and +1.98 on the module for configured apps (132096), which refuses the
 * setting. `twiggy diff` of the cargo builds before wasm-opt: +20.8 KB raw whole, of which the
 * proof reader 3.2, the endpoints' decisions 2.9, the configuration read 1.4, the JWK's public
 * key and thumbprint 1.4; a first cut split `htu` at "://" and with `split_at`, linking a
 * substring searcher and a slicing panic for 10.5 KB raw more. Configured, +9.5 KB raw: format
 * 13's field in three records' codecs and views, the refusals' texts (the map is exhaustive),
 * the proof's slot in the parsed requests with its drop code, the bearer scheme's reader, and
 * the resource metadata's writer no longer inlined. Budgets 157.6 and 129.1. DPoP at a resource
 * server elsewhere (`edgegrant/resource`: the token's scheme, the proof read and checked by the
 * core, the challenge for each of the proof's faults, the metadata's algorithms; exported by
 * both modules, whose glue is one — the one for configured apps answers every proof
 * `malformed` without reading it): +1.31 whole (162522 bytes) and +0.91 configured (133030).
 * Budgets 158.8 and 130.0: DPoP in all, +7.1 and +2.9 KiB. DPoP in the PKCE client's module
 * (the proof's header and claims written for the host to sign, the public JWK read and checked
 * with its thumbprint for `dpop_jkt`, the nonce retries at the token endpoint, the API and the
 * revocation, the session's binding and nonces): +7.8 KiB (70944 to 79080 bytes). `twiggy diff`
 * of the cargo builds: +23 KB raw after names, of which the transition 2.1, serde's readers of
 * the inputs that became struct variants (`call`, `unauthorized`: a tagged enum reads each
 * through a buffered map of its own) and of the states' new fields about 6, the JWK's key and
 * thumbprint with base64 decoding 2.3, the proof 0.9. A first cut kept the whole exchange
 * request in the state to send again (+2.5 KiB more: its headers read through the buffer); the
 * code and the verifier do, rebuilt. Budget 77.3. Then a review's fixes: a revocation answered
 * 401 counts as done only for `invalid_token` (a refused proof leaves the token alive), tokens
 * bound to a key the client was not given send it back to authorization, challenges read by
 * their `error` parameter: +0.6 (79706 bytes). Budget 77.9. A token presented under the `DPoP` scheme
 * refused on the `DPoP` challenge (RFC 9449 §7.1; the refusal's channel, the scheme's rewrite,
 * the resource helper's `challenges` argument read): +0.34 whole (162867 bytes), +0.31
 * configured (133321). Budgets 159.1 and 130.3. The reference revocation handing out the
 * nonce it asks for (`nonces: "everywhere"`): +0.03 and +0.05 (162896, 133372). Budget 159.2.
 * Issue 50: API endpoints as resources of their own (their URL known at authorization and
 * accepted at the bearer check, their RFC 9728 documents routed and written, each challenge
 * naming its endpoint's), and API bodies held to their own bound (the `{scope,
 * max_body_bytes}` form read and written, the 413, `bodyLimit`): +1.24 whole (164165 bytes),
 * +1.48 configured (134888); by function, most of it is Route::parse inlined into
 * Request::start (+1.1 KB raw) and the reader's new form (+0.5). Budgets 160.4 and 131.8.
 * Then refusals a host can log and start-up warnings: `namedClient` (the client a request
 * names, read by the route table and the credentials' reader) and `warnings` (an API scope no
 * app can hold): +1.34 whole (165534), +1.32 configured (136237), a third of it the exports'
 * glue. Budgets 161.7 and 133.1. Then grant props (issue 50, item 4): ChaCha20-Poly1305
 * (RustCrypto's chacha20poly1305: ChaCha20, Poly1305, the AEAD construction) sealing the host's
 * props into the code, the grant and each access token, opened for the principal; record format
 * 14's three fields; the props crossing in and out: +3.89 whole (169515 bytes), +3.67
 * configured (139998), most of it the cipher. The client's module +0.13 (79850: the user's
 * new field, which its shared types carry). Budgets 165.6, 136.8 and 78.0.
 * Issue 51: storage keys written piece by piece (no core::fmt for them), a refresh reading the
 * link's epoch in place, HTML escaped byte by byte: -0.09 whole (169422 bytes), -0.08
 * configured (139921). Budgets 165.5 and 136.7. Exports without multi-value results (see
 * withoutMultiValue: results through memory, for V8's compile time): -0.48 whole (168927),
 * -0.50 configured (139413), -0.03 the client's (79817). Budgets 165.0 and 136.2.
 */
const BUDGETS = { edgegrant_wasm: 165.0 * 1024, edgegrant_configured_apps: 136.2 * 1024, edgegrant_client: 78.0 * 1024 };

// The server's module may use WebAssembly's 128-bit SIMD (LLVM moves memory 16 bytes at a time
// with it: 0.7 KiB smaller gzipped): every runtime it serves has it (the package needs Node 20;
// workerd). The PKCE client's runs in browsers, some of which have not. The server's module comes
// twice: whole, and for configured apps only — the core without its `unannounced` feature (no
// RFC 7591 registration, metadata documents, client assertions or stored apps; a configuration
// naming `profile.clients` is refused), 15 KiB smaller gzipped, loaded by the entry points named
// `configured-apps`. Both have the same bindings: the whole module's glue serves both (checked
// below), so the entry points differ only in the module they instantiate.
const modules = [
  { features: "server,unannounced", name: "edgegrant_wasm", rustflags: ["-Ctarget-feature=+simd128"] },
  { features: "server", name: "edgegrant_configured_apps", rustflags: ["-Ctarget-feature=+simd128"], glueOf: "edgegrant_wasm" },
  { features: "client", name: "edgegrant_client", rustflags: [] },
];
// Panic locations name their source files: the crates' copies under cargo's home would put
// this machine's paths into the published modules (and make their bytes depend on where cargo
// keeps its registry), so its sources are named `crates` instead. With --target these flags
// reach the wasm artifacts only, not build scripts or proc macros; they replace RUSTFLAGS.
const registrySources = join(process.env.CARGO_HOME ?? join(homedir(), ".cargo"), "registry", "src");
const wasmRustflags = [process.env.CARGO_ENCODED_RUSTFLAGS, `--remap-path-prefix=${registrySources}=crates`]
  .filter(Boolean)
  .join("\x1f");
const wasmOpt = join(pkg, "node_modules/.bin/wasm-opt");
if (!existsSync(wasmOpt)) throw new Error("wasm-opt missing: run npm install in pkg/ first");
mkdirSync(dist, { recursive: true });
const kib = (n) => (n / 1024).toFixed(1);

/**
 * The bindings' declarations, made to type-check in any project under `skipLibCheck: false`:
 * - their classes declare `[Symbol.dispose]`, which TypeScript knows from the esnext.disposable
 *   library (or @types/node): named, for a project without either (a Worker's, a browser's);
 * - their loader names the DOM's `RequestInfo`, `BufferSource` and `WebAssembly` types, which a
 *   Node project (`lib: ["es2022"]`, @types/node, no DOM) lacks: stand-ins are declared in the
 *   file instead, the loader's inputs as wide as anything it takes (a DOM project's values are
 *   assignable to them) and its outputs as the members it has.
 */
function standalone(declarations) {
  const standIns = [
    "/** Stand-ins for the DOM's types the loader below names, so that these declarations need no DOM library. */",
    "type WasmModuleInput = object;",
    "type WasmBytes = ArrayBuffer | ArrayBufferView;",
    "type WasmSource = string | URL | { readonly url: string };",
    "interface WasmMemory { readonly buffer: ArrayBuffer; grow(delta: number): number }",
    "interface WasmTable { readonly length: number }",
    "",
  ].join("\n");
  const body = declarations
    .replaceAll("RequestInfo | URL | Response | BufferSource | WebAssembly.Module", "WasmSource | WasmBytes | WasmModuleInput")
    .replaceAll("BufferSource | WebAssembly.Module", "WasmBytes | WasmModuleInput")
    .replaceAll("WebAssembly.Memory", "WasmMemory")
    .replaceAll("WebAssembly.Table", "WasmTable")
    .replaceAll("WebAssembly.Module", "WasmModuleInput");
  for (const name of ["RequestInfo", "BufferSource", "WebAssembly"]) {
    if (new RegExp(`\\b${name}\\b`).test(body.replace(/\/\*[\s\S]*?\*\//g, ""))) throw new Error(`the bindings' declarations name ${name} where no stand-in replaces it: add one in standalone()`);
  }
  return `/// <reference lib="esnext.disposable" />\n${standIns}${body}`;
}
/**
 * The cargo build's module at `wasm`, copied with its `target_features` section listing what
 * it uses but multi-value (into a directory of its own; returns the copy's path). wasm-bindgen
 * hands an export's results back as WebAssembly values when that section lists multi-value
 * (Rust's wasm32 default since 1.82), and V8 (Node 20, workerd) compiles a JS-to-wasm wrapper
 * of its own, with its optimizing compiler, for each signature with more than one result when
 * it compiles the module: the server's module has 16 such signatures, which took 6 of the 9 ms
 * `WebAssembly.compile` did (a second module with the same signatures, in the same process,
 * compiled in 3). Without it wasm-bindgen returns results through memory, as it did before,
 * and every export takes V8's generic wrapper. The code itself uses no multi-value: wasm-opt
 * validates it without. Two passes: the first drops the section (which wasm-opt would
 * otherwise merge into the features it is given), the second writes it anew.
 */
function withoutMultiValue(wasm, rustflags) {
  const features = ["--mvp-features", "--enable-mutable-globals", "--enable-nontrapping-float-to-int", "--enable-bulk-memory", "--enable-sign-ext", "--enable-reference-types"];
  if (rustflags.includes("-Ctarget-feature=+simd128")) features.push("--enable-simd");
  const copy = join(mkdtempSync(join(tmpdir(), "edgegrant-features-")), "edgegrant_wasm.wasm");
  run(wasmOpt, [...features, "--strip-target-features", wasm, "-o", copy]);
  run(wasmOpt, [...features, "--emit-target-features", copy, "-o", copy]);
  return copy;
}

const over = [];
for (const { features, name, rustflags, glueOf } of modules) {
  const flags = [wasmRustflags, ...rustflags].join("\x1f");
  run("cargo", ["build", "-p", "edgegrant-wasm", "--target", "wasm32-unknown-unknown", "--profile", "wasm", "--no-default-features", "--features", features], { env: { ...process.env, CARGO_ENCODED_RUSTFLAGS: flags } });
  // A module that shares another's glue keeps only its .wasm; its glue must be that one's.
  const out = glueOf ? mkdtempSync(join(tmpdir(), "edgegrant-glue-")) : dist;
  const built = withoutMultiValue(join(root, "target/wasm32-unknown-unknown/wasm/edgegrant_wasm.wasm"), rustflags);
  run("wasm-bindgen", [
    "--target", "web",
    "--out-dir", out,
    "--out-name", glueOf ?? name,
    built,
  ]);
  rmSync(dirname(built), { recursive: true });
  if (glueOf) {
    for (const file of [`${glueOf}.js`, `${glueOf}.d.ts`, `${glueOf}_bg.wasm.d.ts`]) {
      const generated = readFileSync(join(out, file), "utf8");
      if ((file === `${glueOf}.d.ts` ? standalone(generated) : generated) !== readFileSync(join(dist, file), "utf8")) {
        throw new Error(`${name}: its bindings (${file}) differ from ${glueOf}'s, whose glue it is loaded with`);
      }
    }
    copyFileSync(join(out, `${glueOf}_bg.wasm`), join(dist, `${name}_bg.wasm`));
    rmSync(out, { recursive: true });
  } else {
    const declarations = join(dist, `${name}.d.ts`);
    writeFileSync(declarations, standalone(readFileSync(declarations, "utf8")));
  }
  const wasm = join(dist, `${name}_bg.wasm`);
  // Twice: the second pass still finds code to fold (half a KiB gzipped on the server). A
  // function of more than 20 bytes is not inlined into its only caller: the giant functions
  // that inlining made compressed worse (6 KiB gzipped on the server; the same from 5 to 30
  // bytes, 0.6 KiB worse at 40); beside it -Os is as small as -Oz and a few per cent faster.
  // The producers and target-features sections (the compiler's name and version, the features
  // it used) serve no runtime: 0.2 KiB.
  run(wasmOpt, ["-Os", "-Os", "--one-caller-inline-max-function-size=20", "--strip-producers", "--strip-target-features", "--enable-bulk-memory", "--enable-nontrapping-float-to-int", "--enable-sign-ext", "--enable-mutable-globals", "--enable-reference-types", wasm, "-o", wasm]);
  const raw = statSync(wasm).size;
  const gzipped = gzipSync(readFileSync(wasm), { level: 9 }).length;
  const budget = BUDGETS[name];
  console.log(`wasm size ${name}: ${raw} bytes raw (${kib(raw)} KiB), ${gzipped} bytes gzipped (${kib(gzipped)} KiB), budget ${kib(budget)} KiB gzipped`);
  if (gzipped > budget) over.push(`${name}: ${kib(gzipped)} KiB gzipped is over its budget of ${kib(budget)} KiB`);
}
// The configuration's TypeScript and the names the core answers with, generated from its Rust
// types (core/examples/typescript.rs), so the package's types cannot fall behind the core.
writeFileSync(join(dist, "edgegrant_types.d.ts"), execFileSync("cargo", ["run", "-q", "-p", "edgegrant", "--example", "typescript"], { cwd: root, encoding: "utf8" }));

if (over.length) {
  console.error(`wasm size budget exceeded:\n  ${over.join("\n  ")}`);
  process.exit(1);
}
