//! The registry's tests: the signed catalog's attack table with keys made here and a fixed
//! clock, Reef served on loopback, publishing.

mod publish;
mod reef;
mod repo;
mod tuf;
