//! The pages of the flow — consent, code display, error, sign-in — from the host's templates.
//!
//! The core decides which page a request gets, with which status and headers, and fills in the
//! values; the host only says how a page looks. Templates use the small Mustache subset of
//! `wire::html` (`{{name}}`, `{{#name}}…{{/name}}`, `{{^name}}…{{/name}}`, `{{.}}`); every value is
//! HTML-escaped except `page_data`, the attributes the core builds so that machines (tests, the
//! conformance runners) can tell the pages apart: put it on the page's first element.
//!
//! | page | variables |
//! |---|---|
//! | consent | `page_data`, `app`, `app_name`, `scopes` (list), `permissions` (list: each scope in plain words, from `scope_descriptions` or the defaults, and offline access in words when asked for), `access_type`, `offline` (flag), `resources` (list: the APIs the tokens will be for, standards profile), `user_name` (the person's name, else the account id), `account_id`, `uid`, `redirect_uri`, `redirect_host` (where the answer goes: the redirect URI's host, or its scheme when it is a private-use one such as `com.example.app`; empty when the code is shown), `unverified` (flag: the app registered itself or is named by a metadata document: its name is its own claim), `client_host` (the host of a metadata document's client: whose app it is; empty otherwise), `loopback` (flag: an unverified app's answer goes to a program on the user's machine — `127.0.0.1`, `localhost` or a private-use scheme: warn), `query` (the form's hidden field) |
//! | code | `page_data`, `app`, `app_name`, `code` |
//! | error | `page_data`, `error`, `description` |
//! | sign_in | `page_data`, `return_to` |
//!
//! The consent page must post `query` and `decision` (`allow` or `deny`) to
//! `/oauth2/authorize` from this origin.

use crate::prelude::*;
use crate::wire::html::{escape, Template, Value};

/// The page templates as the host writes them; `None` keeps the core's default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageTemplates {
    /// The consent page.
    pub consent: Option<String>,
    /// The page that shows a code when no `redirect_uri` was given.
    pub code: Option<String>,
    /// The error page (a request that cannot be sent back to the app).
    pub error: Option<String>,
    /// The sign-in page, shown when the authorization request has no signed-in user.
    pub sign_in: Option<String>,
}

/// The templates' JSON form: `consent`, `code`, `error`, `sign_in`, each a string or `null`
/// (the core's default).
impl serde::Serialize for PageTemplates {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut out = s.serialize_map(Some(4))?;
        out.serialize_entry("consent", &self.consent)?;
        out.serialize_entry("code", &self.code)?;
        out.serialize_entry("error", &self.error)?;
        out.serialize_entry("sign_in", &self.sign_in)?;
        out.end()
    }
}

const CONSENT_VARIABLES: &[&str] = &[
    "page_data",
    "app",
    "app_name",
    "scopes",
    "permissions",
    "access_type",
    "offline",
    "resources",
    "user_name",
    "account_id",
    "uid",
    "redirect_uri",
    "redirect_host",
    "unverified",
    "client_host",
    "loopback",
    "query",
];
const CODE_VARIABLES: &[&str] = &["page_data", "app", "app_name", "code"];
const ERROR_VARIABLES: &[&str] = &["page_data", "error", "description"];
const SIGN_IN_VARIABLES: &[&str] = &["page_data", "return_to"];

/// The default consent page.
pub const DEFAULT_CONSENT: &str = concat!(
    "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">",
    "<title>Authorize</title></head><body><h1 {{page_data}}>{{app_name}} wants access</h1>",
    "{{#client_host}}<p>Published by <strong>{{client_host}}</strong>.</p>{{/client_host}}",
    "{{#unverified}}<p><strong>Unverified:</strong> nobody checked this app; its name is its own claim.</p>{{/unverified}}",
    "{{#redirect_host}}<p>You will be sent to <strong>{{redirect_host}}</strong>.</p>{{/redirect_host}}",
    "{{#loopback}}<p><strong>That is a program on this computer:</strong> allow only if you just started it yourself.</p>{{/loopback}}",
    "<p>Signed in as {{user_name}}. It asks to:</p>",
    "<ul>{{#permissions}}<li>{{.}}</li>{{/permissions}}</ul>",
    "{{#resources}}<p>for {{.}}</p>{{/resources}}",
    "<form method=\"post\" action=\"/oauth2/authorize\"><input type=\"hidden\" name=\"query\" value=\"{{query}}\">",
    "<button name=\"decision\" value=\"allow\">Allow</button> <button name=\"decision\" value=\"deny\">Deny</button></form>",
    "</body></html>"
);
/// The default code page.
pub const DEFAULT_CODE: &str = concat!(
    "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">",
    "<title>Your code</title></head><body><h1 {{page_data}}>Copy this code into the app</h1>",
    "<p><code>{{code}}</code></p></body></html>"
);
/// The default error page.
pub const DEFAULT_ERROR: &str = concat!(
    "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">",
    "<title>Error</title></head><body><h1 {{page_data}}>{{error}}</h1><p>{{description}}</p></body></html>"
);
/// The default sign-in page: it only says that the host must sign the user in.
pub const DEFAULT_SIGN_IN: &str = concat!(
    "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">",
    "<title>Sign in</title></head><body><h1 {{page_data}}>Sign in required</h1>",
    "<p>Sign in, then go back to <a href=\"{{return_to}}\">the authorization request</a>.</p></body></html>"
);

/// The compiled templates, and their source for [`ConfigDocument`](crate::ConfigDocument).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pages {
    pub source: PageTemplates,
    pub consent: Template,
    pub code: Template,
    pub error: Template,
    pub sign_in: Template,
}

/// A template that does not compile: which page, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TemplateError {
    pub page: &'static str,
    pub reason: String,
}

fn compile(
    page: &'static str,
    text: Option<&str>,
    default: &str,
    known: &[&str],
) -> Result<Template, TemplateError> {
    Template::compile(text.unwrap_or(default), known)
        .map_err(|e| TemplateError { page, reason: e.0 })
}

impl Pages {
    pub fn compile(source: PageTemplates) -> Result<Pages, TemplateError> {
        Ok(Pages {
            consent: compile(
                "consent",
                source.consent.as_deref(),
                DEFAULT_CONSENT,
                CONSENT_VARIABLES,
            )?,
            code: compile("code", source.code.as_deref(), DEFAULT_CODE, CODE_VARIABLES)?,
            error: compile(
                "error",
                source.error.as_deref(),
                DEFAULT_ERROR,
                ERROR_VARIABLES,
            )?,
            sign_in: compile(
                "sign_in",
                source.sign_in.as_deref(),
                DEFAULT_SIGN_IN,
                SIGN_IN_VARIABLES,
            )?,
            source,
        })
    }
}

/// The `data-*` attributes that name a page and what it shows.
pub(crate) fn page_data(kind: &str, fields: &[(&str, &str)]) -> String {
    let mut out = String::from("data-page=\"");
    escape(kind, &mut out);
    out.push('"');
    for (name, value) in fields {
        out.push_str(" data-");
        out.push_str(name);
        out.push_str("=\"");
        escape(value, &mut out);
        out.push('"');
    }
    out
}

/// Looks a name up in `values`.
pub(crate) fn lookup<'a>(values: &'a [(&'a str, Value<'a>)]) -> impl Fn(&str) -> Option<Value<'a>> {
    move |name| values.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}
