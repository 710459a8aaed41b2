# The firmware for QEMU's lx60 board with a de233_fpu core, compiled for the
# ESP32's Xtensa LX6 (windowed ABI, single-precision FPU) by Debian's LLVM,
# and its 4 MiB flash image (docs/targets.md, docs/flash-layout.md). Built
# only when clang-22 is installed; `make lx6` builds just this, `make
# lx6-test` runs the core's C unit tests on the emulated core (tests.mk).
#
# C goes through two steps: clang-22 makes LLVM IR (its driver refuses
# -mcpu=esp32), llc-22 compiles it for -mcpu=esp32. de233_fpu has no
# MULUH/MULSH: -mattr=-mul32high. Hand-written assembly: the C preprocessor,
# then llvm-mc (the clang driver's assembler lacks the esp32 features). GNU
# ld from binutils-xtensa-lx106 links.
#
# LX6_KERNELS picks the forward pass's inner loops (rvne/kernels.h): `ae32`
# (default) links the assembly kernels for this core (firmware/kernels/), `c` the core's C
# twins alone, into build/lx6-c/ (`make lx6-c`): today's C kernel on the
# same core, for tools/bench_icount.py.
LX6_CLANG ?= clang-22
LX6_LLC ?= llc-22
LX6_MC ?= llvm-mc-22
LX6_LD ?= xtensa-lx106-elf-ld
LX6_OBJCOPY ?= xtensa-lx106-elf-objcopy
LX6_APT := clang-22 llvm-22 binutils-xtensa-lx106 qemu-system-misc
LX6_DIR := $(FW)/ports/lx6
LX6_KERNELS ?= ae32
ifeq ($(LX6_KERNELS),c)
LX6_OUT := $(BUILD)/lx6-c
else ifeq ($(LX6_KERNELS),ae32)
LX6_OUT := $(BUILD)/lx6
else
$(error LX6_KERNELS must be ae32 or c, not '$(LX6_KERNELS)')
endif
# LX6_SIGNED=1 (`make lx6-signed RVNE_TRUSTED_KEYS=D1[,D2[,D3]]
# [RVNE_REVOKED_KEYS=...]`): the board with the signed policy (docs/format.md
# "Signed models"), Mbed TLS linked in, into $(LX6_OUT)-signed.
LX6_SIGNED ?=
RVNE_TRUSTED_KEYS ?=
RVNE_REVOKED_KEYS ?=
ifneq ($(LX6_SIGNED),)
LX6_OUT := $(LX6_OUT)-signed
LX6_SIGNED_DEFS := -DRVNE_SIGNED -DRVNE_TRUSTED_KEYS='"$(RVNE_TRUSTED_KEYS)"' -DRVNE_REVOKED_KEYS='"$(RVNE_REVOKED_KEYS)"'
endif
LX6_IMG := $(LX6_OUT)/flash.img
LX6_FLASH_MAP := 0xfe000000

.PHONY: lx6 lx6-c lx6-signed lx6-test lx6-phases lx6-cfi-test lx6-cut s3-test
all: lx6

ifeq ($(shell command -v $(LX6_CLANG) 2>/dev/null),)
lx6 lx6-c lx6-signed lx6-test lx6-phases lx6-cfi-test lx6-cut s3-test:
	@echo "lx6: $(LX6_CLANG) not found, skipping the esp32-class firmware (apt-get install $(LX6_APT))"
else

include $(FW)/xtensa/board/board.mk
include $(FW)/xtensa/rt/rt.mk

