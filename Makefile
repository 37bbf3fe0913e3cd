# train_gpt: build, deps, tests. `make deps` once, then `make` (or `make test`).
# Overridable: CUDA_HOME, GPU_ARCH, CUDNN_FRONTEND_INCLUDE, CLI11_INCLUDE, CUDNN (system|newest), CUDNN_INCLUDE,
#              CUDNN_LIB, NCCL_INCLUDE, NCCL_LIB.
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(CUDA_HOME)/bin/nvcc
CXX ?= g++
GPU_ARCH ?= -gencode arch=compute_90a,code=sm_90a
BUILD := build
# $(call write_if_changed,FILE,TEXT): FILE holds TEXT and a newline; rewritten (new mtime) only when it differs,
# through a file of this shell's own so that concurrent makes do not collide.
write_if_changed = mkdir -p $(dir $(1)) && printf '%s\n' '$(2)' > $(1).$$$$ && \
                   { cmp -s $(1).$$$$ $(1) && rm -f $(1).$$$$ || mv -f $(1).$$$$ $(1); }
# Every compilation depends on this file: it holds the flags of the build (see its writer at the end), so
# that a make with other flags (GPU_ARCH=..., a CUDA_HOME) rebuilds instead of keeping objects built with the
# old ones. The cuDNN's include folder has a file of its own, on which only the objects that include a cuDNN
# header depend (their .d files say which), and the libraries linked another, on which every binary depends:
# CUDNN=newest recompiles the attention, the GPU context and the version line, and relinks.
CONFIG_STAMP := $(BUILD)/config.flags
CUDNN_STAMP := $(BUILD)/cudnn.flags
LINK_STAMP := $(BUILD)/link.flags
# $(call link,ARCH): a binary's link line from its prerequisites, the stamps left out.
link = $(NVCC) $(1) $(filter-out %.flags,$^) -o $@ $(LDLIBS)

first_dir_with = $(firstword $(foreach d,$(2),$(if $(wildcard $(d)/$(1)),$(d),)))
INC_DIRS := $(CUDA_HOME)/include /usr/include/x86_64-linux-gnu /usr/include /usr/local/include
LIB_DIRS := $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib /usr/lib/x86_64-linux-gnu /usr/local/lib
CUDNN_FRONTEND_INCLUDE ?= third_party/cudnn-frontend/include
CLI11_INCLUDE ?= $(call first_dir_with,CLI/CLI.hpp,/usr/include /usr/local/include third_party/cli11/usr/include)
# cuDNN: the system's (the first cudnn.h and libcudnn.so.9 below), or with CUDNN=newest the newest cuDNN 9
# present, a pip nvidia-cudnn-cu13's included (scripts/find_cudnn.sh): 9.19's attention is 0.8% of the
# GPT-1.5B fp8 step faster than 9.14's, not yet the default (docs/performance.md, "cuDNN 9.19 as the default").
# CUDNN_INCLUDE / CUDNN_LIB given by hand win over both.
CUDNN ?= system
ifeq ($(filter system newest,$(CUDNN)),)
$(error CUDNN must be system or newest, got '$(CUDNN)')
endif
ifeq ($(CUDNN)$(origin CUDNN_INCLUDE)$(origin CUDNN_LIB),newestundefinedundefined)
CUDNN_FOUND := $(shell CUDNN_INCS="$(INC_DIRS)" CUDNN_LIBS="$(LIB_DIRS)" bash scripts/find_cudnn.sh)
CUDNN_INCLUDE := $(word 2,$(CUDNN_FOUND))
CUDNN_LIB := $(word 3,$(CUDNN_FOUND))
endif
CUDNN_INCLUDE ?= $(call first_dir_with,cudnn.h,$(INC_DIRS))
CUDNN_LIB ?= $(call first_dir_with,libcudnn.so.9,$(LIB_DIRS))
NCCL_INCLUDE ?= $(call first_dir_with,nccl.h,$(INC_DIRS))
NCCL_LIB ?= $(call first_dir_with,libnccl.so,$(LIB_DIRS))
# zlib (crc32): the system's, else the copy `make deps` unpacks into third_party/zlib (static library);
# scripts/deps.sh looks in the same places, in the same order (keep them in step)
# (no -I for /usr/include: the compilers search it anyway, and naming it can reorder the C++ system headers)
ZLIB_INCLUDE ?= $(if $(wildcard /usr/include/zlib.h),,$(call first_dir_with,zlib.h,/usr/local/include \
                third_party/zlib/usr/include))
