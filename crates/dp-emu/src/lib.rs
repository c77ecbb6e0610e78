//! dp-emu — the timed emulator: devices, cores, PCIe links, accelerators and a
//! deterministic discrete-event clock. No Python here.
