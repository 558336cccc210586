# The two commands a user needs: `make demo` and `make test`. Everything else is a step of those.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

# Debian packages the lab and the benchmarks need (the tools run natively and, bit-identical,
# inside the containers built from them).
APT_PACKAGES := docker.io iperf3 sockperf nginx openssh-server openssh-client iproute2 \
	iptables kmod procps psmisc util-linux iputils-ping python3-venv ca-certificates golang-go \
	podman slirp4netns passt rootlesskit uidmap fuse-overlayfs sysbench fio wrk haproxy curl \
	linux-perf crun runsc sudo

# The Debian packages of the list $(1) that are missing, installed in one apt-get run.
define apt_ensure
	@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null; \
	fi
endef

.PHONY: help setup lock demo test test-fast test-unit lint lab-up lab-down lab-status jupyter \
	clean-data bench kubernetes kubernetes-up kubernetes-smoke kubernetes-down lab-kubernetes-up \
	vm-probe

help: ## this list: every target with what it does
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | \
	  sed -E 's/^([a-zA-Z_-]+):.*## (.*)$$/\1\t\2/' | awk -F'\t' '{printf "  %-18s %s\n", $$1, $$2}'

setup: .make/apt.stamp .make/venv.stamp .make/bin/co-loadgen .make/bin/sockperf ## install everything (idempotent)

.make/apt.stamp: Makefile
	$(call apt_ensure,$(APT_PACKAGES))
	@# haproxy runs only inside the lb benchmark's containers: the packaged service must not run
	@if command -v systemctl >/dev/null && systemctl is-enabled --quiet haproxy 2>/dev/null; then \
	  systemctl disable --now haproxy >/dev/null 2>&1 || systemctl disable haproxy >/dev/null; \
	fi; if [ -f /run/haproxy.pid ]; then kill "$$(cat /run/haproxy.pid)" 2>/dev/null || true; fi
	@mkdir -p .make && touch $@

# The Python stack is requirements/lock.txt (every package pinned, with hashes; `make lock`
# writes it from pyproject.toml): installed with hashes checked and no resolver, then the project
# itself, editable, built by the lock's setuptools. What the lock does not name is removed, so the
# venv is exactly the lock (tools/lockfile.py check). Only pip and PyPI are needed here.
# The git filter strips outputs from the source notebooks on commit (.gitattributes scopes it to
# notebooks/: the fixture notebooks under tests/notebooks keep theirs); --keep-id keeps the cells'
# ids, so a commit changes only what was edited. `nbstripout --install` has no --keep-id and would
# add `*.ipynb` for the whole tree, hence the four settings it writes, written here.
LOCK := requirements/lock.txt
NBSTRIPOUT := "$(CURDIR)/$(PY)" -m nbstripout --keep-id
.make/venv.stamp: $(LOCK) pyproject.toml tools/lockfile.py
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --require-hashes --no-deps -r $(LOCK)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	@extra=$$($(PY) tools/lockfile.py extra); if [ -n "$$extra" ]; then \
	  echo "removing what the lock does not name: $$extra"; $(PY) -m pip uninstall -q -y $$extra; \
	fi
	$(PY) tools/lockfile.py check
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
	  git config filter.nbstripout.clean '$(NBSTRIPOUT)' && \
	  git config filter.nbstripout.smudge cat && \
	  git config filter.nbstripout.required true && \
	  git config diff.ipynb.textconv '$(NBSTRIPOUT) -t'; \
	fi
	@mkdir -p .make && touch $@

# uv resolves for every platform and Python the project allows (--universal: markers where they
# differ) and writes every file's hash; pip-tools resolves for this interpreter only. The lock's
# current pins are kept where pyproject.toml still allows them; `make lock UPGRADE=1` takes the
# newest versions allowed. uv is only needed here, in its own venv: installing uses pip alone.
UV_VERSION := 0.13.9
UV_VENV := .make/uv-$(UV_VERSION)
UV := $(UV_VENV)/bin/uv
$(UV):
	python3 -m venv $(UV_VENV)
	$(UV_VENV)/bin/pip install -q uv==$(UV_VERSION)

lock: $(UV) ## re-resolve requirements/lock.txt and environment.yml from pyproject.toml
	UV_CUSTOM_COMPILE_COMMAND="make lock" $(UV) pip compile pyproject.toml requirements/bootstrap.in \
	  --extra dev --extra notebook --extra remote --universal --python-version 3.11 --generate-hashes \
	  $(if $(UPGRADE),--upgrade) -o $(LOCK) >/dev/null
	python3 tools/lockfile.py environment