# The kernels (rvne/kernels.h) this core runs in assembly, the variants
# picked from firmware/kernels/<op>/ (kernels.mk): <name>_ae32.S (the first
# three driven by kernels_ae32.c): the core is compiled with
# RVNE_HAVE_<NAME>_AE32 for each, unless LX6_KERNELS=c. The ESP32-S3's
# builds take the same FPU set (the ESP-IDF component globs
# kernels/*/*_ae32.S, esp32s3-bare/s3.mk reads LX6_DSP_KERNELS).
LX6_DSP_KERNELS := matvec_f32 scores_f32 wsum_f32 matvec_f16 matvec_f16_finite softmax_exp_f32
# Kernels on the MAC16 unit, <name>_mac16.S (driven by kernels_ae32.c,
# also RVNE_HAVE_<NAME>_AE32): the ESP32's LX6 has MAC16, the S3's LX7 does
# not, so they stay out of the list and the glob above: this port's alone.
LX6_MAC16_KERNELS := matvec_i8 scores_i8
# Kernels in the core's integer instructions alone, <name>_lx6.S (called
# directly, also RVNE_HAVE_<NAME>_AE32): tuned on this port's count only, so
# kept out of the S3's glob and list as well.
LX6_INT_KERNELS := softmax_i8 x16_i8
# op/file of each variant, in link order.
LX6_KERNEL_SRC := $(call kernel_src,$(LX6_DSP_KERNELS:=_ae32) $(LX6_MAC16_KERNELS:=_mac16) $(LX6_INT_KERNELS:=_lx6))
ifeq ($(LX6_KERNELS),ae32)
LX6_DSP_DEFS := $(foreach k,$(shell echo $(LX6_DSP_KERNELS) $(LX6_MAC16_KERNELS) $(LX6_INT_KERNELS) | tr a-z A-Z),\
	-DRVNE_HAVE_$(k)_AE32)
LX6_DSP_OBJ := $(LX6_OUT)/kernels/kernels_ae32.o $(patsubst %,$(LX6_OUT)/kernels/%.o,$(LX6_KERNEL_SRC))
endif

LX6_RESOURCE := $(shell $(LX6_CLANG) -print-resource-dir)
# -ffreestanding: no hosted C library; xtensa/libc/include holds what the core uses.
# No -g: with debug info llc writes `.cfi_def_cfa a7, N` for windowed frames,
# which llvm-mc then refuses ("invalid register name").
# -fomit-frame-pointer: with a frame pointer llc moves the stack pointer
# around calls that pass arguments on the stack with movsp, which raises the
# windowed ABI's alloca exception while the caller's frame is still in the
# register file; start.S has no handler for it (nothing here needs alloca),
# and the link refuses any movsp (LX6_NO_MOVSP).
LX6_IR_FLAGS := --target=xtensa -std=c99 -O2 -Wall -Wextra -ffreestanding -nostdinc \
	-isystem $(LX6_RESOURCE)/include -isystem $(FW)/xtensa/libc/include -fno-common -fomit-frame-pointer \
	$(LX6_DSP_DEFS)
LX6_LLC_FLAGS := -mtriple=xtensa -mcpu=esp32 -mattr=-mul32high -O2 -function-sections -data-sections
# llc-22 -filetype=obj puts a function's literal pool at the end of the
# section before it, right after that function's last instruction: unaligned
# after a 2-byte retw.n, and l32r needs 4-byte aligned literals ("fixup value
# must be 4-byte aligned"). Through assembly instead, llvm-mc puts each pool
# in a .literal.* section of its own, placed before the function that uses
# it, and app.ld aligns every input section (SUBALIGN(4)). Nothing rewritten.
# A per-file llc flag would go in LX6_LLC_FLAGS_<file>; none is needed
# (llvm-bugs/README.md: the block-placement miscompile the prototype saw does
# not reproduce with this pipeline, so no pass is turned off).

