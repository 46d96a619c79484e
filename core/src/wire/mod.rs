//! The wire layer: reading what arrives (query strings, form bodies, Authorization headers) and
//! writing what leaves (redirect locations, HTML, JSON bodies). It knows HTTP and nothing of steps, records
//! or decisions; the endpoints decide and [`render`](crate::render) writes their answers.

pub(crate) mod bearer;
pub(crate) mod client_auth;
pub(crate) mod form;
pub(crate) mod html;
pub(crate) mod http;
pub(crate) mod json;
pub(crate) mod redirect;
pub(crate) mod uri;
