# disaggsim: set-up, build, the main job and the tests.
# `make quickstart` and `make test` each do all set-up on a fresh Debian bookworm machine
# (apt packages, the Python venv, the C++ build against Debian's ns-3.37).

SHELL := /bin/bash
VENV := .venv
BUILD := build
APT_PACKAGES := ns3 libns3-dev libgsl-dev libsqlite3-dev libxml2-dev cmake ninja-build g++ \
	pkg-config tcpdump blktrace memcached iproute2 kmod util-linux e2fsprogs procps psmisc \
	slurmctld slurmd slurm-client munge fuse3 libfuse3-dev \
	qemu-system-x86 busybox-static dwarves rdma-core ibverbs-providers libibverbs-dev \
	librdmacm-dev cpio xz-utils \
	postgresql openjdk-17-jre-headless libjemalloc2 robin-map-dev curl ca-certificates
JOBS ?= 2
# The Timely dataflow application (testbed/apps/timely_pagerank, Rust): the cargo on PATH
# (rustup's), else Debian's (package cargo, rustc 1.63; installed by the timely target).
TIMELY := testbed/apps/timely_pagerank
CARGO ?= $(shell command -v cargo 2>/dev/null || echo /usr/bin/cargo)

.PHONY: all deps venv build timely hadoop-jars quickstart test test-guest lint clean

all: build

# System packages (Debian's ns-3 3.37 and the trace tools). Skips apt when all are present.
deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $$missing; \
	fi

$(VENV)/.stamp: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev,collect]'
	touch $@

venv: $(VENV)/.stamp

build: deps timely hadoop-jars
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	cmake -S swapdev -B $(BUILD)/swapdev -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD)/swapdev -j $(JOBS)

# The Hadoop MapReduce jars (testbed/apps/hadoop_mr.py) from Maven Central into build/hadoop,
# each checked against the SHA-256 pinned in testbed/apps/hadoop_jars.sha256.
HADOOP_JARS := testbed/apps/hadoop_jars.sha256
hadoop-jars: $(BUILD)/hadoop/.stamp
$(BUILD)/hadoop/.stamp: $(HADOOP_JARS) | deps
	mkdir -p $(BUILD)/hadoop
	while read -r sum path; do \
	  f=$(BUILD)/hadoop/$$(basename $$path); \
	  echo "$$sum  $$f" | sha256sum -c --status 2>/dev/null && continue; \
	  curl -fsSL --retry 3 -o $$f.part https://repo1.maven.org/maven2/$$path && \
	  echo "$$sum  $$f.part" | sha256sum -c --quiet && mv $$f.part $$f || exit 1; \
	done < $(HADOOP_JARS)
	touch $@

# build/timely/release/timely-pagerank, from the committed Cargo.lock (crates.io).
timely:
	@if [ ! -x "$(CARGO)" ]; then \
	  echo "installing: cargo (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends cargo; \
	fi
	CARGO_TARGET_DIR=$(CURDIR)/$(BUILD)/timely $(CARGO) build --release --locked -j $(JOBS) \
	  --manifest-path $(TIMELY)/Cargo.toml

# The main job: convert the bundled real traces, run the quickstart campaign, print the
# summary table and write the plots (results/quickstart/).
quickstart: deps venv build
	$(VENV)/bin/disaggsim run configs/quickstart.toml

lint: venv
	$(VENV)/bin/ruff check disaggsim traces testbed sim analysis bench tests swapdev notebooks
	$(VENV)/bin/ruff format --check disaggsim traces testbed sim analysis bench tests swapdev notebooks
	$(VENV)/bin/mypy

# The tests: C++ ns-3 test suites (ctest), Python tests (pytest), the notebooks (nbmake).
test: deps venv build lint
	ctest --test-dir $(BUILD) --output-on-failure
	ctest --test-dir $(BUILD)/swapdev --output-on-failure
	$(VENV)/bin/jupytext --to ipynb notebooks/*.py
	$(VENV)/bin/pytest -q --durations=25 --nbmake notebooks/*.ipynb tests --ignore=tests/test_kmod_guest.py
	$(MAKE) test-guest

# The rmem kernel driver (swapdev/kmod) in one QEMU TCG boot of Debian's 6.12 kernel with
# Soft-RoCE; the kernel packages are downloaded once into build/kmod-guest (about 2 min).
test-guest: deps venv build
	$(VENV)/bin/pytest -q tests/test_kmod_guest.py

clean:
	rm -rf $(BUILD) results
