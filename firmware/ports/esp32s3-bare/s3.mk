# The kernels and the core's unit tests on the ESP32-S3's own core: each
# test a bare-metal program booted by the chip's mask ROM on Espressif's
# QEMU (-machine esp32s3), with the semihosting C library the lx6 port's
# tests use too (xtensa/semihost) and the windowed cores' start-up
# (xtensa/windowed/start.S, entered from rom_entry.S), laid out by
# rom_boot.ld, made into an ESP image by esptool and run by run.sh. `make
# s3-test` runs them all (docs/targets.md, "The kernels on the ESP32-S3's
# core"). Included from firmware/Makefile after the ports: the llvm/ set
# relinks the lx6 port's built objects.
#
# `make s3-bench` builds the instruction-count bench (bottom of this file).
#
# Two builds of the same sources:
#   gcc/   everything compiled by the S3's GCC (xtensa-esp32s3-elf), the .S
#          files assembled by GNU as: what the ESP-IDF app ships, so the
#          DSP twin tests here are the ones that matter most;
#   llvm/  the lx6 port's own test objects (LLVM), unchanged, relinked.
# Not run here: test_head and test_proto. Their inputs do not fit the RAM
# the ROM leaves (about 330 KB): test_head maps golden blobs of up to 332 KB
# beside its arenas, test_proto needs 2.2 MB. They run on the lx6 core and
# the host; the chip's PSRAM is not set up by this harness.
S3B_DIR := $(FW)/ports/esp32s3-bare
S3B_OUT := $(BUILD)/esp32s3-bare
S3B_CC ?= xtensa-esp32s3-elf-gcc
S3B_QEMU ?= $(RVNE_QEMU_ESP)
S3B_TIMEOUT ?= 300
# The flash file: the ROM loads the image at offset 0; QEMU takes 2, 4, 8
# or 16 MiB.
S3B_FLASH := 2M
S3B_TESTS := test_crc32 test_blob test_fp16 test_base64 test_dsp ktest_exp ktest_matvec_f16 ktest_f16_finite
S3B_DEFECT := test_dsp ktest_exp ktest_matvec_f16 ktest_f16_finite

.PHONY: s3-test s3-test-tools s3-test-selftest s3-test-defect

# ---- the GCC build -----------------------------------------------------
# What the app ships, compiled and linked as ESP-IDF builds it: the core
# and kernels_ae32.c with the app's component flags (S3B_APP_CFLAGS), the
# runtime calls from libgcc and newlib's libm (S3B_G_RT). The tests and the
# harness are built freestanding (S3B_CFLAGS) over the small C library of
# the lx6 tests: its headers come first, newlib's only fill in the rest
# (limits.h).
# RVNE_DSP_AES3: the S3's own kernels (kernels/<op>/NAME_aes3.S: S3B_AES3) replace
# kernels_ae32.c's drivers, which become their fallbacks, as in the app's
# component for the esp32s3.
S3B_AES3 := matvec_f32 scores_f32 wsum_f32
S3B_CFLAGS := -std=c99 -O2 -mlongcalls -ffunction-sections -fdata-sections -Wall -Wextra \
	-ffreestanding -isystem $(FW)/xtensa/libc/include -fno-common -DRVNE_DSP_AES3 \
	$(foreach k,$(shell echo $(LX6_DSP_KERNELS) | tr a-z A-Z),-DRVNE_HAVE_$(k)_AE32)
# The rvne_core component's flags in the app (CONFIG_COMPILER_OPTIMIZATION_PERF
# and ESP-IDF's own; components/rvne_core/CMakeLists.txt: -std=gnu99). GNU C
# lets GCC contract a * b + c into madd.s, which ISO C's -std=c99 does not:
# with -std=c99 the C twins took 61,500 more instructions a push than the
# app's. Not freestanding: the builtins are on, as in the app.
S3B_APP_CFLAGS := $(filter-out -std=c99 -ffreestanding,$(S3B_CFLAGS)) -std=gnu99 \
	-fstrict-volatile-bitfields -fno-jump-tables -fno-tree-switch-conversion
