//! Identifiers that are not secrets: app keys, user identities, redirect URIs, grant ids.
//!
//! Each is a validated newtype, so an `AppKey` can never be passed where an `AccountId` is meant
//! and nothing unvalidated reaches a storage key or a redirect.

use crate::prelude::*;
use alloc::sync::Arc;
use core::fmt;
use serde::{Deserialize, Serialize};

/// Why a string was refused as an identifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind}: {reason}")]
pub struct InvalidId {
    /// Which identifier was being parsed.
    pub kind: &'static str,
    /// What was wrong with it.
    pub reason: &'static str,
}

/// Ids a stored record holds, read from its text by the id's own rules (a record read in place
/// checks each id it uses when it uses it).
pub(crate) trait StoredId: Sized {
    /// The id `text` is, if it is one.
    fn from_stored(text: &str) -> Option<Self>;
}

impl StoredId for GrantId {
    fn from_stored(text: &str) -> Option<Self> {
        GrantId::parse(text)
    }
}

macro_rules! validated_string {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $check:expr) => {
        $(#[$doc])*
        // Shared text: an id is copied into keys, principals and records many times per request,
        // and a clone is a reference count, not an allocation.
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Arc<str>);

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = crate::ids::text(d)?;
                Self::check(&text).map_err(|reason| {
                    serde::de::Error::custom(InvalidId { kind: $kind, reason })
                })?;
                Ok(Self(Arc::from(text.as_ref())))
            }
        }

        impl $name {
            /// Validates `value` and wraps it.
            pub fn new(value: impl Into<String>) -> Result<Self, InvalidId> {
                let value = value.into();
                Self::check(&value).map_err(|reason| InvalidId { kind: $kind, reason })?;
                Ok(Self(value.into()))
            }

            /// Why `value` is not one, if it is not (one function, however many callers).
            #[inline(never)]
            fn check(value: &str) -> Result<(), &'static str> {
                let check: fn(&str) -> Result<(), &'static str> = $check;
                check(value)
            }

            /// The identifier as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl StoredId for $name {
            fn from_stored(text: &str) -> Option<Self> {
                Self::check(text).ok()?;
                Some(Self(Arc::from(text)))
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidId;
            fn try_from(value: String) -> Result<Self, InvalidId> {
                Self::new(value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0.as_ref().to_owned()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }
    };
}

/// A string as the format holds it: borrowed from the input when it can be (postcard always),
/// so that an id is allocated once, as its shared text.
pub(crate) fn text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<alloc::borrow::Cow<'de, str>, D::Error> {
    struct Text;
    impl<'de> serde::de::Visitor<'de> for Text {
        type Value = alloc::borrow::Cow<'de, str>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(alloc::borrow::Cow::Borrowed(v))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(alloc::borrow::Cow::Owned(v.to_owned()))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok(alloc::borrow::Cow::Owned(v))
        }
    }
    d.deserialize_str(Text)
}

// Lets `BTreeMap<AppKey, _>` be searched by `&str` (the derived order is the string order).
impl core::borrow::Borrow<str> for AppKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

fn bounded(value: &str, max: usize) -> Result<(), &'static str> {
    match value.len() {
        0 => Err("empty"),
        n if n > max => Err("too long"),
        _ => Ok(()),
    }
}

validated_string!(
    /// The public identifier of an app, sent as `client_id` (SPEC.md: "app key").
    ///
    /// Either 1–64 characters from `A–Z a–z 0–9 - . _`, or the URL of a Client ID Metadata
    /// Document (draft-ietf-oauth-client-id-metadata-document §3): `https://`, a host, a path
    /// other than `/` without `.` or `..` segments, no user name, password or fragment, at most
    /// 512 visible ASCII characters. The two forms cannot be confused: the first never holds a
    /// `:`, and the core mints no key of the second (see [`AppKey::document_url`]).
    AppKey,
    "app key",
    |v| {
        if v.starts_with("https://") {
            return check_document_url(v);
        }
        bounded(v, 64)?;
        if v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)) {
            Ok(())
        } else {
            Err("only A-Z a-z 0-9 - . _ are allowed, or an https URL naming a client metadata document")
        }
    }
);

impl AppKey {
    /// The URL of the client's metadata document, when the key is one (an `https://` key);
    /// `None` for a configured or registered app's key.
    ///
    /// ```
    /// # use edgegrant::AppKey;
    /// let document = AppKey::new("https://app.example/oauth/client.json").unwrap();
    /// assert_eq!(document.document_url(), Some("https://app.example/oauth/client.json"));
    /// assert_eq!(AppKey::new("demo-app").unwrap().document_url(), None);
    /// assert!(AppKey::new("https://app.example/").is_err()); // no path
    /// assert!(AppKey::new("https://app.example/a/../b").is_err()); // a dot segment
    /// assert!(AppKey::new(r"https://app.example/a\..\b").is_err()); // read as /b by URL parsers
    /// ```
    pub fn document_url(&self) -> Option<&str> {
        self.0.starts_with("https://").then_some(&*self.0)
    }

