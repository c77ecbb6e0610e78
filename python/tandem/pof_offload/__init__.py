"""OVS-POF-TC as a running system on the emulator (OVS-POF-TC §III–IV): a kernel
path and an sNIC hardware path executing POF flow tables, a decision module, an
offload revalidator, and the per-path time model of §IV/eq. 1. Docs: docs/pof-offload.md."""