S3B_G := $(S3B_OUT)/gcc
S3B_G_CORE := $(patsubst $(FW)/core/src/%.c,$(S3B_G)/core/%.o,$(CORE_SRC))
S3B_G_DSP := $(S3B_G)/kernels/kernels_ae32.o $(patsubst %,$(S3B_G)/kernels/%.o,$(call kernel_src,$(LX6_DSP_KERNELS:=_ae32))) \
	$(patsubst %,$(S3B_G)/kernels/%.o,$(call kernel_src,$(S3B_AES3:=_aes3)))
S3B_G_AES3_DEFECT := $(patsubst %,$(S3B_G)/dsp_defect/%.o,$(call kernel_src,$(S3B_AES3:=_aes3)))
S3B_G_DSP_DEFECT := $(S3B_G)/kernels/kernels_ae32.o \
	$(patsubst %,$(S3B_G)/dsp_defect/%.o,$(call kernel_src,$(LX6_DSP_KERNELS:=_ae32))) $(S3B_G_AES3_DEFECT)
# The runtime calls (float division, 64-bit integer arithmetic, doubles)
# are libgcc's, as in the app (which reaches the same code in the S3's
# ROM), and expf and sqrtf newlib's libm's (S3B_G_LINK): not the lx6 port's
# rt_abi.c over the soft-float runtime and its expf.c, which the LLVM build
# keeps. A float division is then the FPU's div0.s/maddn.s/divn.s sequence,
# 28 instructions, where the soft-float one took hundreds, and the C
# twins' expf newlib's (about 22 instructions an element fewer): the bench
# counts what ships. errno.c stands for newlib's libc under libm. The
# semihosting printf still narrows its double arguments with the runtime's
# rvne_rt_truncdfsf2 (LX6_TEST_RT_SRC).
S3B_G_RT := $(patsubst %.c,$(S3B_G)/libc/%.o,$(filter-out rt_abi.c expf.c,$(LX6_LIBC_SRC))) $(S3B_G)/errno.o \
	$(addprefix $(S3B_G)/rt/,$(LX6_TEST_RT_SRC:.c=.o)) $(S3B_G)/semihost.o $(S3B_G)/sh_call.o $(S3B_G)/start.o $(S3B_G)/rom_entry.o
