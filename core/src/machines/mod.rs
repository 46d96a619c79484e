//! The state machines, as pure functions of a record, the time and the policy, returning the
//! next record or a [`Refusal`](crate::Refusal). They load nothing and write nothing: the
//! endpoints load the records around them and turn their results into writes.
//!
//! - [`code`]: an authorization code is issued, then redeemed once; expiry follows from time.
//! - [`access_token`]: minted active, ends by expiry or by its grant's end.
//! - [`refresh_token`]: minted with an offline grant, reusable, ends only with its grant; a
//!   refresh decides the grant it leaves behind (idle deadline, rotation, a closed retry
//!   window) and the purge times that go with it ([`refresh_token::refreshed`]).
//! - [`grant`]: the family of tokens one consent produced; one revocation ends them all.
//! - [`attempts`]: failed credential checks counted per attempter in a window; at the limit,
//!   every check is refused until the window ends.
//! - [`link`]: the standing link of a user and an app; an unlink ends every grant of the pair in
//!   one write, by bumping its epoch.
//! - [`ledger`]: an account's generation, moved on by every end in its partition: a token minted
//!   at the generation still standing needs no other record to be checked.

pub(crate) mod access_token;
pub(crate) mod attempts;
pub(crate) mod code;
pub(crate) mod grant;
pub(crate) mod ledger;
pub(crate) mod link;
pub(crate) mod refresh_token;
