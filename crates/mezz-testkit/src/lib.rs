//! Test kit (being written).
