# Makefile — builds predictd's libraries, binaries and tests into $(BUILD)/.
#
#   make              all binaries into build/ (installs missing Debian packages first)
#   make test         unit tests (cmocka), fuzz corpus replays, integration tests
#                     (real daemon on loopback): "N passed, N failed, N skipped"
#   make asan         the same tests in an ASan+UBSan build (build-asan/)
#   make tsan         the daemon's tests (server unit tests, integration tests
#                     that start predictd) under ThreadSanitizer (build-tsan/)
#   make CC=clang     builds with clang (any target; CI: make CC=clang BUILD=build-clang test)
#   make bench        benchmarks (figures, never pass/fail)
#   make demo         train the census model, serve it, curl a prediction
#   make image        the OCI image predictd:VERSION (buildah; docs/deploy.md)
#   make image-test   runs it with podman (tests/image/test_image; not in make test)
#   make man          the man pages into build/man/ (also made by make)
#   make install      binaries, man pages, units, conf, docs: PREFIX=/usr/local DESTDIR=
#   make uninstall    removes them (same PREFIX, DESTDIR)
#   make clean
#
# CPPFLAGS, CFLAGS, LDFLAGS and LDLIBS from the command line or environment
# are added after the project's own (make CFLAGS=-O0 keeps the warnings).
#
# Module = folder = prefix: runtime/ (rt_), exporter/ (exp_), trainer/ (trn_),
# server/ (srv_), tuner/ (tun_), pmodel/ (pm_, predict-model). A module's main_<binary>.c files are binaries, the rest its
# library. tests/unit/test_<name>.c each become $(BUILD)/tests/test_<name>.

BUILD   ?= build
PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc
INSTALL_DEPS ?= scripts/install-deps.sh

# The project's flags come first; the user's CPPFLAGS / CFLAGS / LDFLAGS /
# LDLIBS (command line or environment) are appended, so `make CFLAGS=-O0`
# keeps -Wall -Werror and the module include paths.
WARN     := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Werror
OPT      ?= -O2 -g
SAN      ?=
# Hardening of everything built (checked by tests/integration/test_build):
# stack protector, PIE, full RELRO, and _FORTIFY_SOURCE=2 whenever the build
# optimises (glibc's checks need -O; with -O0 they would only warn).
HARDEN_CPPFLAGS = $(if $(filter -O0,$(OPT) $(CFLAGS)),,-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2)
HARDEN_CFLAGS   := -fstack-protector-strong -fPIE
HARDEN_LDFLAGS  := -pie -Wl,-z,relro,-z,now
# DEBUG=1 (make asan, make tsan): the debug-build invariants (RT_ASSERT,
# RT_ALWAYS, RT_NEVER in rt_core.h) are checked.
DEBUG   ?=
ALL_CPPFLAGS = -D_GNU_SOURCE $(HARDEN_CPPFLAGS) $(if $(DEBUG),-DPREDICTD_DEBUG) $(CPPFLAGS)
# -ffp-contract=off comes last, after the user's flags: a fused multiply-add
# rounds once where the code rounds twice, and the forward pass promises the
# same bits on every CPU and in every batch (runtime/model/rt_dense.c); clang
# contracts by default, gcc does with -march=native in GNU mode.
ALL_CFLAGS   = $(WARN) $(OPT) $(SAN) -fno-strict-aliasing -pthread $(HARDEN_CFLAGS) $(CFLAGS) \
               -ffp-contract=off
ALL_LDFLAGS  = $(SAN) $(HARDEN_LDFLAGS) $(LDFLAGS)
DEPFLAGS     = -MMD -MP

