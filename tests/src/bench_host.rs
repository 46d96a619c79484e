//! The bench host: the least a real host does around a request — an in-memory store, fresh
//! entropy, the host loop of one [`Request`] — shared by the native benchmarks
//! (`benches/core.rs`) and the profiling loop (`examples/profile_loop.rs`), so that both time
//! and profile the same thing.
use std::sync::Arc;

use edgegrant::{
    Config, DocumentPolicy, Entropy, Event, Fetched, HttpRequest, Input, Issuer, Outcome, Profile,
    RecordKey, RegistrationPolicy, Request, ScopeSet, Standards, Step, UnannouncedClients, User,
    ENTROPY_LEN,
};

use crate::{
    alice, consent_form, fixture_config, fixture_document, form_request, pkce_exchange,
    pkce_offline_query, user, Decision, Store, CHALLENGE, PKCE_APP, PKCE_REDIRECT, T0, VERIFIER,
};

/// How many writing operations run between two restorations of the bench store.
pub const RESTORE_EVERY: u64 = 1_000;

/// A host with its store: the least a real one does around a request.
pub struct Host {
    config: Arc<Config>,
    /// What the host stores.
    pub store: Store,
    counter: u64,
}

impl Host {
    /// A host of `config` with an empty store.
    pub fn new(config: &Arc<Config>) -> Self {
        Host {
            config: Arc::clone(config),
            store: Store::default(),
            counter: 0,
        }
    }

    /// Fresh entropy without hashing (a counter in every 8th byte), so that the harness does
    /// not bill its own work to the core.
    pub fn entropy(&mut self) -> Entropy {
        self.counter += 1;
        let mut bytes = [0u8; ENTROPY_LEN];
        for chunk in bytes.chunks_mut(8) {
            chunk.copy_from_slice(&self.counter.to_le_bytes());
        }
        Entropy::new(bytes)
    }

    /// Runs `input` through the host loop until the core answers, with that answer.
    pub fn serve(&mut self, input: Input) -> Step {
        self.serve_seeing(input, |_| {})
    }

    /// [`Host::serve`], showing `seen` the keys of every read the core asks for.
    pub fn serve_seeing(&mut self, input: Input, mut seen: impl FnMut(&[RecordKey])) -> Step {
        let entropy = self.entropy();
        let (mut request, mut step) = Request::start(Arc::clone(&self.config), input, T0, entropy);
        loop {
            let event = match step {
                Step::Read(keys) => {
                    seen(&keys);
                    self.store.read(keys)
                }
                Step::Write(transaction) => match self.store.apply(&transaction) {
                    Ok(()) => Event::Committed,
                    Err(_) => Event::Conflicted,
                },
                Step::Fetch(ref fetch) => self.store.fetch(fetch),
                Step::Verify(ref verify) => Event::Verified(crate::verify_signature(verify)),
                Step::Respond(_) | Step::Serve(_) => return step,
            };
            step = request
                .advance(event)
                .expect("the host answers the step it was given");
        }
    }

    /// Runs `input` and checks that it ends in a 200 reply of this kind.
    pub fn expect(&mut self, input: Input, outcome: &Outcome) -> Step {
        let step = self.serve(input);
        match &step {
            Step::Respond(reply) if reply.response.status == 200 && reply.outcome == *outcome => {}
            other => panic!("expected a 200 {outcome:?}, got {other:?}"),
        }
        step
    }

    /// Authorize, consent, exchange: the code flow with PKCE and offline access, for a user who
    /// has not consented yet. Returns the finished token request (its reply holds the tokens).
    pub fn code_exchange(&mut self, query: &str, user: User) -> Step {
        let code = self.consented_code(query, user);
        self.exchange(&code)
    }

    /// The token request that redeems `code` with the PKCE verifier.
    pub fn exchange(&mut self, code: &str) -> Step {
        self.redeem(exchange_request(code))
    }