ZLIB_LIBS ?= $(if $(call first_dir_with,libz.so,$(LIB_DIRS) /usr/lib),-lz,\
             $(wildcard third_party/zlib/usr/lib/x86_64-linux-gnu/libz.a))

# cuDNN's folder before CUDA's: a cuDNN installed into the toolkit's include/ must not shadow the one chosen
# (CUDNN=newest, CUDNN_INCLUDE). A system folder named by -I keeps its system place (gcc ignores such a -I).
INCLUDES_HEAD := -I. $(if $(CLI11_INCLUDE),-I$(CLI11_INCLUDE))
CUDNN_I := $(if $(CUDNN_INCLUDE),-I$(CUDNN_INCLUDE))
INCLUDES_TAIL := -I$(CUDA_HOME)/include $(if $(NCCL_INCLUDE),-I$(NCCL_INCLUDE)) -I$(CUDNN_FRONTEND_INCLUDE) \
                 $(if $(ZLIB_INCLUDE),-I$(ZLIB_INCLUDE))
INCLUDES := $(INCLUDES_HEAD) $(CUDNN_I) $(INCLUDES_TAIL)
# -MMD -MP: every object (and host test binary) gets a compiler-generated .d file listing the headers it
# includes, so touching any header rebuilds exactly what depends on it.
DEPFLAGS = -MMD -MP -MF $(basename $@).d
CXXFLAGS := -std=c++17 -O2 -Wall -Wextra -Wno-unused-parameter $(INCLUDES)
NVCCFLAGS := -std=c++17 -O3 --use_fast_math --expt-relaxed-constexpr -lineinfo $(GPU_ARCH) $(INCLUDES) \
             -Xcompiler -Wall,-Wno-unused-parameter
# cuDNN's folder first in the run path: another libcudnn.so.9 in CUDA's folder must not shadow the one chosen
# (a pip cuDNN ships libcudnn.so.9 only, hence -l:)
RPATHS := $(foreach d,$(CUDNN_LIB) $(filter-out $(CUDNN_LIB),$(sort $(CUDA_HOME)/lib64 $(NCCL_LIB))),-Xlinker -rpath=$(d))
LDLIBS := $(if $(CUDNN_LIB),-L$(CUDNN_LIB)) -L$(CUDA_HOME)/lib64 $(if $(NCCL_LIB),-L$(NCCL_LIB)) \
          -lcublasLt -lcublas -l:libcudnn.so.9 -lnvrtc -lcuda -lnccl $(ZLIB_LIBS) $(RPATHS)

# The library, one folder per wing of llmc/ (README "Layout"). Host-only sources (no CUDA: configuration,
# CLI, data, file formats, launcher, the model layout) are also linked into the host tests; the run lifecycle
# (llmc/run) is host code over the GPU model, so it goes into the library only.
HOST_SRCS := $(wildcard llmc/host/*.cpp llmc/formats/*.cpp llmc/parallel/*.cpp llmc/model/*.cpp)
HOST_OBJS := $(HOST_SRCS:%.cpp=$(BUILD)/%.o)
RUN_OBJS := $(patsubst %.cpp,$(BUILD)/%.o,$(wildcard llmc/run/*.cpp))
# GPU sources: kernels, FP8, the model, GPU and NCCL infrastructure (+ the slow cudnn-frontend attention TU).
GPU_SRCS := $(wildcard llmc/*/*.cu llmc/*/*/*.cu)
GPU_OBJS := $(GPU_SRCS:%.cu=$(BUILD)/%.o)

HOST_TESTS := $(patsubst test/%.cpp,$(BUILD)/test/%,$(wildcard test/host_*.cpp))
GPU_TESTS := $(patsubst dev/%.cu,$(BUILD)/dev/%,$(wildcard dev/test_*.cu)) \
             $(patsubst test/%.cu,$(BUILD)/test/%,$(wildcard test/gpu_*.cu))