# The headers what is built here reads: the core's, the kernels', the
# freestanding C library's, the board's (start.S) and the runtime's.
S3B_HDR := $(wildcard $(FW)/core/include/rvne/*.h) $(KERNELS_HDR) $(wildcard $(FW)/xtensa/libc/include/*.h) \
	$(XTB_HDR) $(RT_HDR)
S3B_G_DEPS := $(S3B_HDR) $(FW)/tests/check.h $(S3B_DIR)/s3.mk

$(S3B_G)/core/%.o: $(FW)/core/src/%.c $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_APP_CFLAGS) $(CORE_INC) -c $< -o $@
$(S3B_G)/kernels/%.o: $(KERNELS_DIR)/%.c $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_APP_CFLAGS) $(CORE_INC) -c $< -o $@
# -Wall -Werror: the app's component preprocesses them with ESP-IDF's
# -Werror=all.
$(S3B_G)/kernels/%.o: $(KERNELS_DIR)/%.S $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) -Wall -Werror $(KERNELS_INC) -c $< -o $@
$(S3B_G)/dsp_defect/%.o: $(KERNELS_DIR)/%.S $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) -Wall -Werror $(KERNELS_INC) -DRVNE_DSP_DEFECT -c $< -o $@
$(S3B_G)/libc/%.o: $(FW)/xtensa/libc/%.c $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_CFLAGS) $(RT_INC) -c $< -o $@
$(S3B_G)/rt/%.o: $(RT_DIR)/%.c $(RT_HDR) $(S3B_DIR)/s3.mk
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_CFLAGS) $(RT_CFLAGS) $(RT_INC) -c $< -o $@
$(S3B_G)/errno.o: $(S3B_DIR)/errno.c $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_CFLAGS) -c $< -o $@
$(S3B_G)/semihost.o: $(FW)/xtensa/semihost/semihost.c $(wildcard $(FW)/xtensa/semihost/include/*.h) $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_CFLAGS) -isystem $(FW)/xtensa/semihost/include $(RT_INC) \
		-DRVNE_TEST_BUILD_DIR='"$(BUILD)"' -c $< -o $@
$(S3B_G)/sh_call.o $(S3B_G)/fpu_probe.o $(S3B_G)/start.o: $(S3B_G)/%.o: \
		$(wildcard $(FW)/xtensa/semihost/sh_call.S $(KERNELS_DIR)/softmax/fpu_probe.S $(FW)/xtensa/windowed/start.S) $(XTB_HDR)
	@mkdir -p $(dir $@)
	$(S3B_CC) -I$(XTB_DIR) -c $(filter %/$*.S,$^) -o $@
$(S3B_G)/rom_entry.o: $(S3B_DIR)/rom_entry.S
	@mkdir -p $(dir $@)
	$(S3B_CC) -c $< -o $@
$(S3B_G)/test_%.o: $(FW)/tests/test_%.c $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_CFLAGS) $(LX6_TEST_FLAGS) $(LX6_TEST_XFLAGS_test_$*) -c $< -o $@
$(S3B_G)/test_dsp.o: $(KERNELS_DIR)/test_dsp.c $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_CFLAGS) $(LX6_TEST_FLAGS) -c $< -o $@
# Each ktest_<name>.o from its source in the kernels' folders.
$(foreach t,$(wildcard $(KERNELS_DIR)/*/ktest_*.c),$(eval $(S3B_G)/$(basename $(notdir $(t))).o: $(t)))
$(S3B_G)/ktest_%.o: $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_CFLAGS) $(LX6_TEST_FLAGS) $(KERNELS_INC) -c $(filter %.c,$^) -o $@
$(S3B_G)/selftest_fail.o $(S3B_G)/selftest_fault.o: $(S3B_G)/selftest_%.o: $(FW)/xtensa/semihost/selftest.c $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_CFLAGS) $(LX6_TEST_FLAGS) $(if $(filter fault,$*),-DSELFTEST_FAULT) -c $< -o $@

# GNU ld's relaxation is fine here: every object comes from GNU as. This
# GCC marks no object's stack (nor does libgcc): nothing here runs under an
# OS that would care.
S3B_G_LINK = $(S3B_CC) -nostdlib -Wl,--gc-sections -Wl,--no-undefined -Wl,--no-warn-execstack -T $(S3B_DIR)/rom_boot.ld \
	$(filter %.o,$^) -lm -lgcc -o $@
$(S3B_G)/%.elf: $(S3B_G)/%.o $(S3B_G_CORE) $(S3B_G_DSP) $(S3B_G_RT) $(S3B_DIR)/rom_boot.ld
	$(S3B_G_LINK)
$(S3B_G)/%_defect.elf: $(S3B_G)/%.o $(S3B_G_CORE) $(S3B_G_DSP_DEFECT) $(S3B_G_RT) $(S3B_DIR)/rom_boot.ld
	$(S3B_G_LINK)
$(S3B_G)/ktest_exp.elf $(S3B_G)/ktest_exp_defect.elf: $(S3B_G)/fpu_probe.o
# The S3's own kernels wrong, every other kernel right: test_dsp must still
# fail, for each of them.
$(S3B_G)/test_dsp_aes3_defect.elf: $(S3B_G)/test_dsp.o $(S3B_G_CORE) $(filter-out %_aes3.o,$(S3B_G_DSP)) \
		$(S3B_G_AES3_DEFECT) $(S3B_G_RT) $(S3B_DIR)/rom_boot.ld
	$(S3B_G_LINK)