    /// Runs a token request that redeems a code (never inlined: profiles can tell it apart).
    #[inline(never)]
    pub fn redeem(&mut self, request: HttpRequest) -> Step {
        self.expect(
            Input::Http {
                request,
                user: None,
            },
            &Outcome::Tokens,
        )
    }

    /// Authorize and consent: the code a consent yields — or, for a user who consented
    /// before, the code automatic re-authorization yields at once.
    pub fn consented_code(&mut self, query: &str, user: User) -> String {
        let authorize = edgegrant::HttpRequest::new("GET", "/oauth2/authorize", query);
        let page = self.serve(Input::Http {
            request: authorize,
            user: Some(user.clone()),
        });
        let Step::Respond(reply) = page else {
            panic!("no reply")
        };
        match &reply.outcome {
            Outcome::Consent(_) => {}
            Outcome::Redirect(location) => {
                return crate::redirect_param(location, "code").expect("a code")
            }
            _ => panic!("no consent prompt: {reply:?}"),
        }
        let consent = self.serve(Input::Http {
            request: consent_form(query, Decision::Allow),
            user: Some(user),
        });
        let Step::Respond(reply) = consent else {
            panic!("no reply")
        };
        let Outcome::Redirect(location) = &reply.outcome else {
            panic!("no redirect: {reply:?}")
        };
        crate::redirect_param(location, "code").expect("a code")
    }
}

/// The token request redeeming `code` with the PKCE verifier, as a host receives it.
pub fn exchange_request(code: &str) -> HttpRequest {
    form_request(&pkce_exchange(code, VERIFIER))
}

/// A field of the JSON token response a finished token request holds.
pub fn field(answer: &Step, name: &str) -> String {
    let Step::Respond(reply) = answer else {
        panic!("no reply")
    };
    let value: serde_json::Value = serde_json::from_str(&reply.response.body).expect("JSON");
    value[name].as_str().expect("a string field").to_owned()
}

/// The bench host's world: alice's tokens among about 10 000 real records of other users (five
/// per first-time code exchange: consent link, code, grant, access and refresh token), with
/// room reserved for what a batch of [`RESTORE_EVERY`] writing operations adds.
pub struct Populated {
    /// The host, its store populated.
    pub host: Host,
    /// alice's access token.
    pub access: String,
    /// alice's refresh token.
    pub refresh: String,
    /// The authorization query of the flows (PKCE, offline access).
    pub query: String,
}

impl Populated {
    /// Builds it (a second or so in a release build).
    pub fn new() -> Populated {
        let config = Arc::new(fixture_config());
        let query = pkce_offline_query("bench");
        let mut host = Host::new(&config);
        let tokens = host.code_exchange(&query, alice());
        let access = field(&tokens, "access_token");
        let refresh = field(&tokens, "refresh_token");
        let mut others = 0u32;
        while host.store.len() < 10_000 {
            others += 1;
            let other = user(
                &format!("dbid:AABenchOther{others:024}"),
                &others.to_string(),
            );
            host.code_exchange(&query, other);
        }
        host.store.reserve(RESTORE_EVERY as usize * 8);
        Populated {
            host,
            access,
            refresh,
            query,
        }
    }

    /// The configuration the host runs.
    pub fn config(&self) -> Arc<Config> {
        Arc::clone(&self.host.config)
    }
}

impl Default for Populated {
    fn default() -> Self {
        Populated::new()
    }
}

/// A client metadata document's URL, for the document client of [`AppKinds`].
pub const DOCUMENT: &str = "https://app.example/oauth/client.json";
/// The registered and document clients' redirect URI.
pub const CALLBACK: &str = "http://127.0.0.1:33418/callback";

/// One kind of app of [`AppKinds`]: its name in the benchmarks, its `client_id` and redirect URI.
pub struct AppKind {
    /// `configured`, `registered` or `document`.
    pub name: &'static str,
    /// Its `client_id`.
    pub client: String,
    /// Its redirect URI.
    pub redirect: &'static str,
}

