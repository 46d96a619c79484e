//! One module per endpoint family: they read the wire, load records, run the machines and
//! answer with a [`Step`](crate::Step).

pub(crate) mod api;
pub(crate) mod authorize;
pub(crate) mod token;
pub(crate) mod unlink;