# ---- the LLVM build: the lx6 tests' objects, relinked ------------------
S3B_L := $(S3B_OUT)/llvm
S3B_L_RT := $(LX6_SEMI_OBJ) $(LX6_LIBC_OBJ) $(LX6_RT_OBJ) $(LX6_TEST_RT_OBJ) $(LX6_OUT)/port/start.o \
	$(S3B_L)/rom_entry.o
$(S3B_L)/rom_entry.o: $(S3B_DIR)/rom_entry.S
	@mkdir -p $(dir $@)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $< -o $@
S3B_L_LINK = $(LX6_LD) --no-relax -T $(S3B_DIR)/rom_boot.ld --gc-sections --no-undefined $(filter %.o,$^) -o $@
$(S3B_L)/%.elf: $(LX6_TEST_OUT)/%.o $(LX6_CORE_OBJ) $(LX6_DSP_OBJ) $(S3B_L_RT) $(S3B_DIR)/rom_boot.ld
	@mkdir -p $(dir $@)
	$(S3B_L_LINK)
$(S3B_L)/%_defect.elf: $(LX6_TEST_OUT)/%.o $(LX6_CORE_OBJ) $(LX6_DSP_DEFECT_OBJ) $(LX6_OUT)/kernels/kernels_ae32.o \
		$(S3B_L_RT) $(S3B_DIR)/rom_boot.ld
	@mkdir -p $(dir $@)
	$(S3B_L_LINK)
$(S3B_L)/ktest_exp.elf $(S3B_L)/ktest_exp_defect.elf: $(LX6_TEST_OUT)/fpu_probe.o

# ---- image and run -----------------------------------------------------
# The ESP image the ROM boots (chip id 9, checksum, SHA-256 appended),
# padded to a flash size QEMU accepts.
$(S3B_OUT)/%.img: $(S3B_OUT)/%.elf
	$(PYTHON) -m esptool --chip esp32s3 elf2image -o $@.tmp $< >/dev/null
	truncate -s $(S3B_FLASH) $@.tmp
	mv $@.tmp $@

S3B_SETS := gcc llvm
S3B_RUN := $(foreach s,$(S3B_SETS),$(addprefix $(S3B_OUT)/$(s)/,$(addsuffix .run,$(S3B_TESTS))))
.SECONDARY: $(S3B_RUN:.run=.elf) $(S3B_RUN:.run=.img) $(S3B_G_CORE) $(S3B_G_DSP) $(S3B_G_DSP_DEFECT) $(S3B_G_RT) \
	$(patsubst %,$(S3B_G)/%.o,$(S3B_TESTS) selftest_fail selftest_fault) $(S3B_G)/fpu_probe.o \
	$(S3B_G)/test_dsp_aes3_defect.elf $(S3B_G)/test_dsp_aes3_defect.img \
	$(foreach s,$(S3B_SETS),$(patsubst %,$(S3B_OUT)/$(s)/%_defect.img,$(S3B_DEFECT)) \
		$(S3B_OUT)/$(s)/selftest_fail.img $(S3B_OUT)/$(s)/selftest_fault.img)

s3-test: $(S3B_RUN) s3-test-selftest s3-test-defect
s3-test-tools:
	@command -v $(S3B_CC) >/dev/null || { echo "s3-test: $(S3B_CC) not on PATH (README: Install)" >&2; exit 1; }
	@[ -n "$(S3B_QEMU)" ] && [ -x "$(S3B_QEMU)" ] || \
		{ echo "s3-test: RVNE_QEMU_ESP does not name Espressif's qemu-system-xtensa (README: Install)" >&2; exit 1; }

$(S3B_OUT)/%.run: $(S3B_OUT)/%.img $(LX6_TEST_DATA) s3-test-tools RVNE_TESTS_FORCE
	RVNE_QEMU_ESP=$(S3B_QEMU) $(S3B_DIR)/run.sh $< $(S3B_TIMEOUT)

