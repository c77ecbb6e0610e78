//! dp-nf — network functions that run inside the emulator. One NF per file.
