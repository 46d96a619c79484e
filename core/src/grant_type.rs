//! Grant types: the one table of what a client can present at the token endpoint (RFC 6749
//! §4.1.3, §6 and the extension grants of §4.5).
//!
//! Everything that names a grant type reads it from here: the token endpoint dispatches on
//! [`GrantType::from_name`], routing finds a token request's partition by
//! [`GrantType::routed_by`], the metadata's `grant_types_supported` and a client's
//! `grant_types` are written from [`GrantType::name`], and the PKCE client machine sends those
//! names. Which of them a deployment offers, and to which clients, is the configuration's
//! ([`Config::offers`](crate::Config::offers)).

/// A grant type of the token endpoint.
///
/// ```
/// # use edgegrant::GrantType;
/// assert_eq!(GrantType::from_name("refresh_token"), Some(GrantType::RefreshToken));
/// assert_eq!(GrantType::AuthorizationCode.name(), "authorization_code");
/// assert_eq!(GrantType::from_name("password"), None);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GrantType {
    /// `authorization_code` (RFC 6749 §4.1.3): a person's consent, redeemed once.
    AuthorizationCode,
    /// `refresh_token` (RFC 6749 §6): a new access token from a grant that has one.
    RefreshToken,
    /// `client_credentials` (RFC 6749 §4.4): a client's token for itself, no person involved.
    ClientCredentials,
    /// `urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693): an access token of this
    /// server exchanged for a narrower one, by the client that holds it.
    TokenExchange,
    /// `urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523 §2.1) with an Identity Assertion
    /// JWT Authorization Grant (ID-JAG): a trusted identity provider's signed word that one of
    /// its users may have this client act for them, with no consent page here.
    JwtBearer,
}

/// Where a token request of a grant type lives: the request parameter holding a credential of
/// this server, whose sealed route names the partition (see
/// [`partition_of`](crate::partition_of)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RoutedBy {
    /// The credential in this parameter.
    Credential(&'static str),
    /// The authenticating client: the request lives in the client's own partition.
    Client,
    /// The identity assertion in this parameter: the request lives in the partition of the
    /// account its provider's subject is mapped to.
    Assertion(&'static str),
}

impl GrantType {
    /// Every grant type, in the order the metadata lists them.
    pub const ALL: [GrantType; 5] = [
        GrantType::AuthorizationCode,
        GrantType::RefreshToken,
        GrantType::ClientCredentials,
        GrantType::TokenExchange,
        GrantType::JwtBearer,
    ];

    /// Its `grant_type` value.
    pub const fn name(self) -> &'static str {
        match self {
            GrantType::AuthorizationCode => "authorization_code",
            GrantType::RefreshToken => "refresh_token",
            GrantType::ClientCredentials => "client_credentials",
            GrantType::TokenExchange => "urn:ietf:params:oauth:grant-type:token-exchange",
            GrantType::JwtBearer => "urn:ietf:params:oauth:grant-type:jwt-bearer",
        }
    }

    /// The grant type with this `grant_type` value, if the core has it.
    pub fn from_name(name: &str) -> Option<GrantType> {
        GrantType::ALL
            .into_iter()
            .find(|grant| grant.name() == name)
    }

    /// Where a token request of this grant type is routed from.
    pub(crate) const fn routed_by(self) -> RoutedBy {
        match self {
            GrantType::AuthorizationCode => RoutedBy::Credential("code"),
            GrantType::RefreshToken => RoutedBy::Credential("refresh_token"),
            GrantType::ClientCredentials => RoutedBy::Client,
            GrantType::TokenExchange => RoutedBy::Credential("subject_token"),
            GrantType::JwtBearer => RoutedBy::Assertion("assertion"),
        }
    }
}

/// The grant types a client that arrived unannounced registered or its metadata document lists,
/// as this server keeps them (RFC 7591 §2 `grant_types`): those it has for such a client, the
/// rest left out.
///
/// ```
/// # use edgegrant::{GrantType, GrantTypes};
/// let machine = GrantTypes::of(&[GrantType::ClientCredentials]);
/// assert!(machine.contains(GrantType::ClientCredentials));
/// assert!(!machine.contains(GrantType::AuthorizationCode));
/// assert_eq!(GrantTypes::default(), GrantTypes::of(&[GrantType::AuthorizationCode]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrantTypes {
    code: bool,
    refresh: bool,
    client_credentials: bool,
}

impl Default for GrantTypes {
    /// The code flow alone: RFC 7591 §2's default.
    fn default() -> GrantTypes {
        GrantTypes::of(&[GrantType::AuthorizationCode])
    }
}

impl GrantTypes {
    /// The set of `grants`.
    pub fn of(grants: &[GrantType]) -> GrantTypes {
        GrantTypes {
            code: grants.contains(&GrantType::AuthorizationCode),
            refresh: grants.contains(&GrantType::RefreshToken),
            client_credentials: grants.contains(&GrantType::ClientCredentials),
        }
    }

    /// Whether `grant` is among them.
    pub fn contains(self, grant: GrantType) -> bool {
        match grant {
            GrantType::AuthorizationCode => self.code,
            GrantType::RefreshToken => self.refresh,
            GrantType::ClientCredentials => self.client_credentials,
            // Not grants a client registers: whoever holds a token may exchange it, and the
            // identity provider names the client its assertion is for.
            GrantType::TokenExchange | GrantType::JwtBearer => false,
        }
    }

    /// Their names, in the table's order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        GrantType::ALL
            .into_iter()
            .filter(move |grant| self.contains(*grant))
            .map(GrantType::name)
    }
}

// Stored as one byte of flags, laid out so that the byte records of formats up to 11 hold — a
// `bool`, whether the client listed `refresh_token` — reads as the same set: bit 0 the refresh
// token, bit 1 client credentials, bit 2 set when the code flow is *not* among them.
const REFRESH: u8 = 1;
const CLIENT_CREDENTIALS: u8 = 2;
const NO_CODE: u8 = 4;

impl serde::Serialize for GrantTypes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut flags = 0;
        if self.refresh {
            flags |= REFRESH;
        }
        if self.client_credentials {
            flags |= CLIENT_CREDENTIALS;
        }
        if !self.code {
            flags |= NO_CODE;
        }
        serializer.serialize_u8(flags)
    }
}

impl<'de> serde::Deserialize<'de> for GrantTypes {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<GrantTypes, D::Error> {
        let flags = u8::deserialize(deserializer)?;
        if flags & !(REFRESH | CLIENT_CREDENTIALS | NO_CODE) != 0 {
            return Err(serde::de::Error::custom("unknown grant type flags"));
        }
        Ok(GrantTypes {
            code: flags & NO_CODE == 0,
            refresh: flags & REFRESH != 0,
            client_credentials: flags & CLIENT_CREDENTIALS != 0,
        })
    }
}