.PHONY: all deps test test-host test-gpu sanitize clean format format-check
# keep the test objects (make would delete them as intermediates, after the test summary line)
.SECONDARY:
all: train_gpt $(BUILD)/test/train_gpt_faults $(HOST_TESTS) $(GPU_TESTS) $(BUILD)/dev/bench_attention \
     $(BUILD)/test/arch_probe $(BUILD)/test/arch_probe_other

deps:
	@bash scripts/deps.sh

$(BUILD)/%.o: %.cpp $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cu $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/libllmc.a: $(HOST_OBJS) $(RUN_OBJS) $(GPU_OBJS)
	@rm -f $@
	ar rcs $@ $^

# The commit train_gpt is built from, for --version ("unknown" outside git). Its source is rewritten only
# when the commit changes, so an unchanged tree relinks nothing.
BUILD_COMMIT := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
.PHONY: FORCE
$(BUILD)/build_commit.cpp: FORCE
	@$(call write_if_changed,$@,extern const char kBuildCommit[] = "$(BUILD_COMMIT)";)
$(BUILD)/build_commit.o: $(BUILD)/build_commit.cpp $(CONFIG_STAMP)
	$(CXX) $(CXXFLAGS) -c $< -o $@

train_gpt: $(BUILD)/train_gpt.o $(BUILD)/build_commit.o $(BUILD)/libllmc.a $(LINK_STAMP)
	$(call link,$(GPU_ARCH))

# The GPU tests' side of the model: the one-call-at-a-time API (test/gpt_testing.h), an archive so that a
# test binary takes it only when it calls it.
TESTING_LIB := $(BUILD)/test/libgpt_testing.a
$(TESTING_LIB): $(BUILD)/test/gpt_testing.o
	@rm -f $@
	ar rcs $@ $^

# The same driver with the fault hooks (test/train_gpt_faults.cpp, for test/gpu_lifecycle.sh and
# test/gpu_multi.sh): train_gpt.cu compiled without its main, which train_gpt_faults.cpp provides.
$(BUILD)/test/train_gpt_driver.o: train_gpt.cu $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -DTRAIN_GPT_NO_MAIN $(DEPFLAGS) -c $< -o $@
$(BUILD)/test/train_gpt_faults: $(BUILD)/test/train_gpt_faults.o $(BUILD)/test/train_gpt_driver.o \
                                $(BUILD)/build_commit.o $(TESTING_LIB) $(BUILD)/libllmc.a $(LINK_STAMP)
	$(call link,$(GPU_ARCH))

$(BUILD)/test/host_%: test/host_%.cpp $(HOST_OBJS) $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(DEPFLAGS) $< $(HOST_OBJS) -o $@ $(ZLIB_LIBS)

# The HellaSwag scorer is run/ code without CUDA (its forward pass is passed in): its test links it too.
$(BUILD)/test/host_hellaswag_eval: test/host_hellaswag_eval.cpp $(BUILD)/llmc/run/hellaswag_eval.o $(HOST_OBJS) \
                                   $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(DEPFLAGS) $< $(BUILD)/llmc/run/hellaswag_eval.o $(HOST_OBJS) -o $@ $(ZLIB_LIBS)

$(BUILD)/dev/%: $(BUILD)/dev/%.o $(TESTING_LIB) $(BUILD)/libllmc.a $(LINK_STAMP)
	$(call link,$(GPU_ARCH))

$(BUILD)/test/gpu_%: $(BUILD)/test/gpu_%.o $(TESTING_LIB) $(BUILD)/libllmc.a $(LINK_STAMP)
	$(call link,$(GPU_ARCH))

# The attention benchmark (dev/bench_attention.cu; a benchmark, not a test) links only the objects it needs,
# so that a GPU machine builds it in about the time of its two cudnn-frontend translation units.
# bench_attention_fe_new is the same program with those two units compiled against a second cudnn-frontend
# (CUDNN_FRONTEND_NEW_INCLUDE) into $(BUILD)/fe_new/ (scripts/bench/bench_attention.sh compares the two).
CUDNN_FRONTEND_NEW_INCLUDE ?= third_party/cudnn-frontend-new/include
BENCH_ATTENTION_OBJS := $(BUILD)/dev/bench_attention.o $(BUILD)/llmc/gpu/context.o \
                        $(BUILD)/llmc/gpu/sanitizer_marks.o
