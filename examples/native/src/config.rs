//! The host's configuration file, in the format of the Node host (examples/node/README.md), and
//! the users and core configuration that test mode swaps in.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use edgegrant::{AccountId, Config, ConfigDocument, PageTemplates, Uid, User};
use serde_json::{Map, Value};

/// The page templates of the flow, shared by the three hosts (the JS hosts import the same file).
const PAGES_JSON: &str = include_str!("../../host/pages.json");

/// Where the host listens when the file says nothing.
const DEFAULT_HOST: &str = "127.0.0.1";
const DEFAULT_PORT: u16 = 8787;

/// One user who can sign in.
#[derive(Clone, Debug)]
pub struct Account {
    /// The sign-in name.
    pub username: String,
    /// `scrypt$<salt hex>$<hash hex>`, or anything else for a user who cannot sign in.
    pub password_scrypt: String,
    /// The user as the core knows them.
    pub user: User,
    /// The display name, if any.
    pub name: Option<String>,
    /// The e-mail address, if any.
    pub email: Option<String>,
    /// The country code, if any.
    pub country: Option<String>,
}

/// The users, indexed both ways.
#[derive(Debug, Default)]
pub struct Accounts {
    by_name: HashMap<String, Arc<Account>>,
    by_account_id: HashMap<String, Arc<Account>>,
}

impl Accounts {
    /// Indexes `accounts`; of two with one name or account id the later wins, as in the JS hosts.
    pub fn new(accounts: Vec<Account>) -> Accounts {
        let mut index = Accounts::default();
        for account in accounts.into_iter().map(Arc::new) {
            index
                .by_name
                .insert(account.username.clone(), account.clone());
            index
                .by_account_id
                .insert(account.user.account_id.as_str().to_owned(), account);
        }
        index
    }

    /// The user who signs in as `username`.
    pub fn named(&self, username: &str) -> Option<&Arc<Account>> {
        self.by_name.get(username)
    }

    /// The user with this account id.
    pub fn with_account_id(&self, account_id: &str) -> Option<&Arc<Account>> {
        self.by_account_id.get(account_id)
    }
}

/// The checked configuration file.
#[derive(Debug)]
pub struct HostConfig {
    /// The address to listen on (`listen.host`).
    pub host: String,
    /// The port to listen on (`listen.port`).
    pub port: u16,
    /// The SQLite file, resolved against the configuration file's folder.
    pub database: PathBuf,
    /// Signs the session cookies.
    pub session_secret: String,
    /// Who can sign in.
    pub accounts: Vec<Account>,
    /// The core's configuration, with the shared page templates.
    pub core: Config,
}

/// The sample configurations' `session_secret`s (the Node host's, the Worker host's): public, so
/// they sign nobody in outside the demo.
pub const SAMPLE_SESSION_SECRETS: [&str; 2] = [
    "change-me-to-32-or-more-random-characters",
    "change-me-worker-session-secret-32-or-more-characters",
];

/// The sample configurations' `server_key`s (the Node host's, the Worker host's, the MCP
/// example's): public, so anyone could open their credentials' routes and tell whose they are.
pub const SAMPLE_SERVER_KEYS: [&str; 3] = [
    "bm9kZS1zYW1wbGUtc2VydmVyLWtleS1jaGFuZ2UtbWU",
    "d29ya2VyLXNhbXBsZS1zZXJ2ZXIta2V5LWNoYW5nZSE",
    "bWNwLWV4YW1wbGUtc2VydmVyLWtleS1jaGFuZ2UtbWU",
];

/// Reads and checks the configuration file at `path`; the error says what is wrong. The
/// sample's placeholder `session_secret` and `server_key` are refused unless
/// `allow_sample_secret` (the demo's EDGEGRANT_ALLOW_SAMPLE_SECRET=1): anyone could forge its
/// session cookies, and tell whose its credentials are.
pub fn load(path: &Path, allow_sample_secret: bool) -> Result<HostConfig, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read configuration {}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| format!("cannot read configuration {}: {e}", path.display()))?;
    let config =
        parse(&doc, path).map_err(|e| format!("invalid configuration {}: {e}", path.display()))?;
    let sample_key = config.core.server_key().to_base64();
    for (field, sample) in [
        (
            "session_secret",
            SAMPLE_SESSION_SECRETS.contains(&config.session_secret.as_str()),
        ),
        (
            "server_key",
            SAMPLE_SERVER_KEYS.contains(&sample_key.as_str()),
        ),
    ] {
        if sample && !allow_sample_secret {
            return Err(format!(
                "invalid configuration {}: {field} is the sample configuration's placeholder, which anyone can read: set your own, e.g. node -e \"console.log(require('node:crypto').randomBytes(32).toString('base64url'))\" (the local demo runs with it under EDGEGRANT_ALLOW_SAMPLE_SECRET=1)",
                path.display()
            ));
        }
    }
    Ok(config)
}

