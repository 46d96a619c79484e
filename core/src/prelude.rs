//! What std's prelude gives a module, taken from `alloc` (the crate is `no_std`): every module
//! that allocates imports it, `use crate::prelude::*;`.

pub(crate) use alloc::borrow::ToOwned;
pub(crate) use alloc::boxed::Box;
pub(crate) use alloc::string::{String, ToString};
pub(crate) use alloc::vec::Vec;
pub(crate) use alloc::{format, vec};
