//! Records read in place: views on a record's stored bytes, for the records a bearer check
//! reads (access token, grant, link, a stored app's). A view borrows its strings and scope
//! sets from the bytes and allocates nothing; a decision reads the few fields it needs, and
//! builds owned ids only for the keys it asks for and the principal it answers.
//!
//! A view checks the record's structure as postcard reads it (the format, the variant, every
//! varint, boolean, option and length, nothing left over), and each field when it is used as
//! what it is: [`Text::parse`] checks an id by its rules, [`ScopeNames::to_set`] each scope.
//! Checking every field on every read was what decoding a record cost, not its allocations
//! (callgrind: a view that checked every field cost what the serde decode did). A record that
//! fails either is a storage fault, as one that does not decode is. Every record that decodes
//! reads as a view with the same fields (the property test `views_match_decoding` pins it on
//! arbitrary and damaged records). A stored app's view reads its first field alone (its last
//! use); the registration after it is checked when a request decodes it.

use crate::ids::{StoredId, Subject};
use crate::records::{ACCESS_TOKEN_TAG, APP_TAG, FORMAT, GRANT_TAG, LINK_TAG};
use crate::scope::{Joined, Scope, ScopeSet};
use crate::time::UnixTime;

/// Reads postcard's encoding from the front of some bytes; every read is `None` on bytes that
/// are not what postcard would accept there.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&first, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(first)
    }

    /// A varint of an integer of `bits` bits, as postcard reads it: at most as many bytes as
    /// the type needs, the last of them holding no bit beyond the type's.
    fn varint(&mut self, bits: u32) -> Option<u64> {
        let most = bits.div_ceil(7);
        let mut out = 0u64;
        for i in 0..most {
            let byte = self.byte()?;
            out |= u64::from(byte & 0x7F) << (7 * i);
            if byte & 0x80 == 0 {
                let last_bits = bits - 7 * (most - 1);
                return (i < most - 1 || u32::from(byte) < (1 << last_bits)).then_some(out);
            }
        }
        None
    }

    fn u64(&mut self) -> Option<u64> {
        self.varint(u64::BITS)
    }

    /// A length (postcard writes it as a `usize`, whose width is the platform's).
    fn len(&mut self) -> Option<usize> {
        usize::try_from(self.varint(usize::BITS)?).ok()
    }

    fn bool(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    /// An `Option` of what `read` reads.
    fn option<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        match self.byte()? {
            0 => Some(None),
            1 => read(self).map(Some),
            _ => None,
        }
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = self.len()?;
        let (taken, rest) = self.rest.split_at_checked(len)?;
        self.rest = rest;
        Some(taken)
    }

    /// A string, located (checked when used: [`Text`]).
    fn text(&mut self) -> Option<Text<'a>> {
        self.bytes().map(Text)
    }

    /// A grant's or token's [`Subject`](crate::Subject): a person's account id (variant 0),
    /// or the app itself (variant 1).
    fn subject(&mut self) -> Option<SubjectView<'a>> {
        match self.varint(u32::BITS)? {
            0 => self.text().map(SubjectView::Account),
            1 => Some(SubjectView::Client),
            _ => None,
        }
    }

    /// A list of strings (a set of scopes, a link's grants), located.
    fn names(&mut self) -> Option<ScopeNames<'a>> {
        let start = self.rest;
        for _ in 0..self.len()? {
            self.bytes()?;
        }
        let encoded = start.get(..start.len() - self.rest.len())?;
        Some(ScopeNames { encoded })
    }

    /// The record's header: the current [`FORMAT`], then the variant's tag.
    fn header(bytes: &'a [u8], tag: u8) -> Option<Reader<'a>> {
        let (&FORMAT, rest) = bytes.split_first()? else {
            return None;
        };
        let mut reader = Reader { rest };
        (reader.varint(u32::BITS)? == u64::from(tag)).then_some(reader)
    }

    /// `value`, if nothing is left after it.
    fn end<T>(self, value: T) -> Option<T> {
        self.rest.is_empty().then_some(value)
    }
}