fn parse(doc: &Value, path: &Path) -> Result<HostConfig, String> {
    let doc = doc.as_object().ok_or("not a JSON object")?;
    let accounts = accounts(doc.get("users"))?;
    let session_secret = match doc.get("session_secret") {
        // Counted in characters, like the JS hosts' check.
        Some(Value::String(secret)) if secret.chars().count() >= 32 => secret.clone(),
        _ => return Err("session_secret must be at least 32 characters".into()),
    };
    let listen = match doc.get("listen") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(listen)) => listen.clone(),
        Some(_) => return Err("listen must be an object {host, port}".into()),
    };
    let host = match listen.get("host") {
        None | Some(Value::Null) => DEFAULT_HOST.to_owned(),
        Some(Value::String(host)) => host.clone(),
        Some(_) => return Err("listen.host must be a string".into()),
    };
    let port = match listen.get("port") {
        None | Some(Value::Null) => DEFAULT_PORT,
        Some(port) => port
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .ok_or("listen.port must be a port number")?,
    };
    let database = match doc.get("database") {
        None | Some(Value::Null) => "edgegrant.sqlite",
        Some(Value::String(file)) => file.as_str(),
        Some(_) => return Err("database must be a file name".into()),
    };
    let folder = path.parent().unwrap_or(Path::new("."));
    let core = core_config(doc)?;
    // Valid, but most likely a mistake (an API scope no app can hold): said once, at start-up.
    for warning in core.warnings() {
        eprintln!("edgegrant: {warning}");
    }
    Ok(HostConfig {
        host,
        port,
        database: folder.join(database),
        session_secret,
        accounts,
        core,
    })
}

/// The users of the file: `username`, `password_scrypt`, `account_id`, `uid` (a string or a
/// number), and optionally `name`, `email`, `country`.
///
/// `POST /2/users/get_current_account` answers with these fields (http.rs `account_json`), and
/// the official SDKs check every account they get against their FullAccount type (the Python
/// SDK's stone-generated dropbox/users.py and dropbox/common.py). So a user whose fields cannot
/// make a valid account is refused here, at start, with the rules of app.mjs `parseConfig`:
/// `account_id` exactly 40 visible ASCII characters (AccountId); `uid`, which is root_info's
/// namespace ids, 1–128 of `A–Z a–z 0–9 - _ :` (NamespaceId); `country` two upper-case letters;
/// `name` and `email` strings.
pub fn accounts(users: Option<&Value>) -> Result<Vec<Account>, String> {
    let users = match users {
        Some(Value::Array(users)) if !users.is_empty() => users,
        _ => return Err("users must be a non-empty list".into()),
    };
    let text = |user: &Map<String, Value>, field: &str| match user.get(field) {
        Some(Value::String(value)) => Some(value.clone()),
        _ => None,
    };
    // An optional string: absent or null is None, anything but a string is refused.
    let optional = |user: &Map<String, Value>, username: &str, field: &str| match user.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value.clone())),
        Some(_) => Err(format!("user {username}: {field} must be a string")),
    };
    users
        .iter()
        .map(|user| {
            let user = user.as_object().ok_or("every user must be an object")?;
            let (Some(username), Some(password_scrypt), Some(account_id)) = (
                text(user, "username"),
                text(user, "password_scrypt"),
                text(user, "account_id"),
            ) else {
                return Err("every user needs username, password_scrypt and account_id".into());
            };
            if account_id.len() != 40 || !account_id.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(format!(
                    "user {username}: account_id must be 40 visible ASCII characters, like \
                     dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc (the Dropbox SDKs' AccountId type)"
                ));
            }
            // A whole number as JavaScript holds one exactly, like app.mjs.
            const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;
            let uid = match user.get("uid") {
                Some(Value::String(uid)) => Some(uid.clone()),
                Some(Value::Number(uid)) => uid
                    .as_u64()
                    .filter(|n| *n <= MAX_SAFE_INTEGER)
                    .map(|n| n.to_string()),
                _ => None,
            };
            let uid = uid
                .filter(|uid| {
                    (1..=128).contains(&uid.len())
                        && uid
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-_:".contains(&b))
                })
                .ok_or_else(|| {
                    format!(
                        "user {username}: uid must be a whole number or 1-128 letters, digits, \
                         - _ : (it is the account's namespace id, the Dropbox SDKs' NamespaceId type)"
                    )
                })?;
            let country = optional(user, &username, "country")?;
            if country
                .as_deref()
                .is_some_and(|c| c.len() != 2 || !c.bytes().all(|b| b.is_ascii_uppercase()))
            {
                return Err(format!(
                    "user {username}: country must be a two-letter country code such as US"
                ));
            }
            let name = optional(user, &username, "name")?;
            Ok(Account {
                user: User {
                    account_id: AccountId::new(account_id)
                        .map_err(|e| format!("user {username}: {e}"))?,
                    uid: Uid::new(uid).map_err(|e| format!("user {username}: {e}"))?,
                    // The consent page names the person: their name, else their user name.
                    name: Some(name.clone().unwrap_or_else(|| username.clone())),
                    // The native host keeps nothing of its own with a grant.
                    props: None,
                },
                name,
                email: optional(user, &username, "email")?,
                country,
                username,
                password_scrypt,
            })
        })
        .collect()
}

