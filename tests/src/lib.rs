//! Simulation harness (in progress).