/// How many bytes the first `count` strings of `bytes` take, as postcard wrote them (a length,
/// then the text): `None` if they are not there.
pub(crate) fn texts_len(bytes: &[u8], count: usize) -> Option<usize> {
    let mut reader = Reader { rest: bytes };
    for _ in 0..count {
        reader.bytes()?;
    }
    Some(bytes.len() - reader.rest.len())
}

/// Whether `bytes` begin as a record with this tag would: the current format, then the tag
/// (what a key's record must be; the rest is read when it is used).
pub(crate) fn has_tag(bytes: &[u8], tag: u8) -> bool {
    Reader::header(bytes, tag).is_some()
}

/// A string of a record read in place: its bytes, checked when used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Text<'a>(&'a [u8]);

impl<'a> Text<'a> {
    /// Whether it is exactly `text`.
    pub fn is(self, text: &str) -> bool {
        self.0 == text.as_bytes()
    }

    /// The text, if it is UTF-8.
    pub fn as_str(self) -> Option<&'a str> {
        core::str::from_utf8(self.0).ok()
    }

    /// The id it holds, if it is one of `T` by `T`'s rules.
    pub fn parse<T: StoredId>(self) -> Option<T> {
        T::from_stored(self.as_str()?)
    }

    /// Whether it is empty.
    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }
}

/// A grant's or token's subject, read in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SubjectView<'a> {
    /// A person, by account id.
    Account(Text<'a>),
    /// The app itself.
    Client,
}

impl SubjectView<'_> {
    /// The subject, as decoding gives it: `None` if the account id is not one.
    pub fn to_subject(self) -> Option<Subject> {
        match self {
            SubjectView::Account(text) => text.parse().map(Subject::Account),
            SubjectView::Client => Some(Subject::Client),
        }
    }
}

/// A stored set of scopes, read in place: its names, checked when the set is built.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScopeNames<'a> {
    /// The list as postcard wrote it: its length, then each name.
    encoded: &'a [u8],
}

impl<'a> ScopeNames<'a> {
    /// Each name, in stored order.
    fn iter(self) -> impl Iterator<Item = Text<'a>> {
        let mut reader = Reader { rest: self.encoded };
        let count = reader.len().unwrap_or(0);
        (0..count).map_while(move |_| reader.text())
    }

    /// Whether `scope` is one of them (compared as bytes: a damaged name matches no scope).
    pub fn contains(self, scope: &Scope) -> bool {
        self.iter().any(|name| name.0 == scope.as_str().as_bytes())
    }

    /// The set, as decoding it gives it: `None` if a name is not a scope.
    pub fn to_set(self) -> Option<ScopeSet> {
        let mut set = Joined::with_room(self.iter().count());
        for name in self.iter() {
            let name = name.as_str()?;
            Scope::check(name).ok()?;
            set.push(name);
        }
        Some(set.finish())
    }
}

/// What a record's field is, as its view locates it.
#[derive(Clone, Copy)]
enum Field {
    /// A whole number (a time, an epoch).
    Int,
    Flag,
    Str,
    /// A [`SubjectView`].
    Who,
    /// A list of strings (a set of scopes, a link's grants).
    List,
    MaybeInt,
    MaybeStr,
    /// A grant's last rotation: a digest's text, a time, the seed's bytes.
    MaybeRotation,
}