impl AppKind {
    /// The authorization query of its flows (PKCE, offline access).
    pub fn query(&self) -> String {
        crate::query(&[
            ("client_id", &self.client),
            ("response_type", "code"),
            ("redirect_uri", self.redirect),
            ("scope", "account_info.read"),
            ("token_access_type", "offline"),
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
        ])
    }

    /// The token request redeeming `code`.
    pub fn exchange(&self, code: &str) -> HttpRequest {
        form_request(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", &self.client),
            ("redirect_uri", self.redirect),
            ("code_verifier", VERIFIER),
        ])
    }

    /// The refresh of `token` (a public client: no secret).
    pub fn refresh(&self, token: &str) -> HttpRequest {
        form_request(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", token),
            ("client_id", &self.client),
        ])
    }
}

/// The three kinds of app a standards-profile server knows (issue 27) in one host: configured,
/// registered by itself (RFC 7591), named by a metadata document (fetched once from the
/// host's web and kept) — each a public client, so every refresh rotates. A stored app's
/// record is read in the same batch as a request's first records.
pub struct AppKinds {
    /// The host, its store holding the flows of other users of the three kinds in turn.
    pub host: Host,
    /// Configured, registered, document.
    pub kinds: [AppKind; 3],
}

impl AppKinds {
    /// Builds it, the store filled to about `records` records.
    pub fn new(records: usize) -> AppKinds {
        let mut document = fixture_document();
        let mut clients =
            UnannouncedClients::new(ScopeSet::parse("account_info.read").expect("scope"));
        clients.registration = Some(RegistrationPolicy::default());
        clients.documents = Some(DocumentPolicy::default());
        document.profile = Profile::Standards(Standards {
            clients: Some(clients),
            ..Standards::new(Issuer::new("https://auth.example").expect("issuer"))
        });
        let config = Arc::new(Config::new(document).expect("configuration"));
        let mut host = Host::new(&config);

        // A client registers itself; another publishes its document (the host's web serves it).
        let mut register = HttpRequest::new("POST", "/oauth2/register", "");
        register
            .headers
            .push(("Content-Type".into(), "application/json".into()));
        let metadata = serde_json::json!({
            "client_name": "Bench",
            "redirect_uris": [CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none",
        });
        register.body = metadata.to_string().into_bytes();
        let registered = field(
            &host.serve(Input::Http {
                request: register,
                user: None,
            }),
            "client_id",
        );
        let mut published = metadata.clone();
        published["client_id"] = DOCUMENT.into();
        host.store.web.insert(
            DOCUMENT.into(),
            Ok(Fetched {
                status: 200,
                cache_control: Some("max-age=86400".into()),
                body: published.to_string().into_bytes(),
            }),
        );
        let kind = |name, client: &str, redirect| AppKind {
            name,
            client: client.to_owned(),
            redirect,
        };
        let kinds = [
            kind("configured", PKCE_APP, PKCE_REDIRECT),
            kind("registered", &registered, CALLBACK),
            kind("document", DOCUMENT, CALLBACK),
        ];
        // Other users' flows fill the store, the three kinds in turn.
        let mut others = 0u32;
        while host.store.len() < records {
            others += 1;
            let kind = &kinds[others as usize % kinds.len()];
            let other = user(
                &format!("dbid:AABenchKind{others:025}"),
                &others.to_string(),
            );
            let code = host.consented_code(&kind.query(), other);
            host.redeem(kind.exchange(&code));
        }
        host.store.reserve(RESTORE_EVERY as usize * 8);
        AppKinds { host, kinds }
    }

    /// alice's access and refresh tokens from a flow of `kind`.
    pub fn tokens(&mut self, kind: usize) -> (String, String) {
        let kind = &self.kinds[kind];
        let code = self.host.consented_code(&kind.query(), alice());
        let tokens = self.host.redeem(kind.exchange(&code));
        (
            field(&tokens, "access_token"),
            field(&tokens, "refresh_token"),
        )
    }
}
