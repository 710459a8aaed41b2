# The core's C unit tests on the emulated esp32-class core: each
# firmware/tests/test_<name>.c compiled like the firmware (port.mk's flags,
# the same core objects), linked into RAM (tests.ld) with a small C library
# over QEMU's semihosting (xtensa/semihost/), run under qemu-system-xtensa -M lx60
# -cpu de233_fpu -semihosting. The test's exit status is QEMU's; its report
# goes to the console. Included from port.mk; `make lx6-test` runs them all.
LX6_TESTS := test_head test_blob test_proto test_crc32 test_fp16 test_base64 test_expand test_int8
LX6_TEST_OUT := $(LX6_OUT)/tests
LX6_QEMU ?= qemu-system-xtensa
LX6_TEST_TIMEOUT ?= 300
LX6_TEST_FLAGS := -isystem $(FW)/xtensa/semihost/include $(CORE_INC) -I$(FW)/tests -Dmain=rvne_test_main
LX6_SEMI_OBJ := $(LX6_TEST_OUT)/semihost.o $(LX6_TEST_OUT)/double_abi.o $(LX6_TEST_OUT)/sh_call.o
# The runtime pieces the tests call beyond the firmware's: the core has no
# double unit, and test_head computes its tolerance in double (printf's
# float arguments travel as doubles too).
LX6_TEST_RT_SRC := sf_widen.c df_arith.c
LX6_TEST_RT_OBJ := $(addprefix $(LX6_OUT)/rt/,$(LX6_TEST_RT_SRC:.c=.o))
# Kernel tests (firmware/kernels/<op>/ktest_<name>.c: the assembly kernels
# against their C twins and models) where the kernels are built, and this
# core's own (ktests/ktest_mac16.c: the MAC16 unit itself).
ifeq ($(LX6_KERNELS),ae32)
LX6_KTEST_SRC := $(wildcard $(KERNELS_DIR)/*/ktest_*.c) $(wildcard $(LX6_DIR)/ktests/ktest_*.c)
LX6_KTESTS := $(basename $(notdir $(LX6_KTEST_SRC)))
endif
LX6_TEST_ELF := $(addprefix $(LX6_TEST_OUT)/,$(addsuffix .elf,$(LX6_TESTS) $(LX6_KTESTS)))
LX6_TEST_DATA := $(BUILD)/tests/fp16_table.bin $(BUILD)/golden/stamp $(BUILD)/tests/expf_table.bin
.SECONDARY: $(patsubst %.elf,%.bc,$(LX6_TEST_ELF)) $(patsubst %.elf,%.o,$(LX6_TEST_ELF)) \
	$(LX6_TEST_OUT)/semihost.bc $(LX6_TEST_OUT)/double_abi.bc $(LX6_SEMI_OBJ) $(LX6_TEST_RT_OBJ:.o=.bc) $(LX6_TEST_RT_OBJ)

lx6-test: $(addsuffix .run,$(basename $(LX6_TEST_ELF))) lx6-test-selftest

$(LX6_TEST_OUT)/test_%.bc: $(FW)/tests/test_%.c $(FW)/tests/check.h $(LX6_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_TEST_FLAGS) $(LX6_TEST_XFLAGS_$(basename $(notdir $@))) -c -emit-llvm $< -o $@
# Each ktest_<name>.bc from its source, wherever it lies.
$(foreach t,$(LX6_KTEST_SRC),$(eval $(LX6_TEST_OUT)/$(basename $(notdir $(t))).bc: $(t)))
$(patsubst %,$(LX6_TEST_OUT)/%.bc,$(LX6_KTESTS)): $(FW)/tests/check.h $(LX6_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_TEST_FLAGS) $(KERNELS_INC) -c -emit-llvm $(filter %.c,$^) -o $@
$(LX6_TEST_OUT)/ktest_exp.elf: $(LX6_TEST_OUT)/fpu_probe.o
$(LX6_TEST_OUT)/fpu_probe.o: $(KERNELS_DIR)/softmax/fpu_probe.S
	@mkdir -p $(dir $@)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $< -o $@
# ktest_mac16 checks the core's MAC16 unit itself (no kernel in it): it has
# no wrong-kernel twin below.
$(LX6_TEST_OUT)/ktest_mac16.elf: $(LX6_TEST_OUT)/mac16_probe.o
$(LX6_TEST_OUT)/mac16_probe.o: $(LX6_DIR)/ktests/mac16_probe.S
	@mkdir -p $(dir $@)
	$(LX6_CLANG) -E -P -x assembler-with-cpp $< -o $(@:.o=.s)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $(@:.o=.s) -o $@
# Sampled inputs and the results of the exponential's C model (test_expf).
$(BUILD)/tests/expf_table.bin: $(BUILD)/tests/test_expf
	$< --table $@
$(LX6_TEST_OUT)/double_abi.bc: $(FW)/xtensa/semihost/double_abi.c $(RT_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(RT_INC) -c -emit-llvm $< -o $@
$(LX6_TEST_OUT)/semihost.bc: $(FW)/xtensa/semihost/semihost.c $(wildcard $(FW)/xtensa/semihost/include/*.h)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) -isystem $(FW)/xtensa/semihost/include $(RT_INC) -DRVNE_TEST_BUILD_DIR='"$(BUILD)"' -c -emit-llvm $< -o $@
$(LX6_TEST_OUT)/sh_call.o: $(FW)/xtensa/semihost/sh_call.S
	@mkdir -p $(dir $@)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $< -o $@

$(LX6_TEST_OUT)/%.elf: $(LX6_TEST_OUT)/%.o $(LX6_SEMI_OBJ) $(LX6_CORE_OBJ) $(LX6_DSP_OBJ) $(LX6_LIBC_OBJ) $(LX6_RT_OBJ) \
		$(LX6_TEST_RT_OBJ) $(LX6_OUT)/port/start.o $(LX6_DIR)/tests.ld $(LX6_DIR)/sections.ld
	$(LX6_LD) --no-relax -L $(LX6_DIR) -T $(LX6_DIR)/tests.ld --gc-sections --no-undefined \
		$(filter %.o,$^) -o $@

# Runs every time `make lx6-test` is asked, like the host's `make test`.
$(LX6_TEST_OUT)/%.run: $(LX6_TEST_OUT)/%.elf $(LX6_TEST_DATA) RVNE_TESTS_FORCE
	timeout $(LX6_TEST_TIMEOUT) $(LX6_QEMU) -M lx60 -cpu de233_fpu -semihosting -nographic \
		-monitor none -serial none -kernel $<

# The harness must be able to fail: a test with failing checks and one that
# faults both end QEMU non-zero, with their reason on the console.
LX6_SELFTEST := $(LX6_TEST_OUT)/selftest_fail.elf $(LX6_TEST_OUT)/selftest_fault.elf
.PHONY: lx6-test-selftest
.SECONDARY: $(LX6_SELFTEST:.elf=.bc) $(LX6_SELFTEST:.elf=.o)
$(LX6_TEST_OUT)/selftest_fail.bc: $(FW)/xtensa/semihost/selftest.c $(FW)/tests/check.h
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_TEST_FLAGS) -c -emit-llvm $< -o $@
$(LX6_TEST_OUT)/selftest_fault.bc: $(FW)/xtensa/semihost/selftest.c $(FW)/tests/check.h
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_TEST_FLAGS) -DSELFTEST_FAULT -c -emit-llvm $< -o $@
lx6-test-selftest: $(LX6_SELFTEST)
	@out=$$(timeout 60 $(LX6_QEMU) -M lx60 -cpu de233_fpu -semihosting -nographic -monitor none \
		-serial none -kernel $(LX6_TEST_OUT)/selftest_fail.elf 2>&1); rc=$$?; \
	if [ $$rc -ne 1 ] || ! echo "$$out" | grep -q "selftest: 2 checks, 2 failed"; then \
		echo "lx6-test-selftest: failing checks gave exit $$rc: $$out" >&2; exit 1; fi
	@out=$$(timeout 60 $(LX6_QEMU) -M lx60 -cpu de233_fpu -semihosting -nographic -monitor none \
		-serial none -kernel $(LX6_TEST_OUT)/selftest_fault.elf 2>&1); rc=$$?; \
	if [ $$rc -ne 70 ] || ! echo "$$out" | grep -q "lx6 test FAULT kind=4 exccause=0x00000000"; then \
		echo "lx6-test-selftest: a fault gave exit $$rc: $$out" >&2; exit 1; fi
	@echo "lx6-test-selftest: failing checks exit 1, a fault exits 70 (the harness can fail)"

# The assembly kernels against their C twins (firmware/kernels/test_dsp.c), and
# the same test linked against deliberately wrong kernels (-DRVNE_DSP_DEFECT:
# one wrong element in each) must fail naming every kernel: the comparison
# can fail. Only where the kernels are built (LX6_KERNELS=ae32).
ifeq ($(LX6_KERNELS),ae32)
LX6_DSP_DEFECT_OBJ := $(patsubst %,$(LX6_TEST_OUT)/dsp_defect/%.o,$(LX6_KERNEL_SRC))
.PHONY: lx6-test-dsp-defect
.SECONDARY: $(LX6_TEST_OUT)/test_dsp.bc $(LX6_TEST_OUT)/test_dsp.o $(LX6_DSP_DEFECT_OBJ)
lx6-test: $(LX6_TEST_OUT)/test_dsp.run lx6-test-dsp-defect

$(LX6_TEST_OUT)/test_dsp.bc: $(KERNELS_DIR)/test_dsp.c $(FW)/tests/check.h $(LX6_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_TEST_FLAGS) -c -emit-llvm $< -o $@
$(LX6_TEST_OUT)/dsp_defect/matvec/matvec_f16_finite_ae32.o: $(KERNELS_DIR)/matvec/matvec_f16_ae32.S
$(LX6_TEST_OUT)/dsp_defect/%.o: $(KERNELS_DIR)/%.S $(KERNELS_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) -E -P -x assembler-with-cpp $(KERNELS_INC) -DRVNE_DSP_DEFECT $< -o $(@:.o=.s)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $(@:.o=.s) -o $@
$(LX6_TEST_OUT)/test_dsp_defect.elf: $(LX6_TEST_OUT)/test_dsp.o $(LX6_SEMI_OBJ) $(LX6_DSP_DEFECT_OBJ) \
		$(LX6_OUT)/kernels/kernels_ae32.o $(LX6_CORE_OBJ) $(LX6_LIBC_OBJ) $(LX6_RT_OBJ) $(LX6_TEST_RT_OBJ) \
		$(LX6_OUT)/port/start.o $(LX6_DIR)/tests.ld $(LX6_DIR)/sections.ld
	$(LX6_LD) --no-relax -L $(LX6_DIR) -T $(LX6_DIR)/tests.ld --gc-sections --no-undefined \
		$(filter %.o,$^) -o $@
lx6-test-dsp-defect: $(LX6_TEST_OUT)/test_dsp_defect.elf
	@out=$$(timeout 120 $(LX6_QEMU) -M lx60 -cpu de233_fpu -semihosting -nographic -monitor none \
		-serial none -kernel $< 2>&1); rc=$$?; \
	for k in matvec_f32 scores_f32 wsum_f32; do \
		if [ $$rc -ne 1 ] || ! echo "$$out" | grep -q "test_dsp: $$k: .*FAILED"; then \
			echo "lx6-test-dsp-defect: the wrong $$k kernel was not caught (exit $$rc): $$out" >&2; exit 1; fi; \
	done
	@echo "lx6-test-dsp-defect: a wrong matvec_f32, scores_f32 and wsum_f32 each fail test_dsp"

# Likewise the ktests (softmax_exp_f32, matvec_f16, matvec_f16_finite, proj_i8, proj16_i8, dots_i8, softmax_i8, x16_i8; scores_i8 and
# wsum_i8, the latter the projection's wrong kernel on -p): each linked against the wrong kernels must fail.
LX6_KTEST_DEFECT := $(addprefix $(LX6_TEST_OUT)/,$(addsuffix _defect.elf,$(filter-out ktest_mac16,$(LX6_KTESTS))))
.PHONY: lx6-test-ktest-defect
lx6-test: lx6-test-ktest-defect
$(LX6_TEST_OUT)/ktest_exp_defect.elf: $(LX6_TEST_OUT)/fpu_probe.o
$(LX6_TEST_OUT)/ktest_%_defect.elf: $(LX6_TEST_OUT)/ktest_%.o $(LX6_SEMI_OBJ) $(LX6_DSP_DEFECT_OBJ) \
		$(LX6_OUT)/kernels/kernels_ae32.o $(LX6_CORE_OBJ) $(LX6_LIBC_OBJ) $(LX6_RT_OBJ) $(LX6_TEST_RT_OBJ) \
		$(LX6_OUT)/port/start.o $(LX6_DIR)/tests.ld $(LX6_DIR)/sections.ld
	$(LX6_LD) --no-relax -L $(LX6_DIR) -T $(LX6_DIR)/tests.ld --gc-sections --no-undefined \
		$(filter %.o,$^) -o $@
lx6-test-ktest-defect: $(LX6_KTEST_DEFECT) $(LX6_TEST_DATA)
	@for e in $(LX6_KTEST_DEFECT); do \
		out=$$(timeout $(LX6_TEST_TIMEOUT) $(LX6_QEMU) -M lx60 -cpu de233_fpu -semihosting -nographic \
			-monitor none -serial none -kernel $$e 2>&1); rc=$$?; \
		if [ $$rc -ne 1 ] || ! echo "$$out" | grep -q "checks, [1-9][0-9]* failed"; then \
			echo "lx6-test-ktest-defect: $$e passed against the wrong kernels (exit $$rc): $$out" >&2; exit 1; fi; \
	done
	@out=$$(timeout $(LX6_TEST_TIMEOUT) $(LX6_QEMU) -M lx60 -cpu de233_fpu -semihosting -nographic \
		-monitor none -serial none -kernel $(LX6_TEST_OUT)/ktest_f16_finite_defect.elf 2>&1); \
	if ! echo "$$out" | grep -q "matvec_f16_finite: .*FAILED"; then \
		echo "lx6-test-ktest-defect: the wrong matvec_f16_finite was not caught: $$out" >&2; exit 1; fi
	@out=$$(timeout $(LX6_TEST_TIMEOUT) $(LX6_QEMU) -M lx60 -cpu de233_fpu -semihosting -nographic \
		-monitor none -serial none -kernel $(LX6_TEST_OUT)/ktest_i8_defect.elf 2>&1); \
	for k in proj_i8 proj16_i8 dots_i8; do \
		if ! echo "$$out" | grep -q "ktest_i8: $$k: .*FAILED"; then \
			echo "lx6-test-ktest-defect: the wrong $$k (matvec_i8_mac16.S) was not caught: $$out" >&2; exit 1; fi; \
	done
	@out=$$(timeout $(LX6_TEST_TIMEOUT) $(LX6_QEMU) -M lx60 -cpu de233_fpu -semihosting -nographic \
		-monitor none -serial none -kernel $(LX6_TEST_OUT)/ktest_attn_i8_defect.elf 2>&1); \
	for k in scores_i8 wsum_i8; do \
		if ! echo "$$out" | grep -q "ktest_attn_i8: $$k: .*FAILED"; then \
			echo "lx6-test-ktest-defect: the wrong $$k (scores_i8_mac16.S, matvec_i8_mac16.S) was not caught: $$out" >&2; \
			exit 1; fi; \
	done
	@out=$$(timeout $(LX6_TEST_TIMEOUT) $(LX6_QEMU) -M lx60 -cpu de233_fpu -semihosting -nographic \
		-monitor none -serial none -kernel $(LX6_TEST_OUT)/ktest_softmax_i8_defect.elf 2>&1); \
	if ! echo "$$out" | grep -q "softmax_i8: .*FAILED"; then \
		echo "lx6-test-ktest-defect: the wrong softmax_i8 (softmax_i8_lx6.S) was not caught: $$out" >&2; exit 1; fi
	@out=$$(timeout $(LX6_TEST_TIMEOUT) $(LX6_QEMU) -M lx60 -cpu de233_fpu -semihosting -nographic \
		-monitor none -serial none -kernel $(LX6_TEST_OUT)/ktest_x16_i8_defect.elf 2>&1); \
	if ! echo "$$out" | grep -q "x16_i8: .*FAILED"; then \
		echo "lx6-test-ktest-defect: the wrong x16_i8 (x16_i8_lx6.S) was not caught: $$out" >&2; exit 1; fi
	@echo "lx6-test-ktest-defect: a wrong softmax_exp_f32, matvec_f16, matvec_f16_finite, proj_i8, softmax_i8," \
		"proj16_i8, dots_i8, scores_i8, wsum_i8 and x16_i8 each fail their ktest"
endif

include $(LX6_DIR)/bench.mk