# Debian packages per module (pkg-config names). The runtime's headers expose
# cJSON (core) and the generated protobuf-c types (data and up), so every
# module compiles against RT_PKGS' flags; a program links only what its
# layers need (predict-tune: core's cJSON and its own libyaml and OpenBLAS).
RT_PKGS  := libcjson libprotobuf-c openblas zlib
CORE_PKGS := libcjson
SRV_PKGS := libmicrohttpd libsystemd gnutls zlib grpc
# server/ is one module in rooms (server/http, server/sec, ...: docs/design.md,
# "The server's rooms"): its sources are those of server/ and of every room,
# its include path every one of those folders.
SRV_DIRS := server $(patsubst %/,%,$(wildcard server/*/))
SRV_INCS := $(addprefix -I,$(SRV_DIRS))
TUN_PKGS := yaml-0.1 openblas
# Open MPI: only trainer/trn_comm_mpi.c (predict-train) and tuner/tun_comm_mpi.c
# (predict-tune) include mpi.h, one file per binary, and only those two
# binaries link it (docs/distributed.md, docs/tuning.md); -isystem keeps mpi.h
# out of -Werror.
MPI_PKGS := ompi-c

# On a fresh machine the packages must be there before anything compiles and
# before pkg-config is asked for flags. $(BUILD)/config.mk is an included
# makefile: make builds it first (installing what the build needs), then
# restarts with the flags it wrote, so `make -jN` cannot race apt.
.DEFAULT_GOAL := all
NO_CONFIG_GOALS := clean uninstall
ifneq ($(filter-out $(NO_CONFIG_GOALS),$(or $(MAKECMDGOALS),all)),)
include $(BUILD)/config.mk
endif
$(BUILD)/config.mk: Makefile scripts/install-deps.sh
	@mkdir -p $(BUILD)
	@$(INSTALL_DEPS) --if-missing build
	@rt_c=$$(pkg-config --cflags $(RT_PKGS)) && rt_l=$$(pkg-config --libs $(RT_PKGS)) && \
	 srv_c=$$(pkg-config --cflags $(SRV_PKGS)) && srv_l=$$(pkg-config --libs $(SRV_PKGS)) && \
	 tun_c=$$(pkg-config --cflags $(TUN_PKGS)) && tun_l=$$(pkg-config --libs $(TUN_PKGS)) && \
	 mpi_c=$$(pkg-config --cflags $(MPI_PKGS)) && mpi_l=$$(pkg-config --libs $(MPI_PKGS)) && \
	 core_l=$$(pkg-config --libs $(CORE_PKGS)) && \
	 printf 'RT_PKG_CFLAGS := %s\nRT_PKG_LIBS := %s\nSRV_PKG_CFLAGS := %s\nSRV_PKG_LIBS := %s\n' \
	     "$$rt_c" "$$rt_l" "$$srv_c" "$$srv_l" > $@.tmp && \
	 printf 'TUN_PKG_CFLAGS := %s\nTUN_PKG_LIBS := %s\n' "$$tun_c" "$$tun_l" >> $@.tmp && \
	 printf 'MPI_PKG_CFLAGS := %s\nMPI_PKG_LIBS := %s\n' "$$mpi_c" "$$mpi_l" >> $@.tmp && \
	 printf 'CORE_PKG_LIBS := %s\n' "$$core_l" >> $@.tmp && \
	 mv $@.tmp $@

# The rest (cmocka, clang, test peers, benchmark tools) once, before the
# first test object compiles; `make install` never needs them.
$(BUILD)/.test-deps: scripts/install-deps.sh
	@mkdir -p $(BUILD)
	@$(INSTALL_DEPS) --if-missing
	@touch $@

PROTOS := $(wildcard runtime/data/*.proto)
GEN_C  := $(patsubst runtime/data/%.proto,$(BUILD)/gen/%.pb-c.c,$(PROTOS))
GEN_H  := $(GEN_C:.c=.h)
GEN_O  := $(patsubst $(BUILD)/gen/%.c,$(BUILD)/obj/gen/%.o,$(GEN_C))
# The trainer's own messages (TensorBoard's Event): generated apart, in
# $(BUILD)/gen/trainer, which only the trainer (and tests) see.
TRN_PROTOS := $(wildcard trainer/*.proto)
TRN_GEN_C  := $(patsubst trainer/%.proto,$(BUILD)/gen/trainer/%.pb-c.c,$(TRN_PROTOS))
TRN_GEN_H  := $(TRN_GEN_C:.c=.h)
TRN_GEN_O  := $(patsubst $(BUILD)/gen/%.c,$(BUILD)/obj/gen/%.o,$(TRN_GEN_C))

# The gRPC front's messages (server/grpc/protos/*.proto, docs/grpc.md):
# generated into $(BUILD)/gen/grpc, which only the server (and tests) see.
# tf_serving.proto imports the runtime's example.proto (tf.Example), whose
# code is the runtime's (not generated twice); google/protobuf/ holds the two
# well-known types TF Serving's messages use.
GRPC_PROTOS := $(wildcard server/grpc/protos/*.proto server/grpc/protos/google/protobuf/*.proto)
GRPC_GEN_C  := $(patsubst server/grpc/protos/%.proto,$(BUILD)/gen/grpc/%.pb-c.c,$(GRPC_PROTOS))
GRPC_GEN_H  := $(GRPC_GEN_C:.c=.h)
GRPC_GEN_O  := $(patsubst $(BUILD)/gen/%.c,$(BUILD)/obj/gen/%.o,$(GRPC_GEN_C))

mod_srcs = $(filter-out $(1)/main_%.c,$(wildcard $(1)/*.c))
objs     = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

# The runtime's layers, bottom first (docs/design.md, "The runtime's layers"):
# each a folder with one public header and a static library of its own; the
# generated protobuf code (runtime/data/*.proto) belongs to data.
RT_LAYERS := core data stats model explain serve
rt_layer_srcs = $(wildcard runtime/$(1)/*.c $(if $(filter serve,$(1)),runtime/serve/v2/*.c))
$(foreach l,$(RT_LAYERS),$(eval RT_OBJS_$(l) := $(call objs,$(call rt_layer_srcs,$(l)))))
RT_OBJS_data += $(GEN_O)
RT_OBJS  := $(foreach l,$(RT_LAYERS),$(RT_OBJS_$(l)))
EXP_OBJS := $(call objs,$(call mod_srcs,exporter))
TRN_OBJS := $(call objs,$(call mod_srcs,trainer)) $(TRN_GEN_O)
SRV_OBJS := $(call objs,$(foreach d,$(SRV_DIRS),$(call mod_srcs,$(d)))) $(GRPC_GEN_O)
TUN_OBJS := $(call objs,$(call mod_srcs,tuner))
PM_OBJS  := $(call objs,$(call mod_srcs,pmodel))

$(foreach l,$(RT_LAYERS),$(eval LIB_RT_$(l) := $(BUILD)/libpredict_rt_$(l).a))
# Top layer first: a lower layer's call upward finds no library after it.
LIBS_RT_core    := $(LIB_RT_core)
LIBS_RT_model   := $(LIB_RT_model) $(LIB_RT_stats) $(LIB_RT_data) $(LIBS_RT_core)
LIBS_RT_serve   := $(LIB_RT_serve) $(LIB_RT_explain) $(LIBS_RT_model)
LIB_RT  := $(LIBS_RT_serve)
LIB_EXP := $(BUILD)/libpredict_exp.a
LIB_TRN := $(BUILD)/libpredict_trn.a
LIB_SRV := $(BUILD)/libpredict_srv.a
LIB_TUN := $(BUILD)/libpredict_tun.a
LIB_PM  := $(BUILD)/libpredict_pm.a
# Link order: dependents first.
ALL_LIBS := $(LIB_PM) $(LIB_TUN) $(LIB_SRV) $(LIB_TRN) $(LIB_EXP) $(LIB_RT)

# The dependency rule (docs/design.md): runtime alone; exporter -> runtime;
# trainer -> runtime + exporter; server -> runtime; tuner -> runtime;
# pmodel -> runtime. A module's sources see
# only the headers of the modules it may use (an #include of another is a
# compile error, as is including another module's private header) and its
# binaries link only those libraries (a call into another is a link error).
# Tests and benchmarks see everything.
# A runtime layer sees its own folder and the ones below (an #include of a
# higher layer's header is "No such file"); rt.h, the umbrella, only
# predict-model and the tests see.
INC_rt_core    = -Iruntime/core $(RT_PKG_CFLAGS)
INC_rt_data    = -Iruntime/data -I$(BUILD)/gen $(INC_rt_core)
INC_rt_stats   = -Iruntime/stats $(INC_rt_data)
INC_rt_model   = -Iruntime/model $(INC_rt_stats)
INC_rt_explain = -Iruntime/explain $(INC_rt_model)
INC_rt_serve   = -Iruntime/serve -Iruntime/serve/v2 $(INC_rt_explain)
INC_runtime  = -Iruntime $(INC_rt_serve)
INC_exporter = -Iexporter $(INC_rt_model)
INC_trainer  = -Itrainer -Iexporter -I$(BUILD)/gen/trainer $(INC_rt_model)
INC_server   = $(SRV_INCS) -I$(BUILD)/gen/grpc $(INC_rt_serve) $(SRV_PKG_CFLAGS)
INC_tuner    = -Ituner $(INC_rt_core) $(TUN_PKG_CFLAGS)
INC_pmodel   = -Ipmodel $(INC_runtime)
INC_all      = $(SRV_INCS) -I$(BUILD)/gen/grpc -Itrainer -Iexporter -Ituner -Ipmodel -I$(BUILD)/gen/trainer $(INC_runtime) $(SRV_PKG_CFLAGS) \
               $(TUN_PKG_CFLAGS)
INC_gen      = $(INC_runtime) -I$(BUILD)/gen/grpc
INC_tests    = -Itests/unit/support $(INC_all)
INC_bench    = $(INC_all)
LIBS_runtime  = $(LIB_RT)
LIBS_exporter = $(LIB_EXP) $(LIBS_RT_model)
LIBS_trainer  = $(LIB_TRN) $(LIB_EXP) $(LIBS_RT_model)
LIBS_server   = $(LIB_SRV) $(LIBS_RT_serve)
LIBS_tuner    = $(LIB_TUN) $(LIBS_RT_core)
LIBS_pmodel   = $(LIB_PM) $(LIB_RT)
PKGLIBS_runtime  = $(RT_PKG_LIBS)
PKGLIBS_exporter = $(RT_PKG_LIBS)
PKGLIBS_trainer  = $(RT_PKG_LIBS)
PKGLIBS_server   = $(SRV_PKG_LIBS) $(RT_PKG_LIBS)
PKGLIBS_tuner    = $(TUN_PKG_LIBS) $(CORE_PKG_LIBS)
PKGLIBS_pmodel   = $(RT_PKG_LIBS)
# A module's private headers (rt_internal.h, ...) refuse to compile outside
# it: each source is compiled with -DPREDICTD_MODULE_<its folder>.
# A runtime source also gets -DPREDICTD_LAYER_<layer> and its layer's include
# set (the layers' private headers check it).
mod_flags = -DPREDICTD_MODULE_$(1) $(INC_$(1))
src_flags = $(if $(filter runtime,$(call mod_of,$(1))),-DPREDICTD_MODULE_runtime \
    -DPREDICTD_LAYER_$(call layer_of,$(1)) $(INC_rt_$(call layer_of,$(1))),$(call mod_flags,$(call mod_of,$(1))))
# module of a path: runtime/core/x.c, server/http/x.c, build/obj/gen/x.c -> runtime, server, gen
mod_of  = $(firstword $(subst /, ,$(patsubst $(BUILD)/obj/%,%,$(patsubst $(BUILD)/%,%,$(1)))))
# layer of a runtime path: runtime/serve/v2/x.c -> serve
layer_of = $(word 2,$(subst /, ,$(1)))
ALL_LDLIBS = $(SRV_PKG_LIBS) $(TUN_PKG_LIBS) $(RT_PKG_LIBS) -lm -pthread $(LDLIBS)

# main_<name>.c -> binary <name> with '_' turned into '-' (predict_model -> predict-model).
MAIN_SRCS := $(wildcard runtime/main_*.c exporter/main_*.c trainer/main_*.c server/main_*.c tuner/main_*.c \
                         pmodel/main_*.c)
MAIN_SRCS += $(wildcard server/*/main_*.c)
bin_name   = $(subst _,-,$(patsubst main_%.c,%,$(notdir $(1))))
BINS      := $(foreach m,$(MAIN_SRCS),$(BUILD)/$(call bin_name,$(m)))

# Man pages: man/PAGE.in (the hand-written part) + the binaries' --help
# (scripts/man.sh) -> $(BUILD)/man/PAGE, installed under share/man/manN.
MAN_SRCS := $(wildcard man/*.in)
MAN      := $(patsubst man/%.in,$(BUILD)/man/%,$(MAN_SRCS))

# tests/unit/ mirrors the source folders (tests/unit/runtime/model/test_trees.c
# tests the model layer, tests/unit/server/ the server, ...; tests/unit/torture/
# fails allocations across modules, tests/unit/support/ is what they share);
# every test_<name>.c becomes $(BUILD)/tests/test_<name>, names unique.
TEST_SRCS := $(sort $(shell find tests/unit -name 'test_*.c'))
TEST_BINS := $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(TEST_SRCS)))
TEST_SUPPORT := $(call objs,$(filter-out tests/unit/support/support_alloc.c,$(wildcard tests/unit/support/support_*.c)))
TEST_ALLOC   := $(BUILD)/obj/tests/unit/support/support_alloc.o
# The torture tests (test_torture_*: the n-th allocation fails) link
# support_alloc.c, whose __wrap_ functions the linker puts in place of these
# for every object of the program (tests/unit/support/support_alloc.h).
TORTURE_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup \
    -Wl,--wrap=aligned_alloc,--wrap=posix_memalign,--wrap=realpath,--wrap=protobuf_c_message_unpack

# Keep generated sources and test objects (make would delete them as intermediates).
.SECONDARY:

.PHONY: all bins man deps test test-other-kernel soak unit-test integration-test asan tsan bench demo install \
        uninstall clean fuzz print-compile image image-test
all: $(BINS) $(TEST_BINS) $(MAN)
man: $(MAN)
bins: $(BINS)

# Everything the project uses, tests and benchmarks included (CI: .ci/run).
deps:
	@$(INSTALL_DEPS) --if-missing

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: runtime/data/%.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen -Iruntime/data $<

$(BUILD)/gen/trainer/%.pb-c.c $(BUILD)/gen/trainer/%.pb-c.h: trainer/%.proto
	@mkdir -p $(BUILD)/gen/trainer
	protoc-c --c_out=$(BUILD)/gen/trainer -Itrainer $<

$(BUILD)/gen/grpc/%.pb-c.c $(BUILD)/gen/grpc/%.pb-c.h: server/grpc/protos/%.proto
	@mkdir -p $(dir $@)
	protoc-c --c_out=$(BUILD)/gen/grpc -Iserver/grpc/protos -Iruntime/data $<

$(GRPC_GEN_O): $(GEN_H) $(GRPC_GEN_H)

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CPPFLAGS) $(INC_gen) $(filter-out -Wpedantic -Werror,$(ALL_CFLAGS)) -c $< -o $@

$(BUILD)/obj/%.o: %.c $(GEN_H) $(TRN_GEN_H) $(GRPC_GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CPPFLAGS) $(call src_flags,$<) $(ALL_CFLAGS) $(DEPFLAGS) -c $< -o $@

# The console's files are built into srv_ui.o with .incbin (server/ui/srv_ui.c).
$(BUILD)/obj/server/ui/srv_ui.o: $(wildcard server/ui/*.html server/ui/*.css server/ui/*.js)

# Test and benchmark objects need the test packages (cmocka.h) first.
TEST_OBJS := $(call objs,$(shell find tests/unit -name '*.c') $(wildcard tests/fuzz/*.c bench/*.c))
$(TEST_OBJS): | $(BUILD)/.test-deps

# `make print-compile MOD=server`: the compiler and flags of one module's
# sources (tests/integration/test_build compiles probes with them);
# MOD=runtime/model: a runtime layer's.
print-compile:
	@echo $(CC) $(ALL_CPPFLAGS) $(if $(findstring /,$(MOD)),$(call src_flags,$(MOD)/x.c),$(call mod_flags,$(MOD))) $(ALL_CFLAGS)

$(foreach l,$(RT_LAYERS),$(eval $(LIB_RT_$(l)): $(RT_OBJS_$(l))))
$(LIB_EXP): $(EXP_OBJS)
$(LIB_TRN): $(TRN_OBJS)
$(LIB_SRV): $(SRV_OBJS)
$(LIB_TUN): $(TUN_OBJS)
$(LIB_PM): $(PM_OBJS)
$(ALL_LIBS):
	@mkdir -p $(dir $@)
	rm -f $@
	$(if $^,ar rcs $@ $^,ar rcs $@)

define BIN_RULE
$(BUILD)/$(call bin_name,$(1)): $(call objs,$(1)) $(LIBS_$(call mod_of,$(1)))
	$$(CC) $$(ALL_LDFLAGS) -o $$@ $$< $(LIBS_$(call mod_of,$(1))) \
	    $$(PKGLIBS_$(call mod_of,$(1))) -lm -pthread $$(LDLIBS)
endef
$(foreach m,$(MAIN_SRCS),$(eval $(call BIN_RULE,$(m))))
$(BUILD)/obj/trainer/trn_comm_mpi.o: CPPFLAGS += $(patsubst -I%,-isystem %,$(MPI_PKG_CFLAGS))
$(BUILD)/predict-train: LDLIBS += $(MPI_PKG_LIBS)
$(BUILD)/obj/tuner/tun_comm_mpi.o: CPPFLAGS += $(patsubst -I%,-isystem %,$(MPI_PKG_CFLAGS))
$(BUILD)/predict-tune: LDLIBS += $(MPI_PKG_LIBS)

$(BUILD)/man/%: man/%.in scripts/man.sh $(BINS)
	@mkdir -p $(dir $@)
	scripts/man.sh $(BUILD) $< > $@.tmp && mv $@.tmp $@

# One link rule per test program (its source may sit in any subfolder).
define TEST_RULE
$(BUILD)/tests/$(basename $(notdir $(1))): $(call objs,$(1)) $(TEST_SUPPORT) \
        $(if $(filter test_torture_%,$(notdir $(1))),$(TEST_ALLOC)) $(ALL_LIBS)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_LDFLAGS) $(if $(filter test_torture_%,$(notdir $(1))),$$(TORTURE_WRAP)) -o $$@ $$< \
	    $$(TEST_SUPPORT) $(if $(filter test_torture_%,$(notdir $(1))),$(TEST_ALLOC)) $$(ALL_LIBS) $$(ALL_LDLIBS) -lcmocka
endef
$(foreach t,$(TEST_SRCS),$(eval $(call TEST_RULE,$(t))))

# bench/bench_<x>.c -> $(BUILD)/bench/bench_<x> (built by make bench only;
# they time the runtime, so they link the runtime library alone).
BENCH_SRCS := $(wildcard bench/bench_*.c)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIB_RT)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_RT) $(ALL_LDLIBS)

# bench_suggest times the tuner's search, so it links the tuner's library too.
$(BUILD)/bench/bench_suggest: $(BUILD)/obj/bench/bench_suggest.o $(LIB_TUN) $(LIB_RT)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB_TUN) $(LIB_RT) $(ALL_LDLIBS)

# TESTS="unit fuzz integration/test_daemon*" runs some (tests/run.sh selectors).
TESTS ?=
test: all
	@BUILD=$(BUILD) tests/run.sh $(TESTS)

unit-test: all
	@BUILD=$(BUILD) tests/run.sh unit fuzz

integration-test: all
	@BUILD=$(BUILD) tests/run.sh integration

soak: all ; @BUILD=$(BUILD) tests/soak/soak.py

# The tests that compare floats across code paths, run again under another
# OpenBLAS kernel than the one this CPU gets by default (Haswell, SkylakeX or
# Prescott: scripts/other-openblas-core.sh), so a result that depends on the
# kernel fails here and not on a user's machine (CI runs it after make test).
NUMERIC_TESTS ?= unit integration/test_invariance integration/test_train_golden \
    integration/test_evaluate integration/test_serve_batch integration/test_train_columns \
    integration/test_train_options integration/test_train_trees integration/test_daemon_trees \
    integration/test_daemon_onnx_ml integration/test_daemon_onnx_str integration/test_daemon_offload integration/test_train_custom \
    integration/test_train_multitask integration/test_pmodel_import integration/test_daemon_explain \
    integration/test_daemon_grpc_shared integration/test_daemon_multihead integration/test_daemon_onnx_ig \
    integration/test_train_headloss \
    integration/test_train_mlabel
test-other-kernel: all
	@core=$$(scripts/other-openblas-core.sh) || { echo "no other OpenBLAS kernel found"; exit 1; }; \
	echo "OPENBLAS_CORETYPE=$$core"; \
	OPENBLAS_CORETYPE=$$core BUILD=$(BUILD) tests/run.sh $(NUMERIC_TESTS)

# build-asan/ (gcc) or build-asan-clang/ (make CC=clang asan).
asan:
	$(MAKE) BUILD=build-asan$(if $(findstring clang,$(notdir $(CC))),-clang) OPT="-O1 -g -fno-omit-frame-pointer" DEBUG=1 \
	    SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" test

# ThreadSanitizer over what runs threads: the server's unit tests and the
# integration tests that start predictd (TSAN_TESTS=... for fewer). A report
# stops the process (halt_on_error), so the test that drove it fails, and is
# written to build-tsan/tsan/: any report there fails the target, even one
# from a daemon whose test did not notice. tests/tsan.supp holds the
# documented false positives.
TSAN_TESTS ?= unit/test_srv_* integration/test_daemon* integration/test_hotload \
              integration/test_robust_corpus integration/test_robust_faults \
              integration/test_data_validation
TSAN_REPORTS := $(CURDIR)/build-tsan/tsan
TSAN_OPTIONS_ALL := suppressions=$(CURDIR)/tests/tsan.supp halt_on_error=1 exitcode=66 \
                    second_deadlock_stack=1 log_path=$(TSAN_REPORTS)/report
tsan:
	$(MAKE) BUILD=build-tsan OPT="-O1 -g -fno-omit-frame-pointer" SAN="-fsanitize=thread" DEBUG=1 all
	@rm -rf $(TSAN_REPORTS) && mkdir -p $(TSAN_REPORTS)
	@BUILD=build-tsan TSAN_OPTIONS="$(TSAN_OPTIONS_ALL)" tests/run.sh $(TSAN_TESTS); rc=$$?; \
	 if [ -n "$$(ls $(TSAN_REPORTS))" ]; then \
	     echo "ThreadSanitizer reports ($(TSAN_REPORTS)):"; cat $(TSAN_REPORTS)/*; rc=1; \
	 fi; exit $$rc

bench: all $(BENCH_BINS)
	@BUILD=$(BUILD) bench/run.sh

# demo.sh builds quietly itself (no compiler lines in the demo's output).
demo:
	@BUILD=$(BUILD) scripts/demo.sh

# The OCI image (docs/deploy.md): this build's binaries and this machine's
# Debian files, no registry (scripts/image.sh, scripts/image-root.sh);
# image-test runs it with podman (tests/image/test_image). Podman, buildah
# and runc are installed only for these targets; make test needs none.
image: bins
	@$(INSTALL_DEPS) --if-missing image
	@BUILD=$(BUILD) scripts/image.sh

image-test: image
	@PREDICTD_ROOT=$(CURDIR) BUILD=$(BUILD) tests/image/test_image

# Units go where systemd looks for a PREFIX (/usr/local/lib/systemd/system for
# /usr/local); their ExecStart paths follow PREFIX.
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d

UNITS := predictd.service predictd@.service predictd.socket

# Builds and installs the binaries only: no test programs, no cmocka.
install: $(BINS) $(MAN)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(filter-out %-testfn,$(BINS)) $(DESTDIR)$(PREFIX)/bin/
	for p in $(MAN); do \
	    d=$(DESTDIR)$(PREFIX)/share/man/man$${p##*.}; \
	    install -d $$d && install -m 0644 $$p $$d/ || exit 1; \
	done
	install -d $(DESTDIR)$(PREFIX)/share/predictd/conf $(DESTDIR)$(PREFIX)/share/doc/predictd
	install -m 0644 conf/*.json conf/*.yaml conf/*.config conf/haproxy.cfg $(DESTDIR)$(PREFIX)/share/predictd/conf/
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/predictd/
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR)
	for u in $(UNITS); do \
	    sed -e 's#/usr/local/bin/#$(PREFIX)/bin/#g' -e 's#/usr/local/share/#$(PREFIX)/share/#g' \
	        systemd/$$u > $(DESTDIR)$(UNITDIR)/$$u && chmod 0644 $(DESTDIR)$(UNITDIR)/$$u; \
	done
	install -m 0644 systemd/predictd.sysusers $(DESTDIR)$(SYSUSERSDIR)/predictd.conf
	install -m 0644 systemd/predictd.tmpfiles $(DESTDIR)$(TMPFILESDIR)/predictd.conf

# Removes what install put there (same PREFIX / DESTDIR / *DIR variables).
# share/predictd and share/doc/predictd are ours alone and go whole.
uninstall:
	rm -f $(patsubst %,$(DESTDIR)$(PREFIX)/bin/%,$(notdir $(BINS)))
	rm -f $(patsubst %,$(DESTDIR)$(UNITDIR)/%,$(UNITS))
	rm -f $(DESTDIR)$(SYSUSERSDIR)/predictd.conf $(DESTDIR)$(TMPFILESDIR)/predictd.conf
	rm -rf $(DESTDIR)$(PREFIX)/share/predictd $(DESTDIR)$(PREFIX)/share/doc/predictd
	for p in $(notdir $(MAN_SRCS:.in=)); do rm -f $(DESTDIR)$(PREFIX)/share/man/man$${p##*.}/$$p; done

clean:
	rm -rf build build-asan build-asan-clang build-tsan build-clang build-fuzz

# make fuzz, make fuzz-run, and the corpus replays make test runs (docs/fuzzing.md)
include tests/fuzz/fuzz.mk

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
