//! Scopes: scope tokens (RFC 6749 §3.3), sets of them, and the legacy access types that map
//! onto them. The reference profile holds its scopes to SPEC.md's dotted `<area>.<permission>`
//! form ([`Scope::is_dotted`]); the standards profile takes any scope token (`mcp:tools`) and
//! reserves [`OFFLINE_ACCESS`].

use crate::prelude::*;
use alloc::sync::Arc;
use core::fmt;
use serde::de::{SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize};

use crate::ids::InvalidId;

/// One scope, such as `account_info.read`, `files.content.write` or `mcp:tools`.
///
/// A scope token of RFC 6749 §3.3 (visible ASCII but `"` and `\\`), at most 128 characters.
/// The reference profile takes only the [dotted](Scope::is_dotted) form.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scope(Arc<str>);

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = crate::ids::text(d)?;
        Scope::check(&text).map_err(serde::de::Error::custom)?;
        Ok(Scope(Arc::from(text.as_ref())))
    }
}

impl Scope {
    /// Parses one scope token.
    ///
    /// ```
    /// # use edgegrant::Scope;
    /// assert!(Scope::new("files.content.read").is_ok());
    /// assert!(Scope::new("mcp:tools").is_ok());
    /// assert!(Scope::new("two words").is_err());
    /// assert!(Scope::new("").is_err());
    /// ```
    pub fn new(value: impl Into<String>) -> Result<Self, InvalidId> {
        let value = value.into();
        Scope::check(&value)?;
        Ok(Scope(value.into()))
    }

    pub(crate) fn check(value: &str) -> Result<(), InvalidId> {
        let invalid = |reason| InvalidId {
            kind: "scope",
            reason,
        };
        if value.is_empty() || value.len() > 128 {
            return Err(invalid("must be 1-128 characters"));
        }
        // scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
        if !value
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
        {
            return Err(invalid(
                "must be visible ASCII without spaces, quotes or backslashes (RFC 6749 §3.3)",
            ));
        }
        Ok(())
    }

    /// Whether `name` has SPEC.md's form, the only one the reference profile takes: two or more
    /// dot-separated segments of `a–z 0–9 _`, at most 64 characters.
    ///
    /// ```
    /// # use edgegrant::Scope;
    /// assert!(Scope::is_dotted("files.content.read"));
    /// assert!(!Scope::is_dotted("files"));
    /// assert!(!Scope::is_dotted("Files.Read"));
    /// assert!(!Scope::is_dotted("mcp:tools"));
    /// ```
    pub fn is_dotted(name: &str) -> bool {
        // One pass: segments of a-z 0-9 _, none empty, at least two.
        let (mut segments, mut segment_len) = (1, 0);
        for b in name.bytes() {
            match b {
                b'.' if segment_len > 0 => (segments, segment_len) = (segments + 1, 0),
                b'a'..=b'z' | b'0'..=b'9' | b'_' => segment_len += 1,
                _ => return false,
            }
        }
        name.len() <= 64 && segments >= 2 && segment_len > 0
    }

    /// The scope as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scope({})", self.0)
    }
}

/// A set of scopes, held as its canonical text: sorted, deduplicated, separated by one space.
///
/// One shared string, not a collection of scopes: sets hold a handful of scopes and are read
/// (checked, copied into records, written out) far more often than built, and a record's set
/// decodes with one allocation whatever its size. Stored and serialized as a list of scopes.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct ScopeSet(Arc<str>);

impl Serialize for ScopeSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // With its length first: postcard writes it before the elements.
        let mut seq = s.serialize_seq(Some(self.iter().count()))?;
        for name in self.iter() {
            seq.serialize_element(name)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for ScopeSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// One scope's text, borrowed from the input where the format allows.
        struct Name<'de>(alloc::borrow::Cow<'de, str>);
        impl<'de> Deserialize<'de> for Name<'de> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                crate::ids::text(d).map(Name)
            }
        }
        struct Names;
        impl<'de> Visitor<'de> for Names {
            type Value = ScopeSet;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of scopes")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ScopeSet, A::Error> {
                let mut set = Joined::with_room(seq.size_hint().unwrap_or(1));
                while let Some(Name(name)) = seq.next_element()? {
                    Scope::check(&name).map_err(serde::de::Error::custom)?;
                    set.push(&name);
                }
                Ok(set.finish())
            }
        }
        d.deserialize_seq(Names)
    }
}

/// A stored set's names joined as they come: stored sets are canonical already, so they are
/// sorted only when they were not.
pub(crate) struct Joined {
    text: String,
    canonical: bool,
    last: usize,
}

impl Joined {
    /// Room for `names` typical names up front: growing the text costs more than decoding.
    pub fn with_room(names: usize) -> Joined {
        Joined {
            text: String::with_capacity(names.min(64) * 24),
            canonical: true,
            last: 0,
        }
    }

    /// Adds one name (checked already).
    pub fn push(&mut self, name: &str) {
        if !self.text.is_empty() {
            self.canonical &= self.text.get(self.last..).unwrap_or_default() < name;
            self.text.push(' ');
        }
        self.last = self.text.len();
        self.text.push_str(name);
    }

    /// The set of the names pushed.
    pub fn finish(self) -> ScopeSet {
        if self.canonical {
            ScopeSet(self.text.into())
        } else {
            ScopeSet::from_names(self.text.split(' '))
        }
    }
}

