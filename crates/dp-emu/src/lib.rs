//! dp-emu — the timed emulator: devices, cores, PCIe links, accelerators,
//! Ethernet ports, traffic sources and sinks, driven by a deterministic
//! discrete-event clock. Functional work (switching, NFs) runs on real frames;
//! only time is modelled. No Python here.

mod build;
pub mod clock;
pub mod drr;
pub mod esp_gen;
pub mod emulator;
pub mod histogram;
pub mod isolation;
pub mod metrics;
pub mod migration;
pub mod openflow;
pub mod pcap;
pub mod pcie;
pub mod server;
pub mod switch;
pub mod topology;
pub mod traffic;

pub use clock::{Ps, PS_PER_NS, PS_PER_S, PS_PER_US};
pub use emulator::{Emulator, PacketInEvent};
pub use migration::MigrationCost;
pub use openflow::OpenFlowSwitch;
pub use switch::{PortMapSwitch, SwitchFate, SwitchLogic};
pub use topology::{AccelSpec, DeviceSpec, EthSpec, PcieSpec, Target};
pub use esp_gen::{EspSpec, EspTunnel, InnerApp, InnerProto};
pub use traffic::{Arrival, FlowSizeDist, FrameTemplate, Packet, SizeDist, SourceSpec};