/// A field located by [`locate`].
#[derive(Clone, Copy)]
enum Value<'a> {
    Absent,
    /// A whole number, or a flag as 0 or 1.
    U64(u64),
    Text(Text<'a>),
    Subject(SubjectView<'a>),
    Names(ScopeNames<'a>),
}

impl<'a> Value<'a> {
    fn u64(self) -> Option<u64> {
        match self {
            Value::U64(n) => Some(n),
            _ => None,
        }
    }

    fn maybe_u64(self) -> Option<Option<u64>> {
        match self {
            Value::Absent => Some(None),
            Value::U64(n) => Some(Some(n)),
            _ => None,
        }
    }

    fn time(self) -> Option<Option<UnixTime>> {
        self.maybe_u64().map(|n| n.map(UnixTime))
    }

    fn maybe_text(self) -> Option<Option<Text<'a>>> {
        match self {
            Value::Absent => Some(None),
            Value::Text(text) => Some(Some(text)),
            _ => None,
        }
    }

    fn text(self) -> Option<Text<'a>> {
        match self {
            Value::Text(text) => Some(text),
            _ => None,
        }
    }

    fn subject(self) -> Option<SubjectView<'a>> {
        match self {
            Value::Subject(subject) => Some(subject),
            _ => None,
        }
    }

    fn names(self) -> Option<ScopeNames<'a>> {
        match self {
            Value::Names(names) => Some(names),
            _ => None,
        }
    }
}

/// The fields of the record with `tag` laid out as `layout`, located in `bytes` (which they
/// must fill exactly) into `values`: one reader for every kind of view, so that each costs a
/// table, not code.
#[inline(never)]
fn locate<'a>(bytes: &'a [u8], tag: u8, layout: &[Field], values: &mut [Value<'a>]) -> Option<()> {
    let mut r = Reader::header(bytes, tag)?;
    for (value, field) in values.iter_mut().zip(layout) {
        *value = match field {
            Int => Value::U64(r.u64()?),
            Flag => Value::U64(u64::from(r.bool()?)),
            Str => Value::Text(r.text()?),
            Who => Value::Subject(r.subject()?),
            List => Value::Names(r.names()?),
            MaybeInt => r.option(Reader::u64)?.map_or(Value::Absent, Value::U64),
            MaybeStr => r.option(Reader::text)?.map_or(Value::Absent, Value::Text),
            MaybeRotation => {
                r.option(|r| {
                    r.text()?;
                    r.u64()?;
                    r.bytes()
                })?;
                Value::Absent
            }
        };
    }
    r.end(())
}

/// [`locate`] into an array as long as `layout`.
fn fields<'a, const N: usize>(
    bytes: &'a [u8],
    tag: u8,
    layout: &[Field; N],
) -> Option<[Value<'a>; N]> {
    let mut values = [Value::Absent; N];
    locate(bytes, tag, layout, &mut values)?;
    Some(values)
}

use Field::*;

/// [`AccessTokenRecord`](super::AccessTokenRecord)'s fields, in order.
const ACCESS_TOKEN: [Field; 12] = [
    Str, Str, Who, List, MaybeInt, Str, MaybeInt, MaybeStr, MaybeStr, Flag, MaybeStr, MaybeStr,
];
/// [`GrantRecord`](super::GrantRecord)'s fields, in order.
const GRANT: [Field; 15] = [
    Str,
    Who,
    MaybeStr,
    List,
    Int,
    Flag,
    MaybeInt,
    MaybeStr,
    MaybeStr,
    Str,
    MaybeRotation,
    MaybeInt,
    MaybeInt,
    MaybeStr,
    MaybeStr,
];
/// [`LinkRecord`](super::LinkRecord)'s fields, in order.
const LINK: [Field; 9] = [Int, List, Flag, List, Str, Int, Int, Int, MaybeStr];

/// Records that can be read in place.
pub(crate) trait RecordView<'a>: Sized {
    /// The view of `bytes`, if they are a record of this kind.
    fn read(bytes: &'a [u8]) -> Option<Self>;
}

/// An access token's record ([`AccessTokenRecord`](super::AccessTokenRecord)), read in place.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AccessTokenView<'a> {
    pub grant: Text<'a>,
    pub app: Text<'a>,
    pub subject: SubjectView<'a>,
    pub scopes: ScopeNames<'a>,
    pub expires_at: Option<UnixTime>,
    pub audience: Text<'a>,
    pub generation: Option<u64>,
    pub uid: Option<Text<'a>>,
    /// The key it is bound to (DPoP), if any.
    pub bound_to: Option<Text<'a>>,
    /// The grant's props, sealed, if any.
    pub props: Option<Text<'a>>,
}