# The harness must be able to fail, in both builds: failing checks end
# QEMU with 1, a fault with 70, each saying why.
s3-test-selftest: s3-test-tools $(foreach s,$(S3B_SETS),$(S3B_OUT)/$(s)/selftest_fail.img $(S3B_OUT)/$(s)/selftest_fault.img)
	@for s in $(S3B_SETS); do \
		out=$$(RVNE_QEMU_ESP=$(S3B_QEMU) $(S3B_DIR)/run.sh $(S3B_OUT)/$$s/selftest_fail.img 60 2>&1); rc=$$?; \
		if [ $$rc -ne 1 ] || ! echo "$$out" | grep -q "selftest: 2 checks, 2 failed"; then \
			echo "s3-test-selftest: $$s: failing checks gave exit $$rc: $$out" >&2; exit 1; fi; \
		out=$$(RVNE_QEMU_ESP=$(S3B_QEMU) $(S3B_DIR)/run.sh $(S3B_OUT)/$$s/selftest_fault.img 60 2>&1); rc=$$?; \
		if [ $$rc -ne 70 ] || ! echo "$$out" | grep -q "lx6 test FAULT kind=4 exccause=0x00000000"; then \
			echo "s3-test-selftest: $$s: a fault gave exit $$rc: $$out" >&2; exit 1; fi; \
	done
	@echo "s3-test-selftest: on the S3 core (gcc and llvm builds) failing checks exit 1, a fault exits 70"

# Each kernel test linked against the deliberately wrong kernels
# (-DRVNE_DSP_DEFECT, one wrong element each) must fail, naming each
# kernel test_dsp covers: the comparisons can fail on this core too.
s3-test-defect: s3-test-tools $(LX6_TEST_DATA) $(S3B_G)/test_dsp_aes3_defect.img \
		$(foreach s,$(S3B_SETS),$(patsubst %,$(S3B_OUT)/$(s)/%_defect.img,$(S3B_DEFECT)))
	@for s in $(S3B_SETS); do for t in $(S3B_DEFECT); do \
		out=$$(RVNE_QEMU_ESP=$(S3B_QEMU) $(S3B_DIR)/run.sh $(S3B_OUT)/$$s/$${t}_defect.img $(S3B_TIMEOUT) 2>&1); rc=$$?; \
		if [ $$rc -ne 1 ] || ! echo "$$out" | grep -q "checks, [1-9][0-9]* failed"; then \
			echo "s3-test-defect: $$s $$t passed against the wrong kernels (exit $$rc): $$out" >&2; exit 1; fi; \
		if [ $$t = test_dsp ]; then for k in matvec_f32 scores_f32 wsum_f32; do \
			echo "$$out" | grep -q "test_dsp: $$k: .*FAILED" || \
				{ echo "s3-test-defect: $$s: the wrong $$k kernel was not caught: $$out" >&2; exit 1; }; \
		done; fi; \
		if [ $$t = ktest_f16_finite ]; then echo "$$out" | grep -q "matvec_f16_finite: .*FAILED" || \
			{ echo "s3-test-defect: $$s: the wrong matvec_f16_finite kernel was not caught: $$out" >&2; exit 1; }; fi; \
	done; done
	@out=$$(RVNE_QEMU_ESP=$(S3B_QEMU) $(S3B_DIR)/run.sh $(S3B_G)/test_dsp_aes3_defect.img $(S3B_TIMEOUT) 2>&1); rc=$$?; \
	[ $$rc -eq 1 ] || { echo "s3-test-defect: the wrong S3 kernels passed test_dsp (exit $$rc): $$out" >&2; exit 1; }; \
	for k in $(S3B_AES3); do echo "$$out" | grep -q "test_dsp: $$k: .*FAILED" || \
		{ echo "s3-test-defect: a wrong $${k}_aes3 was not caught: $$out" >&2; exit 1; }; done
	@echo "s3-test-defect: on the S3 core (gcc and llvm builds) the wrong kernels fail test_dsp, ktest_exp, ktest_matvec_f16, ktest_f16_finite; each wrong S3 kernel alone ($(S3B_AES3)) fails test_dsp"

