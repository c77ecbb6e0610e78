//! Placement searches too branchy for Python: pure functions over plain
//! numbers, wrapped for Python by dp-python.

pub mod fill;