    /// The host (and port) of a document client's URL: what the consent page shows.
    pub fn document_host(&self) -> Option<&str> {
        https_host(self.document_url()?)
    }
}

/// The host (and port) of an `https://` URL that names a document — a client's metadata
/// document or JWK set — if it is one by the draft's rules (§3; see [`AppKey`]).
pub(crate) fn https_host(url: &str) -> Option<&str> {
    check_document_url(url).ok()?;
    // Checked: the authority holds no `?`, and ends at the path's `/`.
    url.strip_prefix("https://")?.split('/').next()
}

/// Whether `text` may be shown to a person as a client's own words (its name, its URLs, its
/// contacts): no control characters (Unicode Cc), no line or paragraph separators, and no
/// invisible format characters (Cf: bidirectional overrides and isolates, zero-width joiners and
/// spaces, tags), which make a name read as another one (`\u{202E}` turns `evil` around).
pub(crate) fn is_displayable(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') || is_format(c))
}

/// Whether `c` is of Unicode's general category Cf (format), as of Unicode 15.1
/// (`DerivedGeneralCategory.txt`: 170 code points in these ranges). Written out rather than
/// taken from a crate: the whole category table would cost the wasm module more than these
/// 21 ranges, and the category changes rarely (Unicode 15.0 last added to it).
fn is_format(c: char) -> bool {
    const CF: [(u32, u32); 21] = [
        (0x00AD, 0x00AD),
        (0x0600, 0x0605),
        (0x061C, 0x061C),
        (0x06DD, 0x06DD),
        (0x070F, 0x070F),
        (0x0890, 0x0891),
        (0x08E2, 0x08E2),
        (0x180E, 0x180E),
        (0x200B, 0x200F),
        (0x202A, 0x202E),
        (0x2060, 0x2064),
        (0x2066, 0x206F),
        (0xFEFF, 0xFEFF),
        (0xFFF9, 0xFFFB),
        (0x110BD, 0x110BD),
        (0x110CD, 0x110CD),
        (0x13430, 0x1343F),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0001, 0xE0001),
        (0xE0020, 0xE007F),
    ];
    let c = u32::from(c);
    CF.iter().any(|&(low, high)| (low..=high).contains(&c))
}

/// Whether a path segment is `.` or `..`, a dot written as `%2e` too (RFC 3986 §6.2.2.2: the
/// same once the URL is normalized).
fn dot_segment(segment: &str) -> bool {
    let mut rest = segment.as_bytes();
    let mut dots = 0;
    while !rest.is_empty() {
        rest = match rest {
            [b'.', tail @ ..] => tail,
            [b'%', b'2', e, tail @ ..] if e.eq_ignore_ascii_case(&b'e') => tail,
            _ => return false,
        };
        dots += 1;
    }
    matches!(dots, 1 | 2)
}

/// A Client ID Metadata Document URL by the rules of its draft (§3): https, a host, a path,
/// no dot segments, no credentials, no fragment.
fn check_document_url(v: &str) -> Result<(), &'static str> {
    let Some(rest) = v.strip_prefix("https://") else {
        return Err("a client metadata document URL is an https URL");
    };
    bounded(v, 512)?;
    visible_ascii(v)?;
    let (authority, path) = rest
        .find('/')
        .and_then(|at| rest.split_at_checked(at))
        .unwrap_or((rest, ""));
    // A backslash anywhere: URL parsers read it as `/` in an https URL, so `/a\..\x` would
    // name `/x` to them and another path to this check.
    if v.contains('\\') {
        return Err("a client metadata document URL has no backslash");
    }
    if authority.is_empty() || authority.contains(['@', '?']) {
        return Err("a client metadata document URL needs a host, without a user name or password");
    }
    if v.contains('#') {
        return Err("a client metadata document URL has no fragment");
    }
    let path = path.split('?').next().unwrap_or_default();
    if path.len() <= 1 {
        return Err("a client metadata document URL needs a path");
    }
    if path.split('/').any(dot_segment) {
        return Err("a client metadata document URL has no . or .. segments");
    }
    Ok(())
}

validated_string!(
    /// The account identifier of a user (the reference service's `dbid:…` form), as the host's
    /// sign-in names it. 1–128 visible ASCII characters.
    AccountId,
    "account id",
    |v| {
        bounded(v, 128)?;
        visible_ascii(v)
    }
);

validated_string!(
    /// The JWK SHA-256 thumbprint (RFC 7638) of a key a client proved it holds with a DPoP proof
    /// (RFC 9449): what a bound token names (`cnf.jkt`), and what an authorization request's
    /// `dpop_jkt` names. 43 base64url characters.
    KeyThumbprint,
    "key thumbprint",
    |v| {
        if v.len() == 43
            && v
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            Ok(())
        } else {
            Err("expected a SHA-256 JWK thumbprint: 43 base64url characters")
        }
    }
);