# ---- the bench: instructions per push by the core's ICOUNT --------------
# `make s3-bench` (tools/bench_icount.py runs it): bench/push_icount.c over
# the core as the app builds it (gcc-asm: GCC with the assembly kernels;
# gcc-c: GCC with the C twins only) and the lx6 port's LLVM objects
# (llvm-asm: the `qemu` board's code, to set ICOUNT beside that board's
# -icount figures).
S3B_BENCH := $(S3B_OUT)/bench
# kernels-asm / kernels-c: bench/kernel_icount.c, each kernel alone at the
# default head's shapes, with the assembly kernels and with the C twins.
S3B_BENCH_IMG := $(addprefix $(S3B_BENCH)/,gcc-asm.img gcc-c.img llvm-asm.img gcc-asm-prof.img gcc-c-prof.img \
	kernels-asm.img kernels-c.img)
S3B_GC_CORE := $(patsubst $(FW)/core/src/%.c,$(S3B_OUT)/gcc-c/core/%.o,$(CORE_SRC))
# *-prof: the same with the core's phase markers (RVNE_PROFILE), for where
# a push's instructions go.
S3B_GP_CORE := $(patsubst $(FW)/core/src/%.c,$(S3B_OUT)/gcc-prof/core/%.o,$(CORE_SRC))
S3B_GCP_CORE := $(patsubst $(FW)/core/src/%.c,$(S3B_OUT)/gcc-c-prof/core/%.o,$(CORE_SRC))
S3B_BENCH_DEPS := $(S3B_HDR) $(S3B_DIR)/s3.mk $(S3B_DIR)/bench/icount.h $(FW)/xtensa/bench/bench_input.h
S3B_BENCH_INC := -I$(S3B_DIR)/bench -I$(FW)/xtensa/bench
.PHONY: s3-bench
.SECONDARY: $(S3B_BENCH_IMG:.img=.elf) $(S3B_GC_CORE) $(S3B_GP_CORE) $(S3B_GCP_CORE) $(S3B_G)/push_icount.o \
	$(S3B_G)/push_icount_prof.o $(S3B_G)/icount_loop.o $(S3B_G)/kernel_icount.o $(S3B_G)/bench_input.o $(S3B_OUT)/gcc-c/kernel_icount.o \
	$(S3B_L)/push_icount.bc $(S3B_L)/push_icount.o $(S3B_L)/icount_loop.o
s3-bench: s3-test-tools $(S3B_BENCH_IMG)

