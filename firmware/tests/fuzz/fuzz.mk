# Coverage-guided fuzzing of the core's untrusted inputs with libFuzzer:
# tests/fuzz/fuzz_blob.c (blob loader and head), fuzz_proto.c (the line
# protocol) and fuzz_update.c (UPDATE_* over a RAM flash). `make fuzz` builds
# them with clang (fuzzer + ASan + UBSan), writes their seed corpora (each
# harness generates its own: valid blobs, valid request lines, updates) into
# $(BUILD)/fuzz/corpus_<name>, and runs each for
# FUZZ_SECONDS with a fixed -seed; any crash, sanitizer report or failed
# invariant fails the target (the input is kept as $(BUILD)/fuzz/crash-*;
# libFuzzer's output goes to $(BUILD)/fuzz/fuzz_<name>.log, its tail is shown).
# Reproduce one with: $(BUILD)/fuzz/fuzz_<name> $(BUILD)/fuzz/crash-...
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 20
FUZZ_SEED ?= 1
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_NAMES := blob proto update
FUZZ_BIN := $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_NAMES))
FUZZ_CFLAGS := -std=c99 -O1 -g -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -fno-omit-frame-pointer $(CORE_INC) -I$(FW)/tests
# Longest input per harness: a few small blobs; a few protocol lines (line_max 1024).
FUZZ_MAXLEN_blob := 8192
FUZZ_MAXLEN_proto := 4096
FUZZ_MAXLEN_update := 8192
FUZZ_APT := clang libclang-rt-14-dev

.PHONY: fuzz fuzz-build fuzz-check $(addprefix fuzz-run-,$(FUZZ_NAMES))
fuzz: $(addprefix fuzz-run-,$(FUZZ_NAMES))
fuzz-build: $(FUZZ_BIN)

# clang and its libFuzzer runtime, or one line saying what to install.
fuzz-check:
	@mkdir -p $(FUZZ_DIR)
	@command -v $(FUZZ_CC) >/dev/null 2>&1 && \
	 printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' | \
	 $(FUZZ_CC) -fsanitize=fuzzer -x c - -o $(FUZZ_DIR)/.fuzz-check >/dev/null 2>&1 || \
	 { echo "fuzz: needs $(FUZZ_CC) with libFuzzer: apt-get install $(FUZZ_APT) (tools/bootstrap.sh installs them)"; exit 1; }

$(FUZZ_BIN): $(FUZZ_DIR)/fuzz_%: $(FW)/tests/fuzz/fuzz_%.c $(FW)/tests/fuzz/fuzz_util.h $(FW)/tests/ram_slots.h $(CORE_SRC) $(wildcard $(FW)/core/include/rvne/*.h) $(KERNELS_HDR) | fuzz-check
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(CORE_SRC) -lm -o $@

# A fresh corpus each run (the seeds only), so a run is repeatable up to timing.
$(addprefix fuzz-run-,$(FUZZ_NAMES)): fuzz-run-%: $(FUZZ_DIR)/fuzz_%
	@rm -rf $(FUZZ_DIR)/corpus_$* && mkdir -p $(FUZZ_DIR)/corpus_$*
	@RVNE_FUZZ_SEED_DIR=$(FUZZ_DIR)/corpus_$* $<
	@echo "fuzz_$*: $(FUZZ_SECONDS) s, -seed=$(FUZZ_SEED), log in $(FUZZ_DIR)/fuzz_$*.log"
	@$< -seed=$(FUZZ_SEED) -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAXLEN_$*) -timeout=30 \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/crash-$*- $(FUZZ_DIR)/corpus_$* \
	    >$(FUZZ_DIR)/fuzz_$*.log 2>&1 || { tail -n 60 $(FUZZ_DIR)/fuzz_$*.log; echo "fuzz_$*: FAILED"; exit 1; }
	@grep -E '^#[0-9]+[[:space:]]+DONE|^stat::(number_of_executed_units|average_exec_per_sec)' $(FUZZ_DIR)/fuzz_$*.log
