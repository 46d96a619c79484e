//! The wire layer: parsing what arrives (query strings, form bodies, Authorization headers) and
//! writing what leaves (RFC 6749 / 6750 responses, redirects). No protocol decisions here.

pub(crate) mod bearer;
pub(crate) mod client_auth;
pub(crate) mod form;
pub(crate) mod redirect;
pub(crate) mod response;