LX6_CORE_OBJ := $(patsubst $(FW)/core/src/%.c,$(LX6_OUT)/core/%.o,$(CORE_SRC))
LX6_BOARD_OBJ := $(addprefix $(LX6_OUT)/board/,$(XTB_SRC:.c=.o))
LX6_LIBC_SRC := string.c expf.c rt_abi.c
LX6_LIBC_OBJ := $(addprefix $(LX6_OUT)/libc/,$(LX6_LIBC_SRC:.c=.o))
LX6_RT_SRC := sf_div.c sf_sqrt.c int_mul_div64.c
LX6_RT_OBJ := $(addprefix $(LX6_OUT)/rt/,$(LX6_RT_SRC:.c=.o))
LX6_HDR := $(wildcard $(FW)/core/include/rvne/*.h) $(wildcard $(LX6_DIR)/*.h) $(KERNELS_HDR) \
	$(wildcard $(FW)/xtensa/libc/include/*.h) $(XTB_HDR) $(RT_HDR)

# Mbed TLS for signed models (lx6-signed, lx6-bench-sig): Debian's source
# package (tools/bootstrap.sh: apt-get source mbedtls into .deps/mbedtls, or
# RVNE_MBEDTLS_SRC), the nine modules a check needs, with
# core/crypto/mbedtls_config_bare.h, by this port's compiler. picolibc's
# headers stand in for the hosted ones Mbed TLS includes (assert.h,
# stdlib.h); nothing of picolibc is linked.
RVNE_MBEDTLS_SRC ?= $(abspath $(FW)/../.deps/mbedtls)
LX6_MBEDTLS_MODULES := bignum rsa rsa_internal md sha256 platform platform_util constant_time memory_buffer_alloc
LX6_MBEDTLS_OUT := $(LX6_OUT)/mbedtls
LX6_MBEDTLS_OBJ := $(patsubst %,$(LX6_MBEDTLS_OUT)/%.o,$(LX6_MBEDTLS_MODULES)) \
	$(LX6_MBEDTLS_OUT)/rvne_crypto_mbedtls.o $(LX6_MBEDTLS_OUT)/mbedtls_bare.o
LX6_MBEDTLS_FLAGS := -isystem /usr/lib/xtensa-lx106-elf/include -I$(RVNE_MBEDTLS_SRC)/include \
	-I$(FW)/core/crypto -DMBEDTLS_CONFIG_FILE='"mbedtls_config_bare.h"' -DNDEBUG -Wno-unused-parameter
.SECONDARY: $(LX6_MBEDTLS_OBJ:.o=.bc) $(LX6_MBEDTLS_OBJ)
$(RVNE_MBEDTLS_SRC)/library/%.c:
	@echo "lx6: Debian's mbedtls source is not at $(RVNE_MBEDTLS_SRC): run tools/bootstrap.sh (apt-get source mbedtls)" >&2; false
$(LX6_MBEDTLS_OUT)/%.bc: $(RVNE_MBEDTLS_SRC)/library/%.c $(FW)/core/crypto/mbedtls_config_bare.h
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_MBEDTLS_FLAGS) -c -emit-llvm $< -o $@
$(LX6_MBEDTLS_OUT)/%.bc: $(FW)/core/crypto/%.c $(FW)/core/crypto/mbedtls_config_bare.h $(LX6_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_MBEDTLS_FLAGS) $(CORE_INC) -c -emit-llvm $< -o $@
LX6_OBJ := $(LX6_CORE_OBJ) $(LX6_DSP_OBJ) $(LX6_BOARD_OBJ) $(LX6_LIBC_OBJ) $(LX6_RT_OBJ) $(LX6_OUT)/port/start.o
ifneq ($(LX6_SIGNED),)
LX6_OBJ += $(LX6_MBEDTLS_OBJ)
endif

lx6: $(LX6_IMG)
lx6-c:
	$(MAKE) -C $(FW) lx6 LX6_KERNELS=c
lx6-signed:
	$(MAKE) -C $(FW) lx6 LX6_SIGNED=1
.SECONDARY: $(patsubst %.o,%.bc,$(LX6_CORE_OBJ) $(LX6_BOARD_OBJ) $(LX6_LIBC_OBJ) $(LX6_RT_OBJ) $(LX6_OUT)/kernels/kernels_ae32.o)

# C -> IR -> object. The IR is kept: llvm-bugs/ reproduces from it.
# The core's objects change with LX6_DSP_DEFS: they depend on this file.
$(LX6_OUT)/core/%.bc: $(FW)/core/src/%.c $(LX6_HDR) $(LX6_DIR)/port.mk
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(CORE_INC) -c -emit-llvm $< -o $@
# The signed build's keys are in board.c's objects: a change of them rebuilds it.
$(LX6_OUT)/board/%.bc: $(XTB_DIR)/%.c $(LX6_HDR) $(LX6_OUT)/options
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_SIGNED_DEFS) $(CORE_INC) -I$(LX6_DIR) -I$(XTB_DIR) -c -emit-llvm $< -o $@
$(LX6_OUT)/options: FORCE_LX6_OPTIONS
	@mkdir -p $(dir $@)
	@echo '$(LX6_SIGNED_DEFS)' | cmp -s - $@ || echo '$(LX6_SIGNED_DEFS)' > $@
.PHONY: FORCE_LX6_OPTIONS
$(LX6_OUT)/libc/%.bc: $(FW)/xtensa/libc/%.c $(LX6_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(RT_INC) -c -emit-llvm $< -o $@
$(LX6_OUT)/rt/%.bc: $(RT_DIR)/%.c $(RT_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(RT_CFLAGS) $(RT_INC) -c -emit-llvm $< -o $@
$(LX6_OUT)/kernels/%.bc: $(KERNELS_DIR)/%.c $(LX6_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(CORE_INC) -c -emit-llvm $< -o $@
$(LX6_OUT)/%.o: $(LX6_OUT)/%.bc
	$(LX6_LLC) $(LX6_LLC_FLAGS) $(LX6_LLC_FLAGS_$(basename $(notdir $<))) $< -o $(@:.o=.s)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $(@:.o=.s) -o $@

$(LX6_OUT)/port/start.o: $(FW)/xtensa/windowed/start.S $(XTB_HDR) $(XTB_DIR)/user_vector.inc
	@mkdir -p $(dir $@)
	$(LX6_CLANG) -E -P -x assembler-with-cpp -I$(XTB_DIR) $< -o $(@:.o=.s)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $(@:.o=.s) -o $@

# The kernels' assembly; LX6_DSP_ASFLAGS=-DRVNE_DSP_DEFECT builds the
# deliberately wrong ones tests.mk checks the kernel test catches.
$(LX6_OUT)/kernels/%.o: $(KERNELS_DIR)/%.S $(KERNELS_HDR)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) -E -P -x assembler-with-cpp $(KERNELS_INC) $(LX6_DSP_ASFLAGS) $< -o $(@:.o=.s)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $(@:.o=.s) -o $@

# matvec_f16_finite_ae32.S is matvec_f16_ae32.S assembled again.
$(LX6_OUT)/kernels/matvec/matvec_f16_finite_ae32.o: $(KERNELS_DIR)/matvec/matvec_f16_ae32.S

$(LX6_OUT)/port/boot.o: $(XTB_BOOT)
	@mkdir -p $(dir $@)
	$(LX6_CLANG) -E -P -x assembler-with-cpp -DAPP_ENTRY=$(LX6_FLASH_MAP)+$(XTB_APP_OFFSET) $< -o $(@:.o=.s)
	$(LX6_MC) -triple=xtensa -mcpu=esp32 -filetype=obj $(@:.o=.s) -o $@

# --no-relax: GNU ld's Xtensa relaxation reads property tables that only
# GNU as writes.
LX6_NO_MOVSP = ! grep -l '^[[:space:]]*movsp' $(^:.o=.s) /dev/null || \
	{ echo "lx6: movsp above would raise an alloca exception: build without a frame pointer" >&2; false; }
$(LX6_OUT)/rvne.elf: $(LX6_OBJ) $(LX6_DIR)/app.ld $(LX6_DIR)/sections.ld
	@$(LX6_NO_MOVSP)
	$(LX6_LD) --no-relax -L $(LX6_DIR) -T $(LX6_DIR)/app.ld --gc-sections -Map=$(LX6_OUT)/rvne.map --no-undefined \
		$(LX6_OBJ) -o $@

$(LX6_OUT)/boot.elf: $(LX6_OUT)/port/boot.o
	$(LX6_LD) --no-relax -Ttext=$(LX6_FLASH_MAP) -e _boot $< -o $@

$(LX6_OUT)/%.bin: $(LX6_OUT)/%.elf
	$(LX6_OBJCOPY) -O binary $< $@

# The image keeps an erased blob partition; `rvne flash BLOB --image` fills it.
$(LX6_IMG): $(LX6_OUT)/boot.bin $(LX6_OUT)/rvne.bin $(FW)/../partitions.csv \
		$(RVNE_HOST)/rvne/flash/image.py $(RVNE_HOST)/rvne/flash/partition.py
	PYTHONPATH=$(RVNE_HOST) $(PYTHON) -m rvne.flash.image --boot $(LX6_OUT)/boot.bin \
		--app $(LX6_OUT)/rvne.bin --partitions $(FW)/../partitions.csv -o $@

# The flash driver's test (xtensa/board/tests/test_cfi_flash.c) in place of
# board.c, booted from an image like the firmware: cfi-test.img. The same
# linked with the command sequences left in flash (cfi_cmd.o under another
# name, which the linker script does not move to RAM): cfi-test-xip.img,
# which must fail. tests/test_cfi_flash.py runs both.
LX6_CFI_TEST_OBJ := $(filter-out $(LX6_OUT)/board/board.o,$(LX6_OBJ)) $(LX6_OUT)/board/tests/test_cfi_flash.o
lx6-cfi-test: $(LX6_OUT)/cfi-test.img $(LX6_OUT)/cfi-test-xip.img
.SECONDARY: $(LX6_OUT)/board/tests/test_cfi_flash.bc
$(LX6_OUT)/board/cfi_cmd_xip.o: $(LX6_OUT)/board/cfi_cmd.o
	cp $< $@
$(LX6_OUT)/cfi-test.elf: $(LX6_CFI_TEST_OBJ) $(LX6_DIR)/app.ld $(LX6_DIR)/sections.ld
	$(LX6_LD) --no-relax -L $(LX6_DIR) -T $(LX6_DIR)/app.ld --gc-sections --no-undefined $(LX6_CFI_TEST_OBJ) -o $@
$(LX6_OUT)/cfi-test-xip.elf: $(subst cfi_cmd.o,cfi_cmd_xip.o,$(LX6_CFI_TEST_OBJ)) $(LX6_DIR)/app.ld $(LX6_DIR)/sections.ld
	$(LX6_LD) --no-relax -L $(LX6_DIR) -T $(LX6_DIR)/app.ld --gc-sections --no-undefined $(filter %.o,$^) -o $@
$(LX6_OUT)/cfi-test.img $(LX6_OUT)/cfi-test-xip.img: $(LX6_OUT)/%.img: $(LX6_OUT)/boot.bin $(LX6_OUT)/%.bin \
		$(FW)/../partitions.csv $(RVNE_HOST)/rvne/flash/image.py $(RVNE_HOST)/rvne/flash/partition.py
	PYTHONPATH=$(RVNE_HOST) $(PYTHON) -m rvne.flash.image --boot $(LX6_OUT)/boot.bin \
		--app $(LX6_OUT)/$*.bin --partitions $(FW)/../partitions.csv -o $@

# The power-cut build for the power-loss tests (xtensa/board/flash_cut.h):
# board.c with XTB_FLASH_CUT, and flash_cut.c, in flash-cut.img.
LX6_CUT_OBJ := $(filter-out $(LX6_OUT)/board/board.o,$(LX6_OBJ)) $(LX6_OUT)/board/cut/board.o \
	$(LX6_OUT)/board/flash_cut.o
lx6-cut: $(LX6_OUT)/flash-cut.img
.SECONDARY: $(LX6_OUT)/board/cut/board.bc $(LX6_OUT)/board/flash_cut.bc
$(LX6_OUT)/board/cut/board.bc: $(XTB_DIR)/board.c $(LX6_HDR) $(LX6_OUT)/options
	@mkdir -p $(dir $@)
	$(LX6_CLANG) $(LX6_IR_FLAGS) $(LX6_SIGNED_DEFS) -DXTB_FLASH_CUT $(CORE_INC) -I$(LX6_DIR) -I$(XTB_DIR) -c -emit-llvm $< -o $@
$(LX6_OUT)/rvne-cut.elf: $(LX6_CUT_OBJ) $(LX6_DIR)/app.ld $(LX6_DIR)/sections.ld
	$(LX6_LD) --no-relax -L $(LX6_DIR) -T $(LX6_DIR)/app.ld --gc-sections --no-undefined $(LX6_CUT_OBJ) -o $@
$(LX6_OUT)/flash-cut.img: $(LX6_OUT)/boot.bin $(LX6_OUT)/rvne-cut.bin $(FW)/../partitions.csv \
		$(RVNE_HOST)/rvne/flash/image.py $(RVNE_HOST)/rvne/flash/partition.py
	PYTHONPATH=$(RVNE_HOST) $(PYTHON) -m rvne.flash.image --boot $(LX6_OUT)/boot.bin \
		--app $(LX6_OUT)/rvne-cut.bin --partitions $(FW)/../partitions.csv -o $@

include $(LX6_DIR)/tests.mk
endif
