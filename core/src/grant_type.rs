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
}

impl GrantType {
    /// Every grant type, in the order the metadata lists them.
    pub const ALL: [GrantType; 3] = [
        GrantType::AuthorizationCode,
        GrantType::RefreshToken,
        GrantType::ClientCredentials,
    ];

    /// Its `grant_type` value.
    pub const fn name(self) -> &'static str {
        match self {
            GrantType::AuthorizationCode => "authorization_code",
            GrantType::RefreshToken => "refresh_token",
            GrantType::ClientCredentials => "client_credentials",
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
        }
    }
}
