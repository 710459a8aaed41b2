# The core's C unit tests on the emulated esp32-class core: each
# firmware/tests/test_<name>.c compiled like the firmware (port.mk's flags,
# the same core objects), linked into RAM (tests.ld) with a small C library
# over QEMU's semihosting (semihost/), run under qemu-system-xtensa -M lx60
# -cpu de233_fpu -semihosting. The test's exit status is QEMU's; its report
# goes to the console. Included from port.mk; `make lx6-test` runs them all.
LX6_TESTS := test_blob test_crc32 test_fp16 test_base64
# Built but not yet run in CI (docs/targets.md, "Not done"): test_proto's
# printf-heavy checks hit llc-22's variadic-argument bugs beyond the
# va_start one semihost.c corrects (64-bit arguments arrive garbled), and
# test_head does its tolerance arithmetic in double, for which this core has
# no runtime. `make lx6-test-all` runs them too.
LX6_TESTS_PENDING := test_head test_proto
LX6_TEST_OUT := $(LX6_OUT)/tests
LX6_QEMU ?= qemu-system-xtensa
LX6_TEST_TIMEOUT ?= 300
LX6_TEST_FLAGS := -isystem $(LX6_DIR)/semihost/include $(CORE_INC) -I$(FW)/tests -Dmain=rvne_test_main
# The core has no double-precision unit and there is no soft-double runtime
# here: test_head's own tolerance arithmetic (|a-b| <= atol + rtol*|b|, in
# double on the host) runs in single precision on the emulated core. The
# kernel under test is the same code either way (docs/targets.md).
LX6_TEST_XFLAGS_test_head := -Ddouble=float -fsingle-precision-constant
LX6_SEMI_OBJ := $(LX6_TEST_OUT)/semihost.o $(LX6_TEST_OUT)/sh_call.o
# The runtime pieces the tests call beyond the firmware's: printf's float
# arguments travel as doubles.
LX6_TEST_RT_SRC := sf_widen.c
LX6_TEST_RT_OBJ := $(addprefix $(LX6_OUT)/rt/,$(LX6_TEST_RT_SRC:.c=.o))
LX6_TEST_ELF := $(addprefix $(LX6_TEST_OUT)/,$(addsuffix .elf,$(LX6_TESTS) $(LX6_TESTS_PENDING)))
LX6_TEST_DATA := $(BUILD)/tests/fp16_table.bin $(BUILD)/golden/stamp
.SECONDARY: $(patsubst %.elf,%.bc,$(LX6_TEST_ELF)) $(patsubst %.elf,%.o,$(LX6_TEST_ELF)) \
	$(LX6_TEST_OUT)/semihost.bc $(LX6_SEMI_OBJ) $(LX6_TEST_RT_OBJ:.o=.bc) $(LX6_TEST_RT_OBJ)

.PHONY: lx6-test-all
lx6-test: $(addprefix $(LX6_TEST_OUT)/,$(addsuffix .run,$(LX6_TESTS)))
lx6-test-all: $(addsuffix .run,$(basename $(LX6_TEST_ELF)))

$(LX6_TEST_OUT)/test_%.bc: $(FW)/tests/test_%.c $(FW)/tests/check.h $(LX6_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_TEST_FLAGS) $(LX6_TEST_XFLAGS_$(basename $(notdir $@))) -c -emit-llvm $< -o $@
$(LX6_TEST_OUT)/semihost.bc: $(LX6_DIR)/semihost/semihost.c $(wildcard $(LX6_DIR)/semihost/include/*.h)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) -isystem $(LX6_DIR)/semihost/include $(RT_INC) -DRVNE_TEST_BUILD_DIR='"$(BUILD)"' -c -emit-llvm $< -o $@
$(LX6_TEST_OUT)/sh_call.o: $(LX6_DIR)/semihost/sh_call.S
	@mkdir -p $(dir $@)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $< -o $@

$(LX6_TEST_OUT)/%.elf: $(LX6_TEST_OUT)/%.o $(LX6_SEMI_OBJ) $(LX6_CORE_OBJ) $(LX6_LIBC_OBJ) $(LX6_RT_OBJ) \
		$(LX6_TEST_RT_OBJ) $(LX6_OUT)/port/start.o $(LX6_DIR)/tests.ld $(LX6_DIR)/sections.ld
	$(LX6_LD) --no-relax -L $(LX6_DIR) -T $(LX6_DIR)/tests.ld --gc-sections --no-undefined \
		$(filter %.o,$^) -o $@

# Runs every time `make lx6-test` is asked, like the host's `make test`.
$(LX6_TEST_OUT)/%.run: $(LX6_TEST_OUT)/%.elf $(LX6_TEST_DATA) RVNE_TESTS_FORCE
	timeout $(LX6_TEST_TIMEOUT) $(LX6_QEMU) -M lx60 -cpu de233_fpu -semihosting -nographic \
		-monitor none -serial none -kernel $<
