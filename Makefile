# Tandem — the two commands in the README (`make demo`, `make test`) do all set-up.
# Everything is bootstrapped here: the .venv, the Rust extension (maturin, via
# `pip install -e .`), and Open vSwitch for the oracle tests.

SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
PIP   := $(VENV)/bin/pip
STAMP := $(VENV)/.tandem-installed
RUST_SRC := $(shell find crates -name '*.rs' -o -name Cargo.toml 2>/dev/null) Cargo.toml
SUDO  := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: demo test bench install rust-test py-test ovs controllers bench-deps check-toolchain clean

# The main job on the embedded default: the UNO SD-WAN chain (SECGW -> L7FW at 4 Gbps)
# summarized, then emulated twice with rule-driven switches - first where the UNO engine
# places the NFs (the decision is printed and explained: NF -> device, host vs sNIC cores,
# PCIe load), then with both NFs on the host CPU - so the host-cores-vs-sNIC-cores trade
# of UNO §5 shows side by side.
demo: install
	$(VENV)/bin/tandem demo --story --out results/demo

test: install ovs controllers rust-test py-test

install: $(STAMP)

check-toolchain:
	@command -v cargo >/dev/null || { echo "error: cargo (Rust stable >= 1.89, for the AVX-512 intrinsics) is required: install it with rustup" >&2; exit 1; }
	@command -v python3 >/dev/null || { echo "error: python3 (3.11) is required" >&2; exit 1; }

$(PY):
	@python3 -m venv $(VENV) 2>/dev/null || { \
	  echo "python3 -m venv failed; installing python3-venv"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq python3-venv && python3 -m venv $(VENV); }
	$(PIP) install -q --upgrade pip

# The stamp takes the time the build *started*, so a source edited during a build
# is still newer than the stamp and triggers the next rebuild.
$(STAMP): $(PY) pyproject.toml $(RUST_SRC) | check-toolchain
	@touch $(STAMP).new
	$(PIP) install -q -e '.[test,plot]'
	@mv $(STAMP).new $(STAMP)

# Open vSwitch is the oracle for OpenFlow semantics; tests start their own private
# ovs-vswitchd in a temp dir, so only the binaries are needed (no service).
ovs:
	@if ! command -v ovs-vswitchd >/dev/null || ! command -v ovsdb-server >/dev/null; then \
	  echo "installing openvswitch-switch"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq openvswitch-switch iproute2 >/dev/null; \
	fi
	@ovs-vswitchd --version | head -1

# The SDN controllers the endpoint tests drive (os-ken 3.1.0 + Faucet 1.10.12) live in
# their own venv under .venv/controllers: Faucet pins exact versions Tandem must not inherit.
controllers: $(PY)
	@scripts/setup-controllers.sh >/dev/null

# DPDK's dpdk-test-acl is the side-by-side baseline of the classifier benchmark.
bench-deps:
	@if ! command -v dpdk-test-acl >/dev/null; then \
	  echo "installing dpdk-dev (dpdk-test-acl)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq dpdk-dev >/dev/null; \
	fi

# Debian's chromium (headless) renders the reproduction report for benches/reproduce_report.py.
.PHONY: browser
browser:
	@if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then \
	  echo "installing chromium (headless check of the reproduction report)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; \
	fi

rust-test: check-toolchain
	cargo test --workspace --quiet

py-test: install
	$(PY) -m pytest -q

bench: install ovs controllers bench-deps browser
	$(VENV)/bin/tandem bench all

clean:
	rm -rf target $(VENV) .pytest_cache