$(S3B_OUT)/gcc-c/core/%.o: $(FW)/core/src/%.c $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(filter-out -DRVNE_HAVE_%,$(S3B_APP_CFLAGS)) $(CORE_INC) -c $< -o $@
$(S3B_OUT)/gcc-prof/core/%.o: $(FW)/core/src/%.c $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_APP_CFLAGS) -DRVNE_PROFILE $(CORE_INC) -c $< -o $@
$(S3B_OUT)/gcc-c-prof/core/%.o: $(FW)/core/src/%.c $(S3B_G_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(filter-out -DRVNE_HAVE_%,$(S3B_APP_CFLAGS)) -DRVNE_PROFILE $(CORE_INC) -c $< -o $@
$(S3B_G)/push_icount.o $(S3B_G)/kernel_icount.o: $(S3B_G)/%.o: $(S3B_DIR)/bench/%.c $(S3B_BENCH_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_CFLAGS) $(LX6_TEST_FLAGS) $(S3B_BENCH_INC) -c $< -o $@
$(S3B_G)/bench_input.o: $(FW)/xtensa/bench/bench_input.c $(S3B_BENCH_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_CFLAGS) $(LX6_TEST_FLAGS) -c $< -o $@
$(S3B_OUT)/gcc-c/kernel_icount.o: $(S3B_DIR)/bench/kernel_icount.c $(S3B_BENCH_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(filter-out -DRVNE_HAVE_%,$(S3B_CFLAGS)) $(LX6_TEST_FLAGS) $(S3B_BENCH_INC) -c $< -o $@
$(S3B_G)/push_icount_prof.o: $(S3B_DIR)/bench/push_icount.c $(S3B_BENCH_DEPS)
	@mkdir -p $(dir $@)
	$(S3B_CC) $(S3B_CFLAGS) -DRVNE_PROFILE $(LX6_TEST_FLAGS) $(S3B_BENCH_INC) -c $< -o $@
$(S3B_G)/icount_loop.o: $(S3B_DIR)/bench/icount_loop.S
	@mkdir -p $(dir $@)
	$(S3B_CC) -c $< -o $@
$(S3B_L)/push_icount.bc: $(S3B_DIR)/bench/push_icount.c $(S3B_BENCH_DEPS)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_TEST_FLAGS) $(S3B_BENCH_INC) -c -emit-llvm $< -o $@
$(S3B_L)/push_icount.o: $(S3B_L)/push_icount.bc
	$(LX6_LLC) $(LX6_LLC_FLAGS) $< -o $(@:.o=.s)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $(@:.o=.s) -o $@
$(S3B_L)/icount_loop.o: $(S3B_DIR)/bench/icount_loop.S
	@mkdir -p $(dir $@)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $< -o $@

$(S3B_BENCH)/gcc-asm.elf: $(S3B_G)/push_icount.o $(S3B_G)/bench_input.o $(S3B_G)/icount_loop.o $(S3B_G_CORE) $(S3B_G_DSP) $(S3B_G_RT) \
		$(S3B_DIR)/rom_boot.ld
	@mkdir -p $(dir $@)
	$(S3B_G_LINK)
$(S3B_BENCH)/gcc-c.elf: $(S3B_G)/push_icount.o $(S3B_G)/bench_input.o $(S3B_G)/icount_loop.o $(S3B_GC_CORE) $(S3B_G_RT) $(S3B_DIR)/rom_boot.ld
	@mkdir -p $(dir $@)
	$(S3B_G_LINK)
$(S3B_BENCH)/gcc-asm-prof.elf: $(S3B_G)/push_icount_prof.o $(S3B_G)/bench_input.o $(S3B_G)/icount_loop.o $(S3B_GP_CORE) $(S3B_G_DSP) \
		$(S3B_G_RT) $(S3B_DIR)/rom_boot.ld
	@mkdir -p $(dir $@)
	$(S3B_G_LINK)
$(S3B_BENCH)/gcc-c-prof.elf: $(S3B_G)/push_icount_prof.o $(S3B_G)/bench_input.o $(S3B_G)/icount_loop.o $(S3B_GCP_CORE) $(S3B_G_RT) \
		$(S3B_DIR)/rom_boot.ld
	@mkdir -p $(dir $@)
	$(S3B_G_LINK)
$(S3B_BENCH)/llvm-asm.elf: $(S3B_L)/push_icount.o $(LX6_BENCH_INPUT) $(S3B_L)/icount_loop.o $(LX6_CORE_OBJ) $(LX6_DSP_OBJ) $(S3B_L_RT) \
		$(S3B_DIR)/rom_boot.ld
	@mkdir -p $(dir $@)
	$(S3B_L_LINK)
$(S3B_BENCH)/kernels-asm.elf: $(S3B_G)/kernel_icount.o $(S3B_G_CORE) $(S3B_G_DSP) $(S3B_G_RT) $(S3B_DIR)/rom_boot.ld
	@mkdir -p $(dir $@)
	$(S3B_G_LINK)
$(S3B_BENCH)/kernels-c.elf: $(S3B_OUT)/gcc-c/kernel_icount.o $(S3B_GC_CORE) $(S3B_G_RT) $(S3B_DIR)/rom_boot.ld
	@mkdir -p $(dir $@)
	$(S3B_G_LINK)