validated_string!(
    /// The legacy user identifier returned as `uid`. 1–128 visible ASCII characters.
    Uid,
    "uid",
    |v| {
        bounded(v, 128)?;
        visible_ascii(v)
    }
);

validated_string!(
    /// A redirect URI as registered for an app and compared by exact string match
    /// (RFC 9700 §4.1.3).
    ///
    /// An absolute URI (`scheme:rest`, RFC 3986 §3.1), at most 2048 characters, without a fragment
    /// (RFC 6749 §3.1.2), whitespace or control characters, and not of a scheme that runs script
    /// or shows local content (`javascript:`, `data:`, `vbscript:`, `file:`, `blob:`, `about:`).
    RedirectUri,
    "redirect uri",
    |v| {
        bounded(v, 2048)?;
        visible_ascii(v)?;
        if v.contains('#') {
            return Err("must not contain a fragment");
        }
        let (scheme, rest) = v.split_once(':').ok_or("must be absolute (scheme:...)")?;
        let mut chars = scheme.bytes();
        let starts_alpha = chars.next().is_some_and(|b| b.is_ascii_alphabetic());
        if !starts_alpha || !chars.all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) {
            return Err("invalid scheme");
        }
        if rest.is_empty() {
            return Err("nothing after the scheme");
        }
        // Schemes whose "navigation" runs script or shows local content in the browser: never a
        // place to send a code (RFC 9700 §4.11; RFC 6749 §10.6).
        if ["javascript", "data", "vbscript", "file", "blob", "about"]
            .iter()
            .any(|banned| scheme.eq_ignore_ascii_case(banned))
        {
            return Err("a scheme that runs script or reads local content cannot be a redirect target");
        }
        Ok(())
    }
);

fn visible_ascii(v: &str) -> Result<(), &'static str> {
    if v.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err("only visible ASCII characters are allowed")
    }
}

/// Identifies one grant: what one consent produced once redeemed, the family of tokens that one
/// revocation ends. Opaque, random, not a credential (knowing it grants nothing).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Debug)]
#[serde(transparent)]
pub struct GrantId(pub(crate) Arc<str>);

impl<'de> Deserialize<'de> for GrantId {
    /// Read as its shared text in one allocation; only what the core mints (URL-safe base64)
    /// is a grant id, so a damaged record cannot smuggle a separator into a storage key.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = text(d)?;
        GrantId::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(InvalidId {
                kind: "grant id",
                reason: "only URL-safe base64 is allowed",
            })
        })
    }
}

impl GrantId {
    /// A grant id of the shape the core mints: 1–64 URL-safe base64 characters.
    pub(crate) fn parse(text: &str) -> Option<GrantId> {
        GrantId::is_minted(text).then(|| GrantId(Arc::from(text)))
    }

    /// Whether `text` has the shape of a grant id the core mints.
    fn is_minted(text: &str) -> bool {
        (1..=64).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GrantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The signed-in user, as the host's sign-in established it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Account identifier, returned as `account_id`.
    pub account_id: AccountId,
    /// User identifier, returned as `uid`.
    pub uid: Uid,
    /// The person's name as the host knows it, shown on the consent page so that they see
    /// whose account they are granting (the account id when there is none). Never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the host keeps with a grant this user makes in this request (an upstream API's
    /// token, say: any text, JSON for structure): sealed under the server key into the code,
    /// then the grant and every access token of it, never stored in clear, and handed back with
    /// the principal of each API call made with those tokens ([`Principal::props`]). Read only
    /// where a grant is made (the consent, or a re-authorization that needs none); `None`: no
    /// props.
    ///
    /// [`Principal::props`]: crate::Principal::props
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub props: Option<String>,
}

/// Whom a grant and its tokens act for: a person, or the client itself.
///
/// Records, the principal of an API call, introspection (`sub`) and audit events carry it, so
/// that a host can tell a person's app from a machine acting on its own behalf.
///
/// ```
/// # use edgegrant::{AccountId, Subject};
/// let alice = Subject::Account(AccountId::new("dbid:alice").unwrap());
/// assert_eq!(alice.account_id().map(AccountId::as_str), Some("dbid:alice"));
/// assert_eq!(Subject::Client.account_id(), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Subject {
    /// A person, by the account the host signed in.
    Account(AccountId),
    /// The client itself (the record's app), acting on its own behalf: client credentials.
    Client,
}

impl Subject {
    /// The person's account, if the subject is a person.
    pub fn account_id(&self) -> Option<&AccountId> {
        match self {
            Subject::Account(account) => Some(account),
            Subject::Client => None,
        }
    }
}
