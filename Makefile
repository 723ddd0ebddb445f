# tiermap: `make demo` runs the main job on the embedded procedural default, `make test` runs the suite.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.tiermap-setup
# Label Studio pins Django, pyarrow<25, openai<2, ...: it gets its own venv; tiermap talks to it over HTTP only.
LS_VENV := .venv-ls
LS_VERSION := 1.23.2
LS_STAMP := $(LS_VENV)/.tiermap-ls-$(LS_VERSION)
APT_PKGS := libegl1 libegl-mesa0 libgl1-mesa-dri libgbm1 libgl1 libosmesa6 libusb-1.0-0 libgomp1 libvulkan1 mesa-vulkan-drivers git chromium chromium-driver
export DVC_NO_ANALYTICS := 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export PYOPENGL_PLATFORM := egl
export DVC_SITE_CACHE_DIR ?= $(CURDIR)/.tmp/dvc_site_cache

.PHONY: setup system-deps demo test test-fast bench clean-venv

setup: $(STAMP) $(LS_STAMP)

system-deps:
	@missing=$$(for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "apt-get install $$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get install -y -q $$missing >/dev/null || { $$SUDO apt-get update -q >/dev/null && $$SUDO apt-get install -y -q $$missing >/dev/null; }; \
	fi

$(STAMP): pyproject.toml constraints.txt Makefile | system-deps
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip wheel setuptools
	# CPU torch first, from the local wheel; the constraints keep every later install on it.
	$(BIN)/pip install -q torch==2.13.0
	# Everything: the core (what `tiermap eval` needs, i.e. `pip install tiermap`) plus the pipeline and embeddings extras.
	$(BIN)/pip install -q -c constraints.txt -e '.[all,test]'
	# PyPI's torchvision is CUDA-linked; this hook defines its missing op schemas before it imports.
	site=$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && \
	  cp tiermap/tvshim.py "$$site/tiermap_tvshim.py" && \
	  echo 'import tiermap_tvshim; tiermap_tvshim.install()' > "$$site/tiermap-tvshim.pth"
	$(BIN)/python -c 'import open_clip, sentence_transformers, open3d, dvc, great_expectations, tiermap' 
	@touch $(STAMP)

$(LS_STAMP): $(STAMP)
	@test -x $(LS_VENV)/bin/python || $(PY) -m venv $(LS_VENV)
	$(LS_VENV)/bin/pip install -q --upgrade pip
	$(LS_VENV)/bin/pip install -q label-studio==$(LS_VERSION)
	# A migrated template data dir: each dataset's server then starts in ~3 s instead of ~25 s.
	$(BIN)/python -c 'from annotation.ls_server import ensure_template, label_studio_bin; ensure_template(label_studio_bin())'
	@touch $(LS_STAMP)

demo: setup
	$(BIN)/tiermap demo

test: setup
	@rc=0; $(BIN)/python -m pytest -q --durations=25 tests || rc=$$?; \
	if [ $$rc = 5 ]; then echo "make test: pytest collected no tests (exit 5) - failing" >&2; fi; exit $$rc

# The suite without the end-to-end tests marked slow (pipeline runs, Label Studio, browser, the light-install venv).
test-fast: setup
	@rc=0; $(BIN)/python -m pytest -q -m "not slow" tests || rc=$$?; \
	if [ $$rc = 5 ]; then echo "make test-fast: pytest collected no tests (exit 5) - failing" >&2; fi; exit $$rc

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean-venv:
	rm -rf $(VENV) $(LS_VENV)