impl ScopeSet {
    /// Parses the space-separated form of RFC 6749 §3.3 (runs of spaces are tolerated).
    /// Fails on an invalid scope or when no scope is named at all.
    ///
    /// ```
    /// # use edgegrant::ScopeSet;
    /// let set = ScopeSet::parse("files.content.read  account_info.read").unwrap();
    /// assert_eq!(set.to_string(), "account_info.read files.content.read");
    /// assert!(ScopeSet::parse("  ").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, InvalidId> {
        let names = text.split(' ').filter(|s| !s.is_empty());
        for name in names.clone() {
            Scope::check(name)?;
        }
        let set = ScopeSet::from_names(names);
        if set.is_empty() {
            return Err(InvalidId {
                kind: "scope",
                reason: "no scope named",
            });
        }
        Ok(set)
    }

    /// Builds a set from scopes already validated (sorted and deduplicated here).
    pub fn from_scopes(scopes: impl IntoIterator<Item = Scope>) -> Self {
        let scopes: Vec<Scope> = scopes.into_iter().collect();
        ScopeSet::from_names(scopes.iter().map(Scope::as_str))
    }

    /// Sorts, deduplicates and joins names already checked.
    fn from_names<'a>(names: impl Iterator<Item = &'a str>) -> Self {
        let mut names: Vec<&str> = names.collect();
        names.sort_unstable();
        names.dedup();
        ScopeSet(names.join(" ").into())
    }

    /// Whether `scope` is in the set.
    pub fn contains(&self, scope: &Scope) -> bool {
        self.iter().any(|name| name == scope.as_str())
    }

    /// Whether every scope of `self` is in `other`.
    pub fn is_subset(&self, other: &ScopeSet) -> bool {
        self.iter()
            .all(|name| other.iter().any(|theirs| theirs == name))
    }

    /// The union of both sets.
    pub fn union(&self, other: &ScopeSet) -> ScopeSet {
        if self.is_subset(other) {
            return other.clone();
        }
        ScopeSet::from_names(self.iter().chain(other.iter()))
    }

    /// The set without `name`.
    pub(crate) fn without(&self, name: &str) -> ScopeSet {
        ScopeSet::from_names(self.iter().filter(|own| *own != name))
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The scopes in canonical (sorted) order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + Clone {
        self.0.split(' ').filter(|name| !name.is_empty())
    }

    /// The canonical text: sorted scopes separated by one space (RFC 6749 §3.3).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ScopeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ScopeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ScopeSet({self})")
    }
}

/// The scope that asks for a refresh token, in the standards profile (OpenID Connect Core
/// §11, the name MCP clients use): any app may ask for it, none is configured with it, and no
/// API endpoint requires it. It stays in the granted set, so the token response names it.
pub const OFFLINE_ACCESS: &str = "offline_access";

/// The user scopes SPEC.md names. A migrated user-API app is pre-selected all of them.
pub const USER_SCOPES: [&str; 10] = [
    "account_info.read",
    "contacts.write",
    "file_requests.read",
    "file_requests.write",
    "files.content.read",
    "files.content.write",
    "files.metadata.read",
    "files.metadata.write",
    "sharing.read",
    "sharing.write",
];

/// The scopes a business-API app with team auditing is pre-selected on migration (SPEC.md).
pub const TEAM_AUDITING_SCOPES: [&str; 4] = [
    "team_info.read",
    "members.read",
    "groups.read",
    "events.read",
];

/// The access type of a legacy (pre-scopes) app.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LegacyAccess {
    /// User API, restricted to the app's folder.
    AppFolder,
    /// User API, the whole account.
    FullDropbox,
    /// Business API: read team information.
    TeamInformation,
    /// Business API: team auditing.
    TeamAuditing,
}

impl LegacyAccess {
    const ALL: [LegacyAccess; 4] = [
        LegacyAccess::AppFolder,
        LegacyAccess::FullDropbox,
        LegacyAccess::TeamInformation,
        LegacyAccess::TeamAuditing,
    ];

    /// Its name in the configuration document.
    ///
    /// ```
    /// # use edgegrant::LegacyAccess;
    /// assert_eq!(LegacyAccess::from_name("app_folder"), Some(LegacyAccess::AppFolder));
    /// assert_eq!(LegacyAccess::TeamAuditing.name(), "team_auditing");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            LegacyAccess::AppFolder => "app_folder",
            LegacyAccess::FullDropbox => "full_dropbox",
            LegacyAccess::TeamInformation => "team_information",
            LegacyAccess::TeamAuditing => "team_auditing",
        }
    }

    /// The access type named `name` in the configuration document, if one is.
    pub fn from_name(name: &str) -> Option<LegacyAccess> {
        Self::ALL.into_iter().find(|access| access.name() == name)
    }

    /// The scopes this access type stands for: what a legacy app's tokens carry, and what a
    /// migration pre-selects (SPEC.md, "App kinds").
    pub fn scopes(self) -> ScopeSet {
        let names: &[&str] = match self {
            LegacyAccess::AppFolder | LegacyAccess::FullDropbox => &USER_SCOPES,
            LegacyAccess::TeamInformation => &["team_info.read"],
            LegacyAccess::TeamAuditing => &TEAM_AUDITING_SCOPES,
        };
        ScopeSet::from_scopes(names.iter().filter_map(|n| Scope::new(*n).ok()))
    }
}