# The open-loop HTTP load generator: standard library only, static, so it also runs inside the
# tool image. GOTOOLCHAIN=local and GOPROXY=off: nothing is downloaded.
LOADGEN_SRC := $(filter-out %_test.go,$(wildcard tools/loadgen/*.go)) tools/loadgen/go.mod
.make/bin/co-loadgen: $(LOADGEN_SRC) | .make/apt.stamp
	@mkdir -p $(@D)
	cd tools/loadgen && CGO_ENABLED=0 GOPROXY=off GOTOOLCHAIN=local \
	  GOCACHE=$(CURDIR)/.make/go-cache go build -trimpath -o $(CURDIR)/$@ .

# The latency benchmark's sockperf: Debian's sockperf 3.7 binary less the client's fixed 2 s
# start-up pause (tools/sockperf/no_startup_pause.py; input and result checked by sha256).
# Shipped to every host and into the tool images, like co-loadgen. (The wildcard: on a fresh
# machine Debian's sockperf comes with .make/apt.stamp.)
.make/bin/sockperf: tools/sockperf/no_startup_pause.py $(wildcard /usr/bin/sockperf) | .make/apt.stamp
	python3 tools/sockperf/no_startup_pause.py /usr/bin/sockperf $@

# The demo profile by default (params.yaml), about 28 minutes on 2 cores from a fresh clone.
# pipeline.demo runs each benchmark's collection and then its summary before the next benchmark
# (a first figure within minutes), prints each figure and table as it appears, and ends with
# `dvc repro`.
demo: setup ## install, bring up the lab, run the pipeline on params.yaml's profile (demo)
	$(PY) -m pipeline.params
	$(PY) -m pipeline.stages --check
	$(PY) -m pipeline.lab up
	$(PY) -m pipeline.demo
	@echo
	@echo "Figures (svg, png):    $$(ls -d figures/*/ | tr '\n' ' ')"
	@echo "Tables (md, csv, tex): $$(ls reports/tables/*.md | tr '\n' ' ')"
	@echo "Article:               reports/article.md, reports/article.html   Verdicts: dvc metrics show"
	@echo "Executed notebooks:    reports/executed/   Raw data: data/raw/"

# The tests without the lab run on every core (pytest-xdist); the lab's run one at a time after
# them, on a quiet machine (they measure, and their fault tests watch for other load).
# Kubernetes is built (about 10 minutes the first time on 2 cores, then cached) between the two,
# so its lab tests run rather than skip.
test: setup ## the whole suite, as CI runs it (needs root: it brings the lab up and down)
	@status=0; \
	$(PY) -m pytest tests -m "not lab" -n auto --dist loadfile --durations=15 || status=1; \
	$(MAKE) --no-print-directory kubernetes || status=1; \
	$(PY) -m pytest tests -m lab --durations=25 || status=1; \
	exit $$status

test-fast: setup ## everything but the lab: parsers, statistics, notebooks on fixtures, layering
	$(PY) -m pytest tests -m "not lab" -n auto --dist loadfile

test-unit: test-fast ## the same as test-fast

lint: setup ## ruff on pipeline/, tests/, harness/ and tools/
	$(PY) -m ruff check pipeline tests harness tools

lab-up: setup ## bring the embedded lab up (idempotent)
	$(PY) -m pipeline.lab up

lab-down: setup ## remove everything lab-up made
	$(PY) -m pipeline.lab down

lab-status: setup ## the lab's health per component
	$(PY) -m pipeline.lab status

bench: setup ## the pipeline measuring itself: every harness/*.py, one summary
	$(PY) -m harness

jupyter: setup ## JupyterLab on the study with the project's kernel
	$(VENV)/bin/jupyter lab --allow-root --no-browser --ip 127.0.0.1 notebooks/

# What `make demo` collected and made, removed at once (no question asked: naming the target is
# the confirmation). DVC's cache keeps the copies `dvc repro` recorded: `dvc checkout` restores
# them. data/reference (committed) stays.
clean-data: ## remove data/raw, data/processed, reports/ and figures/ (no confirmation)
	rm -rf data/raw data/processed reports
	find figures -mindepth 1 ! -name .gitkeep -delete 2>/dev/null || true

# Kubernetes, built from the Go module proxy at the release in tools/kubernetes/VERSION (why that
# release: docs/kubernetes.md) into /var/cache/container-overhead-lab/kubernetes/<version>/, with
# Go 1.26 from /usr/local/go, at nice 19 and one package at a time: about 10 minutes on 2 cores
# the first time (about 5 GB of caches), then cached. `make test` runs it before the lab tests;
# `make demo` does not. The packages the single-node cluster uses; etcd runs only inside that
# cluster, never as the packaged service.
KUBERNETES_APT_PACKAGES := containerd runc containernetworking-plugins etcd-server busybox-static \
	openssl curl iptables
kubernetes: ## build (or find cached) kubelet, kube-apiserver, ... and the pause binary
	$(call apt_ensure,$(KUBERNETES_APT_PACKAGES))
	@if command -v systemctl >/dev/null && systemctl is-enabled --quiet etcd 2>/dev/null; then \
	  systemctl disable --now etcd >/dev/null 2>&1 || systemctl disable etcd >/dev/null; \
	fi
	@start=$$(date +%s); tools/kubernetes/build.sh || exit; \
	echo "make kubernetes: $$(( $$(date +%s) - start )) s"

kubernetes-up: kubernetes ## a single-node cluster in network namespace co-k8s
	tools/kubernetes/single-node.sh up

kubernetes-smoke: ## a pod from a local image answers, directly and through a Service
	tools/kubernetes/single-node.sh smoke

kubernetes-down: ## stop the single-node cluster, remove everything it made
	tools/kubernetes/single-node.sh down

lab-kubernetes-up: setup kubernetes ## the lab with a 3-node cluster (`make lab-down` removes both)
	$(PY) -m pipeline.lab up --kubernetes

# Whether this machine runs a KVM guest fit for measuring (docs/vm.md): boots Debian's kernel under
# qemu with KVM into a one-file initramfs and says how far it got. Up to a few minutes; not part
# of `make demo` or `make test`.
VM_APT_PACKAGES := qemu-system-x86 busybox-static bc
vm-probe: ## can a KVM guest boot here? (one line: ok, or why not)
	$(call apt_ensure,$(VM_APT_PACKAGES))
	tools/vm/probe.sh
