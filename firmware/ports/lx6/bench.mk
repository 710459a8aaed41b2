# `make lx6-phases`: the per-phase profile of a push (bench/phases.c) that
# tools/bench_icount.py runs under qemu -icount: the core compiled again with
# RVNE_PROFILE (its phase markers, rvne/profile.h, call bench/phases.c), in
# $(LX6_OUT)/prof/, with this build's kernels (LX6_KERNELS=c: the C twins).
# Included from tests.mk: it links like a unit test (semihosting).
LX6_PROF_OUT := $(LX6_OUT)/prof
LX6_PROF_CORE_OBJ := $(patsubst $(FW)/core/src/%.c,$(LX6_PROF_OUT)/core/%.o,$(CORE_SRC))
LX6_PROF_ELF := $(LX6_PROF_OUT)/phases.elf
.PHONY: lx6-phases
# xtensa/bench/bench_input.c (what a bench run reads, the head it runs on) is the
# S3 bench's too (ports/esp32s3-bare/s3.mk links this object in its LLVM image).
LX6_BENCH_INPUT := $(LX6_PROF_OUT)/bench_input.o
.SECONDARY: $(LX6_PROF_CORE_OBJ:.o=.bc) $(LX6_PROF_CORE_OBJ) $(LX6_PROF_OUT)/phases.bc $(LX6_PROF_OUT)/phases.o \
	$(LX6_BENCH_INPUT:.o=.bc) $(LX6_BENCH_INPUT)
lx6-phases: $(LX6_PROF_ELF)

$(LX6_PROF_OUT)/core/%.bc: $(FW)/core/src/%.c $(LX6_HDR) $(LX6_DIR)/port.mk
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) -DRVNE_PROFILE $(CORE_INC) -c -emit-llvm $< -o $@
$(LX6_PROF_OUT)/phases.bc: $(LX6_DIR)/bench/phases.c $(FW)/xtensa/bench/bench_input.h $(LX6_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_TEST_FLAGS) -I$(XTB_DIR) -I$(FW)/xtensa/bench -c -emit-llvm $< -o $@
$(LX6_PROF_OUT)/bench_input.bc: $(FW)/xtensa/bench/bench_input.c $(FW)/xtensa/bench/bench_input.h $(LX6_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_TEST_FLAGS) -c -emit-llvm $< -o $@
$(LX6_PROF_ELF): $(LX6_PROF_OUT)/phases.o $(LX6_BENCH_INPUT) $(LX6_SEMI_OBJ) $(LX6_PROF_CORE_OBJ) $(LX6_LIBC_OBJ) $(LX6_RT_OBJ) \
		$(LX6_TEST_RT_OBJ) $(LX6_DSP_OBJ) $(LX6_OUT)/port/start.o $(LX6_DIR)/tests.ld $(LX6_DIR)/sections.ld
	$(LX6_LD) --no-relax -L $(LX6_DIR) -T $(LX6_DIR)/tests.ld --gc-sections --no-undefined \
		$(filter %.o,$^) -o $@

# `make lx6-bench-i8`: bench/kernel_i8.c, the int8 projection's kernels
# alone (tools/bench_int8.py runs it under qemu -icount), linked like a unit
# test with this build's core and kernels.
LX6_BENCH_I8_ELF := $(LX6_OUT)/bench/kernel_i8.elf
.PHONY: lx6-bench-i8
.SECONDARY: $(LX6_OUT)/bench/kernel_i8.bc $(LX6_OUT)/bench/kernel_i8.o
lx6-bench-i8: $(LX6_BENCH_I8_ELF)
$(LX6_OUT)/bench/kernel_i8.bc: $(LX6_DIR)/bench/kernel_i8.c $(LX6_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_TEST_FLAGS) -I$(XTB_DIR) $(KERNELS_INC) -c -emit-llvm $< -o $@
$(LX6_BENCH_I8_ELF): $(LX6_OUT)/bench/kernel_i8.o $(LX6_SEMI_OBJ) $(LX6_CORE_OBJ) $(LX6_LIBC_OBJ) $(LX6_RT_OBJ) \
		$(LX6_TEST_RT_OBJ) $(LX6_DSP_OBJ) $(LX6_OUT)/port/start.o $(LX6_DIR)/tests.ld $(LX6_DIR)/sections.ld
	$(LX6_LD) --no-relax -L $(LX6_DIR) -T $(LX6_DIR)/tests.ld --gc-sections --no-undefined \
		$(filter %.o,$^) -o $@

# `make lx6-bench-sig`: bench/sig_verify.c, a signed model's check
# (rvne_sig.c over Mbed TLS, port.mk's LX6_MBEDTLS_OBJ) for
# tools/bench_sig.py, linked like a unit test.
.SECONDARY: $(LX6_OUT)/bench/sig_verify.bc $(LX6_OUT)/bench/sig_verify.o
LX6_BENCH_SIG_ELF := $(LX6_OUT)/bench/sig_verify.elf
.PHONY: lx6-bench-sig
lx6-bench-sig: $(LX6_BENCH_SIG_ELF)
$(LX6_OUT)/bench/sig_verify.bc: $(LX6_DIR)/bench/sig_verify.c $(LX6_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_TEST_FLAGS) -I$(XTB_DIR) -c -emit-llvm $< -o $@
$(LX6_BENCH_SIG_ELF): $(LX6_OUT)/bench/sig_verify.o $(LX6_MBEDTLS_OBJ) $(LX6_SEMI_OBJ) $(LX6_CORE_OBJ) $(LX6_LIBC_OBJ) \
		$(LX6_RT_OBJ) $(LX6_TEST_RT_OBJ) $(LX6_DSP_OBJ) $(LX6_OUT)/port/start.o $(LX6_DIR)/tests.ld $(LX6_DIR)/sections.ld
	$(LX6_LD) --no-relax -L $(LX6_DIR) -T $(LX6_DIR)/tests.ld --gc-sections --no-undefined \
		$(filter %.o,$^) -o $@
