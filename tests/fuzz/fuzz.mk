# fuzz.mk — fuzzing rules, included by the Makefile (docs/fuzzing.md).
#
# tests/fuzz/fuzz_<name>.c each define LLVMFuzzerTestOneInput; the fz_*.c
# files are shared helpers (fz_util.c) and the corpus replayer (fz_replay.c);
# tests/unit/support/support_json_ref.c is the reference request parser that
# fuzz_json_request compares the runtime's with.
#
#   make / make test        $(BUILD)/tests/test_fuzz_<name>: the target linked
#                           with fz_replay.c (normal compiler, or ASan under
#                           make asan), run over tests/fuzz/corpus/<name>/
#   make fuzz               libFuzzer binaries $(FUZZ_BUILD)/fuzz_<name>, built
#                           with clang -fsanitize=fuzzer,address,undefined
#   make fuzz-run FUZZ_SECONDS=N [FUZZ_TARGETS="a b"]
#                           each target for N seconds (tests/fuzz/run.sh): new
#                           corpus entries merged into tests/fuzz/corpus/<name>/,
#                           crashes, leaks and timeouts kept there too

FUZZ_SRCS    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZ_UTIL    := $(BUILD)/obj/tests/fuzz/fz_util.o $(BUILD)/obj/tests/unit/support/support_json_ref.o
FUZZ_REPLAY  := $(patsubst %,$(BUILD)/tests/test_fuzz_%,$(FUZZ_NAMES))

FUZZ_BUILD   ?= build-fuzz
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(FUZZ_NAMES)
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_BINS    := $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_NAMES))

.PHONY: fuzz fuzz-run fuzz-bins

all: $(FUZZ_REPLAY)

$(BUILD)/tests/test_fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(BUILD)/obj/tests/fuzz/fz_replay.o \
                            $(FUZZ_UTIL) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/obj/tests/fuzz/fz_replay.o $(FUZZ_UTIL) $(ALL_LIBS) \
	    $(ALL_LDLIBS)

# The libraries and targets are compiled by clang with coverage for the
# fuzzer (fuzzer-no-link) into $(FUZZ_BUILD)/san/; only the final link adds
# libFuzzer's main. Warnings stay warnings here: clang may see ones gcc
# does not, and a fuzz build should not stop on them.
fuzz:
	$(MAKE) BUILD=$(FUZZ_BUILD)/san CC=$(FUZZ_CC) OPT="-O1 -g -fno-omit-frame-pointer" \
	    WARN="-std=c11 -Wall -Wextra -Wpedantic -Wshadow" \
	    SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" FUZZ_BUILD=$(FUZZ_BUILD) fuzz-bins

fuzz-bins: $(FUZZ_BINS)

$(FUZZ_BUILD)/fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(FUZZ_UTIL) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_UTIL) $(ALL_LIBS) $(ALL_LDLIBS)

fuzz-run: fuzz
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(FUZZ_TARGETS)
