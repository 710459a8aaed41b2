# C unit tests: every tests/test_*.c is one program, linked with the core
# built under AddressSanitizer + UndefinedBehaviorSanitizer, and run with the
# build directory as its only argument (where generated test data lives).
# `make bench` builds the kernel benchmark (tools/bench_kernel.py runs it).
TEST_DIR := $(BUILD)/tests
TEST_SRC := $(sort $(wildcard $(FW)/tests/test_*.c))
TEST_BIN := $(patsubst $(FW)/tests/%.c,$(TEST_DIR)/%,$(TEST_SRC))
TEST_RUN := $(addsuffix .run,$(TEST_BIN))
TEST_CORE_OBJ := $(patsubst $(FW)/core/src/%.c,$(TEST_DIR)/core/%.o,$(CORE_SRC))
CORE_HDR := $(wildcard $(FW)/core/include/rvne/*.h) $(KERNELS_HDR)
TEST_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
TEST_CFLAGS := -std=c99 -O1 -g -Wall -Wextra -Werror $(TEST_SAN) $(CORE_INC) -I$(FW)/tests

# A test's own extra sources and flags: TEST_EXTRA_<name>, TEST_XFLAGS_<name>.
# test_softfloat runs the lx106 runtime's portable C against the host's IEEE.
include $(FW)/xtensa/rt/rt.mk
TEST_EXTRA_test_softfloat := $(RT_SRC) $(RT_FPU_SRC) $(RT_DF_SRC)
TEST_XFLAGS_test_softfloat := $(RT_CFLAGS) $(RT_INC)
$(TEST_DIR)/test_softfloat: $(RT_SRC) $(RT_FPU_SRC) $(RT_DF_SRC) $(RT_HDR)
# test_expf scans 2^31 floats through the esp32-class port's e^x model:
# optimised; -ffp-contract=off keeps every rounding the model writes out,
# -march=native gives it the host's fma instruction (fmaf otherwise).
TEST_XFLAGS_test_expf := -O2 -march=native -ffp-contract=off -pthread -I$(KERNELS_DIR)/softmax
$(TEST_DIR)/test_expf: $(KERNELS_DIR)/softmax/exp_neg.h $(KERNELS_DIR)/softmax/exp_tab.h $(FW)/xtensa/libc/expf.c

# test_cfi_policy runs the lx60 flash driver's policy half against a model
# of the part (the bus sequences themselves only run on the boards).
TEST_EXTRA_test_cfi_policy := $(FW)/xtensa/board/cfi_flash.c
TEST_XFLAGS_test_cfi_policy := -I$(FW)/xtensa/board
$(TEST_DIR)/test_cfi_policy: $(FW)/xtensa/board/cfi_flash.c $(wildcard $(FW)/xtensa/board/cfi_*.h)

# Data the tests read, generated from numpy and the Python reference (never
# committed: it is rebuilt from its sources).
FP16_TABLE := $(TEST_DIR)/fp16_table.bin
GOLDEN_STAMP := $(BUILD)/golden/stamp
HOST_PY := $(wildcard $(RVNE_HOST)/rvne/*.py $(RVNE_HOST)/rvne/*/*.py)

.PHONY: test-build bench
test: $(TEST_RUN) $(TEST_DIR)/test_head.judged
test-build: $(TEST_BIN)

$(TEST_CORE_OBJ): $(TEST_DIR)/core/%.o: $(FW)/core/src/%.c $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

$(TEST_BIN): $(TEST_DIR)/%: $(FW)/tests/%.c $(FW)/tests/check.h $(TEST_CORE_OBJ) $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $(TEST_XFLAGS_$*) $< $(TEST_EXTRA_$*) $(TEST_CORE_OBJ) -lm -o $@
# The slots fixture test_update shares with fuzz/fuzz_update.c.
$(TEST_DIR)/test_update: $(FW)/tests/ram_slots.h

# Runs every time `make test` is asked; the binary is rebuilt only if stale.
$(TEST_RUN): $(TEST_DIR)/%.run: $(TEST_DIR)/% $(FP16_TABLE) $(GOLDEN_STAMP) RVNE_TESTS_FORCE
	$< $(BUILD)

# test_head writes each golden case's trace; the step rule judges it
# (docs/model.md, "Step by step").
TEST_XFLAGS_test_head := -DRVNE_TRACE_TAG='"host"'

$(TEST_DIR)/test_head.judged: $(TEST_DIR)/test_head.run RVNE_TESTS_FORCE
	$(PYTHON) $(FW)/tests/judge_traces.py $(BUILD)/golden host

$(FP16_TABLE): $(FW)/tests/gen_fp16_table.py
	@mkdir -p $(dir $@)
	$(PYTHON) $< $@

$(GOLDEN_STAMP): $(FW)/tests/gen_golden.py $(HOST_PY)
	@mkdir -p $(dir $@)
	$(PYTHON) $< $(dir $@)
	@touch $@

# ---- benchmark (not part of test): optimised, no sanitizers ----------------
BENCH_BIN := $(BUILD)/bench/bench_kernel
bench: $(BENCH_BIN)
$(BENCH_BIN): $(FW)/tests/bench/bench_kernel.c $(CORE_SRC) $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) -std=c99 -O2 -g -Wall -Wextra -Werror $(CORE_INC) $< $(CORE_SRC) -lm -o $@

.PHONY: RVNE_TESTS_FORCE
RVNE_TESTS_FORCE:

include $(FW)/tests/defects.mk
