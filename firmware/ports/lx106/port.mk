# The firmware for QEMU's lx60 board with an lx106 core, and its 4 MiB flash
# image laid out like the ESP32-S3's (docs/flash-layout.md). Built only when
# the Debian cross-compiler is installed; `make lx106` builds just this.
LX106_CC ?= xtensa-lx106-elf-gcc
LX106_OBJCOPY ?= xtensa-lx106-elf-objcopy
LX106_APT := gcc-xtensa-lx106 binutils-xtensa-lx106 picolibc-xtensa-lx106-elf qemu-system-misc
LX106_DIR := $(FW)/ports/lx106
LX106_OUT := $(BUILD)/lx106
LX106_IMG := $(LX106_OUT)/flash.img

.PHONY: lx106 lx106-cfi-test lx106-cut
all: lx106

ifeq ($(shell command -v $(LX106_CC) 2>/dev/null),)
lx106 lx106-cfi-test lx106-cut:
	@echo "lx106: $(LX106_CC) not found, skipping the emulated-board firmware (apt-get install $(LX106_APT))"
else

# picolibc's specs file sits beside its libraries; found at run time.
LX106_LIBDIR := $(dir $(shell $(LX106_CC) -print-file-name=libc.a))
LX106_SPECS := --specs=$(abspath $(LX106_LIBDIR)/../picolibc.specs)
# -mtext-section-literals -mlongcalls: literals with their text (l32r reaches
# backwards only) and calls that span the flash mapping.
LX106_ARCH := -mlongcalls -mtext-section-literals
include $(FW)/xtensa/board/board.mk
LX106_FLASH_MAP := 0x50000000
LX106_CFLAGS := -std=c99 -O2 -g -Wall -Wextra -ffunction-sections -fdata-sections \
	$(LX106_ARCH) $(LX106_SPECS) $(CORE_INC) -I$(LX106_DIR) -I$(XTB_DIR)
# The soft-float / division runtime for what Debian's lx106 libgcc lacks
# (xtensa/rt/rt.mk: the portable sources plus their libgcc names).
include $(FW)/xtensa/rt/rt.mk
LX106_RT_SRC ?= $(RT_SRC) $(RT_LX106_SRC)
LX106_RT_CFLAGS := $(RT_CFLAGS) -O2 -g -Wall -Wextra -ffunction-sections $(LX106_ARCH) $(LX106_SPECS) $(RT_INC)