$(BUILD)/dev/bench_attention: $(BENCH_ATTENTION_OBJS) $(BUILD)/dev/sdpa_layouts.o \
                              $(BUILD)/llmc/kernels/attention.o $(LINK_STAMP)
	$(call link,$(GPU_ARCH))
$(BUILD)/dev/bench_attention_fe_new: $(BENCH_ATTENTION_OBJS) $(BUILD)/fe_new/dev/sdpa_layouts.o \
                                     $(BUILD)/fe_new/llmc/kernels/attention.o $(LINK_STAMP)
	$(call link,$(GPU_ARCH))
$(BUILD)/fe_new/%.o: %.cu $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(subst -I$(CUDNN_FRONTEND_INCLUDE),-I$(CUDNN_FRONTEND_NEW_INCLUDE),$(NVCCFLAGS)) $(DEPFLAGS) \
	  -c $< -o $@

# create_gpu_context's check that the binary has machine code for the GPU (test/gpu_kernel_image.sh): a probe
# built with GPU_ARCH, and the same probe with machine code for PROBE_OTHER_ARCH only (sm_80, which a GPU of
# another major version cannot run).
PROBE_OTHER_ARCH ?= -gencode arch=compute_80,code=sm_80
$(BUILD)/test/arch_probe: $(BUILD)/test/arch_probe.o $(BUILD)/llmc/gpu/context.o $(LINK_STAMP)
	$(call link,$(GPU_ARCH))
$(BUILD)/other_arch/%.o: %.cu $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(filter-out $(GPU_ARCH),$(NVCCFLAGS)) $(PROBE_OTHER_ARCH) $(DEPFLAGS) -c $< -o $@
$(BUILD)/test/arch_probe_other: $(BUILD)/other_arch/test/arch_probe.o $(BUILD)/other_arch/llmc/gpu/context.o \
                                $(LINK_STAMP)
	$(call link,$(PROBE_OTHER_ARCH))

# Host tests always (binaries, test/host_*.sh scripts, the formatting check); GPU tests (dev/ kernels, test/
# model) only where a CUDA device is present.
# test-host and test-gpu run one half each, with its own summary line (make test-gpu on an H200: ~5 minutes after the build).
HOST_TEST_RUNS = $(HOST_TESTS) $(wildcard test/host_*.sh) scripts/check/check_format.sh
GPU_TEST_RUNS = $(GPU_TESTS) $(wildcard test/gpu_*.sh)
test: all
	@bash scripts/run_tests.sh $(HOST_TEST_RUNS) -- $(GPU_TEST_RUNS)
test-host: all
	@bash scripts/run_tests.sh $(HOST_TEST_RUNS) --
test-gpu: all
	@bash scripts/run_tests.sh -- $(GPU_TEST_RUNS)

# The first run (README "First run: tiny Shakespeare"): GPT-2 124M from scratch on tiny Shakespeare (from
# `make deps`), then text samples and the loss curve; PRECISION=fp8 for FP8.
PRECISION ?= bf16
.PHONY: quickstart
quickstart: train_gpt
	@bash scripts/runs/shakespeare.sh --precision $(PRECISION)

# GPU machine: compute-sanitizer memcheck + initcheck of a small model (bf16, fp8) and of every dev/ test;
# SANITIZE_RACES=1 make sanitize: racecheck + synccheck of our own kernels instead.
sanitize: all
	@bash scripts/check/sanitize.sh

# Formats every file scripts/check/check_format.sh checks (clang-format 14, the CI's; CLANG_FORMAT= picks one).
CLANG_FORMAT ?= $(firstword $(shell command -v clang-format-14 clang-format 2>/dev/null) clang-format)
format:
	@command -v $(CLANG_FORMAT) >/dev/null 2>&1 || { echo "make format: $(CLANG_FORMAT) not found;" \
	  "install clang-format 14 (e.g. apt-get install clang-format-14) or set CLANG_FORMAT=" >&2; exit 1; }
	@bash scripts/check/check_format.sh --files | xargs $(CLANG_FORMAT) --style=file -i
	@echo "formatted $$(bash scripts/check/check_format.sh --files | wc -l) files with $$($(CLANG_FORMAT) --version)"

