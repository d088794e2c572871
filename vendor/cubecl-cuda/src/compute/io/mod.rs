pub(crate) mod controller;