impl<'a> RecordView<'a> for AccessTokenView<'a> {
    fn read(bytes: &'a [u8]) -> Option<AccessTokenView<'a>> {
        // (The exchanging client and whether it acts: read whole by introspection.)
        let [grant, app, subject, scopes, expires_at, audience, generation, uid, _, _, bound_to, props] =
            fields(bytes, ACCESS_TOKEN_TAG, &ACCESS_TOKEN)?;
        Some(AccessTokenView {
            grant: grant.text()?,
            app: app.text()?,
            subject: subject.subject()?,
            scopes: scopes.names()?,
            expires_at: expires_at.time()?,
            audience: audience.text()?,
            generation: generation.maybe_u64()?,
            uid: uid.maybe_text()?,
            bound_to: bound_to.maybe_text()?,
            props: props.maybe_text()?,
        })
    }
}

impl AccessTokenView<'_> {
    /// Whether `resource` is one of the resources the token is bound to (RFC 8707).
    #[cfg(test)]
    pub fn is_for(&self, resource: &str) -> bool {
        self.audience_any(|r| r == resource)
    }

    /// Whether one of the resources the token is bound to is as `wanted` says.
    pub(crate) fn audience_any(&self, mut wanted: impl FnMut(&str) -> bool) -> bool {
        self.audience
            .0
            .split(|&b| b == b' ')
            .any(|r| core::str::from_utf8(r).is_ok_and(&mut wanted))
    }
}

/// A grant's record ([`GrantRecord`](super::GrantRecord)), read in place: the fields a bearer
/// check decides on and answers with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GrantView<'a> {
    pub uid: Option<Text<'a>>,
    pub link_epoch: u64,
    pub revoked_at: Option<UnixTime>,
}

impl<'a> RecordView<'a> for GrantView<'a> {
    fn read(bytes: &'a [u8]) -> Option<GrantView<'a>> {
        let [_, _, uid, _, link_epoch, _, revoked_at, ..] = fields(bytes, GRANT_TAG, &GRANT)?;
        Some(GrantView {
            uid: uid.maybe_text()?,
            link_epoch: link_epoch.u64()?,
            revoked_at: revoked_at.time()?,
        })
    }
}

/// A link's record ([`LinkRecord`](super::LinkRecord)), read in place: its epoch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinkView {
    pub epoch: u64,
}

impl RecordView<'_> for LinkView {
    fn read(bytes: &[u8]) -> Option<LinkView> {
        let [epoch, ..] = fields(bytes, LINK_TAG, &LINK)?;
        Some(LinkView {
            epoch: epoch.u64()?,
        })
    }
}

/// A stored app's record ([`AppRecord`](super::AppRecord)), read in place: when it was last
/// used, the record's first field — all a bearer check needs of a stored app. The app and its
/// registration behind it are neither read nor checked here; a request that uses them decodes
/// the record whole.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AppView {
    pub used_at: UnixTime,
}