/// The core's configuration from a document's `apps` (absent: none), `policy`,
/// `api_endpoints`, `profile` and `server_key`, with the shared page templates; other fields
/// are the host's.
pub fn core_config(doc: &Map<String, Value>) -> Result<Config, String> {
    let mut core = Map::new();
    core.insert(
        "apps".into(),
        doc.get("apps").cloned().unwrap_or(Value::Array(Vec::new())),
    );
    for field in [
        "policy",
        "api_endpoints",
        "profile",
        "server_key",
        "scope_descriptions",
    ] {
        if let Some(value) = doc.get(field) {
            core.insert(field.into(), value.clone());
        }
    }
    let mut document =
        ConfigDocument::from_json_value(&Value::Object(core)).map_err(|e| e.to_string())?;
    document.pages = pages();
    Config::new(document).map_err(|e| e.to_string())
}

/// The shared page templates. The file is part of the build, so a broken one fails the tests,
/// never a user: it falls back to the core's plain pages rather than stopping the host.
fn pages() -> PageTemplates {
    shared_pages().unwrap_or_else(|e| {
        eprintln!("examples/host/pages.json is not page templates ({e}): using the core's pages");
        PageTemplates::default()
    })
}

fn shared_pages() -> Result<PageTemplates, String> {
    let value: Value = serde_json::from_str(PAGES_JSON).map_err(|e| e.to_string())?;
    PageTemplates::from_json_value(&value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_configuration_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../node/config.sample.json");
        let refused = load(&path, false).expect_err("the sample's placeholder secret");
        assert!(
            refused.contains("EDGEGRANT_ALLOW_SAMPLE_SECRET=1"),
            "{refused}"
        );
        let config = load(&path, true).expect("the sample loads");
        assert_eq!(config.port, 8787);
        assert!(config.database.ends_with("node/edgegrant.sqlite"));
        assert_eq!(config.accounts.len(), 2);
        assert_eq!(config.core.apps().count(), 2);
    }

    /// The sample with its first user's `fields` replaced (null removes one).
    fn sample_with_alice(fields: Value) -> Result<HostConfig, String> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../node/config.sample.json");
        let mut doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let alice = doc["users"][0].as_object_mut().unwrap();
        for (field, value) in fields.as_object().unwrap() {
            match value {
                Value::Null => alice.remove(field),
                value => alice.insert(field.clone(), value.clone()),
            };
        }
        parse(&doc, &path)
    }

    #[test]
    fn users_whose_account_the_sdks_would_refuse_are_refused_at_start() {
        let refused = |fields: Value, message: &str| {
            let error = sample_with_alice(fields).expect_err("refused");
            assert!(error.starts_with(message), "{error}");
        };
        refused(
            serde_json::json!({ "account_id": "dbid:AAH4f99T0taONIb" }),
            "user alice: account_id must be 40 visible ASCII characters",
        );
        refused(
            serde_json::json!({ "account_id": "dbid:AAH4f99T0taONIb OurWxbNQ6ywGRopQngc" }),
            "user alice: account_id must be 40 visible ASCII characters",
        );
        refused(
            serde_json::json!({ "uid": "12 345" }),
            "user alice: uid must be a whole number or 1-128 letters, digits",
        );
        refused(
            serde_json::json!({ "uid": null }),
            "user alice: uid must be",
        );
        refused(serde_json::json!({ "uid": -1 }), "user alice: uid must be");
        refused(
            serde_json::json!({ "country": "USA" }),
            "user alice: country must be a two-letter country code",
        );
        refused(
            serde_json::json!({ "name": 42 }),
            "user alice: name must be a string",
        );
        // What the SDKs accept loads: a numeric uid, a country, no name or email.
        let config = sample_with_alice(
            serde_json::json!({ "uid": 42, "country": "DE", "name": null, "email": null }),
        )
        .expect("loads");
        assert_eq!(config.accounts[0].user.uid.as_str(), "42");
        assert_eq!(config.accounts[0].country.as_deref(), Some("DE"));
    }

    #[test]
    fn the_shared_pages_parse() {
        let pages = shared_pages().expect("pages.json parses");
        assert!(pages.consent.is_some() && pages.code.is_some());
        assert!(pages.error.is_some() && pages.sign_in.is_some());
    }
}