LX106_CORE_OBJ := $(patsubst $(FW)/core/src/%.c,$(LX106_OUT)/core/%.o,$(CORE_SRC))
LX106_PORT_OBJ := $(addprefix $(LX106_OUT)/board/,$(XTB_SRC:.c=.o)) $(LX106_OUT)/port/start.o
LX106_RT_OBJ := $(patsubst %.c,$(LX106_OUT)/rt/%.o,$(notdir $(LX106_RT_SRC)))
LX106_HDR := $(wildcard $(FW)/core/include/rvne/*.h) $(KERNELS_HDR) $(wildcard $(LX106_DIR)/*.h) $(XTB_HDR)

lx106: $(LX106_IMG)

$(LX106_CORE_OBJ): $(LX106_OUT)/core/%.o: $(FW)/core/src/%.c $(LX106_HDR)
	@mkdir -p $(dir $@)
	$(LX106_CC) $(LX106_CFLAGS) -c $< -o $@

$(LX106_OUT)/board/%.o: $(XTB_DIR)/%.c $(LX106_HDR)
	@mkdir -p $(dir $@)
	$(LX106_CC) $(LX106_CFLAGS) -c $< -o $@

$(LX106_OUT)/port/%.o: $(LX106_DIR)/%.S $(XTB_HDR) $(XTB_DIR)/user_vector.inc
	@mkdir -p $(dir $@)
	$(LX106_CC) $(LX106_ARCH) -I$(XTB_DIR) -c $< -o $@

$(LX106_RT_OBJ): $(LX106_OUT)/rt/%.o: $(RT_DIR)/%.c $(RT_HDR)
	@mkdir -p $(dir $@)
	$(LX106_CC) $(LX106_RT_CFLAGS) -c $< -o $@

$(LX106_OUT)/rvne.elf: $(LX106_CORE_OBJ) $(LX106_PORT_OBJ) $(LX106_RT_OBJ) $(LX106_DIR)/app.ld
	$(LX106_CC) $(LX106_ARCH) $(LX106_SPECS) -nostartfiles -T $(LX106_DIR)/app.ld \
		-Wl,--gc-sections -Wl,-Map=$(LX106_OUT)/rvne.map -Wl,--no-undefined -Wl,--no-warn-rwx-segments \
		$(LX106_CORE_OBJ) $(LX106_PORT_OBJ) $(LX106_RT_OBJ) -lm -lc -lgcc -o $@

# The flash driver's test and its must-fail twin with the command sequences
# left in flash (lx6/port.mk says more); tests/test_cfi_flash.py runs both.
LX106_CFI_TEST_OBJ := $(filter-out $(LX106_OUT)/board/board.o,$(LX106_CORE_OBJ) $(LX106_PORT_OBJ) $(LX106_RT_OBJ)) \
	$(LX106_OUT)/board/tests/test_cfi_flash.o
lx106-cfi-test: $(LX106_OUT)/cfi-test.img $(LX106_OUT)/cfi-test-xip.img
$(LX106_OUT)/board/cfi_cmd_xip.o: $(LX106_OUT)/board/cfi_cmd.o
	cp $< $@
$(LX106_OUT)/cfi-test.elf: $(LX106_CFI_TEST_OBJ) $(LX106_DIR)/app.ld
	$(LX106_CC) $(LX106_ARCH) $(LX106_SPECS) -nostartfiles -T $(LX106_DIR)/app.ld -Wl,--gc-sections -Wl,--no-undefined \
		-Wl,--no-warn-rwx-segments $(LX106_CFI_TEST_OBJ) -lm -lc -lgcc -o $@
$(LX106_OUT)/cfi-test-xip.elf: $(subst cfi_cmd.o,cfi_cmd_xip.o,$(LX106_CFI_TEST_OBJ)) $(LX106_DIR)/app.ld
	$(LX106_CC) $(LX106_ARCH) $(LX106_SPECS) -nostartfiles -T $(LX106_DIR)/app.ld -Wl,--gc-sections -Wl,--no-undefined \
		-Wl,--no-warn-rwx-segments $(filter %.o,$^) -lm -lc -lgcc -o $@
$(LX106_OUT)/cfi-test.img $(LX106_OUT)/cfi-test-xip.img: $(LX106_OUT)/%.img: $(LX106_OUT)/boot.bin $(LX106_OUT)/%.bin \
		$(FW)/../partitions.csv $(RVNE_HOST)/rvne/flash/image.py $(RVNE_HOST)/rvne/flash/partition.py
	PYTHONPATH=$(RVNE_HOST) $(PYTHON) -m rvne.flash.image --boot $(LX106_OUT)/boot.bin \
		--app $(LX106_OUT)/$*.bin --partitions $(FW)/../partitions.csv -o $@

# The power-cut build for the power-loss tests (xtensa/board/flash_cut.h).
LX106_CUT_OBJ := $(filter-out $(LX106_OUT)/board/board.o,$(LX106_CORE_OBJ) $(LX106_PORT_OBJ) $(LX106_RT_OBJ)) \
	$(LX106_OUT)/board/cut/board.o $(LX106_OUT)/board/flash_cut.o
lx106-cut: $(LX106_OUT)/flash-cut.img
$(LX106_OUT)/board/cut/board.o: $(XTB_DIR)/board.c $(LX106_HDR)
	@mkdir -p $(dir $@)
	$(LX106_CC) $(LX106_CFLAGS) -DXTB_FLASH_CUT -c $< -o $@
$(LX106_OUT)/rvne-cut.elf: $(LX106_CUT_OBJ) $(LX106_DIR)/app.ld
	$(LX106_CC) $(LX106_ARCH) $(LX106_SPECS) -nostartfiles -T $(LX106_DIR)/app.ld -Wl,--gc-sections -Wl,--no-undefined \
		-Wl,--no-warn-rwx-segments $(LX106_CUT_OBJ) -lm -lc -lgcc -o $@
$(LX106_OUT)/flash-cut.img: $(LX106_OUT)/boot.bin $(LX106_OUT)/rvne-cut.bin $(FW)/../partitions.csv \
		$(RVNE_HOST)/rvne/flash/image.py $(RVNE_HOST)/rvne/flash/partition.py
	PYTHONPATH=$(RVNE_HOST) $(PYTHON) -m rvne.flash.image --boot $(LX106_OUT)/boot.bin \
		--app $(LX106_OUT)/rvne-cut.bin --partitions $(FW)/../partitions.csv -o $@

$(LX106_OUT)/port/boot.o: $(XTB_BOOT)
	@mkdir -p $(dir $@)
	$(LX106_CC) $(LX106_ARCH) -DAPP_ENTRY=$(LX106_FLASH_MAP)+$(XTB_APP_OFFSET) -c $< -o $@

$(LX106_OUT)/boot.elf: $(LX106_OUT)/port/boot.o
	$(LX106_CC) -nostdlib -nostartfiles -Wl,-Ttext=$(LX106_FLASH_MAP) -Wl,-e,_boot $< -o $@

$(LX106_OUT)/%.bin: $(LX106_OUT)/%.elf
	$(LX106_OBJCOPY) -O binary $< $@

# The image keeps an erased blob partition; `rvne flash BLOB --image` fills it.
$(LX106_IMG): $(LX106_OUT)/boot.bin $(LX106_OUT)/rvne.bin $(FW)/../partitions.csv \
		$(RVNE_HOST)/rvne/flash/image.py $(RVNE_HOST)/rvne/flash/partition.py
	PYTHONPATH=$(RVNE_HOST) $(PYTHON) -m rvne.flash.image --boot $(LX106_OUT)/boot.bin \
		--app $(LX106_OUT)/rvne.bin --partitions $(FW)/../partitions.csv -o $@

endif