# The formatting check alone (make test runs it too, counted as one test).
format-check:
	@CLANG_FORMAT=$(CLANG_FORMAT) bash scripts/check/check_format.sh

clean:
	rm -rf $(BUILD) train_gpt

# header dependencies written by the compilers (absent on the first build, when everything is built anyway)
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# Fuzz every file reader (clang libFuzzer + ASan/UBSan), FUZZ_SECONDS each; needs clang (apt-get install clang).
.PHONY: fuzz
fuzz:
	@bash scripts/check/fuzz.sh

# The benchmarks time a GPU: without one they stop here, before anything is built (as make sanitize does).
BENCH_GOALS := $(filter bench bench-kernels bench-attention,$(MAKECMDGOALS))
ifneq ($(BENCH_GOALS),)
ifneq ($(shell nvidia-smi -L >/dev/null 2>&1 && echo gpu),gpu)
$(error make $(BENCH_GOALS): no CUDA device on this machine (nvidia-smi -L failed); the benchmarks need a GPU)
endif
endif

# The benchmark workloads (GPT-1.5B, GPT-2 124M), train_gpt bf16 + fp8 and the peers (PyTorch; llm.c with
# LLMC=path/to/train_gpt2cu), one table per model + bench.json + bench.png (needs a GPU). MODEL=1.5b|124m|both.
BENCH_STEPS ?= 30
MODEL ?= both
LLMC ?=
.PHONY: bench
bench: train_gpt
	@MODEL=$(MODEL) LLMC=$(LLMC) bash scripts/bench/bench.sh $(BENCH_STEPS)

# The device compilation's flags without line info, for scripts/check/machine_code.sh (machine code of two trees
# compared without a GPU).
.PHONY: print-cubin-flags
print-cubin-flags:
	@echo $(filter-out -lineinfo,$(NVCCFLAGS))

# The cuDNN and NCCL folders this build uses (headers, libraries), for scripts/check/other_toolkit.sh.
.PHONY: print-dep-dirs
print-dep-dirs:
	@echo $(CUDNN_INCLUDE) $(CUDNN_LIB) $(NCCL_INCLUDE) $(NCCL_LIB)

# Kernel benchmarks (timings, not tests; needs a GPU): every dev/ binary with --bench, one table.
BENCH_BINS := $(patsubst dev/%.cu,$(BUILD)/dev/%,$(wildcard dev/test_*.cu))
.PHONY: bench-kernels
bench-kernels: $(BENCH_BINS)
	@bash scripts/bench/bench_kernels.sh $(BENCH_BINS)

# Attention alone (needs a GPU): bench_attention built against the pinned and the second cudnn-frontend, each run
# with the cuDNN found by default and with PyTorch's (scripts/bench/bench_attention.sh), one table.
.PHONY: bench-attention
bench-attention:
	@bash scripts/bench/bench_attention.sh

# The build's flags into $(CONFIG_STAMP), $(CUDNN_STAMP) and $(LINK_STAMP), each rewritten only when it differs
# from the last make's; at read time, so that `make -n` and `make -q` see the change too.
# (CUDNN_FRONTEND_NEW_INCLUDE is left out: make bench-attention sets it for its second build only.)
# CONFIG_TEXT: the flags less the cuDNN folder (it has its own stamp), i.e. INCLUDES without it in both.
no_cudnn = $(subst $(INCLUDES),$(INCLUDES_HEAD) $(INCLUDES_TAIL),$(1))
CONFIG_TEXT := $(NVCC) $(call no_cudnn,$(NVCCFLAGS)) | $(CXX) $(call no_cudnn,$(CXXFLAGS)) | $(ZLIB_LIBS) | \
               $(PROBE_OTHER_ARCH)
$(shell $(call write_if_changed,$(CONFIG_STAMP),$(CONFIG_TEXT)))
$(shell $(call write_if_changed,$(CUDNN_STAMP),$(CUDNN_I)))
$(shell $(call write_if_changed,$(LINK_STAMP),$(LDLIBS)))
# The objects whose last build included a cuDNN or cudnn-frontend header (a first build compiles everything).
CUDNN_USERS := $(patsubst %.d,%.o,$(shell grep -rl --include='*.d' cudnn $(BUILD) 2> /dev/null))
$(CUDNN_USERS): $(CUDNN_STAMP)