impl RecordView<'_> for AppView {
    fn read(bytes: &[u8]) -> Option<AppView> {
        let used_at = Reader::header(bytes, APP_TAG)?.u64()?;
        Some(AppView {
            used_at: UnixTime(used_at),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{App, DefaultTokenType, Permissions};
    use crate::credentials::{
        Entropy, RefreshTokenDigest, RegistrationTokenDigest, RotationSeed, ENTROPY_LEN,
    };
    use crate::grant_type::{GrantType, GrantTypes};
    use crate::ids::{AccountId, AppKey, GrantId, KeyThumbprint, RedirectUri, Uid};
    use crate::props::SealedProps;
    use crate::records::{
        AboutClient, AccessTokenRecord, AppRecord, AuthMethod, BadRecord, ClientKeys, GrantRecord,
        LastRotation, LinkRecord, Provenance, Record, Registration, Resources,
    };
    use base64ct::{Base64UrlUnpadded, Encoding as _};
    use proptest::prelude::*;

    fn id() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_-]{1,24}"
    }

    fn scopes() -> impl Strategy<Value = ScopeSet> {
        prop::collection::vec("[a-z_.:]{1,12}", 0..5)
            .prop_map(|names| ScopeSet::parse(&names.join(" ")).unwrap_or_default())
    }

    fn resources() -> impl Strategy<Value = Resources> {
        prop::collection::vec("https://[a-z]{1,8}\\.example(/[a-z]{0,4})?", 0..3)
            .prop_map(|names| Resources::from_names(names.iter().map(String::as_str)))
    }

    fn time() -> impl Strategy<Value = UnixTime> {
        any::<u64>().prop_map(UnixTime)
    }

    fn digest() -> impl Strategy<Value = RefreshTokenDigest> {
        any::<[u8; 32]>().prop_map(|bytes| {
            RefreshTokenDigest::from_base64(&Base64UrlUnpadded::encode_string(&bytes))
                .unwrap_or_else(|| unreachable!("32 bytes in base64url are a digest"))
        })
    }

    fn access_token() -> impl Strategy<Value = AccessTokenRecord> {
        (
            id(),
            id(),
            subject(),
            scopes(),
            prop::option::of(time()),
            resources(),
            (
                prop::option::of(any::<u64>()),
                prop::option::of(id()),
                prop::option::of(id()),
                any::<bool>(),
                prop::option::of(thumbprint()),
                prop::option::of(sealed()),
            ),
        )
            .prop_map(
                |(
                    grant,
                    app,
                    subject,
                    scopes,
                    expires_at,
                    audience,
                    (generation, uid, by, acting, bound_to, props),
                )| {
                    AccessTokenRecord {
                        grant: GrantId::parse(&grant).unwrap_or_else(|| unreachable!()),
                        app: AppKey::new(app).unwrap_or_else(|_| unreachable!()),
                        subject,
                        scopes,
                        expires_at,
                        audience,
                        generation,
                        uid: uid.map(|uid| Uid::new(uid).unwrap_or_else(|_| unreachable!())),
                        exchanged_by: by
                            .map(|by| AppKey::new(by).unwrap_or_else(|_| unreachable!())),
                        acting,
                        bound_to,
                        props,
                    }
                },
            )
    }

    /// Sealed props, as stored (base64url text).
    fn sealed() -> impl Strategy<Value = SealedProps> {
        "[A-Za-z0-9_-]{40,80}".prop_map(SealedProps::from_stored)
    }

    /// A DPoP key's thumbprint.
    fn thumbprint() -> impl Strategy<Value = KeyThumbprint> {
        "[A-Za-z0-9_-]{43}"
            .prop_map(|text| KeyThumbprint::new(text).unwrap_or_else(|_| unreachable!()))
    }

    /// A person's account, or the app itself.
    fn subject() -> impl Strategy<Value = Subject> {
        prop_oneof![
            id().prop_map(|a| Subject::Account(
                AccountId::new(a).unwrap_or_else(|_| unreachable!())
            )),
            Just(Subject::Client),
        ]
    }

    fn grant() -> impl Strategy<Value = GrantRecord> {
        let rotation = (digest(), time(), any::<u8>()).prop_map(|(superseded, at, seed)| {
            let entropy = Entropy::new([seed; ENTROPY_LEN]);
            Box::new(LastRotation {
                superseded,
                at,
                seed: RotationSeed::draw(&entropy),
            })
        });
        (
            (
                id(),
                subject(),
                prop::option::of(id()),
                scopes(),
                any::<u64>(),
                any::<bool>(),
            ),
            (
                prop::option::of(time()),
                prop::option::of(digest()),
                resources(),
                prop::option::of(rotation),
                prop::option::of(any::<u64>()),
                prop::option::of(time()),
                prop::option::of(thumbprint()),
                prop::option::of(sealed()),
            ),
        )
            .prop_map(
                |(
                    (app, subject, uid, scopes, link_epoch, pkce),
                    (
                        revoked_at,
                        refresh_token,
                        resources,
                        rotation,
                        member,
                        idle_until,
                        bound,
                        props,
                    ),
                )| GrantRecord {
                    app: AppKey::new(app).unwrap_or_else(|_| unreachable!()),
                    subject,
                    uid: uid.map(|uid| Uid::new(uid).unwrap_or_else(|_| unreachable!())),
                    scopes,
                    link_epoch,
                    pkce,
                    revoked_at,
                    refresh_token,
                    long_lived_token: None,
                    resources,
                    rotation,
                    member,
                    idle_until,
                    refresh_bound_to: bound,
                    props,
                },
            )
    }

    fn link() -> impl Strategy<Value = LinkRecord> {
        (
            any::<u64>(),
            scopes(),
            any::<bool>(),
            prop::collection::vec(id(), 0..3),
            resources(),
            (any::<u64>(), any::<u64>(), any::<u64>()),
            prop::option::of("https://[a-z]{1,12}\\.example/[a-z]{0,8}"),
        )
            .prop_map(
                |(
                    epoch,
                    granted,
                    offline,
                    grants,
                    resources,
                    (members, swept, sweep_to),
                    redirect,
                )| {
                    LinkRecord {
                        epoch,
                        granted,
                        offline,
                        grants: grants.iter().filter_map(|g| GrantId::parse(g)).collect(),
                        resources,
                        members,
                        swept,
                        sweep_to,
                        redirect_uri: redirect.and_then(|uri| RedirectUri::new(uri).ok()),
                    }
                },
            )
    }

    /// A registered app's record: its last use, and a registration of varying length before
    /// format 9 moved the last use first.
    fn app() -> impl Strategy<Value = AppRecord> {
        (
            id(),
            "[ -~]{0,24}",
            scopes(),
            (time(), time(), any::<[u8; 32]>()),
            prop::option::of("https://[a-z]{1,8}\\.example/[a-z]{0,6}"),
            prop::collection::vec("[a-z]{1,8}@[a-z]{1,8}\\.example", 0..3),
        )
            .prop_map(
                |(key, name, scopes, (used_at, issued_at, token), client_uri, contacts)| {
                    let token = Base64UrlUnpadded::encode_string(&token);
                    AppRecord {
                        used_at,
                        app: App {
                            key: AppKey::new(key).unwrap_or_else(|_| unreachable!()),
                            name,
                            secret_digest: None,
                            redirect_uris: Vec::new(),
                            permissions: Permissions::Scoped { scopes },
                            default_token_type: DefaultTokenType::default(),
                            implicit_allowed: false,
                        },
                        provenance: Provenance::Registered(Registration {
                            issued_at,
                            token: RegistrationTokenDigest::from_base64(&token)
                                .unwrap_or_else(|| unreachable!("32 bytes are a digest")),
                            auth_method: AuthMethod::None,
                            grant_types: GrantTypes::of(&[
                                GrantType::AuthorizationCode,
                                GrantType::RefreshToken,
                            ]),
                            native: false,
                            about: AboutClient {
                                client_uri,
                                contacts,
                                ..AboutClient::default()
                            },
                            keys: ClientKeys::Inline(Vec::new()),
                        }),
                    }
                },
            )
    }

    /// A record of a kind this build reads: a stored app's only with clients that arrive
    /// unannounced.
    fn record() -> BoxedStrategy<Record> {
        let kept = prop_oneof![
            access_token().prop_map(Record::AccessToken),
            grant().prop_map(Record::Grant),
            link().prop_map(Record::Link),
        ];
        if cfg!(feature = "unannounced") {
            prop_oneof![3 => kept, 1 => app().prop_map(Record::App)].boxed()
        } else {
            kept.boxed()
        }
    }

    /// Bytes as postcard reads them (a length, then that many bytes).
    mod serde_bytes_like {
        pub struct Bytes(pub Vec<u8>);
        impl<'de> serde::Deserialize<'de> for Bytes {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = Bytes;
                    fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                        f.write_str("bytes")
                    }
                    fn visit_bytes<E>(self, v: &[u8]) -> Result<Bytes, E> {
                        Ok(Bytes(v.to_vec()))
                    }
                }
                d.deserialize_bytes(Visitor)
            }
        }
    }

    /// Damage: a byte changed, the bytes cut short, or a byte put in.
    fn damaged(bytes: Vec<u8>, at: usize, value: u8, how: u8) -> Vec<u8> {
        let mut bytes = bytes;
        let at = at % bytes.len().max(1);
        match how % 3 {
            0 => {
                if let Some(byte) = bytes.get_mut(at) {
                    *byte = value;
                }
            }
            1 => bytes.truncate(at),
            _ => bytes.insert(at, value),
        }
        bytes
    }

    /// The view of `bytes` reads what decoding them gives, field for field, whenever they
    /// decode (and reads as a record of no other kind).
    fn agrees(bytes: &[u8], decoded: &Record) -> Result<(), TestCaseError> {
        let token = AccessTokenView::read(bytes);
        let grant = GrantView::read(bytes);
        let link = LinkView::read(bytes);
        let app = AppView::read(bytes);
        if !matches!(decoded, Record::App(_)) {
            prop_assert!(app.is_none());
        }
        match decoded {
            Record::AccessToken(r) => {
                let v = token.ok_or_else(|| TestCaseError::fail("no token view"))?;
                prop_assert_eq!(v.grant.parse::<GrantId>(), Some(r.grant.clone()));
                prop_assert_eq!(v.app.parse::<AppKey>(), Some(r.app.clone()));
                prop_assert_eq!(v.subject.to_subject(), Some(r.subject.clone()));
                prop_assert_eq!(v.scopes.to_set(), Some(r.scopes.clone()));
                prop_assert_eq!(v.expires_at, r.expires_at);
                prop_assert_eq!(v.generation, r.generation);
                prop_assert_eq!(v.uid.and_then(Text::parse::<Uid>), r.uid.clone());
                prop_assert_eq!(v.uid.is_some(), r.uid.is_some());
                prop_assert_eq!(
                    v.bound_to.and_then(Text::parse::<KeyThumbprint>),
                    r.bound_to.clone()
                );
                prop_assert_eq!(v.bound_to.is_some(), r.bound_to.is_some());
                prop_assert_eq!(v.audience.is_empty(), r.audience.is_empty());
                for resource in r.audience.iter() {
                    prop_assert!(v.is_for(resource));
                }
                for scope in r.scopes.iter() {
                    prop_assert!(v
                        .scopes
                        .contains(&Scope::new(scope).unwrap_or_else(|_| unreachable!())));
                }
                prop_assert!(grant.is_none() && link.is_none());
            }
            Record::Grant(r) => {
                let v = grant.ok_or_else(|| TestCaseError::fail("no grant view"))?;
                prop_assert_eq!(v.uid.and_then(Text::parse::<Uid>), r.uid.clone());
                prop_assert_eq!(v.uid.is_some(), r.uid.is_some());
                prop_assert_eq!(v.link_epoch, r.link_epoch);
                prop_assert_eq!(v.revoked_at, r.revoked_at);
                prop_assert!(token.is_none() && link.is_none());
            }
            Record::Link(r) => {
                let v = link.ok_or_else(|| TestCaseError::fail("no link view"))?;
                prop_assert_eq!(v.epoch, r.epoch);
                prop_assert!(token.is_none() && grant.is_none());
            }
            Record::App(r) => {
                let v = app.ok_or_else(|| TestCaseError::fail("no app view"))?;
                prop_assert_eq!(v.used_at, r.used_at);
                prop_assert!(token.is_none() && grant.is_none() && link.is_none());
            }
            _ => prop_assert!(token.is_none() && grant.is_none() && link.is_none()),
        }
        Ok(())
    }

    /// What postcard reads from the front of `bytes` as a `T`, and how many bytes it took.
    fn postcard_reads<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<(T, usize)> {
        postcard::take_from_bytes::<T>(bytes)
            .ok()
            .map(|(value, rest)| (value, bytes.len() - rest.len()))
    }

    /// What `read` reads from the front of `bytes`, and how many bytes it took.
    fn reads<'a, T>(
        bytes: &'a [u8],
        read: impl FnOnce(&mut Reader<'a>) -> Option<T>,
    ) -> Option<(T, usize)> {
        let mut reader = Reader { rest: bytes };
        read(&mut reader).map(|value| (value, bytes.len() - reader.rest.len()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Each of the reader's primitives accepts what postcard does, and nothing else, and
        /// takes as many bytes: varints of every width (over-long and overflowing ones too),
        /// booleans, options, lengths and strings.
        #[test]
        fn the_reader_reads_as_postcard(bytes in prop::collection::vec(
            prop_oneof![Just(0u8), Just(1), Just(0x80), Just(0xFF), Just(0x0F), Just(0x10), any::<u8>()],
            0..12,
        )) {
            prop_assert_eq!(reads(&bytes, Reader::u64), postcard_reads::<u64>(&bytes));
            prop_assert_eq!(
                reads(&bytes, |r| r.varint(u32::BITS)),
                postcard_reads::<u32>(&bytes).map(|(v, n)| (u64::from(v), n))
            );
            prop_assert_eq!(
                reads(&bytes, Reader::len),
                postcard_reads::<usize>(&bytes)
            );
            prop_assert_eq!(reads(&bytes, Reader::bool), postcard_reads::<bool>(&bytes));
            prop_assert_eq!(
                reads(&bytes, |r| r.option(Reader::bool)),
                postcard_reads::<Option<bool>>(&bytes)
            );
            prop_assert_eq!(
                reads(&bytes, |r| r.bytes().map(<[u8]>::to_vec)),
                postcard_reads::<serde_bytes_like::Bytes>(&bytes).map(|(v, n)| (v.0, n))
            );
        }

        /// A stored app's record is the app's own codec behind its tag: read as written where
        /// apps are stored, and not at all by a build without clients that arrive unannounced
        /// (which never asks for one, and links no reader of it).
        #[test]
        fn app_records_read_only_where_apps_are_stored(record in app()) {
            let mut bytes = vec![FORMAT, APP_TAG];
            bytes.extend(postcard::to_allocvec(&record).unwrap_or_default());
            if cfg!(feature = "unannounced") {
                prop_assert_eq!(&Record::App(record.clone()).encode(), &bytes);
                prop_assert_eq!(Record::decode(&bytes), Ok(Record::App(record)));
            } else {
                prop_assert_eq!(Record::decode(&bytes), Err(BadRecord));
                prop_assert!(Record::App(record).encode().is_empty());
            }
        }

        /// A stored app's record as format 8 laid it out (its last use last) reads as the same
        /// record, and its view reads the same last use.
        #[cfg(feature = "unannounced")]
        #[test]
        fn app_records_of_format_8_read_as_written(record in app()) {
            let current = Record::App(record.clone()).encode();
            let mut format_8 = vec![8, APP_TAG];
            format_8.extend_from_slice(&postcard::to_allocvec(&(
                &record.app,
                &record.provenance,
                record.used_at,
            )).unwrap_or_default());
            prop_assert_eq!(Record::decode(&format_8), Ok(Record::App(record.clone())));
            let upgraded = Record::upgraded(&format_8)
                .ok_or_else(|| TestCaseError::fail("format 8 not upgraded"))?;
            prop_assert_eq!(&upgraded[..], &current[..]);
            prop_assert_eq!(AppView::read(&upgraded).map(|v| v.used_at), Some(record.used_at));
        }

        #[test]
        fn views_match_decoding(record in record(), at in any::<usize>(), value in any::<u8>(), how in any::<u8>()) {
            let bytes = record.encode();
            agrees(&bytes, &record)?;
            let damaged = damaged(bytes, at, value, how);
            if let Ok(decoded) = Record::decode(&damaged) {
                // Views read a record as the store's reader hands it on: upgraded to the
                // current format (a damaged first byte can name an older one).
                let current = Record::upgraded(&damaged)
                    .ok_or_else(|| TestCaseError::fail("decoded, yet of no known format"))?;
                agrees(&current, &decoded)?;
            }
        }
    }
}
